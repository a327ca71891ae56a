//! The job API: building a dataflow of sources, chained operators, key_by
//! exchanges, keyed process operators and sinks.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use weir_runtime::*;
//!
//! /// Counts records per key in keyed ValueState.
//! struct Count(KeyedValueState<u64, u64>);
//!
//! impl KeyedProcessFunction for Count {
//!     type Key = u64;
//!     type In = (u64, u64);
//!     type Out = (u64, u64);
//!     fn process<C: Collector<(u64, u64)>>(
//!         &mut self,
//!         ctx: &KeyContext<u64>,
//!         _record: (u64, u64),
//!         out: &mut C,
//!     ) {
//!         let n = self.0.value_mut_or_insert_with(ctx, || 0);
//!         *n += 1;
//!         out.collect((*ctx.key(), *n));
//!     }
//! }
//!
//! /// Remembers the largest count it saw.
//! struct MaxCount(Arc<AtomicU64>);
//!
//! impl Sink for MaxCount {
//!     type In = (u64, u64);
//!     fn invoke(&mut self, (_key, n): (u64, u64)) {
//!         self.0.fetch_max(n, Ordering::Relaxed);
//!     }
//! }
//!
//! let max = Arc::new(AtomicU64::new(0));
//! let seen = max.clone();
//! let mut job = JobGraph::new("keyed-count");
//! job.source("numbers", |info: &SubtaskInfo| {
//!     SequenceSource::new(info, 1_000, |i| (i % 10, i))
//! })
//! .key_by(|r: &(u64, u64)| r.0)
//! .process("count", |_: &SubtaskInfo| Count(KeyedValueState::new("count")))
//! .sink("max", move |_: &SubtaskInfo| MaxCount(seen.clone()));
//!
//! let mut options = ExecutionOptions::with_workers(2);
//! options.pin_cores = false;
//! execute(job, &options).unwrap();
//! assert_eq!(max.load(Ordering::Relaxed), 100); // 1,000 records over 10 keys
//! ```
//!
//! Every operator has a `uid` (stable across versions of a job; it will
//! name the operator's state in snapshots) and belongs to a *stage*: a chain
//! of operators joined by forward edges, which runs as one task per subtask
//! with direct calls between operators. A `key_by` ends a stage with an
//! exchange and starts the next. A stage's parallelism defaults to the number
//! of workers; subtask `i` runs on worker `i % workers`.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::Wire;
use weir_state::KeyHash;

use crate::checkpoint::KeyedStates;
use crate::debloat::BufferDebloater;
use crate::exchange::{channel_state_name, ExchangeOutput, InputTask};
use crate::gate::{BarrierMode, InputGate, WireDecoder};
use crate::keyed::{take_created_states, KeyedProcessFunction, KeyedProcessOp, INPUT_ENDED_STATE};
use crate::keyed_state::AggregateFunction;
use crate::operator::{Collector, FilterOp, FlatMapOp, MapOp};
use crate::process::{ProcessChain, ProcessFunction};
use crate::sink::{Sink, SinkOp, SINK_STATE};
use crate::source::{Source, SourceTask, SubtaskInfo, POSITION_STATE};
use crate::task::Task;
use crate::watermark::{TimestampsOp, WatermarkStrategy};
use crate::window::{AggregateFold, LateOutput, MergeFold, ReduceFold, Windowing};
use crate::worker::BuildContext;

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

/// A finished stage, type-erased.
pub(crate) trait StageSpec: Send + Sync {
    fn build(&self, ctx: &mut BuildContext<'_>) -> Box<dyn Task>;
}

struct Stage<T, B, TB> {
    chain: B,
    tail: TB,
    _record: PhantomData<fn(T)>,
}

impl<T: 'static, B: ChainBuilder<T>, TB: TailBuilder<T>> StageSpec for Stage<T, B, TB> {
    fn build(&self, ctx: &mut BuildContext<'_>) -> Box<dyn Task> {
        let tail = self.tail.make(ctx);
        self.chain.build(ctx, tail)
    }
}

/// A stage of the graph with its wiring.
pub(crate) struct StageNode {
    /// Uids of the stage's operators joined by " -> ".
    pub name: String,
    pub spec: Box<dyn StageSpec>,
    pub parallelism: Option<usize>,
    /// Exchange feeding this stage, if it does not start at a source.
    pub input: Option<usize>,
    /// Exchange this stage feeds, if it does not end at a sink.
    pub output: Option<usize>,
}

