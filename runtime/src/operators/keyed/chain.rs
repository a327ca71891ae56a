//! The builder of a keyed process operator: makes each subtask's function,
//! checks its states, restores them and its timers.

use std::sync::Arc;

use crate::build::branch::BranchList;
use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::base::build_keyed_function;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::keyed::op::{hooks, KeyedProcessOp};
use crate::operators::side_output::{SideOutputs, WithSides};
use crate::state::key_selector::KeySelector;

/// Chain link of [`KeyedStream::process`](crate::api::keyed::KeyedStream::process).
pub struct KeyedProcessChain<B, FF, KF> {
    pub(crate) prev: B,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
    pub(crate) key_fn: KF,
    /// The streams taken from the operator's side outputs.
    pub(crate) side: BranchList,
}

impl<B, FF, KF, F> ChainBuilder<F::Out> for KeyedProcessChain<B, FF, KF>
where
    F: KeyedProcessFunction,
    F::In: 'static,
    F::Out: 'static,
    B: ChainBuilder<F::In>,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    KF: KeySelector<F::In, Key = F::Key>,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let built = build_keyed_function(
            ctx,
            &self.uid,
            "keyed operator",
            |info| (self.factory)(info),
            hooks::<F>(),
            |_| Ok(()),
        )?;
        let mut func = built.func;
        let mut outputs = SideOutputs::new(ctx, &self.side);
        func.side_outputs(&mut outputs);
        let sides = outputs.finish()?;
        let key_fn = self.key_fn.clone();
        if sides.is_empty() {
            let op =
                KeyedProcessOp::new(func, key_fn, out, &self.uid, &ctx.info, built.input_ended);
            self.prev.build(ctx, op)
        } else {
            let out = WithSides::new(out, sides);
            let op =
                KeyedProcessOp::new(func, key_fn, out, &self.uid, &ctx.info, built.input_ended);
            self.prev.build(ctx, op)
        }
    }
}
