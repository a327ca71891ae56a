//! A keyed stream grouped into windows (Flink's `WindowedStream`):
//! lateness, late data, triggers, evictors, and the window functions that
//! finish it.
//!
//! Every window function emits with its window: plain
//! [`aggregate`](WindowedStream::aggregate) and
//! [`reduce`](WindowedStream::reduce) emit `(key, window, result)`
//! ([`TimeWindow`]: start and end), the others get the window (and a
//! [`WindowContext`](crate::operators::window::WindowContext) with the
//! time, per-window and global state and side outputs, for a
//! [`ProcessWindowFunction`]).

use std::time::Duration;

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::api::keyed::KeyedStream;
use crate::api::stream::Stream;
use crate::build::builder::ChainBuilder;
use crate::build::demand::TimestampDemand;
use crate::core::duration::millis;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::with_side_output::KeyedWithSideOutput;
use crate::operators::late_data::LateOutput;
use crate::operators::side_output::{OutputTag, SideOutput};
use crate::operators::window::assign::Windowing;
use crate::operators::window::contents::{
    FnProcessWindowFunction, FnWindowFunction, MergeFold, ProcessResult, ProcessWindowFunction,
    WindowCollector, WindowContents,
};
use crate::operators::window::evictor::Evictor;
use crate::operators::window::fold::{AggregateFold, ReduceFold};
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::plan::{
    DefaultTrigger, EvictorSlot, NoEvictor, TriggerSlot, WithEvictor, WithTrigger,
};
use crate::operators::window::spec::TimeWindow;
use crate::operators::window::trigger::Trigger;
use crate::state::aggregating::AggregateFunction;
use crate::state::key_selector::KeySelector;

impl<'j, T, K, KF> KeyedStream<'j, T, K, KF>
where
    T: Wire,
    K: StateKey + Wire + 'static,
    KF: KeySelector<T, Key = K>,
{
    /// Groups each key's records into the windows of `assigner` (Flink's
    /// `KeyedStream::window`): tumbling, sliding or session windows on
    /// event or processing time (see [`Windowing`]); optionally set a
    /// [`trigger`](WindowedStream::trigger) and an
    /// [`evictor`](WindowedStream::evictor), then finish with
    /// [`aggregate`](WindowedStream::aggregate),
    /// [`reduce`](WindowedStream::reduce),
    /// [`aggregate_with`](WindowedStream::aggregate_with),
    /// [`reduce_with`](WindowedStream::reduce_with),
    /// [`aggregate_process`](WindowedStream::aggregate_process),
    /// [`reduce_process`](WindowedStream::reduce_process),
    /// [`process`](WindowedStream::process) or
    /// [`process_with`](WindowedStream::process_with).
    pub fn window<A>(self, assigner: A) -> WindowedStream<'j, T, K, KF, A>
    where
        A: Windowing<T>,
    {
        WindowedStream {
            keyed: self,
            assigner,
            lateness: Duration::ZERO,
            late_output: None,
            trigger: DefaultTrigger,
            evictor: NoEvictor,
        }
    }
}

/// A keyed stream with a window assigner, waiting for its window function;
/// `Tr` is its trigger ([`DefaultTrigger`] until
/// [`trigger`](Self::trigger) sets one) and `Ev` its evictor.
pub struct WindowedStream<'j, T, K, KF, A, Tr = DefaultTrigger, Ev = NoEvictor> {
    pub(crate) keyed: KeyedStream<'j, T, K, KF>,
    pub(crate) assigner: A,
    pub(crate) lateness: Duration,
    /// The side output late records go to.
    pub(crate) late_output: Option<OutputTag<T>>,
    pub(crate) trigger: Tr,
    pub(crate) evictor: Ev,
}

/// What `aggregate` and `reduce` emit: `(key, window, result)` records.
pub type WindowStream<'j, K, O, B> = Stream<'j, (K, TimeWindow, O), B>;

