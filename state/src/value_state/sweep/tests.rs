//! Tests of the sweep and the shrink: every dead entry is eventually
//! removed and no live one ever is, with puts, removes and freezes
//! interleaved; a shrink keeps every entry and frozen views unchanged.

use std::collections::HashMap;

use super::super::tests::{assert_index_invariant, assert_view_eq};
use crate::key_group::KeyHash;
use crate::value_state::{FrozenValueState, SweepStep, ValueState};

/// Steps of `budget` until a whole sweep has passed with nothing removed
/// returns the steps taken.
fn purge_all(s: &mut ValueState<u64, u64>, budget: usize, dead: impl Fn(&u64) -> bool) -> usize {
    let mut steps = 0;
    let mut clean_wraps = 0;
    let mut removed_since_wrap = 0;
    while !s.is_empty() && clean_wraps < 2 {
        let step = s.purge_step(budget, |_, v| dead(v));
        removed_since_wrap += step.removed;
        if step.wrapped {
            clean_wraps = if removed_since_wrap == 0 {
                clean_wraps + 1
            } else {
                0
            };
            removed_since_wrap = 0;
        }
        steps += 1;
        assert!(steps < 10_000_000, "the sweep does not end");
    }
    steps
}

#[test]
fn a_sweep_removes_every_dead_entry_and_no_live_one() {
    let mut s: ValueState<u64, u64> = ValueState::new("ttl");
    for k in 0..20_000u64 {
        s.put(k, k % 3);
    }
    // Values 0 are dead; a small budget makes many steps across wraps.
    purge_all(&mut s, 7, |v| *v == 0);
    assert_index_invariant(&s);
    assert_eq!(s.len(), 20_000 - 20_000usize.div_ceil(3));
    for k in 0..20_000u64 {
        assert_eq!(s.get(&k).is_some(), k % 3 != 0, "key {k}");
    }
}

#[test]
fn one_sweep_suffices_without_other_removals() {
    // Clustered keys: removals at the cursor shift entries back into it,
    // and those entries must still be examined in the same sweep.
    let mut s: ValueState<u64, u64> = ValueState::with_capacity("ttl", 1_000);
    for k in 0..1_000u64 {
        s.put(k, k % 2);
    }
    let capacity = s.capacity();
    let mut examined = 0;
    loop {
        let step = s.purge_step(5, |_, v| *v == 0);
        examined += step.examined;
        if step.wrapped {
            break;
        }
        assert!(examined <= 2 * capacity);
    }
    assert_eq!(s.len(), 500);
    assert!(s.iter().all(|(_, v)| *v == 1));
    assert_index_invariant(&s);
}

#[test]
fn sweep_step_collects_and_rewinds_to_the_first_collected() {
    let mut s: ValueState<u64, u64> = ValueState::new("ttl");
    for k in 0..5_000u64 {
        s.put(k, k % 4);
    }
    let mut out = Vec::new();
    let mut guard = 0;
    while s.iter().any(|(_, v)| *v == 0) {
        out.clear();
        let step = s.sweep_step(9, |_, v| *v == 0, &mut out);
        assert_eq!(step.removed, out.len());
        for k in &out {
            assert_eq!(s.remove(k), Some(0));
        }
        guard += 1;
        assert!(guard < 100_000);
    }
    assert_eq!(s.len(), 3_750);
    assert_index_invariant(&s);
}

#[test]
fn a_budget_bounds_the_slots_a_step_scans() {
    let mut s: ValueState<u64, u64> = ValueState::with_capacity("ttl", 100_000);
    s.put(1, 1);
    // One entry in 131,072 slots: a step of budget 1 scans at most 64.
    let step = s.purge_step(1, |_, _| false);
    assert!(step.examined <= 1);
    assert!(s.sweep_cursor() <= 64 + 8, "{}", s.sweep_cursor());
    assert_eq!(s.purge_step(0, |_, _| true), SweepStep::default());
    assert_eq!(s.len(), 1);
}

