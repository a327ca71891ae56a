//! A stream of records inside the stage being built: the chained
//! transformations (`map`, `filter`, `flat_map`, `process`), event time, and
//! the ends of a stage (`key_by`, `sink`).

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::api::graph::{JobGraph, StageNode};
use crate::build::branch::BranchList;
use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::chains::{FilterChain, FlatMapChain, MapChain};
use crate::build::demand::TimestampDemand;
use crate::build::stage::Stage;
use crate::core::subtask::SubtaskInfo;
use crate::exchange::flush::BufferTimeout;
use crate::operators::process::{ProcessChain, ProcessFunction};
use crate::operators::sink::{Sink, SinkTail};
use crate::operators::source::chain::SourceChain;
use crate::operators::source::function::Source;
use crate::operators::timestamps::{
    AlignmentSpec, TimestampsChain, WatermarkGeneratorSupplier, WatermarkStrategy,
};

impl JobGraph {
    /// Adds a source; `factory` makes the source of each subtask.
    pub fn source<S, SF>(&self, uid: &str, factory: SF) -> Stream<'_, S::Out, SourceChain<SF>>
    where
        S: Source,
        SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
    {
        self.register_uid(uid);
        Stream {
            name: uid.to_owned(),
            job: self,
            chain: SourceChain {
                uid: uid.to_owned(),
                factory,
            },
            parallelism: None,
            input: None,
            branch: None,
            side: None,
            reserved: Cell::new(None),
            union: None,
            stamped: None,
            _record: PhantomData,
        }
    }
}

/// A stream of `T` inside the stage being built.
pub struct Stream<'j, T, B> {
    pub(crate) job: &'j JobGraph,
    pub(crate) chain: B,
    pub(crate) name: String,
    pub(crate) parallelism: Option<usize>,
    pub(crate) input: Option<usize>,
    /// Set when the stream is a branch of a fork in another stage's chain
    /// (a stream used more than once, a side output): it ends there.
    pub(crate) branch: Option<BranchOf>,
    /// The side outputs of the stream's last operator, if it has any
    /// ([`Stream::get_side_output`]).
    pub(crate) side: Option<BranchList>,
    /// The number of this stream's stage if a branch reserved it
    /// ([`JobGraph::reserve_stage`]).
    pub(crate) reserved: Cell<Option<usize>>,
    /// Set on a stream fresh from a union: the exchanges its head reads,
    /// to which another union adds.
    pub(crate) union: Option<(Arc<std::sync::Mutex<Vec<usize>>>, TimestampDemand)>,
    /// The stream has event time (it, or one it came from, was given
    /// timestamps): who reads its record timestamps, so that exchanges
    /// carry them where needed ([`TimestampDemand`]).
    pub(crate) stamped: Option<TimestampDemand>,
    pub(crate) _record: PhantomData<fn() -> T>,
}

/// Where a branch's chain goes: the stage whose task runs it and the fork's
/// list under a tag.
#[derive(Clone)]
pub(crate) struct BranchOf {
    pub(crate) stage: usize,
    pub(crate) list: BranchList,
    pub(crate) tag: String,
}

