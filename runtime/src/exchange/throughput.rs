//! The rate at which an input gate reads, for the aligned checkpoint
//! timeout: [`Throughput`] predicts how long the data waiting ahead of a
//! barrier takes to drain, so that an alignment bound to outlast its timeout
//! switches to unaligned at once. Flink has no such estimate (it waits for
//! the timeout itself; ARCHITECTURE.md lists the deviation). Buffer
//! debloating keeps its own measure, of non-idle time only
//! ([`crate::exchange::debloat`]).

use std::time::{Duration, Instant};

/// The rate at which a gate takes bytes in, smoothed, to estimate how long
/// the data in flight ahead of a barrier takes to drain (the early switch
/// of [`crate::exchange::alignment::BarrierAligner::check_timeout`]).
#[derive(Debug)]
pub struct Throughput {
    bytes: u64,
    at_last: (Instant, u64),
    bytes_per_s: f64,
    buffers: u64,
}

impl Throughput {
    /// Sampling period of the rate.
    pub const PERIOD: Duration = Duration::from_millis(10);

    /// Nothing read yet, as of `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            bytes: 0,
            at_last: (now, 0),
            bytes_per_s: 0.0,
            buffers: 0,
        }
    }

    /// A buffer of `bytes` bytes was taken.
    #[inline]
    pub fn add(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        self.buffers += 1;
    }

    /// Bytes taken so far.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Updates the rate at `now`, if a sampling period has passed since the
    /// last update.
    pub fn sample(&mut self, now: Instant) {
        let (then, bytes) = self.at_last;
        let dt = now.saturating_duration_since(then);
        if dt >= Self::PERIOD {
            let rate = (self.bytes - bytes) as f64 / dt.as_secs_f64();
            self.bytes_per_s = if self.bytes_per_s == 0.0 {
                rate
            } else {
                0.7 * self.bytes_per_s + 0.3 * rate
            };
            self.at_last = (now, self.bytes);
        }
    }

    /// How long `buffers` buffers waiting in the channels (of the mean size
    /// so far) and `bytes` more already taken out would take to drain at
    /// the recent rate; zero when nothing waits or no rate is measured yet
    /// (no prediction: the timeout decides).
    pub fn drain_time(&self, buffers: usize, bytes: usize) -> Duration {
        let waiting = buffers as f64 * self.mean_buffer() + bytes as f64;
        if waiting == 0.0 || self.bytes_per_s <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64((waiting / self.bytes_per_s).min(3600.0))
    }

    /// Mean bytes per buffer so far.
    fn mean_buffer(&self) -> f64 {
        if self.buffers == 0 {
            0.0
        } else {
            self.bytes as f64 / self.buffers as f64
        }
    }
}
