//! [`BuildError`]: why a subtask's task could not be built. Building runs
//! an operator's checks and restores before its first record (the names
//! of its states, its state in the checkpoint, its source's position, its
//! sink's transactions); each failure is an error naming the task, the
//! operator and the cause, never a panic (a panic while building is a bug,
//! weir's or the user's function's).
//!
//! Messages read as the operator's kind and uid, then what failed:
//! "keyed operator `counts` cannot restore checkpoint 7: ...".

use weir_net::DecodeError;

use crate::checkpoint::error::RestoreError;
use crate::core::fault::Fault;
use crate::state::error::StateError;

/// Result of building a task.
pub type Result<T, E = BuildError> = std::result::Result<T, E>;

/// What of an operator's state a failed restore was reading, as the
/// message names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restoring {
    /// The function's states: "cannot restore checkpoint N".
    States,
    /// A keyed function's timers: "cannot restore the timers of
    /// checkpoint N".
    Timers,
    /// A source's splits: "cannot restore its splits from checkpoint N".
    Splits,
    /// State kept in the manifest (a flag, a source's position, a sink's
    /// state, channel state): the cause names the checkpoint itself.
    Inline,
}

/// Why the task of one subtask could not be built. Every variant names
/// the task ("stage (i/P)"), the operator's uid and the cause.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A function's states cannot be checkpointed (a name missing from
    /// its `visit_state`, twice, reserved or invalid).
    #[error("{kind} `{uid}` {source}")]
    StateNames {
        /// The task being built.
        task: String,
        /// The operator's kind, e.g. `"keyed operator"`.
        kind: &'static str,
        /// The operator.
        uid: String,
        /// What is wrong with its states.
        #[source]
        source: StateError,
    },
    /// The operator's state cannot be restored from the checkpoint: it is
    /// unusable or does not fit the job ([`RestoreError`] says which).
    #[error("{kind} `{uid}`{}: {source}", restoring_prefix(*part, *checkpoint))]
    Restore {
        /// The task being built.
        task: String,
        /// The operator's kind.
        kind: &'static str,
        /// The operator.
        uid: String,
        /// The checkpoint restored.
        checkpoint: u64,
        /// What of the state was being read.
        part: Restoring,
        /// Why it failed (boxed: a restore error is large, and rare).
        #[source]
        source: Box<RestoreError>,
    },
    /// A broadcast operator's broadcast state in the checkpoint does not
    /// decode.
    #[error(
        "broadcast operator `{uid}` cannot restore its broadcast state from checkpoint \
         {checkpoint}: {source}"
    )]
    BroadcastState {
        /// The task being built.
        task: String,
        /// The operator.
        uid: String,
        /// The checkpoint restored.
        checkpoint: u64,
        /// What does not decode.
        #[source]
        source: DecodeError,
    },
    /// The checkpoint holds the source's operator but no position for
    /// this subtask.
    #[error("checkpoint {checkpoint} has no position for source `{uid}` subtask {subtask}")]
    MissingPosition {
        /// The task being built.
        task: String,
        /// The source.
        uid: String,
        /// The checkpoint restored.
        checkpoint: u64,
        /// The subtask.
        subtask: usize,
    },
    /// The source's `restore_position` refused the restored position.
    #[error("source `{uid}` cannot resume from checkpoint {checkpoint}: {message}")]
    RestorePosition {
        /// The task being built.
        task: String,
        /// The source.
        uid: String,
        /// The checkpoint restored.
        checkpoint: u64,
        /// The source's error.
        message: String,
        /// What the source's `is_retryable` said of it.
        retryable: bool,
    },
    /// The sink's `initialize_state` failed (recovering or aborting its
    /// transactions, preparing its output).
    #[error("sink `{uid}` ({task}) cannot initialize its state: {message}")]
    InitializeState {
        /// The task being built.
        task: String,
        /// The sink.
        uid: String,
        /// The sink's error.
        message: String,
        /// What the sink's `is_retryable` said of it.
        retryable: bool,
    },
}

/// The words between a restore error's operator and its cause.
fn restoring_prefix(part: Restoring, checkpoint: u64) -> String {
    match part {
        Restoring::States => format!(" cannot restore checkpoint {checkpoint}"),
        Restoring::Timers => format!(" cannot restore the timers of checkpoint {checkpoint}"),
        Restoring::Splits => format!(" cannot restore its splits from checkpoint {checkpoint}"),
        Restoring::Inline => String::new(),
    }
}

impl BuildError {
    /// The task that could not be built: "stage (i/P)".
    pub fn task(&self) -> &str {
        match self {
            Self::StateNames { task, .. }
            | Self::Restore { task, .. }
            | Self::BroadcastState { task, .. }
            | Self::MissingPosition { task, .. }
            | Self::RestorePosition { task, .. }
            | Self::InitializeState { task, .. } => task,
        }
    }

    /// The operator that failed.
    pub fn uid(&self) -> &str {
        match self {
            Self::StateNames { uid, .. }
            | Self::Restore { uid, .. }
            | Self::BroadcastState { uid, .. }
            | Self::MissingPosition { uid, .. }
            | Self::RestorePosition { uid, .. }
            | Self::InitializeState { uid, .. } => uid,
        }
    }

    /// Whose fault it is: the user's for states a checkpoint cannot keep
    /// and for a checkpoint without a source's position; the restore
    /// error's own for a restore; the outside world's for broadcast state
    /// that does not decode (not what weir wrote); for a source's or sink's
    /// hook, the outside world's if it called its error retryable, else
    /// the user's.
    pub fn fault(&self) -> Fault {
        match self {
            Self::StateNames { source, .. } => source.fault(),
            Self::Restore { source, .. } => source.fault(),
            Self::BroadcastState { .. } => Fault::Outside,
            Self::MissingPosition { .. } => Fault::User,
            Self::RestorePosition { retryable, .. } | Self::InitializeState { retryable, .. } => {
                if *retryable {
                    Fault::Outside
                } else {
                    Fault::User
                }
            }
        }
    }

    /// Whether building the task again (a restart restores the same
    /// checkpoint, or a later one) can help: after a restore's I/O error,
    /// or a hook's error its source or sink calls retryable. A state-name
    /// error, a checkpoint that does not fit the job (a refused rescale, a
    /// changed redistribution mode) or state that does not decode stays.
    pub fn retryable(&self) -> bool {
        match self {
            Self::StateNames { source, .. } => source.retryable(),
            Self::Restore { source, .. } => source.retryable(),
            Self::BroadcastState { .. } | Self::MissingPosition { .. } => false,
            Self::RestorePosition { retryable, .. } | Self::InitializeState { retryable, .. } => {
                *retryable
            }
        }
    }
}
