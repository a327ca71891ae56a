//! Property tests of key group ranges, the key group → subtask mapping and
//! the precomputed `KeyGroupAssigner`, over the whole legal parameter space.

use proptest::prelude::*;
use weir_state::{
    key_group_for_hash, subtask_for_key_group, KeyGroupAssigner, KeyGroupRange,
    UPPER_BOUND_MAX_PARALLELISM,
};

/// `(max_parallelism, parallelism)` with `1 <= P <= min(maxP, 512)`, with
/// extra weight on powers of two (the masked path of the assigner) and on
/// the bounds.
fn parallelisms() -> impl Strategy<Value = (u32, u32)> {
    let max_p = prop_oneof![
        3 => 1..=UPPER_BOUND_MAX_PARALLELISM,
        1 => (0u32..=15).prop_map(|s| 1 << s),
        1 => Just(UPPER_BOUND_MAX_PARALLELISM),
    ];
    max_p.prop_flat_map(|m| {
        let top = m.min(512);
        (
            Just(m),
            prop_oneof![3 => 1..=top, 1 => Just(top), 1 => Just(1)],
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ranges_partition_all_key_groups((m, p) in parallelisms()) {
        let mut next = 0;
        for i in 0..p {
            let r = KeyGroupRange::for_subtask(m, p, i);
            prop_assert_eq!(r.start(), next, "range {} of subtask {} is not contiguous", r, i);
            prop_assert!(!r.is_empty(), "subtask {} of {} got an empty range for maxP {}", i, p, m);
            // Flink spreads key groups evenly: sizes differ by at most one.
            prop_assert!(r.len() == m / p || r.len() == m.div_ceil(p));
            next = r.end();
        }
        prop_assert_eq!(next, m);
    }

    #[test]
    fn subtask_for_key_group_inverts_for_subtask((m, p) in parallelisms()) {
        let ranges: Vec<KeyGroupRange> =
            (0..p).map(|i| KeyGroupRange::for_subtask(m, p, i)).collect();
        for kg in 0..m {
            let owner = subtask_for_key_group(m, p, kg);
            prop_assert!(owner < p);
            // The ranges are disjoint (see the partition test), so owning
            // range and owner agree exactly.
            prop_assert!(ranges[owner as usize].contains(kg), "kg {} owner {}", kg, owner);
        }
    }

    #[test]
    fn assigner_agrees_with_free_functions(
        (m, p) in parallelisms(),
        hashes in proptest::collection::vec(any::<u64>(), 64),
    ) {
        let a = KeyGroupAssigner::new(m, p);
        prop_assert_eq!((a.max_parallelism(), a.parallelism()), (m, p));
        for h in hashes.into_iter().chain([0, u64::MAX, u64::MAX - 1, 1 << 63]) {
            let kg = a.key_group(h);
            prop_assert_eq!(kg, key_group_for_hash(h, m));
            prop_assert!(kg < m);
            prop_assert_eq!(a.subtask(kg), subtask_for_key_group(m, p, kg));
            prop_assert_eq!(a.subtask_for_hash(h), a.subtask(kg));
            prop_assert!(a.range_for_subtask(a.subtask(kg)).contains(kg));
        }
    }

    #[test]
    fn assigner_table_matches_every_key_group((m, p) in parallelisms()) {
        let a = KeyGroupAssigner::new(m, p);
        for kg in 0..m {
            prop_assert_eq!(a.subtask(kg), subtask_for_key_group(m, p, kg));
        }
    }
}

#[test]
fn default_max_parallelism_halves_evenly() {
    let m = weir_state::DEFAULT_MAX_PARALLELISM;
    assert_eq!(
        KeyGroupRange::for_subtask(m, 2, 0),
        KeyGroupRange::new(0, 64)
    );
    assert_eq!(
        KeyGroupRange::for_subtask(m, 2, 1),
        KeyGroupRange::new(64, 128)
    );
    assert_eq!(KeyGroupRange::for_subtask(m, 1, 0).len(), m);
}
