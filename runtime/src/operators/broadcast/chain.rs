//! The builders of the broadcast process operators: make each subtask's
//! function, check and restore its states and the broadcast state.

use crate::operators::side_output::{SideOutputs, WithSides};
use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::Wire;

use crate::build::branch::BranchList;
use crate::build::builder::ChainBuilder;
use crate::build::channel_rescale::{key_route_of, InputRoute};
use crate::build::context::BuildContext;
use crate::build::demand::TimestampDemand;
use crate::build::error::BuildError;
use crate::build::two_input::TwoInputChain;
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::core::subtask::SubtaskInfo;
use crate::operators::broadcast::function::{
    BroadcastProcessFunction, KeyedBroadcastProcessFunction,
};
use crate::operators::broadcast::op::{
    keyed_hooks, restore_broadcast, BroadcastProcessOp, KeyedBroadcastProcessOp,
};
use crate::operators::broadcast::state::BroadcastState;
use crate::operators::keyed::base::build_keyed_function;

/// Chain link of a keyed broadcast operator: the two-input head, then the
/// operator.
pub struct KeyedBroadcastChain<A, B, FF, KF> {
    pub(crate) first: usize,
    pub(crate) second: usize,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
    pub(crate) key_fn: KF,
    /// The streams taken from the operator's side outputs.
    pub(crate) side: BranchList,
    /// The keyed input's record timestamps, if it has event time.
    pub(crate) stamped: Option<TimestampDemand>,
    pub(crate) _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B, FF, KF, F> ChainBuilder<F::Out> for KeyedBroadcastChain<A, B, FF, KF>
where
    A: Wire,
    B: Wire,
    F: KeyedBroadcastProcessFunction<In = A, Broadcast = B>,
    F::Out: 'static,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    KF: Fn(&A) -> F::Key + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let mut state = BroadcastState::default();
        let built = build_keyed_function(
            ctx,
            &self.uid,
            "keyed broadcast operator",
            |info| (self.factory)(info),
            keyed_hooks::<F>(),
            |scope| restore_broadcast(scope, ctx, &self.uid, &mut state),
        )?;
        let mut func = built.func;
        let mut outputs = SideOutputs::new(ctx, &self.side);
        func.side_outputs(&mut outputs);
        let sides = outputs.finish()?;
        let routes = (
            InputRoute::Keyed(key_route_of::<A, F::Key, _>(
                self.key_fn.clone(),
                self.stamped.clone(),
            )),
            InputRoute::Broadcast,
        );
        let head = TwoInputChain::<A, B>::new(self.first, self.second, routes)
            .with_stamps((self.stamped.clone(), None));
        let (key_fn, uid, info) = (self.key_fn.clone(), &self.uid, &ctx.info.clone());
        if sides.is_empty() {
            let op = KeyedBroadcastProcessOp::new(func, key_fn, out, state, uid, info);
            head.build(ctx, op)
        } else {
            let out = WithSides::new(out, sides);
            let op = KeyedBroadcastProcessOp::new(func, key_fn, out, state, uid, info);
            head.build(ctx, op)
        }
    }
}

/// Chain link of a non-keyed broadcast operator.
pub struct BroadcastChain<A, B, FF> {
    pub(crate) first: usize,
    pub(crate) second: usize,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
    /// The streams taken from the operator's side outputs.
    pub(crate) side: BranchList,
    pub(crate) _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B, FF, F> ChainBuilder<F::Out> for BroadcastChain<A, B, FF>
where
    A: Wire,
    B: Wire,
    F: BroadcastProcessFunction<In = A, Broadcast = B>,
    F::Out: 'static,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let mut func = (self.factory)(&ctx.info);
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            restore_broadcast(
                &restore.scope(&self.uid, &ctx.info),
                ctx,
                &self.uid,
                &mut state,
            )?;
        }
        let mut outputs = SideOutputs::new(ctx, &self.side);
        func.side_outputs(&mut outputs);
        let sides = outputs.finish()?;
        let routes = (InputRoute::Rebalanced, InputRoute::Broadcast);
        let head = TwoInputChain::<A, B>::new(self.first, self.second, routes);
        let info = ctx.info;
        if sides.is_empty() {
            let op = BroadcastProcessOp::new(func, out, state, &self.uid, &info);
            head.build(ctx, op)
        } else {
            let out = WithSides::new(out, sides);
            let op = BroadcastProcessOp::new(func, out, state, &self.uid, &info);
            head.build(ctx, op)
        }
    }
}
