//! Choosing the checkpoint a run restores, before anything is changed: an
//! explicit path (never replaced by another checkpoint), or the newest
//! complete, verified checkpoint of the directory's current timeline; in
//! either case one whose state means what this job's does. Then starting
//! the run's timeline from it, which abandons every newer checkpoint.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::checkpoint::restore::{find_latest_allowing, RestoredCheckpoint};
use crate::checkpoint::storage::CheckpointStorage;
use crate::core::log::RESTORE;
use crate::core::paths::resolved;
use crate::exec::error::{JobError, Result};
use crate::exec::identity::RunIdentity;
use crate::exec::options::RestoreFrom;
use weir_state::snapshot::SnapshotKind;

/// A checkpoint chosen for restore, and how long finding and verifying it
/// took.
pub(crate) type Chosen = Option<(Arc<RestoredCheckpoint>, Duration)>;

/// What the restore of a run needs to know: the job, the checkpoint
/// directory (if checkpointing is on) and the run's identity.
pub(crate) struct RestoreContext<'a> {
    /// The job's name.
    pub job_name: &'a str,
    /// The job's max parallelism.
    pub max_parallelism: u32,
    /// The checkpoint directory.
    pub storage: Option<&'a CheckpointStorage>,
    /// This run.
    pub run: &'a RunIdentity,
    /// `--allow-non-restored-state`.
    pub allow_non_restored_state: bool,
}

