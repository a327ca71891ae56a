//! Choosing the checkpoint a run restores: an explicit path, or the newest
//! complete and verified one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::checkpoint::restore::{find_latest, RestoredCheckpoint};
use crate::checkpoint::storage::CheckpointStorage;
use crate::core::log::RESTORE;
use crate::exec::error::{JobError, Result};
use crate::exec::options::RestoreFrom;

/// Finds the checkpoint `from` names, verifying it. Logs the one it
/// restores, why newer checkpoints were skipped, and when there is none.
pub(crate) fn select_restore(
    from: &RestoreFrom,
    storage: Option<&CheckpointStorage>,
    job_name: &str,
    max_parallelism: u32,
    below: Option<u64>,
) -> Result<Option<(Arc<RestoredCheckpoint>, Duration)>> {
    let started = Instant::now();
    match from {
        RestoreFrom::Nothing => Ok(None),
        RestoreFrom::Path(path) => {
            let r = RestoredCheckpoint::open(path, job_name, max_parallelism).map_err(|e| {
                JobError::Restore {
                    path: path.clone(),
                    source: Box::new(e),
                }
            })?;
            log_restoring(&r);
            Ok(Some((Arc::new(r), started.elapsed())))
        }
        RestoreFrom::Latest => {
            let Some(storage) = storage else {
                return Err(JobError::RestoreLatestWithoutStorage);
            };
            let search = find_latest(storage, job_name, max_parallelism, below)?;
            for (id, why) in &search.skipped {
                log_unusable(*id, why);
            }
            match search.found {
                Some(r) => {
                    log_restoring(&r);
                    Ok(Some((Arc::new(r), started.elapsed())))
                }
                None => {
                    tracing::info!(
                        target: RESTORE,
                        "no complete checkpoint in {}: starting fresh",
                        storage.root().display()
                    );
                    Ok(None)
                }
            }
        }
    }
}

fn log_restoring(r: &RestoredCheckpoint) {
    tracing::info!(
        target: RESTORE,
        checkpoint = r.id(),
        "restoring checkpoint {} from {}",
        r.id(),
        r.dir().display()
    );
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