/// A job's logical dataflow.
pub struct JobGraph {
    name: String,
    pub(crate) stages: Vec<StageNode>,
    pub(crate) exchanges: usize,
    uids: Vec<String>,
    pub(crate) errors: Vec<String>,
    /// Second inputs of two-input stages: (exchange, the exchange the
    /// receiving stage names as its `input`).
    pub(crate) co_inputs: Vec<(usize, usize)>,
}

impl JobGraph {
    /// An empty job.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            stages: Vec::new(),
            exchanges: 0,
            uids: Vec::new(),
            errors: Vec::new(),
            co_inputs: Vec::new(),
        }
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of stages (chains between exchanges).
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    pub(crate) fn register_uid(&mut self, uid: &str) {
        if uid.is_empty() {
            self.errors.push("an operator has an empty uid".into());
        } else if self.uids.iter().any(|u| u == uid) {
            self.errors.push(format!(
                "operator uid `{uid}` is used twice; uids must be unique"
            ));
        } else {
            self.uids.push(uid.to_owned());
        }
    }

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
    /// (see [`crate::operator_state`]).
    pub fn process<F, FF>(self, uid: &str, factory: FF) -> Stream<'j, F::Out, ProcessChain<B, FF>>
    where
        F: ProcessFunction<In = T>,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        self.then(uid, |prev| ProcessChain::new(prev, uid, factory))
    }

    /// Gives the stream event time (Flink's `assignTimestampsAndWatermarks`):
    /// each record's timestamp comes from `strategy`'s extractor, and this
    /// subtask emits watermarks every `pipeline.auto-watermark-interval`,
    /// marks itself idle after the strategy's idleness timeout, and emits
    /// `i64::MAX` at the end of its input. Put it right after the source,
    /// so each source subtask generates its own watermarks. Watermarks from
    /// upstream of it are dropped (but the final one). The operator holds
    /// no state, so it needs no uid.
    pub fn assign_timestamps_and_watermarks<TF>(
        self,
        strategy: WatermarkStrategy<TF>,
    ) -> Stream<'j, T, TimestampsChain<B, TF>>
    where
        TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        Stream {
            name: format!("{} -> timestamps/watermarks", self.name),
            job: self.job,
            chain: TimestampsChain {
                prev: self.chain,
                strategy,
            },
            parallelism: self.parallelism,
            input: self.input,
            _record: PhantomData,
        }
    }

    /// Partitions the stream by key: records travel to the subtask owning
    /// their key's key group. Ends this stage.
    pub fn key_by<K, KF>(self, key_fn: KF) -> KeyedStream<'j, T, K, KF>
    where
        T: Wire,
        K: KeyHash + 'static,
        KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
    {
        let exchange = self.job.exchanges;
        self.job.exchanges += 1;
        self.job.stages.push(StageNode {
            name: self.name.clone(),
            spec: Box::new(Stage {
                chain: self.chain,
                tail: ExchangeTail {
                    exchange,
                    key_fn: key_fn.clone(),
                    _types: PhantomData,
                },
                _record: PhantomData,
            }),
            parallelism: self.parallelism,
            input: self.input,
            output: Some(exchange),
        });
        KeyedStream {
            job: self.job,
            exchange,
            key_fn,
            _types: PhantomData,
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

/// A stream partitioned by key, ready for a keyed operator.
pub struct KeyedStream<'j, T, K, KF> {
    pub(crate) job: &'j mut JobGraph,
    pub(crate) exchange: usize,
    pub(crate) key_fn: KF,
    pub(crate) _types: PhantomData<fn(T) -> K>,
}

impl<'j, T, K, KF> KeyedStream<'j, T, K, KF>
where
    T: Wire,
    K: KeyHash + Eq + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    /// Applies a keyed process function; `factory` makes each subtask's
    /// instance. Starts a new stage fed by the exchange.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, KeyedProcessChain<ExchangeInputChain<T>, FF, KF>>
    where
        F: KeyedProcessFunction<Key = K, In = T>,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        Stream {
            name: uid.to_owned(),
            chain: KeyedProcessChain {
                prev: ExchangeInputChain {
                    exchange: self.exchange,
                    _record: PhantomData,
                },
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                key_fn: self.key_fn,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.exchange),
            _record: PhantomData,
        }
    }
}

impl<'j, T, K, KF> KeyedStream<'j, T, K, KF>
where
    T: Wire,
    K: KeyHash + Eq + Copy + Wire + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    /// Groups each key's records into the windows of `assigner` (Flink's
    /// `KeyedStream::window`): tumbling, sliding or session windows on
    /// event or processing time (see [`Windowing`]); finish with
    /// [`aggregate`](WindowedStream::aggregate),
    /// [`reduce`](WindowedStream::reduce),
    /// [`aggregate_with`](WindowedStream::aggregate_with),
    /// [`reduce_with`](WindowedStream::reduce_with) or
    /// [`process`](WindowedStream::process).
    pub fn window<A>(self, assigner: A) -> WindowedStream<'j, T, K, KF, A>
    where
        A: Windowing<T>,
    {
        WindowedStream {
            keyed: self,
            assigner,
            lateness: 0,
            late_output: None,
        }
    }
}

