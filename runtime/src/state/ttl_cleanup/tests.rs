//! Tests of TTL cleanup: keys never touched again are removed by ticks,
//! accesses and per-record steps as configured, a snapshot has the live
//! table swept, tables shrink, and live entries are never lost.

use std::rc::Rc;
use std::time::Duration;

use super::*;
use crate::state::aggregating::KeyedReducingState;
use crate::state::key_context::KeyContext;
use crate::state::list::KeyedListState;
use crate::state::map::KeyedMapState;
use crate::state::ttl::{ManualClock, StateTtlConfig};
use crate::state::ttl_value::KeyedTtlValueState;

fn ctx(k: u64) -> KeyContext<u64> {
    KeyContext::new(k)
}

/// Ticks until `state` holds at most `left` entries (at most `limit`
/// ticks); returns the ticks taken.
fn tick_until<S: TtlTables>(state: &mut S, left: usize, limit: usize) -> usize {
    for ticks in 0..limit {
        if state.stored_entries() <= left {
            return ticks;
        }
        run_pass(state, &mut CleanupPass::new(CleanupTrigger::Tick));
    }
    panic!(
        "{} entries left after {limit} ticks",
        state.stored_entries()
    );
}

fn value_state(config: StateTtlConfig, clock: &ManualClock) -> KeyedTtlValueState<u64, u64> {
    KeyedTtlValueState::new("v", config).with_ttl_clock(config, Rc::new(clock.clone()))
}

#[test]
fn a_tick_sweeps_a_table_about_every_half_ttl() {
    // 1,000,000 slots, 10 s TTL: a sweep every 5 s is 500 ticks.
    assert_eq!(tick_budget(1_000_000, 10_000, 5), 2_000);
    // Bounded below by the cleanup size, above by the maximum.
    assert_eq!(tick_budget(10, 10_000, 5), 5);
    assert_eq!(tick_budget(100_000_000, 100, 5), TICK_MAX_ENTRIES);
    // A very long TTL still sweeps every 10 minutes.
    assert_eq!(tick_budget(60_000_000, u64::MAX, 5), 1_000);
}

#[test]
fn ticks_remove_keys_never_touched_again_and_give_the_memory_back() {
    let clock = ManualClock::new(0);
    let config = StateTtlConfig::new(Duration::from_secs(10));
    let mut s = value_state(config, &clock);
    for k in 0..200_000 {
        s.update(&ctx(k), k);
    }
    let peak = s.memory_bytes();
    clock.advance(Duration::from_secs(5));
    // Live keys survive any number of ticks.
    for _ in 0..1_000 {
        s.run_cleanup(&mut CleanupPass::new(CleanupTrigger::Tick));
    }
    assert_eq!(s.total_len(), 200_000);
    // Some keys are written again, then everything else expires.
    for k in 0..1_000 {
        s.update(&ctx(k), k + 1);
    }
    clock.advance(Duration::from_secs(5));
    // A sweep every 5 s at 10 ms a tick, and the shrinks start the sweep
    // again, each over a smaller table: all gone within one TTL.
    let ticks = tick_until(&mut s, 1_000, 2_000);
    assert!(ticks <= 1_000, "{ticks} ticks");
    assert_eq!(s.total_len(), 1_000);
    assert!(
        s.memory_bytes() * 10 <= peak,
        "{} of {peak}",
        s.memory_bytes()
    );
    for k in 0..1_000 {
        assert_eq!(s.value(&ctx(k)), Some(k + 1));
    }
    clock.advance(Duration::from_secs(10));
    tick_until(&mut s, 0, 1_000);
    let mut pass = CleanupPass::new(CleanupTrigger::Tick);
    s.run_cleanup(&mut pass);
    assert!(pass.any_ttl && !pass.pending, "{pass:?}");
    assert_eq!(s.memory_bytes(), 0);
}

#[test]
fn each_access_checks_cleanup_size_entries() {
    let clock = ManualClock::new(0);
    for (config, removed) in [
        (StateTtlConfig::new(Duration::from_secs(1)), 500),
        (
            StateTtlConfig::new(Duration::from_secs(1)).cleanup_incrementally(2, false),
            200,
        ),
        (
            StateTtlConfig::new(Duration::from_secs(1)).disable_cleanup_in_background(),
            0,
        ),
    ] {
        let mut s = value_state(config, &clock);
        for k in 0..10_000 {
            s.update(&ctx(k), k);
        }
        clock.advance(Duration::from_secs(1));
        // 100 accesses of keys that are not there: each checks
        // `cleanup_size` entries from the cursor, all of them expired.
        for k in 0..100 {
            assert_eq!(s.value(&ctx(1_000_000 + k)), None);
        }
        assert_eq!(s.total_len(), 10_000 - removed, "{config:?}");
    }
}

