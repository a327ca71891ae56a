//! A chain tail that logs records, watermarks and statuses in the order
//! they arrive, and a punctuated generator driven by the records.

use std::time::Instant;

use weir_net::WatermarkStatus;

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;
use crate::operators::timestamps::generator::{WatermarkGenerator, WatermarkOutput};

/// What reached the tail, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A record's timestamp.
    Record(i64),
    Watermark(i64),
    Status(WatermarkStatus),
}

/// Logs every record (by its timestamp), watermark and status; takes
/// records while `available`.
pub struct LogTail {
    pub events: Vec<Event>,
    pub available: bool,
}

impl Default for LogTail {
    fn default() -> Self {
        Self {
            events: Vec::new(),
            available: true,
        }
    }
}

impl LogTail {
    /// The watermarks, in order.
    pub fn watermarks(&self) -> Vec<i64> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Watermark(w) => Some(*w),
                _ => None,
            })
            .collect()
    }
}

impl ChainControl for LogTail {
    fn is_available(&self) -> bool {
        self.available
    }
    fn flush(&mut self, _now: Instant) -> FlushOutcome {
        FlushOutcome::default()
    }
    fn end_input(&mut self) {}
    fn snapshot(&mut self, _snapshot: &mut TaskSnapshot) {}
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {}
    fn finish(&mut self) -> bool {
        true
    }
    fn publish_metrics(&mut self) {}
    fn output_pending(&self) -> bool {
        false
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.events.push(Event::Watermark(watermark));
    }
    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.events.push(Event::Status(status));
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        // Not what these tests look at.
        let _ = marker;
    }
    fn failure(&self) -> Option<&TaskError> {
        None
    }
}

/// Records are `(timestamp, action)`.
pub type Rec = (i64, i64);

/// No action: an ordinary record.
pub const PLAIN: i64 = i64::MIN;
/// Action: mark the stream idle.
pub const IDLE: i64 = i64::MIN + 1;
/// Action: mark the stream active.
pub const ACTIVE: i64 = i64::MIN + 2;

impl Collector<Rec> for LogTail {
    fn collect(&mut self, record: Rec) {
        self.events.push(Event::Record(record.0));
    }
}

/// The timestamp of a [`Rec`].
pub fn ts(r: &Rec) -> i64 {
    r.0
}

/// A punctuated generator: a record's action is a watermark to emit (any
/// value, also a lower one), or [`IDLE`] / [`ACTIVE`]; [`PLAIN`] does
/// nothing. Periodically it emits `periodic` if set.
#[derive(Clone, Copy, Debug, Default)]
pub struct Punctuated {
    pub periodic: Option<i64>,
}

impl WatermarkGenerator<Rec> for Punctuated {
    fn on_event(&mut self, record: &Rec, _timestamp: i64, output: &mut WatermarkOutput) {
        match record.1 {
            PLAIN => {}
            IDLE => output.mark_idle(),
            ACTIVE => output.mark_active(),
            w => output.emit_watermark(w),
        }
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        if let Some(w) = self.periodic {
            output.emit_watermark(w);
        }
    }
}
