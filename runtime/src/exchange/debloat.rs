//! Buffer debloating: an input gate sizes the data in flight towards it to
//! what it can consume within a target time.
//!
//! Under backpressure every channel into a slow operator is full, and an
//! aligned checkpoint barrier waits behind all of it. Flink's answer (since
//! 1.14), adapted here: the receiving gate measures its own throughput and
//! asks for only `throughput x target` bytes in flight. The budget is split
//! evenly over the gate's channels and expressed as two numbers its senders
//! obey: the size to which a sender fills a buffer before shipping it
//! (between `taskmanager.memory.min-segment-size` and the configured segment
//! size), and, once that size is at its least, how many buffers of credit a
//! channel keeps. Flink only shrinks the size; weir also lowers the credit,
//! because a weir channel's few buffers of even the least size may hold
//! more than a very slow consumer should have queued.
//!
//! [`BufferDebloater`] is pure: it is told how many bytes were consumed and
//! when the gate was idle, and it is handed the time. It does no I/O and
//! holds no atomics, so the gate owns it and calls it inline, and its
//! behaviour is tested with a simulated clock.
//!
//! Throughput is the bytes consumed per second of the time the gate was not
//! idle (it had data to consume), measured per period and smoothed with an
//! exponential moving average over `samples` periods. Leaving idle time out
//! (as Flink does) keeps a gate whose senders are slow, and which therefore
//! consumed little, from concluding that it is slow itself and starving
//! once the senders speed up.

use std::time::{Duration, Instant};

/// The `taskmanager.network.memory.buffer-debloat.*` options and the least
/// buffer size (`taskmanager.memory.min-segment-size`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebloatOptions {
    /// `buffer-debloat.target`: the time in which the gate should be able to
    /// consume the data in flight towards it.
    pub target: Duration,
    /// `buffer-debloat.period`: how often throughput is measured.
    pub period: Duration,
    /// `buffer-debloat.samples`: the number of periods the throughput's
    /// moving average spans (1: no smoothing).
    pub samples: u32,
    /// `buffer-debloat.threshold-percentages`: a change smaller than this
    /// percentage of the last announced in-flight size is not announced.
    pub threshold_percentages: u32,
    /// `taskmanager.memory.min-segment-size`: the least buffer size.
    pub min_buffer_size: usize,
}

/// What a gate asks of each of its channels' senders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DebloatTarget {
    /// Bytes a sender puts in a buffer before shipping it.
    pub buffer_size: usize,
    /// Buffers the channel may have in flight (its credit).
    pub buffers: usize,
}

impl DebloatTarget {
    /// The bytes one channel may have in flight: `buffer_size x buffers`.
    pub fn per_channel_bytes(&self) -> u64 {
        self.buffer_size as u64 * self.buffers as u64
    }
}

/// One input gate's buffer debloater; see the [module](self) documentation.
#[derive(Clone, Debug)]
pub struct BufferDebloater {
    target: Duration,
    period: Duration,
    /// Weight of a new sample in the moving average: `2 / (samples + 1)`.
    alpha: f64,
    /// The threshold as a fraction.
    threshold: f64,
    min_buffer_size: usize,
    max_buffer_size: usize,
    channels: usize,
    buffers_per_channel: usize,
    /// Start of the period being measured.
    period_start: Instant,
    /// Bytes consumed in it.
    consumed: u64,
    /// Idle time in it, not counting a pause still open.
    idle: Duration,
    /// When the open pause began, while the gate is idle.
    idle_since: Option<Instant>,
    /// The moving average, bytes per second of non-idle time; `None`
    /// before the first sample.
    throughput: Option<f64>,
    announced: DebloatTarget,
}

impl BufferDebloater {
    /// A debloater for a gate of `channels` channels that each start with
    /// `buffers_per_channel` buffers of credit and buffers of
    /// `max_buffer_size` bytes (the configured segment size; also the
    /// largest size it will ever announce). Measuring starts at `now`.
    ///
    /// A gate has at least one channel and a channel at least one buffer, so
    /// zeros count as one; a least buffer size above `max_buffer_size` is
    /// lowered to it.
    pub fn new(
        options: &DebloatOptions,
        channels: usize,
        buffers_per_channel: usize,
        max_buffer_size: usize,
        now: Instant,
    ) -> Self {
        let max_buffer_size = max_buffer_size.max(1);
        let buffers_per_channel = buffers_per_channel.max(1);
        Self {
            target: options.target,
            period: options.period,
            alpha: 2.0 / (f64::from(options.samples.max(1)) + 1.0),
            threshold: f64::from(options.threshold_percentages) / 100.0,
            min_buffer_size: options.min_buffer_size.clamp(1, max_buffer_size),
            max_buffer_size,
            channels: channels.max(1),
            buffers_per_channel,
            period_start: now,
            consumed: 0,
            idle: Duration::ZERO,
            idle_since: None,
            throughput: None,
            announced: DebloatTarget {
                buffer_size: max_buffer_size,
                buffers: buffers_per_channel,
            },
        }
    }

