//! The states a function creates, recorded as they are constructed, so the
//! runtime can check them against what its `visit_state` visits: one
//! registry and one name check for keyed and operator states alike.

use std::cell::RefCell;

use weir_state::snapshot::MAX_STATE_NAME_LEN;

pub use crate::state::error::StateKind;
use crate::state::error::{Result, StateError};

thread_local! {
    /// The states created on this thread since the registry was last
    /// cleared ([`created_by`]).
    static CREATED: RefCell<Vec<(StateKind, String)>> = const { RefCell::new(Vec::new()) };
}

/// Records that a state of `kind` named `name` was created on this thread
/// (every state kind's constructor calls it).
pub(crate) fn register_state(kind: StateKind, name: &str) {
    CREATED.with(|c| c.borrow_mut().push((kind, name.to_owned())));
}

/// Runs `make` (a function's factory) and returns what it made with the
/// names of the states of `kind` it created.
pub(crate) fn created_by<T>(kind: StateKind, make: impl FnOnce() -> T) -> (T, Vec<String>) {
    CREATED.with(|c| c.borrow_mut().clear());
    let made = make();
    let created = CREATED.with(|c| {
        std::mem::take(&mut *c.borrow_mut())
            .into_iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, name)| name)
            .collect()
    });
    (made, created)
}

/// Checks the states of `kind` a function created (`created`) against those
/// its `visit_state` visited (`visited`): names unique, 1 to
/// [`MAX_STATE_NAME_LEN`] bytes, none of the `reserved` names (the
/// operator's own states), and every created state visited (else it would
/// be lost by checkpoints). The error reads after the operator's name.
pub(crate) fn check_state_names(
    kind: StateKind,
    mut created: Vec<String>,
    mut visited: Vec<String>,
    reserved: &[&str],
) -> Result<()> {
    created.sort();
    visited.sort();
    if let Some(dup) = visited.windows(2).find(|w| w[0] == w[1]) {
        return Err(StateError::DuplicateName {
            kind,
            name: dup[0].clone(),
        });
    }
    if let Some(bad) = visited
        .iter()
        .find(|v| v.is_empty() || v.len() > MAX_STATE_NAME_LEN)
    {
        return Err(StateError::InvalidName {
            kind,
            name: bad.clone(),
        });
    }
    if let Some(r) = visited.iter().find(|v| reserved.contains(&v.as_str())) {
        return Err(StateError::ReservedName {
            kind,
            name: r.clone(),
        });
    }
    if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
        return Err(StateError::NotVisited {
            kind,
            name: missing.clone(),
        });
    }
    Ok(())
}
