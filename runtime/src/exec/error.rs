//! Errors of the runtime, saying whose fault a failure is and whether a
//! restart can help ([`JobError::retryable`]): `execute` restarts a job
//! only after a failure a retry may cure, and the `weir` command's exit
//! code follows the same split.

use std::path::PathBuf;

use thiserror::Error;

use crate::build::error::BuildError;
use crate::chain::error::TaskError;
use crate::checkpoint::error::{CheckpointError, RestoreError};
use crate::core::fault::{io_retryable, Fault};

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
    /// A task could not be built, or failed while the job ran; the job
    /// was cancelled.
    #[error("job failed: {task} on worker {worker}: {cause}")]
    TaskFailed {
        /// Worker index.
        worker: usize,
        /// The failing task (operator chain and subtask).
        task: String,
        /// Why it failed.
        cause: TaskFailure,
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
    /// `--restore latest` with checkpointing off: no checkpoint directory
    /// is open to search (the user's to fix).
    #[error(
        "checkpoint error: --restore latest searches state.checkpoints.dir, which only a run \
         with checkpointing on uses (set execution.checkpointing.interval and \
         state.checkpoints.dir); to restore without checkpointing, give --restore PATH of \
         a checkpoint or savepoint"
    )]
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
    /// A path weir keeps in a directory of the run (`.weir-lineage` and
    /// `_timeline` files, the `.abandoned/` and `abandoned/` directories it
    /// moves rolled-back output and abandoned checkpoints to) is of the
    /// other kind: found before anything changes, since the run would
    /// otherwise fail only once it had begun changing things.
    #[error(
        "{} should be {should_be} ({what}) but is {is}: move it away (nothing was changed)",
        path.display()
    )]
    WrongKind {
        /// The path.
        path: PathBuf,
        /// What weir keeps there.
        what: &'static str,
        /// What it should be: `"a file"`, `"a directory"`.
        should_be: &'static str,
        /// What it is.
        is: &'static str,
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
    /// The job names one directory for two of its roles (say, its
    /// checkpoints and its output), or another job of this process holds it
    /// as something else.
    #[error(
        "{what} {} is also the {other} of this job (or of another job in this process): one \
         directory cannot be both; give each its own directory",
        dir.display()
    )]
    SameDirectory {
        /// What this run wanted the directory as.
        what: &'static str,
        /// The directory.
        dir: PathBuf,
        /// What it is held as already.
        other: &'static str,
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
    /// `--restore latest` found no checkpoint at all, but an output
    /// directory holds committed output of this job: a fresh start would
    /// roll all of it back and write it again, which is not what a request
    /// to resume asks for (a mistyped `state.checkpoints.dir`, checkpoints
    /// deleted). A run restored from a savepoint that died before its first
    /// checkpoint is not this case: `latest` resumes from that savepoint.
    #[error(
        "--restore latest found no checkpoint in {}, but output directory {} holds {parts} \
         committed part file{} of this job: starting fresh would move {} aside (to {}/.abandoned) \
         and write everything again. Check state.checkpoints.dir, give the checkpoint or \
         savepoint to resume from as --restore PATH, or run without --restore to start fresh \
         (nothing was changed)",
        checkpoints.display(),
        dir.display(),
        if *parts == 1 { "" } else { "s" },
        if *parts == 1 { "it" } else { "them all" },
        dir.display()
    )]
    NothingToResume {
        /// The checkpoint directory searched.
        checkpoints: PathBuf,
        /// The output directory.
        dir: PathBuf,
        /// How many committed parts it holds.
        parts: usize,
    },
    /// An output directory is another job's: its lineage names another
    /// job, or it holds committed output no lineage accounts for.
    #[error(
        "output directory {} belongs to another job ({what}): move it away or give this job \
         another directory",
        dir.display()
    )]
    ForeignOutput {
        /// The directory.
        dir: PathBuf,
        /// What differs.
        what: String,
    },
    /// The snapshot being restored committed output that a later run,
    /// restoring an older snapshot, moved aside: the directory no longer
    /// holds what the snapshot's state says it committed.
    #[error(
        "cannot restore checkpoint {restored}: output directory {} no longer holds what it \
         committed: {} (transaction {transaction}) was moved aside by a later run that restored \
         an older checkpoint, so this one is of an abandoned timeline and restoring it would lose \
         or duplicate output; restore a checkpoint of the current timeline (--restore latest) or \
         a savepoint taken since",
        dir.display(),
        file.display()
    )]
    OutputRolledBack {
        /// The output directory.
        dir: PathBuf,
        /// A committed part moved aside after the snapshot was taken.
        file: PathBuf,
        /// Its transaction.
        transaction: u64,
        /// The snapshot's id.
        restored: u64,
    },
    /// The job was asked to stop (SIGTERM, SIGINT) but takes no
    /// checkpoints, so it stopped without a savepoint (Flink's cancel).
    #[error(
        "stopped without a savepoint: checkpointing is off (set execution.checkpointing.interval \
         and state.checkpoints.dir, and state.savepoints.dir for savepoints)"
    )]
    StoppedWithoutSnapshot,
    /// The job was cancelled through its [`JobHandle`](crate::exec::handle::JobHandle)
    /// (`weir cancel`, `PATCH /jobs/:id?mode=cancel`): its workers ended
    /// without a snapshot; the output stands as of its last complete
    /// checkpoint.
    #[error("the job was cancelled (weir cancel); a run with --restore latest resumes from its last complete checkpoint")]
    Cancelled,
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

