//! Unit and model-based tests of [`ValueState`](super::ValueState): index
//! invariants checked from the inside, frozen views, and a proptest against
//! `HashMap` with freezes interleaved.

use super::*;
use crate::key_group::KeyHash;
use std::rc::Rc;

/// A key whose hash is its value: lets tests aim keys at chosen buckets.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, Default)]
struct RawHash(u64);
impl KeyHash for RawHash {
    fn key_hash(&self) -> u64 {
        self.0
    }
}

/// A value that owns memory: `token`'s strong count says how many copies
/// of it are alive (`Default` holds none).
#[derive(Clone, Debug, Default)]
struct Tracked(Option<Rc<()>>);

/// Copies of `token` alive besides `token` itself.
fn alive(token: &Rc<()>) -> usize {
    Rc::strong_count(token) - 1
}

#[test]
fn values_that_own_memory_are_freed_by_removal_clear_and_drop() {
    let token = Rc::new(());
    let mut s: ValueState<String, Tracked> = ValueState::new("owned");
    for i in 0..5_000 {
        s.put(format!("key-{i}"), Tracked(Some(token.clone())));
    }
    // Growth moved the entries: no copy left behind.
    assert_eq!(alive(&token), 5_000);
    assert_eq!(
        s.get(&"key-42".to_string()).map(|t| t.0.is_some()),
        Some(true)
    );

    // A view keeps what it saw; removals after the freeze copy chunks.
    let view = s.freeze();
    for i in 0..2_000 {
        assert!(s.remove(&format!("key-{i}")).is_some());
    }
    assert!(alive(&token) >= 5_000, "the view still holds every entry");
    assert_eq!(view.len(), 5_000);
    drop(view);
    assert_eq!(alive(&token), 3_000, "removed entries are freed");
    assert_index_invariant(&s);

    // Overwrites drop the old value; get_or_insert keeps one.
    s.put("key-4999".to_string(), Tracked::default());
    assert_eq!(alive(&token), 2_999);
    s.get_or_insert_with("key-4998".to_string(), || Tracked(Some(token.clone())));
    assert_eq!(alive(&token), 2_999);

    let view = s.freeze();
    s.clear();
    assert_eq!(view.len(), 3_000);
    drop(view);
    assert_eq!(alive(&token), 0, "clear frees every entry");
    for i in 0..100 {
        s.put(format!("again-{i}"), Tracked(Some(token.clone())));
    }
    drop(s);
    assert_eq!(alive(&token), 0, "dropping the state frees every entry");
}

#[test]
fn string_keys_and_values_fold_and_remove_like_a_map() {
    let mut s: ValueState<String, String> = ValueState::new("strings");
    let mut m = std::collections::HashMap::new();
    for i in 0..3_000u64 {
        let k = format!("user-{}", i % 700);
        let hash = k.key_hash();
        s.upsert_hashed(k.clone(), hash, |old| {
            let mut v = old.unwrap_or_default();
            v.push_str(&i.to_string());
            v
        });
        m.entry(k)
            .or_insert_with(String::new)
            .push_str(&i.to_string());
        if i % 5 == 0 {
            let gone = format!("user-{}", (i * 7) % 700);
            assert_eq!(s.remove(&gone), m.remove(&gone));
        }
    }
    assert_eq!(s.len(), m.len());
    for (k, v) in &m {
        assert_eq!(s.get(k), Some(v));
    }
    assert_index_invariant(&s);
}

/// Checks the linear-probing invariant: no empty slot between any
/// entry's bucket and its position, tags match keys, and `len` is right.
pub(super) fn assert_index_invariant<K: StateKey + std::fmt::Debug, V: StateValue>(
    s: &ValueState<K, V>,
) {
    let mut used = 0;
    for pos in 0..s.slots.len() {
        let slot = s.slots.get(pos);
        if s.tags[pos] == EMPTY {
            continue;
        }
        used += 1;
        assert_eq!(s.tags[pos], tag_of(slot.key.key_hash()));
        let mut p = (slot.key.key_hash() >> s.shift) as usize;
        while p != pos {
            assert_ne!(s.tags[p], EMPTY, "gap before {:?}", slot.key);
            p = (p + 1) & s.mask;
        }
    }
    assert_eq!(used, s.len());
    if !s.slots.is_empty() {
        let cap = s.capacity();
        assert_eq!(&s.tags[cap..], &s.tags[..GROUP], "mirrored tags drifted");
    }
}

#[test]
fn tag_matching_is_exact() {
    let group = u64::from_le_bytes([0x80, 0x81, 0, 0xFF, 0x81, 0x7F, 1, 0x81]);
    assert_eq!(match_tag(group, 0x81), 0x8000_0080_0000_8000);
    assert_eq!(match_tag(group, 0x80), 0x80);
    assert_eq!(match_tag(group, 0xFF), 0x8000_0000);
    // Bytes without the high bit count as empty (valid tags always have it).
    assert_eq!(match_empty(group), 0x0080_8000_0080_0000);
    assert_eq!(first_byte(0x8000_0000), 3);
}

