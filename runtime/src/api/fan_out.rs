//! One stream feeding several operators (Flink's reuse of a `DataStream`),
//! and the streams of an operator's side outputs.
//!
//! [`Stream::share`] ends the stream's chain in a fork: each
//! [`SharedStream::branch`] is a new stream of the same records, chained in
//! the same task (no exchange, no serialization; a clone per record and
//! branch but the last). [`Stream::get_side_output`] is a stream of what
//! the stream's last operator emits to a side output. Both are branches:
//! they end like any stream (a sink, a key_by, another exchange) and run in
//! the task of the stage they branch from, with its parallelism.

use std::cell::Cell;
use std::marker::PhantomData;

use crate::api::graph::JobGraph;
use crate::api::stream::{BranchOf, Stream};
use crate::build::branch::{BranchHead, BranchList, TeeTail};
use crate::build::builder::ChainBuilder;
use crate::build::demand::TimestampDemand;
use crate::operators::side_output::OutputTag;

impl<'j, T: Clone + 'static, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// Lets the stream feed more than one operator: take a new stream of
    /// its records with [`SharedStream::branch`] for each. Every branch
    /// gets every record (cloned) and watermark; a branch that cannot take
    /// more holds back the others (backpressure), as in Flink.
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
    /// let (evens, odds) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    /// let (e, o) = (evens.clone(), odds.clone());
    /// let job = JobGraph::new("fan-out");
    /// let numbers = job
    ///     .source("numbers", |info: &SubtaskInfo| SequenceSource::new(info, 100, |i| i))
    ///     .share();
    /// numbers
    ///     .branch()
    ///     .filter("evens", |x: &u64| x % 2 == 0)
    ///     .sink("sum-evens", move |_: &SubtaskInfo| Sum(e.clone()));
    /// numbers
    ///     .branch()
    ///     .filter("odds", |x: &u64| x % 2 == 1)
    ///     .sink("sum-odds", move |_: &SubtaskInfo| Sum(o.clone()));
    ///
    /// let mut options = ExecutionOptions::with_workers(2);
    /// options.pin_cores = false;
    /// execute(job, &options).unwrap();
    /// assert_eq!(evens.load(Ordering::Relaxed), 2450);
    /// assert_eq!(odds.load(Ordering::Relaxed), 2500);
    /// ```
    pub fn share(self) -> SharedStream<'j, T> {
        let stage = self.stage_index();
        let list = BranchList::default();
        let name = self.name.clone();
        let stamped = self.stamped.clone();
        let job = self.end_stage(
            name.clone(),
            TeeTail::<T> {
                branches: list.clone(),
                _record: PhantomData,
            },
            None,
        );
        SharedStream {
            job,
            stage,
            list,
            name,
            stamped,
            _record: PhantomData,
        }
    }
}

impl<'j, T: 'static, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// The stream of what this stream's last operator (a process function,
    /// a keyed process function or a window operator) emits to `tag`'s
    /// side output (Flink's `getSideOutput`). May be called more than once
    /// for a tag: each stream gets every record. Take it before the stream
    /// goes on (the next operator's stream no longer has the side outputs).
    ///
    /// An operator whose stream has no side outputs (a map, a filter)
    /// emits none: the returned stream is empty and the job says so when it
    /// starts.
    pub fn get_side_output<X: Clone + 'static>(
        &self,
        tag: &OutputTag<X>,
    ) -> Stream<'j, X, BranchHead<X>> {
        let list = match &self.side {
            Some(list) => list.clone(),
            None => {
                self.job.error(format!(
                    "`{}` has no side outputs: side output `{}` is taken after an operator \
                     that emits it (process, keyed process, window), before the next one",
                    self.name,
                    tag.name()
                ));
                BranchList::default()
            }
        };
        branch_stream(
            self.job,
            BranchOf {
                stage: self.stage_index(),
                list,
                tag: tag.name().to_owned(),
            },
            format!("{} [{}]", self.name, tag.name()),
            self.stamped.clone(),
        )
    }
}

/// A stream read from a [`SharedStream`]'s branch: one type for a stream
/// whatever operators came before it, for code that builds jobs from data
/// (weir's SQL planner) rather than from types known when it is compiled.
pub type BranchStream<'j, T> = Stream<'j, T, BranchHead<T>>;

/// A stream that feeds several operators ([`Stream::share`]).
pub struct SharedStream<'j, T> {
    job: &'j JobGraph,
    stage: usize,
    list: BranchList,
    name: String,
    stamped: Option<TimestampDemand>,
    _record: PhantomData<fn() -> T>,
}

impl<'j, T: 'static> SharedStream<'j, T> {
    /// A new stream of this stream's records.
    pub fn branch(&self) -> Stream<'j, T, BranchHead<T>> {
        branch_stream(
            self.job,
            BranchOf {
                stage: self.stage,
                list: self.list.clone(),
                tag: String::new(),
            },
            self.name.clone(),
            self.stamped.clone(),
        )
    }
}

/// A stream starting at a fork.
fn branch_stream<T: 'static>(
    job: &JobGraph,
    branch: BranchOf,
    name: String,
    stamped: Option<TimestampDemand>,
) -> Stream<'_, T, BranchHead<T>> {
    Stream {
        job,
        chain: BranchHead::default(),
        name,
        parallelism: None,
        input: None,
        branch: Some(branch),
        side: None,
        reserved: Cell::new(None),
        union: None,
        stamped,
        _record: PhantomData,
    }
}
