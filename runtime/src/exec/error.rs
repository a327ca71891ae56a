//! Errors of the runtime, saying whose fault a failure is.

use thiserror::Error;

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
    /// worker loaded it: the checkpoint is unusable.
    #[error("checkpoint {checkpoint} is unusable: {message}")]
    RestoreCorrupt {
        /// The checkpoint.
        checkpoint: u64,
        /// What failed, naming the file.
        message: String,
    },
    /// No checkpoint could be restored, or checkpoint storage failed.
    #[error("checkpoint error: {0}")]
    Checkpoint(String),
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
