//! A keyed stream grouped into windows (Flink's `WindowedStream`):
//! lateness, late data, and the window functions that finish it.

use weir_net::Wire;
use weir_state::{StateKey, StateValue};

use crate::api::keyed::KeyedStream;
use crate::api::stream::Stream;
use crate::build::builder::ChainBuilder;
use crate::build::demand::TimestampDemand;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::with_side_output::KeyedWithSideOutput;
use crate::operators::late_data::LateOutput;
use crate::operators::side_output::{OutputTag, SideOutput};
use crate::operators::window::assign::Windowing;
use crate::operators::window::contents::{
    Accumulated, Buffered, FnProcessWindowFunction, FnWindowFunction, MergeFold,
    ProcessWindowFunction, WindowCollector, WindowContents,
};
use crate::operators::window::fold::{AggregateFold, ReduceFold};
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::spec::TimeWindow;
use crate::state::aggregating::AggregateFunction;

impl<'j, T, K, KF> KeyedStream<'j, T, K, KF>
where
    T: Wire,
    K: StateKey + Wire + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    /// Groups each key's records into the windows of `assigner` (Flink's
    /// `KeyedStream::window`): tumbling, sliding or session windows on
    /// event or processing time (see [`Windowing`]); finish with
    /// [`aggregate`](WindowedStream::aggregate),
    /// [`reduce`](WindowedStream::reduce),
    /// [`aggregate_with`](WindowedStream::aggregate_with),
    /// [`reduce_with`](WindowedStream::reduce_with) or
    /// [`process`](WindowedStream::process).
    pub fn window<A>(self, assigner: A) -> WindowedStream<'j, T, K, KF, A>
    where
        A: Windowing<T>,
    {
        WindowedStream {
            keyed: self,
            assigner,
            lateness: 0,
            late_output: None,
        }
    }
}

/// A keyed stream with a window assigner, waiting for its window function.
pub struct WindowedStream<'j, T, K, KF, A> {
    pub(crate) keyed: KeyedStream<'j, T, K, KF>,
    pub(crate) assigner: A,
    pub(crate) lateness: i64,
    /// The side output late records go to.
    pub(crate) late_output: Option<OutputTag<T>>,
}

/// What a window operator emits: `(key, window_start, result)` records.
pub type WindowStream<'j, K, O, B> = Stream<'j, (K, i64, O), B>;

impl<'j, T, K, KF, A> WindowedStream<'j, T, K, KF, A>
where
    T: Wire + Clone + 'static,
    K: StateKey + Wire + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
    A: Windowing<T>,
{
    /// Keeps windows `lateness_ms` after they fired (Flink's
    /// `allowedLateness`): a record for such a window is added and fires
    /// it again with the updated result. Default 0. Ignored by
    /// processing-time windows, as in Flink.
    ///
    /// # Panics
    ///
    /// If `lateness_ms` is negative.
    pub fn allowed_lateness(mut self, lateness_ms: i64) -> Self {
        assert!(
            lateness_ms >= 0,
            "window allowed lateness must not be negative, got {lateness_ms} ms"
        );
        self.lateness = lateness_ms;
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

    /// Folds each window's records incrementally with `agg` (Flink's
    /// `WindowedStream::aggregate`); emits `(key, window_start,
    /// agg.get_result(acc))` when the watermark passes the window's end
    /// (processing time: the clock). Session windows merge accumulators
    /// with `AggregateFunction::merge`; to see a session's end use
    /// [`aggregate_with`](Self::aggregate_with).
    pub fn aggregate<AF>(
        self,
        uid: &str,
        agg: AF,
    ) -> WindowStream<'j, K, AF::Out, impl ChainBuilder<(K, i64, AF::Out)>>
    where
        AF: AggregateFunction<In = T> + Clone + Send + Sync,
        AF::Acc: Wire,
    {
        self.with_fold(uid, AggregateFold(agg))
    }

    /// Combines each window's records pairwise with `reduce` (Flink's
    /// `WindowedStream::reduce`); emits `(key, window_start, reduced)`
    /// when the watermark passes the window's end (processing time: the
    /// clock).
    pub fn reduce<F>(
        self,
        uid: &str,
        reduce: F,
    ) -> WindowStream<'j, K, T, impl ChainBuilder<(K, i64, T)>>
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
    ) -> WindowStream<'j, K, W::Out, impl ChainBuilder<(K, i64, W::Out)>>
    where
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        let (assigner, lateness, late_output) = (self.assigner, self.lateness, self.late_output);
        let reads = assigner.reads_record_timestamps();
        let mut stream = self.keyed.process_reading_timestamps(
            uid,
            move |_: &SubtaskInfo| {
                let (late, output) = late_data(&late_output);
                KeyedWithSideOutput {
                    func: assigner.incremental::<K, W>(fold.clone(), lateness, late),
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

impl<'j, T, K, KF, A> WindowedStream<'j, T, K, KF, A>
where
    T: Wire + Clone + 'static,
    K: StateKey + Wire + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
    A: Windowing<T>,
{
    /// Hands each window's records, all at once, to `f(key, window,
    /// elements, out)` when it fires (Flink's `ProcessWindowFunction`);
    /// `f` emits through `out.collect(..)`. The records are buffered per
    /// `(key, window)` in keyed state (checkpointed), so they must be
    /// fixed-size (`Copy`). A late firing hands `f` the window's records
    /// again, with the late one.
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
        self.with_contents(uid, move || {
            Buffered::new(FnProcessWindowFunction::new(f.clone()))
        })
    }

    /// Hands each window's records, all at once, to `function` (a
    /// [`ProcessWindowFunction`] implemented by a type of the job's own,
    /// e.g. one with configuration fields; each subtask gets a clone), as
    /// [`process`](Self::process) does with a closure.
    pub fn process_with<P>(
        self,
        uid: &str,
        function: P,
    ) -> Stream<'j, P::Out, impl ChainBuilder<P::Out>>
    where
        T: StateValue,
        P: ProcessWindowFunction<K, T> + Clone + Send + Sync,
        P::Out: 'static,
    {
        self.with_contents(uid, move || Buffered::new(function.clone()))
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
        self.with_contents(uid, move || {
            Accumulated::new(AggregateFold(agg.clone()), FnWindowFunction::new(f.clone()))
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
        self.with_contents(uid, move || {
            Accumulated::new(
                ReduceFold::new(reduce.clone()),
                FnWindowFunction::new(f.clone()),
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
        CF: Fn() -> C + Send + Sync + 'static,
    {
        let spec = self.assigner.spec();
        let reads = self.assigner.reads_record_timestamps();
        let (lateness, late_output) = (self.lateness, self.late_output);
        let mut stream = self.keyed.process_reading_timestamps(
            uid,
            move |_: &SubtaskInfo| {
                let (late, output) = late_data(&late_output);
                KeyedWithSideOutput {
                    func: GeneralWindowOperator::new(spec.clone(), contents(), lateness, late),
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
