//! Segment files and manifests of `weir_state::snapshot`: round trips, and
//! detection of every single-byte corruption, truncation and bad extent.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use weir_state::snapshot::{
    encode_block, padded_block_len, BlockKind, Extent, InlineState, Lineage, Manifest,
    OperatorSnapshot, SegmentReader, SegmentWriter, SnapshotError, SnapshotKind, SubtaskSnapshot,
    BLOCK_ALIGN, BLOCK_HEADER_LEN, MANIFEST_VERSION, MAX_STATE_NAME_LEN,
};
use weir_state::KeyGroupRange;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("weir-snap-{}-{tag}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Deterministic pseudo-random payload bytes.
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

const KINDS: [BlockKind; 5] = [
    BlockKind::KeyedState,
    BlockKind::OperatorState,
    BlockKind::ChannelState,
    BlockKind::Opaque,
    BlockKind::KeyedTable,
];

/// The state name block `i` of a test segment holds: sometimes none.
fn state_name(i: usize) -> String {
    if i % 3 == 2 {
        String::new()
    } else {
        format!("state-{i}")
    }
}

/// `e` as a scan reports it: blocks do not record their state's name.
fn scanned(e: &Extent) -> Extent {
    Extent {
        state: String::new(),
        ..e.clone()
    }
}

/// Writes blocks of `sizes` to `path`; returns their extents and payloads.
fn write_segment(path: &Path, sizes: &[usize]) -> Vec<(Extent, Vec<u8>)> {
    let mut w = SegmentWriter::create(path).unwrap();
    let mut out = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        let p = payload(len, i as u64 + 1);
        let range = KeyGroupRange::new(i as u32 * 7, i as u32 * 7 + (i as u32 % 3) * 5);
        let e = w
            .append_block(KINDS[i % KINDS.len()], range, &state_name(i), &p)
            .unwrap();
        assert_eq!(e.state, state_name(i));
        out.push((e, p));
    }
    w.sync().unwrap();
    let len = w.finish().unwrap();
    assert_eq!(len, fs::metadata(path).unwrap().len());
    out
}

