//! Choosing the checkpoint a run restores: an explicit path, or the newest
//! complete and verified one.

use crate::checkpoint::restore::{find_latest, RestoredCheckpoint};
use crate::checkpoint::storage::CheckpointStorage;
use crate::exec::error::{JobError, Result};
use crate::exec::options::RestoreFrom;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Finds the checkpoint `from` names, verifying it. Prints why newer
/// checkpoints were skipped and when there is none.
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
            eprintln!("restoring checkpoint {} from {}", r.id(), r.dir().display());
            Ok(Some((Arc::new(r), started.elapsed())))
        }
        RestoreFrom::Latest => {
            let Some(storage) = storage else {
                return Err(JobError::RestoreLatestWithoutStorage);
            };
            let search = find_latest(storage, job_name, max_parallelism, below)?;
            for (id, why) in &search.skipped {
                eprintln!("checkpoint {id} is unusable, trying an older one: {why}");
            }
            match search.found {
                Some(r) => {
                    eprintln!("restoring checkpoint {} from {}", r.id(), r.dir().display());
                    Ok(Some((Arc::new(r), started.elapsed())))
                }
                None => {
                    eprintln!(
                        "no complete checkpoint in {}: starting fresh",
                        storage.root().display()
                    );
                    Ok(None)
                }
            }
        }
    }
}
