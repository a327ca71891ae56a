//! Measures how fast a [`SegmentFile`] writes: `MiB` mebibytes of blocks
//! (2 MiB by default) to a new segment in `DIR`, in each [`IoMode`], timed
//! from creating the file to the end of its closing `fdatasync`.
//!
//! ```text
//! cargo run --release -p weir-runtime --example segment_write -- DIR [MiB] [BLOCK_KiB] [IO_MEMORY_MiB]
//! ```
//!
//! `IO_MEMORY_MiB` (default 1, as the workers use) sizes the executor's
//! pool of io_uring-registered buffers; buffers beyond it come from the
//! heap.
//!
//! Each mode runs twice: appending a copy of a prepared payload
//! (`append_block`) and writing the payload in place (`append_block_with`).
//! Compare with `dd if=/dev/zero of=DIR/x bs=2M count=256 oflag=direct
//! conv=fsync` on the same file system (not a tmpfs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use weir_runtime::checkpoint::segment_file::{IoMode, SegmentFile};
use weir_state::snapshot::{BlockKind, BLOCK_HEADER_LEN};
use weir_state::KeyGroupRange;

/// Parsed command line.
struct Args {
    dir: PathBuf,
    mib: usize,
    block_kib: usize,
    io_memory_mib: usize,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: segment_write DIR [MiB (512)] [BLOCK_KiB (2048)] [IO_MEMORY_MiB (1)]";
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or(usage)?);
    let number = |s: Option<String>, default: usize, what: &str| match s {
        None => Ok(default),
        Some(s) => s.parse::<usize>().ok().filter(|&n| n > 0).ok_or(format!(
            "{what} must be a positive integer, not {s:?}; {usage}"
        )),
    };
    let mib = number(args.next(), 512, "MiB")?;
    let block_kib = number(args.next(), 2048, "BLOCK_KiB")?;
    let io_memory_mib = number(args.next(), 1, "IO_MEMORY_MiB")?;
    Ok(Args {
        dir,
        mib,
        block_kib,
        io_memory_mib,
    })
}

/// Writes `total` bytes of blocks of `block` bytes (payload made so the
/// padded block is exactly `block` bytes) to `path`; returns seconds taken,
/// whether `O_DIRECT` was used and why not.
async fn write_segment(
    path: &Path,
    mode: IoMode,
    in_place: bool,
    total: usize,
    block: usize,
) -> Result<(f64, bool, Option<String>), String> {
    let payload_len = block - BLOCK_HEADER_LEN;
    let payload: Vec<u8> = (0..payload_len).map(|i| (i % 251) as u8).collect();
    let range = KeyGroupRange::new(0, 128);
    let start = Instant::now();
    let mut file = SegmentFile::create(path, mode)
        .await
        .map_err(|e| e.to_string())?;
    for i in 0..total / block {
        let appended = if in_place {
            file.append_block_with(BlockKind::KeyedState, range, "bench", payload_len, |p| {
                p.fill(i as u8)
            })
            .await
        } else {
            file.append_block(BlockKind::KeyedState, range, "bench", &payload)
                .await
        };
        appended.map_err(|e| e.to_string())?;
    }
    let (direct, fallback) = (file.is_direct(), file.fallback().map(str::to_owned));
    let len = file.close().await.map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(len as usize, total / block * block);
    Ok((secs, direct, fallback))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let block = args.block_kib * 1024;
    let total = args.mib * 1024 * 1024 / block * block;
    if block <= BLOCK_HEADER_LEN || total == 0 {
        eprintln!("blocks must be larger than the header and fit at least once in the total");
        return ExitCode::from(2);
    }
    let result = glommio::LocalExecutorBuilder::default()
        .io_memory(args.io_memory_mib << 20)
        .spawn(move || async move {
            println!(
                "{} MiB in {} KiB blocks to {} (io_memory {} MiB)",
                total >> 20,
                block >> 10,
                args.dir.display(),
                args.io_memory_mib
            );
            let mut failed = false;
            for mode in [IoMode::Direct, IoMode::Buffered, IoMode::Auto] {
                let mode_name = format!("{mode:?}");
                for in_place in [false, true] {
                    let path = args.dir.join(format!("weir-segment-write-{mode:?}"));
                    let _ = std::fs::remove_file(&path);
                    let how = if in_place { "in place" } else { "copy" };
                    match write_segment(&path, mode, in_place, total, block).await {
                        Ok((secs, direct, fallback)) => {
                            let mb_s = total as f64 / secs / 1e6;
                            let note = match fallback {
                                Some(why) => format!(" (fell back: {why})"),
                                None if direct => " (O_DIRECT)".to_owned(),
                                None => String::new(),
                            };
                            println!(
                                "{mode_name:>8} {how:>8}: {secs:6.3} s, {mb_s:7.1} MB/s{note}"
                            );
                        }
                        Err(e) => {
                            println!("{mode_name:>8} {how:>8}: failed: {e}");
                            failed = true;
                        }
                    }
                    let _ = std::fs::remove_file(&path);
                }
            }
            failed
        })
        .and_then(|h| h.join());
    match result {
        Ok(false) => ExitCode::SUCCESS,
        Ok(true) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cannot run the glommio executor: {e}");
            ExitCode::FAILURE
        }
    }
}