/// Asserts that `r` is a `Corrupt` error for `path` at `offset`, and that
/// its message names both.
fn assert_corrupt<T: std::fmt::Debug>(r: Result<T, SnapshotError>, path: &Path, offset: u64) {
    let err = r.expect_err("corruption not detected");
    let msg = err.to_string();
    match &err {
        SnapshotError::Corrupt {
            path: p, offset: o, ..
        } => {
            assert_eq!((p.as_path(), *o), (path, offset), "{msg}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let expected = format!("snapshot segment {} offset {offset}: ", path.display());
    assert!(msg.starts_with(&expected), "{msg}");
}

const SIZES: [usize; 9] = [
    0,
    1,
    4095,
    4096,
    4096 - BLOCK_HEADER_LEN,
    4097,
    100_000,
    33,
    0,
];

#[test]
fn blocks_round_trip_and_extents_point_at_their_bytes() {
    let dir = TempDir::new("round-trip");
    let path = dir.join("seg-1");
    let blocks = write_segment(&path, &SIZES);
    let raw = fs::read(&path).unwrap();
    let mut expected_offset = 0;
    for (e, p) in &blocks {
        assert_eq!(e.segment, "seg-1");
        assert_eq!(e.offset, expected_offset);
        assert_eq!(e.offset % BLOCK_ALIGN, 0);
        assert_eq!(e.length, padded_block_len(p.len() as u32));
        assert_eq!(e.payload_crc32c, crc32c::crc32c(p));
        let start = e.offset as usize + BLOCK_HEADER_LEN;
        assert_eq!(&raw[start..start + p.len()], &p[..]);
        assert_eq!(&raw[e.offset as usize..][..4], b"WRSB");
        expected_offset += e.length;
    }
    assert_eq!(raw.len() as u64, expected_offset);

    let r = SegmentReader::open(&path).unwrap();
    assert_eq!(r.name(), "seg-1");
    assert_eq!(r.len(), expected_offset);
    // Out of order, and twice.
    for (e, p) in blocks.iter().rev().chain(&blocks) {
        assert_eq!(r.read_block(e).unwrap(), &p[..]);
    }
    let scanned: Vec<_> = r.scan().map(Result::unwrap).collect();
    assert_eq!(scanned.len(), blocks.len());
    for ((se, sp), (e, p)) in scanned.iter().zip(&blocks) {
        assert_eq!(*se, self::scanned(e));
        assert_eq!(sp, p);
    }
}

#[test]
fn segments_hold_exactly_what_encode_block_writes() {
    let dir = TempDir::new("encode");
    let path = dir.join("seg-enc");
    let blocks = write_segment(&path, &SIZES);
    let raw = fs::read(&path).unwrap();
    let mut expected = Vec::new();
    for (e, p) in &blocks {
        let mut block = vec![0xeeu8; padded_block_len(p.len() as u32) as usize];
        let crc = encode_block(&mut block, e.kind, e.key_groups, p);
        assert_eq!(crc, e.payload_crc32c);
        expected.extend_from_slice(&block);
    }
    assert!(raw == expected, "segment bytes differ from encode_block's");
}

#[test]
fn long_state_names_are_refused() {
    let dir = TempDir::new("state-name");
    let path = dir.join("seg-s");
    let mut w = SegmentWriter::create(&path).unwrap();
    let range = KeyGroupRange::new(0, 1);
    let longest = "n".repeat(MAX_STATE_NAME_LEN);
    let e = w
        .append_block(BlockKind::KeyedState, range, &longest, b"x")
        .unwrap();
    assert_eq!(e.state, longest);
    let err = w
        .append_block(BlockKind::KeyedState, range, &"n".repeat(256), b"x")
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("256 bytes long, more than 255"), "{msg}");
    // A refused block leaves the writer usable.
    w.append_block(BlockKind::Opaque, range, "", b"y").unwrap();
    assert_eq!(w.finish().unwrap(), 2 * BLOCK_ALIGN);
}

#[test]
fn empty_segment_has_no_blocks() {
    let dir = TempDir::new("empty");
    let path = dir.join("seg-0");
    assert_eq!(SegmentWriter::create(&path).unwrap().finish().unwrap(), 0);
    let r = SegmentReader::open(&path).unwrap();
    assert!(r.is_empty());
    assert_eq!(r.scan().count(), 0);
    let e = Extent {
        segment: "seg-0".into(),
        offset: 0,
        length: BLOCK_ALIGN,
        key_groups: KeyGroupRange::new(0, 1),
        kind: BlockKind::KeyedState,
        payload_crc32c: 0,
        state: String::new(),
    };
    assert_corrupt(r.read_block(&e), &path, 0);
}

#[test]
fn every_single_byte_flip_is_detected() {
    let dir = TempDir::new("flip");
    let path = dir.join("seg-3");
    let blocks = write_segment(&path, &[10, 0, 5000]);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let len = file.metadata().unwrap().len();
    for pos in 0..len {
        let mut b = [0u8];
        file.read_exact_at(&mut b, pos).unwrap();
        file.write_all_at(&[b[0] ^ 0x5a], pos).unwrap();
        let r = SegmentReader::open(&path).unwrap();
        for (e, p) in &blocks {
            if (e.offset..e.offset + e.length).contains(&pos) {
                assert_corrupt(r.read_block(e), &path, e.offset);
            } else {
                assert_eq!(r.read_block(e).unwrap(), &p[..]);
            }
        }
        let scanned: Vec<_> = r.scan().collect();
        let last = scanned.last().unwrap();
        assert!(last.is_err(), "scan missed a flip at {pos}");
        assert!(scanned[..scanned.len() - 1].iter().all(Result::is_ok));
        file.write_all_at(&b, pos).unwrap();
    }
}

#[test]
fn payload_checksum_error_reads_well() {
    let dir = TempDir::new("message");
    let path = dir.join("seg-3");
    let blocks = write_segment(&path, &[100, 100, 100]);
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&[0xff], 8192 + BLOCK_HEADER_LEN as u64 + 5)
        .unwrap();
    let r = SegmentReader::open(&path).unwrap();
    let msg = r.read_block(&blocks[2].0).unwrap_err().to_string();
    let prefix = format!(
        "snapshot segment {} offset 8192: payload checksum mismatch (expected 0x",
        path.display()
    );
    assert!(msg.starts_with(&prefix), "{msg}");
    assert!(msg.contains(", found 0x"), "{msg}");
}

#[test]
fn truncation_is_detected() {
    let dir = TempDir::new("truncate");
    let path = dir.join("seg-t");
    let blocks = write_segment(&path, &[0, 9000, 1, 4068]);
    let full = fs::read(&path).unwrap();
    let mut cuts: Vec<u64> = (0..full.len() as u64).step_by(509).collect();
    for (e, _) in &blocks {
        for d in [0, 1, 27, 28, 29, 100, e.length - 1] {
            cuts.push(e.offset + d);
        }
        cuts.push(e.offset + e.length - 1);
    }
    for cut in cuts {
        fs::write(&path, &full[..cut as usize]).unwrap();
        let r = SegmentReader::open(&path).unwrap();
        let whole = blocks
            .iter()
            .filter(|(e, _)| e.offset + e.length <= cut)
            .count();
        for (e, p) in &blocks {
            if e.offset + e.length <= cut {
                assert_eq!(r.read_block(e).unwrap(), &p[..]);
            } else {
                assert_corrupt(r.read_block(e), &path, e.offset);
            }
        }
        let scanned: Vec<_> = r.scan().collect();
        let at_boundary = blocks.iter().any(|(e, _)| e.offset == cut) || cut == 0;
        assert_eq!(
            scanned.len(),
            whole + usize::from(!at_boundary),
            "cut {cut}"
        );
        assert!(scanned[..whole].iter().all(Result::is_ok));
        if !at_boundary {
            let boundary = blocks[whole].0.offset;
            assert_corrupt(
                scanned[whole].as_ref().map(|_| ()).map_err(clone_err),
                &path,
                boundary,
            );
        }
    }
}

/// A `Corrupt` error's fields, rebuilt (errors are not `Clone`).
fn clone_err(e: &SnapshotError) -> SnapshotError {
    match e {
        SnapshotError::Corrupt { path, offset, what } => SnapshotError::Corrupt {
            path: path.clone(),
            offset: *offset,
            what: what.clone(),
        },
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn trailing_garbage_stops_the_scan() {
    let dir = TempDir::new("garbage");
    let path = dir.join("seg-g");
    let blocks = write_segment(&path, &[7]);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, &[0u8; 100]).unwrap();
    let r = SegmentReader::open(&path).unwrap();
    assert_eq!(r.read_block(&blocks[0].0).unwrap(), &blocks[0].1[..]);
    let scanned: Vec<_> = r.scan().collect();
    assert_eq!(scanned.len(), 2);
    assert_corrupt(
        scanned[1].as_ref().map(|_| ()).map_err(clone_err),
        &path,
        4096,
    );
}

#[test]
fn extents_that_do_not_match_the_block_are_rejected() {
    let dir = TempDir::new("extent");
    let path = dir.join("seg-e");
    let blocks = write_segment(&path, &[50, 50]);
    let r = SegmentReader::open(&path).unwrap();
    let good = blocks[1].0.clone();
    let cases: Vec<(Extent, &str)> = vec![
        (
            Extent {
                segment: "seg-x".into(),
                ..good.clone()
            },
            "extent names segment",
        ),
        (
            Extent {
                kind: BlockKind::ChannelState,
                ..good.clone()
            },
            "block kind mismatch",
        ),
        (
            Extent {
                key_groups: KeyGroupRange::new(7, 9),
                ..good.clone()
            },
            "key-group range mismatch",
        ),
        (
            Extent {
                length: 8192,
                ..good.clone()
            },
            "block length mismatch",
        ),
        (
            Extent {
                payload_crc32c: good.payload_crc32c ^ 1,
                ..good.clone()
            },
            "payload checksum mismatch",
        ),
        (
            Extent {
                offset: 8192,
                ..good.clone()
            },
            "truncated",
        ),
        (
            Extent {
                offset: 1 << 40,
                ..good.clone()
            },
            "truncated",
        ),
        (
            Extent {
                offset: u64::MAX - 4095,
                ..good.clone()
            },
            "truncated",
        ),
        (
            Extent {
                offset: 100,
                ..good.clone()
            },
            "not a multiple of 4096",
        ),
    ];
    for (e, what) in cases {
        let offset = e.offset;
        let msg = r.read_block(&e).unwrap_err().to_string();
        assert!(msg.contains(what), "{msg}");
        assert_corrupt(r.read_block(&e), &path, offset);
    }
    assert_eq!(r.read_block(&good).unwrap(), &blocks[1].1[..]);
}

#[test]
fn missing_file_is_an_error_naming_the_path() {
    let dir = TempDir::new("missing");
    let path = dir.join("no-such-segment");
    let err = SegmentReader::open(&path).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("open segment"), "{msg}");
    match err {
        SnapshotError::Io {
            source, path: p, ..
        } => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            assert_eq!(p, path);
        }
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(matches!(
        Manifest::read(&path),
        Err(SnapshotError::Io {
            op: "read manifest",
            ..
        })
    ));
}

#[test]
fn writer_never_overwrites_a_segment() {
    let dir = TempDir::new("exists");
    let path = dir.join("seg-1");
    write_segment(&path, &[1]);
    let err = SegmentWriter::create(&path).unwrap_err();
    assert!(
        matches!(
            err,
            SnapshotError::Io {
                op: "create segment",
                ..
            }
        ),
        "{err}"
    );
}

fn sample_manifest() -> Manifest {
    let extent = |seg: &str, offset: u64, kg: (u32, u32), kind, state: &str| Extent {
        segment: seg.into(),
        offset,
        length: 8192,
        key_groups: KeyGroupRange::new(kg.0, kg.1),
        kind,
        payload_crc32c: 0x1234_5678 ^ offset as u32,
        state: state.into(),
    };
    let inline = |name: &str, bytes: &[u8]| InlineState {
        name: name.into(),
        bytes: bytes.to_vec(),
    };
    Manifest {
        job_name: "word-count ✓".into(),
        checkpoint_id: 42,
        timestamp_ms: 1_700_000_000_123,
        max_parallelism: 128,
        operators: vec![
            OperatorSnapshot {
                uid: "source-1".into(),
                parallelism: 1,
                subtasks: vec![SubtaskSnapshot {
                    index: 0,
                    key_groups: KeyGroupRange::new(0, 128),
                    extents: vec![],
                    inline_state: vec![
                        inline("position", &[1, 2, 3, 0, 255]),
                        inline("end-of-input", &[]),
                    ],
                }],
            },
            OperatorSnapshot {
                uid: "window-agg".into(),
                parallelism: 2,
                subtasks: vec![
                    SubtaskSnapshot {
                        index: 0,
                        key_groups: KeyGroupRange::new(0, 64),
                        extents: vec![
                            extent("w0-seg-1", 0, (0, 64), BlockKind::KeyedState, "sum"),
                            extent("w0-seg-1", 8192, (0, 0), BlockKind::OperatorState, ""),
                        ],
                        inline_state: vec![],
                    },
                    SubtaskSnapshot {
                        index: 1,
                        key_groups: KeyGroupRange::new(64, 128),
                        extents: vec![extent(
                            "w1-seg-7",
                            4096,
                            (64, 128),
                            BlockKind::KeyedState,
                            "sum",
                        )],
                        inline_state: vec![inline("pending-transactions", b"txn-17")],
                    },
                ],
            },
        ],
        lineage: Some(Lineage {
            job_id: "5f0c6a1e9b2d4c7e8a1f3b5d7c9e0a24".into(),
            parent: Some(41),
            fingerprint: vec![
                ("job".into(), "word-count ✓".into()),
                ("parameter job.keys".into(), "1000".into()),
            ],
        }),
        kind: SnapshotKind::Savepoint,
    }
}

/// A manifest of format version 2 (no lineage), as weir `a054281` wrote
/// it for a W1 run's final checkpoint, still reads.
#[test]
fn a_version_2_manifest_reads_without_lineage() {
    let bytes = include_bytes!("fixtures/manifest-v2-w1.bin");
    assert_eq!(
        u16::from_le_bytes([bytes[bytes.len() - 16], bytes[bytes.len() - 15]]),
        2
    );
    let m = Manifest::from_bytes(bytes).unwrap();
    assert_eq!(
        (m.job_name.as_str(), m.checkpoint_id),
        ("w1-keyed-count", 1)
    );
    assert_eq!(m.lineage, None);
    assert_eq!(m.kind, SnapshotKind::Checkpoint);
    assert!(
        m.operators.iter().any(|o| o.uid == "w1-source"),
        "{:?}",
        m.operators
    );
    // Written again, it is the current version and reads back the same.
    let again = m.to_bytes().unwrap();
    assert_eq!(Manifest::from_bytes(&again).unwrap(), m);
}

/// A manifest of format version 3 (lineage, no kind), as weir `a2a615c`
/// wrote it for a W1 run's final checkpoint, still reads, as a checkpoint.
#[test]
fn a_version_3_manifest_reads_as_a_checkpoint() {
    let bytes = include_bytes!("fixtures/manifest-v3-w1.bin");
    assert_eq!(
        u16::from_le_bytes([bytes[bytes.len() - 16], bytes[bytes.len() - 15]]),
        3
    );
    let m = Manifest::from_bytes(bytes).unwrap();
    assert_eq!(
        (m.job_name.as_str(), m.checkpoint_id, m.kind),
        ("w1-keyed-count", 1, SnapshotKind::Checkpoint)
    );
    let lineage = m.lineage.as_ref().expect("version 3 has lineage");
    assert_eq!(lineage.parent, None);
    assert!(
        lineage
            .fingerprint
            .contains(&("operator".into(), "w1-output-sink".into())),
        "{:?}",
        lineage.fingerprint
    );
    // Written again, it is the current version and reads back the same.
    let again = m.to_bytes().unwrap();
    assert_eq!(
        u16::from_le_bytes([again[again.len() - 16], again[again.len() - 15]]),
        MANIFEST_VERSION
    );
    assert_eq!(Manifest::from_bytes(&again).unwrap(), m);
}

#[test]
fn manifest_round_trips() {
    let m = sample_manifest();
    let bytes = m.to_bytes().unwrap();
    assert_eq!(&bytes[bytes.len() - 20..][..4], b"WRSM");
    assert_eq!(Manifest::from_bytes(&bytes).unwrap(), m);
    // From an unaligned slice too.
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&bytes);
    assert_eq!(Manifest::from_bytes(&shifted[1..]).unwrap(), m);
    // Deterministic encoding.
    assert_eq!(m.to_bytes().unwrap(), bytes);
    let source = &m.operators[0].subtasks[0];
    assert_eq!(source.inline("position"), Some(&[1, 2, 3, 0, 255][..]));
    assert_eq!(source.inline("end-of-input"), Some(&[][..]));
    assert_eq!(source.inline("missing"), None);
    assert_eq!(m.operators[1].subtasks[0].extents[0].state, "sum");
    let empty = Manifest {
        operators: vec![],
        ..m
    };
    assert_eq!(
        Manifest::from_bytes(&empty.to_bytes().unwrap()).unwrap(),
        empty
    );
}

