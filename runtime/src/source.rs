//! Sources: the heads of the first stage, and the task that drives them.
//!
//! A [`Source`] emits records into its chain when polled, at most a budget
//! per poll, and stops early when the chain is unavailable (backpressure), so
//! that a worker never blocks inside a source while its own input channels
//! need draining. A bounded source returns [`SourcePoll::Finished`]; the task
//! then finishes the chain, which sends end-of-partition downstream.

use std::rc::Rc;
use std::time::{Duration, Instant};

use weir_net::CheckpointBarrier;

use crate::checkpoint::snapshot::TaskSnapshot;
use crate::checkpoint::TaskCheckpointing;
use crate::gate::BarrierMode;
use crate::metrics::Counter;
use crate::operator::Collector;
use crate::task::{ChainHead, InputStep, Task, TaskPoll};

/// What a [`Source::poll_next`] call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePoll {
    /// Emitted this many records (0 if the chain was unavailable).
    Emitted(usize),
    /// Nothing to emit before `until` (pacing), or until woken if `None`.
    Idle {
        /// When to poll again.
        until: Option<Instant>,
    },
    /// The source is exhausted: the partition ends.
    Finished,
}

/// A source subtask.
///
/// Sources are *replayable*, as exactly-once checkpoints need: at a
/// checkpoint barrier the runtime asks for the position after the last
/// emitted record ([`Source::snapshot_position`]); after a failure the
/// source is rewound to the position of the restored checkpoint
/// ([`Source::restore_position`]) and emits the same records again.
pub trait Source: 'static {
    /// Records produced.
    type Out;
    /// Emits up to `budget` records into `out`, checking
    /// `out.is_available()` before each one.
    fn poll_next<C: Collector<Self::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll;

    /// The position just after the last record emitted, opaque to the
    /// runtime; stored in the checkpoint whose barrier follows that record.
    fn snapshot_position(&mut self) -> Vec<u8>;

    /// Rewinds to a position returned by [`Source::snapshot_position`] of
    /// the same subtask. Called once, before the first `poll_next`. An error
    /// (a position this source cannot resume from) fails the restore.
    fn restore_position(&mut self, position: &[u8]) -> Result<(), String>;

    /// Hands the source's operator states to `states`, for snapshots and
    /// restores (see [`crate::operator_state`]). A source whose position
    /// is a list of splits keeps them there: they are then redistributed
    /// when the parallelism changes (the source may rescale), and its
    /// `snapshot_position` returns no bytes (see
    /// [`NumberSequenceSource`](crate::split_source::NumberSequenceSource)).
    /// A restore fills the states before `restore_position`.
    fn visit_state(&mut self, states: &mut crate::operator_state::OperatorStates<'_>) {
        let _ = states;
    }
}

/// Decodes the position of a source whose subtask emits records
/// `first, first + step, ...` (the partitioning of every WORKLOADS.md
/// source): the next record's index, which must be one of this subtask's.
pub fn decode_strided_position(position: &[u8], first: u64, step: u64) -> Result<u64, String> {
    let next = decode_u64_position(position)?;
    if next % step != first % step {
        return Err(format!(
            "position {next} is not a record of this subtask (records {} mod {step})",
            first % step
        ));
    }
    Ok(next)
}

/// Decodes a position made of one little-endian `u64` (the record index
/// most sources resume from); the error names what is wrong.
pub fn decode_u64_position(position: &[u8]) -> Result<u64, String> {
    let bytes: [u8; 8] = position.try_into().map_err(|_| {
        format!(
            "expected an 8-byte position, found {} bytes",
            position.len()
        )
    })?;
    Ok(u64::from_le_bytes(bytes))
}

/// Where a subtask runs: passed to every factory of sources, operators and
/// sinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubtaskInfo {
    /// This subtask's index in `0..parallelism`.
    pub index: usize,
    /// The operator's parallelism.
    pub parallelism: usize,
    /// The worker (core) it runs on.
    pub worker: usize,
    /// Number of key groups of the job.
    pub max_parallelism: u32,
}

