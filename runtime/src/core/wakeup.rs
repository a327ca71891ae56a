//! [`SourceWakeup`]: how a thread outside a worker (a source's reading
//! thread) makes that worker poll its tasks again.

use std::sync::Arc;

use weir_net::Doorbell;

/// Wakes the worker a source runs on, from any thread: what a source's
/// own reading thread calls after handing it records (see
/// `Source::open`). Cheap when the worker is busy (a fence and a load).
#[derive(Clone, Debug)]
pub struct SourceWakeup {
    bell: Arc<Doorbell>,
}

impl SourceWakeup {
    /// A wakeup ringing `bell`, the worker's doorbell.
    pub fn new(bell: Arc<Doorbell>) -> Self {
        Self { bell }
    }

    /// One that wakes nobody: for a source driven outside a job (tests).
    pub fn none() -> Self {
        Self::new(Arc::new(Doorbell::new()))
    }

    /// Makes the worker poll its tasks again if it parked.
    pub fn wake(&self) {
        self.bell.ring();
    }
}
