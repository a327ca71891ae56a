//! The sequence source of every WORKLOADS.md workload: subtask `s` of `P`
//! emits `f(i)` for `i = s, s + P, ...`.

use crate::chain::control::Collector;
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::{decode_strided_position, Source, SourcePoll};

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

    /// A position that does not decode stays so: a restart restores the
    /// same bytes.
    fn is_retryable(&self, _error: &str) -> bool {
        false
    }
}
