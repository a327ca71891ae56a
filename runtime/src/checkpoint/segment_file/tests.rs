//! Segment files written through io_uring: blocks as the format's writer
//! makes them, in place or staged, O_DIRECT or buffered, read back byte
//! for byte; write errors name the file.

use std::fs;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};

use weir_state::snapshot::{SegmentReader, SegmentWriter};

use super::*;

/// Runs `f` in a glommio executor with little I/O memory.
fn run<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

/// A fresh directory under `parent`, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        Self::under(&std::env::temp_dir(), tag)
    }

    fn under(parent: &Path, tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = parent.join(format!("weir-segfile-{}-{tag}-{n}", std::process::id()));
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

/// A block to write: kind, key groups, state name, payload.
type Block = (BlockKind, KeyGroupRange, String, Vec<u8>);

/// Blocks of `sizes` bytes with deterministic pseudo-random payloads.
fn blocks(sizes: &[usize]) -> Vec<Block> {
    const KINDS: [BlockKind; 5] = [
        BlockKind::KeyedState,
        BlockKind::OperatorState,
        BlockKind::ChannelState,
        BlockKind::Opaque,
        BlockKind::KeyedTable,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let payload = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let i32 = i as u32;
            let range = KeyGroupRange::new(i32 * 3, i32 * 3 + i32 % 5);
            let state = if i % 4 == 3 {
                String::new()
            } else {
                format!("state-{i}")
            };
            (KINDS[i % KINDS.len()], range, state, payload)
        })
        .collect()
}

/// What `SegmentWriter` writes for `blocks` at `path`: bytes, extents.
fn reference(path: &Path, blocks: &[Block]) -> (Vec<u8>, Vec<Extent>) {
    let mut w = SegmentWriter::create(path).unwrap();
    let extents = blocks
        .iter()
        .map(|(k, r, s, p)| w.append_block(*k, *r, s, p).unwrap())
        .collect();
    w.finish().unwrap();
    (fs::read(path).unwrap(), extents)
}

/// Appends `blocks` to `file`, alternating the copying and the
/// in-place variant.
async fn append_all(file: &mut SegmentFile, blocks: &[Block]) -> Vec<Extent> {
    let mut extents = Vec::new();
    for (i, (k, r, s, p)) in blocks.iter().enumerate() {
        let e = if i % 2 == 0 {
            file.append_block(*k, *r, s, p).await.unwrap()
        } else {
            file.append_block_with(*k, *r, s, p.len(), |buf| {
                assert_eq!(buf.len(), p.len());
                assert!(buf.iter().all(|&b| b == 0), "payload not zeroed");
                buf.copy_from_slice(p);
            })
            .await
            .unwrap()
        };
        extents.push(e);
    }
    extents
}

/// Writes `blocks` in `mode` to `dir/name` and checks the file against
/// `SegmentWriter`'s bytes and `SegmentReader`. Returns whether the
/// file was written with `O_DIRECT`.
async fn check_mode(dir: &Path, name: &str, mode: IoMode, blocks: &[Block]) -> bool {
    let path = dir.join(name);
    let (expected, ref_extents) = reference(&dir.join(format!("{name}.ref")), blocks);
    let mut file = SegmentFile::create(&path, mode).await.unwrap();
    assert_eq!(
        (file.path(), file.name(), file.mode()),
        (&*path, name, mode)
    );
    let extents = append_all(&mut file, blocks).await;
    // Appends twice, with a sync between, still line up.
    file.sync().await.unwrap();
    let direct = file.is_direct();
    assert_eq!(file.len(), expected.len() as u64);
    assert_eq!(file.close().await.unwrap(), expected.len() as u64);
    let written = fs::read(&path).unwrap();
    assert_eq!(written.len(), expected.len(), "{mode:?}");
    if let Some(i) = written.iter().zip(&expected).position(|(a, b)| a != b) {
        panic!("{mode:?}: byte {i} differs from SegmentWriter's");
    }
    let reader = SegmentReader::open(&path).unwrap();
    for ((e, r), (_, _, _, p)) in extents.iter().zip(&ref_extents).zip(blocks) {
        assert_eq!(e.segment, name);
        assert_eq!(
            *e,
            Extent {
                segment: name.to_owned(),
                ..r.clone()
            }
        );
        assert_eq!(reader.read_block(e).unwrap(), &p[..]);
    }
    direct
}

