//! Two-input stages: two keyed streams meet in one operator (Flink's
//! `ConnectedStreams` and `KeyedCoProcessFunction`).
//!
//! `keyed_a.connect(keyed_b)` (`keyed_b` built first and
//! [`detach`](crate::api::keyed::KeyedStream::detach)ed) ends both upstream stages in
//! their own key_by exchange, as any keyed operator's input would be; the
//! receiving stage's
//! head is one [`InputGate`](crate::exchange::gate::InputGate) over the channels of
//! both exchanges (first input's channels first). So, as in Flink's
//! two-input tasks, barrier alignment, unaligned capture and the watermark
//! minimum span both inputs, and the stage checkpoints once per barrier.
//! Records travel in their own [`Wire`](weir_net::Wire) form, untagged: the gate's
//! [`CoInputDecoder`](crate::exchange::decoder::CoInputDecoder) knows from the channel index which input a buffer
//! came from and yields a [`CoInput`]. Single-input stages keep their
//! decoder and pay nothing for this.
//!
//! The operator itself is the keyed process operator with the user's
//! [`KeyedCoProcessFunction`] behind an adapter: the same key context,
//! keyed state (shared by both inputs for the current key), timers,
//! checkpoints and rescaling.

use crate::operators::side_output::SideOutputs;
use weir_state::KeyHash;

use crate::chain::control::Collector;
use crate::exchange::decoder::CoInput;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::state::key_context::KeyContext;
use crate::state::timers::{TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// User logic of a keyed two-input operator (Flink's
/// `KeyedCoProcessFunction`): both inputs are keyed by the same key type,
/// and the keyed state and timers of the current key are shared by both.
pub trait KeyedCoProcessFunction: 'static {
    /// The key type of both inputs' key_by.
    type Key: Eq + KeyHash + 'static;
    /// Records of the first input.
    type In1;
    /// Records of the second input.
    type In2;
    /// Records out.
    type Out;

    /// Processes one record of the first input, of key `ctx.key()`.
    fn process_element1<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In1,
        out: &mut C,
    );

    /// Processes one record of the second input, of key `ctx.key()`.
    fn process_element2<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In2,
        out: &mut C,
    );

    /// The operator's event time (the minimum over both inputs) advanced to
    /// `watermark`, after the timers it fired.
    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        let _ = (watermark, out);
    }

    /// How far (ms) the watermark passed on stays behind the operator's,
    /// as [`KeyedProcessFunction::watermark_delay`].
    fn watermark_delay(&self) -> i64 {
        0
    }

    /// Both inputs ended (after every event-time timer fired).
    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        let _ = out;
    }

    /// Hands every keyed state to `states`, as
    /// [`KeyedProcessFunction::visit_state`].
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let _ = states;
    }

    /// Lists the side outputs the function emits to, as
    /// [`KeyedProcessFunction::side_outputs`].
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }

    /// The function's timer service, as
    /// [`KeyedProcessFunction::timer_service`].
    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        None
    }

    /// Timer `timestamp` fired for key `ctx.key()`.
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        let _ = (timestamp, ctx, domain, out);
    }
}

/// A [`KeyedCoProcessFunction`] seen as the keyed process function of
/// [`CoInput`] records the keyed operator runs.
pub struct CoProcessAdapter<F>(pub F);

impl<F: KeyedCoProcessFunction> KeyedProcessFunction for CoProcessAdapter<F> {
    type Key = F::Key;
    type In = CoInput<F::In1, F::In2>;
    type Out = F::Out;

    #[inline(always)]
    fn process<C: Collector<F::Out>>(
        &mut self,
        ctx: &KeyContext<F::Key>,
        value: Self::In,
        out: &mut C,
    ) {
        match value {
            CoInput::First(a) => self.0.process_element1(ctx, a, out),
            CoInput::Second(b) => self.0.process_element2(ctx, b, out),
        }
    }

    fn on_watermark<C: Collector<F::Out>>(&mut self, watermark: i64, out: &mut C) {
        self.0.on_watermark(watermark, out);
    }

    fn watermark_delay(&self) -> i64 {
        self.0.watermark_delay()
    }

    fn on_end_of_input<C: Collector<F::Out>>(&mut self, out: &mut C) {
        self.0.on_end_of_input(out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        self.0.visit_state(states);
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.0.side_outputs(outputs);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<F::Key>> {
        self.0.timer_service()
    }

    fn on_timer<C: Collector<F::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<F::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        self.0.on_timer(timestamp, ctx, domain, out);
    }
}

#[cfg(test)]
mod tests;
