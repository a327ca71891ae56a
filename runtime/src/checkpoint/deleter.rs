//! Removing the checkpoints retention let go of, a slice at a time, on a
//! thread of its own.
//!
//! Deleting a subsumed checkpoint is mostly kernel time: unlinking a
//! segment file frees its pages from the page cache in one go, and on a
//! machine with no spare core that time is taken from a worker whose
//! records then wait (bench/RESULTS.md, "Retention deletes a slice at a
//! time": the effect on W3's p99.99 is within that host's noise). Retention therefore only renames a checkpoint
//! it lets go of out of the directory's listing
//! ([`CheckpointStorage::retire_for_retention`], one cheap rename), and the
//! [`Deleter`] empties it: each file is shortened a slice at a time with a
//! pause between slices, so that a worker sharing the core waits at most
//! one slice's work at a time, then unlinked. A retired directory left by
//! a crash is found by its name and deleted by the next run's deleter.
//!
//! [`CheckpointStorage::retire_for_retention`]: crate::checkpoint::storage::CheckpointStorage::retire_for_retention

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::core::log::CHECKPOINT;

/// Bytes a file is shortened by at a time.
const SLICE: u64 = 256 << 10;

/// The shortest pause after a slice; otherwise the pause is as long as
/// the slice took, so that deleting takes at most about half of a core
/// whose worker waits (and still frees a few GB/s: a 1 ms pause per slice
/// would cap it at 256 MB/s, slower than a large state's checkpoints
/// come).
const MIN_PAUSE: Duration = Duration::from_micros(100);

/// Deletes retired checkpoint directories in the background; dropping it
/// waits for every directory handed to it (a run ends with its retention
/// done, as before).
pub struct Deleter {
    queue: Option<Sender<PathBuf>>,
    thread: Option<JoinHandle<()>>,
}

impl Deleter {
    /// A deleter with its thread (`weir-retention`); if the thread cannot
    /// be started, directories are deleted at once by the caller.
    pub fn new() -> Self {
        let (queue, dirs) = channel::<PathBuf>();
        let thread = std::thread::Builder::new()
            .name("weir-retention".into())
            .spawn(move || {
                for dir in dirs {
                    if let Err(e) = remove_sliced(&dir) {
                        tracing::warn!(
                            target: CHECKPOINT,
                            "cannot delete retired checkpoint {}: {e}",
                            dir.display()
                        );
                    }
                }
            });
        match thread {
            Ok(thread) => Self {
                queue: Some(queue),
                thread: Some(thread),
            },
            Err(e) => {
                tracing::warn!(
                    target: CHECKPOINT,
                    "cannot start the retention thread ({e}): old checkpoints are deleted at once"
                );
                Self {
                    queue: None,
                    thread: None,
                }
            }
        }
    }

    /// Deletes `dir` (a retired checkpoint's directory) in the background.
    pub fn delete(&self, dir: PathBuf) {
        let dir = match &self.queue {
            Some(queue) => match queue.send(dir) {
                Ok(()) => return,
                Err(unsent) => unsent.0,
            },
            None => dir,
        };
        if let Err(e) = remove_sliced(&dir) {
            tracing::warn!(target: CHECKPOINT, "cannot delete retired checkpoint {}: {e}", dir.display());
        }
    }
}

impl Default for Deleter {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Deleter {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Removes `dir` and everything in it, each file shortened [`SLICE`]
/// bytes at a time with a pause after each slice as long as it took (at
/// least [`MIN_PAUSE`]) before it is unlinked.
/// A directory already gone is no error.
pub fn remove_sliced(dir: &Path) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            remove_sliced(&path)?;
            continue;
        }
        shrink(&path)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Shortens the file at `path` to nothing, [`SLICE`] bytes at a time.
fn shrink(path: &Path) -> io::Result<()> {
    let file = match fs::OpenOptions::new().write(true).open(path) {
        Ok(f) => f,
        // Not a regular file that can be opened for writing (a symlink to
        // nowhere, a file without write permission): unlinked whole.
        Err(_) => return Ok(()),
    };
    let mut len = file.metadata()?.len();
    while len > SLICE {
        len -= SLICE;
        let began = Instant::now();
        file.set_len(len)?;
        std::thread::sleep(began.elapsed().max(MIN_PAUSE));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_directory_is_removed_whole_and_a_missing_one_is_no_error() {
        let dir = std::env::temp_dir().join(format!("weir-deleter-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("nested")).unwrap();
        fs::write(dir.join("big.seg"), vec![7u8; (SLICE * 3 + 5) as usize]).unwrap();
        fs::write(dir.join("small"), b"x").unwrap();
        fs::write(dir.join("nested").join("inner"), vec![1u8; 10]).unwrap();
        {
            let deleter = Deleter::new();
            deleter.delete(dir.clone());
            // Dropping waits for it.
        }
        assert!(!dir.exists());
        remove_sliced(&dir).unwrap();
    }
}