#[test]
fn basic_operations() {
    let mut s: ValueState<u64, i64> = ValueState::new("count");
    assert_eq!(s.name(), "count");
    assert!(s.is_empty() && s.get(&1).is_none());
    s.put(1, 10);
    s.put(2, 20);
    s.put(1, 11);
    assert_eq!((s.get(&1), s.get(&2), s.len()), (Some(&11), Some(&20), 2));
    *s.get_mut(&2).unwrap() += 1;
    assert_eq!(s.get(&2), Some(&21));
    *s.get_or_insert_with(3, || 100) += 1;
    *s.get_or_insert_with(3, || unreachable!("present")) += 1;
    assert_eq!(s.get(&3), Some(&102));
    assert_eq!(s.remove(&1), Some(11));
    assert_eq!(s.remove(&1), None);
    assert!(s.get_mut(&1).is_none());
    assert_eq!(s.len(), 2);
    let mut all: Vec<(u64, i64)> = s.iter().map(|(k, v)| (*k, *v)).collect();
    all.sort_unstable();
    assert_eq!(all, vec![(2, 21), (3, 102)]);
    s.clear();
    assert!(s.is_empty() && s.get(&2).is_none() && s.iter().next().is_none());
    s.put(2, 1);
    assert_eq!(s.get(&2), Some(&1));
    assert_eq!(
        format!("{s:?}"),
        "ValueState { name: \"count\", len: 1, capacity: 16 }"
    );
}

#[test]
fn hashed_variants_agree_with_plain() {
    let mut s: ValueState<(u32, u32), u8> = ValueState::with_capacity("pairs", 100);
    let k = (7, 9);
    let h = k.key_hash();
    s.put_hashed(k, h, 1);
    assert_eq!(s.get_hashed(&k, h), Some(&1));
    *s.get_or_insert_with_hashed(k, h, || 0) += 1;
    *s.get_mut_hashed(&k, h).unwrap() += 1;
    assert_eq!(s.get(&k), Some(&3));
    assert_eq!(s.remove_hashed(&k, h), Some(3));
    assert!(s.is_empty());
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "must be key.key_hash()")]
fn wrong_hash_is_caught_in_debug() {
    let s: ValueState<u64, u64> = ValueState::new("x");
    let _ = s.get_hashed(&5, 6);
}

#[test]
fn grows_and_keeps_every_entry() {
    let mut s: ValueState<u64, u64> = ValueState::new("grow");
    for k in 0..50_000u64 {
        s.put(k, k * 2);
    }
    assert!(s.capacity() >= 65_536 && s.capacity().is_power_of_two());
    assert!(s.len() <= max_len_for(s.capacity()));
    assert!(
        s.slots.chunk_count() > 1,
        "large tables span several chunks"
    );
    assert!((0..50_000u64).all(|k| s.get(&k) == Some(&(k * 2))));
    assert_index_invariant(&s);
}

#[test]
fn with_capacity_avoids_growth() {
    let mut s: ValueState<u32, u32> = ValueState::with_capacity("c", 1000);
    let cap = s.capacity();
    assert!(max_len_for(cap) >= 1000);
    (0..1000).for_each(|k| s.put(k, k));
    assert_eq!(s.capacity(), cap);
}

#[test]
fn keys_sharing_low_bits_spread_over_buckets() {
    // All hashes end in the same 16 bits, as keys of one key group do.
    let mut s: ValueState<RawHash, u32> = ValueState::with_capacity("kg", 4096);
    for i in 0..4096u64 {
        let h = (crate::key_group::fmix64(i) & !0xFFFF) | 0x1234;
        s.put(RawHash(h), i as u32);
    }
    let distinct_buckets: std::collections::HashSet<u64> =
        s.iter().map(|(k, _)| k.0 >> s.shift).collect();
    assert!(distinct_buckets.len() > 2000, "{}", distinct_buckets.len());
    assert_index_invariant(&s);
}

#[test]
fn full_collisions_and_wraparound_deletion() {
    // Identical high bits: every key has the same bucket and stored tag,
    // at the last bucket so the cluster wraps around the table end.
    let mut s: ValueState<RawHash, u32> = ValueState::new("wrap");
    let keys: Vec<RawHash> = (0..9u64).map(|i| RawHash(u64::MAX - i)).collect();
    for (i, k) in keys.iter().enumerate() {
        s.put(*k, i as u32);
    }
    assert_eq!(s.capacity(), 16);
    assert_index_invariant(&s);
    for victim in [4usize, 0, 8, 1] {
        assert_eq!(s.remove(&keys[victim]), Some(victim as u32));
        assert_index_invariant(&s);
    }
    for (i, k) in keys.iter().enumerate() {
        let expected = (![0, 1, 4, 8].contains(&i)).then_some(i as u32);
        assert_eq!(s.get(k).copied(), expected);
    }
}

#[test]
fn removals_keep_the_table_from_growing() {
    let mut s: ValueState<u64, u64> = ValueState::new("reuse");
    (0..1000u64).for_each(|k| s.put(k, k));
    let cap = s.capacity();
    for round in 0..20u64 {
        (0..1000u64)
            .for_each(|k| assert_eq!(s.remove(&(k + round * 1000)), Some(k + round * 1000)));
        assert!(s.is_empty());
        (0..1000u64).for_each(|k| s.put(k + (round + 1) * 1000, k + (round + 1) * 1000));
    }
    assert_eq!(s.capacity(), cap, "churn does not grow the table");
    assert_eq!(s.len(), 1000);
    assert_index_invariant(&s);
}

