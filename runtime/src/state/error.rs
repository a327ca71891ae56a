//! [`StateError`]: a function's operator states that checkpoints could not
//! keep, found when its operator is built (restore errors are the
//! checkpoint layer's [`RestoreError`](crate::checkpoint::error::RestoreError)).

use weir_state::snapshot::MAX_STATE_NAME_LEN;

use crate::core::fault::Fault;

/// Result of the state layer's checks.
pub type Result<T, E = StateError> = std::result::Result<T, E>;

/// Why a function's operator states cannot be checkpointed. Each message
/// reads after the operator's name: "process operator `uid` {error}".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Two states share a name.
    #[error("has two operator states named `{name}`: state names must be unique")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A name is empty or too long for a checkpoint.
    #[error("has an operator state named `{name}`: names must be 1 to {MAX_STATE_NAME_LEN} bytes")]
    InvalidName {
        /// The name.
        name: String,
    },
    /// A state is created but not visited, so checkpoints would lose it.
    #[error(
        "creates operator state `{name}` but its visit_state does not visit it: the state \
         would be lost by checkpoints"
    )]
    NotVisited {
        /// The state's name.
        name: String,
    },
}

impl StateError {
    /// Whose fault it is: the user's (the function's code).
    pub fn fault(&self) -> Fault {
        Fault::User
    }

    /// Whether a retry can help: no, the function must change.
    pub fn retryable(&self) -> bool {
        false
    }
}
