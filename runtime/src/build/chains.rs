//! The builders of the stateless chained links: `map`, `filter`,
//! `flat_map`.

use std::marker::PhantomData;

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::control::Collector;
use crate::chain::ops::{FilterOp, FlatMapOp, MapOp};
use crate::chain::task::Task;

/// Chain link of [`Stream::map`](crate::api::stream::Stream::map).
pub struct MapChain<B, F, T> {
    pub(crate) prev: B,
    pub(crate) f: F,
    pub(crate) _input: PhantomData<fn(T)>,
}

/// Chain link of [`Stream::filter`](crate::api::stream::Stream::filter).
pub struct FilterChain<B, F> {
    pub(crate) prev: B,
    pub(crate) f: F,
}

/// Chain link of [`Stream::flat_map`](crate::api::stream::Stream::flat_map).
pub struct FlatMapChain<B, F, T> {
    pub(crate) prev: B,
    pub(crate) f: F,
    pub(crate) _input: PhantomData<fn(T)>,
}

impl<T, U, B, F> ChainBuilder<U> for MapChain<B, F, T>
where
    T: 'static,
    U: 'static,
    B: ChainBuilder<T>,
    F: Fn(T) -> U + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<U> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        self.prev.build(
            ctx,
            MapOp {
                f: self.f.clone(),
                out,
            },
        )
    }
}

impl<T, B, F> ChainBuilder<T> for FilterChain<B, F>
where
    T: 'static,
    B: ChainBuilder<T>,
    F: Fn(&T) -> bool + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        self.prev.build(
            ctx,
            FilterOp {
                f: self.f.clone(),
                out,
            },
        )
    }
}

impl<T, U, I, B, F> ChainBuilder<U> for FlatMapChain<B, F, T>
where
    T: 'static,
    U: 'static,
    I: IntoIterator<Item = U>,
    B: ChainBuilder<T>,
    F: Fn(T) -> I + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<U> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        self.prev.build(
            ctx,
            FlatMapOp {
                f: self.f.clone(),
                out,
            },
        )
    }
}
