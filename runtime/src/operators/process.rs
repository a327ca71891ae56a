//! The non-keyed process operator: Flink's `DataStream::process` with a
//! `ProcessFunction` that is also a `CheckpointedFunction`.
//!
//! [`Stream::process`](crate::api::stream::Stream::process) chains a [`ProcessOp`] into
//! the current stage: every record goes to the user's [`ProcessFunction`],
//! which may emit any number of records. Its state is *operator state*
//! ([`crate::state::operator`]): lists that belong to the parallel instance,
//! listed in [`ProcessFunction::visit_state`], frozen at every checkpoint
//! (after the function's [`snapshot_state`](ProcessFunction::snapshot_state)
//! hook) and restored, redistributed when the parallelism changed, before
//! [`initialize_state`](ProcessFunction::initialize_state) runs.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use weir_runtime::*;
//!
//! /// Emits running sums of pairs; a value waiting for its partner is
//! /// operator state, so a checkpoint keeps it.
//! struct Pairs(OperatorListState<u64>);
//!
//! impl ProcessFunction for Pairs {
//!     type In = u64;
//!     type Out = u64;
//!     fn process<C: Collector<u64>>(&mut self, _: &ProcessContext, v: u64, out: &mut C) {
//!         match self.0.get(0) {
//!             Some(first) => {
//!                 self.0.clear();
//!                 out.collect(first + v);
//!             }
//!             None => self.0.add(v),
//!         }
//!     }
//!     fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
//!         states.list(&mut self.0);
//!     }
//! }
//!
//! struct Total(Arc<AtomicU64>);
//!
//! impl Sink for Total {
//!     type In = u64;
//!     fn invoke(&mut self, v: u64) {
//!         self.0.fetch_add(v, Ordering::Relaxed);
//!     }
//! }
//!
//! let total = Arc::new(AtomicU64::new(0));
//! let into = total.clone();
//! let mut job = JobGraph::new("pairs");
//! job.source("numbers", |info: &SubtaskInfo| SequenceSource::new(info, 100, |i| i))
//!     .process("pairs", |_: &SubtaskInfo| Pairs(OperatorListState::new("waiting")))
//!     .parallelism(1)
//!     .sink("total", move |_: &SubtaskInfo| Total(into.clone()));
//! let mut options = ExecutionOptions::with_workers(1);
//! options.pin_cores = false;
//! execute(job, &options).unwrap();
//! assert_eq!(total.load(Ordering::Relaxed), (0..100).sum::<u64>());
//! ```

use crate::build::branch::BranchList;
use crate::build::builder::ChainBuilder;
use crate::build::context::{BuildContext, FunctionSite};
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::chain::task::Task;
use crate::core::subtask::SubtaskInfo;
use crate::operators::side_output::{SideOutputs, WithSides};
use crate::state::registry::{check_state_names, created_by, StateKind};
use crate::state::visitor::OperatorStates;

/// What a [`ProcessFunction`] sees of its operator while processing: the
/// subtask it runs in and the current watermark.
#[derive(Clone, Copy, Debug)]
pub struct ProcessContext {
    info: SubtaskInfo,
    watermark: i64,
}

impl ProcessContext {
    /// This subtask's index in `0..parallelism()`.
    pub fn subtask_index(&self) -> usize {
        self.info.index
    }

    /// The operator's parallelism.
    pub fn parallelism(&self) -> usize {
        self.info.parallelism
    }

    /// The event timestamp of the record being processed (Flink's
    /// `ctx.timestamp()`): `None` if it has none (its stream has no event
    /// time).
    #[inline]
    pub fn timestamp(&self) -> Option<i64> {
        let ts = crate::core::timestamp::current_record_timestamp();
        (ts != crate::core::timestamp::NO_TIMESTAMP).then_some(ts)
    }

    /// The operator's current watermark (ms; `i64::MIN` before the first
    /// and in jobs without event time), as Flink's
    /// `TimerService::currentWatermark`.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
}

/// What [`ProcessFunction::initialize_state`] is told (Flink's
/// `FunctionInitializationContext`).
#[derive(Clone, Copy, Debug)]
pub struct InitializationContext {
    info: SubtaskInfo,
    restored_from: Option<u64>,
}

impl InitializationContext {
    /// True if the job restored a checkpoint: the states hold what was
    /// redistributed to this subtask (Flink's `isRestored`).
    pub fn is_restored(&self) -> bool {
        self.restored_from.is_some()
    }

