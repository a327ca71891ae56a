//! A stage's tail that sends every record to every receiving subtask: the
//! output of a broadcast edge.

use weir_net::{WatermarkStatus, Wire};

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;
use crate::exchange::output::ExchangeOutput;

/// The sending side of a broadcast edge (every record to every channel) or
/// a rebalance edge (round-robin).
pub struct FanOutOutput<T> {
    inner: ExchangeOutput<T, u64, fn(&T) -> u64>,
    all: bool,
    next: usize,
}

/// The key function of a fan-out edge's output, never called: fan-out
/// edges pick channels without a key.
pub fn no_key<T>(_: &T) -> u64 {
    0
}

impl<T: Wire> FanOutOutput<T> {
    /// Sends through `inner` to every channel (`all`) or round-robin,
    /// starting with channel `first`.
    pub fn new(inner: ExchangeOutput<T, u64, fn(&T) -> u64>, all: bool, first: usize) -> Self {
        Self {
            inner,
            all,
            next: first,
        }
    }
}

impl<T: Wire> Collector<T> for FanOutOutput<T> {
    #[inline]
    fn collect(&mut self, record: T) {
        if self.all {
            self.inner.send_to_all(&record);
        } else {
            self.inner.send_to(self.next, &record);
            self.next += 1;
            if self.next == self.inner.channel_count() {
                self.next = 0;
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

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.inner.failure()
    }
}