#[test]
fn shrink_keeps_every_entry_and_frozen_views_unchanged() {
    let mut s: ValueState<u64, u64> = ValueState::new("ttl");
    let n = 100_000u64;
    for k in 0..n {
        s.put(k, k);
    }
    let before: HashMap<u64, u64> = s.iter().map(|(k, v)| (*k, *v)).collect();
    let view = s.freeze();
    let big = s.capacity();
    assert!(!s.shrink_if_sparse(), "a full table does not shrink");
    purge_all(&mut s, 1_000, |v| v % 100 != 0);
    assert_eq!(s.len(), 1_000);
    assert!(s.shrink_if_sparse());
    assert!(s.capacity() <= big / 32, "{} of {big}", s.capacity());
    assert!(!s.shrink_if_sparse(), "a shrunk table is not sparse");
    assert_index_invariant(&s);
    for k in 0..n {
        assert_eq!(s.get(&k), (k % 100 == 0).then_some(&k), "key {k}");
    }
    assert_view_eq(&view, &before);
    // Writes after the shrink do not reach the view either.
    for k in 0..n {
        s.put(k, k + 1);
    }
    assert_view_eq(&view, &before);
    assert_index_invariant(&s);
}

#[test]
fn an_emptied_table_gives_its_arena_back() {
    let mut s: ValueState<u64, u64> = ValueState::new("ttl");
    for k in 0..300_000u64 {
        s.put(k, k);
    }
    // 524,288 slots of 16 bytes: one slab of 8 MiB.
    assert!(s.memory_bytes() >= crate::arena::SLAB_MIN_BYTES);
    purge_all(&mut s, 4_096, |_| true);
    assert!(s.is_empty());
    assert!(s.shrink_if_sparse());
    assert_eq!(s.memory_bytes(), 0);
    assert_eq!(s.get(&1), None);
    s.put(7, 7);
    assert_eq!(s.get(&7), Some(&7));
    assert_index_invariant(&s);
}

#[test]
fn string_entries_are_freed_by_the_sweep() {
    let mut s: ValueState<String, String> = ValueState::new("ttl");
    for k in 0..3_000 {
        s.put(format!("k{k}"), format!("v{}", k % 2));
    }
    let view = s.freeze();
    let mut steps = 0;
    while s.iter().any(|(_, v)| v == "v0") {
        s.purge_step(13, |_, v| v == "v0");
        steps += 1;
        assert!(steps < 100_000);
    }
    assert_eq!(s.len(), 1_500);
    assert_eq!(view.len(), 3_000);
    drop(view);
    assert!(s.shrink_if_sparse() || s.capacity() <= 4_096);
    assert_eq!(s.get(&"k1".to_string()).map(String::as_str), Some("v1"));
}

