//! Tests of the keyed state kinds: against `HashMap` models (with and
//! without TTL, on a manual clock), and serialized per key group and read
//! back through their restore sinks.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use proptest::prelude::*;
use weir_state::{key_group_for_hash, KeyGroupRange};

use super::*;
use crate::checkpoint::keyed_restore::RestoreSink;
use crate::core::snapshot::FrozenKeyedState;
use crate::state::ttl::{ManualClock, UpdateType};
use crate::state::ttl_cleanup::TtlTables;

fn ctx(k: u64) -> KeyContext<u64> {
    KeyContext::new(k)
}

/// TTL settings a model test runs with: none, or `(ttl ms, reads renew)`.
fn ttl_strategy() -> impl Strategy<Value = Option<(u64, bool)>> {
    prop_oneof![Just(None), (1u64..50, any::<bool>()).prop_map(Some)]
}

fn config(ttl_ms: u64, renew: bool) -> StateTtlConfig {
    StateTtlConfig::new(Duration::from_millis(ttl_ms)).with_update_type(if renew {
        UpdateType::OnReadAndWrite
    } else {
        UpdateType::OnCreateAndWrite
    })
}

/// Every entry of `state` serialized as the snapshot writer does (table
/// blocks of two parts for a table, else per key group, all 128 in one
/// range), each checked to lie in its primary key's group (and, in a
/// table block, to fill exactly the slots its occupancy marks), and fed
/// to `sink`; a table's blocks per key group (an older version's layout)
/// must hold the same entries.
fn round_trip<F: FrozenKeyedState, S: RestoreSink>(frozen: &F, sink: &mut S) {
    use crate::checkpoint::table_block::TableBlock;
    const MAX_PARALLELISM: u32 = 128;
    let range = KeyGroupRange::new(0, MAX_PARALLELISM);
    let decode_into = |bytes: &[u8], group: Option<u32>, sink: &mut S| {
        let mut at = 0;
        let mut entries = 0;
        while at < bytes.len() {
            let (entry, n) = S::decode(&bytes[at..]).expect("a written entry decodes");
            let hash = S::group_hash(&entry);
            if let Some(group) = group {
                assert_eq!(key_group_for_hash(hash, MAX_PARALLELISM), group);
            }
            sink.insert(entry, hash);
            at += n;
            entries += 1;
        }
        entries
    };
    // Each entry's bytes, from `bytes` holding whole entries.
    let split = |mut bytes: &[u8], into: &mut Vec<Vec<u8>>| {
        while !bytes.is_empty() {
            let (_, n) = S::decode(bytes).expect("a written entry decodes");
            into.push(bytes[..n].to_vec());
            bytes = &bytes[n..];
        }
    };
    let (mut in_tables, mut in_groups) = (Vec::new(), Vec::new());
    // Two parts, as a writer serializing a large state does.
    let half = frozen.chunk_count() / 2;
    for chunks in [0..half, half..frozen.chunk_count()] {
        // Per key group: how every kind was written before the composite
        // kinds' tables became table blocks, which restores still read.
        let mut out = Vec::new();
        frozen.serialize_part(MAX_PARALLELISM, range, chunks.clone(), &mut out);
        for (i, block) in out.iter().enumerate() {
            if frozen.is_table() {
                split(block, &mut in_groups);
            } else {
                decode_into(block, Some(i as u32), sink);
            }
        }
        if frozen.is_table() {
            let mut out = Vec::new();
            frozen.serialize_table_part(chunks, &mut out);
            if out.is_empty() {
                continue;
            }
            let block = TableBlock::parse(&out).expect("a written table block parses");
            let used = block.positions().count();
            assert!(used > 0, "a table block of no entry was written");
            assert_eq!(decode_into(block.entries, None, sink), used);
            split(block.entries, &mut in_tables);
        }
    }
    // Both layouts hold the same entries.
    in_tables.sort();
    in_groups.sort();
    assert_eq!(
        in_tables, in_groups,
        "table blocks and blocks per key group differ"
    );
    sink.finish();
}

