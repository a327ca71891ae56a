//! What [`KeyedStream::window`] takes ([`Windowing`]) and Flink's
//! `EventTimeSessionWindows` (static and dynamic gap), beside the event-time
//! tumbling and sliding windows of [`event_time`](crate::operators::window::event_time)
//! and the processing-time assigners of
//! [`processing_time`](crate::operators::window::processing_time).
//!
//! An assigner describes its windows to the general window operator
//! ([`GeneralWindowOperator`]) as a
//! [`WindowSpec`].
//! Event-time tumbling and sliding windows with `aggregate` / `reduce` keep
//! their own, faster operator ([`WindowOperator`]); every other combination
//! runs on the general one.
//!
//! [`KeyedStream::window`]: crate::api::keyed::KeyedStream::window

use std::sync::Arc;
use std::time::Duration;

use crate::core::duration::positive_millis;
use crate::core::timestamp::is_record_timestamp;

use weir_net::Wire;
use weir_state::StateKey;

use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::late_data::LateOutput;
use crate::operators::window::contents::{Accumulated, KeyWindowResult, MergeFold};
use crate::operators::window::event_time::{SlidingEventTimeWindows, TumblingEventTimeWindows};
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::operator::WindowOperator;
use crate::operators::window::spec::{Gap, TimeWindow, WindowKind, WindowSpec};
use crate::operators::window::trigger::Trigger;

/// A window assigner of any kind: what
/// [`KeyedStream::window`](crate::api::keyed::KeyedStream::window) takes. Implemented
/// by [`TumblingEventTimeWindows`], [`SlidingEventTimeWindows`],
/// [`EventTimeSessionWindows`], [`DynamicEventTimeSessionWindows`],
/// [`TumblingProcessingTimeWindows`](super::TumblingProcessingTimeWindows),
/// [`SlidingProcessingTimeWindows`](super::SlidingProcessingTimeWindows),
/// [`ProcessingTimeSessionWindows`](super::ProcessingTimeSessionWindows) and
/// [`DynamicProcessingTimeSessionWindows`](super::DynamicProcessingTimeSessionWindows).
pub trait Windowing<T>: Clone + Send + Sync + 'static {
    /// The trigger of these windows unless the job sets one (Flink's
    /// `getDefaultTrigger`): [`EventTimeTrigger`] on event time,
    /// [`ProcessingTimeTrigger`](super::ProcessingTimeTrigger) on
    /// processing time.
    type DefaultTrigger: Trigger<T>;

    /// The operator `aggregate` and `reduce` run for these windows with the
    /// default trigger and no evictor: it emits `(key, window, result)`.
    type Incremental<K, W>: KeyedProcessFunction<Key = K, In = T, Out = (K, TimeWindow, W::Out)>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    /// The `aggregate` / `reduce` operator folding with `fold`, keeping
    /// windows `lateness` (event time only) and handing late records to
    /// `late`.
    fn incremental<K, W>(
        &self,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    /// The windows, for the general window operator.
    fn spec(&self) -> WindowSpec<T>;

    /// The default trigger.
    fn default_trigger(&self) -> Self::DefaultTrigger;

    /// Whether the assigner's timestamps are the records' own
    /// ([`crate::core::timestamp::record_timestamp`]): the stream must then
    /// carry them to the window operator.
    fn reads_record_timestamps(&self) -> bool {
        false
    }
}

/// The general operator with `trigger` folding with `fold` and emitting
/// `(key, window, result)`.
pub(crate) fn general_incremental<K, T, Tr, W>(
    spec: WindowSpec<T>,
    trigger: Tr,
    fold: W,
    lateness: Duration,
    late: Option<LateOutput<T>>,
) -> GeneralWindowOperator<K, T, Tr, Accumulated<W, KeyWindowResult>>
where
    K: StateKey + Wire + 'static,
    T: 'static,
    Tr: Trigger<T>,
    W: MergeFold<In = T>,
    W::Acc: Wire,
{
    GeneralWindowOperator::new(
        spec,
        trigger,
        Accumulated::new(fold, KeyWindowResult),
        lateness,
        late,
    )
}

/// The fast event-time operator of `assigner` folding with `fold`.
pub(crate) fn fast_incremental<K, W, A>(
    assigner: A,
    fold: W,
    lateness: Duration,
    late: Option<LateOutput<W::In>>,
) -> WindowOperator<K, W, A>
where
    K: StateKey,
    W: crate::operators::window::fold::WindowFold,
    A: crate::operators::window::event_time::WindowAssigner<W::In>,
{
    let op = WindowOperator::new(assigner, fold).with_allowed_lateness(lateness);
    match late {
        Some(late) => op.with_late_output(late),
        None => op,
    }
}

