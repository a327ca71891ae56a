//! Exclusive ownership of a directory for the life of a run: an `flock` on
//! `<dir>/.weir-lock`, which holds the owner's process id so that a second
//! process is told who holds it. The kernel releases the lock when the
//! owner exits, however it exits; a stale lock file of a dead process is
//! simply locked again. Within one process, a directory is also claimed in
//! a process-wide set, since `flock` does not exclude two open files of one
//! process from each other in the way a second run needs. Here too is
//! [`expect_kind`]: the check that a path weir keeps in such a directory
//! (the lock file, `.weir-lineage`, `abandoned/`, ...) is of its kind.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use nix::errno::Errno;
use nix::fcntl::{flock, FlockArg};

use crate::exec::error::{JobError, Result};

/// Name of the lock file in a locked directory.
pub const LOCK_FILE: &str = ".weir-lock";

/// Directories this process holds, and as what.
fn held() -> &'static Mutex<HashMap<PathBuf, &'static str>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, &'static str>>> = OnceLock::new();
    HELD.get_or_init(Mutex::default)
}

/// An exclusively held directory; released when dropped (or when the
/// process ends).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    key: PathBuf,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        held()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

/// `path`, if it exists, is a directory (`dir`) or a regular file (not
/// `dir`), else [`JobError::WrongKind`] naming it and `what` weir keeps
/// there. Links are followed.
pub(crate) fn expect_kind(path: &Path, what: &'static str, dir: bool) -> Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(JobError::Directory {
                what: "path weir keeps",
                dir: path.to_path_buf(),
                source,
            })
        }
    };
    let is = if meta.is_dir() {
        "a directory"
    } else if meta.is_file() {
        "a file"
    } else {
        "neither a file nor a directory"
    };
    let should_be = if dir { "a directory" } else { "a file" };
    if is == should_be {
        return Ok(());
    }
    Err(JobError::WrongKind {
        path: path.to_path_buf(),
        what,
        should_be,
        is,
    })
}

/// Takes `dir` (an existing directory; `what` names it in errors, e.g.
/// `"state.checkpoints.dir"`) for this run, or fails naming the process
/// that holds it.
pub fn lock_dir(dir: &Path, what: &'static str) -> Result<DirLock> {
    let key = dir.canonicalize().map_err(|source| JobError::Directory {
        what,
        dir: dir.to_path_buf(),
        source,
    })?;
    let lock = key.join(LOCK_FILE);
    {
        let mut held = held().lock().unwrap_or_else(|e| e.into_inner());
        match held.get(&key) {
            // One job naming one directory for two roles (its checkpoints
            // and its output): "in use by process <its own pid>" sent the
            // user looking for another run.
            Some(&other) if other != what => {
                return Err(JobError::SameDirectory {
                    what,
                    dir: dir.to_path_buf(),
                    other,
                })
            }
            Some(_) => {
                return Err(JobError::Locked {
                    what,
                    dir: dir.to_path_buf(),
                    lock,
                    holder: Some(std::process::id()),
                })
            }
            None => {
                held.insert(key.clone(), what);
            }
        }
    }
    let taken = (|| {
        // A directory in its place failed as "<dir>: Is a directory".
        expect_kind(&lock, "the lock file of the directory", false)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(|source| JobError::Directory {
                what,
                dir: dir.to_path_buf(),
                source,
            })?;
        match flock(file.as_raw_fd(), FlockArg::LockExclusiveNonblock) {
            Ok(()) => {}
            Err(Errno::EWOULDBLOCK) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(JobError::Locked {
                    what,
                    dir: dir.to_path_buf(),
                    lock: lock.clone(),
                    holder: text.trim().parse().ok(),
                });
            }
            Err(e) => {
                return Err(JobError::Directory {
                    what,
                    dir: dir.to_path_buf(),
                    source: e.into(),
                })
            }
        }
        // Ours: say so to whoever finds it locked.
        let pid = std::process::id().to_string();
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(pid.as_bytes()));
        written.map_err(|source| JobError::Directory {
            what,
            dir: dir.to_path_buf(),
            source,
        })?;
        Ok(file)
    })();
    match taken {
        Ok(file) => Ok(DirLock { _file: file, key }),
        Err(e) => {
            held()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weir-lock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_held_directory_is_refused_naming_the_holder_until_released() {
        let dir = temp_dir("held");
        let first = lock_dir(&dir, "output directory").unwrap();
        let pid = std::fs::read_to_string(dir.join(LOCK_FILE)).unwrap();
        assert_eq!(pid, std::process::id().to_string());
        // The same directory named another way is the same directory.
        let other_name = dir.join(".").join("..").join(dir.file_name().unwrap());
        match lock_dir(&other_name, "output directory") {
            Err(e @ JobError::Locked { holder, .. }) => {
                assert_eq!(holder, Some(std::process::id()));
                let text = e.to_string();
                assert!(text.contains("output directory"), "{text}");
                assert!(text.contains(&std::process::id().to_string()), "{text}");
                assert!(text.contains(LOCK_FILE), "{text}");
            }
            other => panic!("expected the directory to be in use, got {other:?}"),
        }
        drop(first);
        // Released: a stale lock file is simply locked again.
        assert!(dir.join(LOCK_FILE).is_file());
        let again = lock_dir(&dir, "output directory").unwrap();
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Probe 13: `--output D --set state.checkpoints.dir=D` was refused
    /// as "in use by process <its own pid> ...: wait for that run to end".
    #[test]
    fn one_directory_for_two_roles_is_named_as_such() {
        let dir = temp_dir("two-roles");
        let first = lock_dir(&dir, "state.checkpoints.dir").unwrap();
        let e = lock_dir(&dir, "output directory").unwrap_err();
        assert!(matches!(e, JobError::SameDirectory { .. }), "{e:?}");
        assert!(!e.retryable(), "{e}");
        let text = e.to_string();
        assert!(text.contains("state.checkpoints.dir"), "{text}");
        assert!(text.contains("output directory"), "{text}");
        assert!(!text.contains("in use by"), "{text}");
        drop(first);
        drop(lock_dir(&dir, "output directory").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let dir = temp_dir("missing").join("not-there");
        let e = lock_dir(&dir, "state.checkpoints.dir").unwrap_err();
        assert!(matches!(e, JobError::Directory { .. }), "{e:?}");
        assert!(e.to_string().contains("not-there"), "{e}");
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
