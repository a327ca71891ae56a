//! A stage as the graph keeps it: its chain and tail builders behind one
//! type-erased [`StageSpec`], built once per subtask.

use std::marker::PhantomData;

use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::task::Task;

/// A finished stage, type-erased.
pub trait StageSpec: Send + Sync {
    /// Builds the task of subtask `ctx.info`.
    fn build(&self, ctx: &mut BuildContext<'_>) -> Result<Box<dyn Task>, BuildError>;
    /// The stream's name if the stage was reserved but its stream never
    /// ended.
    fn unfinished(&self) -> Option<&str> {
        None
    }
}

/// A stage's chain and the tail it ends in.
pub struct Stage<T, B, TB> {
    pub(crate) chain: B,
    pub(crate) tail: TB,
    pub(crate) _record: PhantomData<fn(T)>,
}

impl<T: 'static, B: ChainBuilder<T>, TB: TailBuilder<T>> StageSpec for Stage<T, B, TB> {
    fn build(&self, ctx: &mut BuildContext<'_>) -> Result<Box<dyn Task>, BuildError> {
        self.tail.build_stage(ctx, &self.chain)
    }
}
