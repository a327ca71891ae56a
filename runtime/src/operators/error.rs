//! [`OperatorError`]: an operator's parameters that cannot work, found when
//! the job is defined. (Restoring an operator fails with the checkpoint
//! layer's [`RestoreError`](crate::checkpoint::error::RestoreError); a
//! state declared wrongly with the state layer's
//! [`StateError`](crate::state::error::StateError).)

use crate::core::fault::Fault;

/// Result of the operators' constructors.
pub type Result<T, E = OperatorError> = std::result::Result<T, E>;

/// Why an operator cannot be built as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OperatorError {
    /// An interval join's bounds leave no difference of timestamps.
    #[error(
        "interval join bounds leave no interval: lower {lower} ms{} is above upper {upper} ms{}",
        exclusive(*.lower_exclusive),
        exclusive(*.upper_exclusive)
    )]
    EmptyJoinInterval {
        /// The lower bound (ms).
        lower: i64,
        /// The upper bound (ms).
        upper: i64,
        /// Whether the lower bound is exclusive.
        lower_exclusive: bool,
        /// Whether the upper bound is exclusive.
        upper_exclusive: bool,
    },
}

impl OperatorError {
    /// Whose fault it is: the user's, who chose the parameters.
    pub fn fault(&self) -> Fault {
        Fault::User
    }

    /// Whether a retry can help: no, the parameters must change.
    pub fn retryable(&self) -> bool {
        false
    }
}

/// How a bound's exclusiveness reads after its value.
fn exclusive(yes: bool) -> &'static str {
    if yes {
        " (exclusive)"
    } else {
        ""
    }
}
