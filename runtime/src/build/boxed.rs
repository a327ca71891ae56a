//! A chain builder of any type: the links built so far behind one trait
//! object, so that code building jobs from data (weir's SQL planner) has
//! one stream type whatever operators came before
//! ([`Stream::boxed`](crate::api::stream::Stream::boxed)).
//!
//! A chain is built tail first: each link's builder wraps the collector it
//! is handed and passes it to the link before it. [`BoxedChain`] hands the
//! links before it the chain after it as a [`BoxedCollector`], so the two
//! halves are monomorphised apart and joined by one virtual call per record
//! (a run of records handed over together crosses in one call, and the
//! chain after it loops over the run itself: see
//! [`DynCollector::collect_run`](crate::chain::branch::DynCollector::collect_run)).
//! Unlike a fork ([`crate::build::branch`]) there is no tee: no clone, no
//! loop over branches, and the stage's task and name are the chain's own.

use std::sync::Arc;

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::branch::BoxedCollector;
use crate::chain::control::Collector;
use crate::chain::task::Task;

/// A [`ChainBuilder`] usable as a trait object (its `build` is generic
/// over the downstream collector, so `ChainBuilder` itself is not).
trait DynChainBuilder<T>: Send + Sync {
    /// Builds the task of subtask `ctx.info` whose chain ends in `out`.
    fn build_boxed(
        &self,
        ctx: &mut BuildContext<'_>,
        out: BoxedCollector<T>,
    ) -> Result<Box<dyn Task>, BuildError>;
}

impl<T: 'static, B: ChainBuilder<T>> DynChainBuilder<T> for B {
    fn build_boxed(
        &self,
        ctx: &mut BuildContext<'_>,
        out: BoxedCollector<T>,
    ) -> Result<Box<dyn Task>, BuildError> {
        self.build(ctx, out)
    }
}

/// The links of a chain so far, of any type, ending in records of `T`.
pub struct BoxedChain<T>(Arc<dyn DynChainBuilder<T>>);

impl<T: 'static> BoxedChain<T> {
    /// Boxes `chain`.
    pub(crate) fn new<B: ChainBuilder<T>>(chain: B) -> Self {
        Self(Arc::new(chain))
    }
}

impl<T: 'static> ChainBuilder<T> for BoxedChain<T> {
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        self.0.build_boxed(ctx, BoxedCollector::new(out))
    }
}
