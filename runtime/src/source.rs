//! Sources: the heads of the first stage, and the task that drives them.
//!
//! A [`Source`] emits records into its chain when polled, at most a budget
//! per poll, and stops early when the chain is unavailable (backpressure), so
//! that a worker never blocks inside a source while its own input channels
//! need draining. A bounded source returns [`SourcePoll::Finished`]; the task
//! then finishes the chain, which sends end-of-partition downstream.

use std::time::Instant;

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
        let mut n = 0;
        while n < budget {
            if self.next >= self.count {
                return if n == 0 {
                    SourcePoll::Finished
                } else {
                    SourcePoll::Emitted(n)
                };
            }
            if !out.is_available() {
                break;
            }
            out.collect((self.f)(self.next));
            self.next += self.step;
            n += 1;
        }
        SourcePoll::Emitted(n)
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        let next = decode_u64_position(position)?;
        if next % self.step != self.next % self.step {
            return Err(format!(
                "position {next} does not belong to this subtask (records {} mod {})",
                self.next % self.step,
                self.step
            ));
        }
        self.next = next;
        Ok(())
    }
}

/// Records a source may emit per poll before the worker looks at its inputs.
const SOURCE_BUDGET: usize = 4096;

/// Drives one source subtask and its chain.
pub struct SourceTask<S, C> {
    name: String,
    source: S,
    head: ChainHead<C>,
    emitted: Counter,
}

impl<S, C> SourceTask<S, C> {
    /// A task running `source` into `out`.
    pub fn new(name: String, source: S, out: C, emitted: Counter) -> Self {
        Self {
            name,
            source,
            head: ChainHead::new(out),
            emitted,
        }
    }
}

impl<S: Source, C: Collector<S::Out>> Task for SourceTask<S, C> {
    fn poll(&mut self, now: Instant) -> TaskPoll {
        let (source, emitted) = (&mut self.source, &self.emitted);
        self.head.poll(now, |out| {
            if !out.is_available() {
                return InputStep::default();
            }
            match source.poll_next(out, SOURCE_BUDGET) {
                SourcePoll::Emitted(n) => {
                    emitted.add(n as u64);
                    InputStep {
                        progressed: n > 0,
                        ..InputStep::default()
                    }
                }
                SourcePoll::Idle { until } => InputStep {
                    deadline: until,
                    ..InputStep::default()
                },
                SourcePoll::Finished => InputStep {
                    ended: true,
                    ..InputStep::default()
                },
            }
        })
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}
