//! The stateless chained operators: `map`, `filter` and `flat_map`.

use crate::chain::control::{forward_chain_control, ChainControl, Collector};

/// `map`: one record in, one out.
pub struct MapOp<F, C> {
    pub(crate) f: F,
    pub(crate) out: C,
}

forward_chain_control!(MapOp<F, C> where C: ChainControl);

impl<T, U, F: FnMut(T) -> U, C: Collector<U>> Collector<T> for MapOp<F, C> {
    #[inline(always)]
    fn collect(&mut self, record: T) {
        let mapped = (self.f)(record);
        self.out.collect(mapped);
    }
}

/// `filter`: records for which the predicate holds pass.
pub struct FilterOp<F, C> {
    pub(crate) f: F,
    pub(crate) out: C,
}

forward_chain_control!(FilterOp<F, C> where C: ChainControl);

impl<T, F: FnMut(&T) -> bool, C: Collector<T>> Collector<T> for FilterOp<F, C> {
    #[inline(always)]
    fn collect(&mut self, record: T) {
        if (self.f)(&record) {
            self.out.collect(record);
        }
    }
}

/// `flat_map`: each record becomes zero or more records.
pub struct FlatMapOp<F, C> {
    pub(crate) f: F,
    pub(crate) out: C,
}

forward_chain_control!(FlatMapOp<F, C> where C: ChainControl);

impl<T, U, I, F, C> Collector<T> for FlatMapOp<F, C>
where
    I: IntoIterator<Item = U>,
    F: FnMut(T) -> I,
    C: Collector<U>,
{
    #[inline(always)]
    fn collect(&mut self, record: T) {
        for r in (self.f)(record) {
            self.out.collect(r);
        }
    }
}