/// Makes each subtask's late-data output.
pub(crate) type LateOutputFactory<T> = Arc<dyn Fn(&SubtaskInfo) -> LateOutput<T> + Send + Sync>;

/// A keyed stream with a window assigner, waiting for its window function.
pub struct WindowedStream<'j, T, K, KF, A> {
    pub(crate) keyed: KeyedStream<'j, T, K, KF>,
    pub(crate) assigner: A,
    pub(crate) lateness: i64,
    pub(crate) late_output: Option<LateOutputFactory<T>>,
}

/// What a window operator emits: `(key, window_start, result)` records.
pub type WindowStream<'j, K, O, B> = Stream<'j, (K, i64, O), B>;

impl<'j, T, K, KF, A> WindowedStream<'j, T, K, KF, A>
where
    T: Wire + Clone + 'static,
    K: KeyHash + Eq + Copy + Wire + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
    A: Windowing<T>,
{
    /// Keeps windows `lateness_ms` after they fired (Flink's
    /// `allowedLateness`): a record for such a window is added and fires
    /// it again with the updated result. Default 0. Ignored by
    /// processing-time windows, as in Flink.
    ///
    /// # Panics
    ///
    /// If `lateness_ms` is negative.
    pub fn allowed_lateness(mut self, lateness_ms: i64) -> Self {
        assert!(
            lateness_ms >= 0,
            "window allowed lateness must not be negative, got {lateness_ms} ms"
        );
        self.lateness = lateness_ms;
        self
    }

    /// Hands the records late for all their windows (past the allowed
    /// lateness) to the output `factory` makes for each subtask, instead
    /// of only dropping them (Flink's `sideOutputLateData`).
    pub fn side_output_late_data<L, LF>(mut self, factory: LF) -> Self
    where
        L: FnMut(T) + 'static,
        LF: Fn(&SubtaskInfo) -> L + Send + Sync + 'static,
    {
        self.late_output = Some(Arc::new(move |info: &SubtaskInfo| {
            Box::new(factory(info)) as LateOutput<T>
        }));
        self
    }

    /// Folds each window's records incrementally with `agg` (Flink's
    /// `WindowedStream::aggregate`); emits `(key, window_start,
    /// agg.get_result(acc))` when the watermark passes the window's end
    /// (processing time: the clock). Session windows merge accumulators
    /// with `AggregateFunction::merge`; to see a session's end use
    /// [`aggregate_with`](Self::aggregate_with).
    pub fn aggregate<AF>(
        self,
        uid: &str,
        agg: AF,
    ) -> WindowStream<'j, K, AF::Out, impl ChainBuilder<(K, i64, AF::Out)>>
    where
        AF: AggregateFunction<In = T> + Clone + Send + Sync,
        AF::Acc: Wire,
    {
        self.with_fold(uid, AggregateFold(agg))
    }

    /// Combines each window's records pairwise with `reduce` (Flink's
    /// `WindowedStream::reduce`); emits `(key, window_start, reduced)`
    /// when the watermark passes the window's end (processing time: the
    /// clock).
    pub fn reduce<F>(
        self,
        uid: &str,
        reduce: F,
    ) -> WindowStream<'j, K, T, impl ChainBuilder<(K, i64, T)>>
    where
        T: Copy,
        F: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        self.with_fold(uid, ReduceFold::new(reduce))
    }

    fn with_fold<W>(
        self,
        uid: &str,
        fold: W,
    ) -> WindowStream<'j, K, W::Out, impl ChainBuilder<(K, i64, W::Out)>>
    where
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        let (assigner, lateness, late_output) = (self.assigner, self.lateness, self.late_output);
        self.keyed.process(uid, move |info: &SubtaskInfo| {
            let late = late_output.as_ref().map(|factory| factory(info));
            assigner.incremental::<K, W>(fold.clone(), lateness, late)
        })
    }
}

/// Head of a stage that starts at a source.
pub struct SourceChain<SF> {
    uid: String,
    factory: SF,
}

