//! Stopping a running job with a savepoint, as Flink's
//! stop-with-savepoint: a [`StopRequest`] is the hand-off between whoever
//! decides to stop (the `weir` command's signal thread on SIGTERM or
//! SIGINT) and the control thread of the running attempt, which asks its
//! checkpoint coordinator for the stop savepoint. Nothing here runs on a
//! worker: the request is one atomic the control thread reads on its tick,
//! and the workers learn of the stop through the checkpoint signals.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

pub use crate::checkpoint::coordinator::Stopped;

const IDLE: u8 = 0;
const REQUESTED: u8 = 1;

/// A request to stop a job with a savepoint; cheap to clone, shared between
/// the requester and the run.
#[derive(Clone, Debug, Default)]
pub struct StopRequest(Arc<AtomicU8>);

impl StopRequest {
    /// A request not made yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop with a savepoint. Returns false if a stop was
    /// asked for already and is still under way (the caller may then
    /// abort instead, as a second Ctrl-C does).
    pub fn request(&self) -> bool {
        self.0
            .compare_exchange(IDLE, REQUESTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether a stop was asked for and not given up on.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Acquire) == REQUESTED
    }

    /// The stop savepoint failed and the job goes on: a later request is a
    /// first one again.
    pub(crate) fn rearm(&self) {
        self.0.store(IDLE, Ordering::Release);
    }
}
