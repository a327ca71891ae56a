//! Fuzzing of the snapshot readers with proptest: arbitrary bytes and
//! arbitrary mutations of valid encodings given to `Manifest::from_bytes`
//! and `SegmentReader` must give errors, never panics, and a mutation is
//! always detected in the block it touched.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;
use weir_state::snapshot::{
    BlockKind, Extent, InlineState, Lineage, Manifest, OperatorSnapshot, SegmentReader,
    SegmentWriter, SnapshotKind, SubtaskSnapshot, MANIFEST_MAGIC, MANIFEST_VERSION,
};
use weir_state::KeyGroupRange;

/// A fresh file path under the system temp dir, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("weir-snap-fuzz-{}-{n}", std::process::id()));
        let _ = fs::remove_file(&p);
        Self(p)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// `archive` followed by a valid trailer, so the bytes reach rkyv's
/// validation instead of failing the checksum.
fn with_trailer(archive: &[u8]) -> Vec<u8> {
    let mut out = archive.to_vec();
    out.extend_from_slice(&MANIFEST_MAGIC.to_le_bytes());
    out.extend_from_slice(&MANIFEST_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(archive.len() as u64).to_le_bytes());
    // Format 5's checksum covers the archive and the version.
    let crc = crc32c::crc32c_append(crc32c::crc32c(archive), &MANIFEST_VERSION.to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn kind() -> impl Strategy<Value = BlockKind> {
    prop_oneof![
        Just(BlockKind::KeyedState),
        Just(BlockKind::OperatorState),
        Just(BlockKind::ChannelState),
        Just(BlockKind::Opaque),
        Just(BlockKind::KeyedTable),
    ]
}

fn range() -> impl Strategy<Value = KeyGroupRange> {
    (0u32..1000, 0u32..100).prop_map(|(s, n)| KeyGroupRange::new(s, s + n))
}

fn extent() -> impl Strategy<Value = Extent> {
    (
        "[a-z0-9-]{1,12}",
        any::<u64>(),
        any::<u64>(),
        range(),
        kind(),
        any::<u32>(),
        "\\PC{0,12}",
    )
        .prop_map(
            |(segment, offset, length, key_groups, kind, payload_crc32c, state)| Extent {
                segment,
                offset,
                length,
                key_groups,
                kind,
                payload_crc32c,
                state,
            },
        )
}

/// Inline states with distinct, non-empty names.
fn inline_states() -> impl Strategy<Value = Vec<InlineState>> {
    prop::collection::btree_map(
        "\\PC{1,10}",
        prop::collection::vec(any::<u8>(), 0..16),
        0..4,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(name, bytes)| InlineState { name, bytes })
            .collect()
    })
}

fn manifest() -> impl Strategy<Value = Manifest> {
    let subtask = (
        any::<u32>(),
        range(),
        prop::collection::vec(extent(), 0..4),
        inline_states(),
    )
        .prop_map(
            |(index, key_groups, extents, inline_state)| SubtaskSnapshot {
                index,
                key_groups,
                extents,
                inline_state,
            },
        );
    let operator = (
        "\\PC{0,10}",
        any::<u32>(),
        prop::collection::vec(subtask, 0..3),
    )
        .prop_map(|(uid, parallelism, subtasks)| OperatorSnapshot {
            uid,
            parallelism,
            subtasks,
        });
    let lineage = prop::option::of(
        (
            "[0-9a-f]{0,32}",
            prop::option::of(any::<u64>()),
            prop::collection::vec(("\\PC{0,8}", "\\PC{0,8}"), 0..4),
        )
            .prop_map(|(job_id, parent, fingerprint)| Lineage {
                job_id,
                parent,
                fingerprint,
            }),
    );
    (
        "\\PC{0,10}",
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        prop::collection::vec(operator, 0..3),
        lineage,
        prop_oneof![
            Just(SnapshotKind::Checkpoint),
            Just(SnapshotKind::Savepoint)
        ],
    )
        .prop_map(
            |(job_name, checkpoint_id, timestamp_ms, max_parallelism, operators, lineage, kind)| {
                Manifest {
                    job_name,
                    checkpoint_id,
                    timestamp_ms,
                    max_parallelism,
                    operators,
                    lineage,
                    kind,
                }
            },
        )
}

