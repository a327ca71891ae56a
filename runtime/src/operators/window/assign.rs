//! What [`KeyedStream::window`] takes ([`Windowing`]), the window
//! ([`TimeWindow`]) and Flink's `EventTimeSessionWindows` (static and
//! dynamic gap), beside the event-time tumbling and sliding windows of the
//! [parent module](super) and the processing-time assigners of
//! [`processing_time`](super::processing_time).
//!
//! An assigner describes its windows to the general window operator
//! ([`GeneralWindowOperator`]) as a
//! [`WindowSpec`]: *fixed* windows (a size, a slide, an offset) or
//! *session* windows (a gap, fixed or per record), on event time (a
//! timestamp extractor) or processing time (the operator's clock).
//! Event-time tumbling and sliding windows with `aggregate` / `reduce` keep
//! their own, faster operator ([`WindowOperator`]); every other combination
//! runs on the general one.
//!
//! [`KeyedStream::window`]: crate::api::keyed::KeyedStream::window

use std::sync::Arc;

use weir_net::Wire;
use weir_state::KeyHash;

use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::late_data::LateOutput;
use crate::operators::window::contents::{Accumulated, KeyStartResult, MergeFold};
use crate::operators::window::event_time::{SlidingEventTimeWindows, TumblingEventTimeWindows};
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::operator::WindowOperator;
use crate::state::timers::TimeDomain;

/// A window: the half-open interval `[start, end)` of milliseconds (Flink's
/// `TimeWindow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeWindow {
    /// First millisecond in the window.
    pub start: i64,
    /// First millisecond after the window.
    pub end: i64,
}

impl TimeWindow {
    /// The window `[start, end)`.
    pub fn new(start: i64, end: i64) -> Self {
        Self { start, end }
    }

    /// The window's last millisecond, `end - 1`: when it fires (Flink's
    /// `maxTimestamp`).
    #[inline]
    pub fn max_timestamp(&self) -> i64 {
        self.end.saturating_sub(1)
    }

    /// True if the two windows overlap or touch (Flink's
    /// `TimeWindow::intersects`, which session windows merge by).
    #[inline]
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window holding both.
    #[inline]
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl Wire for TimeWindow {
    fn encoded_len(&self) -> usize {
        16
    }

    fn write(&self, out: &mut [u8]) {
        self.start.write(&mut out[..8]);
        self.end.write(&mut out[8..]);
    }

    fn read(input: &[u8]) -> Result<(Self, usize), weir_net::DecodeError> {
        let ((start, end), used) = <(i64, i64)>::read(input)?;
        Ok((TimeWindow::new(start, end), used))
    }
}

/// A record's event time (ms).
pub type TimestampFn<T> = Arc<dyn Fn(&T) -> i64 + Send + Sync>;

/// A processing-time clock: milliseconds since the epoch (tests inject a
/// manual one).
pub type ProcessingClock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// How a session window's gap is found.
pub(crate) enum Gap<T> {
    /// The same gap (ms) for every record.
    Static(i64),
    /// Per record, by the extractor of a dynamic-gap assigner (named for
    /// errors).
    Dynamic(Arc<dyn Fn(&T) -> i64 + Send + Sync>, &'static str),
}

impl<T> Clone for Gap<T> {
    fn clone(&self) -> Self {
        match self {
            Gap::Static(g) => Gap::Static(*g),
            Gap::Dynamic(f, name) => Gap::Dynamic(f.clone(), name),
        }
    }
}

impl<T> Gap<T> {
    /// The gap (ms) of the session `record` opens.
    ///
    /// # Panics
    ///
    /// If a dynamic gap extractor returns a gap that is not positive
    /// (Flink fails the job likewise).
    #[inline]
    pub(crate) fn of(&self, record: &T) -> i64 {
        match self {
            Gap::Static(g) => *g,
            Gap::Dynamic(f, name) => {
                let gap = f(record);
                assert!(
                    gap > 0,
                    "{name}: the session gap extractor returned {gap} ms for a record; \
                     session gaps must be positive"
                );
                gap
            }
        }
    }
}

/// Which windows hold a record.
pub(crate) enum WindowKind<T> {
    /// Windows of `size` starting every `slide` (tumbling: `slide ==
    /// size`), at `offset` from the epoch.
    Fixed {
        /// Window length (ms).
        size: i64,
        /// Distance between window starts (ms).
        slide: i64,
        /// Shift of the window starts (ms, `0 <= offset < slide`).
        offset: i64,
    },
    /// A record at `t` opens `[t, t + gap)`; windows that intersect merge.
    Session(Gap<T>),
}

impl<T> Clone for WindowKind<T> {
    fn clone(&self) -> Self {
        match self {
            WindowKind::Fixed {
                size,
                slide,
                offset,
            } => WindowKind::Fixed {
                size: *size,
                slide: *slide,
                offset: *offset,
            },
            WindowKind::Session(g) => WindowKind::Session(g.clone()),
        }
    }
}

/// What an assigner tells the general window operator: which windows hold
/// a record and by which time they are assigned and fire. Opaque: made by
/// the assigners of this module.
pub struct WindowSpec<T> {
    pub(crate) kind: WindowKind<T>,
    /// Event time: the record's timestamp; processing time: `None`.
    pub(crate) timestamp: Option<TimestampFn<T>>,
    /// Processing time: the clock replacing the system clock, if any.
    pub(crate) clock: Option<ProcessingClock>,
}

impl<T> Clone for WindowSpec<T> {
    fn clone(&self) -> Self {
        Self {
            kind: self.kind.clone(),
            timestamp: self.timestamp.clone(),
            clock: self.clock.clone(),
        }
    }
}

impl<T> WindowSpec<T> {
    /// The time domain the windows are assigned and fired in.
    pub fn domain(&self) -> TimeDomain {
        if self.timestamp.is_some() {
            TimeDomain::EventTime
        } else {
            TimeDomain::ProcessingTime
        }
    }

