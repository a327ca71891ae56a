//! [`StateError`]: a function's states that checkpoints could not keep,
//! found when its operator is built (restore errors are the checkpoint
//! layer's [`RestoreError`](crate::checkpoint::error::RestoreError)).

use std::fmt;

use weir_state::snapshot::MAX_STATE_NAME_LEN;

use crate::core::fault::Fault;

/// Result of the state layer's checks.
pub type Result<T, E = StateError> = std::result::Result<T, E>;

/// The kind of a state, as the registry records it and its check names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateKind {
    /// Keyed state (value, map, list, reducing, aggregating, windows).
    Keyed,
    /// Operator (non-keyed) list state.
    Operator,
}

impl StateKind {
    /// The kind's noun with its article: "a state", "an operator state".
    pub fn one(self) -> &'static str {
        match self {
            StateKind::Keyed => "a state",
            StateKind::Operator => "an operator state",
        }
    }
}

impl fmt::Display for StateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateKind::Keyed => "state",
            StateKind::Operator => "operator state",
        })
    }
}

/// Why a function's states cannot be checkpointed. Each message reads after
/// the operator's name: "process operator `uid` {error}".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Two states share a name.
    #[error("has two {kind}s named `{name}`: state names must be unique")]
    DuplicateName {
        /// The states' kind.
        kind: StateKind,
        /// The name.
        name: String,
    },
    /// A name is empty or too long for a checkpoint.
    #[error("has {} named `{name}`: names must be 1 to {MAX_STATE_NAME_LEN} bytes", .kind.one())]
    InvalidName {
        /// The state's kind.
        kind: StateKind,
        /// The name.
        name: String,
    },
    /// A state has the name the operator gives its own state in checkpoints
    /// (a keyed operator's timers).
    #[error("has {} named `{name}`, the name of its timers in checkpoints: rename the state", .kind.one())]
    ReservedName {
        /// The state's kind.
        kind: StateKind,
        /// The name.
        name: String,
    },
    /// A state is created but not visited, so checkpoints would lose it.
    #[error(
        "creates {kind} `{name}` but its visit_state does not visit it: the state would be \
         lost by checkpoints"
    )]
    NotVisited {
        /// The state's kind.
        kind: StateKind,
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