impl<S, SF> ChainBuilder<S::Out> for SourceChain<SF>
where
    S: Source,
    SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
{
    fn build<C: Collector<S::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        // A source with operator states (splits) may rescale: its states
        // are redistributed and its position may be empty.
        let (mut source, split) = crate::split_source::build_source(&self.factory, &self.uid, ctx);
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let position = if split {
                scope.inline_unless_empty(POSITION_STATE)
            } else {
                scope.inline(POSITION_STATE)
            }
            .unwrap_or_else(|e| panic!("source `{}`: {e}", self.uid));
            match position {
                Some(p) => {
                    if let Err(e) = source.restore_position(p) {
                        panic!(
                            "source `{}` cannot resume from checkpoint {}: {e}",
                            self.uid,
                            restore.id()
                        );
                    }
                }
                // Its splits are its position (or it is new: it starts
                // fresh).
                None if split => {}
                None => panic!(
                    "checkpoint {} has no position for source `{}` subtask {}",
                    restore.id(),
                    self.uid,
                    ctx.info.index
                ),
            }
        }
        Box::new(SourceTask::new(
            ctx.task_name(),
            self.uid.clone(),
            ctx.info,
            source,
            out,
            ctx.metrics.source_records.clone(),
            ctx.checkpointing.clone(),
        ))
    }
}

/// Head of a stage fed by an exchange.
pub struct ExchangeInputChain<T> {
    exchange: usize,
    _record: PhantomData<fn() -> T>,
}

impl<T: Wire> ChainBuilder<T> for ExchangeInputChain<T> {
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let (receivers, counters) = ctx.take_input(self.exchange);
        let task: InputTask<T, C> = build_input_task(
            ctx,
            self.exchange,
            receivers,
            counters,
            out,
            WireDecoder::default(),
        );
        Box::new(task)
    }
}

/// The input task of a stage over `receivers` (the channels of one or more
/// exchanges, `exchange` the first), decoding records with `decoder`: the
/// gate with its trigger signals, debloater and restored channel state.
pub(crate) fn build_input_task<T, C, D>(
    ctx: &mut BuildContext<'_>,
    exchange: usize,
    receivers: Vec<weir_net::ChannelReceiver>,
    counters: Vec<Arc<crate::metrics::ChannelCounters>>,
    out: C,
    decoder: D,
) -> InputTask<T, C, D> {
    let mut gate = InputGate::new(receivers, ctx.barrier_mode).with_channel_counters(counters);
    if let (BarrierMode::AlignedWithTimeout(_), Some(cp)) = (ctx.barrier_mode, &ctx.checkpointing) {
        gate = gate.with_trigger_signals(cp.signals.clone());
    }
    if let Some((options, credit, segment_size)) = &ctx.debloat {
        let channels = gate.channels();
        gate = gate.with_debloater(BufferDebloater::new(
            options,
            channels,
            *credit,
            *segment_size,
            std::time::Instant::now(),
        ));
    }
    // Unaligned checkpoints keep the data their barriers overtook under
    // the exchange's input, per receiving subtask.
    let uid = format!("weir.exchange-{exchange}.input");
    if let Some(restore) = ctx.restore.clone() {
        let scope = restore.scope(&uid, &ctx.info);
        let state = scope
            .channel_state(gate.channels(), channel_state_name)
            .unwrap_or_else(|e| panic!("{}: {e}", ctx.task_name()));
        for (c, records) in state.into_iter().enumerate() {
            gate.restore_channel_state(c, records);
        }
    }
    InputTask::with_decoder(
        ctx.task_name(),
        gate,
        out,
        ctx.checkpointing.clone(),
        (uid, ctx.info),
        ctx.subtask.clone(),
        decoder,
    )
}

/// Chain link of [`Stream::map`].
pub struct MapChain<B, F, T> {
    prev: B,
    f: F,
    _input: PhantomData<fn(T)>,
}

/// Chain link of [`Stream::filter`].
pub struct FilterChain<B, F> {
    prev: B,
    f: F,
}

/// Chain link of [`Stream::flat_map`].
pub struct FlatMapChain<B, F, T> {
    prev: B,
    f: F,
    _input: PhantomData<fn(T)>,
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
    ) -> Box<dyn Task> {
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
    ) -> Box<dyn Task> {
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
    ) -> Box<dyn Task> {
        self.prev.build(
            ctx,
            FlatMapOp {
                f: self.f.clone(),
                out,
            },
        )
    }
}

/// Chain link of [`Stream::assign_timestamps_and_watermarks`].
pub struct TimestampsChain<B, TF> {
    prev: B,
    strategy: WatermarkStrategy<TF>,
}

impl<T, B, TF> ChainBuilder<T> for TimestampsChain<B, TF>
where
    T: 'static,
    B: ChainBuilder<T>,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let op = TimestampsOp::new(&self.strategy, ctx.auto_watermark_interval, out);
        self.prev.build(ctx, op)
    }
}

