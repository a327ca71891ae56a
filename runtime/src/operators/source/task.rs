//! The task that drives a source subtask and its chain, and injects
//! checkpoint barriers.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::chain::control::Collector;
use crate::chain::error::TaskError;
use crate::chain::task::{ChainHead, InputStep, Task, TaskPoll};
use crate::checkpoint::task::TaskCheckpointing;
use crate::core::barrier::BarrierMode;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::core::time::earliest;
use crate::metrics::counters::Counter;
use crate::metrics::latency::MarkerEmitter;
use crate::metrics::subtask::SubtaskMetrics;
use crate::operators::source::function::{Source, SourcePoll};

/// Records a source may emit per poll before the worker looks at its inputs.
const SOURCE_BUDGET: usize = 4096;

/// Drives one source subtask and its chain, and injects checkpoint
/// barriers: when the coordinator has triggered a checkpoint newer than the
/// last one injected, the task records the source's position, snapshots
/// its chain (which sends the barrier into every output channel behind the
/// records emitted so far) and hands the snapshot to the worker's writer.
/// After the end of its input it keeps answering triggers and ends its
/// partitions only once the final checkpoint is complete. After the barrier
/// of a stop (stop-with-savepoint) it emits nothing more.
pub struct SourceTask<S, C> {
    name: String,
    uid: String,
    info: SubtaskInfo,
    source: S,
    head: ChainHead<C>,
    emitted: Counter,
    /// Its subtask's metrics: the source's own record count.
    subtask: SubtaskMetrics,
    checkpointing: Option<Rc<TaskCheckpointing>>,
    injected: u64,
    /// The newest completed checkpoint the source was told of.
    notified: u64,
    exhausted: bool,
    /// The error the source reported ([`Source::check`]).
    failed: Option<TaskError>,
    /// Latency markers, when tracking is on (`metrics.latency.interval`).
    markers: Option<MarkerEmitter>,
}

impl<S, C> SourceTask<S, C> {
    /// A task running `source` into `out`, counting the records it emits
    /// in `emitted` (its worker's) and in `subtask`'s metrics.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        uid: String,
        info: SubtaskInfo,
        source: S,
        out: C,
        emitted: Counter,
        subtask: SubtaskMetrics,
        checkpointing: Option<Rc<TaskCheckpointing>>,
    ) -> Self {
        let injected = checkpointing
            .as_ref()
            .map_or(0, |c| c.signals.triggered_id());
        Self {
            name,
            uid,
            info,
            source,
            head: ChainHead::new(out, checkpointing.clone()),
            emitted,
            subtask,
            checkpointing,
            injected,
            notified: injected,
            exhausted: false,
            failed: None,
            markers: None,
        }
    }

    /// Emits a latency marker every `interval` (`None`: none), naming
    /// itself stage `stage`.
    pub fn with_latency_markers(mut self, interval: Option<Duration>, stage: usize) -> Self {
        self.markers =
            interval.map(|i| MarkerEmitter::new(i, stage, self.info.index, Instant::now()));
        self
    }
}

/// Name of a source's position in its inline state.
pub const POSITION_STATE: &str = "source.position";

impl<S: Source, C: Collector<S::Out>> Task for SourceTask<S, C> {
    fn poll(&mut self, now: Instant) -> TaskPoll {
        let Self {
            name,
            uid,
            info,
            source,
            head,
            emitted,
            subtask,
            checkpointing,
            injected,
            notified,
            exhausted,
            failed,
            markers,
        } = self;
        head.poll(now, |out| {
            let mut step = InputStep::default();
            if let Some(cp) = checkpointing {
                let completed = cp.signals.completed_id();
                if completed > *notified {
                    *notified = completed;
                    source.notify_checkpoint_complete(completed);
                }
                if cp.signals.triggered_id() > *injected {
                    let barrier = cp.signals.triggered_barrier();
                    let id = barrier.id;
                    let mut snapshot =
                        TaskSnapshot::new(barrier, name.clone(), Instant::now(), Duration::ZERO);
                    // A savepoint's barrier never overtakes data.
                    snapshot.unaligned =
                        cp.barrier_mode.for_barrier(barrier.kind) == BarrierMode::Unaligned;
                    snapshot.add_inline(uid, info, POSITION_STATE, source.snapshot_position());
                    let part = snapshot.operator(uid, info);
                    source.visit_state(&mut crate::state::visitor::OperatorStates::snapshot(
                        &mut part.operator_lists,
                    ));
                    out.snapshot(&mut snapshot);
                    snapshot.end_sync();
                    // A chain that failed while snapshotting (a sink's
                    // pre-commit) fails the task after this poll; its
                    // snapshot is dropped, so the checkpoint never
                    // completes.
                    if out.failure().is_none() {
                        cp.writer.submit(snapshot);
                    }
                    tracing::trace!(
                        target: crate::core::log::CHECKPOINT,
                        checkpoint = id,
                        task = name.as_str(),
                        "source: barrier injected"
                    );
                    *injected = id;
                    step.progressed = true;
                }
                // Stopping: nothing after the stop's barrier (the job ends
                // once it completes; if it fails, the stop is withdrawn
                // and the source goes on).
                let stop = cp.signals.stop_id();
                if stop != 0 && *injected >= stop {
                    return step;
                }
                if *exhausted {
                    let last = cp.signals.final_id();
                    step.ended =
                        last != 0 && *injected >= last && cp.signals.completed_id() >= last;
                    return step;
                }
            } else if *exhausted {
                step.ended = true;
                return step;
            }
            // Markers go out whatever the output's credit (they queue
            // behind the records before them), until the input ends.
            if let Some(m) = markers {
                if let Some(marker) = m.due(now) {
                    out.on_latency_marker(marker);
                }
                step.deadline = Some(m.next());
            }
            if !out.is_available() {
                return step;
            }
            match source.poll_next(out, SOURCE_BUDGET) {
                SourcePoll::Emitted(n) => {
                    emitted.add(n as u64);
                    subtask.add_source_records(n as u64);
                    step.progressed |= n > 0;
                    // Fewer than the budget: it ran out of records (for
                    // now, if paced) or of output.
                    step.more = n >= SOURCE_BUDGET;
                }
                SourcePoll::Idle { until } => {
                    step.deadline = earliest(step.deadline, until);
                    // Idle is where a source that met an error stops (off
                    // the per-record path): ask it.
                    if let Err(message) = source.check() {
                        *failed = Some(TaskError::Source {
                            task: name.clone(),
                            uid: uid.clone(),
                            retryable: source.is_retryable(&message),
                            message,
                        });
                    }
                }
                SourcePoll::Finished => {
                    *exhausted = true;
                    step.progressed = true;
                    step.data_ended = true;
                    match checkpointing {
                        Some(cp) => cp.signals.source_ended(),
                        None => step.ended = true,
                    }
                }
            }
            step
        })
    }

    fn failure(&self) -> Option<&TaskError> {
        self.failed.as_ref().or_else(|| self.head.failure())
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}
