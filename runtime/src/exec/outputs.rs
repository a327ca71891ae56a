//! The job's declared output directories: the run owns them (a lock), they
//! record which job writes them (`.weir-lineage`, a hidden file, so never
//! committed output), and a fresh start refuses one that holds another
//! job's committed output.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use weir_state::snapshot::{write_atomically, SnapshotError};

use crate::checkpoint::lineage::Fingerprint;
use crate::connectors::file_sink::{committed_parts, ABANDONED_DIR};
use crate::core::paths::within;
use crate::exec::error::{JobError, Result};
use crate::exec::identity::RunIdentity;
use crate::exec::lock::{expect_kind, lock_dir, DirLock};

/// Name of the lineage marker in an output directory.
pub const LINEAGE_FILE: &str = ".weir-lineage";

/// What an output directory records of the job that writes it.
#[derive(Debug, Serialize, Deserialize)]
struct OutputLineage {
    /// The job id of the run that marked it (the first of its job).
    job_id: String,
    /// The fingerprint of that job.
    fingerprint: Vec<(String, String)>,
}

/// Creates every output directory of `run` and takes it for this run,
/// once: two outputs naming one directory two ways (a symbolic link to it:
/// two SQL tables writing one directory) share its lock, where the second
/// was refused as "in use" by this very process.
pub fn lock_outputs(run: &RunIdentity) -> Result<Vec<DirLock>> {
    let mut locked: Vec<std::path::PathBuf> = Vec::new();
    run.outputs
        .iter()
        .filter(|dir| {
            let at = crate::core::paths::resolved(dir);
            let first = !locked.contains(&at);
            locked.push(at);
            first
        })
        .map(|dir| {
            if dir.exists() && !dir.is_dir() {
                return Err(JobError::Directory {
                    what: "output directory",
                    dir: dir.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        "it is a file, not a directory",
                    ),
                });
            }
            std::fs::create_dir_all(dir).map_err(|source| JobError::Directory {
                what: "output directory",
                dir: dir.clone(),
                source,
            })?;
            lock_dir(dir, "output directory")
        })
        .collect()
}

/// Checks, before anything is changed, that what weir keeps in `run`'s
/// output directories is of the right kind: `.weir-lineage` a file,
/// `.abandoned` (where rolled-back parts go) a directory. Either of the
/// wrong kind made the run fail only after it had started its timeline
/// (the lineage) or while a sink rolled back its parts (`.abandoned`).
pub fn check_output_paths(run: &RunIdentity) -> Result<()> {
    for dir in &run.outputs {
        expect_kind(
            &dir.join(LINEAGE_FILE),
            "the record of which job writes the output directory",
            false,
        )?;
        expect_kind(
            &dir.join(ABANDONED_DIR),
            "where rolled-back committed output is moved",
            true,
        )?;
    }
    Ok(())
}

