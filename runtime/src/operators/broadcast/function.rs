//! The user's functions of the broadcast state pattern: keyed and non-keyed.

use crate::operators::side_output::SideOutputs;
use weir_net::Wire;
use weir_state::StateKey;

use crate::chain::control::Collector;
use crate::operators::broadcast::state::BroadcastState;
use crate::state::key_context::KeyContext;
use crate::state::timers::{TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// User logic of a keyed stream connected with a broadcast stream (Flink's
/// `KeyedBroadcastProcessFunction`).
pub trait KeyedBroadcastProcessFunction: 'static {
    /// The keyed input's key type.
    type Key: StateKey + 'static;
    /// Records of the keyed input.
    type In;
    /// Records of the broadcast input.
    type Broadcast;
    /// Records out.
    type Out;
    /// Keys of the broadcast state.
    type StateKey: weir_state::StateKey + Wire;
    /// Values of the broadcast state.
    type StateValue: weir_state::StateValue + Wire;

    /// Processes one keyed record of key `ctx.key()`; the broadcast state
    /// is read-only here.
    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In,
        state: &BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Processes one broadcast record (every subtask sees each one); the
    /// broadcast state is read-write here.
    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        value: Self::Broadcast,
        state: &mut BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Hands every keyed state to `states`, as
    /// [`KeyedProcessFunction::visit_state`](crate::operators::keyed::function::KeyedProcessFunction::visit_state).
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let _ = states;
    }

    /// Lists the side outputs the function emits to, as
    /// [`crate::operators::keyed::KeyedProcessFunction::side_outputs`].
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }

    /// The function's timer service, if it uses timers.
    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        None
    }

    /// Timer `timestamp` fired for key `ctx.key()`; the broadcast state is
    /// read-only here.
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        state: &BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    ) {
        let _ = (timestamp, ctx, domain, state, out);
    }
}

/// User logic of a non-keyed stream connected with a broadcast stream
/// (Flink's `BroadcastProcessFunction`).
pub trait BroadcastProcessFunction: 'static {
    /// Records of the non-broadcast input.
    type In;
    /// Records of the broadcast input.
    type Broadcast;
    /// Records out.
    type Out;
    /// Keys of the broadcast state.
    type StateKey: weir_state::StateKey + Wire;
    /// Values of the broadcast state.
    type StateValue: weir_state::StateValue + Wire;

    /// Processes one record of the non-broadcast input; the broadcast
    /// state is read-only here.
    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        value: Self::In,
        state: &BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Processes one broadcast record; the broadcast state is read-write.
    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        value: Self::Broadcast,
        state: &mut BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Lists the side outputs the function emits to, as
    /// [`crate::operators::keyed::KeyedProcessFunction::side_outputs`].
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }
}
