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

/// Fewest records a poll asks for however slow they are.
const MIN_SOURCE_BUDGET: usize = 16;

/// How long one poll of a source and its chain should take at most: the
/// budget shrinks to what fits when records are slow (a heavy chain, a
/// debug build). A worker gives its other tasks, timers and the snapshot
/// writer's I/O their turns only between polls, so one poll of 4096 slow
/// records (tens of milliseconds) made every step of an asynchronous
/// checkpoint wait that long.
const SOURCE_POLL_TARGET: Duration = Duration::from_millis(1);

/// The budget for the next poll, after one that emitted `n` records in
/// `took`: as many as fit [`SOURCE_POLL_TARGET`] at that pace, within
/// [`MIN_SOURCE_BUDGET`]..=[`SOURCE_BUDGET`].
fn next_budget(n: usize, took: Duration) -> usize {
    if n == 0 {
        return SOURCE_BUDGET;
    }
    let per_record = (took.as_nanos() / n as u128).max(1);
    let fit = SOURCE_POLL_TARGET.as_nanos() / per_record;
    (fit.min(SOURCE_BUDGET as u128) as usize).max(MIN_SOURCE_BUDGET)
}

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
    /// Records the next poll asks for ([`next_budget`]).
    budget: usize,
    /// Whether the last poll emitted its whole budget.
    budget_bound: bool,
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
            budget: SOURCE_BUDGET,
            budget_bound: false,
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
            budget,
            budget_bound,
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
            let asked = *budget;
            // Timed only while the budget binds (a source that keeps
            // running dry, paced or waiting for input, reads no clock).
            let start = budget_bound.then(Instant::now);
            match source.poll_next(out, asked) {
                SourcePoll::Emitted(n) => {
                    emitted.add(n as u64);
                    subtask.add_source_records(n as u64);
                    step.progressed |= n > 0;
                    // Fewer than the budget: it ran out of records (for
                    // now, if paced) or of output.
                    step.more = n >= asked;
                    *budget_bound = step.more;
                    if let (Some(start), true) = (start, step.more) {
                        *budget = next_budget(n, start.elapsed());
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A poll of fast records keeps the whole budget; slow records get as
    /// many as fit a millisecond, never fewer than the minimum.
    #[test]
    fn the_budget_fits_a_millisecond_of_records() {
        let us = Duration::from_micros;
        assert_eq!(next_budget(4096, us(40)), SOURCE_BUDGET);
        assert_eq!(next_budget(4096, us(1000)), SOURCE_BUDGET);
        // 10 us a record: 100 fit.
        assert_eq!(next_budget(4096, us(40_960)), 100);
        assert_eq!(next_budget(100, us(1000)), 100);
        // And back up once records are fast again.
        assert_eq!(next_budget(100, us(10)), SOURCE_BUDGET);
        assert_eq!(next_budget(16, us(100_000)), MIN_SOURCE_BUDGET);
        assert_eq!(next_budget(0, us(5)), SOURCE_BUDGET);
    }
}
