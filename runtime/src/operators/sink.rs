//! Sinks: the tails of chains that leave the dataflow.
//!
//! A sink sees every record of its subtask through [`Sink::invoke`], then
//! [`Sink::finish`] once when its input has ended. The wrapping [`SinkOp`]
//! counts records into the worker's metrics (publishing every 1,024 records,
//! so the hot path stays free of atomic read-modify-writes) and into its
//! subtask's `records_out` (published once per poll). A sink's error fails
//! its task through [`ChainControl::failure`], never a panic.

use std::time::Instant;

use crate::build::builder::TailBuilder;
use crate::build::context::BuildContext;
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::checkpoint::error::RestoreError;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::metrics::counters::Counter;
use crate::metrics::subtask::SubtaskMetrics;

/// A sink subtask.
///
/// With checkpointing on, a sink takes part in two-phase commit, as Flink's
/// `TwoPhaseCommitSinkFunction` does: at checkpoint `n`'s barrier it
/// *pre-commits* what it received since the previous barrier and returns the
/// state to keep ([`Sink::snapshot_state`]); once checkpoint `n` is complete
/// it *commits* ([`Sink::notify_checkpoint_complete`]). After a failure it is
/// handed the state of the restored checkpoint before any record
/// ([`Sink::initialize_state`]): it must commit what that state pre-committed
/// (commit is idempotent) and abort everything else. The defaults suit a
/// sink without external effects.
///
/// An `Err` from these methods fails the job, naming the sink's subtask;
/// [`Sink::is_retryable`] says whether the restart strategy may restart it.
/// [`Sink::invoke`] cannot return one: a sink remembers an error it meets
/// there and returns it from [`Sink::check`] (and refuses to pre-commit).
pub trait Sink: 'static {
    /// Records it takes.
    type In;
    /// Takes one record.
    fn invoke(&mut self, record: Self::In);

    /// An error [`Sink::invoke`] met (an I/O error writing the records),
    /// which it could not return. The runtime asks once per poll of the
    /// sink's task, after at most a few thousand records, and fails the
    /// task with it. The default has none.
    fn check(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Whether `error`, just returned by one of this sink's methods, may
    /// pass when the job restarts (an I/O error, a full disk): the restart
    /// strategy then decides. `false` fails the job at once, without the
    /// restart strategy: for an error a restart would meet again (an
    /// output directory that is a file, a restored state this sink cannot
    /// read). The default says it may, as Flink restarts after any
    /// exception.
    fn is_retryable(&self, error: &str) -> bool {
        let _ = error;
        true
    }
    /// The input ended: every record has been invoked. Records that reach
    /// the sink after this are none; the final checkpoint's barrier (with
    /// checkpointing on) follows.
    fn finish(&mut self) {}

    /// Called once, before [`Sink::initialize_state`] (or
    /// [`Sink::initialize_rescaled_state`]), with the uid of the sink's
    /// operator: unique in the job and the same in every run that restores
    /// its checkpoints. A sink whose outside names other writers could
    /// also use (files in a directory several sinks write) makes them its
    /// own with it, as Flink's FileSink puts a writer's id in its part
    /// files. The default ignores it.
    fn bind_uid(&mut self, uid: &str) {
        let _ = uid;
    }

    /// Called before [`initialize_state`](Self::initialize_state) when the
    /// whole job starts fresh (no checkpoint or savepoint restored), not
    /// when only this sink is new to a restored job: what an earlier run
    /// left outside is then this job's to clean up whoever wrote it (a
    /// file sink's part files of older weir, whose names carry no
    /// writer). The default ignores it.
    fn job_starts_fresh(&mut self) {}

    /// Called once before the first record: `restored` is the checkpoint id
    /// and the bytes [`Sink::snapshot_state`] returned for this subtask, or
    /// `None` on a fresh start.
    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let _ = restored;
        Ok(())
    }

    /// Called once before the first record, instead of
    /// [`Sink::initialize_state`], when checkpoint `checkpoint_id` was taken
    /// with this sink at another parallelism (a rescale). `states[k]` is
    /// what old subtask `k` returned from [`Sink::snapshot_state`]
    /// (`states.len()` is the old parallelism). Every new subtask is handed
    /// every old state, as Flink's union list state is, and takes its
    /// share: each old state must be handled by exactly one new subtask —
    /// [`rescaled_share`] gives old subtask `k` to new subtask
    /// `k % parallelism`. What a share means is the sink's: a
    /// transactional sink commits the share's pre-committed transactions
    /// (and aborts what else its share left), a counting sink adds the
    /// share's counts, a sink keyed by the upstream key keeps the entries
    /// of its key groups.
    ///
    /// `None` (the default) says the sink cannot be rescaled: the restore
    /// then fails at once, naming the operator and the parallelism it
    /// needs (a sink whose old subtasks all stored empty states is
    /// initialized fresh instead, without this call).
    fn initialize_rescaled_state(
        &mut self,
        checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        let _ = (checkpoint_id, states);
        None
    }

    /// Checkpoint `checkpoint_id`'s barrier arrived after every record
    /// before it: pre-commit and return the state to store.
    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let _ = checkpoint_id;
        Ok(Vec::new())
    }

    /// Checkpoint `checkpoint_id` (and so every earlier one) is complete.
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), String> {
        let _ = checkpoint_id;
        Ok(())
    }

    /// Files (or directories) the last [`Sink::snapshot_state`] left to be
    /// made durable: the runtime fsyncs them through io_uring in the
    /// checkpoint's asynchronous part, before acknowledging it, so the
    /// synchronous part does not wait for the disk. A sink that syncs in
    /// `snapshot_state` itself returns none (the default).
    fn take_files_to_sync(&mut self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    /// The part of the last [`Sink::snapshot_state`]'s pre-commit that a
    /// thread of the sink's own finishes (a client flushing to a broker):
    /// the runtime awaits it in the checkpoint's asynchronous part and
    /// acknowledges the checkpoint only if it succeeds, so the worker never
    /// waits for it. Without checkpointing, the end of input waits for it.
    /// The default has none.
    fn take_precommit(&mut self) -> Option<crate::core::completion::Completion> {
        None
    }
}