#[derive(Clone, Debug)]
enum MapOp {
    Put(u64, u8, u32),
    Remove(u64, u8),
    Get(u64, u8),
    Clear(u64),
    Entries(u64),
    Advance(u64),
    /// A TTL cleanup step of this budget.
    Purge(u8),
}

fn map_op() -> impl Strategy<Value = MapOp> {
    prop_oneof![
        4 => (0u64..6, any::<u8>().prop_map(|u| u % 12), any::<u32>()).prop_map(|(k, u, v)| MapOp::Put(k, u, v)),
        2 => (0u64..6, any::<u8>().prop_map(|u| u % 12)).prop_map(|(k, u)| MapOp::Remove(k, u)),
        2 => (0u64..6, any::<u8>().prop_map(|u| u % 12)).prop_map(|(k, u)| MapOp::Get(k, u)),
        1 => (0u64..6).prop_map(MapOp::Clear),
        1 => (0u64..6).prop_map(MapOp::Entries),
        1 => (0u64..20).prop_map(MapOp::Advance),
        1 => any::<u8>().prop_map(MapOp::Purge),
    ]
}

/// The live entries of `key` in a model of `(value, last access)`s.
fn live_of(
    model: &HashMap<(u64, u8), (u32, u64)>,
    key: u64,
    now: u64,
    ttl: Option<(u64, bool)>,
) -> Vec<(u8, u32)> {
    let mut live: Vec<(u8, u32)> = model
        .iter()
        .filter(|(&(k, _), &(_, stamp))| k == key && ttl.is_none_or(|(t, _)| stamp + t > now))
        .map(|(&(_, uk), &(v, _))| (uk, v))
        .collect();
    live.sort_unstable();
    live
}

proptest! {
    #[test]
    fn map_state_matches_a_model(ttl in ttl_strategy(), ops in prop::collection::vec(map_op(), 1..300)) {
        let clock = ManualClock::new(0);
        let mut state = KeyedMapState::<u64, u8, u32>::new("map");
        if let Some((t, renew)) = ttl {
            state = state.with_ttl_clock(config(t, renew), Rc::new(clock.clone()));
        }
        let expired = |stamp: u64, now: u64| ttl.is_some_and(|(t, _)| stamp + t <= now);
        let renew = ttl.is_some_and(|(_, r)| r);
        let mut model: HashMap<(u64, u8), (u32, u64)> = HashMap::new();
        for op in ops {
            let now = clock.now_millis();
            match op {
                MapOp::Put(k, uk, v) => {
                    state.put(&ctx(k), uk, v);
                    model.insert((k, uk), (v, now));
                }
                MapOp::Remove(k, uk) => {
                    let want = model.remove(&(k, uk)).filter(|&(_, s)| !expired(s, now)).map(|(v, _)| v);
                    prop_assert_eq!(state.remove(&ctx(k), &uk), want);
                }
                MapOp::Get(k, uk) => {
                    let want = match model.get_mut(&(k, uk)) {
                        Some((_, s)) if expired(*s, now) => None,
                        Some((v, s)) => {
                            if renew {
                                *s = now;
                            }
                            Some(*v)
                        }
                        None => None,
                    };
                    prop_assert_eq!(state.get(&ctx(k), &uk), want);
                    prop_assert_eq!(state.contains(&ctx(k), &uk), want.is_some());
                }
                MapOp::Clear(k) => {
                    state.clear(&ctx(k));
                    model.retain(|&(mk, _), _| mk != k);
                }
                MapOp::Entries(k) => {
                    let want = live_of(&model, k, now, ttl);
                    if renew {
                        for (&(mk, _), (_, s)) in model.iter_mut() {
                            if mk == k && !expired(*s, now) {
                                *s = now;
                            }
                        }
                    }
                    let mut got: Vec<(u8, u32)> = state.entries(&ctx(k)).collect();
                    got.sort_unstable();
                    prop_assert_eq!(&got, &want);
                    let mut keys: Vec<u8> = state.keys(&ctx(k)).collect();
                    keys.sort_unstable();
                    prop_assert_eq!(keys, want.iter().map(|e| e.0).collect::<Vec<_>>());
                    prop_assert_eq!(state.values(&ctx(k)).count(), want.len());
                    prop_assert_eq!(state.len(&ctx(k)), want.len());
                    prop_assert_eq!(state.is_empty(&ctx(k)), want.is_empty());
                }
                MapOp::Advance(ms) => clock.advance(Duration::from_millis(ms)),
                // Removes expired entries only: the model is unchanged.
                MapOp::Purge(b) => {
                    TtlTables::purge(&mut state, usize::from(b % 16) + 1, now);
                }
            }
        }
        // A snapshot now writes exactly the live entries; restored into a
        // fresh state (without TTL, so nothing expires on reading) they
        // are the model's.
        let now = clock.now_millis();
        let mut restored = KeyedMapState::<u64, u8, u32>::new("map");
        round_trip(&state.freeze(), &mut restored);
        for k in 0..6 {
            let mut got: Vec<(u8, u32)> = restored.entries(&ctx(k)).collect();
            got.sort_unstable();
            prop_assert_eq!(got, live_of(&model, k, now, ttl));
        }
        // Once everything expired, steps alone empty the tables.
        if ttl.is_some() {
            clock.advance(Duration::from_secs(1));
            purge_until_empty(&mut state, clock.now_millis());
            prop_assert_eq!(state.memory_bytes(), 0);
        }
    }
}

