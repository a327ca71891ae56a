//! The broadcast process operators: keyed records get a key context and
//! read-only broadcast state, broadcast records the state read-write.

use weir_net::{WatermarkStatus, Wire};
use weir_state::{StateKey, StateValue};

use crate::build::context::BuildContext;
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::core::time::earliest;
use crate::exchange::decoder::CoInput;
use crate::operators::broadcast::function::{
    BroadcastProcessFunction, KeyedBroadcastProcessFunction,
};
use crate::operators::broadcast::state::{BroadcastState, BROADCAST_STATE};
use crate::operators::keyed::base::{KeyedCore, KeyedHooks, TimerTarget};
use crate::state::key_context::KeyContext;
use crate::state::key_selector::KeySelector;
use crate::state::timers::{TimeDomain, TimerQueues};

/// Restores broadcast state `state` of operator `uid` from `scope`, for
/// the task `ctx` builds.
pub(crate) fn restore_broadcast<K, V>(
    scope: &RestoreScope<'_>,
    ctx: &BuildContext<'_>,
    uid: &str,
    state: &mut BroadcastState<K, V>,
) -> Result<(), BuildError>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
{
    let bytes = scope
        .inline_replicated(BROADCAST_STATE)
        .map_err(|source| BuildError::Restore {
            task: ctx.task_name(),
            kind: "broadcast operator",
            uid: uid.to_owned(),
            checkpoint: scope.checkpoint_id(),
            part: Restoring::Inline,
            source: Box::new(source),
        })?;
    if let Some(bytes) = bytes {
        state
            .decode_into(bytes)
            .map_err(|source| BuildError::BroadcastState {
                task: ctx.task_name(),
                uid: uid.to_owned(),
                checkpoint: scope.checkpoint_id(),
                source,
            })?;
    }
    Ok(())
}

/// The keyed broadcast operator: keyed records with their key context and
/// the read-only broadcast state; broadcast records with the state
/// read-write; the keyed function's states, timers and event time run
/// through the [`KeyedCore`] every keyed operator shares.
pub struct KeyedBroadcastProcessOp<F: KeyedBroadcastProcessFunction, KF, C> {
    func: F,
    key_fn: KF,
    out: C,
    state: BroadcastState<F::StateKey, F::StateValue>,
    core: KeyedCore,
}

/// The keyed broadcast function's hooks for the [`KeyedCore`].
pub(crate) fn keyed_hooks<F: KeyedBroadcastProcessFunction>() -> KeyedHooks<F, F::Key> {
    KeyedHooks {
        visit_state: F::visit_state,
        timer_service: F::timer_service,
    }
}

/// Where the keyed broadcast operator's timers fire: its function, with
/// the read-only broadcast state, into its chain.
struct Fire<'a, F: KeyedBroadcastProcessFunction, C> {
    func: &'a mut F,
    state: &'a BroadcastState<F::StateKey, F::StateValue>,
    out: &'a mut C,
}

impl<F: KeyedBroadcastProcessFunction, C: Collector<F::Out>> TimerTarget for Fire<'_, F, C> {
    type Key = F::Key;

    fn timers(&mut self) -> Option<&mut dyn TimerQueues<F::Key>> {
        self.func.timer_service()
    }

    fn on_timer(&mut self, timestamp: i64, ctx: &KeyContext<F::Key>, domain: TimeDomain) {
        self.func
            .on_timer(timestamp, ctx, domain, self.state, self.out);
    }
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
            // Unlike the keyed process operator, this one keeps no
            // end-of-input flag in its checkpoints: it starts as not ended.
            core: KeyedCore::new(uid, info, false),
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
}

impl<F, KF, C> Collector<CoInput<F::In, F::Broadcast>> for KeyedBroadcastProcessOp<F, KF, C>
where
    F: KeyedBroadcastProcessFunction,
    KF: KeySelector<F::In, Key = F::Key>,
    C: Collector<F::Out>,
{
    #[inline]
    fn collect(&mut self, record: CoInput<F::In, F::Broadcast>) {
        match record {
            CoInput::First(r) => {
                let ctx = self.core.context(self.key_fn.key(&r));
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
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        self.out.is_available_for(records)
    }

    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        let mut target = Fire {
            func: &mut self.func,
            state: &self.state,
            out: &mut self.out,
        };
        let timers = self.core.fire_processing_timers(now, &mut target);
        let cleanup = self.core.ttl_tick(now, &mut self.func, &keyed_hooks::<F>());
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
            state: &self.state,
            out: &mut self.out,
        };
        self.core.end_input(&mut target);
        self.out.end_input();
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        let part = self
            .core
            .snapshot(snapshot, &mut self.func, &keyed_hooks::<F>());
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
        if self.core.advance_watermark(watermark) {
            let mut target = Fire {
                func: &mut self.func,
                state: &self.state,
                out: &mut self.out,
            };
            self.core.fire_event_timers(watermark, &mut target);
            self.out.on_watermark(watermark);
        }
    }

    fn on_watermark_status(&mut self, status: WatermarkStatus) {
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
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        self.out.is_available_for(records)
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
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.out.on_latency_marker(marker)
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.out.failure()
    }
}
