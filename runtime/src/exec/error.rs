//! Errors of the runtime, saying whose fault a failure is.

use std::path::PathBuf;

use thiserror::Error;

use crate::checkpoint::error::{CheckpointError, RestoreError};

/// Why a job could not run or did not finish.
#[derive(Debug, Error)]
pub enum JobError {
    /// The job graph or its options are wrong (the user's to fix).
    #[error("invalid job: {0}")]
    InvalidJob(String),
    /// The machine refused something the runtime needs (outside world).
    #[error("cannot start worker {worker}: {message}")]
    Spawn {
        /// Worker index.
        worker: usize,
        /// What failed.
        message: String,
    },
    /// An operator failed while the job ran; the job was cancelled.
    #[error("job failed: {task} on worker {worker}: {message}")]
    TaskFailed {
        /// Worker index.
        worker: usize,
        /// The failing task (operator chain and subtask).
        task: String,
        /// The panic message or error.
        message: String,
    },
    /// A block of the checkpoint being restored failed its checks while a
    /// worker loaded it: the checkpoint is unusable (outside world; an
    /// older checkpoint may do, and is tried unless this one was named
    /// explicitly).
    #[error("checkpoint {checkpoint} is unusable: {message}")]
    RestoreCorrupt {
        /// The checkpoint.
        checkpoint: u64,
        /// What failed, naming the operator, the state and the file (the
        /// [`RestoreError`] itself is
        /// [`RestoredCheckpoint::corrupt`](crate::checkpoint::restore::RestoredCheckpoint::corrupt)).
        message: String,
    },
    /// The checkpoint directory could not be read or changed (outside
    /// world; a retry may help).
    #[error("checkpoint error: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint `--restore` names cannot be restored: it is unusable
    /// or does not fit the job ([`RestoreError::fault`] says whose fault).
    #[error("checkpoint error: cannot restore {}: {source}", path.display())]
    Restore {
        /// The path given.
        path: PathBuf,
        /// Why (boxed: a restore error is large, and rare).
        #[source]
        source: Box<RestoreError>,
    },
    /// `--restore latest` without a checkpoint directory (the user's to
    /// fix).
    #[error("checkpoint error: --restore latest needs state.checkpoints.dir")]
    RestoreLatestWithoutStorage,
    /// A directory the run needs (`what`: `state.checkpoints.dir`, an
    /// output directory) cannot be used: it is a file, or cannot be created
    /// or opened.
    #[error("{what} {}: {source}", dir.display())]
    Directory {
        /// What the directory is.
        what: &'static str,
        /// The directory.
        dir: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: std::io::Error,
    },
    /// Another run holds a directory this one needs (the user's to sort
    /// out: two jobs must not share a checkpoint or output directory).
    #[error(
        "{what} {} is in use by {} (lock {}): two jobs cannot share it; wait for that run to \
         end or give this one its own directory",
        dir.display(),
        holder.map_or_else(|| "another process".to_string(), |pid| format!("process {pid}")),
        lock.display()
    )]
    Locked {
        /// What the directory is.
        what: &'static str,
        /// The directory.
        dir: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// The holder's process id, if it wrote one.
        holder: Option<u32>,
    },
    /// `--restore latest` found complete checkpoints, but none is usable:
    /// never a silent fresh start (a source that cannot replay from the
    /// start would lose data).
    #[error(
        "no checkpoint in {} can be restored: {}; move the directory away to start fresh",
        dir.display(),
        reasons.iter().map(|(id, why)| format!("checkpoint {id}: {why}")).collect::<Vec<_>>().join("; ")
    )]
    AllUnusable {
        /// The checkpoint directory.
        dir: PathBuf,
        /// Every checkpoint, newest first, and why it is unusable.
        reasons: Vec<(u64, String)>,
    },
    /// An output directory holds committed output this job did not write.
    #[error(
        "output directory {} holds committed output of another job ({what}): move it away or \
         give this job another directory",
        dir.display()
    )]
    ForeignOutput {
        /// The directory.
        dir: PathBuf,
        /// What differs.
        what: String,
    },
    /// The job failed and the restart strategy allows no more restarts.
    #[error("{failure}; not restarting: {reason}")]
    RestartsExhausted {
        /// The last failure.
        failure: Box<JobError>,
        /// Which limit of the restart strategy was hit.
        reason: String,
    },
}

/// Result alias of the runtime.
pub type Result<T, E = JobError> = std::result::Result<T, E>;
