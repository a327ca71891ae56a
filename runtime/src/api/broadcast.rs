//! Broadcast edges and broadcast state (Flink's broadcast state pattern).
//!
//! [`Stream::broadcast`] ends a stage in a broadcast edge: every record goes
//! to every receiving subtask. Connected with a keyed stream
//! (`keyed.connect(broadcast).process(uid, KeyedBroadcastProcessFunction)`)
//! or a non-keyed one (`stream.connect(broadcast).process(uid,
//! BroadcastProcessFunction)`), it meets the other input in a two-input
//! stage.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::Wire;
use weir_state::{KeyHash, StateKey};

use crate::api::graph::JobGraph;
use crate::api::keyed::KeyedStream;
use crate::api::stream::Stream;
use crate::api::two_input::ConnectWith;
use crate::build::branch::BranchList;
use crate::build::builder::ChainBuilder;
use crate::build::demand::TimestampDemand;
use crate::build::exchange::FanOutTail;
use crate::core::subtask::SubtaskInfo;
use crate::operators::broadcast::chain::{BroadcastChain, KeyedBroadcastChain};
use crate::operators::broadcast::function::{
    BroadcastProcessFunction, KeyedBroadcastProcessFunction,
};

/// A stream ended in a broadcast edge, to be connected with another stream
/// (Flink's `BroadcastStream`). It does not borrow the job: build it first.
pub struct BroadcastStream<T> {
    pub(crate) exchange: usize,
    _record: PhantomData<fn() -> T>,
}

impl<'j, T: Wire, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// Ends this stage in a broadcast edge (Flink's `DataStream.broadcast`):
    /// each record reaches every subtask of the operator the returned
    /// stream is connected to.
    pub fn broadcast(self) -> BroadcastStream<T> {
        let exchange = self.job.new_exchange("BROADCAST");
        self.end_with(FanOutTail::<T>::new(exchange, true), exchange);
        BroadcastStream {
            exchange,
            _record: PhantomData,
        }
    }
}

/// A keyed stream connected with a broadcast stream (Flink's
/// `BroadcastConnectedStream` of a `KeyedStream`).
pub struct KeyedBroadcastConnectedStream<'j, A, B, K, KA> {
    job: &'j JobGraph,
    first: usize,
    second: usize,
    key_fn: KA,
    stamped: Option<TimestampDemand>,
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
            stamped: first.stamped,
            _types: PhantomData,
        }
    }
}

impl<'j, A, B, K, KA> KeyedBroadcastConnectedStream<'j, A, B, K, KA>
where
    A: Wire,
    B: Wire,
    K: StateKey + 'static,
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
        // The function may read its records' timestamps.
        if let Some(d) = &self.stamped {
            d.mark();
        }
        self.job.register_uid(uid);
        let side = BranchList::default();
        self.job.add_co_input(self.first, self.second);
        Stream {
            name: uid.to_owned(),
            chain: KeyedBroadcastChain {
                first: self.first,
                second: self.second,
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                key_fn: self.key_fn,
                side: side.clone(),
                stamped: self.stamped.clone(),
                _types: PhantomData,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.first),
            _record: PhantomData,
            branch: None,
            side: Some(side),
            reserved: std::cell::Cell::new(None),
            union: None,
            stamped: self.stamped,
        }
    }
}

/// A non-keyed stream connected with a broadcast stream (Flink's
/// `BroadcastConnectedStream` of a `DataStream`).
pub struct BroadcastConnectedStream<'j, A, B> {
    job: &'j JobGraph,
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
        let exchange = self.job.new_exchange("REBALANCE");
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
        let side = BranchList::default();
        self.job.add_co_input(self.first, self.second);
        Stream {
            name: uid.to_owned(),
            chain: BroadcastChain {
                first: self.first,
                second: self.second,
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                side: side.clone(),
                _types: PhantomData,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.first),
            _record: PhantomData,
            branch: None,
            side: Some(side),
            reserved: std::cell::Cell::new(None),
            union: None,
            stamped: None,
        }
    }
}
