//! Parking and waking an idle worker without locks.
//!
//! A worker that found nothing to do for a while parks: it registers its
//! task's waker and raises its `sleeping` flag, re-checks its inputs once, and
//! only then awaits. Every producer that publishes something for that worker
//! (a buffer, an event, a returned buffer) rings the worker's doorbell after
//! publishing. The flag and the publish are ordered by `SeqCst` fences on both
//! sides (a Dekker handshake), so either the producer sees the flag and wakes
//! the worker, or the worker's re-check sees the published item: a wake-up can
//! never be lost. Ringing a doorbell nobody sleeps behind costs one fence and
//! one load.

use std::task::Waker;

use atomic_waker::AtomicWaker;

use crate::sync::{fence, AtomicBool, AtomicUsize, Ordering};

/// One worker's doorbell, shared by every producer that feeds that worker.
#[derive(Default)]
pub struct Doorbell {
    sleeping: AtomicBool,
    waker: AtomicWaker,
    wakeups: AtomicUsize,
}

impl std::fmt::Debug for Doorbell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doorbell")
            .field("sleeping", &self.sleeping.load(Ordering::Relaxed))
            .finish()
    }
}

impl Doorbell {
    /// A doorbell with nobody sleeping behind it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Producer side: call after publishing something for the owner.
    #[inline]
    pub fn ring(&self) {
        // Orders our publish (a Release store of a ring index) before the
        // load of `sleeping`; pairs with the fence in `prepare_park`.
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::AcqRel) {
            self.wakeups.fetch_add(1, Ordering::Relaxed);
            self.waker.wake();
        }
    }

    /// Owner side, step 1 of parking: from now on producers will wake
    /// `waker`. The owner must then look for work once more and call
    /// [`Doorbell::cancel_park`] if it finds some, or await until
    /// [`Doorbell::is_parked`] turns false.
    pub fn prepare_park(&self, waker: &Waker) {
        self.waker.register(waker);
        self.sleeping.store(true, Ordering::SeqCst);
        // Orders the flag before the owner's re-check of its inputs; pairs
        // with the fence in `ring`.
        fence(Ordering::SeqCst);
    }

    /// Owner side: found work after `prepare_park`, or woke by a timer.
    pub fn cancel_park(&self) {
        self.sleeping.store(false, Ordering::Relaxed);
    }

    /// True while the owner is parked and no producer has rung since.
    pub fn is_parked(&self) -> bool {
        self.sleeping.load(Ordering::Acquire)
    }

    /// How many times a producer actually woke the owner (a metric).
    pub fn wakeups(&self) -> usize {
        self.wakeups.load(Ordering::Relaxed)
    }
}