    /// Bytes consumed from the gate since the last call (the gate calls
    /// this as it reads).
    pub fn on_consumed(&mut self, bytes: u64) {
        self.consumed += bytes;
    }

    /// The gate found no data to consume at `now`: time from here until
    /// [`BufferDebloater::on_data`] does not count towards throughput.
    /// Repeated calls keep the earliest start.
    pub fn on_idle(&mut self, now: Instant) {
        self.idle_since.get_or_insert(now);
    }

    /// Data is available again at `now` (ends a pause begun by
    /// [`BufferDebloater::on_idle`]; without one, nothing happens).
    pub fn on_data(&mut self, now: Instant) {
        if let Some(since) = self.idle_since.take() {
            self.idle += now.saturating_duration_since(since.max(self.period_start));
        }
    }

    /// Ends the current period if at least `period` has passed since it
    /// began: takes its throughput sample, updates the average and returns
    /// a new target when it should be announced, i.e. when the in-flight
    /// bytes per channel it allows differ from the last announced by more
    /// than the threshold, or it has reached a bound (the least or the
    /// largest in-flight size) that the last did not. Call it at least
    /// every `period`; a later call makes one longer period.
    ///
    /// A period in which the gate was idle throughout carries no
    /// information about how fast it consumes, and leaves the average as
    /// it was.
    pub fn recalculate(&mut self, now: Instant) -> Option<DebloatTarget> {
        let elapsed = now.saturating_duration_since(self.period_start);
        if elapsed < self.period {
            return None;
        }
        let mut idle = self.idle;
        if let Some(since) = self.idle_since {
            idle += now.saturating_duration_since(since.max(self.period_start));
            // The pause goes on into the next period.
            self.idle_since = Some(now);
        }
        let busy = elapsed.saturating_sub(idle);
        let consumed = std::mem::take(&mut self.consumed);
        self.period_start = now;
        self.idle = Duration::ZERO;
        if busy.is_zero() {
            return None;
        }
        let sample = consumed as f64 / busy.as_secs_f64();
        let average = match self.throughput {
            None => sample,
            Some(average) => average + self.alpha * (sample - average),
        };
        self.throughput = Some(average);
        let wanted = self.target_for(average);
        self.should_announce(wanted).then(|| {
            self.announced = wanted;
            wanted
        })
    }

    /// The target last announced (at first: full buffers, full credit).
    pub fn current(&self) -> DebloatTarget {
        self.announced
    }

    /// The moving average of the gate's throughput, in bytes per second of
    /// non-idle time; 0 before the first period ended with data consumed.
    pub fn throughput_bytes_per_s(&self) -> f64 {
        self.throughput.unwrap_or(0.0)
    }

    /// The in-flight bytes the gate wants in total at its current
    /// throughput: `throughput x target` (before bounds).
    pub fn desired_in_flight_bytes(&self) -> f64 {
        self.throughput_bytes_per_s() * self.target.as_secs_f64()
    }

    /// The target that puts `throughput x target` bytes in flight over all
    /// channels, within the bounds: the buffer size shrinks first (all
    /// buffers of credit kept, as in Flink); below the least size, credit
    /// shrinks, to one buffer at the least.
    fn target_for(&self, throughput: f64) -> DebloatTarget {
        let per_channel = throughput * self.target.as_secs_f64() / self.channels as f64;
        let size = per_channel / self.buffers_per_channel as f64;
        if size >= self.min_buffer_size as f64 {
            DebloatTarget {
                buffer_size: (size.round() as usize).min(self.max_buffer_size),
                buffers: self.buffers_per_channel,
            }
        } else {
            let buffers = (per_channel / self.min_buffer_size as f64).ceil() as usize;
            DebloatTarget {
                buffer_size: self.min_buffer_size,
                buffers: buffers.clamp(1, self.buffers_per_channel),
            }
        }
    }

    fn should_announce(&self, wanted: DebloatTarget) -> bool {
        if wanted == self.announced {
            return false;
        }
        let least = DebloatTarget {
            buffer_size: self.min_buffer_size,
            buffers: 1,
        };
        let largest = DebloatTarget {
            buffer_size: self.max_buffer_size,
            buffers: self.buffers_per_channel,
        };
        if wanted == least || wanted == largest {
            return true;
        }
        let last = self.announced.per_channel_bytes() as f64;
        let next = wanted.per_channel_bytes() as f64;
        (next - last).abs() > self.threshold * last
    }
}

#[cfg(test)]
mod tests;