/// Implements [`Windowing`] through the fast event-time operator
/// ([`WindowOperator`]) for an assigner `$ty<TF>` (`TF` a function of the
/// record) with a `spec_of` method for the general operator; `$reads`:
/// whether its timestamps are the records' own.
macro_rules! fast_windowing {
    ($ty:ident, $reads:expr) => {
        impl<T, TF> $crate::operators::window::assign::Windowing<T> for $ty<TF>
        where
            T: Clone + 'static,
            TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
        {
            type DefaultTrigger = $crate::operators::window::triggers::EventTimeTrigger;

            type Incremental<K, W>
                = $crate::operators::window::operator::WindowOperator<K, W, Self>
            where
                K: $crate::StateKey + $crate::Wire + 'static,
                W: $crate::operators::window::contents::MergeFold<In = T>,
                W::Acc: $crate::Wire;

            fn incremental<K, W>(
                &self,
                fold: W,
                lateness: Duration,
                late: Option<$crate::operators::late_data::LateOutput<T>>,
            ) -> Self::Incremental<K, W>
            where
                K: $crate::StateKey + $crate::Wire + 'static,
                W: $crate::operators::window::contents::MergeFold<In = T>,
                W::Acc: $crate::Wire,
            {
                $crate::operators::window::assign::fast_incremental(
                    self.clone(),
                    fold,
                    lateness,
                    late,
                )
            }

            fn reads_record_timestamps(&self) -> bool {
                $reads
            }

            fn spec(&self) -> $crate::operators::window::spec::WindowSpec<T> {
                self.spec_of()
            }

            fn default_trigger(&self) -> $crate::operators::window::triggers::EventTimeTrigger {
                $crate::operators::window::triggers::EventTimeTrigger
            }
        }
    };
}

pub(crate) use fast_windowing;

impl<TF> TumblingEventTimeWindows<TF> {
    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        WindowSpec {
            kind: WindowKind::Fixed {
                size: self.size,
                slide: self.size,
                offset: self.offset,
            },
            timestamp: Some(Arc::new(self.timestamp.clone())),
            clock: None,
        }
    }
}

fast_windowing!(TumblingEventTimeWindows, is_record_timestamp::<T, TF>());

impl<TF> SlidingEventTimeWindows<TF> {
    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        WindowSpec {
            kind: WindowKind::Fixed {
                size: self.size,
                slide: self.slide,
                offset: self.offset,
            },
            timestamp: Some(Arc::new(self.timestamp.clone())),
            clock: None,
        }
    }
}

fast_windowing!(SlidingEventTimeWindows, is_record_timestamp::<T, TF>());

/// Implements [`Windowing`] through the general operator for an assigner
/// with a `spec_of` method.
macro_rules! general_windowing {
    ([$($gen:tt)*] $ty:ty, $t:ty, $trigger:ty, [$($bounds:tt)*]) => {
        general_windowing!([$($gen)*] $ty, $t, $trigger, [$($bounds)*], false);
    };
    ([$($gen:tt)*] $ty:ty, $t:ty, $trigger:ty, [$($bounds:tt)*], $reads:expr) => {
        impl<$($gen)*> $crate::operators::window::assign::Windowing<$t> for $ty
        where
            $t: Clone + 'static,
            $($bounds)*
        {
            type DefaultTrigger = $trigger;

            type Incremental<K, W>
                = $crate::operators::window::general::GeneralWindowOperator<
                    K,
                    $t,
                    $trigger,
                    $crate::operators::window::contents::Accumulated<W, $crate::operators::window::contents::KeyWindowResult>,
                >
            where
                K: $crate::StateKey + $crate::Wire + 'static,
                W: $crate::operators::window::contents::MergeFold<In = $t>,
                W::Acc: $crate::Wire;

            fn incremental<K, W>(
                &self,
                fold: W,
                lateness: Duration,
                late: Option<$crate::operators::late_data::LateOutput<$t>>,
            ) -> Self::Incremental<K, W>
            where
                K: $crate::StateKey + $crate::Wire + 'static,
                W: $crate::operators::window::contents::MergeFold<In = $t>,
                W::Acc: $crate::Wire,
            {
                $crate::operators::window::assign::general_incremental(
                    self.spec_of(),
                    <$trigger>::default(),
                    fold,
                    lateness,
                    late,
                )
            }

            fn spec(&self) -> $crate::operators::window::spec::WindowSpec<$t> {
                self.spec_of()
            }

            fn default_trigger(&self) -> $trigger {
                <$trigger>::default()
            }

            fn reads_record_timestamps(&self) -> bool {
                $reads
            }
        }
    };
}

pub(crate) use general_windowing;