const MIB: usize = 1 << 20;

#[test]
fn writes_what_segment_writer_writes_in_every_mode() {
    run(|| async {
        let dir = TempDir::new("modes");
        let sizes = [
            0,
            1,
            4068,
            4069,
            7,
            MIB + 3,
            100,
            20 * MIB,
            3 * 4096,
            BATCH_LEN - BLOCK_HEADER_LEN,
            0,
        ];
        let blocks = blocks(&sizes);
        let direct_works = match SegmentFile::create(&dir.join("probe"), IoMode::Direct).await {
            Ok(f) => {
                f.close().await.unwrap();
                true
            }
            Err(e) => {
                eprintln!("O_DIRECT unavailable in {}: {e}", dir.0.display());
                false
            }
        };
        if direct_works {
            assert!(check_mode(&dir.0, "seg-direct", IoMode::Direct, &blocks).await);
        }
        assert!(!check_mode(&dir.0, "seg-buffered", IoMode::Buffered, &blocks).await);
        let auto = check_mode(&dir.0, "seg-auto", IoMode::Auto, &blocks).await;
        assert_eq!(auto, direct_works);
    });
}

#[test]
fn many_small_blocks_cross_batches_and_the_write_behind_window() {
    run(|| async {
        let dir = TempDir::new("small");
        // 300 blocks of exactly 4096 bytes fill a batch (256 of them)
        // exactly; then random sizes up to 3 blocks each, and a few
        // larger ones to cut batches short.
        let mut sizes = vec![4068; 300];
        let mut x = 12345u32;
        for i in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            sizes.push(if i % 500 == 499 {
                BATCH_LEN + 1
            } else {
                (x >> 8) as usize % 12_000
            });
        }
        let blocks = blocks(&sizes);
        for (name, mode) in [("seg-auto", IoMode::Auto), ("seg-buf", IoMode::Buffered)] {
            check_mode(&dir.0, name, mode, &blocks).await;
        }
    });
}

#[test]
fn writes_stay_in_flight_up_to_the_window() {
    run(|| async {
        let dir = TempDir::new("window");
        for (mode, block, most) in [
            (IoMode::Buffered, 2 * MIB, MAX_IN_FLIGHT_WRITES),
            (IoMode::Buffered, 20 * MIB, MAX_IN_FLIGHT_BYTES / (20 * MIB)),
            (IoMode::Auto, 2 * MIB, MAX_IN_FLIGHT_WRITES),
        ] {
            let path = dir.join(&format!("seg-{mode:?}-{block}"));
            let mut file = SegmentFile::create(&path, mode).await.unwrap();
            let payload = vec![7u8; block];
            let range = KeyGroupRange::new(0, 1);
            let mut seen = 0;
            for _ in 0..12 {
                file.append_block(BlockKind::KeyedState, range, "s", &payload)
                    .await
                    .unwrap();
                seen = seen.max(file.in_flight.len());
                assert!(file.in_flight_bytes <= MAX_IN_FLIGHT_BYTES);
            }
            // Each append waited only for the oldest write.
            assert_eq!(seen, most, "{mode:?}, {block}-byte blocks");
            file.sync().await.unwrap();
            if file.is_direct() {
                // Buffers of finished writes are kept for reuse.
                assert_eq!(file.spare.len(), MAX_IN_FLIGHT_WRITES);
                assert!(file.spare.iter().all(|b| b.len() == block + 4096));
            } else {
                assert!(file.spare.is_empty());
            }
            let len = file.close().await.unwrap();
            assert_eq!(len, 12 * padded_block_len(block as u32));
            let reader = SegmentReader::open(&path).unwrap();
            assert_eq!(reader.scan().filter(|b| b.is_ok()).count(), 12);
        }
    });
}