/// Checks that `state.savepoints.dir` (`savepoints`) is not one of `run`'s
/// output directories nor inside one: a stop's `savepoint-*` directory
/// would land among the committed output, where whatever reads the output
/// finds weir's segments.
pub fn check_savepoints_dir(run: &RunIdentity, savepoints: &Path) -> Result<()> {
    for dir in &run.outputs {
        if let Some(same) = within(savepoints, dir) {
            let is = if same { "" } else { "inside " };
            return Err(JobError::InvalidJob(format!(
                "state.savepoints.dir {} is {is}the job's output directory {}: a stop's \
                 savepoint-* directory would land among its committed output; give savepoints a \
                 directory of their own",
                savepoints.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Checks that `state.savepoints.dir` (`savepoints`) is not a directory
/// the job's file sources read (`inputs`) nor inside one: a source that
/// lists it again, or the next run's, would read a stop's savepoint files
/// as input.
pub fn check_savepoints_outside_inputs(inputs: &[PathBuf], savepoints: &Path) -> Result<()> {
    for input in inputs {
        if let Some(same) = within(savepoints, input) {
            let is = if same { "" } else { "inside " };
            return Err(JobError::InvalidJob(format!(
                "state.savepoints.dir {} is {is}the job's input {}: its file source would read a \
                 stop's savepoint files as input; give savepoints a directory of their own",
                savepoints.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// Checks, before anything is changed, that `run` may write its output
/// directories: one that records another job's fingerprint is refused;
/// on a `fresh` start, so is one that holds committed output without a
/// record of who wrote it.
pub fn check_outputs(run: &RunIdentity, fresh: bool) -> Result<()> {
    for dir in &run.outputs {
        match read_lineage(dir)? {
            Some(stored) => {
                let stored = Fingerprint::new(stored.fingerprint);
                if let Some(what) = run.fingerprint.mismatch_with(&stored, LINEAGE_FILE) {
                    // Say what is there: a run of the other job that
                    // committed nothing (killed before its first
                    // checkpoint) still marked the directory as its own.
                    let parts = output_parts(dir)?;
                    let held = match parts {
                        0 => "no committed part file yet".to_owned(),
                        1 => "1 committed part file".to_owned(),
                        n => format!("{n} committed part files"),
                    };
                    return Err(JobError::ForeignOutput {
                        dir: dir.clone(),
                        what: format!("{what}; {held}"),
                    });
                }
            }
            None if fresh => {
                let parts = output_parts(dir)?;
                if parts > 0 {
                    return Err(JobError::ForeignOutput {
                        dir: dir.clone(),
                        what: format!(
                            "{parts} committed part file{} and no {LINEAGE_FILE} saying which \
                             job wrote {}",
                            if parts == 1 { "" } else { "s" },
                            if parts == 1 { "it" } else { "them" },
                        ),
                    });
                }
            }
            None => {}
        }
    }
    Ok(())
}

/// The committed part files in output directory `dir`.
fn output_parts(dir: &Path) -> Result<usize> {
    committed_parts(dir).map_err(|source| JobError::Directory {
        what: "output directory",
        dir: dir.to_path_buf(),
        source,
    })
}

/// Checks, before anything is changed, that a run told to resume
/// (`--restore latest`) that found no checkpoint in `checkpoints` is not
/// about to roll back committed output of its own job: a fresh start moves
/// every part aside and writes it all again, which the user did not ask
/// for ([`JobError::NothingToResume`]). Runs after [`check_outputs`], so
/// another job's output is named as such.
pub fn check_nothing_to_resume(run: &RunIdentity, checkpoints: &Path) -> Result<()> {
    for dir in &run.outputs {
        let parts = output_parts(dir)?;
        if parts > 0 {
            return Err(JobError::NothingToResume {
                checkpoints: checkpoints.to_path_buf(),
                dir: dir.clone(),
                parts,
            });
        }
    }
    Ok(())
}

/// Checks, before anything is changed, that the output directories still
/// hold what the restored snapshot (checkpoint or savepoint `restored`,
/// taken at `taken_ms`) committed: a committed part of transaction `<=
/// restored` moved to `.abandoned/<ms>-<pid>/` *after* the snapshot was
/// taken was rolled back by a later run that restored an older snapshot
/// (the snapshot restored now is of an abandoned timeline). The file sink
/// keeps the parts `<= restored` it finds and cannot bring those back, so
/// restoring would lose them, or duplicate them with another timeline's
/// parts of the same ids: refused, naming the file.
pub fn check_restored_outputs(run: &RunIdentity, restored: u64, taken_ms: u64) -> Result<()> {
    for dir in &run.outputs {
        let aside_root = dir.join(ABANDONED_DIR);
        let Ok(asides) = std::fs::read_dir(&aside_root) else {
            continue;
        };
        for aside in asides.flatten() {
            let moved_ms = aside
                .file_name()
                .to_str()
                .and_then(|n| n.split('-').next())
                .and_then(|ms| ms.parse::<u64>().ok());
            if moved_ms.is_none_or(|ms| ms <= taken_ms) {
                continue;
            }
            let Ok(parts) = std::fs::read_dir(aside.path()) else {
                continue;
            };
            for part in parts.flatten() {
                let name = part.file_name();
                let txn = name
                    .to_str()
                    .filter(|n| n.starts_with("part-"))
                    .and_then(|n| n.rsplit('-').next())
                    .and_then(|id| id.parse::<u64>().ok());
                if let Some(txn) = txn.filter(|&t| t <= restored) {
                    return Err(JobError::OutputRolledBack {
                        dir: dir.clone(),
                        file: part.path(),
                        transaction: txn,
                        restored,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Records `run`'s job as the writer of its output directories, where
/// they do not say so already (a directory is marked once: later runs of
/// the same job leave it as it is).
pub fn mark_outputs(run: &RunIdentity) -> Result<()> {
    let json = serde_json::to_vec_pretty(&OutputLineage {
        job_id: run.job_id.clone(),
        fingerprint: run.fingerprint.entries().to_vec(),
    })
    .expect("an output lineage serializes");
    for dir in &run.outputs {
        let marked =
            read_lineage(dir)?.is_some_and(|l| Fingerprint::new(l.fingerprint) == run.fingerprint);
        if marked {
            continue;
        }
        write_atomically(dir, LINEAGE_FILE, &json).map_err(|e| JobError::Directory {
            what: "output directory",
            dir: dir.clone(),
            source: match e {
                SnapshotError::Io { source, .. } => source,
                other => std::io::Error::other(other.to_string()),
            },
        })?;
    }
    Ok(())
}

fn read_lineage(dir: &Path) -> Result<Option<OutputLineage>> {
    let path = dir.join(LINEAGE_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| JobError::ForeignOutput {
                    dir: dir.to_path_buf(),
                    what: format!("{} is not a lineage weir wrote: {e}", path.display()),
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(JobError::Directory {
            what: "output directory",
            dir: dir.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn run(out: &Path, k: &str) -> RunIdentity {
        RunIdentity {
            job_id: crate::checkpoint::lineage::new_job_id(),
            fingerprint: Fingerprint::new([
                ("job".to_owned(), "w1".to_owned()),
                ("parameter keys".to_owned(), k.to_owned()),
            ]),
            outputs: vec![out.to_path_buf()],
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weir-outputs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_fresh_start_refuses_committed_output_of_another_job() {
        let out = temp_dir("other");
        let a = run(&out, "100");
        let locks = lock_outputs(&a).unwrap();
        check_outputs(&a, true).unwrap();
        mark_outputs(&a).unwrap();
        std::fs::write(out.join("part-0000-0000000001"), b"1,1,1\n").unwrap();
        drop(locks);

        // The same job again (a new run id): allowed, fresh or restored,
        // and the mark stays as it is.
        let again = run(&out, "100");
        check_outputs(&again, true).unwrap();
        check_outputs(&again, false).unwrap();
        let mark = std::fs::read(out.join(LINEAGE_FILE)).unwrap();
        mark_outputs(&again).unwrap();
        assert_eq!(std::fs::read(out.join(LINEAGE_FILE)).unwrap(), mark);
        // Another K: refused either way, naming the directory and what
        // differs.
        let other = run(&out, "7");
        for fresh in [true, false] {
            let e = check_outputs(&other, fresh).unwrap_err();
            assert!(matches!(e, JobError::ForeignOutput { .. }), "{e:?}");
            let text = e.to_string();
            assert!(text.contains(&out.display().to_string()), "{text}");
            assert!(text.contains("keys") && text.contains('7'), "{text}");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn committed_output_without_a_record_is_refused_on_a_fresh_start() {
        let out = temp_dir("unmarked");
        let a = run(&out, "100");
        check_outputs(&a, true).unwrap();
        std::fs::write(out.join("notes.txt"), b"not output").unwrap();
        check_outputs(&a, true).unwrap();
        std::fs::write(out.join("part-0001-0000000004"), b"1,1,1\n").unwrap();
        let e = check_outputs(&a, true).unwrap_err().to_string();
        assert!(e.contains("1 committed part file and no"), "{e}");
        // Restoring a checkpoint: its state says what the output holds.
        check_outputs(&a, false).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// Probe 13: a run of another job killed before its first checkpoint
    /// committed nothing but marked the directory; the refusal said the
    /// directory "holds committed output" and that the other values were
    /// "in the checkpoint". It names the lineage file and what is there.
    #[test]
    fn another_jobs_mark_without_committed_output_is_named_as_such() {
        let out = temp_dir("marked-only");
        let a = run(&out, "100");
        check_outputs(&a, true).unwrap();
        mark_outputs(&a).unwrap();
        std::fs::write(out.join(".inprogress-0000-x.0"), b"1,1,1\n").unwrap();
        let other = run(&out, "7");
        let e = check_outputs(&other, true).unwrap_err().to_string();
        assert!(!e.contains("holds committed output"), "{e}");
        assert!(!e.contains("checkpoint"), "{e}");
        assert!(
            e.contains(&format!("100 in {LINEAGE_FILE}, 7 in this job")),
            "{e}"
        );
        assert!(e.contains("no committed part file yet"), "{e}");
        std::fs::write(out.join("part-0000-0000000001"), b"1,1,1\n").unwrap();
        let e = check_outputs(&other, true).unwrap_err().to_string();
        assert!(e.contains("; 1 committed part file"), "{e}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// Probe 13: a part `<=` the restored id moved aside after the
    /// snapshot was taken means the snapshot's output was rolled back.
    #[test]
    fn output_rolled_back_after_the_snapshot_is_refused() {
        let out = temp_dir("rolled-back");
        let a = run(&out, "100");
        check_restored_outputs(&a, 5, 1_000).unwrap();
        let early = out.join(ABANDONED_DIR).join("900-1");
        std::fs::create_dir_all(&early).unwrap();
        std::fs::write(early.join("part-w-0000-0000000003"), b"x").unwrap();
        // Moved before the snapshot was taken (a fresh start before it).
        check_restored_outputs(&a, 5, 1_000).unwrap();
        let late = out.join(ABANDONED_DIR).join("2000-1");
        std::fs::create_dir_all(&late).unwrap();
        std::fs::write(late.join("part-w-0000-0000000006"), b"x").unwrap();
        std::fs::write(late.join(".pending-w-0000-0000000004"), b"x").unwrap();
        // Newer than the snapshot (a fallback past a corrupt checkpoint).
        check_restored_outputs(&a, 5, 1_000).unwrap();
        std::fs::write(late.join("part-w-0001-0000000005"), b"x").unwrap();
        let e = check_restored_outputs(&a, 5, 1_000).unwrap_err();
        assert!(matches!(e, JobError::OutputRolledBack { .. }), "{e:?}");
        assert!(!e.retryable(), "{e}");
        assert!(e.to_string().contains("part-w-0001-0000000005"), "{e}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_output_that_is_a_file_or_a_damaged_record_is_named() {
        let root = temp_dir("file");
        let file = root.join("out");
        std::fs::write(&file, b"x").unwrap();
        let e = lock_outputs(&run(&file, "1")).unwrap_err().to_string();
        assert!(e.contains(&file.display().to_string()), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"x");

        let out = root.join("damaged");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(LINEAGE_FILE), b"{").unwrap();
        let e = check_outputs(&run(&out, "1"), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains(LINEAGE_FILE), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
