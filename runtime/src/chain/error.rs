//! [`TaskError`]: an error an operator of a running chain met and cannot
//! go on after (a sink's I/O error, a source's unreadable input). The operator records it and reports
//! it through [`ChainControl::failure`](crate::chain::control::ChainControl::failure);
//! its task hands it to the worker after the poll
//! ([`Task::failure`](crate::chain::task::Task::failure)), and the worker
//! fails the job with it: no panic, which stays for bugs.

use crate::core::fault::Fault;

/// Result of a task's poll.
pub type Result<T, E = TaskError> = std::result::Result<T, E>;

/// Why a running task failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// A sink's method returned an error, or its `invoke` met one (reported
    /// by its `check`).
    #[error("sink `{uid}` ({task}) failed to {action}: {message}")]
    Sink {
        /// The task: "stage (i/P)".
        task: String,
        /// The sink.
        uid: String,
        /// What it was doing, e.g. "pre-commit for checkpoint 3".
        action: String,
        /// The sink's error.
        message: String,
        /// What the sink's `is_retryable` said of it.
        retryable: bool,
    },
    /// A source met an error while reading its input (reported by its
    /// `check`).
    #[error("source `{uid}` ({task}) failed: {message}")]
    Source {
        /// The task: "stage (i/P)".
        task: String,
        /// The source.
        uid: String,
        /// The source's error.
        message: String,
        /// What the source's `is_retryable` said of it.
        retryable: bool,
    },
}

impl TaskError {
    /// Whose fault it is: the outside world's for an error its operator
    /// calls retryable (an I/O error, a full disk), else the user's.
    pub fn fault(&self) -> Fault {
        if self.retryable() {
            Fault::Outside
        } else {
            Fault::User
        }
    }

    /// Whether restarting the job may help, as the operator says.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Sink { retryable, .. } | Self::Source { retryable, .. } => *retryable,
        }
    }
}
