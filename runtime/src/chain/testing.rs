//! A chain tail that keeps what it receives: the output of an operator
//! under test, in the crate's unit tests and in the operator test
//! harnesses of the `testing` feature (`crate::testing`). Also a test of
//! chained operators applied in order.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
#[cfg(test)]
use crate::chain::ops::{FilterOp, FlatMapOp, MapOp};
use crate::core::snapshot::TaskSnapshot;

/// A chain tail that keeps what it receives, always available.
pub struct VecTail<T> {
    /// The records, in the order they came.
    pub items: Vec<T>,
    /// Whether [`ChainControl::finish`] was called.
    pub finished: bool,
    /// The watermarks passed on to it, in order.
    pub watermarks: Vec<i64>,
    /// The watermark statuses passed on to it, in order.
    pub statuses: Vec<weir_net::WatermarkStatus>,
    /// The latency markers passed on to it, in order.
    pub markers: Vec<weir_net::LatencyMarker>,
}

// Not derived: a derive would ask `T: Default` of the records.
impl<T> Default for VecTail<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            finished: false,
            watermarks: Vec::new(),
            statuses: Vec::new(),
            markers: Vec::new(),
        }
    }
}

impl<T> ChainControl for VecTail<T> {
    fn is_available(&self) -> bool {
        true
    }
    fn is_available_for(&self, _records: usize) -> bool {
        true
    }
    fn flush(&mut self, _now: Instant) -> FlushOutcome {
        FlushOutcome::default()
    }
    fn end_input(&mut self) {}
    fn snapshot(&mut self, _snapshot: &mut TaskSnapshot) {}
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {}
    fn finish(&mut self) -> bool {
        self.finished = true;
        true
    }
    fn publish_metrics(&mut self) {}
    fn output_pending(&self) -> bool {
        false
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.watermarks.push(watermark);
    }
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.statuses.push(status);
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.markers.push(marker);
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        None
    }
}

impl<T> Collector<T> for VecTail<T> {
    fn collect(&mut self, record: T) {
        self.items.push(record);
    }
}

/// A chain tail with room for `room` more records, as an exchange with
/// `room` free buffers: available while it has room. A record collected
/// without room is an overdraft, counted: a link may collect the rest of
/// one record's output past it (as `collect` does), a look-ahead never.
pub struct RoomTail<T> {
    /// The records, in the order they came.
    pub items: Vec<T>,
    /// Records it still takes while available.
    pub room: usize,
    /// Records collected while it had no room.
    pub overdrafts: usize,
}

impl<T> RoomTail<T> {
    /// An empty tail with room for `room` records.
    pub fn new(room: usize) -> Self {
        Self {
            items: Vec::new(),
            room,
            overdrafts: 0,
        }
    }
}

impl<T> ChainControl for RoomTail<T> {
    fn is_available(&self) -> bool {
        self.room > 0
    }
    fn is_available_for(&self, records: usize) -> bool {
        self.room >= records
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
    fn on_watermark(&mut self, _watermark: i64) {}
    fn on_watermark_status(&mut self, _status: weir_net::WatermarkStatus) {}
    fn on_latency_marker(&mut self, _marker: weir_net::LatencyMarker) {}
    fn failure(&self) -> Option<&TaskError> {
        None
    }
}

impl<T> Collector<T> for RoomTail<T> {
    fn collect(&mut self, record: T) {
        match self.room.checked_sub(1) {
            Some(left) => self.room = left,
            None => self.overdrafts += 1,
        }
        self.items.push(record);
    }
}

/// A [`VecTail`] shared with whoever reads it (the operator test
/// harness's side outputs): the chain writes, the test takes.
pub struct SharedTail<T>(pub Rc<RefCell<VecTail<T>>>);

impl<T> ChainControl for SharedTail<T> {
    fn is_available(&self) -> bool {
        true
    }
    fn is_available_for(&self, _records: usize) -> bool {
        true
    }
    fn flush(&mut self, _now: Instant) -> FlushOutcome {
        FlushOutcome::default()
    }
    fn end_input(&mut self) {}
    fn snapshot(&mut self, _snapshot: &mut TaskSnapshot) {}
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {}
    fn finish(&mut self) -> bool {
        self.0.borrow_mut().finish()
    }
    fn publish_metrics(&mut self) {}
    fn output_pending(&self) -> bool {
        false
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.0.borrow_mut().on_watermark(watermark);
    }
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.0.borrow_mut().on_watermark_status(status);
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.0.borrow_mut().on_latency_marker(marker);
    }
    fn failure(&self) -> Option<&TaskError> {
        None
    }
}

impl<T> Collector<T> for SharedTail<T> {
    fn collect(&mut self, record: T) {
        self.0.borrow_mut().items.push(record);
    }
}

#[cfg(test)]
#[test]
fn chained_operators_apply_in_order() {
    let tail = VecTail::default();
    let fm = FlatMapOp {
        f: |x: u32| vec![x; x as usize],
        out: tail,
    };
    let filt = FilterOp {
        f: |x: &u32| x % 2 == 1,
        out: fm,
    };
    let mut chain = MapOp {
        f: |x: u32| x + 1,
        out: filt,
    };
    for x in 0..5 {
        chain.collect(x);
    }
    assert!(chain.finish());
    let tail = chain.out.out.out;
    assert_eq!(tail.items, vec![1, 3, 3, 3, 5, 5, 5, 5, 5]);
    assert!(tail.finished);
}