/// Runs cleanup steps of 3 entries on `state` until it holds no entry.
fn purge_until_empty<S: TtlTables>(state: &mut S, now: u64) {
    let mut steps = 0;
    while state.stored_entries() > 0 {
        state.purge(3, now);
        steps += 1;
        assert!(steps < 100_000, "expired entries left behind");
    }
}

#[derive(Clone, Debug)]
enum ListOp {
    Add(u64, u16),
    AddAll(u64, Vec<u16>),
    Update(u64, Vec<u16>),
    Clear(u64),
    Get(u64),
    Advance(u64),
    /// A TTL cleanup step of this budget.
    Purge(u8),
}

fn list_op() -> impl Strategy<Value = ListOp> {
    let values = prop::collection::vec(any::<u16>(), 0..5);
    prop_oneof![
        5 => (0u64..5, any::<u16>()).prop_map(|(k, v)| ListOp::Add(k, v)),
        1 => (0u64..5, values.clone()).prop_map(|(k, v)| ListOp::AddAll(k, v)),
        1 => (0u64..5, values).prop_map(|(k, v)| ListOp::Update(k, v)),
        1 => (0u64..5).prop_map(ListOp::Clear),
        2 => (0u64..5).prop_map(ListOp::Get),
        1 => (0u64..20).prop_map(ListOp::Advance),
        1 => any::<u8>().prop_map(ListOp::Purge),
    ]
}