impl<'j, T: 'static, B: ChainBuilder<T>> Stream<'j, T, B> {
    fn then<U, B2>(self, uid: &str, wrap: impl FnOnce(B) -> B2) -> Stream<'j, U, B2> {
        self.job.register_uid(uid);
        Stream {
            name: format!("{} -> {uid}", self.name),
            job: self.job,
            chain: wrap(self.chain),
            parallelism: self.parallelism,
            input: self.input,
            branch: self.branch,
            side: None,
            reserved: self.reserved,
            union: None,
            stamped: self.stamped.clone(),
            _record: PhantomData,
        }
    }

    /// Sets the parallelism of this stage: every operator chained in it
    /// (as in Flink, chained operators share one parallelism).
    pub fn parallelism(mut self, parallelism: usize) -> Self {
        if parallelism == 0 {
            self.job
                .error(format!("stage `{}` has parallelism 0", self.name));
        }
        match &self.branch {
            // A branch runs in its fork's task: its parallelism is the
            // stage's.
            Some(b) => self
                .job
                .set_stage_parallelism(b.stage, parallelism, &self.name),
            None => self.parallelism = Some(parallelism),
        }
        self
    }

    /// Transforms each record.
    pub fn map<U, F>(self, uid: &str, f: F) -> Stream<'j, U, MapChain<B, F, T>>
    where
        U: 'static,
        F: Fn(T) -> U + Clone + Send + Sync + 'static,
    {
        self.then(uid, |prev| MapChain {
            prev,
            f,
            _input: PhantomData,
        })
    }

    /// Keeps the records for which `f` holds.
    pub fn filter<F>(self, uid: &str, f: F) -> Stream<'j, T, FilterChain<B, F>>
    where
        F: Fn(&T) -> bool + Clone + Send + Sync + 'static,
    {
        self.then(uid, |prev| FilterChain { prev, f })
    }

    /// Turns each record into zero or more.
    pub fn flat_map<U, I, F>(self, uid: &str, f: F) -> Stream<'j, U, FlatMapChain<B, F, T>>
    where
        U: 'static,
        I: IntoIterator<Item = U>,
        F: Fn(T) -> I + Clone + Send + Sync + 'static,
    {
        self.then(uid, |prev| FlatMapChain {
            prev,
            f,
            _input: PhantomData,
        })
    }

    /// Applies a non-keyed process function (Flink's `DataStream::process`
    /// with a `CheckpointedFunction`), chained in this stage; `factory`
    /// makes each subtask's instance. Its operator states are
    /// checkpointed and, when the parallelism changes, redistributed
    /// (see [`crate::state::operator`]).
    pub fn process<F, FF>(self, uid: &str, factory: FF) -> Stream<'j, F::Out, ProcessChain<B, FF>>
    where
        F: ProcessFunction<In = T>,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        // The function may read its records' timestamps (`ctx.timestamp()`).
        if let Some(d) = &self.stamped {
            d.mark();
        }
        let side = BranchList::default();
        let mut stream = self.then(uid, |prev| {
            ProcessChain::new(prev, uid, factory, side.clone())
        });
        stream.side = Some(side);
        stream
    }

    /// Gives the stream event time (Flink's `assignTimestampsAndWatermarks`):
    /// each record's timestamp comes from `strategy`'s extractor, and this
    /// subtask's watermark generator emits per record and/or every
    /// `pipeline.auto-watermark-interval`, marks the stream idle after the
    /// strategy's idleness timeout, and `i64::MAX` goes out at the end of
    /// its input. Put it right after the source, so each source subtask
    /// generates its own watermarks (and watermark alignment applies).
    /// Watermarks from upstream of it are dropped (but the final one). The
    /// operator holds no state, so it needs no uid.
    pub fn assign_timestamps_and_watermarks<TF, G, A>(
        self,
        strategy: WatermarkStrategy<TF, G, A>,
    ) -> Stream<'j, T, TimestampsChain<B, TF, G, A>>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
        G: WatermarkGeneratorSupplier<T>,
        A: AlignmentSpec,
    {
        let demand = TimestampDemand::source();
        Stream {
            name: format!("{} -> timestamps/watermarks", self.name),
            job: self.job,
            chain: TimestampsChain {
                prev: self.chain,
                strategy,
                demand: demand.clone(),
                // The source's own stage, not a branch of another.
                at_source: self.input.is_none() && self.branch.is_none(),
            },
            parallelism: self.parallelism,
            input: self.input,
            branch: self.branch,
            side: None,
            reserved: self.reserved,
            union: None,
            stamped: Some(demand),
            _record: PhantomData,
        }
    }

    /// Ends this stage in `tail`, which feeds exchange `output` (the
    /// edges of other modules: broadcast, rebalance).
    pub(crate) fn end_with<TB: TailBuilder<T>>(self, tail: TB, output: usize) -> &'j JobGraph {
        let name = self.name.clone();
        self.end_stage(name, tail, Some(output))
    }

    /// The number of the stage whose task runs this stream's chain: its
    /// fork's if it is a branch, else reserved now if it was not yet.
    pub(crate) fn stage_index(&self) -> usize {
        if let Some(b) = &self.branch {
            return b.stage;
        }
        if let Some(stage) = self.reserved.get() {
            return stage;
        }
        let stage = self.job.reserve_stage(&self.name);
        self.reserved.set(Some(stage));
        stage
    }

    /// Sets how long a partly filled output buffer of this operator may
    /// wait (Flink's `setBufferTimeout`): the exchanges this stream's
    /// stage sends into ship a buffer `timeout` after its first record
    /// (`Duration::ZERO`: after every record) or, with
    /// [`BufferTimeout::Disabled`], only when full, whatever
    /// `execution.buffer-timeout` says. `execution.buffer-timeout.operators`
    /// naming this operator overrides it. Operators chained in one stage
    /// share its buffers: two of them asking for different timeouts is an
    /// error when the job starts.
    pub fn buffer_timeout(self, timeout: impl Into<BufferTimeout>) -> Self {
        let timeout = timeout.into();
        let mut flow = self.job.flow.borrow_mut();
        // The stream's newest operator (the name also holds steps without
        // a uid, such as `timestamps/watermarks`).
        let uid = self
            .name
            .rsplit(" -> ")
            .find(|s| flow.uids.iter().any(|u| u == s))
            .unwrap_or(&self.name)
            .to_owned();
        match &self.branch {
            // A branch runs in another stage's chain: that stage's.
            Some(b) => flow.branch_buffer_timeouts.push((b.stage, uid, timeout)),
            None => {
                flow.buffer_timeouts.0.insert(uid, timeout);
            }
        }
        drop(flow);
        self
    }

    /// Ends this stage (or branch) in `tail`, feeding exchange `output` if
    /// any: a stage of the job, or a branch of the fork it belongs to.
    pub(crate) fn end_stage<TB: TailBuilder<T>>(
        self,
        name: String,
        tail: TB,
        output: Option<usize>,
    ) -> &'j JobGraph {
        let spec = Stage {
            chain: self.chain,
            tail,
            _record: PhantomData,
        };
        match self.branch {
            None => {
                let node = StageNode {
                    name,
                    spec: Box::new(spec),
                    parallelism: self.parallelism,
                    input: self.input,
                    outputs: output.into_iter().collect(),
                };
                match self.reserved.get() {
                    Some(stage) => self.job.fill_stage(stage, node),
                    None => {
                        self.job.add_stage(node);
                    }
                }
            }
            Some(b) => {
                b.list.push(&b.tag, Arc::new(spec));
                if let Some(o) = output {
                    self.job.add_stage_output(b.stage, o);
                }
            }
        }
        self.job
    }

    /// Ends the stream in a sink; `factory` makes each subtask's sink.
    pub fn sink<S, SF>(self, uid: &str, factory: SF)
    where
        S: Sink<In = T>,
        SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        let name = format!("{} -> {uid}", self.name);
        self.end_stage(
            name,
            SinkTail {
                uid: uid.to_owned(),
                factory,
            },
            None,
        );
    }
}
