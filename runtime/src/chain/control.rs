//! The operator chain: how records flow by direct calls inside a worker.
//!
//! Operators connected by forward edges are *chained*: each one is a
//! [`Collector`] that holds the next one by value, so a record goes from the
//! source to the sink (or to an exchange) through inlined, monomorphised
//! calls: no queue, no serialization, no virtual call per record.
//!
//! Besides records, a chain carries a little control traffic from its head
//! (the task that feeds it) to its tail: whether the tail can take another
//! record ([`ChainControl::is_available`], the backpressure signal), flushing
//! of output buffers when the buffer timeout is due, and the end of input.
//! Every link forwards these; operators with their own end-of-input work
//! (the keyed process operator, sinks) hook in on the way. Checkpoint
//! barriers travel the same way: the head calls [`ChainControl::snapshot`]
//! once the barrier is aligned, each stateful link adds its state, and the
//! tail forwards the barrier (or, in a sink, pre-commits).

use std::time::Instant;

use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;

/// Control calls that travel down a chain, head to tail.
pub trait ChainControl {
    /// True if the chain can take one more input record now. A chain whose
    /// tail is an exchange says no when its buffer pool is exhausted; the
    /// head must then stop and try again later (backpressure).
    fn is_available(&self) -> bool;

    /// True if the chain can surely take `records` more input records now,
    /// each emitting at most one record (of at most one buffer) at the
    /// tail, without stopping in between: what a head that takes records
    /// ahead of processing them (the keyed operator's prefetching, see
    /// [`crate::operators::keyed::function::PREFETCH_AHEAD`]) asks, since
    /// it cannot give back a record it took. An exchange tail answers from
    /// its free buffers. The default answers only for one record (as
    /// [`is_available`](Self::is_available)) and says no for more: a link
    /// that does not forward this never lets a head run ahead of its
    /// backpressure.
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        records <= 1 && self.is_available()
    }

    /// Gives the tail a chance to move queued output (full buffers waiting
    /// for credit) and to send partly filled buffers whose buffer timeout is
    /// due at `now`. Returns when the next flush falls due, if any, and
    /// whether anything moved.
    fn flush(&mut self, now: Instant) -> FlushOutcome;

    /// The input of this chain has ended: every record has been collected.
    /// Operators emit their final results (the keyed process function's
    /// `on_end_of_input`); an exchange tail sends its buffers and
    /// end-of-data downstream; a sink finishes. Called once per attempt,
    /// before [`ChainControl::finish`]; barriers may still follow (the
    /// final checkpoint).
    fn end_input(&mut self);

    /// Checkpoint barrier `snapshot.barrier` reached this link after every
    /// record before it: add this link's state to `snapshot` (the
    /// synchronous part: freeze, do not write), then pass it on. An
    /// exchange tail sends the barrier into every channel, behind the
    /// records before it.
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot);

    /// Checkpoint `checkpoint_id` (and every earlier one) is complete.
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64);

    /// Flushes everything and signals end-of-partition downstream, after
    /// [`ChainControl::end_input`] and the final checkpoint. Called
    /// repeatedly until it returns true (the tail may need credit).
    fn finish(&mut self) -> bool;

    /// Publishes the chain's counters (records emitted at its end, bytes
    /// shipped per channel) to the subtask's metrics. The head calls it
    /// once at the end of every poll: the batch in which counters reach
    /// the shared atomics.
    fn publish_metrics(&mut self);

    /// True if the tail holds events it could not send for lack of credit
    /// (full buffers, a barrier, end-of-data or end-of-partition). After
    /// the end of the input, when the tail takes no more records, this is
    /// what makes the subtask backpressured rather than idle.
    fn output_pending(&self) -> bool;

    /// The event time of the records that follow is at least `watermark`
    /// (ms): it advanced to it. Operators with event-time logic act on it
    /// and pass it on; an exchange tail sends it into every channel, behind
    /// the records before it. Only jobs with a
    /// [`crate::operators::timestamps::WatermarkStrategy`] see watermarks.
    fn on_watermark(&mut self, watermark: i64);

    /// The stream became idle (no watermarks for now: it must not hold back
    /// event time downstream) or active again. Passed on like a watermark.
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus);

    /// A latency marker (`metrics.latency.interval`) passes: every link
    /// passes it on at once, behind the records before it; an exchange tail
    /// sends it into one of its channels (the next in turn), a sink ends
    /// it. Only jobs with latency tracking on see markers.
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker);

    /// The error a link of the chain failed with, if one did (a sink whose
    /// pre-commit, commit or write failed): the link then does nothing
    /// more, the head does not hand over the snapshot it was taking and
    /// its task fails with the error (see [`TaskError`]). Every link
    /// forwards it; links that cannot fail return `None`, so for their
    /// chains the head's check compiles to nothing.
    fn failure(&self) -> Option<&TaskError>;
}

/// What a [`ChainControl::flush`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushOutcome {
    /// Something was sent or reclaimed.
    pub progressed: bool,
    /// When the oldest still unsent record's buffer timeout expires.
    pub next_deadline: Option<Instant>,
}

/// Receives the records of a chain link.
pub trait Collector<T>: ChainControl {
    /// Takes one record.
    fn collect(&mut self, record: T);

    /// Takes records from `records` while the chain is available, at most
    /// `limit`; returns how many it took. The default is what a head
    /// calling [`collect`](Self::collect) for each record after checking
    /// [`ChainControl::is_available`] does. Links that can run through
    /// several records in one loop override it, with the same result: the
    /// keyed operator (handing them to
    /// [`crate::operators::keyed::function::KeyedProcessFunction::process_many`]), the timestamps link
    /// and the `key_by` exchange (see ARCHITECTURE, "Runs of records").
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        let mut taken = 0;
        while taken < limit && self.is_available() {
            let Some(record) = records.next() else {
                break;
            };
            self.collect(record);
            taken += 1;
        }
        taken
    }
}

/// Implements [`ChainControl`] for a link by forwarding to its `out` field.
macro_rules! forward_chain_control {
    ($ty:ident < $($gen:ident),* > where $($bounds:tt)*) => {
        impl<$($gen),*> $crate::chain::control::ChainControl for $ty<$($gen),*> where $($bounds)* {
            #[inline(always)]
            fn is_available(&self) -> bool {
                self.out.is_available()
            }
            #[inline(always)]
            fn is_available_for(&self, records: usize) -> bool {
                self.out.is_available_for(records)
            }
            #[inline]
            fn flush(&mut self, now: std::time::Instant) -> $crate::chain::control::FlushOutcome {
                self.out.flush(now)
            }
            fn end_input(&mut self) {
                self.out.end_input()
            }
            fn snapshot(&mut self, snapshot: &mut $crate::core::snapshot::TaskSnapshot) {
                self.out.snapshot(snapshot)
            }
            fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
                self.out.notify_checkpoint_complete(checkpoint_id)
            }
            fn finish(&mut self) -> bool {
                self.out.finish()
            }
            #[inline]
            fn publish_metrics(&mut self) {
                self.out.publish_metrics()
            }
            fn output_pending(&self) -> bool {
                self.out.output_pending()
            }
            fn on_watermark(&mut self, watermark: i64) {
                self.out.on_watermark(watermark)
            }
            fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
                self.out.on_watermark_status(status)
            }
            fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
                self.out.on_latency_marker(marker)
            }
            #[inline]
            fn failure(&self) -> Option<&$crate::chain::error::TaskError> {
                self.out.failure()
            }
        }
    };
}
pub(crate) use forward_chain_control;
