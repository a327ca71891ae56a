//! The strided splits: a fresh start is WORKLOADS.md's partitioning, and
//! any sequence of checkpoints and restores at any parallelism emits every
//! record exactly once, each subtask in increasing order.

use proptest::prelude::*;

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

/// Emits up to `budget` records of `splits` into `into`; checks they come
/// in increasing order after `last`.
fn run(splits: &mut StridedSplits, budget: usize, into: &mut Vec<u64>) {
    let mut tail = VecTail::default();
    let n = splits.emit(&mut |i| i, &mut tail, budget);
    assert_eq!(n, tail.items.len());
    for w in tail.items.windows(2) {
        assert!(w[0] < w[1], "a subtask emits in increasing order: {w:?}");
    }
    if let (Some(&last), Some(&first)) = (into.last(), tail.items.first()) {
        assert!(last < first, "across polls too: {last} then {first}");
    }
    into.extend(tail.items);
}

/// What every subtask stores at a checkpoint, concatenated in subtask
/// order: what a union restore hands every new subtask.
fn checkpoint(subtasks: &mut [StridedSplits]) -> Vec<StoredSplit> {
    subtasks
        .iter_mut()
        .flat_map(|s| {
            s.store();
            s.state.to_vec()
        })
        .collect()
}

/// The new subtasks of `parallelism` restored from `stored`.
fn restore(stored: &[StoredSplit], parallelism: usize, end: u64) -> Vec<StridedSplits> {
    (0..parallelism)
        .map(|i| {
            let mut s = StridedSplits::new(&info(i, parallelism), end);
            s.state.update(stored.iter().copied());
            s.restored().unwrap();
            s
        })
        .collect()
}

#[test]
fn a_fresh_start_is_the_workloads_partitioning() {
    for p in 1..5 {
        for s in 0..p {
            let mut splits = StridedSplits::new(&info(s, p), 50);
            let mut got = Vec::new();
            run(&mut splits, 1_000, &mut got);
            let want: Vec<u64> = (s as u64..50).step_by(p).collect();
            assert_eq!(got, want, "subtask {s} of {p}");
            assert!(splits.is_finished());
        }
    }
}

#[test]
fn the_same_parallelism_keeps_each_subtasks_own_split() {
    let mut old: Vec<StridedSplits> = (0..3)
        .map(|i| StridedSplits::new(&info(i, 3), 1_000))
        .collect();
    let mut seen = vec![Vec::new(); 3];
    for (i, (s, into)) in old.iter_mut().zip(&mut seen).enumerate() {
        run(s, 10 + 7 * i, into);
    }
    let stored = checkpoint(&mut old);
    let new = restore(&stored, 3, 1_000);
    for (a, b) in old.iter().zip(&new) {
        assert_eq!(a.splits(), b.splits());
    }
}

#[test]
fn scaling_down_interleaves_the_splits_in_order() {
    // Two subtasks at different progress, restored on one: the lagging
    // split is read alone up to the other's position, then both in turn.
    let mut old: Vec<StridedSplits> = (0..2)
        .map(|i| StridedSplits::new(&info(i, 2), 100))
        .collect();
    let mut seen = vec![Vec::new(); 2];
    run(&mut old[0], 20, &mut seen[0]); // 0..38 even: next 40
    run(&mut old[1], 5, &mut seen[1]); // 1..9 odd: next 11
    let mut new = restore(&checkpoint(&mut old), 1, 100);
    assert_eq!(new[0].splits(), vec![(11, 2, 100), (40, 2, 100)]);
    let mut rest = Vec::new();
    while !new[0].is_finished() {
        run(&mut new[0], 7, &mut rest);
    }
    let mut want: Vec<u64> = (11..40).step_by(2).collect();
    want.extend(40..100);
    assert_eq!(rest, want);
}