proptest! {
    #[test]
    fn list_state_matches_a_model(ttl in ttl_strategy(), ops in prop::collection::vec(list_op(), 1..300)) {
        let clock = ManualClock::new(0);
        let mut state = KeyedListState::<u64, u16>::new("list");
        if let Some((t, renew)) = ttl {
            state = state.with_ttl_clock(config(t, renew), Rc::new(clock.clone()));
        }
        let expired = |stamp: u64, now: u64| ttl.is_some_and(|(t, _)| stamp + t <= now);
        let renew = ttl.is_some_and(|(_, r)| r);
        let mut model: HashMap<u64, Vec<(u16, u64)>> = HashMap::new();
        for op in ops {
            let now = clock.now_millis();
            match op {
                ListOp::Add(k, v) => {
                    state.add(&ctx(k), v);
                    model.entry(k).or_default().push((v, now));
                }
                ListOp::AddAll(k, vs) => {
                    state.add_all(&ctx(k), vs.iter().copied());
                    model.entry(k).or_default().extend(vs.iter().map(|&v| (v, now)));
                }
                ListOp::Update(k, vs) => {
                    state.update(&ctx(k), vs.iter().copied());
                    model.insert(k, vs.iter().map(|&v| (v, now)).collect());
                }
                ListOp::Clear(k) => {
                    state.clear(&ctx(k));
                    model.remove(&k);
                }
                ListOp::Get(k) => {
                    let list = model.entry(k).or_default();
                    list.retain(|&(_, s)| !expired(s, now));
                    if renew {
                        list.iter_mut().for_each(|e| e.1 = now);
                    }
                    let want: Vec<u16> = list.iter().map(|e| e.0).collect();
                    prop_assert_eq!(state.get(&ctx(k)).collect::<Vec<_>>(), want);
                }
                ListOp::Advance(ms) => clock.advance(Duration::from_millis(ms)),
                // Removes expired elements only: the model is unchanged.
                ListOp::Purge(b) => {
                    TtlTables::purge(&mut state, usize::from(b % 16) + 1, now);
                }
            }
        }
        let now = clock.now_millis();
        let mut restored = KeyedListState::<u64, u16>::new("list");
        round_trip(&state.freeze(), &mut restored);
        for k in 0..5 {
            let want: Vec<u16> = model
                .get(&k)
                .map(|l| l.iter().filter(|&&(_, s)| !expired(s, now)).map(|e| e.0).collect())
                .unwrap_or_default();
            prop_assert_eq!(restored.get(&ctx(k)).collect::<Vec<_>>(), want);
        }
        if ttl.is_some() {
            clock.advance(Duration::from_secs(1));
            purge_until_empty(&mut state, clock.now_millis());
            prop_assert_eq!(state.memory_bytes(), 0);
        }
    }

    #[test]
    fn reducing_and_aggregating_state_match_a_model(ops in prop::collection::vec((0u64..8, any::<u32>(), any::<bool>()), 1..300)) {
        let mut max = KeyedReducingState::new("max", |a: u32, b: u32| a.max(b));
        let mut avg = KeyedAggregatingState::new("avg", Average);
        let mut model: HashMap<u64, (u32, u64, u64)> = HashMap::new();
        for (k, v, clear) in ops {
            if clear {
                max.clear(&ctx(k));
                avg.clear(&ctx(k));
                model.remove(&k);
            } else {
                max.add(&ctx(k), v);
                avg.add(&ctx(k), v);
                let m = model.entry(k).or_insert((v, 0, 0));
                m.0 = m.0.max(v);
                m.1 += u64::from(v);
                m.2 += 1;
            }
            prop_assert_eq!(max.get(&ctx(k)), model.get(&k).map(|m| m.0));
            prop_assert_eq!(avg.get(&ctx(k)), model.get(&k).map(|m| m.1 / m.2));
        }
        let mut restored_max = KeyedReducingState::new("max", |a: u32, b: u32| a.max(b));
        round_trip(&max.freeze(), &mut ValueSink(restored_max.table_mut()));
        let mut restored_avg = KeyedAggregatingState::new("avg", Average);
        round_trip(&avg.freeze(), &mut ValueSink(restored_avg.table_mut()));
        for k in 0..8 {
            prop_assert_eq!(restored_max.get(&ctx(k)), model.get(&k).map(|m| m.0));
            prop_assert_eq!(restored_avg.get(&ctx(k)), model.get(&k).map(|m| m.1 / m.2));
        }
    }
}

use crate::state::codec::ValueSink;

/// The integer mean of the values added.
struct Average;

impl AggregateFunction for Average {
    type In = u32;
    type Acc = (u64, u64);
    type Out = u64;

    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }

    fn add(&self, value: u32, (sum, n): (u64, u64)) -> (u64, u64) {
        (sum + u64::from(value), n + 1)
    }

    fn get_result(&self, &(sum, n): &(u64, u64)) -> u64 {
        sum / n.max(1)
    }

    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

#[test]
fn merged_accumulators_add_up() {
    let mut avg = KeyedAggregatingState::new("avg", Average);
    avg.merge_accumulator(&ctx(1), (10, 2));
    assert_eq!(avg.get(&ctx(1)), Some(5));
    avg.add(&ctx(1), 11);
    avg.merge_accumulator(&ctx(1), (3, 1));
    assert_eq!(avg.get(&ctx(1)), Some(6));
}

