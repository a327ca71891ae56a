//! Hot-path counters: plain fields published to atomics in batches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// A shared, monotonically increasing count.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        if n != 0 {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The instant every metric time is measured from (nanoseconds since it):
/// fixed at its first use in the process.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// `t` in nanoseconds since `epoch` (0 if earlier).
#[inline]
pub(crate) fn ns_since(epoch: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(epoch).as_nanos() as u64
}

/// A `u64` alone on its cache lines (two, against adjacent-line prefetch),
/// so that writers on different cores do not slow each other down.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded(AtomicU64);

/// Bytes through one channel: the sending subtask publishes what it
/// shipped, the receiving one what it took, each once per poll; the
/// control thread reads both.
#[derive(Debug, Default)]
pub struct ChannelCounters {
    shipped: Padded,
    taken: Padded,
}

impl ChannelCounters {
    /// The sender shipped `bytes` in total.
    #[inline]
    pub(crate) fn publish_shipped(&self, bytes: u64) {
        self.shipped.0.store(bytes, Ordering::Relaxed);
    }

    /// The receiver took `bytes` in total.
    #[inline]
    pub(crate) fn publish_taken(&self, bytes: u64) {
        self.taken.0.store(bytes, Ordering::Relaxed);
    }

    /// Bytes the sender shipped (as of its last poll).
    pub fn shipped(&self) -> u64 {
        self.shipped.0.load(Ordering::Relaxed)
    }

    /// Bytes the receiver took (as of its last poll).
    pub fn taken(&self) -> u64 {
        self.taken.0.load(Ordering::Relaxed)
    }

    /// Bytes shipped and not yet taken: waiting for credit or in the ring.
    /// (Each side publishes once per poll, so a reading may lag by a poll;
    /// it never goes below zero.)
    pub fn in_flight(&self) -> u64 {
        let taken = self.taken();
        self.shipped().saturating_sub(taken)
    }
}

/// Per-channel byte counts kept by the side that owns the channel's end,
/// published once per poll into the shared [`ChannelCounters`].
#[derive(Debug)]
pub(crate) struct ChannelBytes {
    counters: Box<[Arc<ChannelCounters>]>,
    local: Box<[u64]>,
    published: Box<[u64]>,
}

impl ChannelBytes {
    /// Counts for `counters`, one per channel.
    pub fn new(counters: Vec<Arc<ChannelCounters>>) -> Self {
        let n = counters.len();
        Self {
            counters: counters.into_boxed_slice(),
            local: vec![0; n].into_boxed_slice(),
            published: vec![0; n].into_boxed_slice(),
        }
    }

    /// Unshared counts for `n` channels (a component built outside a job).
    pub fn unshared(n: usize) -> Self {
        Self::new((0..n).map(|_| Arc::default()).collect())
    }

    /// `bytes` more through channel `c`.
    #[inline]
    pub fn add(&mut self, c: usize, bytes: usize) {
        self.local[c] += bytes as u64;
    }

    /// Publishes the channels that changed as shipped (sender) or taken
    /// (receiver) bytes.
    pub fn publish(&mut self, shipped: bool) {
        for ((counters, local), published) in self
            .counters
            .iter()
            .zip(self.local.iter())
            .zip(self.published.iter_mut())
        {
            if *local != *published {
                *published = *local;
                if shipped {
                    counters.publish_shipped(*local);
                } else {
                    counters.publish_taken(*local);
                }
            }
        }
    }
}
