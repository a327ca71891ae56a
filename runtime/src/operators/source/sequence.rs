//! The sequence source of every WORKLOADS.md workload: subtask `s` of `P`
//! emits `f(i)` for `i = s, s + P, ...`; its position is strided splits,
//! so it rescales (see [`crate::operators::source::strided`]).

use crate::chain::control::Collector;
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::{Source, SourcePoll};
use crate::operators::source::strided::StridedSplits;
use crate::state::visitor::OperatorStates;

/// A bounded source of records `f(i)` for `i = index, index + P, ...` below
/// `count` — the partitioning every WORKLOADS.md source uses. Its splits
/// are union list state: a restore at another parallelism hands the
/// records not yet emitted to the new subtasks, each once.
pub struct SequenceSource<F> {
    splits: StridedSplits,
    f: F,
}

impl<F> SequenceSource<F> {
    /// Records `f(i)` for this subtask's share of `0..count`.
    pub fn new(info: &SubtaskInfo, count: u64, f: F) -> Self {
        Self {
            splits: StridedSplits::new(info, count),
            f,
        }
    }

    /// The unfinished splits `(next, step, end)` of this subtask.
    pub fn splits(&self) -> Vec<(u64, u64, u64)> {
        self.splits.splits()
    }
}

impl<T, F: FnMut(u64) -> T + 'static> Source for SequenceSource<F> {
    type Out = T;

    #[inline]
    fn poll_next<C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.splits.is_finished() {
            return SourcePoll::Finished;
        }
        SourcePoll::Emitted(self.splits.emit(&mut self.f, out, budget))
    }

    /// The position is the splits: no bytes.
    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    /// An empty position (the splits hold it), or one of the format before
    /// splits (an index, at the same parallelism).
    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.splits.restore_position(position)
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.splits.visit(states);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        self.splits.restored()
    }

    /// A position or splits that do not decode stay so: a restart
    /// restores the same bytes.
    fn is_retryable(&self, _error: &str) -> bool {
        false
    }
}