#[test]
fn panicking_initialiser_leaves_state_unchanged() {
    let mut s: ValueState<u64, u64> = ValueState::new("p");
    s.put(1, 1);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.get_or_insert_with(2, || panic!("boom"));
    }));
    assert!(r.is_err());
    assert_eq!((s.len(), s.get(&2)), (1, None));
    assert_index_invariant(&s);
}

/// The entries of a frozen view, checked against `want` both by iteration
/// and by lookup.
pub(super) fn assert_view_eq<K, V>(
    f: &FrozenValueState<K, V>,
    want: &std::collections::HashMap<K, V>,
) where
    K: StateKey + std::hash::Hash + std::fmt::Debug,
    V: StateValue + PartialEq + std::fmt::Debug,
{
    let seen: std::collections::HashMap<K, V> =
        f.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(f.iter().count(), seen.len(), "a view yielded a key twice");
    assert_eq!(&seen, want);
    assert_eq!((f.len(), f.is_empty()), (want.len(), want.is_empty()));
    // Part by part (as a snapshot serializes it), the same entries in the
    // same order, whatever the split; chunks past the end yield nothing.
    let whole: Vec<(K, V)> = f.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let n = f.chunk_count();
    for parts in [1, 2, 3, n.max(1), n + 2] {
        let mut joined = Vec::new();
        for p in 0..parts {
            let chunks = n * p / parts..n * (p + 1) / parts;
            joined.extend(
                f.iter_chunks(chunks.clone())
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            let mut visited = Vec::new();
            f.for_each_in_chunks(chunks.clone(), |k, v| visited.push((k.clone(), v.clone())));
            let iterated: Vec<(K, V)> = f
                .iter_chunks(chunks)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(visited, iterated, "for_each_in_chunks, part {p} of {parts}");
        }
        assert_eq!(joined, whole, "{parts} parts of {n} chunks");
    }
    assert_eq!(f.iter_chunks(n..n + 3).count(), 0);
    let mut past_end = 0;
    f.for_each_in_chunks(n..n + 3, |_, _| past_end += 1);
    assert_eq!(past_end, 0);
    for (k, v) in want {
        assert_eq!(f.get(k), Some(v), "key {k:?}");
    }
}

#[test]
fn frozen_view_ignores_every_later_change() {
    let mut s: ValueState<u64, u64> = ValueState::new("v");
    (0..500u64).for_each(|k| s.put(k, k));
    let want: std::collections::HashMap<u64, u64> = (0..500u64).map(|k| (k, k)).collect();
    let f = s.freeze();
    assert_eq!((f.name(), f.capacity()), ("v", s.capacity()));
    assert_eq!(f.memory_bytes(), s.memory_bytes());
    for k in 0..100u64 {
        s.put(k, k + 1_000); // overwrite
        *s.get_mut(&(k + 100)).unwrap() += 1; // update in place
        *s.get_or_insert_with(k + 200, || 0) += 1; // update via insert path
        assert_eq!(s.remove(&(k + 300)), Some(k + 300)); // remove (backward shift)
    }
    (500..5_000u64).for_each(|k| s.put(k, k)); // grow several times
    assert!(s.capacity() > f.capacity());
    assert_view_eq(&f, &want);
    assert_eq!(f.get(&4_000), None);
    s.clear();
    assert_view_eq(&f, &want);
    assert_index_invariant(&s);
    assert_eq!(
        format!("{f:?}"),
        format!(
            "FrozenValueState {{ name: \"v\", len: 500, capacity: {} }}",
            f.capacity()
        )
    );
}

#[test]
fn frozen_empty_state() {
    let mut s: ValueState<u64, u64> = ValueState::new("e");
    let f = s.freeze();
    s.put(1, 1);
    assert!(f.is_empty() && f.iter().next().is_none() && f.get(&1).is_none());
    assert_eq!(f.memory_bytes(), 0);
    // A cleared state freezes to an empty view too, its slots notwithstanding.
    s.clear();
    let g = s.freeze();
    s.put(2, 2);
    assert!(g.is_empty() && g.iter().next().is_none() && g.get(&2).is_none());
}

#[test]
fn updates_copy_each_touched_chunk_once_and_leave_the_tags_shared() {
    let mut s: ValueState<u64, u64> = ValueState::with_capacity("c", 20_000);
    (0..20_000u64).for_each(|k| s.put(k, 0));
    let chunks = s.slots.chunk_count() as u64;
    assert!(chunks > 4);
    let f = s.freeze();
    assert_eq!(s.cow_stats(), CowStats::default());
    for round in 1..=3u64 {
        (0..20_000u64).for_each(|k| *s.get_mut(&k).unwrap() = round);
        // Keys are spread over all chunks: every chunk is copied, and only
        // in the first round.
        let st = s.cow_stats();
        assert_eq!(st.chunks_copied, chunks, "round {round}");
        assert_eq!(st.tag_arrays_copied, 0, "updates leave the tags alone");
        let chunk_bytes = (CHUNK_LEN * std::mem::size_of::<Slot<u64, u64>>()) as u64;
        assert_eq!(st.bytes_copied, chunks * chunk_bytes);
    }
    assert!(f.iter().all(|(_, v)| *v == 0) && f.len() == 20_000);
    assert!((0..20_000u64).all(|k| s.get(&k) == Some(&3)));
    // An insert copies the tag array, once.
    s.put(1_000_000, 1);
    s.put(1_000_001, 1);
    assert_eq!(s.cow_stats().tag_arrays_copied, 1);
    assert_eq!(f.get(&1_000_000), None);
    drop(f);
    // No view left: writes and inserts copy nothing more.
    let before = s.cow_stats();
    (0..20_000u64).for_each(|k| s.put(k, 4));
    assert_eq!(s.remove(&1_000_000), Some(1));
    assert_eq!(s.cow_stats(), before);
    assert_index_invariant(&s);
}

#[test]
fn a_write_to_one_key_copies_one_chunk() {
    let mut s: ValueState<u64, u64> = ValueState::new("one");
    (0..10_000u64).for_each(|k| s.put(k, k));
    let f = s.freeze();
    s.put(42, 0);
    *s.get_or_insert_with(42, || unreachable!("present")) += 1;
    s.put_hashed(42, 42u64.key_hash(), 5);
    assert_eq!(s.cow_stats().chunks_copied, 1);
    assert_eq!((f.get(&42), s.get(&42)), (Some(&42), Some(&5)));
}

#[test]
fn growth_after_a_freeze_keeps_the_old_table_for_the_view() {
    let mut s: ValueState<u64, u64> = ValueState::new("g");
    (0..13u64).for_each(|k| s.put(k, k));
    assert_eq!(s.capacity(), 16);
    let f = s.freeze();
    s.put(13, 13); // 14 > 13/16 of 16: grows into a new arena
    assert_eq!(s.capacity(), 32);
    *s.get_mut(&0).unwrap() = 99;
    assert_eq!(
        s.cow_stats().chunks_copied,
        0,
        "a new arena needs no copies"
    );
    assert_view_eq(&f, &(0..13u64).map(|k| (k, k)).collect());
    assert_eq!(f.capacity(), 16);
}

#[test]
fn inserting_up_to_the_requested_capacity_never_rehashes() {
    // Around every load limit, in both directions.
    for n in [0, 1, 13, 14, 26, 27, 832, 833, 3_328, 3_329, 100_000] {
        let mut s: ValueState<u64, u32> = ValueState::with_capacity("c", n);
        let cap = s.capacity();
        (0..n as u64).for_each(|k| s.put(k, 1));
        assert_eq!(s.capacity(), cap, "with_capacity({n})");
        assert!(
            cap == MIN_CAPACITY || max_len_for(cap / 2) < n,
            "with_capacity({n}) over-allocates: {cap}"
        );
    }
}

#[test]
fn reserve_grows_once_then_never_rehashes() {
    // On a table with no arena yet.
    let mut s: ValueState<u64, u64> = ValueState::new("r");
    s.reserve(50_000);
    let cap = s.capacity();
    assert!(max_len_for(cap) >= 50_000);
    (0..50_000u64).for_each(|k| s.put(k, k));
    assert_eq!(s.capacity(), cap);
    // On a table with entries: they survive the one rebuild.
    let mut s: ValueState<u64, u64> = ValueState::new("r");
    (0..100u64).for_each(|k| s.put(k, k));
    assert_eq!(s.capacity(), 128);
    s.reserve(0);
    s.reserve(max_len_for(128) - 100);
    assert_eq!(s.capacity(), 128, "room already");
    s.reserve(200_000);
    let cap = s.capacity();
    assert!(max_len_for(cap) >= 200_100 && max_len_for(cap / 2) < 200_100);
    assert!((0..100u64).all(|k| s.get(&k) == Some(&k)));
    (100..200_100u64).for_each(|k| s.put(k, k));
    assert_eq!(s.capacity(), cap);
    assert_eq!(s.len(), 200_100);
    assert_index_invariant(&s);
}

#[test]
#[should_panic(expected = "ValueState 'big': reserve(")]
fn reserve_overflow_names_the_state() {
    let mut s: ValueState<u64, u64> = ValueState::new("big");
    s.put(1, 1);
    s.reserve(usize::MAX);
}

mod model {
    //! Random operation sequences run against `ValueState` and a `HashMap`
    //! model side by side, with freezes interleaved: every frozen view must
    //! equal the model as it was when the view was taken.

    use super::{assert_index_invariant, assert_view_eq, RawHash};
    use crate::key_group::fmix64;
    use crate::value_state::FrozenValueState;
    use crate::{StateKey, ValueState};
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::fmt::Debug;
    use std::hash::Hash;

    #[derive(Clone, Debug)]
    enum Op<K> {
        Put(K, u32),
        /// `load_hashed`, the restore's put.
        Load(K, u32),
        Get(K),
        GetMut(K, u32),
        Remove(K),
        GetOrInsert(K, u32, u32),
        /// Adds `d` to the value, or inserts `v`.
        Upsert(K, u32, u32),
        /// `Upsert`s of several records in one `upsert_run`.
        UpsertRun(Vec<(K, u32, u32)>),
        Clear,
        Freeze,
        /// Drops the view at this index (modulo the number alive).
        DropView(usize),
        Reserve(usize),
    }

    fn ops<K: Clone + Debug>(
        key: impl Strategy<Value = K> + Clone,
        len: usize,
    ) -> impl Strategy<Value = Vec<Op<K>>> {
        let op = prop_oneof![
            // One arm for both puts (prop_oneof! takes at most ten).
            5 => (key.clone(), any::<u32>(), any::<bool>())
                .prop_map(|(k, v, load)| if load { Op::Load(k, v) } else { Op::Put(k, v) }),
            3 => key.clone().prop_map(Op::Get),
            2 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::GetMut(k, v)),
            3 => key.clone().prop_map(Op::Remove),
            4 => (key.clone(), any::<u32>(), any::<u32>()).prop_map(|(k, v, d)| Op::GetOrInsert(k, v, d)),
            // One arm for both upserts: a run of one is a single upsert.
            3 => proptest::collection::vec((key, any::<u32>(), any::<u32>()), 1..12).prop_map(
                |mut run| match run.len() {
                    1 => {
                        let (k, v, d) = run.pop().expect("a run of one");
                        Op::Upsert(k, v, d)
                    }
                    _ => Op::UpsertRun(run),
                }
            ),
            1 => Just(Op::Clear),
            1 => Just(Op::Freeze),
            1 => any::<usize>().prop_map(Op::DropView),
            1 => (0usize..64).prop_map(Op::Reserve),
        ];
        proptest::collection::vec(op, 0..len)
    }

    /// Runs `ops`; with `check_views_often`, compares every alive view with
    /// its model after every operation (else when it is dropped and at the
    /// end), to catch a write that leaks into a view only for a while.
    fn run<K: StateKey + Hash + Debug>(
        ops: &[Op<K>],
        check_views_often: bool,
    ) -> Result<(), TestCaseError> {
        let mut s: ValueState<K, u32> = ValueState::new("model");
        let mut m: HashMap<K, u32> = HashMap::new();
        let mut views: Vec<(FrozenValueState<K, u32>, HashMap<K, u32>)> = Vec::new();
        let mut freezes = 0;
        // The table only grows when the live entries (or a reserve) outgrow
        // it: its capacity never exceeds what the peak of those needs.
        let mut peak = 0;
        for op in ops {
            match op.clone() {
                Op::Put(k, v) => {
                    s.put(k.clone(), v);
                    m.insert(k, v);
                }
                Op::Load(k, v) => {
                    s.load_hashed(k.clone(), k.key_hash(), v);
                    m.insert(k, v);
                }
                Op::Get(k) => prop_assert_eq!(s.get(&k), m.get(&k)),
                Op::GetMut(k, d) => {
                    if let Some(v) = s.get_mut(&k) {
                        *v = v.wrapping_add(d);
                    }
                    if let Some(v) = m.get_mut(&k) {
                        *v = v.wrapping_add(d);
                    }
                }
                Op::Remove(k) => prop_assert_eq!(s.remove(&k), m.remove(&k)),
                Op::GetOrInsert(k, v, d) => {
                    let got = s.get_or_insert_with(k.clone(), || v);
                    *got = got.wrapping_add(d);
                    let want = m.entry(k).or_insert(v);
                    *want = want.wrapping_add(d);
                    prop_assert_eq!(*got, *want);
                }
                Op::Upsert(k, v, d) => {
                    let hash = k.key_hash();
                    let (got, new) = s
                        .upsert_hashed(k.clone(), hash, |old| old.map_or(v, |o| o.wrapping_add(d)));
                    let got = *got;
                    let was_absent = !m.contains_key(&k);
                    let want = *m
                        .entry(k)
                        .and_modify(|o| *o = o.wrapping_add(d))
                        .or_insert(v);
                    prop_assert_eq!((got, new), (want, was_absent));
                }
                Op::UpsertRun(run) => {
                    let records = run
                        .iter()
                        .map(|(k, v, d)| (k.clone(), k.key_hash(), (*v, *d)));
                    let taken = s.upsert_run(records, |old, (v, d)| {
                        old.map_or(v, |o: u32| o.wrapping_add(d))
                    });
                    prop_assert_eq!(taken, run.len());
                    for (k, v, d) in &run {
                        m.entry(k.clone())
                            .and_modify(|o| *o = o.wrapping_add(*d))
                            .or_insert(*v);
                    }
                    for (k, _, _) in &run {
                        prop_assert_eq!(s.get(k), m.get(k));
                    }
                }
                Op::Clear => {
                    s.clear();
                    m.clear();
                }
                Op::Freeze => {
                    views.push((s.freeze(), m.clone()));
                    freezes += 1;
                }
                Op::DropView(i) => {
                    if !views.is_empty() {
                        let (view, want) = views.remove(i % views.len());
                        assert_view_eq(&view, &want);
                    }
                }
                Op::Reserve(n) => {
                    s.reserve(n);
                    peak = peak.max(m.len() + n);
                }
            }
            prop_assert_eq!(s.len(), m.len());
            peak = peak.max(m.len());
            if check_views_often {
                for (view, want) in &views {
                    assert_view_eq(view, want);
                }
            }
        }
        for (view, want) in &views {
            assert_view_eq(view, want);
        }
        // Each chunk at most once per freeze, the tag array too (capacity
        // only grows, so the final chunk count is the largest).
        let cow = s.cow_stats();
        prop_assert!(
            cow.chunks_copied <= freezes * s.slots.chunk_count() as u64,
            "{cow:?} after {freezes} freezes"
        );
        prop_assert!(
            cow.tag_arrays_copied <= freezes,
            "{cow:?} after {freezes} freezes"
        );
        assert_index_invariant(&s);
        let mut needed = 16;
        while super::max_len_for(needed) < peak {
            needed *= 2;
        }
        prop_assert!(
            s.capacity() <= needed,
            "capacity {} for a peak of {peak}",
            s.capacity()
        );
        let seen: HashMap<K, u32> = s.iter().map(|(k, v)| (k.clone(), *v)).collect();
        prop_assert_eq!(s.iter().count(), seen.len(), "iter yielded a key twice");
        prop_assert_eq!(seen, m.clone());
        for (k, v) in &m {
            prop_assert_eq!(s.get(k), Some(v));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Few keys: constant hits, overwrites and remove/reinsert churn.
        #[test]
        fn small_key_space(ops in ops(0u64..16, 400)) {
            run(&ops, true)?;
        }

        /// Keys that own memory (`String`): moved, taken and cloned, never
        /// copied bit for bit.
        #[test]
        fn string_keys(ops in ops((0u64..300).prop_map(|x| format!("user-{x}")), 800)) {
            run(&ops, true)?;
        }

        /// Many keys: the index grows several times, also while views of
        /// its older tables are alive.
        #[test]
        fn large_key_space(ops in ops(0u64..4000, 3000)) {
            run(&ops, false)?;
        }

        /// Hashes that share their low bits, like the keys of one worker's
        /// key groups.
        #[test]
        fn shared_low_bits(ops in ops((0u64..3000).prop_map(|x| RawHash((fmix64(x) & !0x7F) | 5)), 2000)) {
            run(&ops, false)?;
        }

        /// Hashes with only four distinct high halves: long clusters, equal
        /// stored hash bits (so the arena key decides) and wrap-around at the
        /// table end.
        #[test]
        fn colliding_high_bits(ops in ops((0u64..4, 0u64..64).prop_map(|(a, b)| RawHash((a << 62) | (0x3FFF_FFFF << 32) | b)), 600)) {
            run(&ops, false)?;
        }

        /// String-like keys (byte arrays), hashed by `hash_bytes`.
        #[test]
        fn byte_array_keys(ops in ops(any::<[u8; 2]>().prop_map(|b| [b[0] % 8, b[1] % 8, 1]), 600)) {
            run(&ops, false)?;
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "hundreds of thousands of keys are too slow to interpret"
)]
fn a_table_in_a_slab_is_frozen_and_written_like_one_on_the_heap() {
    // 200,000 keys need 262,144 slots of 24 bytes: 6 MiB, above
    // SLAB_MIN_BYTES, so the arena takes its chunks from one slab.
    let n = 200_000u64;
    let mut s: ValueState<u64, (u64, u64)> = ValueState::with_capacity("big", n as usize);
    for k in 0..n {
        s.load_hashed(k, k.key_hash(), (k, 0));
    }
    assert!(s.memory_bytes() >= crate::arena::SLAB_MIN_BYTES);
    if !cfg!(miri) {
        assert_eq!(s.slots.slab_chunks(), s.slots.chunk_count());
    }
    let view = s.freeze();
    // Every tenth key changes and some new ones arrive after the freeze:
    // the touched chunks are copied out of the slab.
    for k in (0..n).step_by(10) {
        s.put(k, (k, 1));
    }
    for k in n..n + 1_000 {
        s.put(k, (k, 2));
    }
    assert!(s.slots.slab_chunks() < s.slots.chunk_count() || cfg!(miri));
    assert_eq!(view.len(), n as usize);
    assert!(view.iter().all(|(k, v)| *v == (*k, 0)));
    assert_eq!(s.len(), n as usize + 1_000);
    for k in 0..n + 1_000 {
        let want = if k >= n {
            (k, 2)
        } else if k % 10 == 0 {
            (k, 1)
        } else {
            (k, 0)
        };
        assert_eq!(s.get(&k), Some(&want), "key {k}");
    }
    assert_index_invariant(&s);
    // The view outlives the state: the slab stays mapped for it.
    drop(s);
    assert!(view.iter().all(|(k, v)| *v == (*k, 0)));
}

#[test]
fn load_batch_agrees_with_load_hashed_on_every_path() {
    // Keys repeat (later values win), batches overflow the reserved size
    // (the table grows), and a frozen view shares the arena (copies).
    let entries: Vec<((u64, u64), u64)> = (0..5_000u64)
        .map(|i| {
            let k = i * 7 % 3_001;
            ((k, i), k.key_hash())
        })
        .collect();
    let mut batched: ValueState<u64, u64> = ValueState::with_capacity("b", 1_000);
    let mut single: ValueState<u64, u64> = ValueState::with_capacity("s", 1_000);
    let mut views = Vec::new();
    for (n, batch) in entries.chunks(32).enumerate() {
        if n % 40 == 7 {
            views.push((batched.freeze(), single.freeze()));
        }
        batched.load_batch(batch);
        for &((k, v), h) in batch {
            single.load_hashed(k, h, v);
        }
        assert_eq!(batched.len(), single.len());
    }
    let mut want: Vec<(u64, u64)> = single.iter().map(|(k, v)| (*k, *v)).collect();
    let mut got: Vec<(u64, u64)> = batched.iter().map(|(k, v)| (*k, *v)).collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
    assert_index_invariant(&batched);
    for (b, s) in &views {
        let mut b: Vec<(u64, u64)> = b.iter().map(|(k, v)| (*k, *v)).collect();
        let mut s: Vec<(u64, u64)> = s.iter().map(|(k, v)| (*k, *v)).collect();
        b.sort_unstable();
        s.sort_unstable();
        assert_eq!(b, s, "a frozen view saw a later batch");
    }
}

#[test]
fn pack_high_bits_packs_every_pattern() {
    for pattern in 0u32..256 {
        let mut bytes = [0u8; GROUP];
        for (i, b) in bytes.iter_mut().enumerate() {
            // Low bits set too: only the high bit may count.
            *b = if pattern >> i & 1 == 1 {
                0x80 | (i as u8 * 13)
            } else {
                0x7F & (i as u8 * 29)
            };
        }
        assert_eq!(
            pack_high_bits(u64::from_le_bytes(bytes)),
            u64::from(pattern)
        );
    }
}

/// `(pos, (key, value), hash)` of every entry of `view`, in slot order:
/// what a table block of the whole view holds.
fn placed_entries(view: &FrozenValueState<u64, u64>) -> Vec<(usize, (u64, u64), u64)> {
    (0..view.capacity())
        .filter(|&p| view.tags[p] != EMPTY)
        .map(|p| {
            let s = view.slots.get(p);
            (p, (s.key, s.value), s.key.key_hash())
        })
        .collect()
}

#[test]
fn occupancy_is_the_tags_as_bits() {
    let mut s: ValueState<u64, u64> = ValueState::new("o");
    for k in 0..3_000u64 {
        s.put(k * 31, k);
    }
    for k in 0..1_000u64 {
        s.remove(&(k * 93));
    }
    let view = s.freeze();
    let capacity = view.capacity();
    for slots in [
        0..capacity,
        8..capacity,
        512..1_024.min(capacity),
        0..8,
        64..64,
    ] {
        let mut out = vec![0xAA];
        let used = view.occupancy(slots.clone(), &mut out);
        assert_eq!(out[0], 0xAA, "appends");
        let bits = &out[1..];
        assert_eq!(bits.len(), slots.len().div_ceil(64) * 8);
        let mut count = 0;
        for i in 0..bits.len() * 8 {
            let set = bits[i / 8] >> (i % 8) & 1 == 1;
            let want = i < slots.len() && view.tags[slots.start + i] != EMPTY;
            assert_eq!(set, want, "bit {i} of {slots:?}");
            count += usize::from(set);
        }
        assert_eq!(used, count);
    }
    assert_eq!(view.chunk_slots(0..usize::MAX), 0..capacity);
    let empty: ValueState<u64, u64> = ValueState::new("e");
    let mut out = Vec::new();
    assert_eq!(empty.freeze().occupancy(0..16, &mut out), 0);
    assert_eq!(out, vec![0; 8]);
}

#[test]
fn a_table_loaded_at_its_positions_is_the_same_table() {
    // Churn first, so clusters and backward shifts have moved entries
    // away from their buckets; a small table at high load also has
    // clusters wrapping around its end.
    let mut s: ValueState<u64, u64> = ValueState::with_capacity("t", 200);
    for k in 0..200u64 {
        s.put(k * 7_919, k);
    }
    for k in (0..200u64).step_by(3) {
        s.remove(&(k * 7_919));
    }
    for k in 200..230u64 {
        s.put(k * 7_919, k);
    }
    // Three keys whose bucket is the last slot: two of them wrap.
    let (last, shift) = (s.capacity() - 1, s.shift);
    let aimed: Vec<u64> = (1_000_000u64..)
        .filter(|k| (k.key_hash() >> shift) as usize == last)
        .take(3)
        .collect();
    for k in aimed {
        s.put(k, 0);
    }
    let view = s.freeze();
    let entries = placed_entries(&view);
    let wraps = entries
        .iter()
        .any(|&(p, _, h)| p < (h >> view.shift) as usize);
    assert!(wraps, "the test wants a cluster wrapping around the end");
    for batch in [1, 7, 32, 1_000] {
        let mut r: ValueState<u64, u64> = ValueState::new("r");
        r.reserve(entries.len());
        r.reserve_capacity(view.capacity());
        assert_eq!(r.capacity(), view.capacity());
        let mut deferred = Vec::new();
        for b in entries.chunks(batch) {
            r.load_placed_batch(b, &mut deferred);
        }
        assert!(!deferred.is_empty() && deferred.len() < 5, "{deferred:?}");
        r.load_batch(&deferred);
        assert_index_invariant(&r);
        assert_eq!(r.len(), view.len());
        // Every entry whose cluster does not wrap is where it was.
        for &(p, (k, v), h) in &entries {
            assert_eq!(r.get(&k), Some(&v));
            if p >= (h >> view.shift) as usize {
                assert_eq!(r.tags[p], view.tags[p], "entry {k} at {p} moved");
            }
        }
    }
}

#[test]
fn wrong_positions_still_give_a_valid_table() {
    let mut s: ValueState<u64, u64> = ValueState::new("w");
    for k in 0..2_000u64 {
        s.put(k, k + 1);
    }
    let view = s.freeze();
    let mut entries = placed_entries(&view);
    // Out of order, and some positions lying (past the end, taken, or
    // off the probe path): all go through the probe instead.
    entries.reverse();
    for (i, e) in entries.iter_mut().enumerate() {
        match i % 5 {
            0 => e.0 = usize::MAX,
            1 => e.0 = 0,
            2 => e.0 = e.0.wrapping_add(1),
            _ => {}
        }
    }
    let mut r: ValueState<u64, u64> = ValueState::with_capacity("r", 2_000);
    r.reserve_capacity(view.capacity());
    let keep = r.freeze();
    let mut deferred = Vec::new();
    for b in entries.chunks(32) {
        r.load_placed_batch(b, &mut deferred);
    }
    r.load_batch(&deferred);
    assert_index_invariant(&r);
    assert_eq!(r.len(), 2_000);
    for k in 0..2_000u64 {
        assert_eq!(r.get(&k), Some(&(k + 1)));
    }
    assert!(keep.is_empty(), "a view taken before the load saw it");
    // A table too small for its positions grows and still holds them all.
    let mut small: ValueState<u64, u64> = ValueState::new("s");
    let mut deferred = Vec::new();
    for b in placed_entries(&view).chunks(32) {
        small.load_placed_batch(b, &mut deferred);
    }
    small.load_batch(&deferred);
    assert_index_invariant(&small);
    assert_eq!(small.len(), 2_000);
}

/// The positions a view marks dirty, with their entries now.
fn dirty_of(view: &FrozenValueState<u64, u64>) -> Vec<(usize, Option<(u64, u64)>)> {
    let mut out = Vec::new();
    view.for_each_dirty(0..view.capacity(), |pos, e| {
        out.push((pos, e.map(|(k, v)| (*k, *v))))
    });
    out
}

#[test]
fn a_freeze_marks_exactly_the_slots_written_since_the_previous_one() {
    let mut s = ValueState::<u64, u64>::with_capacity("d", 1000);
    for k in 0..500 {
        s.put(k, k);
    }
    let first = s.freeze();
    // A new arena counts every slot as written.
    assert_eq!(first.dirty_count(0..first.capacity()), first.capacity());
    assert_eq!(first.freeze_ids().since, 0);
    // Tracking starts at the freeze after a writer asks for it.
    assert!(!first.is_tracked());
    first.request_tracking();
    let second = s.freeze();
    assert!(!second.is_tracked());
    assert_eq!(second.freeze_ids().since, first.freeze_ids().id);
    assert!(dirty_of(&second).is_empty());
    s.put(7, 70);
    s.remove(&9);
    s.put(10_000, 1);
    let third = s.freeze();
    assert!(third.is_tracked());
    let dirty = dirty_of(&third);
    let entries: Vec<_> = dirty.iter().filter_map(|(_, e)| *e).collect();
    assert!(entries.contains(&(7, 70)) && entries.contains(&(10_000, 1)));
    assert!(
        dirty.iter().any(|(_, e)| e.is_none()),
        "the removal empties a slot"
    );
    let mut expected: std::collections::HashMap<u64, u64> =
        second.iter().map(|(k, v)| (*k, *v)).collect();
    expected.insert(7, 70);
    expected.remove(&9);
    expected.insert(10_000, 1);
    let now: std::collections::HashMap<u64, u64> = third.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(now, expected);
    assert!(
        dirty.len() < 10,
        "{} slots marked for 3 writes",
        dirty.len()
    );
}

#[test]
fn only_a_table_larger_than_the_caches_asks_for_prefetching() {
    let mut small = ValueState::<u64, u64>::new("small");
    small.put(1, 1);
    assert!(!small.prefetch_pays());
    // ~400 k keys: 512 Ki slots of 17 bytes, over 8 MiB.
    let mut large = ValueState::<u64, u64>::with_capacity("large", 400_000);
    large.put(1, 1);
    assert!(large.memory_bytes() >= PREFETCH_MIN_BYTES);
    assert!(large.prefetch_pays());
}

/// A lookup by a composite key's parts finds what a lookup by the key
/// finds (present or absent), through growths and removals.
#[test]
fn a_lookup_by_parts_equals_a_lookup_by_the_key() {
    use crate::key_group::{pair_hash, KeyHash};
    let mut t: ValueState<(String, u32), u64> = ValueState::new("pairs");
    for n in 0..3000u32 {
        t.put((format!("k{}", n % 97), n), u64::from(n) * 3);
        if n % 5 == 0 {
            t.remove(&(format!("k{}", n % 97), n / 2));
        }
    }
    for n in 0..3100u32 {
        let key = format!("k{}", n % 97);
        let by_parts = t.get_hashed_by(pair_hash(key.key_hash(), n.key_hash()), |(k, i)| {
            *i == n && k.key_eq(&key)
        });
        assert_eq!(by_parts, t.get(&(key.clone(), n)), "{key}, {n}");
    }
    let empty: ValueState<(String, u32), u64> = ValueState::new("empty");
    assert_eq!(empty.get_hashed_by(pair_hash(1, 2), |_| true), None);
}