impl RestoreContext<'_> {
    /// Finds the checkpoint `from` names, verifies it and checks that it
    /// fits the job; with `below`, only checkpoints older than that one
    /// (after it turned out unusable while loading). Changes nothing.
    ///
    /// - `Path`: that checkpoint or an error saying why not: never
    ///   another.
    /// - `Latest`: the newest usable checkpoint of the current timeline;
    ///   `None` if the directory has none at all (the caller decides
    ///   whether that is a fresh start); an error if it
    ///   has some but none is usable, or if the newest that is sound
    ///   belongs to another job.
    pub(crate) fn choose(&self, from: &RestoreFrom, below: Option<u64>) -> Result<Chosen> {
        let started = Instant::now();
        match from {
            RestoreFrom::Nothing => Ok(None),
            RestoreFrom::Path(path) => {
                let opened = RestoredCheckpoint::open(path, self.job_name, self.max_parallelism)
                    .and_then(|r| {
                        r.check_fits_allowing(&self.run.fingerprint, self.allow_non_restored_state)
                            .map(|skipped| (r, skipped))
                    })
                    .and_then(|(r, skipped)| r.verify().map(|()| (r, skipped)));
                let (r, skipped) = opened.map_err(|e| JobError::Restore {
                    path: path.clone(),
                    source: Box::new(e),
                })?;
                log_restoring(&r);
                log_skipped(&r, &skipped);
                Ok(Some((Arc::new(r), started.elapsed())))
            }
            RestoreFrom::Latest => {
                let Some(storage) = self.storage else {
                    return Err(JobError::RestoreLatestWithoutStorage);
                };
                let mut skipped = Vec::new();
                let mut below = below;
                loop {
                    let search = find_latest_allowing(
                        storage,
                        self.job_name,
                        self.max_parallelism,
                        &self.run.fingerprint,
                        below,
                        self.allow_non_restored_state,
                    )?
                    .map_err(|e| JobError::Restore {
                        path: storage.root().to_path_buf(),
                        source: Box::new(e),
                    })?;
                    skipped.extend(search.skipped);
                    let Some(r) = search.found else { break };
                    // Every block, before anything is changed: a corrupt
                    // one found while loading would come after the sinks
                    // rolled back their output.
                    match r.verify() {
                        Ok(()) => {
                            for (id, why) in &skipped {
                                log_unusable(*id, why);
                            }
                            log_restoring(&r);
                            let skipped = r
                                .check_fits_allowing(&self.run.fingerprint, true)
                                .unwrap_or_default();
                            log_skipped(&r, &skipped);
                            return Ok(Some((Arc::new(r), started.elapsed())));
                        }
                        Err(why) => {
                            below = Some(r.id());
                            skipped.push((r.id(), why));
                        }
                    }
                }
                if !skipped.is_empty() || below.is_some() {
                    return Err(JobError::AllUnusable {
                        dir: storage.root().to_path_buf(),
                        reasons: skipped
                            .iter()
                            .map(|(id, why)| (*id, why.to_string()))
                            .collect(),
                    });
                }
                // No checkpoint yet since the latest run started from a
                // snapshot kept elsewhere (a savepoint): resume from that
                // one, as Flink resumes a job from the savepoint it was
                // started from.
                match storage.timeline()?.and_then(|t| t.started_from_dir) {
                    Some(dir) => {
                        tracing::info!(
                            target: RESTORE,
                            "no checkpoint in {} since its latest run started from {}: \
                             resuming from that",
                            storage.root().display(),
                            dir.display()
                        );
                        self.choose(&RestoreFrom::Path(dir), None)
                    }
                    None => Ok(None),
                }
            }
        }
    }

    /// Starts this run's timeline in the checkpoint directory from
    /// `chosen` (see [`CheckpointStorage::start_timeline`]): a checkpoint
    /// of the directory abandons every newer one; one from elsewhere, a
    /// savepoint (wherever it is: never part of a timeline, restored in
    /// Flink's no-claim mode) or a fresh start all of them. Logs what it
    /// abandoned.
    pub(crate) fn start_timeline(&self, chosen: &Chosen) -> Result<()> {
        let Some(storage) = self.storage else {
            return Ok(());
        };
        let restored = chosen.as_ref().map(|(r, _)| r.as_ref());
        let own = |r: &&RestoredCheckpoint| {
            r.kind() == SnapshotKind::Checkpoint && is_in(storage.root(), r.dir())
        };
        let from = restored.filter(own).map(RestoredCheckpoint::id);
        let elsewhere = restored.filter(|r| !own(r)).map(RestoredCheckpoint::dir);
        let abandoned = storage.start_timeline(&self.run.job_id, from, elsewhere)?;
        if !abandoned.is_empty() {
            // Say why: a savepoint newer than every checkpoint still
            // abandons them, and "newer" would be wrong there.
            let why = match from {
                Some(id) => format!("newer than checkpoint {id}, where this run starts"),
                None => match chosen.as_ref().map(|(r, _)| r.as_ref()) {
                    Some(r) if r.kind() == SnapshotKind::Savepoint => {
                        format!("not on the timeline of savepoint {}, where this run starts", r.id())
                    }
                    Some(r) => format!(
                        "not on the timeline of checkpoint {} of another directory, where this run starts",
                        r.id()
                    ),
                    None => "this run starts fresh".to_owned(),
                },
            };
            tracing::info!(
                target: RESTORE,
                "abandoned checkpoints {abandoned:?} ({why}): moved to {} (never restored by \
                 --restore latest)",
                storage
                    .root()
                    .join(crate::checkpoint::storage::ABANDONED_DIR)
                    .display()
            );
        }
        Ok(())
    }
}

/// Whether checkpoint directory `dir` is one of `root`'s.
fn is_in(root: &Path, dir: &Path) -> bool {
    dir.parent().map(resolved) == Some(resolved(root))
}

fn log_restoring(r: &RestoredCheckpoint) {
    tracing::info!(
        target: RESTORE,
        checkpoint = r.id(),
        "restoring {} {} from {}",
        r.kind(),
        r.id(),
        r.dir().display()
    );
}

/// The state `--allow-non-restored-state` skipped: one line per operator.
fn log_skipped(r: &RestoredCheckpoint, uids: &[String]) {
    for uid in uids {
        tracing::info!(
            target: RESTORE,
            checkpoint = r.id(),
            uid = uid.as_str(),
            "skipping the state of operator `{uid}` in {} {}: this job has no such operator \
             (--allow-non-restored-state)",
            r.kind(),
            r.id()
        );
    }
}

/// A newer checkpoint that cannot be restored: the run falls back to an
/// older one. `info` like the other restore messages: the run recovers by
/// itself, and as a warning the command line would print it with a
/// `warning: ` it never had.
pub(crate) fn log_unusable(checkpoint: u64, why: &dyn std::fmt::Display) {
    tracing::info!(
        target: RESTORE,
        checkpoint,
        "checkpoint {checkpoint} is unusable, trying an older one: {why}"
    );
}
