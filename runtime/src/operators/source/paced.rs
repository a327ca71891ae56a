//! A source paced to a rate: at most `rate` records per second from this
//! subtask since its first poll (Flink's `RateLimiterStrategy` for the
//! data generator source). Between due records the source is idle until the
//! next one is due, so the worker parks rather than spins. A generator at a
//! chosen rate is what latency is measured at: the built-in jobs'
//! `job.rate` and SQL's `datagen` and `nexmark` connectors use it.

use std::time::{Duration, Instant};

use crate::chain::control::Collector;
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::{Source, SourcePoll, SourceWakeup};
use crate::state::visitor::OperatorStates;

/// `inner` at most `rate` records per second (0: unpaced); everything else
/// (positions, state, checks) is the inner source's, so it checkpoints and
/// rescales as the inner source does. After a restore the pace starts
/// again from the first poll.
pub struct Paced<S> {
    inner: S,
    rate: u64,
    started: Option<Instant>,
    emitted: u64,
}

impl<S> Paced<S> {
    /// `inner` paced to `rate` records/s (0: unpaced).
    pub fn new(inner: S, rate: u64) -> Self {
        Self {
            inner,
            rate,
            started: None,
            emitted: 0,
        }
    }

    /// Subtask `info`'s share of `total` records/s over all subtasks of
    /// the source (at least 1 each; 0: unpaced).
    pub fn share(inner: S, total: u64, info: &SubtaskInfo) -> Self {
        let rate = if total == 0 {
            0
        } else {
            (total / info.parallelism.max(1) as u64).max(1)
        };
        Self::new(inner, rate)
    }

    /// This subtask's rate in records/s (0: unpaced).
    pub fn rate(&self) -> u64 {
        self.rate
    }
}

impl<S: Source> Source for Paced<S> {
    type Out = S::Out;

    #[inline]
    fn poll_next<C: Collector<S::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.rate == 0 {
            return self.inner.poll_next(out, budget);
        }
        let started = *self.started.get_or_insert_with(Instant::now);
        let due = (started.elapsed().as_secs_f64() * self.rate as f64) as u64 + 1;
        let allowed = due.saturating_sub(self.emitted);
        if allowed == 0 {
            let next =
                started + Duration::from_secs_f64((self.emitted + 1) as f64 / self.rate as f64);
            return SourcePoll::Idle { until: Some(next) };
        }
        let polled = self.inner.poll_next(out, budget.min(allowed as usize));
        if let SourcePoll::Emitted(n) = polled {
            self.emitted += n as u64;
        }
        polled
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.inner.snapshot_position()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.inner.restore_position(position)
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.inner.visit_state(states);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        self.inner.initialize_restored_state()
    }

    fn open(&mut self, wakeup: SourceWakeup) {
        self.inner.open(wakeup);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.inner.notify_checkpoint_complete(checkpoint_id);
    }

    fn check(&mut self) -> Result<(), String> {
        self.inner.check()
    }

    fn is_retryable(&self, error: &str) -> bool {
        self.inner.is_retryable(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::source::sequence::SequenceSource;

    #[test]
    fn each_subtask_takes_its_share_of_the_rate() {
        let info = SubtaskInfo {
            index: 0,
            parallelism: 3,
            worker: 0,
            max_parallelism: 128,
        };
        let seq = || SequenceSource::new(&info, 10, |i: u64| i);
        assert_eq!(Paced::share(seq(), 3_000, &info).rate(), 1_000);
        assert_eq!(Paced::share(seq(), 2, &info).rate(), 1);
        assert_eq!(Paced::share(seq(), 0, &info).rate(), 0);
    }
}
