//! Sinks: the tails of chains that leave the dataflow.
//!
//! A sink sees every record of its subtask through [`Sink::invoke`], then
//! [`Sink::finish`] once when its input has ended. The wrapping [`SinkOp`]
//! counts records into the worker's metrics (publishing every 1,024 records,
//! so the hot path stays free of atomic read-modify-writes).

use std::time::Instant;

use crate::metrics::Counter;
use crate::operator::{ChainControl, Collector, FlushOutcome};

/// A sink subtask.
pub trait Sink: 'static {
    /// Records it takes.
    type In;
    /// Takes one record.
    fn invoke(&mut self, record: Self::In);
    /// The input ended: every record has been invoked.
    fn finish(&mut self) {}
}

/// Wraps a [`Sink`] as the tail of a chain and counts what it receives.
pub struct SinkOp<S> {
    sink: S,
    finished: bool,
    local: u64,
    received: Counter,
}

/// Records between publications of the sink's counter to the metrics.
const PUBLISH_EVERY: u64 = 1024;

impl<S> SinkOp<S> {
    /// A chain tail feeding `sink`.
    pub fn new(sink: S, received: Counter) -> Self {
        Self {
            sink,
            finished: false,
            local: 0,
            received,
        }
    }
}

impl<S: Sink> ChainControl for SinkOp<S> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        true
    }

    fn flush(&mut self, _now: Instant) -> FlushOutcome {
        self.received.add(std::mem::take(&mut self.local));
        FlushOutcome::default()
    }

    fn finish(&mut self) -> bool {
        self.received.add(std::mem::take(&mut self.local));
        if !self.finished {
            self.finished = true;
            self.sink.finish();
        }
        true
    }
}

impl<S: Sink> Collector<S::In> for SinkOp<S> {
    #[inline(always)]
    fn collect(&mut self, record: S::In) {
        self.local += 1;
        if self.local == PUBLISH_EVERY {
            self.received.add(PUBLISH_EVERY);
            self.local = 0;
        }
        self.sink.invoke(record);
    }
}