impl<'j, T, K, KF, A, Tr, Ev> WindowedStream<'j, T, K, KF, A, Tr, Ev>
where
    T: Wire + Clone + 'static,
    K: StateKey + Wire + 'static,
    KF: KeySelector<T, Key = K>,
    A: Windowing<T>,
    Tr: TriggerSlot<T, A>,
    Ev: EvictorSlot<T>,
{
    /// Keeps windows `lateness` after their end (Flink's
    /// `allowedLateness`): a record for such a window is added and, with
    /// the default trigger, fires it again with the updated result (a late
    /// firing). Default 0. Ignored by processing-time windows, as in
    /// Flink.
    ///
    /// # Panics
    ///
    /// If `lateness` is not a whole number of milliseconds.
    pub fn allowed_lateness(mut self, lateness: Duration) -> Self {
        // Checked here, where the job says it, rather than in each
        // subtask's operator.
        millis("window allowed lateness", lateness);
        self.lateness = lateness;
        self
    }

    /// Emits the records late for all their windows (past the allowed
    /// lateness) to `tag`'s side output, instead of only dropping them
    /// (Flink's `sideOutputLateData`): take the stream of them from the
    /// window operator's stream with
    /// [`get_side_output`](crate::api::stream::Stream::get_side_output).
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> Self {
        self.late_output = Some(tag.clone());
        self
    }

    /// Fires the windows by `trigger` instead of the assigner's default
    /// (Flink's `WindowedStream::trigger`; see
    /// [`Trigger`] and the built-ins:
    /// `EventTimeTrigger`, `ProcessingTimeTrigger`, `CountTrigger`,
    /// `ContinuousEventTimeTrigger`, `ContinuousProcessingTimeTrigger`,
    /// `PurgingTrigger`). The windows then run on the general window
    /// operator, whatever the window function.
    ///
    /// # Panics
    ///
    /// If the windows merge (sessions) and the trigger cannot merge, as
    /// Flink refuses it.
    pub fn trigger<N: Trigger<T>>(
        self,
        trigger: N,
    ) -> WindowedStream<'j, T, K, KF, A, WithTrigger<N>, Ev> {
        assert!(
            !self.assigner.spec().is_merging() || trigger.can_merge(),
            "A merging window assigner cannot be used with a trigger that does not support merging."
        );
        WindowedStream {
            keyed: self.keyed,
            assigner: self.assigner,
            lateness: self.lateness,
            late_output: self.late_output,
            trigger: WithTrigger(trigger),
            evictor: self.evictor,
        }
    }

    /// Removes elements of firing windows with `evictor` before and after
    /// the window function (Flink's `WindowedStream::evictor`; see
    /// [`Evictor`] and the built-ins `CountEvictor`, `TimeEvictor`,
    /// `DeltaEvictor`). The windows then keep every element with its
    /// timestamp (as Flink's `EvictingWindowOperator`), so records must be
    /// state values; an aggregate or reduce folds what is left at each
    /// firing.
    pub fn evictor<E: Evictor<T>>(
        self,
        evictor: E,
    ) -> WindowedStream<'j, T, K, KF, A, Tr, WithEvictor<E>>
    where
        T: StateValue,
    {
        WindowedStream {
            keyed: self.keyed,
            assigner: self.assigner,
            lateness: self.lateness,
            late_output: self.late_output,
            trigger: self.trigger,
            evictor: WithEvictor(evictor),
        }
    }

    /// Folds each window's records incrementally with `agg` (Flink's
    /// `WindowedStream::aggregate`); emits `(key, window,
    /// agg.get_result(acc))` when the window fires: by default when the
    /// watermark passes its end (processing time: the clock), again for
    /// each late record within the allowed lateness. Session windows merge
    /// accumulators with `AggregateFunction::merge`.
    pub fn aggregate<AF>(
        self,
        uid: &str,
        agg: AF,
    ) -> WindowStream<'j, K, AF::Out, impl ChainBuilder<(K, TimeWindow, AF::Out)>>
    where
        AF: AggregateFunction<In = T> + Clone + Send + Sync,
        AF::Acc: Wire,
    {
        self.with_fold(uid, AggregateFold(agg))
    }

    /// Combines each window's records pairwise with `reduce` (Flink's
    /// `WindowedStream::reduce`); emits `(key, window, reduced)` when the
    /// window fires.
    pub fn reduce<F>(
        self,
        uid: &str,
        reduce: F,
    ) -> WindowStream<'j, K, T, impl ChainBuilder<(K, TimeWindow, T)>>
    where
        T: StateValue,
        F: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        self.with_fold(uid, ReduceFold::new(reduce))
    }

    fn with_fold<W>(
        self,
        uid: &str,
        fold: W,
    ) -> WindowStream<'j, K, W::Out, impl ChainBuilder<(K, TimeWindow, W::Out)>>
    where
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        let reads = self.assigner.reads_record_timestamps();
        let Self {
            keyed,
            assigner,
            lateness,
            late_output,
            trigger,
            evictor,
        } = self;
        let mut stream = keyed.process_reading_timestamps(
            uid,
            move |_: &SubtaskInfo| {
                let (late, output) = late_data(&late_output);
                KeyedWithSideOutput {
                    func: evictor.incremental::<K, W, A, Tr>(
                        &trigger,
                        &assigner,
                        fold.clone(),
                        lateness,
                        late,
                    ),
                    output,
                }
            },
            reads,
        );
        // A window's results have their own timestamps (its end - 1).
        stream.stamped = stream.stamped.map(|_| TimestampDemand::source());
        stream
    }

    /// Hands each window's records, all at once, to `f(key, window,
    /// elements, out)` when it fires (Flink's `ProcessWindowFunction`);
    /// `f` emits through `out.collect(..)`. The records are buffered per
    /// `(key, window)` in keyed state (checkpointed). A late firing hands
    /// `f` the window's records again, with the late one. For the firing's
    /// context (time, state, lateness, side outputs) use
    /// [`process_with`](Self::process_with).
    pub fn process<O, F>(self, uid: &str, f: F) -> Stream<'j, O, impl ChainBuilder<O>>
    where
        T: StateValue,
        O: 'static,
        F: FnMut(&K, &TimeWindow, &[T], &mut WindowCollector<'_, O>)
            + Clone
            + Send
            + Sync
            + 'static,
    {
        self.process_with(uid, move |_: &SubtaskInfo| {
            FnProcessWindowFunction::new(f.clone())
        })
    }

    /// Hands each window's records, all at once, to a
    /// [`ProcessWindowFunction`] with the firing's
    /// [`WindowContext`](crate::operators::window::WindowContext) (Flink's
    /// `process(ProcessWindowFunction)`); `factory` makes each subtask's
    /// function, as [`KeyedStream::process`](crate::api::keyed::KeyedStream::process)
    /// does, so it may hold [`SideOutput`] handles (listed in its
    /// `side_outputs` hook).
    pub fn process_with<P, PF>(
        self,
        uid: &str,
        factory: PF,
    ) -> Stream<'j, P::Out, impl ChainBuilder<P::Out>>
    where
        T: StateValue,
        P: ProcessWindowFunction<K, T>,
        P::Out: 'static,
        PF: Fn(&SubtaskInfo) -> P + Send + Sync + 'static,
    {
        let evictor = self.evictor.clone();
        self.with_contents(uid, move |info| evictor.processed::<K, P>(factory(info)))
    }

    /// Folds each window's records incrementally with `agg`, and hands the
    /// result with the window to `f(key, window, result, out)` when it
    /// fires (Flink's `aggregate(aggFn, windowFn)`).
    pub fn aggregate_with<AF, O, F>(
        self,
        uid: &str,
        agg: AF,
        f: F,
    ) -> Stream<'j, O, impl ChainBuilder<O>>
    where
        AF: AggregateFunction<In = T> + Clone + Send + Sync,
        AF::Acc: Wire,
        O: 'static,
        F: FnMut(&K, &TimeWindow, AF::Out, &mut WindowCollector<'_, O>)
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let evictor = self.evictor.clone();
        self.with_contents(uid, move |_| {
            evictor
                .aggregated::<K, _, _>(AggregateFold(agg.clone()), FnWindowFunction::new(f.clone()))
        })
    }

    /// Folds each window's records incrementally with `agg`, and hands the
    /// result to the [`ProcessWindowFunction`] `factory` makes for each
    /// subtask when the window fires, as its one element, with the
    /// firing's context (Flink's `aggregate(aggFn, processWindowFunction)`).
    pub fn aggregate_process<AF, P, PF>(
        self,
        uid: &str,
        agg: AF,
        factory: PF,
    ) -> Stream<'j, P::Out, impl ChainBuilder<P::Out>>
    where
        AF: AggregateFunction<In = T> + Clone + Send + Sync,
        AF::Acc: Wire,
        P: ProcessWindowFunction<K, AF::Out>,
        P::Out: 'static,
        PF: Fn(&SubtaskInfo) -> P + Send + Sync + 'static,
    {
        let evictor = self.evictor.clone();
        self.with_contents(uid, move |info| {
            evictor.aggregated::<K, _, _>(AggregateFold(agg.clone()), ProcessResult(factory(info)))
        })
    }

    /// Combines each window's records pairwise with `reduce`, and hands the
    /// result with the window to `f(key, window, reduced, out)` when it
    /// fires (Flink's `reduce(reduceFn, windowFn)`).
    pub fn reduce_with<R, O, F>(
        self,
        uid: &str,
        reduce: R,
        f: F,
    ) -> Stream<'j, O, impl ChainBuilder<O>>
    where
        T: StateValue,
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
        O: 'static,
        F: FnMut(&K, &TimeWindow, T, &mut WindowCollector<'_, O>) + Clone + Send + Sync + 'static,
    {
        let evictor = self.evictor.clone();
        self.with_contents(uid, move |_| {
            evictor.aggregated::<K, _, _>(
                ReduceFold::new(reduce.clone()),
                FnWindowFunction::new(f.clone()),
            )
        })
    }

    /// Combines each window's records pairwise with `reduce`, and hands the
    /// result to the [`ProcessWindowFunction`] `factory` makes for each
    /// subtask when the window fires, as its one element, with the
    /// firing's context (Flink's `reduce(reduceFn, processWindowFunction)`).
    pub fn reduce_process<R, P, PF>(
        self,
        uid: &str,
        reduce: R,
        factory: PF,
    ) -> Stream<'j, P::Out, impl ChainBuilder<P::Out>>
    where
        T: StateValue,
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
        P: ProcessWindowFunction<K, T>,
        P::Out: 'static,
        PF: Fn(&SubtaskInfo) -> P + Send + Sync + 'static,
    {
        let evictor = self.evictor.clone();
        self.with_contents(uid, move |info| {
            evictor.aggregated::<K, _, _>(
                ReduceFold::new(reduce.clone()),
                ProcessResult(factory(info)),
            )
        })
    }

    fn with_contents<C, CF>(
        self,
        uid: &str,
        contents: CF,
    ) -> Stream<'j, C::Out, impl ChainBuilder<C::Out>>
    where
        C: WindowContents<K, T>,
        C::Out: 'static,
        CF: Fn(&SubtaskInfo) -> C + Send + Sync + 'static,
    {
        let spec = self.assigner.spec();
        let reads = self.assigner.reads_record_timestamps();
        let Self {
            keyed,
            assigner,
            lateness,
            late_output,
            trigger,
            ..
        } = self;
        let mut stream = keyed.process_reading_timestamps(
            uid,
            move |info: &SubtaskInfo| {
                let (late, output) = late_data(&late_output);
                KeyedWithSideOutput {
                    func: GeneralWindowOperator::new(
                        spec.clone(),
                        trigger.trigger(&assigner),
                        contents(info),
                        lateness,
                        late,
                    ),
                    output,
                }
            },
            reads,
        );
        // A window's results have their own timestamps (its end - 1).
        stream.stamped = stream.stamped.map(|_| TimestampDemand::source());
        stream
    }
}

/// A window operator's late-data output into `tag`'s side output, and the
/// handle to list, if the job asked for it.
fn late_data<T: Clone + 'static>(
    tag: &Option<OutputTag<T>>,
) -> (Option<LateOutput<T>>, Option<SideOutput<T>>) {
    match tag {
        None => (None, None),
        Some(tag) => {
            let output = SideOutput::new(tag);
            let emit = output.clone();
            (
                Some(Box::new(move |record| emit.emit(record))),
                Some(output),
            )
        }
    }
}
