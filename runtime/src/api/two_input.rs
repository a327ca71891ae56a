//! Two keyed streams in one operator (Flink's `connect` with a
//! `KeyedCoProcessFunction`).
//!
//! A job is built through one stream at a time, so the second input is built
//! first and set aside with `detach()`.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::Wire;
use weir_state::KeyHash;

use crate::api::graph::JobGraph;
use crate::api::keyed::KeyedStream;
use crate::api::stream::Stream;
use crate::build::branch::BranchList;
use crate::build::builder::ChainBuilder;
use crate::build::channel_rescale::{key_route_of, InputRoute};
use crate::build::demand::TimestampDemand;
use crate::build::two_input::TwoInputChain;
use crate::core::subtask::SubtaskInfo;
use crate::exchange::decoder::CoInput;
use crate::operators::keyed::chain::KeyedProcessChain;
use crate::operators::two_input::{CoProcessAdapter, KeyedCoProcessFunction};

impl JobGraph {
    /// Records that the stage reading `first` also reads `second`.
    pub(crate) fn add_co_input(&self, first: usize, second: usize) {
        self.flow.borrow_mut().co_inputs.push((second, first));
    }
}

/// Two keyed streams with the same key type, connected for a two-input
/// operator (Flink's `ConnectedStreams` of two `KeyedStream`s).
pub struct ConnectedKeyedStreams<'j, A, B, K, KA, KB> {
    first: KeyedStream<'j, A, K, KA>,
    second_exchange: usize,
    second_key: KB,
    second_stamped: Option<TimestampDemand>,
    _types: PhantomData<fn(B)>,
}

/// A keyed stream set aside (it no longer borrows the job) to be the
/// second input of a two-input operator: a job is built through one stream
/// at a time, so the second input is built first and detached.
pub struct DetachedKeyedStream<T, K, KF> {
    pub(crate) exchange: usize,
    pub(crate) key_fn: KF,
    pub(crate) stamped: Option<TimestampDemand>,
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
            stamped: self.stamped,
            _types: PhantomData,
        }
    }

    /// Connects this keyed stream with `other` (Flink's
    /// `KeyedStream.connect`): either another keyed stream with the same
    /// key type, built earlier in the same job and
    /// [`detach`](Self::detach)ed, for
    /// [`process`](ConnectedKeyedStreams::process) with a
    /// [`KeyedCoProcessFunction`] (this stream is its first input, `other`
    /// its second); or a [`BroadcastStream`](crate::api::broadcast::BroadcastStream),
    /// for a [`KeyedBroadcastProcessFunction`](crate::operators::broadcast::function::KeyedBroadcastProcessFunction).
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
            second_stamped: self.stamped,
            _types: PhantomData,
        }
    }
}

impl<A, B, K, KA, KB> ConnectedKeyedStreams<'_, A, B, K, KA, KB> {
    /// Records a mistake in the job (reported when it starts).
    pub(crate) fn job_error(&self, message: String) {
        self.first.job.error(message)
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
        let stamps = (self.first.stamped.clone(), self.second_stamped.clone());
        // The function may read its records' timestamps.
        for d in [&stamps.0, &stamps.1].into_iter().flatten() {
            d.mark();
        }
        let out_stamps = {
            let inputs: Vec<_> = [&stamps.0, &stamps.1]
                .into_iter()
                .flatten()
                .cloned()
                .collect();
            (!inputs.is_empty()).then(|| TimestampDemand::after(inputs))
        };
        let routes = (
            InputRoute::Keyed(key_route_of::<A, K, _>(ka.clone(), stamps.0.clone())),
            InputRoute::Keyed(key_route_of::<B, K, _>(kb.clone(), stamps.1.clone())),
        );
        let job = self.first.job;
        job.register_uid(uid);
        job.add_co_input(first, second);
        let key_fn = move |r: &CoInput<A, B>| match r {
            CoInput::First(a) => ka(a),
            CoInput::Second(b) => kb(b),
        };
        let side = BranchList::default();
        let chain: CoProcessChain<A, B, _, _> = KeyedProcessChain {
            prev: TwoInputChain::new(first, second, routes).with_stamps(stamps),
            uid: uid.to_owned(),
            factory: Arc::new(move |info: &SubtaskInfo| CoProcessAdapter(factory(info))),
            key_fn,
            side: side.clone(),
        };
        Stream {
            name: uid.to_owned(),
            chain,
            job,
            parallelism: None,
            input: Some(first),
            _record: PhantomData,
            branch: None,
            side: Some(side),
            reserved: std::cell::Cell::new(None),
            union: None,
            stamped: out_stamps,
        }
    }
}
