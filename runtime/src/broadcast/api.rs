//! The broadcast operators' place in the job API: connecting a stream
//! with a broadcast stream and the chain links that build the operators.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::Wire;
use weir_state::KeyHash;

use super::op::{restore_broadcast, BroadcastProcessOp, KeyedBroadcastProcessOp};
use super::{
    BroadcastProcessFunction, BroadcastState, BroadcastStream, FanOutTail,
    KeyedBroadcastProcessFunction,
};
use crate::checkpoint::snapshot::KeyedStates;
use crate::job::{ChainBuilder, JobGraph, KeyedStream, Stream};
use crate::keyed::take_created_states;
use crate::operator::Collector;
use crate::source::SubtaskInfo;
use crate::task::Task;
use crate::two_input::{ConnectWith, TwoInputChain};
use crate::worker::BuildContext;

/// Chain link of a keyed broadcast operator: the two-input head, then the
/// operator.
pub struct KeyedBroadcastChain<A, B, FF, KF> {
    first: usize,
    second: usize,
    uid: String,
    factory: Arc<FF>,
    key_fn: KF,
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B, FF, KF, F> ChainBuilder<F::Out> for KeyedBroadcastChain<A, B, FF, KF>
where
    A: Wire,
    B: Wire,
    F: KeyedBroadcastProcessFunction<In = A, Broadcast = B>,
    F::Out: 'static,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    KF: Fn(&A) -> F::Key + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let _ = take_created_states();
        let mut func = (self.factory)(&ctx.info);
        let created = take_created_states();
        if ctx.checkpointing.is_some() {
            let mut visited = Vec::new();
            func.visit_state(&mut KeyedStates::names(&mut visited));
            visited.sort();
            if let Some(dup) = visited.windows(2).find(|w| w[0] == w[1]) {
                panic!(
                    "keyed broadcast operator `{}` has two states named `{}`: state names must \
                     be unique",
                    self.uid, dup[0]
                );
            }
            let reserved = [
                crate::timers::EVENT_TIMERS_STATE,
                crate::timers::PROCESSING_TIMERS_STATE,
            ];
            if let Some(r) = visited.iter().find(|v| reserved.contains(&v.as_str())) {
                panic!(
                    "keyed broadcast operator `{}` has a state named `{r}`, the name of its \
                     timers in checkpoints: rename the state",
                    self.uid
                );
            }
            if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
                panic!(
                    "keyed broadcast operator `{}` creates state `{missing}` but its visit_state \
                     does not visit it: the state would be lost by checkpoints",
                    self.uid
                );
            }
        }
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let mut states = KeyedStates::restore(&scope);
            func.visit_state(&mut states);
            if let Some(e) = states.into_error() {
                panic!(
                    "keyed broadcast operator `{}` cannot restore checkpoint {}: {e}",
                    self.uid,
                    restore.id()
                );
            }
            if let Some(timers) = func.timer_service() {
                if let Err(e) = timers.restore(&scope) {
                    panic!(
                        "keyed broadcast operator `{}` cannot restore its timers: {e}",
                        self.uid
                    );
                }
            }
            restore_broadcast(&scope, &self.uid, &mut state);
        }
        let op = KeyedBroadcastProcessOp::new(
            func,
            self.key_fn.clone(),
            out,
            state,
            &self.uid,
            &ctx.info,
        );
        TwoInputChain::<A, B>::new(self.first, self.second).build(ctx, op)
    }
}

/// Chain link of a non-keyed broadcast operator.
pub struct BroadcastChain<A, B, FF> {
    first: usize,
    second: usize,
    uid: String,
    factory: Arc<FF>,
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B, FF, F> ChainBuilder<F::Out> for BroadcastChain<A, B, FF>
where
    A: Wire,
    B: Wire,
    F: BroadcastProcessFunction<In = A, Broadcast = B>,
    F::Out: 'static,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let func = (self.factory)(&ctx.info);
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            restore_broadcast(&restore.scope(&self.uid, &ctx.info), &self.uid, &mut state);
        }
        let op = BroadcastProcessOp::new(func, out, state, &self.uid, &ctx.info);
        TwoInputChain::<A, B>::new(self.first, self.second).build(ctx, op)
    }
}

/// A keyed stream connected with a broadcast stream (Flink's
/// `BroadcastConnectedStream` of a `KeyedStream`).
pub struct KeyedBroadcastConnectedStream<'j, A, B, K, KA> {
    job: &'j mut JobGraph,
    first: usize,
    second: usize,
    key_fn: KA,
    _types: PhantomData<fn(A, B) -> K>,
}

impl<'j, A, B, K, KA> ConnectWith<'j, A, K, KA> for BroadcastStream<B>
where
    A: Wire,
    K: KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
{
    type Connected = KeyedBroadcastConnectedStream<'j, A, B, K, KA>;

    fn connect_to(self, first: KeyedStream<'j, A, K, KA>) -> Self::Connected {
        KeyedBroadcastConnectedStream {
            job: first.job,
            first: first.exchange,
            second: self.exchange,
            key_fn: first.key_fn,
            _types: PhantomData,
        }
    }
}

impl<'j, A, B, K, KA> KeyedBroadcastConnectedStream<'j, A, B, K, KA>
where
    A: Wire,
    B: Wire,
    K: Copy + KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
{
    /// Applies a keyed broadcast process function; `factory` makes each
    /// subtask's instance.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, KeyedBroadcastChain<A, B, FF, KA>>
    where
        F: KeyedBroadcastProcessFunction<Key = K, In = A, Broadcast = B>,
        F::Out: 'static,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        self.job.add_co_input(self.first, self.second);
        Stream {
            name: uid.to_owned(),
            chain: KeyedBroadcastChain {
                first: self.first,
                second: self.second,
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                key_fn: self.key_fn,
                _types: PhantomData,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.first),
            _record: PhantomData,
        }
    }
}

/// A non-keyed stream connected with a broadcast stream (Flink's
/// `BroadcastConnectedStream` of a `DataStream`).
pub struct BroadcastConnectedStream<'j, A, B> {
    job: &'j mut JobGraph,
    first: usize,
    second: usize,
    _types: PhantomData<fn(A, B)>,
}

impl<'j, A: Wire, B0: ChainBuilder<A>> Stream<'j, A, B0> {
    /// Connects this stream with `broadcast` (Flink's
    /// `DataStream.connect(BroadcastStream)`), for
    /// [`process`](BroadcastConnectedStream::process) with a
    /// [`BroadcastProcessFunction`]. Ends this stage: its records are
    /// rebalanced (round-robin) over the operator's subtasks.
    pub fn connect<B: Wire>(
        self,
        broadcast: BroadcastStream<B>,
    ) -> BroadcastConnectedStream<'j, A, B> {
        let exchange = self.job.exchanges;
        self.job.exchanges += 1;
        let job = self.end_with(FanOutTail::<A>::new(exchange, false), exchange);
        BroadcastConnectedStream {
            job,
            first: exchange,
            second: broadcast.exchange,
            _types: PhantomData,
        }
    }
}

impl<'j, A: Wire, B: Wire> BroadcastConnectedStream<'j, A, B> {
    /// Applies a broadcast process function; `factory` makes each
    /// subtask's instance.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, BroadcastChain<A, B, FF>>
    where
        F: BroadcastProcessFunction<In = A, Broadcast = B>,
        F::Out: 'static,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        self.job.add_co_input(self.first, self.second);
        Stream {
            name: uid.to_owned(),
            chain: BroadcastChain {
                first: self.first,
                second: self.second,
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                _types: PhantomData,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.first),
            _record: PhantomData,
        }
    }
}