#[test]
fn map_entries_of_a_key_are_written_in_the_key_s_group() {
    let mut state = KeyedMapState::<u64, u64, u64>::new("map");
    for k in 0..50 {
        for uk in 0..20 {
            state.put(&ctx(k), uk, k * 100 + uk);
        }
    }
    // The composite hash decides nothing: all of a key's entries land in
    // its key group (checked by `round_trip`) and come back.
    let mut restored = KeyedMapState::<u64, u64, u64>::new("map");
    round_trip(&state.freeze(), &mut restored);
    assert_eq!(restored.total_len(), 1000);
    for k in 0..50 {
        let mut got: Vec<(u64, u64)> = restored.entries(&ctx(k)).collect();
        got.sort_unstable();
        let want: Vec<(u64, u64)> = (0..20).map(|uk| (uk, k * 100 + uk)).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn ttl_expiry_is_visible_with_a_controlled_clock() {
    let clock = ManualClock::new(10_000);
    let ttl = StateTtlConfig::new(Duration::from_secs(1));
    let mut map =
        KeyedMapState::<u64, u64, u64>::new("map").with_ttl_clock(ttl, Rc::new(clock.clone()));
    let mut list =
        KeyedListState::<u64, u64>::new("list").with_ttl_clock(ttl, Rc::new(clock.clone()));
    let mut sum = KeyedReducingState::new("sum", |a: u64, b: u64| a + b)
        .with_ttl_clock(ttl, Rc::new(clock.clone()));
    let mut value = KeyedTtlValueState::<u64, u64>::new("value", ttl)
        .with_ttl_clock(ttl, Rc::new(clock.clone()));
    let c = ctx(7);
    map.put(&c, 1, 10);
    list.add(&c, 1);
    sum.add(&c, 5);
    value.update(&c, 9);
    value.update(&ctx(8), 8);
    clock.advance(Duration::from_millis(600));
    value.update(&ctx(8), 80);
    map.put(&c, 2, 20);
    list.add(&c, 2);
    // Reads do not renew (OnCreateAndWrite).
    assert_eq!(map.get(&c, &1), Some(10));
    assert_eq!(sum.get(&c), Some(5));
    clock.advance(Duration::from_millis(400));
    // 1 s after the first writes: they expired, the later ones did not.
    assert_eq!(map.get(&c, &1), None);
    assert_eq!(
        map.total_len(),
        1,
        "the expired entry was removed on access"
    );
    assert_eq!(map.entries(&c).collect::<Vec<_>>(), vec![(2, 20)]);
    assert_eq!(list.get(&c).collect::<Vec<_>>(), vec![2]);
    assert_eq!(list.total_len(), 1);
    assert_eq!(sum.get(&c), None);
    assert_eq!(value.value(&c), None);
    assert_eq!(value.value(&ctx(8)), Some(80), "a write renewed it");
    assert_eq!(value.total_len(), 1);
    value.update(&c, 90);
    assert_eq!(value.value(&c), Some(90));
    value.clear(&c);
    assert_eq!(value.value(&c), None);
    // Adding to an expired accumulator starts afresh.
    sum.add(&c, 3);
    assert_eq!(sum.get(&c), Some(3));
    clock.advance(Duration::from_millis(600));
    assert!(map.is_empty(&c));
    assert_eq!(list.get(&c).count(), 0);
}

#[test]
fn reads_renew_entries_on_read_and_write() {
    let clock = ManualClock::new(0);
    let ttl = StateTtlConfig::new(Duration::from_millis(100))
        .with_update_type(UpdateType::OnReadAndWrite);
    let mut map =
        KeyedMapState::<u64, u64, u64>::new("map").with_ttl_clock(ttl, Rc::new(clock.clone()));
    let mut avg =
        KeyedAggregatingState::new("avg", Average).with_ttl_clock(ttl, Rc::new(clock.clone()));
    let c = ctx(3);
    map.put(&c, 1, 1);
    avg.add(&c, 4);
    for _ in 0..5 {
        clock.advance(Duration::from_millis(90));
        assert_eq!(map.get(&c, &1), Some(1));
        assert_eq!(avg.get(&c), Some(4));
    }
    clock.advance(Duration::from_millis(100));
    assert_eq!(map.get(&c, &1), None);
    assert_eq!(avg.get(&c), None);
}

#[test]
fn a_snapshot_leaves_out_expired_entries() {
    let clock = ManualClock::new(0);
    let ttl = StateTtlConfig::new(Duration::from_millis(100));
    let mut list =
        KeyedListState::<u64, u64>::new("list").with_ttl_clock(ttl, Rc::new(clock.clone()));
    let mut map =
        KeyedMapState::<u64, u64, u64>::new("map").with_ttl_clock(ttl, Rc::new(clock.clone()));
    let mut value = KeyedTtlValueState::<u64, u64>::new("value", ttl)
        .with_ttl_clock(ttl, Rc::new(clock.clone()));
    for k in 0..10 {
        list.add(&ctx(k), 1);
        map.put(&ctx(k), 1, 1);
        value.update(&ctx(2 * k), k);
    }
    clock.advance(Duration::from_millis(50));
    for k in 0..10 {
        list.add(&ctx(k), 2);
        map.put(&ctx(k), 2, 2);
        value.update(&ctx(2 * k + 1), k);
    }
    clock.advance(Duration::from_millis(60));
    let mut restored_value = KeyedTtlValueState::<u64, u64>::new("value", ttl)
        .with_ttl_clock(ttl, Rc::new(clock.clone()));
    round_trip(&value.freeze(), &mut ValueSink(restored_value.table_mut()));
    assert_eq!(
        restored_value.total_len(),
        10,
        "only the odd keys' values were live"
    );
    for k in 0..10 {
        assert_eq!(restored_value.value(&ctx(2 * k)), None);
        assert_eq!(restored_value.value(&ctx(2 * k + 1)), Some(k));
    }
    // Nothing was read: the first elements are still stored, expired.
    assert_eq!(list.total_len(), 20);
    let frozen_list = list.freeze();
    let frozen_map = map.freeze();
    let mut restored_list = KeyedListState::<u64, u64>::new("list");
    round_trip(&frozen_list, &mut restored_list);
    let mut restored_map = KeyedMapState::<u64, u64, u64>::new("map");
    round_trip(&frozen_map, &mut restored_map);
    assert_eq!(restored_list.total_len(), 10);
    assert_eq!(restored_map.total_len(), 10);
    for k in 0..10 {
        // The gap the left-out first element made is closed up.
        assert_eq!(restored_list.get(&ctx(k)).collect::<Vec<_>>(), vec![2]);
        restored_list.add(&ctx(k), 3);
        assert_eq!(restored_list.get(&ctx(k)).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(
            restored_map.entries(&ctx(k)).collect::<Vec<_>>(),
            vec![(2, 2)]
        );
    }
}

#[test]
fn map_upsert_updates_in_place_and_treats_expired_entries_as_absent() {
    let clock = ManualClock::new(10_000);
    let ttl = StateTtlConfig::new(Duration::from_secs(1));
    let mut map =
        KeyedMapState::<u64, u64, u64>::new("map").with_ttl_clock(ttl, Rc::new(clock.clone()));
    let c = ctx(3);
    assert_eq!(map.upsert(&c, 1, |v| v.unwrap_or(0) + 5), (5, true));
    assert_eq!(map.upsert(&c, 2, |v| v.unwrap_or(0) + 1), (1, true));
    clock.advance(Duration::from_millis(600));
    // A write renews entry 1; entry 2 is left to expire.
    assert_eq!(map.upsert(&c, 1, |v| v.unwrap_or(0) + 5), (10, false));
    clock.advance(Duration::from_millis(600));
    assert_eq!(map.get(&c, &1), Some(10));
    // Entry 2 expired: upsert sees none and starts over, as a new entry.
    assert_eq!(map.upsert(&c, 2, |v| v.map_or(100, |x| x + 1)), (100, true));
    assert_eq!(map.len(&c), 2);
    let mut entries: Vec<_> = map.entries(&c).collect();
    entries.sort();
    assert_eq!(entries, vec![(1, 10), (2, 100)]);
}