    /// The checkpoint restored, if any.
    pub fn restored_checkpoint(&self) -> Option<u64> {
        self.restored_from
    }

    /// This subtask's index.
    pub fn subtask_index(&self) -> usize {
        self.info.index
    }

    /// The operator's parallelism now (it may differ from the one the
    /// checkpoint was taken with).
    pub fn parallelism(&self) -> usize {
        self.info.parallelism
    }
}

/// User logic of a non-keyed process operator (Flink's `ProcessFunction`
/// with `CheckpointedFunction`'s hooks).
pub trait ProcessFunction: 'static {
    /// Records in.
    type In;
    /// Records out.
    type Out;

    /// Processes one record; emits any number of records into `out`.
    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &ProcessContext,
        value: Self::In,
        out: &mut C,
    );

    /// The input ended (bounded sources): emit any final results. Runs once:
    /// a restore from a checkpoint taken after it does not run it again.
    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        let _ = out;
    }

    /// Hands every operator state of this function to `states`, the same
    /// way for snapshots and restores:
    ///
    /// ```text
    /// fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
    ///     states.list(&mut self.buffer);
    /// }
    /// ```
    ///
    /// With checkpointing on, a state created but not visited fails the
    /// job at start (it would be lost on restore).
    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        let _ = states;
    }

    /// Lists the side outputs this function emits to, so that each is
    /// connected to the streams the job took for its tag
    /// ([`Stream::get_side_output`](crate::api::stream::Stream::get_side_output)):
    ///
    /// ```text
    /// fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
    ///     outputs.connect(&self.rejected);
    /// }
    /// ```
    ///
    /// A handle not listed stays unconnected: what it emits is dropped.
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }

    /// Called once before the first record, after the states were restored
    /// (Flink's `initializeState`): the place to read them into the
    /// function's own fields.
    fn initialize_state(&mut self, ctx: &InitializationContext) {
        let _ = ctx;
    }

    /// Checkpoint `checkpoint_id`'s barrier arrived, after every record
    /// before it (Flink's `snapshotState`): bring the states up to date;
    /// they are frozen right after.
    fn snapshot_state(&mut self, checkpoint_id: u64) {
        let _ = checkpoint_id;
    }

    /// Checkpoint `checkpoint_id` (and every earlier one) is complete
    /// (Flink's `CheckpointListener::notifyCheckpointComplete`).
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        let _ = checkpoint_id;
    }
}

/// Name of the process operator's end-of-input flag in its inline state.
pub const PROCESS_INPUT_ENDED_STATE: &str = "process.input-ended";

/// The non-keyed process operator in a chain.
pub struct ProcessOp<F, C> {
    func: F,
    out: C,
    ctx: ProcessContext,
    uid: String,
    ended: bool,
}

impl<F, C> ProcessOp<F, C> {
    /// Operator `uid` of subtask `info` running `func` into `out`;
    /// `input_ended` is restored from a checkpoint taken after its end of
    /// input.
    pub fn new(func: F, out: C, uid: &str, info: &SubtaskInfo, input_ended: bool) -> Self {
        Self {
            func,
            out,
            ctx: ProcessContext {
                info: *info,
                watermark: i64::MIN,
            },
            uid: uid.to_owned(),
            ended: input_ended,
        }
    }

    /// The user's function.
    pub fn function(&self) -> &F {
        &self.func
    }

    /// The chain after this operator.
    pub fn output(&self) -> &C {
        &self.out
    }

    /// The user's function, to change (tests).
    pub fn function_mut(&mut self) -> &mut F {
        &mut self.func
    }

    /// The chain after this operator, to change (tests).
    pub fn output_mut(&mut self) -> &mut C {
        &mut self.out
    }

    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.ctx.watermark
    }

    /// Whether the operator's input ended (here, or before the restored
    /// checkpoint).
    pub fn input_ended(&self) -> bool {
        self.ended
    }
}

impl<F: ProcessFunction, C: Collector<F::Out>> Collector<F::In> for ProcessOp<F, C> {
    #[inline(always)]
    fn collect(&mut self, record: F::In) {
        self.func.process(&self.ctx, record, &mut self.out);
    }
}

