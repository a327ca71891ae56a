//! The builders of the broadcast process operators: make each subtask's
//! function, check and restore its states and the broadcast state.

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::two_input::TwoInputChain;
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::core::subtask::SubtaskInfo;
use crate::operators::broadcast::function::{
    BroadcastProcessFunction, KeyedBroadcastProcessFunction,
};
use crate::operators::broadcast::op::{
    restore_broadcast, BroadcastProcessOp, KeyedBroadcastProcessOp,
};
use crate::operators::broadcast::state::BroadcastState;
use crate::state::registry::take_created_states;
use crate::state::visitor::KeyedStates;
use std::marker::PhantomData;
use std::sync::Arc;
use weir_net::Wire;

/// Chain link of a keyed broadcast operator: the two-input head, then the
/// operator.
pub struct KeyedBroadcastChain<A, B, FF, KF> {
    pub(crate) first: usize,
    pub(crate) second: usize,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
    pub(crate) key_fn: KF,
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
    ) -> Box<dyn Task> {
        let _ = take_created_states();
        let mut func = (self.factory)(&ctx.info);
        let created = take_created_states();
        if ctx.checkpointing.is_some() {
            let mut visited = Vec::new();
            func.visit_state(&mut KeyedStates::names(&mut visited));
            visited.sort();
            if let Some(dup) = visited.windows(2).find(|w| w[0] == w[1]) {
                panic!(
                    "keyed broadcast operator `{}` has two states named `{}`: state names must \
                     be unique",
                    self.uid, dup[0]
                );
            }
            let reserved = [
                crate::state::timers::EVENT_TIMERS_STATE,
                crate::state::timers::PROCESSING_TIMERS_STATE,
            ];
            if let Some(r) = visited.iter().find(|v| reserved.contains(&v.as_str())) {
                panic!(
                    "keyed broadcast operator `{}` has a state named `{r}`, the name of its \
                     timers in checkpoints: rename the state",
                    self.uid
                );
            }
            if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
                panic!(
                    "keyed broadcast operator `{}` creates state `{missing}` but its visit_state \
                     does not visit it: the state would be lost by checkpoints",
                    self.uid
                );
            }
        }
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let mut states = KeyedStates::restore(&scope);
            func.visit_state(&mut states);
            if let Some(e) = states.into_error() {
                panic!(
                    "keyed broadcast operator `{}` cannot restore checkpoint {}: {e}",
                    self.uid,
                    restore.id()
                );
            }
            if let Some(timers) = func.timer_service() {
                if let Err(e) = timers.restore(&scope) {
                    panic!(
                        "keyed broadcast operator `{}` cannot restore its timers: {e}",
                        self.uid
                    );
                }
            }
            restore_broadcast(&scope, &self.uid, &mut state);
        }
        let op = KeyedBroadcastProcessOp::new(
            func,
            self.key_fn.clone(),
            out,
            state,
            &self.uid,
            &ctx.info,
        );
        TwoInputChain::<A, B>::new(self.first, self.second).build(ctx, op)
    }
}

/// Chain link of a non-keyed broadcast operator.
pub struct BroadcastChain<A, B, FF> {
    pub(crate) first: usize,
    pub(crate) second: usize,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
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
    ) -> Box<dyn Task> {
        let func = (self.factory)(&ctx.info);
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            restore_broadcast(&restore.scope(&self.uid, &ctx.info), &self.uid, &mut state);
        }
        let op = BroadcastProcessOp::new(func, out, state, &self.uid, &ctx.info);
        TwoInputChain::<A, B>::new(self.first, self.second).build(ctx, op)
    }
}
