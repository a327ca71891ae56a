//! Who reads the record timestamps of a stream with event time: decided
//! while the job is built, so that an exchange carries them (8 bytes a
//! record) and a timestamps link sets them only where an operator
//! downstream reads them (a window assigner given `record_timestamp`, a
//! process function, which may call `ctx.timestamp()`).
//!
//! Each stream with event time has a [`TimestampDemand`]; a stream made
//! from others (across an exchange, a union, a keyed function that keeps
//! its input's timestamps) has theirs upstream of its own. Marking a
//! demand marks its upstream, so the exchanges and the timestamps link on
//! the way carry and set them. A window's or a timer's results get their
//! timestamps from the window or the timer: their stream's demand starts
//! afresh. The flags are read when the subtasks are built, after the
//! whole job is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Whether the record timestamps of a stream are read downstream.
#[derive(Clone)]
pub struct TimestampDemand(Arc<Node>);

struct Node {
    needed: AtomicBool,
    /// Where the stream's timestamps come from (a union adds to it).
    upstream: Mutex<Vec<TimestampDemand>>,
}

impl TimestampDemand {
    /// The demand of a stream whose timestamps are made here.
    pub(crate) fn source() -> Self {
        Self::after([])
    }

    /// The demand of a stream whose timestamps come from `upstream`.
    pub(crate) fn after(upstream: impl IntoIterator<Item = TimestampDemand>) -> Self {
        Self(Arc::new(Node {
            needed: AtomicBool::new(false),
            upstream: Mutex::new(upstream.into_iter().collect()),
        }))
    }

    /// An operator reads the timestamps: the stream and every stream its
    /// timestamps come from must carry them.
    pub(crate) fn mark(&self) {
        if !self.0.needed.swap(true, Ordering::Relaxed) {
            let upstream = self
                .0
                .upstream
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            for u in upstream {
                u.mark();
            }
        }
    }

    /// Another stream the timestamps come from (a union's new input).
    pub(crate) fn add_upstream(&self, upstream: TimestampDemand) {
        if self.is_needed() {
            upstream.mark();
        }
        self.0
            .upstream
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(upstream);
    }

    /// Whether an operator downstream reads the timestamps.
    pub(crate) fn is_needed(&self) -> bool {
        self.0.needed.load(Ordering::Relaxed)
    }
}

/// Whether a stream that may have event time (`demand`) must carry its
/// timestamps.
pub(crate) fn needed(demand: &Option<TimestampDemand>) -> bool {
    demand.as_ref().is_some_and(TimestampDemand::is_needed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marking_a_stream_marks_where_its_timestamps_come_from_and_nothing_else() {
        let a = TimestampDemand::source();
        let b = TimestampDemand::source();
        let union = TimestampDemand::after([a.clone(), b.clone()]);
        let keyed = TimestampDemand::after([union.clone()]);
        let windowed = TimestampDemand::source();
        windowed.mark();
        assert!(!keyed.is_needed() && !a.is_needed());
        keyed.mark();
        assert!(keyed.is_needed() && union.is_needed() && a.is_needed() && b.is_needed());
        assert!(needed(&Some(a)) && !needed(&None));
    }
}
