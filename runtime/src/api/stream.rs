//! A stream of records inside the stage being built: the chained
//! transformations (`map`, `filter`, `flat_map`, `process`), event time, and
//! the ends of a stage (`key_by`, `sink`).

use std::marker::PhantomData;

use crate::api::graph::{JobGraph, Stage, StageNode};
use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::chains::{FilterChain, FlatMapChain, MapChain};
use crate::core::subtask::SubtaskInfo;
use crate::operators::process::{ProcessChain, ProcessFunction};
use crate::operators::sink::{Sink, SinkTail};
use crate::operators::source::chain::SourceChain;
use crate::operators::source::function::Source;
use crate::operators::timestamps::{
    AlignmentSpec, TimestampsChain, WatermarkGeneratorSupplier, WatermarkStrategy,
};

impl JobGraph {
    /// Adds a source; `factory` makes the source of each subtask.
    pub fn source<S, SF>(&mut self, uid: &str, factory: SF) -> Stream<'_, S::Out, SourceChain<SF>>
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
            _record: PhantomData,
        }
    }
}

/// A stream of `T` inside the stage being built.
pub struct Stream<'j, T, B> {
    pub(crate) job: &'j mut JobGraph,
    pub(crate) chain: B,
    pub(crate) name: String,
    pub(crate) parallelism: Option<usize>,
    pub(crate) input: Option<usize>,
    pub(crate) _record: PhantomData<fn() -> T>,
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
            _record: PhantomData,
        }
    }

    /// Sets the parallelism of this stage: every operator chained in it
    /// (as in Flink, chained operators share one parallelism).
    pub fn parallelism(mut self, parallelism: usize) -> Self {
        if parallelism == 0 {
            self.job
                .errors
                .push(format!("stage `{}` has parallelism 0", self.name));
        }
        self.parallelism = Some(parallelism);
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
        self.then(uid, |prev| ProcessChain::new(prev, uid, factory))
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
        Stream {
            name: format!("{} -> timestamps/watermarks", self.name),
            job: self.job,
            chain: TimestampsChain {
                prev: self.chain,
                strategy,
                at_source: self.input.is_none(),
            },
            parallelism: self.parallelism,
            input: self.input,
            _record: PhantomData,
        }
    }

    /// Ends this stage in `tail`, which feeds exchange `output` (the
    /// edges of other modules: broadcast, rebalance).
    pub(crate) fn end_with<TB: TailBuilder<T>>(self, tail: TB, output: usize) -> &'j mut JobGraph {
        self.job.stages.push(StageNode {
            name: self.name,
            spec: Box::new(Stage {
                chain: self.chain,
                tail,
                _record: PhantomData,
            }),
            parallelism: self.parallelism,
            input: self.input,
            output: Some(output),
        });
        self.job
    }

    /// Ends the stream in a sink; `factory` makes each subtask's sink.
    pub fn sink<S, SF>(self, uid: &str, factory: SF)
    where
        S: Sink<In = T>,
        SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        self.job.stages.push(StageNode {
            name: format!("{} -> {uid}", self.name),
            spec: Box::new(Stage {
                chain: self.chain,
                tail: SinkTail {
                    uid: uid.to_owned(),
                    factory,
                },
                _record: PhantomData,
            }),
            parallelism: self.parallelism,
            input: self.input,
            output: None,
        });
    }
}
