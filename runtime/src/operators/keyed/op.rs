//! The keyed process operator in a chain.
//!
//! After a key_by exchange every record's key belongs to a key group owned
//! by the receiving subtask. The operator computes the key's stable hash once
//! and hands the user's [`KeyedProcessFunction`] a [`KeyContext`]: the
//! current key, as in Flink, through which keyed state is read and written.

use crate::core::timestamp::{set_record_timestamp, NO_TIMESTAMP};
use weir_state::KeyHash;

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::core::time::earliest;
use crate::operators::keyed::base::{KeyedCore, KeyedHooks, TimerTarget, INPUT_ENDED_STATE};
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::state::key_context::KeyContext;
use crate::state::key_selector::KeySelector;
use crate::state::timers::{TimeDomain, TimerQueues};

/// The keyed process operator in a chain: key extraction, hashing, the
/// user's function; its timers, states and event time run through the
/// [`KeyedCore`] every keyed operator shares.
///
/// Records are processed as they arrive. (Holding them back a few records
/// to prefetch their state was measured on W1 and made it slower: the
/// lookups of consecutive records are independent, so the CPU already
/// overlaps their cache misses.)
pub struct KeyedProcessOp<F, KF, C> {
    func: F,
    key_fn: KF,
    out: C,
    core: KeyedCore,
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
            core: KeyedCore::new(uid, info, input_ended),
        }
    }

    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.core.watermark()
    }
}

/// The keyed process function's hooks for the [`KeyedCore`].
pub(crate) fn hooks<F: KeyedProcessFunction>() -> KeyedHooks<F, F::Key> {
    KeyedHooks {
        visit_state: F::visit_state,
        timer_service: F::timer_service,
    }
}

/// Where the keyed process operator's timers fire: its function, into its
/// chain.
struct Fire<'a, F, C> {
    func: &'a mut F,
    out: &'a mut C,
}

impl<F: KeyedProcessFunction, C: Collector<F::Out>> TimerTarget for Fire<'_, F, C> {
    type Key = F::Key;

    fn timers(&mut self) -> Option<&mut dyn TimerQueues<F::Key>> {
        self.func.timer_service()
    }

    fn on_timer(&mut self, timestamp: i64, ctx: &KeyContext<F::Key>, domain: TimeDomain) {
        // What an event-time timer emits has the timer's time as its
        // timestamp; a processing-time timer's output has none (Flink's).
        set_record_timestamp(match domain {
            TimeDomain::EventTime => timestamp,
            TimeDomain::ProcessingTime => NO_TIMESTAMP,
        });
        self.func.on_timer(timestamp, ctx, domain, self.out);
    }
}

impl<F, KF, C> KeyedProcessOp<F, KF, C> {
    /// The user's function.
    pub fn function(&self) -> &F {
        &self.func
    }

    /// The user's function, to change (tests: the operator test harness
    /// reads and writes its states and timers through it).
    pub fn function_mut(&mut self) -> &mut F {
        &mut self.func
    }

    /// The chain after this operator.
    pub fn output(&self) -> &C {
        &self.out
    }

    /// The chain after this operator, to change (tests).
    pub fn output_mut(&mut self) -> &mut C {
        &mut self.out
    }

    /// The key function.
    pub fn key_fn(&self) -> &KF {
        &self.key_fn
    }

    /// Whether the operator's input ended (here, or before the restored
    /// checkpoint).
    pub fn input_ended(&self) -> bool {
        self.core.ended()
    }

    /// The key groups this subtask owns and the job's key-group count.
    pub fn key_groups(&self) -> (weir_state::KeyGroupRange, u32) {
        self.core.key_groups()
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
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        self.out.is_available_for(records)
    }

    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        let mut target = Fire {
            func: &mut self.func,
            out: &mut self.out,
        };
        let timers = self.core.fire_processing_timers(now, &mut target);
        let cleanup = self.core.ttl_tick(now, &mut self.func, &hooks::<F>());
        let flushed = self.out.flush(now);
        FlushOutcome {
            progressed: flushed.progressed || timers.progressed,
            next_deadline: earliest(
                earliest(flushed.next_deadline, timers.next_deadline),
                cleanup,
            ),
        }
    }

    fn end_input(&mut self) {
        let mut target = Fire {
            func: &mut self.func,
            out: &mut self.out,
        };
        if self.core.end_input(&mut target) {
            self.func.on_end_of_input(&mut self.out);
        }
        self.out.end_input();
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        let part = self.core.snapshot(snapshot, &mut self.func, &hooks::<F>());
        if self.core.ended() {
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
        if self.core.advance_watermark(watermark) {
            let mut target = Fire {
                func: &mut self.func,
                out: &mut self.out,
            };
            self.core.fire_event_timers(watermark, &mut target);
            self.func.on_watermark(watermark, &mut self.out);
            self.out
                .on_watermark(held_back(watermark, self.func.watermark_delay()));
        }
    }

    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.out.on_watermark_status(status);
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.out.on_latency_marker(marker)
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.out.failure()
    }
}

impl<F, KF, C> Collector<F::In> for KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    KF: KeySelector<F::In, Key = F::Key>,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn collect(&mut self, record: F::In) {
        let ctx = self.core.context(self.key_fn.key(&record));
        self.func.process(&ctx, record, &mut self.out);
        self.core.ttl_records(1, &mut self.func, &hooks::<F>());
    }

    #[inline]
    fn collect_many<I: Iterator<Item = F::In>>(&mut self, records: &mut I, limit: usize) -> usize {
        let watermark = self.core.watermark();
        // The key is computed for the check in debug builds only: a key
        // that owns memory (a `String`) would be cloned for nothing. And
        // release builds pass the records on unwrapped: the wrapper's
        // `next` (measured with a string key) is a call per record that
        // returns the record through memory.
        let taken = if cfg!(debug_assertions) {
            let (key_fn, core) = (&self.key_fn, &self.core);
            let mut records = records
                .by_ref()
                .inspect(|record| core.debug_check_owned(key_fn.key(record).key_hash()));
            self.func
                .process_many(&mut records, &self.key_fn, watermark, limit, &mut self.out)
        } else {
            self.func
                .process_many(records, &self.key_fn, watermark, limit, &mut self.out)
        };
        self.core.ttl_records(taken, &mut self.func, &hooks::<F>());
        taken
    }
}

/// The watermark passed on when the operator's is `watermark` and its
/// function holds it back by `delay` ms: the end of input passes as it is.
#[inline]
fn held_back(watermark: i64, delay: i64) -> i64 {
    if watermark == i64::MAX || delay <= 0 {
        watermark
    } else {
        watermark.saturating_sub(delay)
    }
}
