//! A stage's tail that picks its records' receiving subtasks without a
//! key: the outputs of broadcast, rebalance, forward, shuffle, rescale and
//! custom-partitioned edges (Flink's `StreamPartitioner`s other than
//! `KeyGroupStreamPartitioner`).

use std::sync::Arc;

use weir_net::{WatermarkStatus, Wire};

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;
use crate::exchange::output::ExchangeOutput;
use crate::exchange::stamped::Stamped;

/// A user's choice of channel for a record among `n` (Flink's
/// `Partitioner.partition(key, numPartitions)` applied to the record's
/// key).
pub type ChannelChooser<T> = Arc<dyn Fn(&T, usize) -> usize + Send + Sync>;

/// How a fan-out edge picks the channels of a record.
pub enum Partitioning<T> {
    /// Every channel (Flink's `broadcast`).
    Broadcast,
    /// The next channel, round-robin (Flink's `rebalance`).
    RoundRobin,
    /// The channel of the sender's own index (Flink's `forward`: the same
    /// parallelism on both sides, which [`Stream::forward`](crate::api::stream::Stream::forward)
    /// checks when the job starts); round-robin where the parallelisms
    /// differ (a union's or a new chain's edge, as Flink's stream graph
    /// replaces such a forward edge by a rebalance).
    Forward,
    /// A channel picked uniformly at random (Flink's `shuffle`).
    Shuffle,
    /// Round-robin over the sender's share of the channels (Flink's
    /// `rescale`): with 2 senders and 4 receivers, sender 0 feeds 0 and 1,
    /// sender 1 feeds 2 and 3; with 4 senders and 2 receivers, senders 0
    /// and 1 feed 0.
    Rescale,
    /// The channel the user's function picks.
    Custom(ChannelChooser<T>),
}

impl<T> Partitioning<T> {
    /// Flink's name of the edge (`ship_strategy` in its REST plan).
    pub fn ship_strategy(&self) -> &'static str {
        match self {
            Self::Broadcast => "BROADCAST",
            Self::RoundRobin => "REBALANCE",
            Self::Forward => "FORWARD",
            Self::Shuffle => "SHUFFLE",
            Self::Rescale => "RESCALE",
            Self::Custom(_) => "CUSTOM",
        }
    }
}

impl<T> Clone for Partitioning<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Broadcast => Self::Broadcast,
            Self::RoundRobin => Self::RoundRobin,
            Self::Forward => Self::Forward,
            Self::Shuffle => Self::Shuffle,
            Self::Rescale => Self::Rescale,
            Self::Custom(f) => Self::Custom(f.clone()),
        }
    }
}

impl<T: 'static> Partitioning<T> {
    /// The same partitioning of [`Stamped`] records, by their values.
    pub fn on_value(&self) -> Partitioning<Stamped<T>> {
        match self {
            Self::Broadcast => Partitioning::Broadcast,
            Self::RoundRobin => Partitioning::RoundRobin,
            Self::Forward => Partitioning::Forward,
            Self::Shuffle => Partitioning::Shuffle,
            Self::Rescale => Partitioning::Rescale,
            Self::Custom(f) => {
                let f = f.clone();
                Partitioning::Custom(Arc::new(move |s: &Stamped<T>, n| f(&s.value, n)))
            }
        }
    }
}

/// The sending side of a fan-out edge.
pub struct FanOutOutput<T> {
    inner: ExchangeOutput<T, u64, fn(&T) -> u64>,
    mode: Mode<T>,
}

/// [`Partitioning`] resolved for one sender.
enum Mode<T> {
    All,
    /// Round-robin over channels `first..first + len`, next at `next`.
    Cycle {
        first: usize,
        len: usize,
        next: usize,
    },
    /// One channel.
    Fixed(usize),
    /// xorshift64 state.
    Random(u64),
    Custom(ChannelChooser<T>),
}

/// The key function of a fan-out edge's output, never called: fan-out
/// edges pick channels without a key.
pub fn no_key<T>(_: &T) -> u64 {
    0
}

impl<T: Wire> FanOutOutput<T> {
    /// Sends through `inner` as `partitioning` says, for sender `index` of
    /// `senders`.
    pub fn new(
        inner: ExchangeOutput<T, u64, fn(&T) -> u64>,
        partitioning: &Partitioning<T>,
        index: usize,
        senders: usize,
    ) -> Self {
        let n = inner.channel_count().max(1);
        let mode = match partitioning {
            Partitioning::Broadcast => Mode::All,
            // Round-robin starts at different receivers from different
            // senders.
            Partitioning::RoundRobin => Mode::Cycle {
                first: 0,
                len: n,
                next: index % n,
            },
            Partitioning::Forward if n == senders => Mode::Fixed(index),
            Partitioning::Forward => Mode::Cycle {
                first: 0,
                len: n,
                next: index % n,
            },
            Partitioning::Shuffle => {
                Mode::Random(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index as u64 + 1) | 1)
            }
            Partitioning::Rescale => {
                let senders = senders.max(1);
                if n >= senders {
                    let first = index * n / senders;
                    let len = ((index + 1) * n / senders - first).max(1);
                    Mode::Cycle {
                        first,
                        len,
                        next: first,
                    }
                } else {
                    Mode::Fixed(index * n / senders)
                }
            }
            Partitioning::Custom(f) => Mode::Custom(f.clone()),
        };
        Self { inner, mode }
    }
}

impl<T: Wire> Collector<T> for FanOutOutput<T> {
    #[inline]
    fn collect(&mut self, record: T) {
        match &mut self.mode {
            Mode::All => self.inner.send_to_all(&record),
            Mode::Cycle { first, len, next } => {
                let target = *next;
                *next += 1;
                if *next == *first + *len {
                    *next = *first;
                }
                self.inner.send_to(target, &record);
            }
            Mode::Fixed(target) => {
                let target = *target;
                self.inner.send_to(target, &record);
            }
            Mode::Random(state) => {
                let mut x = *state;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *state = x;
                let n = self.inner.channel_count() as u64;
                // Multiply-shift: uniform enough over a few channels.
                let target = ((u128::from(x) * u128::from(n)) >> 64) as usize;
                self.inner.send_to(target, &record);
            }
            Mode::Custom(f) => {
                let n = self.inner.channel_count();
                let target = f(&record, n);
                assert!(
                    target < n,
                    "a custom partitioner picked channel {target} of {n}: it must return an index below the number of partitions"
                );
                self.inner.send_to(target, &record);
            }
        }
    }
}

impl<T> ChainControl for FanOutOutput<T> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        self.inner.flush(now)
    }
    fn end_input(&mut self) {
        self.inner.end_input()
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        self.inner.snapshot(snapshot)
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> bool {
        self.inner.finish()
    }
    fn publish_metrics(&mut self) {
        self.inner.publish_metrics()
    }
    fn output_pending(&self) -> bool {
        self.inner.output_pending()
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.inner.on_watermark(watermark)
    }
    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.inner.on_watermark_status(status)
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.inner.on_latency_marker(marker)
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.inner.failure()
    }
}