#[test]
fn manifest_corruption_is_always_an_error() {
    let bytes = sample_manifest().to_bytes().unwrap();
    for i in 0..bytes.len() {
        for x in [0x01, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= x;
            let err = Manifest::from_bytes(&b).unwrap_err();
            assert!(matches!(err, SnapshotError::Manifest { .. }), "{err}");
        }
    }
    for len in 0..bytes.len() {
        assert!(Manifest::from_bytes(&bytes[..len]).is_err(), "len {len}");
    }
    let mut longer = bytes.clone();
    longer.insert(0, 0);
    assert!(Manifest::from_bytes(&longer).is_err());
}

#[test]
fn manifest_is_written_atomically() {
    let dir = TempDir::new("manifest");
    let m = sample_manifest();
    let path = m.write(&dir.0, "_metadata").unwrap();
    assert_eq!(path, dir.join("_metadata"));
    assert_eq!(Manifest::read(&path).unwrap(), m);
    // Replacing an existing file.
    let m2 = Manifest {
        checkpoint_id: 43,
        ..m
    };
    m2.write(&dir.0, "_metadata").unwrap();
    assert_eq!(Manifest::read(&path).unwrap(), m2);
    let names: Vec<_> = fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["_metadata"], "temporary files left behind");
    // A corrupt file's error names it.
    fs::write(&path, b"not a manifest at all, long enough").unwrap();
    let msg = Manifest::read(&path).unwrap_err().to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    // Names that leave the directory are refused.
    for bad in ["", "..", "a/b"] {
        assert!(weir_state::snapshot::write_atomically(&dir.0, bad, b"x").is_err());
    }
    // A missing directory is an I/O error.
    let missing = dir.join("nope");
    assert!(matches!(
        m2.write(&missing, "_metadata"),
        Err(SnapshotError::Io { op: "create", .. })
    ));
}

