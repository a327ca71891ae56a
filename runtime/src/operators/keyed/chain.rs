//! The builder of a keyed process operator: makes each subtask's function,
//! checks its states, restores them and its timers.

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::keyed::op::{KeyedProcessOp, INPUT_ENDED_STATE};
use crate::state::registry::take_created_states;
use crate::state::visitor::KeyedStates;
use std::sync::Arc;

/// Chain link of [`KeyedStream::process`].
pub struct KeyedProcessChain<B, FF, KF> {
    pub(crate) prev: B,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
    pub(crate) key_fn: KF,
}

impl<B, FF, KF, F> ChainBuilder<F::Out> for KeyedProcessChain<B, FF, KF>
where
    F: KeyedProcessFunction,
    F::In: 'static,
    F::Out: 'static,
    B: ChainBuilder<F::In>,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    KF: Fn(&F::In) -> F::Key + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let _ = take_created_states();
        let mut func = (self.factory)(&ctx.info);
        let mut created = take_created_states();
        if ctx.checkpointing.is_some() {
            let mut visited = Vec::new();
            func.visit_state(&mut KeyedStates::names(&mut visited));
            created.sort();
            visited.sort();
            if let Some(dup) = visited.windows(2).find(|w| w[0] == w[1]) {
                panic!(
                    "keyed operator `{}` has two states named `{}`: state names must be unique",
                    self.uid, dup[0]
                );
            }
            if let Some(reserved) = visited.iter().find(|v| {
                [
                    crate::state::timers::EVENT_TIMERS_STATE,
                    crate::state::timers::PROCESSING_TIMERS_STATE,
                ]
                .contains(&v.as_str())
            }) {
                panic!(
                    "keyed operator `{}` has a state named `{reserved}`, the name of its timers \
                     in checkpoints: rename the state",
                    self.uid
                );
            }
            if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
                panic!(
                    "keyed operator `{}` creates state `{missing}` but its visit_state does not \
                     visit it: the state would be lost by checkpoints",
                    self.uid
                );
            }
        }
        let mut input_ended = false;
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let mut states = KeyedStates::restore(&scope);
            func.visit_state(&mut states);
            if let Some(e) = states.into_error() {
                panic!(
                    "keyed operator `{}` cannot restore checkpoint {}: {e}",
                    self.uid,
                    restore.id()
                );
            }
            if let Some(timers) = func.timer_service() {
                if let Err(e) = timers.restore(&scope) {
                    panic!(
                        "keyed operator `{}` cannot restore the timers of checkpoint {}: {e}",
                        self.uid,
                        restore.id()
                    );
                }
            }
            input_ended = scope
                .flag(INPUT_ENDED_STATE)
                .unwrap_or_else(|e| panic!("keyed operator `{}`: {e}", self.uid));
        }
        let op = KeyedProcessOp::new(
            func,
            self.key_fn.clone(),
            out,
            &self.uid,
            &ctx.info,
            input_ended,
        );
        self.prev.build(ctx, op)
    }
}