/// The old subtasks whose state new subtask `info` takes at a rescale
/// from `old_parallelism` subtasks: `k` with `k % info.parallelism ==
/// info.index`, so that every old subtask's state goes to exactly one new
/// subtask (scaling down, one new subtask takes several; scaling up, the
/// new subtasks past the old parallelism take none).
pub fn rescaled_share(info: &SubtaskInfo, old_parallelism: usize) -> impl Iterator<Item = usize> {
    (info.index..old_parallelism).step_by(info.parallelism.max(1))
}

/// What a sink subtask restores: nothing (a fresh start), its own state,
/// or at another parallelism every old subtask's.
pub enum RestoredSinkState<'a> {
    /// Its own state of checkpoint `.0` (the same parallelism).
    Own(u64, &'a [u8]),
    /// Every old subtask's state of checkpoint `.0` (another parallelism).
    Rescaled(u64, Vec<&'a [u8]>),
}

/// Wraps a [`Sink`] as the tail of a chain and counts what it receives.
/// It drives the sink's two-phase commit: pre-commit at a barrier (the
/// returned state goes into the checkpoint), commit on completion. Without
/// checkpointing, the end of input is its single commit point: `finish`,
/// then `snapshot_state(id)` and `notify_checkpoint_complete(id)`, `id`
/// being 0, or the restored checkpoint's id plus one (what the next
/// checkpoint would have been: a sink refuses an id that is not above the
/// one it restored).
pub struct SinkOp<S> {
    sink: S,
    uid: String,
    info: SubtaskInfo,
    checkpointing: bool,
    /// The id of the end of input's commit without checkpointing.
    final_commit: u64,
    name: String,
    local: u64,
    received: Counter,
    /// Records added to `received` so far.
    counted: u64,
    subtask: SubtaskMetrics,
    /// The error the sink failed with: it is called no more.
    failure: Option<TaskError>,
}

/// Records between publications of the sink's counter to the metrics.
const PUBLISH_EVERY: u64 = 1024;

/// Name of a sink's state in its inline state.
pub const SINK_STATE: &str = "sink.state";

impl<S: Sink> SinkOp<S> {
    /// A chain tail feeding `sink`, operator `uid` of subtask `info` in
    /// task `name`; `restored` is the checkpoint id and state this subtask
    /// restores (None: a fresh start). Records are counted into `received`
    /// (the worker's) and `subtask`. Fails if the sink's
    /// `initialize_state` does, or if it cannot take a rescaled state
    /// (a [`RestoreError::Rescale`], which no restart cures).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        mut sink: S,
        uid: &str,
        info: SubtaskInfo,
        name: String,
        checkpointing: bool,
        restored: Option<RestoredSinkState<'_>>,
        fresh_job: bool,
        received: Counter,
        subtask: SubtaskMetrics,
    ) -> Result<Self, BuildError> {
        sink.bind_uid(uid);
        if fresh_job {
            sink.job_starts_fresh();
        }
        let final_commit = match &restored {
            None => 0,
            Some(RestoredSinkState::Own(id, _) | RestoredSinkState::Rescaled(id, _)) => {
                id.saturating_add(1)
            }
        };
        let initialized = match restored {
            None => sink.initialize_state(None),
            Some(RestoredSinkState::Own(id, state)) => sink.initialize_state(Some((id, state))),
            Some(RestoredSinkState::Rescaled(id, states)) => {
                match sink.initialize_rescaled_state(id, &states) {
                    Some(result) => result,
                    None => {
                        return Err(BuildError::Restore {
                            task: name,
                            kind: "sink",
                            uid: uid.to_owned(),
                            checkpoint: id,
                            part: Restoring::Inline,
                            source: Box::new(RestoreError::Rescale {
                                uid: uid.to_owned(),
                                checkpoint: id,
                                was: states.len() as u32,
                                now: info.parallelism,
                            }),
                        })
                    }
                }
            }
        };
        if let Err(message) = initialized {
            return Err(BuildError::InitializeState {
                task: name,
                uid: uid.to_owned(),
                retryable: sink.is_retryable(&message),
                message,
            });
        }
        Ok(Self {
            sink,
            uid: uid.to_owned(),
            info,
            checkpointing,
            final_commit,
            name,
            local: 0,
            received,
            counted: 0,
            subtask,
            failure: None,
        })
    }

    /// Adds the records counted since the last time to the worker's count.
    fn count(&mut self) {
        let n = std::mem::take(&mut self.local);
        self.counted += n;
        self.received.add(n);
    }

    /// Records the sink's first error: the chain reports it and the task
    /// fails.
    #[cold]
    fn fail(&mut self, action: impl Into<String>, message: String) {
        if self.failure.is_none() {
            self.failure = Some(TaskError::Sink {
                task: self.name.clone(),
                uid: self.uid.clone(),
                action: action.into(),
                retryable: self.sink.is_retryable(&message),
                message,
            });
        }
    }
}

