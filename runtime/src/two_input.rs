//! Two-input stages: two keyed streams meet in one operator (Flink's
//! `ConnectedStreams` and `KeyedCoProcessFunction`).
//!
//! `keyed_a.connect(keyed_b)` (`keyed_b` built first and
//! [`detach`](crate::KeyedStream::detach)ed) ends both upstream stages in
//! their own key_by exchange, as any keyed operator's input would be; the
//! receiving stage's
//! head is one [`InputGate`](crate::gate::InputGate) over the channels of
//! both exchanges (first input's channels first). So, as in Flink's
//! two-input tasks, barrier alignment, unaligned capture and the watermark
//! minimum span both inputs, and the stage checkpoints once per barrier.
//! Records travel in their own [`Wire`] form, untagged: the gate's
//! [`CoInputDecoder`] knows from the channel index which input a buffer
//! came from and yields a [`CoInput`]. Single-input stages keep their
//! decoder and pay nothing for this.
//!
//! The operator itself is the keyed process operator with the user's
//! [`KeyedCoProcessFunction`] behind an adapter: the same key context,
//! keyed state (shared by both inputs for the current key), timers,
//! checkpoints and rescaling.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::{DecodeError, Wire};
use weir_state::KeyHash;

use crate::checkpoint::KeyedStates;
use crate::gate::RecordDecoder;
use crate::job::{
    build_input_task, ChainBuilder, JobGraph, KeyedProcessChain, KeyedStream, Stream,
};
use crate::keyed::{KeyContext, KeyedProcessFunction};
use crate::operator::Collector;
use crate::source::SubtaskInfo;
use crate::task::Task;
use crate::timers::{TimeDomain, TimerQueues};
use crate::worker::BuildContext;

/// A record of a two-input operator: from its first or its second input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoInput<A, B> {
    /// A record of the first input (`connect`'s receiver).
    First(A),
    /// A record of the second input (`connect`'s argument).
    Second(B),
}

/// Decodes the channels of a two-input gate: channels below `split` carry
/// the first input's records, the others the second's.
pub struct CoInputDecoder<A, B> {
    split: usize,
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B> CoInputDecoder<A, B> {
    /// A decoder whose first `split` channels belong to the first input.
    pub fn new(split: usize) -> Self {
        Self {
            split,
            _types: PhantomData,
        }
    }
}

impl<A: Wire, B: Wire> RecordDecoder for CoInputDecoder<A, B> {
    type Record = CoInput<A, B>;
    #[inline(always)]
    fn read(&self, channel: usize, bytes: &[u8]) -> Result<(CoInput<A, B>, usize), DecodeError> {
        if channel < self.split {
            A::read(bytes).map(|(a, n)| (CoInput::First(a), n))
        } else {
            B::read(bytes).map(|(b, n)| (CoInput::Second(b), n))
        }
    }
}

/// User logic of a keyed two-input operator (Flink's
/// `KeyedCoProcessFunction`): both inputs are keyed by the same key type,
/// and the keyed state and timers of the current key are shared by both.
pub trait KeyedCoProcessFunction: 'static {
    /// The key type of both inputs' key_by.
    type Key: Eq + KeyHash + 'static;
    /// Records of the first input.
    type In1;
    /// Records of the second input.
    type In2;
    /// Records out.
    type Out;

    /// Processes one record of the first input, of key `ctx.key()`.
    fn process_element1<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In1,
        out: &mut C,
    );

    /// Processes one record of the second input, of key `ctx.key()`.
    fn process_element2<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In2,
        out: &mut C,
    );

    /// The operator's event time (the minimum over both inputs) advanced to
    /// `watermark`, after the timers it fired.
    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        let _ = (watermark, out);
    }

    /// Both inputs ended (after every event-time timer fired).
    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        let _ = out;
    }

    /// Hands every keyed state to `states`, as
    /// [`KeyedProcessFunction::visit_state`].
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let _ = states;
    }

    /// The function's timer service, as
    /// [`KeyedProcessFunction::timer_service`].
    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        None
    }

    /// Timer `timestamp` fired for key `ctx.key()`.
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        let _ = (timestamp, ctx, domain, out);
    }
}

