//! Fail points for crash tests: named places where the process kills
//! itself with SIGKILL when told to, so that tests can crash weir at the
//! moments that matter (during a snapshot's asynchronous write, between a
//! checkpoint's completion and its commit) instead of only at random ones.
//!
//! `WEIR_FAILPOINTS=name=N[,name=N...]` arms fail point `name` for
//! checkpoint `N`. Unset (always, outside tests) it costs one check of an
//! already-initialized `OnceLock` per checkpoint, never per record.
//!
//! The fail points:
//! - `snapshot-write`: a worker's writer has written part of its blocks of
//!   checkpoint N;
//! - `checkpoint-complete`: the manifest of checkpoint N is durable, the
//!   sinks have not been told to commit;
//! - `source-panic`: (not a kill) a source panics, once per process, when
//!   its position passes N — an operator failure for the restart strategy;
//!   `source-panic-always` panics there in every attempt;
//! - `stop-delay`: (not a kill) the control thread waits N ms before it
//!   triggers a stop's savepoint, so that a test can signal again while
//!   the stop is under way;
//! - `stop-complete-delay`: (not a kill) the control thread waits N ms
//!   before it writes the manifest of a stop's snapshot, whose segments
//!   are written: a signal then finds it incomplete.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

fn armed() -> &'static [(String, u64)] {
    static ARMED: OnceLock<Vec<(String, u64)>> = OnceLock::new();
    ARMED.get_or_init(|| {
        std::env::var("WEIR_FAILPOINTS")
            .ok()
            .map(|spec| {
                spec.split(',')
                    .filter_map(|item| {
                        let (name, id) = item.split_once('=')?;
                        Some((name.trim().to_owned(), id.trim().parse().ok()?))
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Kills the process with SIGKILL if fail point `name` is armed for
/// checkpoint `checkpoint`.
pub fn hit(name: &str, checkpoint: u64) {
    if armed().iter().any(|(n, id)| n == name && *id == checkpoint) {
        tracing::info!(
            target: crate::core::log::FAILPOINT,
            checkpoint,
            "fail point `{name}` at checkpoint {checkpoint}: killing the process"
        );
        // SAFETY: kill(2) with our own pid and a valid signal number has no
        // memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// True if fail point `name` is armed at a position at or below `position`.
fn reached(name: &str, position: u64) -> bool {
    armed().iter().any(|(n, at)| n == name && position >= *at)
}

/// Panics, once per process, if fail point `name` is armed at a position at
/// or below `position`.
pub fn panic_once(name: &str, position: u64) {
    static FIRED: AtomicBool = AtomicBool::new(false);
    if !FIRED.load(Ordering::Relaxed)
        && reached(name, position)
        && !FIRED.swap(true, Ordering::SeqCst)
    {
        panic!("injected failure (fail point {name} at {position})");
    }
}

/// Panics, every time, if fail point `name` is armed at a position at or
/// below `position`.
pub fn panic_always(name: &str, position: u64) {
    if reached(name, position) {
        panic!("injected failure (fail point {name} at {position})");
    }
}

/// The milliseconds fail point `name` is armed with, if it is (a delay
/// rather than a kill).
pub fn armed_ms(name: &str) -> Option<u64> {
    armed().iter().find(|(n, _)| n == name).map(|(_, ms)| *ms)
}