#[test]
fn refused_first_direct_write_falls_back_in_auto_and_fails_in_direct() {
    run(|| async {
        let dir = TempDir::new("refused");
        if SegmentFile::create(&dir.join("probe"), IoMode::Direct)
            .await
            .is_err()
        {
            eprintln!(
                "O_DIRECT unavailable in {}: nothing to refuse",
                dir.0.display()
            );
            return;
        }
        // Small and large first blocks: a batch or a buffer of its own.
        for (i, first) in [10, 3 * MIB].into_iter().enumerate() {
            let blocks = blocks(&[first, 5000, 2 * MIB, 1]);
            for errno in [Errno::EINVAL, Errno::EOPNOTSUPP] {
                let name = format!("seg-{i}-{}", errno as i32);
                let path = dir.join(&name);
                let (expected, _) = reference(&dir.join(&format!("{name}.ref")), &blocks);
                let mut file = SegmentFile::create(&path, IoMode::Auto).await.unwrap();
                assert!(file.is_direct());
                assert_eq!(file.fallback(), None);
                file.refuse_first_direct_write = Some(errno as i32);
                let extents = append_all(&mut file, &blocks).await;
                file.sync().await.unwrap();
                assert!(!file.is_direct());
                let why = file.fallback().unwrap().to_owned();
                assert!(
                    why.contains("the first O_DIRECT write was refused"),
                    "{why}"
                );
                assert!(why.contains(&io::Error::from(errno).to_string()), "{why}");
                file.close().await.unwrap();
                assert!(fs::read(&path).unwrap() == expected, "{name}");
                let reader = SegmentReader::open(&path).unwrap();
                for (e, (_, _, _, p)) in extents.iter().zip(&blocks) {
                    assert_eq!(reader.read_block(e).unwrap(), &p[..]);
                }

                // Direct mode reports it, naming the file, and stops.
                let path = dir.join(&format!("{name}-direct"));
                let mut file = SegmentFile::create(&path, IoMode::Direct).await.unwrap();
                file.refuse_first_direct_write = Some(errno as i32);
                let (k, r, s, p) = &blocks[0];
                // A small block waits in its batch until a sync.
                let mut failed = file.append_block(*k, *r, s, p).await.map(|_| ());
                if failed.is_ok() {
                    failed = file.sync().await;
                }
                let msg = failed.unwrap_err().to_string();
                assert!(msg.contains(&path.display().to_string()), "{msg}");
                assert!(msg.contains("cannot write"), "{msg}");
                assert!(file.is_direct() && file.fallback().is_none());
                let again = file.append_block(*k, *r, s, p).await.unwrap_err();
                assert!(
                    again
                        .to_string()
                        .contains("an earlier write to this segment failed"),
                    "{again}"
                );
                assert!(file.sync().await.is_err());
            }
        }
    });
}

#[test]
fn tmpfs_falls_back_to_buffered() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("no /dev/shm: skipped");
        return;
    }
    let dir = TempDir::under(shm, "tmpfs");
    let root = dir.0.clone();
    run(move || async move {
        let blocks = blocks(&[3, MIB + 3, 0]);
        let direct = SegmentFile::create(&root.join("seg-direct"), IoMode::Direct).await;
        let msg = direct.unwrap_err().to_string();
        assert!(
            msg.contains(&root.join("seg-direct").display().to_string()),
            "{msg}"
        );
        assert!(msg.contains("does not do O_DIRECT"), "{msg}");
        let auto = SegmentFile::create(&root.join("probe"), IoMode::Auto).await;
        let auto = auto.unwrap();
        assert!(!auto.is_direct());
        assert!(auto.fallback().unwrap().contains("tmpfs"));
        auto.close().await.unwrap();
        assert!(!check_mode(&root, "seg-auto", IoMode::Auto, &blocks).await);
    });
}