    /// True for session (merging) windows.
    pub fn is_merging(&self) -> bool {
        matches!(self.kind, WindowKind::Session(_))
    }
}

/// A window assigner of any kind: what
/// [`KeyedStream::window`](crate::api::keyed::KeyedStream::window) takes. Implemented
/// by [`TumblingEventTimeWindows`], [`SlidingEventTimeWindows`],
/// [`EventTimeSessionWindows`], [`DynamicEventTimeSessionWindows`],
/// [`TumblingProcessingTimeWindows`](super::TumblingProcessingTimeWindows),
/// [`SlidingProcessingTimeWindows`](super::SlidingProcessingTimeWindows),
/// [`ProcessingTimeSessionWindows`](super::ProcessingTimeSessionWindows) and
/// [`DynamicProcessingTimeSessionWindows`](super::DynamicProcessingTimeSessionWindows).
pub trait Windowing<T>: Clone + Send + Sync + 'static {
    /// The operator `aggregate` and `reduce` run for these windows: it
    /// emits `(key, window_start, result)`.
    type Incremental<K, W>: KeyedProcessFunction<Key = K, In = T, Out = (K, i64, W::Out)>
    where
        K: Copy + Eq + KeyHash + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    /// The `aggregate` / `reduce` operator folding with `fold`, keeping
    /// windows `lateness` ms (event time only) and handing late records to
    /// `late`.
    fn incremental<K, W>(
        &self,
        fold: W,
        lateness: i64,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: Copy + Eq + KeyHash + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    /// The windows, for the general window operator.
    fn spec(&self) -> WindowSpec<T>;
}

/// The general operator folding with `fold` and emitting `(key,
/// window_start, result)`.
pub(crate) fn general_incremental<K, T, W>(
    spec: WindowSpec<T>,
    fold: W,
    lateness: i64,
    late: Option<LateOutput<T>>,
) -> GeneralWindowOperator<K, T, Accumulated<W, KeyStartResult>>
where
    K: Copy + Eq + KeyHash + Wire + 'static,
    T: 'static,
    W: MergeFold<In = T>,
    W::Acc: Wire,
{
    GeneralWindowOperator::new(spec, Accumulated::new(fold, KeyStartResult), lateness, late)
}

/// The fast event-time operator of `assigner` folding with `fold`.
fn fast_incremental<K, W, A>(
    assigner: A,
    fold: W,
    lateness: i64,
    late: Option<LateOutput<W::In>>,
) -> WindowOperator<K, W, A>
where
    K: Copy + Eq + KeyHash,
    W: super::WindowFold,
    A: super::WindowAssigner<W::In>,
{
    let op = WindowOperator::new(assigner, fold).with_allowed_lateness(lateness);
    match late {
        Some(late) => op.with_late_output(late),
        None => op,
    }
}

impl<T, TF> Windowing<T> for TumblingEventTimeWindows<TF>
where
    T: Clone + 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    type Incremental<K, W>
        = WindowOperator<K, W, Self>
    where
        K: Copy + Eq + KeyHash + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    fn incremental<K, W>(
        &self,
        fold: W,
        lateness: i64,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: Copy + Eq + KeyHash + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        fast_incremental(self.clone(), fold, lateness, late)
    }