/// `read_block` and `read_block_deferred` + `PayloadCheck` (fed in pieces)
/// agree on every block after any single byte flip.
#[test]
fn deferred_checks_catch_every_flip_that_read_block_catches() {
    let dir = TempDir::new("deferred");
    let path = dir.join("seg-3");
    let blocks = write_segment(&path, &[10, 0, 5000]);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let len = file.metadata().unwrap().len();
    let deferred = |r: &SegmentReader, e: &Extent| -> Result<Vec<u8>, SnapshotError> {
        let (payload, mut check) = r.read_block_deferred(e)?;
        for piece in payload.chunks(7) {
            check.update(piece);
        }
        check.finish()?;
        Ok(payload.to_vec())
    };
    for pos in (0..len).step_by(3) {
        let mut b = [0u8];
        file.read_exact_at(&mut b, pos).unwrap();
        file.write_all_at(&[b[0] ^ 0x21], pos).unwrap();
        let r = SegmentReader::open(&path).unwrap();
        for (e, p) in &blocks {
            match (r.read_block(e), deferred(&r, e)) {
                (Ok(a), Ok(d)) => assert!(a == &p[..] && d == *p, "flip at {pos}"),
                (Err(_), Err(d)) => assert_corrupt::<()>(Err(d), &path, e.offset),
                (a, d) => panic!(
                    "flip at {pos}: read_block {:?}, deferred {:?}",
                    a.is_ok(),
                    d.is_ok()
                ),
            }
        }
        file.write_all_at(&b, pos).unwrap();
    }
}