/// Flink's cumulative windows (SQL's `CUMULATE`): within each window of
/// `size` aligned to the epoch (or an offset), the windows that all start
/// at its start and end every `step`: `[s, s + step)`, `[s, s + 2 step)`,
/// ..., `[s, s + size)`. A record falls in every one of them that ends
/// after it; each fires when the watermark passes its end - 1, so a
/// running total is reported every `step` and starts over every `size`.
#[derive(Clone, Debug)]
pub struct CumulativeEventTimeWindows<TF> {
    step: i64,
    size: i64,
    offset: i64,
    timestamp: TF,
}

impl<TF> CumulativeEventTimeWindows<TF> {
    /// Windows growing by `step` up to `size`; `timestamp` gives a
    /// record's event time (ms).
    ///
    /// # Panics
    ///
    /// If `step` or `size` is zero or not a whole number of milliseconds,
    /// or `size` is not a multiple of `step`.
    pub fn of(step: Duration, size: Duration, timestamp: TF) -> Self {
        let step = positive_millis("CumulativeEventTimeWindows: step", step);
        let size = positive_millis("CumulativeEventTimeWindows: size", size);
        assert!(
            size % step == 0,
            "CumulativeEventTimeWindows: size {size} ms must be a multiple of the step {step} ms"
        );
        Self {
            step,
            size,
            offset: 0,
            timestamp,
        }
    }

    /// The same windows shifted by `offset` (taken modulo the size).
    pub fn with_offset(mut self, offset: impl Into<crate::core::duration::Offset>) -> Self {
        self.offset = offset
            .into()
            .millis("CumulativeEventTimeWindows: offset")
            .rem_euclid(self.size);
        self
    }

    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        WindowSpec {
            kind: WindowKind::Cumulate {
                step: self.step,
                size: self.size,
                offset: self.offset,
            },
            timestamp: Some(Arc::new(self.timestamp.clone())),
            clock: None,
        }
    }
}

general_windowing!([T, TF] CumulativeEventTimeWindows<TF>, T, crate::operators::window::triggers::EventTimeTrigger, [
    T: 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
], is_record_timestamp::<T, TF>());

/// Flink's `EventTimeSessionWindows::withGap`: per key, a record at `t`
/// opens the session `[t, t + gap)`, and sessions that overlap or touch
/// merge (so a session ends `gap` after its last record). Fires when the
/// watermark passes the session's end - 1.
#[derive(Clone, Debug)]
pub struct EventTimeSessionWindows<TF> {
    gap: i64,
    timestamp: TF,
}

impl<TF> EventTimeSessionWindows<TF> {
    /// Sessions closing after `gap` without records; `timestamp` gives a
    /// record's event time (ms).
    ///
    /// # Panics
    ///
    /// If `gap` is zero or not a whole number of milliseconds.
    pub fn with_gap(gap: Duration, timestamp: TF) -> Self {
        Self {
            gap: positive_millis("EventTimeSessionWindows: session gap", gap),
            timestamp,
        }
    }

    /// Flink's `EventTimeSessionWindows::withDynamicGap`: each record's
    /// session gap is `gap(record)` (ms; a gap that is not positive fails
    /// the job, naming the assigner).
    pub fn with_dynamic_gap<GF>(gap: GF, timestamp: TF) -> DynamicEventTimeSessionWindows<TF, GF> {
        DynamicEventTimeSessionWindows { gap, timestamp }
    }

    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        WindowSpec {
            kind: WindowKind::Session(Gap::Static(self.gap)),
            timestamp: Some(Arc::new(self.timestamp.clone())),
            clock: None,
        }
    }
}

general_windowing!([T, TF] EventTimeSessionWindows<TF>, T, crate::operators::window::triggers::EventTimeTrigger, [
    T: 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
], is_record_timestamp::<T, TF>());

/// Flink's `DynamicEventTimeSessionWindows`: event-time sessions whose gap
/// each record gives (see [`EventTimeSessionWindows::with_dynamic_gap`]).
#[derive(Clone, Debug)]
pub struct DynamicEventTimeSessionWindows<TF, GF> {
    gap: GF,
    timestamp: TF,
}

impl<TF, GF> DynamicEventTimeSessionWindows<TF, GF> {
    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
        GF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        WindowSpec {
            kind: WindowKind::Session(Gap::Dynamic(
                Arc::new(self.gap.clone()),
                "DynamicEventTimeSessionWindows",
            )),
            timestamp: Some(Arc::new(self.timestamp.clone())),
            clock: None,
        }
    }
}

general_windowing!([T, TF, GF] DynamicEventTimeSessionWindows<TF, GF>, T, crate::operators::window::triggers::EventTimeTrigger, [
    T: 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    GF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
], is_record_timestamp::<T, TF>());