impl<S: Sink> ChainControl for SinkOp<S> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        true
    }
    #[inline(always)]
    fn is_available_for(&self, _records: usize) -> bool {
        true
    }

    fn flush(&mut self, _now: Instant) -> FlushOutcome {
        self.count();
        if let Err(e) = self.sink.check() {
            self.fail("write its records", e);
        }
        FlushOutcome::default()
    }

    fn end_input(&mut self) {
        self.count();
        if self.failure.is_some() {
            return;
        }
        self.sink.finish();
        if !self.checkpointing {
            let id = self.final_commit;
            if let Err(e) = self.sink.snapshot_state(id) {
                return self.fail("pre-commit at the end of input", e);
            }
            for path in self.sink.take_files_to_sync() {
                if let Err(e) = std::fs::File::open(&path).and_then(|f| f.sync_all()) {
                    return self.fail(format!("fsync {}", path.display()), e.to_string());
                }
            }
            if let Some(precommit) = self.sink.take_precommit() {
                if let Err(e) = precommit.wait() {
                    return self.fail("pre-commit at the end of input", e);
                }
            }
            if let Err(e) = self.sink.notify_checkpoint_complete(id) {
                self.fail("commit at the end of input", e);
            }
        }
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        self.count();
        if self.failure.is_some() {
            // The head drops this snapshot: its checkpoint never completes.
            return;
        }
        match self.sink.snapshot_state(snapshot.checkpoint_id()) {
            Ok(state) => {
                snapshot.add_inline(&self.uid, &self.info, SINK_STATE, state);
                snapshot
                    .files_to_sync
                    .extend(self.sink.take_files_to_sync());
                snapshot.precommits.extend(self.sink.take_precommit());
            }
            Err(e) => self.fail(
                format!("pre-commit for checkpoint {}", snapshot.checkpoint_id()),
                e,
            ),
        }
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.sink.notify_checkpoint_complete(checkpoint_id) {
            self.fail(format!("commit checkpoint {checkpoint_id}"), e);
        }
    }

    fn finish(&mut self) -> bool {
        self.count();
        true
    }

    #[inline]
    fn publish_metrics(&mut self) {
        self.subtask.publish_records_out(self.counted + self.local);
    }

    fn output_pending(&self) -> bool {
        false
    }

    /// A sink has no event-time logic: watermarks end here.
    fn on_watermark(&mut self, _watermark: i64) {}

    fn on_watermark_status(&mut self, _status: weir_net::WatermarkStatus) {}

    /// A marker ends at a sink (its task recorded it on arrival).
    fn on_latency_marker(&mut self, _marker: weir_net::LatencyMarker) {}

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.failure.as_ref()
    }
}

