//! The keyed process operator in a chain.
//!
//! After a key_by exchange every record's key belongs to a key group owned
//! by the receiving subtask. The operator computes the key's stable hash once
//! and hands the user's [`KeyedProcessFunction`] a [`KeyContext`]: the
//! current key, as in Flink, through which keyed state is read and written.

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::core::time::processing_deadline;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::state::key_context::KeyContext;
use crate::state::timers::TimeDomain;
use crate::state::visitor::KeyedStates;
use weir_state::{KeyGroupRange, KeyHash};

/// Name of the keyed process operator's end-of-input flag in its inline
/// state: set once `on_end_of_input` ran, so that a restore after it does
/// not run it again.
pub const INPUT_ENDED_STATE: &str = "keyed.input-ended";

/// The keyed process operator in a chain: key extraction, hashing, the
/// user's function.
///
/// Records are processed as they arrive. (Holding them back a few records
/// to prefetch their state was measured on W1 and made it slower: the
/// lookups of consecutive records are independent, so the CPU already
/// overlaps their cache misses.)
pub struct KeyedProcessOp<F, KF, C> {
    func: F,
    key_fn: KF,
    out: C,
    ended: bool,
    uid: String,
    info: SubtaskInfo,
    /// Key groups this subtask owns (checked in debug builds).
    owned: KeyGroupRange,
    /// The current watermark (`i64::MIN` before the first).
    watermark: i64,
}

impl<F, KF, C> KeyedProcessOp<F, KF, C> {
    /// The operator `uid` for subtask `info`; `input_ended` is restored
    /// from a checkpoint taken after its end of input.
    pub fn new(
        func: F,
        key_fn: KF,
        out: C,
        uid: &str,
        info: &SubtaskInfo,
        input_ended: bool,
    ) -> Self {
        Self {
            func,
            key_fn,
            out,
            ended: input_ended,
            uid: uid.to_owned(),
            info: *info,
            owned: KeyGroupRange::for_subtask(
                info.max_parallelism,
                info.parallelism as u32,
                info.index as u32,
            ),
            watermark: i64::MIN,
        }
    }

    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
}

impl<F, KF, C> KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    C: Collector<F::Out>,
{
    /// The chain after this operator (tests).
    #[cfg(test)]
    pub(crate) fn output_mut(&mut self) -> &mut C {
        &mut self.out
    }

    /// The user's function (tests).
    #[cfg(test)]
    pub(crate) fn function_mut(&mut self) -> &mut F {
        &mut self.func
    }

    /// Fires the event-time timers at or before `watermark`, in timestamp
    /// order (including those `on_timer` registers for passed times).
    fn fire_event_timers(&mut self, watermark: i64) {
        let ctx_watermark = self.watermark.max(watermark);
        loop {
            let Some(timers) = self.func.timer_service() else {
                return;
            };
            timers.advance_watermark(watermark);
            let Some((ts, key)) = timers.pop_due(TimeDomain::EventTime, watermark) else {
                return;
            };
            let ctx = KeyContext::with_watermark(key, ctx_watermark);
            self.func
                .on_timer(ts, &ctx, TimeDomain::EventTime, &mut self.out);
        }
    }

    /// Fires the processing-time timers due by the service's clock; returns
    /// whether any fired and when the next one is due (none after the end
    /// of the input).
    fn fire_processing_timers(&mut self, now: std::time::Instant) -> FlushOutcome {
        let mut outcome = FlushOutcome::default();
        if self.ended {
            return outcome;
        }
        let Some(timers) = self.func.timer_service() else {
            return outcome;
        };
        let now_ms = timers.processing_time();
        loop {
            let Some(timers) = self.func.timer_service() else {
                return outcome;
            };
            let Some((ts, key)) = timers.pop_due(TimeDomain::ProcessingTime, now_ms) else {
                outcome.next_deadline = timers
                    .next_processing_timer()
                    .and_then(|ts| processing_deadline(now, now_ms, ts));
                return outcome;
            };
            outcome.progressed = true;
            let ctx = KeyContext::with_watermark(key, self.watermark);
            self.func
                .on_timer(ts, &ctx, TimeDomain::ProcessingTime, &mut self.out);
        }
    }
}

impl<F, KF, C> ChainControl for KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available()
    }

    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        let timers = self.fire_processing_timers(now);
        let flushed = self.out.flush(now);
        FlushOutcome {
            progressed: flushed.progressed || timers.progressed,
            next_deadline: crate::core::time::earliest(flushed.next_deadline, timers.next_deadline),
        }
    }

    fn end_input(&mut self) {
        if !self.ended {
            self.fire_event_timers(i64::MAX);
            self.ended = true;
            self.func.on_end_of_input(&mut self.out);
        }
        self.out.end_input();
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        let part = snapshot.operator(&self.uid, &self.info);
        self.func
            .visit_state(&mut KeyedStates::snapshot(&mut part.keyed));
        if let Some(timers) = self.func.timer_service() {
            timers.snapshot(&mut part.keyed);
        }
        if self.ended {
            part.inline.push((INPUT_ENDED_STATE.to_owned(), vec![1]));
        }
        self.out.snapshot(snapshot);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id);
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
        if watermark > self.watermark {
            self.watermark = watermark;
            self.fire_event_timers(watermark);
            self.func.on_watermark(watermark, &mut self.out);
            self.out.on_watermark(watermark);
        }
    }

    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.out.on_watermark_status(status);
    }
}

impl<F, KF, C> Collector<F::In> for KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    KF: Fn(&F::In) -> F::Key,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn collect(&mut self, record: F::In) {
        let ctx = KeyContext::with_watermark((self.key_fn)(&record), self.watermark);
        debug_assert!(
            self.owned.contains(weir_state::key_group_for_hash(
                ctx.hash,
                self.info.max_parallelism
            )),
            "record routed to a subtask that does not own its key group"
        );
        self.func.process(&ctx, record, &mut self.out);
    }

    #[inline]
    fn collect_many<I: Iterator<Item = F::In>>(&mut self, records: &mut I, limit: usize) -> usize {
        let (key_fn, owned, max_parallelism) =
            (&self.key_fn, self.owned, self.info.max_parallelism);
        let mut records = records.by_ref().inspect(|record| {
            debug_assert!(
                owned.contains(weir_state::key_group_for_hash(
                    key_fn(record).key_hash(),
                    max_parallelism
                )),
                "record routed to a subtask that does not own its key group"
            );
        });
        self.func.process_many(
            &mut records,
            &self.key_fn,
            self.watermark,
            limit,
            &mut self.out,
        )
    }
}