impl JobError {
    /// Whose fault the failure is: the user's (a job, option or
    /// checkpoint to change), the outside world's (the disk, files changed
    /// behind weir's back) or ours (a bug).
    pub fn fault(&self) -> Fault {
        match self {
            Self::InvalidJob(_) | Self::RestoreLatestWithoutStorage => Fault::User,
            Self::StoppedWithoutSnapshot | Self::Cancelled => Fault::User,
            Self::Spawn { .. } | Self::RestoreCorrupt { .. } | Self::AllUnusable { .. } => {
                Fault::Outside
            }
            Self::Locked { .. }
            | Self::WrongKind { .. }
            | Self::NothingToResume { .. }
            | Self::SameDirectory { .. }
            | Self::ForeignOutput { .. }
            | Self::OutputRolledBack { .. } => Fault::User,
            Self::Directory { source, .. } if !io_retryable(source) => Fault::User,
            Self::Directory { .. } => Fault::Outside,
            Self::TaskFailed { cause, .. } => cause.fault(),
            Self::Checkpoint(e) => e.fault(),
            Self::Restore { source, .. } => source.fault(),
            Self::RestartsExhausted { failure, .. } => failure.fault(),
        }
    }

    /// Whether running the job again may succeed without anyone changing
    /// anything: after an I/O error, a full disk, a panic (a user
    /// function's, or a bug that may not recur). Not after a mistake to
    /// fix: an invalid job or option, a checkpoint that does not fit the
    /// job (another job's, a refused rescale, a changed redistribution
    /// mode), an unusable checkpoint named explicitly or no usable
    /// checkpoint at all, a state-name error, a directory another run
    /// holds, weir may not write or that is a regular file, an output
    /// directory of another job.
    ///
    /// `execute` consults the restart strategy only for a retryable task
    /// failure; the `weir` command exits with 1 for a retryable error
    /// (the restart strategy gave up, or was `none`) and 2 for the others.
    /// A job whose restart strategy gave up is retryable: its last failure
    /// was.
    pub fn retryable(&self) -> bool {
        match self {
            Self::InvalidJob(_) | Self::RestoreLatestWithoutStorage => false,
            Self::StoppedWithoutSnapshot => false,
            // Running it again may well succeed: exit 1, as Flink's
            // client does for a cancelled job.
            Self::Cancelled => true,
            // A worker that could not start (no thread, no io_uring
            // memory) may start once the machine has room again.
            Self::Spawn { .. } => true,
            // Found while loading a checkpoint `--restore` named: it is
            // not replaced by another (a checkpoint `latest` chose falls
            // back to an older one instead of failing).
            Self::RestoreCorrupt { .. } => false,
            // The other run may end, but two jobs must not share a
            // directory: the user decides, at once.
            Self::Locked { .. } | Self::SameDirectory { .. } => false,
            // A file where a directory belongs stays so until moved.
            Self::WrongKind { .. } => false,
            Self::NothingToResume { .. } => false,
            Self::AllUnusable { .. } | Self::ForeignOutput { .. } => false,
            Self::OutputRolledBack { .. } => false,
            Self::Directory { source, .. } => io_retryable(source),
            Self::TaskFailed { cause, .. } => cause.retryable(),
            Self::Checkpoint(e) => e.retryable(),
            Self::Restore { source, .. } => source.retryable(),
            Self::RestartsExhausted { failure, .. } => failure.retryable(),
        }
    }
}

/// Why a task failed: the typed cause of [`JobError::TaskFailed`]. (The
/// large causes are boxed: they are rare, and keep every `Result` that
/// carries a [`JobError`] small.)
#[derive(Debug, Error)]
pub enum TaskFailure {
    /// Its task could not be built: a state-name check, a restore, a
    /// source's or sink's hook failed.
    #[error(transparent)]
    Build(Box<BuildError>),
    /// An operator of the running task failed (a sink's I/O error).
    #[error(transparent)]
    Run(Box<TaskError>),
    /// Checkpoints failed more often than tolerated, or the checkpoint
    /// directory could not be changed (the coordinator's failure).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The task panicked: a bug, weir's or a user function's (the panic's
    /// message).
    #[error("{0}")]
    Panic(String),
    /// A user function failed the task over a record it could not process
    /// ([`fail_task`](crate::core::fail_task); a SQL `CAST` of text that
    /// does not parse).
    #[error("{0}")]
    User(String),
}

impl From<BuildError> for TaskFailure {
    fn from(e: BuildError) -> Self {
        Self::Build(Box::new(e))
    }
}

impl From<TaskError> for TaskFailure {
    fn from(e: TaskError) -> Self {
        Self::Run(Box::new(e))
    }
}

impl TaskFailure {
    /// Whose fault it is: the cause's; a panic is a bug, and weir cannot
    /// tell whether it is its own or the user function's: ours.
    pub fn fault(&self) -> Fault {
        match self {
            Self::Build(e) => e.fault(),
            Self::Run(e) => e.fault(),
            Self::Checkpoint(e) => e.fault(),
            Self::Panic(_) => Fault::Ours,
            Self::User(_) => Fault::User,
        }
    }

    /// Whether a restart may help: the cause's; after a panic, yes (a user
    /// function that panicked on one record may not on the replay, as
    /// Flink restarts after any exception).
    pub fn retryable(&self) -> bool {
        match self {
            Self::Build(e) => e.retryable(),
            Self::Run(e) => e.retryable(),
            Self::Checkpoint(e) => e.retryable(),
            Self::Panic(_) | Self::User(_) => true,
        }
    }
}

#[cfg(test)]
mod tests;