/// A [`KeyedCoProcessFunction`] seen as the keyed process function of
/// [`CoInput`] records the keyed operator runs.
pub struct CoProcessAdapter<F>(pub F);

impl<F: KeyedCoProcessFunction> KeyedProcessFunction for CoProcessAdapter<F> {
    type Key = F::Key;
    type In = CoInput<F::In1, F::In2>;
    type Out = F::Out;

    #[inline(always)]
    fn process<C: Collector<F::Out>>(
        &mut self,
        ctx: &KeyContext<F::Key>,
        value: Self::In,
        out: &mut C,
    ) {
        match value {
            CoInput::First(a) => self.0.process_element1(ctx, a, out),
            CoInput::Second(b) => self.0.process_element2(ctx, b, out),
        }
    }

    fn on_watermark<C: Collector<F::Out>>(&mut self, watermark: i64, out: &mut C) {
        self.0.on_watermark(watermark, out);
    }

    fn on_end_of_input<C: Collector<F::Out>>(&mut self, out: &mut C) {
        self.0.on_end_of_input(out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        self.0.visit_state(states);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<F::Key>> {
        self.0.timer_service()
    }

    fn on_timer<C: Collector<F::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<F::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        self.0.on_timer(timestamp, ctx, domain, out);
    }
}

/// Head of a two-input stage: one gate over the channels of `first`
/// then `second`.
pub struct TwoInputChain<A, B> {
    first: usize,
    second: usize,
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B> TwoInputChain<A, B> {
    /// The head reading exchanges `first` and `second`.
    pub(crate) fn new(first: usize, second: usize) -> Self {
        Self {
            first,
            second,
            _types: PhantomData,
        }
    }
}

impl<A: Wire, B: Wire> ChainBuilder<CoInput<A, B>> for TwoInputChain<A, B> {
    fn build<C: Collector<CoInput<A, B>> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let (mut receivers, mut counters) = ctx.take_input(self.first);
        let split = receivers.len();
        let (r2, c2) = ctx.take_input(self.second);
        receivers.extend(r2);
        counters.extend(c2);
        let task: crate::exchange::InputTask<CoInput<A, B>, C, CoInputDecoder<A, B>> =
            build_input_task(
                ctx,
                self.first,
                receivers,
                counters,
                out,
                CoInputDecoder::new(split),
            );
        Box::new(task)
    }
}

impl JobGraph {
    /// Whether stage `stage` reads exchange `exchange` (as its input or as
    /// the second input of a two-input stage).
    pub(crate) fn stage_receives(&self, stage: usize, exchange: usize) -> bool {
        let input = self.stages[stage].input;
        input == Some(exchange)
            || self
                .co_inputs
                .iter()
                .any(|&(second, first)| second == exchange && input == Some(first))
    }

    /// Records that the stage reading `first` also reads `second`.
    pub(crate) fn add_co_input(&mut self, first: usize, second: usize) {
        self.co_inputs.push((second, first));
    }
}

/// Two keyed streams with the same key type, connected for a two-input
/// operator (Flink's `ConnectedStreams` of two `KeyedStream`s).
pub struct ConnectedKeyedStreams<'j, A, B, K, KA, KB> {
    first: KeyedStream<'j, A, K, KA>,
    second_exchange: usize,
    second_key: KB,
    _types: PhantomData<fn(B)>,
}

/// A keyed stream set aside (it no longer borrows the job) to be the
/// second input of a two-input operator: a job is built through one stream
/// at a time, so the second input is built first and detached.
pub struct DetachedKeyedStream<T, K, KF> {
    pub(crate) exchange: usize,
    pub(crate) key_fn: KF,
    _types: PhantomData<fn(T) -> K>,
}

