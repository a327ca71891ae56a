//! Fuzzing of manifest format 5 (incremental checkpoints) with proptest:
//! a checkpoint's extents may name a segment of an earlier checkpoint of
//! the same directory, `../chk-<id>/<segment>`, and nothing else outside
//! its directory. Arbitrary and hostile segment names either parse to
//! exactly such a reference or are refused; a savepoint, or a manifest
//! labelled format 4, that refers to another checkpoint is refused; and
//! mutated format-5 bytes give errors, never panics.

use proptest::prelude::*;
use weir_state::snapshot::{
    referenced_segment, BlockKind, Extent, Manifest, OperatorSnapshot, SnapshotKind,
    SubtaskSnapshot,
};
use weir_state::KeyGroupRange;

/// Segment names: plain ones, references, and near misses of both.
fn segment_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9.-]{1,12}",
        ("[0-9]{1,20}", "[a-z0-9.-]{1,12}").prop_map(|(id, s)| format!("../chk-{id}/{s}")),
        (
            prop::sample::select(vec![
                "../chk-",
                "../chk-x",
                "../chk-1/",
                "../chk-1/..",
                "../chk-1/.",
                "../chk-1/a/b",
                "../chk-1/../x",
                "..",
                ".",
                "/",
                "/abs",
                "../",
                "./chk-1/a",
                "../chk--1/a",
                "../chk-1\\a",
                "../chk-1/a\0",
                "../../chk-1/a",
                "../CHK-1/a",
                "",
            ]),
            "[a-z0-9./\\\\-]{0,4}",
        )
            .prop_map(|(a, b)| format!("{a}{b}")),
        "\\PC{0,24}",
    ]
}

fn is_plain(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

fn extent(segment: String) -> Extent {
    Extent {
        segment,
        offset: 4096,
        length: 4096,
        key_groups: KeyGroupRange::new(0, 128),
        kind: BlockKind::KeyedTableDelta,
        payload_crc32c: 7,
        state: "totals".into(),
    }
}

fn manifest(segments: Vec<String>, kind: SnapshotKind) -> Manifest {
    Manifest {
        job_name: "w1".into(),
        checkpoint_id: 99,
        timestamp_ms: 1,
        max_parallelism: 128,
        operators: vec![OperatorSnapshot {
            uid: "op".into(),
            parallelism: 1,
            subtasks: vec![SubtaskSnapshot {
                index: 0,
                key_groups: KeyGroupRange::new(0, 128),
                extents: segments.into_iter().map(extent).collect(),
                inline_state: Vec::new(),
            }],
        }],
        lineage: None,
        kind,
    }
}

/// Encoded `bytes` labelled format 4 and sealed as format 4 seals (the
/// checksum of the archive alone): a manifest with the same archive.
fn as_format_4(bytes: &mut [u8]) {
    let n = bytes.len();
    bytes[n - 16..n - 14].copy_from_slice(&4u16.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..n - 20]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A reference names exactly `../chk-<digits>/<plain name>`.
    #[test]
    fn references_parse_exactly_or_not_at_all(name in segment_name()) {
        if let Some((id, seg)) = referenced_segment(&name) {
            prop_assert!(is_plain(seg), "{:?} -> {:?}", name, seg);
            let digits = name
                .strip_prefix("../chk-")
                .and_then(|r| r.strip_suffix(seg))
                .and_then(|r| r.strip_suffix('/'));
            prop_assert!(
                digits.is_some_and(|d| !d.is_empty()
                    && d.bytes().all(|b| b.is_ascii_digit())
                    && d.parse::<u64>() == Ok(id)),
                "{:?} -> {} {:?}", name, id, seg
            );
        }
    }

    /// A checkpoint's manifest with these names is written and read back
    /// unchanged iff every name is plain or a reference; else both refuse.
    #[test]
    fn checkpoint_manifests_accept_plain_names_and_references_only(
        names in prop::collection::vec(segment_name(), 1..5),
    ) {
        let valid = names.iter().all(|n| is_plain(n) || referenced_segment(n).is_some());
        let m = manifest(names.clone(), SnapshotKind::Checkpoint);
        match m.to_bytes() {
            Ok(bytes) => {
                prop_assert!(valid, "written with {:?}", names);
                let back = Manifest::from_bytes(&bytes).unwrap();
                let refs: Vec<u64> = {
                    let mut r: Vec<u64> = names
                        .iter()
                        .filter_map(|n| referenced_segment(n).map(|(id, _)| id))
                        .collect();
                    r.sort_unstable();
                    r.dedup();
                    r
                };
                prop_assert_eq!(back.referenced_checkpoints(), refs);
                prop_assert_eq!(back, m);
                // Labelled format 4, a manifest with references is refused.
                let mut v4 = bytes.clone();
                as_format_4(&mut v4);
                let any_ref = names.iter().any(|n| referenced_segment(n).is_some());
                prop_assert_eq!(Manifest::from_bytes(&v4).is_err(), any_ref);
            }
            Err(_) => prop_assert!(!valid, "refused {:?}", names),
        }
    }

    /// A savepoint is self-contained: one that names another checkpoint's
    /// segment does not read.
    #[test]
    fn savepoints_never_refer_to_other_checkpoints(
        names in prop::collection::vec(segment_name(), 1..5),
    ) {
        let m = manifest(names.clone(), SnapshotKind::Savepoint);
        if let Ok(bytes) = m.to_bytes() {
            let refers = names.iter().any(|n| referenced_segment(n).is_some());
            prop_assert_eq!(Manifest::from_bytes(&bytes).is_err(), refers);
        }
    }

    /// Mutated bytes of a format-5 manifest with references: errors,
    /// never panics (the checksum covers the archive and the version).
    #[test]
    fn format_5_mutations_never_panic(
        ids in prop::collection::vec(0u64..1000, 1..4),
        muts in prop::collection::vec((any::<usize>(), 1u8..), 1..6),
    ) {
        let names = ids.iter().map(|id| format!("../chk-{id}/w000.seg")).collect();
        let bytes = manifest(names, SnapshotKind::Checkpoint).to_bytes().unwrap();
        let mut mutated = bytes.clone();
        for &(seed, mask) in &muts {
            let i = seed % mutated.len();
            mutated[i] ^= mask;
        }
        if mutated != bytes {
            prop_assert!(Manifest::from_bytes(&mutated).is_err());
        }
    }
}
