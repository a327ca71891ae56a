//! Stopping a running job with a savepoint, as Flink's
//! stop-with-savepoint: a [`StopRequest`] is the hand-off between whoever
//! decides to stop (the `weir` command's signal thread on SIGTERM or
//! SIGINT) and the control thread of the running attempt, which asks its
//! checkpoint coordinator for the stop savepoint. Nothing here runs on a
//! worker: the request is one atomic the control thread reads on its tick,
//! and the workers learn of the stop through the checkpoint signals.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::checkpoint::storage::METADATA_FILE;

pub use crate::checkpoint::coordinator::Stopped;

const IDLE: u8 = 0;
const REQUESTED: u8 = 1;

/// A request to stop a job with a savepoint; cheap to clone, shared between
/// the requester and the run.
#[derive(Clone, Debug, Default)]
pub struct StopRequest {
    state: Arc<AtomicU8>,
    /// Where the requester asked the savepoint to go (`None`:
    /// `state.savepoints.dir`): Flink's stop `targetDirectory`.
    asked: Arc<Mutex<Option<PathBuf>>>,
    /// The directory the stop's snapshot is being written into, once the
    /// control thread triggered it (for [`StopRequest::abort`]).
    target: Arc<Mutex<Option<PathBuf>>>,
}

impl StopRequest {
    /// A request not made yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop with a savepoint. Returns false if a stop was
    /// asked for already and is still under way (the caller may then
    /// abort instead, as a second Ctrl-C does).
    pub fn request(&self) -> bool {
        self.request_into(None)
    }

    /// [`request`](Self::request) with the savepoint written into a
    /// directory of `parent` rather than `state.savepoints.dir` (`None`).
    pub fn request_into(&self, parent: Option<PathBuf>) -> bool {
        // The directory is set under its lock with the request, so the
        // control thread, which reads it after seeing the request, sees
        // it; a request that finds another under way changes nothing.
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        let first = self
            .state
            .compare_exchange(IDLE, REQUESTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
            *asked = parent;
        }
        first
    }

    /// Where the request asked the savepoint to go (`None`:
    /// `state.savepoints.dir`).
    pub(crate) fn asked_parent(&self) -> Option<PathBuf> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether a stop was asked for and not given up on.
    pub fn is_requested(&self) -> bool {
        self.state.load(Ordering::Acquire) == REQUESTED
    }

    /// The stop savepoint failed and the job goes on: a later request is a
    /// first one again.
    pub(crate) fn rearm(&self) {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        *asked = None;
        self.state.store(IDLE, Ordering::Release);
        drop(asked);
        self.set_target(None);
    }

    /// The stop's snapshot is being written into `dir` (`None`: none is).
    pub(crate) fn set_target(&self, dir: Option<PathBuf>) {
        *self.target.lock().unwrap_or_else(|e| e.into_inner()) = dir;
    }

    /// For whoever aborts the stop and then ends the process (a second
    /// Ctrl-C): removes the directory of the stop's snapshot if it is
    /// still incomplete (no `_metadata` yet), as Flink disposes of a
    /// savepoint that failed, so that no half-written savepoint is left in
    /// `state.savepoints.dir` (or the directory the stop named); returns
    /// the directory removed. A complete one is kept. Nothing reads the
    /// directory but the writers, which the process's end stops.
    pub fn abort(&self) -> Option<PathBuf> {
        let dir = self
            .target
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        if dir.join(METADATA_FILE).exists() {
            return None;
        }
        std::fs::remove_dir_all(&dir).ok().map(|()| dir)
    }
}
