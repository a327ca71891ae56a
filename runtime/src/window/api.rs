//! The full-window functions of [`WindowedStream`]: `process` and
//! `process_with` (Flink's
//! `WindowedStream::process(ProcessWindowFunction)`), `aggregate_with` and
//! `reduce_with` (Flink's `aggregate(aggFn, windowFn)` and
//! `reduce(reduceFn, windowFn)`), for every window kind. They run on the
//! [`GeneralWindowOperator`].

use weir_net::Wire;
use weir_state::KeyHash;

use super::assign::{TimeWindow, Windowing};
use super::contents::{
    Accumulated, Buffered, FnProcessWindowFunction, FnWindowFunction, ProcessWindowFunction,
    WindowCollector, WindowContents,
};
use super::general::GeneralWindowOperator;
use super::{AggregateFold, ReduceFold};
use crate::job::{ChainBuilder, Stream, WindowedStream};
use crate::keyed_state::AggregateFunction;
use crate::source::SubtaskInfo;

impl<'j, T, K, KF, A> WindowedStream<'j, T, K, KF, A>
where
    T: Wire + Clone + 'static,
    K: KeyHash + Eq + Copy + Wire + 'static,
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
        T: Copy,
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
        T: Copy,
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
        T: Copy,
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
        let (lateness, late_output) = (self.lateness, self.late_output);
        self.keyed.process(uid, move |info: &SubtaskInfo| {
            let late = late_output.as_ref().map(|factory| factory(info));
            GeneralWindowOperator::new(spec.clone(), contents(), lateness, late)
        })
    }
}
