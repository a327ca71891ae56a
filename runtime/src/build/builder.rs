//! The builders a stage is made of: its chain's links, head to tail
//! ([`ChainBuilder`]), and its tail ([`TailBuilder`]).

use crate::build::context::BuildContext;
use crate::chain::control::Collector;
use crate::chain::task::Task;

/// Builds a chain's head task around a given downstream collector.
pub trait ChainBuilder<T>: Send + Sync + 'static {
    /// Builds the task of subtask `ctx.info` whose chain ends in `out`.
    fn build<C: Collector<T> + 'static>(&self, ctx: &mut BuildContext<'_>, out: C)
        -> Box<dyn Task>;
}

/// Builds a chain's tail (a sink or an exchange output).
pub trait TailBuilder<T>: Send + Sync + 'static {
    /// The tail's collector type.
    type Tail: Collector<T> + 'static;
    /// Builds the tail of subtask `ctx.info`.
    fn make(&self, ctx: &mut BuildContext<'_>) -> Self::Tail;
}