impl<F: ProcessFunction, C: Collector<F::Out>> ChainControl for ProcessOp<F, C> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available()
    }
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        self.out.is_available_for(records)
    }

    #[inline]
    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        self.out.flush(now)
    }

    fn end_input(&mut self) {
        if !self.ended {
            self.ended = true;
            self.func.on_end_of_input(&mut self.out);
        }
        self.out.end_input();
    }

    fn snapshot(&mut self, snapshot: &mut crate::core::snapshot::TaskSnapshot) {
        self.func.snapshot_state(snapshot.checkpoint_id());
        let part = snapshot.operator(&self.uid, &self.ctx.info);
        self.func
            .visit_state(&mut OperatorStates::snapshot(&mut part.operator_lists));
        if self.ended {
            part.inline
                .push((PROCESS_INPUT_ENDED_STATE.to_owned(), vec![1]));
        }
        self.out.snapshot(snapshot);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.func.notify_checkpoint_complete(checkpoint_id);
        self.out.notify_checkpoint_complete(checkpoint_id);
    }

    fn finish(&mut self) -> bool {
        self.out.finish()
    }

    #[inline]
    fn publish_metrics(&mut self) {
        self.out.publish_metrics()
    }

    fn output_pending(&self) -> bool {
        self.out.output_pending()
    }

    fn on_watermark(&mut self, watermark: i64) {
        if watermark > self.ctx.watermark {
            self.ctx.watermark = watermark;
            self.out.on_watermark(watermark);
        }
    }

    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.out.on_watermark_status(status);
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.out.on_latency_marker(marker)
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.out.failure()
    }
}

/// Makes the process function of `site` with `factory`: checks its state
/// names if the site asks, restores its operator states (redistributed
/// when the parallelism changed) and end-of-input flag from the site's
/// checkpoint, then runs its `initialize_state`. Returns the function and
/// whether the restored checkpoint was taken after its end of input.
pub fn make_process_function<F: ProcessFunction>(
    site: &FunctionSite<'_>,
    factory: impl FnOnce(&SubtaskInfo) -> F,
) -> Result<(F, bool), BuildError> {
    let (mut func, created) = created_by(StateKind::Operator, || factory(&site.info));
    if site.check_state_names {
        let mut visited = Vec::new();
        func.visit_state(&mut OperatorStates::names(&mut visited));
        check_state_names(StateKind::Operator, created, visited, &[]).map_err(|source| {
            BuildError::StateNames {
                task: site.task.clone(),
                kind: site.what,
                uid: site.uid.to_owned(),
                source,
            }
        })?;
    }
    let mut input_ended = false;
    let mut restored_from = None;
    if let Some(restore) = site.restore {
        let failed = |part, source| BuildError::Restore {
            task: site.task.clone(),
            kind: site.what,
            uid: site.uid.to_owned(),
            checkpoint: restore.id(),
            part,
            source: Box::new(source),
        };
        let scope = restore.scope(site.uid, &site.info);
        let mut states = OperatorStates::restore(&scope);
        func.visit_state(&mut states);
        if let Some(e) = states.into_error() {
            return Err(failed(Restoring::States, e));
        }
        input_ended = scope
            .flag(PROCESS_INPUT_ENDED_STATE)
            .map_err(|e| failed(Restoring::Inline, e))?;
        restored_from = Some(restore.id());
    }
    func.initialize_state(&InitializationContext {
        info: site.info,
        restored_from,
    });
    Ok((func, input_ended))
}

/// Chain link of [`Stream::process`](crate::api::stream::Stream::process).
pub struct ProcessChain<B, FF> {
    prev: B,
    uid: String,
    factory: FF,
    /// The streams taken from the operator's side outputs.
    side: BranchList,
}

impl<B, FF> ProcessChain<B, FF> {
    pub(crate) fn new(prev: B, uid: &str, factory: FF, side: BranchList) -> Self {
        Self {
            prev,
            uid: uid.to_owned(),
            factory,
            side,
        }
    }
}

impl<B, FF, F> ChainBuilder<F::Out> for ProcessChain<B, FF>
where
    F: ProcessFunction,
    F::In: 'static,
    F::Out: 'static,
    B: ChainBuilder<F::In>,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let (mut func, input_ended) = {
            let site = ctx.function_site(&self.uid, "process operator");
            make_process_function(&site, |info| (self.factory)(info))?
        };
        let mut outputs = SideOutputs::new(ctx, &self.side);
        func.side_outputs(&mut outputs);
        let sides = outputs.finish()?;
        if sides.is_empty() {
            let op = ProcessOp::new(func, out, &self.uid, &ctx.info, input_ended);
            self.prev.build(ctx, op)
        } else {
            let out = WithSides::new(out, sides);
            let op = ProcessOp::new(func, out, &self.uid, &ctx.info, input_ended);
            self.prev.build(ctx, op)
        }
    }
}

#[cfg(test)]
mod tests;