/// A bounded source of records `f(i)` for `i = index, index + P, ...` below
/// `count` — the partitioning every WORKLOADS.md source uses.
pub struct SequenceSource<F> {
    next: u64,
    step: u64,
    count: u64,
    f: F,
}

impl<F> SequenceSource<F> {
    /// Records `f(i)` for this subtask's share of `0..count`.
    pub fn new(info: &SubtaskInfo, count: u64, f: F) -> Self {
        Self {
            next: info.index as u64,
            step: info.parallelism as u64,
            count,
            f,
        }
    }
}

impl<T, F: FnMut(u64) -> T + 'static> Source for SequenceSource<F> {
    type Out = T;

    #[inline]
    fn poll_next<C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.next >= self.count {
            return SourcePoll::Finished;
        }
        // The records left, each made as the chain takes it (a run: see
        // `Collector::collect_many`).
        let left = (self.count - self.next).div_ceil(self.step);
        let (f, first, step) = (&mut self.f, self.next, self.step);
        let mut records = (0..left).map(|j| f(first + j * step));
        let n = out.collect_many(&mut records, budget.min(left as usize));
        self.next += n as u64 * self.step;
        SourcePoll::Emitted(n)
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.next = decode_strided_position(position, self.next % self.step, self.step)?;
        Ok(())
    }
}

/// Records a source may emit per poll before the worker looks at its inputs.
const SOURCE_BUDGET: usize = 4096;

/// Drives one source subtask and its chain, and injects checkpoint
/// barriers: when the coordinator has triggered a checkpoint newer than the
/// last one injected, the task records the source's position, snapshots
/// its chain (which sends the barrier into every output channel behind the
/// records emitted so far) and hands the snapshot to the worker's writer.
/// After the end of its input it keeps answering triggers and ends its
/// partitions only once the final checkpoint is complete.
pub struct SourceTask<S, C> {
    name: String,
    uid: String,
    info: SubtaskInfo,
    source: S,
    head: ChainHead<C>,
    emitted: Counter,
    checkpointing: Option<Rc<TaskCheckpointing>>,
    injected: u64,
    exhausted: bool,
}

impl<S, C> SourceTask<S, C> {
    /// A task running `source` into `out`.
    pub fn new(
        name: String,
        uid: String,
        info: SubtaskInfo,
        source: S,
        out: C,
        emitted: Counter,
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
            checkpointing,
            injected,
            exhausted: false,
        }
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
            checkpointing,
            injected,
            exhausted,
        } = self;
        head.poll(now, |out| {
            let mut step = InputStep::default();
            if let Some(cp) = checkpointing {
                if cp.signals.triggered_id() > *injected {
                    let (id, timestamp_ms) = cp.signals.triggered();
                    let mut snapshot = TaskSnapshot::new(
                        CheckpointBarrier { id, timestamp_ms },
                        name.clone(),
                        Instant::now(),
                        Duration::ZERO,
                    );
                    snapshot.unaligned = cp.barrier_mode == BarrierMode::Unaligned;
                    snapshot.add_inline(uid, info, POSITION_STATE, source.snapshot_position());
                    let part = snapshot.operator(uid, info);
                    source.visit_state(&mut crate::operator_state::OperatorStates::snapshot(
                        &mut part.operator_lists,
                    ));
                    out.snapshot(&mut snapshot);
                    snapshot.end_sync();
                    cp.writer.submit(snapshot);
                    crate::checkpoint::trace!("{name}: injected barrier {id}");
                    *injected = id;
                    step.progressed = true;
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
            if !out.is_available() {
                return step;
            }
            match source.poll_next(out, SOURCE_BUDGET) {
                SourcePoll::Emitted(n) => {
                    emitted.add(n as u64);
                    step.progressed |= n > 0;
                    // Fewer than the budget: it ran out of records (for
                    // now, if paced) or of output.
                    step.more = n >= SOURCE_BUDGET;
                }
                SourcePoll::Idle { until } => step.deadline = until,
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

    fn describe(&self) -> String {
        self.name.clone()
    }
}
