//! The states a function creates, recorded as they are constructed, so the
//! runtime can check them against what its `visit_state` visits.

use crate::state::error::{Result, StateError};
use std::cell::RefCell;
use weir_state::snapshot::MAX_STATE_NAME_LEN;

thread_local! {
    /// Names of the operator states created on this thread since the last
    /// [`take_created_operator_states`].
    static CREATED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn register_operator_state(name: &str) {
    CREATED.with(|c| c.borrow_mut().push(name.to_owned()));
}

/// The operator states created on this thread since the last call (the
/// process operator checks them against its function's `visit_state`).
pub(crate) fn take_created_operator_states() -> Vec<String> {
    CREATED.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

/// Checks the operator states a function created (`created`) against those
/// its `visit_state` visited (`visited`): names unique, valid, and every
/// created state visited (else it would be lost by checkpoints).
pub(crate) fn check_state_names(mut created: Vec<String>, mut visited: Vec<String>) -> Result<()> {
    created.sort();
    visited.sort();
    if let Some(dup) = visited.windows(2).find(|w| w[0] == w[1]) {
        return Err(StateError::DuplicateName {
            name: dup[0].clone(),
        });
    }
    if let Some(bad) = visited
        .iter()
        .find(|v| v.is_empty() || v.len() > MAX_STATE_NAME_LEN)
    {
        return Err(StateError::InvalidName { name: bad.clone() });
    }
    if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
        return Err(StateError::NotVisited {
            name: missing.clone(),
        });
    }
    Ok(())
}

thread_local! {
    /// Names of the keyed states created on this thread since the last
    /// [`take_created_states`] (the runtime checks them against
    /// `visit_state`).
    static CREATED_STATES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Records that keyed state `name` was created on this thread (every keyed
/// state kind's constructor calls it, so that the runtime can check it
/// against `visit_state`).
pub(crate) fn register_state(name: &str) {
    CREATED_STATES.with(|c| c.borrow_mut().push(name.to_owned()));
}

/// The keyed states created on this thread since the last call.
pub(crate) fn take_created_states() -> Vec<String> {
    CREATED_STATES.with(|c| std::mem::take(&mut *c.borrow_mut()))
}