impl<'j, A, K, KA> KeyedStream<'j, A, K, KA>
where
    A: Wire,
    K: KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
{
    /// Sets this keyed stream aside to be connected to another later (see
    /// [`connect`](Self::connect)). A detached stream that is never
    /// connected fails the job at start (its key_by has no receiver).
    pub fn detach(self) -> DetachedKeyedStream<A, K, KA> {
        DetachedKeyedStream {
            exchange: self.exchange,
            key_fn: self.key_fn,
            _types: PhantomData,
        }
    }

    /// Connects this keyed stream with `other` (Flink's
    /// `KeyedStream.connect`): either another keyed stream with the same
    /// key type, built earlier in the same job and
    /// [`detach`](Self::detach)ed, for
    /// [`process`](ConnectedKeyedStreams::process) with a
    /// [`KeyedCoProcessFunction`] (this stream is its first input, `other`
    /// its second); or a [`BroadcastStream`](crate::broadcast::BroadcastStream),
    /// for a [`KeyedBroadcastProcessFunction`](crate::broadcast::KeyedBroadcastProcessFunction).
    pub fn connect<O: ConnectWith<'j, A, K, KA>>(self, other: O) -> O::Connected {
        other.connect_to(self)
    }
}

/// What a keyed stream can be connected with (see [`KeyedStream::connect`]).
pub trait ConnectWith<'j, A, K, KA> {
    /// The connected streams.
    type Connected;
    /// Connects `first` (the first input) with `self`.
    fn connect_to(self, first: KeyedStream<'j, A, K, KA>) -> Self::Connected;
}

impl<'j, A, B, K, KA, KB> ConnectWith<'j, A, K, KA> for DetachedKeyedStream<B, K, KB>
where
    A: Wire,
    B: Wire,
    K: KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
    KB: Fn(&B) -> K + Clone + Send + Sync + 'static,
{
    type Connected = ConnectedKeyedStreams<'j, A, B, K, KA, KB>;

    fn connect_to(self, first: KeyedStream<'j, A, K, KA>) -> Self::Connected {
        ConnectedKeyedStreams {
            first,
            second_exchange: self.exchange,
            second_key: self.key_fn,
            _types: PhantomData,
        }
    }
}

impl<A, B, K, KA, KB> ConnectedKeyedStreams<'_, A, B, K, KA, KB> {
    /// The job's list of errors (reported when it starts).
    pub(crate) fn job_errors(&mut self) -> &mut Vec<String> {
        &mut self.first.job.errors
    }
}

/// The chain builder of a keyed two-input operator.
type CoProcessChain<A, B, FF, KF> = KeyedProcessChain<TwoInputChain<A, B>, FF, KF>;

impl<'j, A, B, K, KA, KB> ConnectedKeyedStreams<'j, A, B, K, KA, KB>
where
    A: Wire,
    B: Wire,
    K: KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
    KB: Fn(&B) -> K + Clone + Send + Sync + 'static,
{
    /// Applies a keyed co-process function (Flink's
    /// `ConnectedStreams.process(KeyedCoProcessFunction)`); `factory` makes
    /// each subtask's instance. Starts a stage reading both exchanges.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, impl ChainBuilder<F::Out>>
    where
        F: KeyedCoProcessFunction<Key = K, In1 = A, In2 = B>,
        F::Out: 'static,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        let (first, second) = (self.first.exchange, self.second_exchange);
        let (ka, kb) = (self.first.key_fn, self.second_key);
        let job = self.first.job;
        job.register_uid(uid);
        job.add_co_input(first, second);
        let key_fn = move |r: &CoInput<A, B>| match r {
            CoInput::First(a) => ka(a),
            CoInput::Second(b) => kb(b),
        };
        let chain: CoProcessChain<A, B, _, _> = KeyedProcessChain {
            prev: TwoInputChain::new(first, second),
            uid: uid.to_owned(),
            factory: Arc::new(move |info: &SubtaskInfo| CoProcessAdapter(factory(info))),
            key_fn,
        };
        Stream {
            name: uid.to_owned(),
            chain,
            job,
            parallelism: None,
            input: Some(first),
            _record: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests;