/// The savepoint of `fixtures/savepoint-v4-w1` (weir's manifest format 4,
/// kind savepoint; see its README) still reads: its manifest, with
/// segment names relative to its directory, and every block it names,
/// checksums and all.
#[test]
fn a_version_4_savepoint_reads_with_every_block() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/savepoint-v4-w1");
    let bytes = std::fs::read(dir.join("_metadata")).unwrap();
    assert_eq!(
        u16::from_le_bytes([bytes[bytes.len() - 16], bytes[bytes.len() - 15]]),
        4
    );
    let m = Manifest::from_bytes(&bytes).unwrap();
    assert_eq!(
        (
            m.job_name.as_str(),
            m.checkpoint_id,
            m.kind,
            m.max_parallelism
        ),
        ("w1-keyed-count", 4, SnapshotKind::Savepoint, 128)
    );
    let uids: Vec<&str> = m.operators.iter().map(|o| o.uid.as_str()).collect();
    assert_eq!(uids, ["w1-checksum-sink", "w1-keyed-count", "w1-source"]);
    let mut blocks = 0;
    for e in m
        .operators
        .iter()
        .flat_map(|o| &o.subtasks)
        .flat_map(|s| &s.extents)
    {
        assert!(!e.segment.contains('/'), "relative: {}", e.segment);
        let reader = SegmentReader::open(dir.join(&e.segment)).unwrap();
        reader.read_block(e).unwrap();
        blocks += 1;
    }
    assert_eq!(blocks, 1, "the keyed totals' table block");
}