    fn spec(&self) -> WindowSpec<T> {
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

impl<T, TF> Windowing<T> for SlidingEventTimeWindows<TF>
where
    T: Clone + 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    type Incremental<K, W>
        = WindowOperator<K, W, Self>
    where
        K: Copy + Eq + KeyHash + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    fn incremental<K, W>(
        &self,
        fold: W,
        lateness: i64,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: Copy + Eq + KeyHash + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        fast_incremental(self.clone(), fold, lateness, late)
    }

    fn spec(&self) -> WindowSpec<T> {
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

/// Implements [`Windowing`] through the general operator for an assigner
/// with a `spec_of` method.
macro_rules! general_windowing {
    ([$($gen:tt)*] $ty:ty, $t:ty, [$($bounds:tt)*]) => {
        impl<$($gen)*> $crate::operators::window::assign::Windowing<$t> for $ty
        where
            $t: Clone + 'static,
            $($bounds)*
        {
            type Incremental<K, W>
                = $crate::operators::window::general::GeneralWindowOperator<
                    K,
                    $t,
                    $crate::operators::window::contents::Accumulated<W, $crate::operators::window::contents::KeyStartResult>,
                >
            where
                K: Copy + Eq + $crate::KeyHash + $crate::Wire + 'static,
                W: $crate::operators::window::contents::MergeFold<In = $t>,
                W::Acc: $crate::Wire;

            fn incremental<K, W>(
                &self,
                fold: W,
                lateness: i64,
                late: Option<$crate::operators::late_data::LateOutput<$t>>,
            ) -> Self::Incremental<K, W>
            where
                K: Copy + Eq + $crate::KeyHash + $crate::Wire + 'static,
                W: $crate::operators::window::contents::MergeFold<In = $t>,
                W::Acc: $crate::Wire,
            {
                $crate::operators::window::assign::general_incremental(self.spec_of(), fold, lateness, late)
            }

            fn spec(&self) -> $crate::operators::window::assign::WindowSpec<$t> {
                self.spec_of()
            }
        }
    };
}

pub(crate) use general_windowing;

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
    /// Sessions closing after `gap_ms` without records; `timestamp` gives
    /// a record's event time (ms).
    ///
    /// # Panics
    ///
    /// If `gap_ms` is not positive.
    pub fn with_gap(gap_ms: i64, timestamp: TF) -> Self {
        assert!(
            gap_ms > 0,
            "EventTimeSessionWindows: the session gap must be positive, got {gap_ms} ms"
        );
        Self {
            gap: gap_ms,
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

general_windowing!([T, TF] EventTimeSessionWindows<TF>, T, [
    T: 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
]);

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

general_windowing!([T, TF, GF] DynamicEventTimeSessionWindows<TF, GF>, T, [
    T: 'static,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    GF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
]);
