//! The stateless chained operators: `map`, `filter` and `flat_map`.
//!
//! Each passes a run of records on as a run ([`Collector::collect_many`]):
//! the link below loops over them itself, and a record that a filter or a
//! flat-map drops costs no look at the chain's availability (a record
//! that emits nothing cannot change it).

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

    /// One record out per record in: the run goes on mapped, as long.
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        self.out.collect_many(&mut records.map(&mut self.f), limit)
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

    /// The records that pass go on as a run; `limit` counts the records
    /// taken, passing or not.
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        let mut passing = Passing {
            records,
            f: &mut self.f,
            taken: 0,
            limit,
        };
        self.out.collect_many(&mut passing, usize::MAX);
        passing.taken
    }
}

/// The records of a run that pass a filter, taken up to `limit` in all.
struct Passing<'a, I, F> {
    records: &'a mut I,
    f: &'a mut F,
    taken: usize,
    limit: usize,
}

impl<T, I: Iterator<Item = T>, F: FnMut(&T) -> bool> Iterator for Passing<'_, I, F> {
    type Item = T;

    #[inline(always)]
    fn next(&mut self) -> Option<T> {
        while self.taken < self.limit {
            // The record is handed on in the `Option` it came in, not
            // unwrapped and wrapped again: for a type whose `None` is a
            // niche in its last byte (a `CompactString`), rebuilding the
            // `Option` wrote that byte apart from the rest and the next
            // read of the whole record stalled on the store.
            let next = self.records.next();
            let Some(record) = &next else {
                return None;
            };
            self.taken += 1;
            if (self.f)(record) {
                return next;
            }
        }
        None
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

    /// The records made go on as a run; `limit` counts the records taken.
    /// If the chain stops taking in the middle of one record's output, the
    /// rest of it is collected anyway, as [`collect`](Self::collect) does.
    #[inline]
    fn collect_many<R: Iterator<Item = T>>(&mut self, records: &mut R, limit: usize) -> usize {
        let mut made = Flattened {
            records,
            f: &mut self.f,
            current: None,
            taken: 0,
            limit,
        };
        self.out.collect_many(&mut made, usize::MAX);
        let (taken, rest) = (made.taken, made.current);
        for r in rest.into_iter().flatten() {
            self.out.collect(r);
        }
        taken
    }
}

/// The records a flat-map makes of a run, taken up to `limit` in all.
struct Flattened<'a, R, F, J> {
    records: &'a mut R,
    f: &'a mut F,
    /// What is left of the last record's output.
    current: Option<J>,
    taken: usize,
    limit: usize,
}

impl<T, U, I, R, F> Iterator for Flattened<'_, R, F, I::IntoIter>
where
    I: IntoIterator<Item = U>,
    R: Iterator<Item = T>,
    F: FnMut(T) -> I,
{
    type Item = U;

    #[inline(always)]
    fn next(&mut self) -> Option<U> {
        loop {
            if let Some(made) = self.current.as_mut().and_then(Iterator::next) {
                return Some(made);
            }
            if self.taken == self.limit {
                self.current = None;
                return None;
            }
            let record = self.records.next()?;
            self.taken += 1;
            self.current = Some((self.f)(record).into_iter());
        }
    }
}

#[cfg(test)]
mod tests;
