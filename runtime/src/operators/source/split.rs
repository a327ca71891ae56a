//! Sources whose position is a list of splits, kept in operator list
//! state, so that they can rescale: [`NumberSequenceSource`] (Flink's
//! source of the same name) and how the runtime builds and restores such
//! sources.
//!
//! A source lists its operator states in
//! [`Source::visit_state`]. Its splits (fixed-size
//! `(next, end)` progress records, say) are frozen with every checkpoint
//! and, on a restore at another parallelism, redistributed by even split:
//! the old subtasks' unfinished splits are concatenated and cut into
//! contiguous parts, one per new subtask, so every record is read once
//! whatever the parallelism. A source that keeps its position in its
//! splits returns no bytes from `snapshot_position`; one that also keeps a
//! per-subtask position still needs its old parallelism, and says so.

use crate::build::context::BuildContext;
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::Collector;
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::{Source, SourcePoll};
use crate::state::operator::list::OperatorListState;
use crate::state::registry::{check_state_names, created_by, StateKind};
use crate::state::visitor::OperatorStates;

/// Makes the source of `ctx.info` with `factory`, checks its operator
/// states' names (with checkpointing on) and, when restoring, fills them
/// from the checkpoint (redistributed). Returns the source and whether it
/// has operator states (then its position may be empty and it may rescale).
pub(crate) fn build_source<S: Source>(
    factory: &impl Fn(&SubtaskInfo) -> S,
    uid: &str,
    ctx: &BuildContext<'_>,
) -> Result<(S, bool), BuildError> {
    let (mut source, created) = created_by(StateKind::Operator, || factory(&ctx.info));
    let mut visited = Vec::new();
    source.visit_state(&mut OperatorStates::names(&mut visited));
    let split = !visited.is_empty() || !created.is_empty();
    if ctx.checkpointing.is_some() {
        check_state_names(StateKind::Operator, created, visited, &[]).map_err(|source| {
            BuildError::StateNames {
                task: ctx.task_name(),
                kind: "source",
                uid: uid.to_owned(),
                source,
            }
        })?;
    }
    if split {
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(uid, &ctx.info);
            let mut states = OperatorStates::restore(&scope);
            source.visit_state(&mut states);
            if let Some(source) = states.into_error() {
                return Err(BuildError::Restore {
                    task: ctx.task_name(),
                    kind: "source",
                    uid: uid.to_owned(),
                    checkpoint: restore.id(),
                    part: Restoring::Splits,
                    source: Box::new(source),
                });
            }
            if let Err(message) = source.initialize_restored_state() {
                return Err(BuildError::RestorePosition {
                    task: ctx.task_name(),
                    uid: uid.to_owned(),
                    checkpoint: restore.id(),
                    retryable: source.is_retryable(&message),
                    message,
                });
            }
        }
    }
    Ok((source, split))
}

/// Records `f(i)` for `i` in `0..count`, read as `splits` contiguous
/// ranges of the sequence (Flink's `NumberSequenceSource`). At a fresh
/// start subtask `s` of `P` takes splits `s, s + P, ...` and reads them
/// in that order, so its numbers ascend; each split's
/// progress `(next, end)` is operator list state `splits`, so a restore at
/// another parallelism hands the unfinished splits to the new subtasks
/// (even split) and every number is emitted exactly once. Use more splits
/// than the largest parallelism: a subtask without a split finishes at
/// once.
pub struct NumberSequenceSource<F> {
    splits: OperatorListState<(u64, u64)>,
    f: F,
}

impl<F> NumberSequenceSource<F> {
    /// Subtask `info`'s splits of `0..count` cut into `splits` ranges.
    ///
    /// # Panics
    ///
    /// If `splits` is 0.
    pub fn new(info: &SubtaskInfo, count: u64, splits: u64, f: F) -> Self {
        assert!(
            splits > 0,
            "NumberSequenceSource needs at least one split, got 0"
        );
        let bound = |j: u64| (u128::from(count) * u128::from(j) / u128::from(splits)) as u64;
        let mut list = OperatorListState::new("splits");
        for j in (info.index as u64..splits).step_by(info.parallelism.max(1)) {
            let (start, end) = (bound(j), bound(j + 1));
            if start < end {
                list.add((start, end));
            }
        }
        Self { splits: list, f }
    }