#[test]
fn missing_directory_is_an_error_naming_the_path() {
    run(|| async {
        let dir = TempDir::new("missing");
        let path = dir.join("no-such-dir").join("seg-1");
        for mode in [IoMode::Direct, IoMode::Buffered, IoMode::Auto] {
            let err = SegmentFile::create(&path, mode).await.unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            match err {
                SnapshotError::Io {
                    op: "create segment",
                    path: p,
                    source,
                } => {
                    assert_eq!(p, path);
                    assert_eq!(source.kind(), io::ErrorKind::NotFound, "{mode:?}");
                }
                other => panic!("expected an I/O error, got {other:?}"),
            }
        }
    });
}

#[test]
fn an_existing_file_is_never_overwritten() {
    run(|| async {
        let dir = TempDir::new("exists");
        let path = dir.join("seg-1");
        fs::write(&path, b"precious").unwrap();
        for mode in [IoMode::Direct, IoMode::Buffered, IoMode::Auto] {
            let err = SegmentFile::create(&path, mode).await.unwrap_err();
            assert!(
                matches!(&err, SnapshotError::Io { source, .. }
                    if source.kind() == io::ErrorKind::AlreadyExists),
                "{mode:?}: {err}"
            );
        }
        assert_eq!(fs::read(&path).unwrap(), b"precious");
    });
}

#[test]
fn bad_blocks_are_refused_and_leave_the_file_usable() {
    run(|| async {
        let dir = TempDir::new("bad");
        let path = dir.join("seg-1");
        let mut file = SegmentFile::create(&path, IoMode::Auto).await.unwrap();
        let range = KeyGroupRange::new(0, 2);
        let long = "s".repeat(MAX_STATE_NAME_LEN + 1);
        let err = file
            .append_block(BlockKind::KeyedState, range, &long, b"x")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("256 bytes long, more than 255"), "{err}");
        let too_big = (MAX_BLOCK_LEN as usize) - BLOCK_HEADER_LEN + 1;
        let err = file
            .append_block_with(BlockKind::KeyedState, range, "s", too_big, |_| {
                unreachable!("no buffer for a refused block")
            })
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("payload of {too_big} bytes")),
            "{err}"
        );
        let name = "s".repeat(MAX_STATE_NAME_LEN);
        let e = file
            .append_block(BlockKind::KeyedState, range, &name, b"ok")
            .await
            .unwrap();
        assert_eq!((e.offset, e.length, e.state), (0, 4096, name));
        assert_eq!(file.close().await.unwrap(), 4096);
        assert_eq!(fs::metadata(&path).unwrap().len(), 4096);
    });
}

#[test]
fn an_unfinished_call_leaves_the_file_unusable() {
    run(|| async {
        let dir = TempDir::new("cancel");
        let path = dir.join("seg-1");
        let mut file = SegmentFile::create(&path, IoMode::Buffered).await.unwrap();
        let range = KeyGroupRange::new(0, 1);
        file.append_block(BlockKind::KeyedState, range, "s", &vec![1; 3 * MIB])
            .await
            .unwrap();
        // The write's task has not run yet, so the sync must wait.
        let polled = futures_lite::future::poll_once(file.sync()).await;
        assert!(polled.is_none(), "sync finished without waiting");
        for err in [
            file.append_block(BlockKind::KeyedState, range, "s", b"x")
                .await
                .unwrap_err(),
            file.sync().await.unwrap_err(),
        ] {
            let msg = err.to_string();
            assert!(msg.contains("dropped before it finished"), "{msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
        }
    });
}

#[test]
fn an_empty_segment_is_an_empty_file() {
    run(|| async {
        let dir = TempDir::new("empty");
        for (name, mode) in [("a", IoMode::Auto), ("b", IoMode::Buffered)] {
            let path = dir.join(name);
            let file = SegmentFile::create(&path, mode).await.unwrap();
            assert!(file.is_empty());
            assert_eq!(file.close().await.unwrap(), 0);
            assert_eq!(fs::metadata(&path).unwrap().len(), 0);
        }
    });
}
