//! The builders a stage is made of: its chain's links, head to tail
//! ([`ChainBuilder`]), and its tail ([`TailBuilder`]). Building a subtask
//! checks and restores its operators; a failure is a [`BuildError`].

use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::control::Collector;
use crate::chain::task::Task;

/// Builds a chain's head task around a given downstream collector.
pub trait ChainBuilder<T>: Send + Sync + 'static {
    /// Builds the task of subtask `ctx.info` whose chain ends in `out`.
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError>;
}

/// Builds a chain's tail (a sink or an exchange output).
pub trait TailBuilder<T>: Send + Sync + 'static {
    /// The tail's collector type.
    type Tail: Collector<T> + 'static;
    /// Builds the tail of subtask `ctx.info`.
    fn make(&self, ctx: &mut BuildContext<'_>) -> Result<Self::Tail, BuildError>;

    /// Builds the task of subtask `ctx.info` whose chain is `chain` ending
    /// in this tail. A tail that comes in more than one form (a
    /// timestamped exchange's output, or a bare one) picks it here, for
    /// the whole chain.
    fn build_stage<B: ChainBuilder<T>>(
        &self,
        ctx: &mut BuildContext<'_>,
        chain: &B,
    ) -> Result<Box<dyn Task>, BuildError> {
        let tail = self.make(ctx)?;
        chain.build(ctx, tail)
    }
}