    /// The unfinished splits `(next, end)` of this subtask.
    pub fn splits(&self) -> Vec<(u64, u64)> {
        self.splits.to_vec()
    }
}

impl<T, F: FnMut(u64) -> T + 'static> Source for NumberSequenceSource<F> {
    type Out = T;

    fn poll_next<C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let mut n = 0;
        while n < budget {
            let Some((mut next, end)) = self.splits.get(0) else {
                return if n == 0 {
                    SourcePoll::Finished
                } else {
                    SourcePoll::Emitted(n)
                };
            };
            let stop = end.min(next.saturating_add((budget - n) as u64));
            while next < stop && out.is_available() {
                out.collect((self.f)(next));
                next += 1;
                n += 1;
            }
            if next == end {
                // In order: a subtask emits its splits' numbers ascending,
                // so event times made from them never go back (a
                // swap_remove would read the last split next).
                self.splits.remove(0);
            } else {
                self.splits.set(0, (next, end));
                if !out.is_available() {
                    break;
                }
            }
        }
        SourcePoll::Emitted(n)
    }

    /// The position is the splits: no bytes.
    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        if position.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "NumberSequenceSource keeps its position in its splits, but the checkpoint holds \
                 a {}-byte position",
                position.len()
            ))
        }
    }

    /// A position that does not decode stays so: a restart restores the
    /// same bytes.
    fn is_retryable(&self, _error: &str) -> bool {
        false
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.list(&mut self.splits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::testing::VecTail;

    fn info(index: usize, parallelism: usize) -> SubtaskInfo {
        SubtaskInfo {
            index,
            parallelism,
            worker: 0,
            max_parallelism: 128,
        }
    }

    /// The subtasks of any parallelism emit every number once, whatever
    /// the number of splits, in budgets of any size.
    #[test]
    fn subtasks_emit_every_number_once() {
        for (count, splits, parallelism, budget) in [
            (1_000, 7, 3, 64),
            (10, 16, 4, 3),
            (0, 2, 2, 8),
            (5_000, 1, 2, 4_096),
        ] {
            let mut all = Vec::new();
            for s in 0..parallelism {
                let mut source =
                    NumberSequenceSource::new(&info(s, parallelism), count, splits, |i| i);
                let mut tail = VecTail::default();
                while source.poll_next(&mut tail, budget) != SourcePoll::Finished {}
                assert!(
                    tail.items.windows(2).all(|w| w[0] < w[1]),
                    "subtask {s} emits its numbers ascending ({count} in {splits} splits)"
                );
                all.extend(tail.items);
            }
            all.sort_unstable();
            assert_eq!(
                all,
                (0..count).collect::<Vec<_>>(),
                "{count} in {splits} splits"
            );
        }
    }

    /// Progress is kept in the splits: after part of a split was read the
    /// list holds where it stopped; a position of bytes is refused.
    #[test]
    fn progress_is_in_the_splits() {
        let mut source = NumberSequenceSource::new(&info(0, 1), 100, 2, |i| i);
        let mut tail = VecTail::default();
        assert_eq!(source.poll_next(&mut tail, 30), SourcePoll::Emitted(30));
        assert_eq!(source.splits(), vec![(30, 50), (50, 100)]);
        assert_eq!(source.poll_next(&mut tail, 30), SourcePoll::Emitted(30));
        assert_eq!(source.splits(), vec![(60, 100)]);
        assert!(source.snapshot_position().is_empty());
        assert!(source.restore_position(&[]).is_ok());
        let e = source.restore_position(&[1; 8]).unwrap_err();
        assert!(e.contains("8-byte position"), "{e}");
    }
}