#[test]
fn scaling_up_cuts_the_splits_so_no_subtask_idles() {
    let mut old = vec![StridedSplits::new(&info(0, 1), 1_000)];
    run(&mut old[0], 100, &mut Vec::new());
    let new = restore(&checkpoint(&mut old), 3, 1_000);
    let shares: Vec<_> = new.iter().map(StridedSplits::splits).collect();
    assert_eq!(
        shares,
        vec![
            vec![(100, 3, 1_000)],
            vec![(101, 3, 1_000)],
            vec![(102, 3, 1_000)]
        ]
    );
}

#[test]
fn restored_splits_of_another_shape_are_refused() {
    let mut s = StridedSplits::new(&info(0, 2), 10);
    s.state
        .update([(0, 2, 10, 1 << 32), (1, 3, 10, 1 << 32 | 1)]);
    assert!(s.restored().unwrap_err().contains("one step and end"));
    s.state.update([(0, 0, 10, 1 << 32)]);
    assert!(s.restored().unwrap_err().contains("step 0"));
}

#[test]
fn a_position_of_the_format_before_splits_restores() {
    let mut s = StridedSplits::new(&info(1, 2), 10);
    s.restore_position(&7u64.to_le_bytes()).unwrap();
    assert_eq!(s.splits(), vec![(7, 2, 10)]);
    assert!(s.restore_position(&6u64.to_le_bytes()).is_err());
    s.restore_position(&[]).unwrap();
    assert_eq!(
        s.splits(),
        vec![(7, 2, 10)],
        "an empty position keeps the splits"
    );
    s.restore_position(&11u64.to_le_bytes()).unwrap();
    assert!(s.is_finished());
}

#[test]
fn a_subtask_without_splits_is_finished_at_once() {
    let mut s = StridedSplits::new(&info(3, 4), 2);
    assert!(s.is_finished());
    assert_eq!(s.emit(&mut |i| i, &mut VecTail::default(), 10), 0);
    let new = restore(&[], 2, 2);
    assert!(new.iter().all(StridedSplits::is_finished));
}

proptest! {
    /// Any sequence of parallelisms, each run for a while and
    /// checkpointed, ends with every record emitted exactly once (those
    /// emitted before each checkpoint, then the rest), each subtask in
    /// increasing order.
    #[test]
    fn any_sequence_of_rescales_emits_every_record_once(
        end in 0u64..3_000,
        start in 1usize..6,
        steps in proptest::collection::vec((1usize..9, proptest::collection::vec(0usize..300, 8)), 0..6),
    ) {
        let mut subtasks: Vec<StridedSplits> =
            (0..start).map(|i| StridedSplits::new(&info(i, start), end)).collect();
        let mut emitted = Vec::new();
        for (parallelism, budgets) in steps {
            for (s, budget) in subtasks.iter_mut().zip(budgets.iter().cycle()) {
                let mut got = Vec::new();
                run(s, *budget, &mut got);
                emitted.extend(got);
            }
            let stored = checkpoint(&mut subtasks);
            subtasks = restore(&stored, parallelism, end);
            // Every split's step and end are the job's.
            for s in &subtasks {
                for (_, _, e) in s.splits() {
                    prop_assert_eq!(e, end);
                }
            }
        }
        for s in &mut subtasks {
            let mut got = Vec::new();
            while !s.is_finished() {
                run(s, 97, &mut got);
            }
            emitted.extend(got);
        }
        emitted.sort_unstable();
        prop_assert_eq!(emitted, (0..end).collect::<Vec<_>>());
    }

    /// After a rescale to `P`, no subtask holds more than one split more
    /// than another (the splits are dealt round-robin).
    #[test]
    fn a_rescale_deals_the_splits_evenly(from in 1usize..9, to in 1usize..9) {
        let mut old: Vec<StridedSplits> =
            (0..from).map(|i| StridedSplits::new(&info(i, from), 1_000_000)).collect();
        let new = restore(&checkpoint(&mut old), to, 1_000_000);
        let counts: Vec<usize> = new.iter().map(|s| s.splits().len()).collect();
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        prop_assert!(*min >= 1 && max - min <= 1, "{:?}", counts);
    }
}