/// Chain link of [`KeyedStream::process`].
pub struct KeyedProcessChain<B, FF, KF> {
    pub(crate) prev: B,
    pub(crate) uid: String,
    pub(crate) factory: Arc<FF>,
    pub(crate) key_fn: KF,
}

impl<B, FF, KF, F> ChainBuilder<F::Out> for KeyedProcessChain<B, FF, KF>
where
    F: KeyedProcessFunction,
    F::In: 'static,
    F::Out: 'static,
    B: ChainBuilder<F::In>,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    KF: Fn(&F::In) -> F::Key + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let _ = take_created_states();
        let mut func = (self.factory)(&ctx.info);
        let mut created = take_created_states();
        if ctx.checkpointing.is_some() {
            let mut visited = Vec::new();
            func.visit_state(&mut KeyedStates::names(&mut visited));
            created.sort();
            visited.sort();
            if let Some(dup) = visited.windows(2).find(|w| w[0] == w[1]) {
                panic!(
                    "keyed operator `{}` has two states named `{}`: state names must be unique",
                    self.uid, dup[0]
                );
            }
            if let Some(reserved) = visited.iter().find(|v| {
                [
                    crate::timers::EVENT_TIMERS_STATE,
                    crate::timers::PROCESSING_TIMERS_STATE,
                ]
                .contains(&v.as_str())
            }) {
                panic!(
                    "keyed operator `{}` has a state named `{reserved}`, the name of its timers \
                     in checkpoints: rename the state",
                    self.uid
                );
            }
            if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
                panic!(
                    "keyed operator `{}` creates state `{missing}` but its visit_state does not \
                     visit it: the state would be lost by checkpoints",
                    self.uid
                );
            }
        }
        let mut input_ended = false;
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let mut states = KeyedStates::restore(&scope);
            func.visit_state(&mut states);
            if let Some(e) = states.into_error() {
                panic!(
                    "keyed operator `{}` cannot restore checkpoint {}: {e}",
                    self.uid,
                    restore.id()
                );
            }
            if let Some(timers) = func.timer_service() {
                if let Err(e) = timers.restore(&scope) {
                    panic!(
                        "keyed operator `{}` cannot restore the timers of checkpoint {}: {e}",
                        self.uid,
                        restore.id()
                    );
                }
            }
            input_ended = scope
                .flag(INPUT_ENDED_STATE)
                .unwrap_or_else(|e| panic!("keyed operator `{}`: {e}", self.uid));
        }
        let op = KeyedProcessOp::new(
            func,
            self.key_fn.clone(),
            out,
            &self.uid,
            &ctx.info,
            input_ended,
        );
        self.prev.build(ctx, op)
    }
}

/// Tail of a stage that ends in a sink.
struct SinkTail<SF> {
    uid: String,
    factory: SF,
}

impl<S, SF> TailBuilder<S::In> for SinkTail<SF>
where
    S: Sink,
    SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
{
    type Tail = SinkOp<S>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> SinkOp<S> {
        let sink = (self.factory)(&ctx.info);
        let restore = ctx.restore.clone();
        // A sink the checkpoint has no state for (a new operator) starts
        // fresh, as in Flink.
        let restored = restore.as_ref().and_then(|r| {
            r.scope(&self.uid, &ctx.info)
                .inline_unless_empty(SINK_STATE)
                .unwrap_or_else(|e| panic!("sink `{}`: {e}", self.uid))
                .map(|state| (r.id(), state))
        });
        SinkOp::new(
            sink,
            &self.uid,
            ctx.info,
            ctx.task_name(),
            ctx.checkpointing.is_some(),
            restored,
            ctx.metrics.sink_records.clone(),
            ctx.subtask.clone(),
        )
    }
}

/// Tail of a stage that ends in a key_by exchange.
struct ExchangeTail<T, K, KF> {
    exchange: usize,
    key_fn: KF,
    _types: PhantomData<fn(T) -> K>,
}

impl<T, K, KF> TailBuilder<T> for ExchangeTail<T, K, KF>
where
    T: Wire,
    K: KeyHash + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    type Tail = ExchangeOutput<T, K, KF>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Self::Tail {
        let (senders, pool, max_pool, counters) = ctx.take_output(self.exchange);
        ExchangeOutput::new(
            self.key_fn.clone(),
            ctx.info.max_parallelism,
            senders,
            pool,
            max_pool,
            ctx.buffer_timeout,
            ctx.barrier_mode,
        )
        .with_metrics(ctx.subtask.clone(), counters)
    }
}