/// The incremental checkpoints of `fixtures/checkpoints-v5-incremental-w1`
/// (manifest format 5; see its README) still read: checkpoint 67 names
/// its chain's full table block in checkpoint 66 (`../chk-66/w000.seg`)
/// and its own delta block, and every block it names, read from the
/// directory the name leads to, passes every check.
#[test]
fn a_version_5_incremental_checkpoint_reads_with_every_block_of_its_chain() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/checkpoints-v5-incremental-w1");
    let bytes = std::fs::read(root.join("chk-67/_metadata")).unwrap();
    assert_eq!(
        u16::from_le_bytes([bytes[bytes.len() - 16], bytes[bytes.len() - 15]]),
        5
    );
    let m = Manifest::from_bytes(&bytes).unwrap();
    assert_eq!(
        (m.job_name.as_str(), m.checkpoint_id, m.kind),
        ("w1-keyed-count", 67, SnapshotKind::Checkpoint)
    );
    assert_eq!(m.referenced_checkpoints(), vec![66]);
    let mut kinds = Vec::new();
    for e in m
        .operators
        .iter()
        .flat_map(|o| &o.subtasks)
        .flat_map(|s| &s.extents)
    {
        let path = match weir_state::snapshot::referenced_segment(&e.segment) {
            Some((id, seg)) => root.join(format!("chk-{id}")).join(seg),
            None => root.join("chk-67").join(&e.segment),
        };
        let reader = SegmentReader::open_as(&path, e.segment.clone()).unwrap();
        reader.read_block(e).unwrap();
        // Opened under its file name only, a referenced block is refused:
        // the extent names another segment.
        if e.segment.contains('/') {
            assert!(SegmentReader::open(&path).unwrap().read_block(e).is_err());
        }
        kinds.push((e.state.clone(), e.kind, e.segment.contains('/')));
    }
    assert!(
        kinds.contains(&("totals".into(), BlockKind::KeyedTable, true))
            && kinds.contains(&("totals".into(), BlockKind::KeyedTableDelta, false)),
        "{kinds:?}"
    );
    // Its base, checkpoint 66, is a full checkpoint.
    let base = Manifest::read(root.join("chk-66/_metadata")).unwrap();
    assert!(base.referenced_checkpoints().is_empty());
    // Written again, it reads back the same.
    assert_eq!(Manifest::from_bytes(&m.to_bytes().unwrap()).unwrap(), m);
    // Labelled format 4 (the archive is the same), its references are
    // refused: only format 5 may name another checkpoint's segment.
    // A flipped version bit is corruption (format 5's checksum covers the
    // version).
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 16] ^= 0x01;
    let err = Manifest::from_bytes(&flipped).unwrap_err().to_string();
    assert!(err.contains("checksum mismatch"), "{err}");
    // Sealed as format 4 (the archive is the same), its references are
    // refused: only format 5 may name another checkpoint's segment.
    let crc = crc32c::crc32c(&flipped[..n - 20]);
    flipped[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let err = Manifest::from_bytes(&flipped).unwrap_err().to_string();
    assert!(err.contains("cannot refer to segment"), "{err}");
}