/// Byte mutations: `(position seed, xor mask)`; a zero mask is skipped.
fn mutations() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>()), 1..6)
}

fn apply(bytes: &mut [u8], muts: &[(usize, u8)]) -> Vec<usize> {
    let mut touched = Vec::new();
    if bytes.is_empty() {
        return touched;
    }
    for &(seed, mask) in muts {
        let i = seed % bytes.len();
        bytes[i] ^= mask;
        touched.push(i);
    }
    touched
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn manifest_round_trips(m in manifest()) {
        prop_assert_eq!(Manifest::from_bytes(&m.to_bytes().unwrap()).unwrap(), m);
    }

    #[test]
    fn manifests_with_duplicate_inline_names_are_refused(m in manifest(), pick in any::<usize>()) {
        let mut m = m;
        let subtasks: Vec<_> = m
            .operators
            .iter_mut()
            .flat_map(|o| o.subtasks.iter_mut())
            .filter(|t| !t.inline_state.is_empty())
            .collect();
        if !subtasks.is_empty() {
            let n = subtasks.len();
            let t = subtasks.into_iter().nth(pick % n).unwrap();
            let dup = t.inline_state[pick % t.inline_state.len()].clone();
            let name = dup.name.clone();
            t.inline_state.push(dup);
            let err = m.to_bytes().unwrap_err().to_string();
            prop_assert!(err.contains(&format!("two inline states named {name:?}")), "{}", err);
        }
    }

    #[test]
    fn manifest_from_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        prop_assert!(Manifest::from_bytes(&bytes).is_err());
        // With a valid trailer the bytes reach rkyv's checked access.
        let _ = Manifest::from_bytes(&with_trailer(&bytes));
    }

    #[test]
    fn manifest_mutations_never_panic(m in manifest(), muts in mutations()) {
        let bytes = m.to_bytes().unwrap();
        let mut mutated = bytes.clone();
        apply(&mut mutated, &muts);
        if mutated != bytes {
            prop_assert!(Manifest::from_bytes(&mutated).is_err());
        }
        // Mutate the archive only and re-seal it: rkyv's validation and the
        // value checks are all that stand between the bytes and a panic.
        let mut archive = bytes[..bytes.len() - 20].to_vec();
        apply(&mut archive, &muts);
        let _ = Manifest::from_bytes(&with_trailer(&archive));
    }

    #[test]
    fn segment_from_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..10_000),
        extents in prop::collection::vec(extent(), 0..8),
    ) {
        let f = TempFile::new();
        fs::write(&f.0, &bytes).unwrap();
        let r = SegmentReader::open(&f.0).unwrap();
        let _ = r.scan().count();
        let name = r.name().to_owned();
        for mut e in extents {
            let _ = r.read_block(&e);
            // Aim at the file: named right, a small aligned offset.
            e.segment = name.clone();
            e.offset %= 4 * 4096;
            e.offset -= e.offset % 4096;
            let _ = r.read_block(&e);
        }
    }

    #[test]
    fn segment_mutations_are_detected(
        blocks in prop::collection::vec(
            (kind(), range(), prop::collection::vec(any::<u8>(), 0..6000)), 1..5),
        muts in mutations(),
    ) {
        let f = TempFile::new();
        let mut w = SegmentWriter::create(&f.0).unwrap();
        let written: Vec<_> = blocks
            .iter()
            .map(|(k, r, p)| w.append_block(*k, *r, "state", p).unwrap())
            .collect();
        w.finish().unwrap();
        let mut bytes = fs::read(&f.0).unwrap();
        let original = bytes.clone();
        apply(&mut bytes, &muts);
        fs::write(&f.0, &bytes).unwrap();
        let r = SegmentReader::open(&f.0).unwrap();
        for (e, (_, _, p)) in written.iter().zip(&blocks) {
            let span = e.offset as usize..(e.offset + e.length) as usize;
            if bytes[span.clone()] == original[span] {
                prop_assert_eq!(r.read_block(e).unwrap(), &p[..]);
            } else {
                prop_assert!(r.read_block(e).is_err());
            }
        }
        let scan_ok = r.scan().all(|b| b.is_ok());
        prop_assert_eq!(scan_ok, bytes == original);
    }
}