mod model {
    //! The sweep against a `HashMap` model: entries carry an expiry time,
    //! the clock moves forward, and puts, removes, freezes and steps
    //! interleave. No step removes a live entry; once operations stop,
    //! steps remove every dead one; views keep what they saw.

    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// Key, lifetime from now.
        Put(u64, u64),
        Remove(u64),
        Advance(u64),
        Purge(usize),
        Sweep(usize),
        Shrink,
        Freeze,
        DropView(usize),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let key = 0u64..400;
        let op = prop_oneof![
            6 => (key.clone(), 1u64..50).prop_map(|(k, l)| Op::Put(k, l)),
            2 => key.prop_map(Op::Remove),
            2 => (1u64..20).prop_map(Op::Advance),
            3 => (1usize..40).prop_map(Op::Purge),
            2 => (1usize..40).prop_map(Op::Sweep),
            1 => Just(Op::Shrink),
            1 => Just(Op::Freeze),
            1 => any::<usize>().prop_map(Op::DropView),
        ];
        proptest::collection::vec(op, 0..600)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn steps_remove_dead_entries_only_and_eventually_all(ops in ops()) {
            // Values are expiry times: dead once `expiry <= now`.
            let mut s: ValueState<u64, u64> = ValueState::new("model");
            let mut m: HashMap<u64, u64> = HashMap::new();
            let mut views: Vec<(FrozenValueState<u64, u64>, HashMap<u64, u64>)> = Vec::new();
            let mut now = 0u64;
            let mut out = Vec::new();
            for op in ops {
                match op {
                    Op::Put(k, life) => {
                        s.put(k, now + life);
                        m.insert(k, now + life);
                    }
                    Op::Remove(k) => prop_assert_eq!(s.remove(&k), m.remove(&k)),
                    Op::Advance(by) => now += by,
                    Op::Purge(budget) => {
                        s.purge_step(budget, |_, &exp| exp <= now);
                    }
                    Op::Sweep(budget) => {
                        out.clear();
                        s.sweep_step(budget, |_, &exp| exp <= now, &mut out);
                        for k in &out {
                            prop_assert!(s.remove(k).is_some_and(|exp| exp <= now));
                        }
                    }
                    Op::Shrink => {
                        s.shrink_if_sparse();
                    }
                    Op::Freeze => views.push((s.freeze(), m.clone())),
                    Op::DropView(i) => {
                        if !views.is_empty() {
                            let (view, want) = views.remove(i % views.len());
                            assert_view_eq(&view, &want);
                        }
                    }
                }
                // The model drops entries only when the table lost them,
                // and only dead ones may be lost.
                let lost: Vec<u64> = m.keys().filter(|k| s.get(k).is_none()).copied().collect();
                for k in lost {
                    prop_assert!(m[&k] <= now, "live key {} removed", k);
                    m.remove(&k);
                }
                prop_assert_eq!(s.len(), m.len());
            }
            assert_index_invariant(&s);
            // Quiescent: steps alone remove every dead entry.
            let dead = m.values().filter(|&&e| e <= now).count();
            let mut steps = 0;
            while s.iter().any(|(_, &e)| e <= now) {
                s.purge_step(3, |_, &exp| exp <= now);
                steps += 1;
                prop_assert!(steps <= 2 * s.capacity() + 10, "dead entries left behind");
            }
            prop_assert_eq!(s.len(), m.len() - dead);
            assert_index_invariant(&s);
            for (view, want) in &views {
                assert_view_eq(view, want);
            }
        }
    }
}

/// The longest run of used slots of `s` (what one removal's backward
/// shift may have to walk).
fn longest_run(s: &ValueState<u64, u64>) -> usize {
    let (mut longest, mut run) = (0, 0);
    for pos in 0..s.capacity() {
        if s.tags[pos] == super::super::EMPTY {
            run = 0;
        } else {
            run += 1;
            longest = longest.max(run);
        }
    }
    longest
}

/// Survivors crowding one range of hashes (a sweep removes in hash order)
/// are not packed into a run of full slots by a shrink sized by their
/// number alone; once they spread out, or are fewer, the table shrinks.
#[test]
fn survivors_in_one_range_of_hashes_do_not_shrink_into_one_run() {
    let mut s: ValueState<u64, u64> = ValueState::new("ttl");
    let n = 400_000u64;
    for k in 0..n {
        s.put(k, k);
    }
    let big = s.capacity();
    // Keep the keys whose hashes lie in the lowest 1/16 of the range.
    purge_all(&mut s, 4_000, |k| k.key_hash() >> 60 != 0);
    let survivors = s.len();
    assert!((20_000..30_000).contains(&survivors), "{survivors}");
    assert!(survivors * 8 < big, "sparse overall");
    s.shrink_if_sparse();
    assert!(
        longest_run(&s) < 2_000,
        "a run of {} used slots of {} after the shrink",
        longest_run(&s),
        s.capacity()
    );
    assert_index_invariant(&s);
    // Fewer of them: a smaller table, still without a long run.
    purge_all(&mut s, 4_000, |k| k.key_hash() >> 56 != 0);
    assert!(
        s.shrink_if_sparse(),
        "{} entries of {}",
        s.len(),
        s.capacity()
    );
    assert!(s.capacity() < big);
    assert!(longest_run(&s) < 2_000, "{}", longest_run(&s));
    assert_index_invariant(&s);
    for k in 0..n {
        assert_eq!(s.get(&k).is_some(), k.key_hash() >> 56 == 0, "key {k}");
    }
}
