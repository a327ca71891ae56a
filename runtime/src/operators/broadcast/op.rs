//! The broadcast process operators: keyed records get a key context and
//! read-only broadcast state, broadcast records the state read-write.

use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::core::time::processing_deadline;
use crate::exchange::decoder::CoInput;
use crate::operators::broadcast::function::{
    BroadcastProcessFunction, KeyedBroadcastProcessFunction,
};
use crate::operators::broadcast::state::{BroadcastState, BROADCAST_STATE};
use crate::state::key_context::KeyContext;
use crate::state::timers::TimeDomain;
use crate::state::visitor::KeyedStates;
use weir_net::{WatermarkStatus, Wire};
use weir_state::{KeyGroupRange, KeyHash};

/// Restores broadcast state `state` of operator `uid` from `scope`.
pub(crate) fn restore_broadcast<K, V>(
    scope: &RestoreScope<'_>,
    uid: &str,
    state: &mut BroadcastState<K, V>,
) where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    let bytes = scope
        .inline_replicated(BROADCAST_STATE)
        .unwrap_or_else(|e| panic!("broadcast operator `{uid}`: {e}"));
    if let Some(bytes) = bytes {
        if let Err(e) = state.decode_into(bytes) {
            panic!(
                "broadcast operator `{uid}` cannot restore its broadcast state from checkpoint {}: \
                 {e}",
                scope.checkpoint_id()
            );
        }
    }
}

/// The keyed broadcast operator: keyed records with their key context and
/// the read-only broadcast state; broadcast records with the state
/// read-write; the keyed function's timers fired as in the keyed process
/// operator.
pub struct KeyedBroadcastProcessOp<F: KeyedBroadcastProcessFunction, KF, C> {
    func: F,
    key_fn: KF,
    out: C,
    state: BroadcastState<F::StateKey, F::StateValue>,
    uid: String,
    info: SubtaskInfo,
    owned: KeyGroupRange,
    watermark: i64,
    ended: bool,
}

impl<F: KeyedBroadcastProcessFunction, KF, C: Collector<F::Out>> KeyedBroadcastProcessOp<F, KF, C> {
    /// The operator `uid` of subtask `info` with broadcast state `state`.
    pub fn new(
        func: F,
        key_fn: KF,
        out: C,
        state: BroadcastState<F::StateKey, F::StateValue>,
        uid: &str,
        info: &SubtaskInfo,
    ) -> Self {
        Self {
            func,
            key_fn,
            out,
            state,
            uid: uid.to_owned(),
            info: *info,
            owned: KeyGroupRange::for_subtask(
                info.max_parallelism,
                info.parallelism as u32,
                info.index as u32,
            ),
            watermark: i64::MIN,
            ended: false,
        }
    }

    /// The chain after this operator (tests).
    #[cfg(test)]
    pub(crate) fn output_mut(&mut self) -> &mut C {
        &mut self.out
    }

    /// The broadcast state.
    pub fn broadcast_state(&self) -> &BroadcastState<F::StateKey, F::StateValue> {
        &self.state
    }

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
                .on_timer(ts, &ctx, TimeDomain::EventTime, &self.state, &mut self.out);
        }
    }

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
            self.func.on_timer(
                ts,
                &ctx,
                TimeDomain::ProcessingTime,
                &self.state,
                &mut self.out,
            );
        }
    }
}

impl<F, KF, C> Collector<CoInput<F::In, F::Broadcast>> for KeyedBroadcastProcessOp<F, KF, C>
where
    F: KeyedBroadcastProcessFunction,
    KF: Fn(&F::In) -> F::Key,
    C: Collector<F::Out>,
{
    #[inline]
    fn collect(&mut self, record: CoInput<F::In, F::Broadcast>) {
        match record {
            CoInput::First(r) => {
                let ctx = KeyContext::with_watermark((self.key_fn)(&r), self.watermark);
                debug_assert!(
                    self.owned.contains(weir_state::key_group_for_hash(
                        ctx.hash(),
                        self.info.max_parallelism
                    )),
                    "record routed to a subtask that does not own its key group"
                );
                self.func
                    .process_element(&ctx, r, &self.state, &mut self.out);
            }
            CoInput::Second(b) => {
                self.func
                    .process_broadcast_element(b, &mut self.state, &mut self.out);
            }
        }
    }
}

impl<F, KF, C> ChainControl for KeyedBroadcastProcessOp<F, KF, C>
where
    F: KeyedBroadcastProcessFunction,
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
        part.inline
            .push((BROADCAST_STATE.to_owned(), self.state.encode()));
        self.out.snapshot(snapshot);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id);
    }

    fn finish(&mut self) -> bool {
        self.out.finish()
    }

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
            self.out.on_watermark(watermark);
        }
    }

    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.out.on_watermark_status(status);
    }
}

/// The non-keyed broadcast operator.
pub struct BroadcastProcessOp<F: BroadcastProcessFunction, C> {
    func: F,
    out: C,
    state: BroadcastState<F::StateKey, F::StateValue>,
    uid: String,
    info: SubtaskInfo,
}

impl<F: BroadcastProcessFunction, C> BroadcastProcessOp<F, C> {
    /// The operator `uid` of subtask `info` with broadcast state `state`.
    pub fn new(
        func: F,
        out: C,
        state: BroadcastState<F::StateKey, F::StateValue>,
        uid: &str,
        info: &SubtaskInfo,
    ) -> Self {
        Self {
            func,
            out,
            state,
            uid: uid.to_owned(),
            info: *info,
        }
    }
}

impl<F, C> Collector<CoInput<F::In, F::Broadcast>> for BroadcastProcessOp<F, C>
where
    F: BroadcastProcessFunction,
    C: Collector<F::Out>,
{
    #[inline]
    fn collect(&mut self, record: CoInput<F::In, F::Broadcast>) {
        match record {
            CoInput::First(r) => self.func.process_element(r, &self.state, &mut self.out),
            CoInput::Second(b) => {
                self.func
                    .process_broadcast_element(b, &mut self.state, &mut self.out)
            }
        }
    }
}

impl<F, C> ChainControl for BroadcastProcessOp<F, C>
where
    F: BroadcastProcessFunction,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available()
    }
    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        self.out.flush(now)
    }
    fn end_input(&mut self) {
        self.out.end_input()
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        snapshot
            .operator(&self.uid, &self.info)
            .inline
            .push((BROADCAST_STATE.to_owned(), self.state.encode()));
        self.out.snapshot(snapshot);
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> bool {
        self.out.finish()
    }
    fn publish_metrics(&mut self) {
        self.out.publish_metrics()
    }
    fn output_pending(&self) -> bool {
        self.out.output_pending()
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.out.on_watermark(watermark)
    }
    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.out.on_watermark_status(status)
    }
}
