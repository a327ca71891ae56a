//! A stream of one type whatever operators came before it
//! ([`Stream::boxed`]), for code that builds jobs from data (weir's SQL
//! planner) rather than from types known when it is compiled.
//!
//! The stream goes on in the same chain and task: its operators so far
//! are built behind one trait object ([`BoxedChain`]), and the next
//! operator is chained to them through one virtual call per record or
//! run of records. A stream used more than once forks instead
//! ([`Stream::share`]).

use std::marker::PhantomData;

use crate::api::stream::Stream;
use crate::build::boxed::BoxedChain;
use crate::build::builder::ChainBuilder;

/// A stream whose chain so far is boxed ([`Stream::boxed`]).
pub type BoxedStream<'j, T> = Stream<'j, T, BoxedChain<T>>;

impl<'j, T: 'static, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// The same stream with its chain so far boxed: its type no longer
    /// says which operators came before, and it goes on in the same chain
    /// (no fork, no new stage; its side outputs, event time and
    /// parallelism are its own). Each record costs one virtual call where
    /// the boxed chain meets the next operator.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use weir_runtime::*;
    ///
    /// struct Sum(Arc<AtomicU64>);
    /// impl Sink for Sum {
    ///     type In = u64;
    ///     fn invoke(&mut self, x: u64) {
    ///         self.0.fetch_add(x, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let sum = Arc::new(AtomicU64::new(0));
    /// let s = sum.clone();
    /// let job = JobGraph::new("boxed");
    /// let numbers = job.source("numbers", |info: &SubtaskInfo| SequenceSource::new(info, 100, |i| i));
    /// // Two streams of different chains, one type.
    /// let streams: Vec<BoxedStream<'_, u64>> = vec![numbers.boxed()];
    /// let evens = streams.into_iter().next().unwrap().filter("evens", |x: &u64| x % 2 == 0);
    /// evens.boxed().sink("sum", move |_: &SubtaskInfo| Sum(s.clone()));
    ///
    /// let mut options = ExecutionOptions::with_workers(2);
    /// options.pin_cores = false;
    /// execute(job, &options).unwrap();
    /// assert_eq!(sum.load(Ordering::Relaxed), 2450);
    /// ```
    pub fn boxed(self) -> BoxedStream<'j, T> {
        Stream {
            job: self.job,
            chain: BoxedChain::new(self.chain),
            name: self.name,
            parallelism: self.parallelism,
            input: self.input,
            branch: self.branch,
            side: self.side,
            reserved: self.reserved,
            union: self.union,
            stamped: self.stamped,
            _record: PhantomData,
        }
    }
}
