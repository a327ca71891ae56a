//! Unit and model-based tests of [`ValueState`](super::ValueState): index
//! invariants checked from the inside, and a proptest against `HashMap`.

use super::*;

/// A key whose hash is its value: lets tests aim keys at chosen buckets.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
struct RawHash(u64);
impl KeyHash for RawHash {
    fn key_hash(&self) -> u64 {
        self.0
    }
}

/// Checks the linear-probing invariant: no empty slot between any
/// entry's bucket and its position, tags match keys, and `len` is right.
fn assert_index_invariant<K: Copy + Eq + KeyHash + std::fmt::Debug, V: Copy>(s: &ValueState<K, V>) {
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

mod model {
    //! Random operation sequences run against `ValueState` and a `HashMap`
    //! model side by side.

    use super::{assert_index_invariant, RawHash};
    use crate::key_group::{fmix64, KeyHash};
    use crate::ValueState;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::fmt::Debug;
    use std::hash::Hash;

    #[derive(Clone, Debug)]
    enum Op<K> {
        Put(K, u32),
        Get(K),
        GetMut(K, u32),
        Remove(K),
        GetOrInsert(K, u32, u32),
        Clear,
    }

    fn ops<K: Clone + Debug>(
        key: impl Strategy<Value = K> + Clone,
        len: usize,
    ) -> impl Strategy<Value = Vec<Op<K>>> {
        let op = prop_oneof![
            4 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::Put(k, v)),
            3 => key.clone().prop_map(Op::Get),
            2 => (key.clone(), any::<u32>()).prop_map(|(k, v)| Op::GetMut(k, v)),
            3 => key.clone().prop_map(Op::Remove),
            4 => (key, any::<u32>(), any::<u32>()).prop_map(|(k, v, d)| Op::GetOrInsert(k, v, d)),
            1 => Just(Op::Clear),
        ];
        proptest::collection::vec(op, 0..len)
    }

    fn run<K: Copy + Eq + KeyHash + Hash + Debug>(ops: &[Op<K>]) -> Result<(), TestCaseError> {
        let mut s: ValueState<K, u32> = ValueState::new("model");
        let mut m: HashMap<K, u32> = HashMap::new();
        // The table only grows when the live entries outgrow it: its
        // capacity never exceeds what the peak number of live keys needs.
        let mut peak = 0;
        for op in ops {
            match *op {
                Op::Put(k, v) => {
                    s.put(k, v);
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
                    let got = s.get_or_insert_with(k, || v);
                    *got = got.wrapping_add(d);
                    let want = m.entry(k).or_insert(v);
                    *want = want.wrapping_add(d);
                    prop_assert_eq!(*got, *want);
                }
                Op::Clear => {
                    s.clear();
                    m.clear();
                }
            }
            prop_assert_eq!(s.len(), m.len());
            peak = peak.max(m.len());
        }
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
        let seen: HashMap<K, u32> = s.iter().map(|(k, v)| (*k, *v)).collect();
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
            run(&ops)?;
        }

        /// Many keys: the index grows several times.
        #[test]
        fn large_key_space(ops in ops(0u64..4000, 3000)) {
            run(&ops)?;
        }

        /// Hashes that share their low bits, like the keys of one worker's
        /// key groups.
        #[test]
        fn shared_low_bits(ops in ops((0u64..3000).prop_map(|x| RawHash((fmix64(x) & !0x7F) | 5)), 2000)) {
            run(&ops)?;
        }

        /// Hashes with only four distinct high halves: long clusters, equal
        /// stored hash bits (so the arena key decides) and wrap-around at the
        /// table end.
        #[test]
        fn colliding_high_bits(ops in ops((0u64..4, 0u64..64).prop_map(|(a, b)| RawHash((a << 62) | (0x3FFF_FFFF << 32) | b)), 600)) {
            run(&ops)?;
        }

        /// String-like keys (byte arrays) whose hash is FNV-1a + fmix64.
        #[test]
        fn byte_array_keys(ops in ops(any::<[u8; 2]>().prop_map(|b| [b[0] % 8, b[1] % 8, 1]), 600)) {
            run(&ops)?;
        }
    }
}