#[test]
fn per_record_cleanup_runs_only_when_asked() {
    let clock = ManualClock::new(0);
    for (per_record, removed) in [(false, 0), (true, 300)] {
        let config =
            StateTtlConfig::new(Duration::from_secs(1)).cleanup_incrementally(3, per_record);
        let mut s = value_state(config, &clock);
        for k in 0..1_000 {
            s.update(&ctx(k), k);
        }
        clock.advance(Duration::from_secs(2));
        let mut pass = CleanupPass::new(CleanupTrigger::Records(100));
        s.run_cleanup(&mut pass);
        assert_eq!(pass.per_record, per_record);
        assert_eq!(s.total_len(), 1_000 - removed);
    }
}

#[test]
fn a_snapshot_has_the_live_table_swept() {
    let clock = ManualClock::new(0);
    let base = StateTtlConfig::new(Duration::from_secs(1)).disable_cleanup_in_background();
    for (full_snapshot, left) in [(true, 0), (false, 50_000)] {
        let mut s = value_state(base.cleanup_full_snapshot(full_snapshot), &clock);
        for k in 0..50_000 {
            s.update(&ctx(k), k);
        }
        clock.advance(Duration::from_secs(1));
        // Without background cleanup, ticks do nothing until a snapshot.
        s.run_cleanup(&mut CleanupPass::new(CleanupTrigger::Tick));
        assert_eq!(s.total_len(), 50_000);
        let view = s.freeze();
        for _ in 0..10 {
            s.run_cleanup(&mut CleanupPass::new(CleanupTrigger::Tick));
        }
        assert_eq!(
            s.total_len(),
            left,
            "cleanup_full_snapshot({full_snapshot})"
        );
        // The view was taken before: it still has every entry (and
        // writes none of them, all expired).
        drop(view);
    }
}

#[test]
fn map_and_list_entries_of_untouched_keys_are_removed() {
    let clock = ManualClock::new(0);
    let config = StateTtlConfig::new(Duration::from_millis(100));
    let mut map =
        KeyedMapState::<u64, u64, u64>::new("m").with_ttl_clock(config, Rc::new(clock.clone()));
    let mut list =
        KeyedListState::<u64, u64>::new("l").with_ttl_clock(config, Rc::new(clock.clone()));
    for k in 0..5_000 {
        for u in 0..4 {
            map.put(&ctx(k), u, k * u);
            list.add(&ctx(k), k + u);
        }
    }
    let (map_peak, list_peak) = (map.memory_bytes(), list.memory_bytes());
    clock.advance(Duration::from_millis(60));
    // Keys 0..10 get one more entry, which outlives the others.
    for k in 0..10 {
        map.put(&ctx(k), 99, 1);
        list.add(&ctx(k), 7);
    }
    clock.advance(Duration::from_millis(50));
    tick_until(&mut map, 10, 1_000);
    tick_until(&mut list, 10, 1_000);
    assert!(map.memory_bytes() * 10 <= map_peak);
    assert!(list.memory_bytes() * 10 <= list_peak);
    for k in 0..10 {
        assert_eq!(map.entries(&ctx(k)).collect::<Vec<_>>(), vec![(99, 1)]);
        assert_eq!(list.get(&ctx(k)).collect::<Vec<_>>(), vec![7]);
    }
    assert_eq!(map.len(&ctx(10)), 0);
    assert_eq!(list.get(&ctx(10)).count(), 0);
    clock.advance(Duration::from_secs(1));
    tick_until(&mut map, 0, 1_000);
    tick_until(&mut list, 0, 1_000);
    assert_eq!((map.memory_bytes(), list.memory_bytes()), (0, 0));
}

#[test]
fn states_without_ttl_are_not_visited() {
    let mut s = KeyedReducingState::new("r", |a: u64, b: u64| a + b);
    s.add(&ctx(1), 1);
    let mut pass = CleanupPass::new(CleanupTrigger::Tick);
    s.run_cleanup(&mut pass);
    assert!(!pass.any_ttl && !pass.pending);
}