impl<S: Sink> Collector<S::In> for SinkOp<S> {
    #[inline(always)]
    fn collect(&mut self, record: S::In) {
        self.local += 1;
        if self.local == PUBLISH_EVERY {
            self.count();
        }
        self.sink.invoke(record);
    }
}

/// Tail of a stage that ends in a sink.
pub(crate) struct SinkTail<SF> {
    pub(crate) uid: String,
    pub(crate) factory: SF,
}

impl<S, SF> TailBuilder<S::In> for SinkTail<SF>
where
    S: Sink,
    SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
{
    type Tail = SinkOp<S>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Result<SinkOp<S>, BuildError> {
        let sink = (self.factory)(&ctx.info);
        let restore = ctx.restore.clone();
        // A sink the checkpoint has no state for (a new operator), or
        // whose old subtasks all stored none at another parallelism,
        // starts fresh, as in Flink.
        let restored = match &restore {
            None => None,
            Some(r) => {
                let scope = r.scope(&self.uid, &ctx.info);
                match scope.inline_of_every_subtask(SINK_STATE) {
                    Some(states) if scope.rescaled() => states
                        .iter()
                        .any(|s| !s.is_empty())
                        .then_some(RestoredSinkState::Rescaled(r.id(), states)),
                    _ => scope
                        .inline(SINK_STATE)
                        .map_err(|source| BuildError::Restore {
                            task: ctx.task_name(),
                            kind: "sink",
                            uid: self.uid.clone(),
                            checkpoint: r.id(),
                            part: Restoring::Inline,
                            source: Box::new(source),
                        })?
                        .map(|state| RestoredSinkState::Own(r.id(), state)),
                }
            }
        };
        SinkOp::new(
            sink,
            &self.uid,
            ctx.info,
            ctx.task_name(),
            ctx.checkpointing.is_some(),
            restored,
            ctx.restore.is_none(),
            ctx.metrics.sink_records.clone(),
            ctx.subtask.clone(),
        )
    }
}
