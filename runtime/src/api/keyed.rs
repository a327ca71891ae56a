//! A stream partitioned by key, ready for a keyed operator or windows.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::Wire;
use weir_state::KeyHash;

use crate::api::graph::JobGraph;
use crate::api::stream::Stream;
use crate::build::branch::BranchList;
use crate::build::builder::ChainBuilder;
use crate::build::channel_rescale::key_route_of;
use crate::build::demand::TimestampDemand;
use crate::build::exchange::{ExchangeInputChain, ExchangeTail};
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::chain::KeyedProcessChain;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::state::key_selector::{KeyByRef, KeySelector};

impl<'j, T: 'static, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// Partitions the stream by key: records travel to the subtask owning
    /// their key's key group. Ends this stage.
    pub fn key_by<K, KF>(self, key_fn: KF) -> KeyedStream<'j, T, K, KF>
    where
        T: Wire,
        K: KeyHash + 'static,
        KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
    {
        self.partition_by_key(key_fn.clone(), key_fn)
    }

    /// [`key_by`](Self::key_by) a key the record holds, selected by
    /// reference (`.key_by_ref(|e: &Event| &e.user)`): the sending side
    /// hashes the key where it lies instead of cloning it only to hash it
    /// (for a `String` key, an allocation and a free per record fewer);
    /// the keyed operator's context gets a clone of it, as with `key_by`.
    /// The same key groups, state and checkpoints as `key_by` of the
    /// key's clone.
    pub fn key_by_ref<K, KF>(self, key_fn: KF) -> KeyedStream<'j, T, K, KeyByRef<KF>>
    where
        T: Wire,
        K: KeyHash + Clone + 'static,
        KF: for<'a> Fn(&'a T) -> &'a K + Clone + Send + Sync + 'static,
    {
        let hash_of = key_fn.clone();
        self.partition_by_key(
            move |record: &T| Prehashed(hash_of(record).key_hash()),
            KeyByRef(key_fn),
        )
    }

    /// [`key_by`](Self::key_by) whose sending side routes each record by
    /// `hash_fn`, which must return the [`KeyHash::key_hash`] of `key_fn`'s
    /// key without making the key: for a key built from parts of the
    /// record (an SQL row's grouping columns), routing then builds
    /// nothing. The keyed operator gets `key_fn`'s key. A `hash_fn` that
    /// disagrees sends records to subtasks that do not own their key
    /// group: debug builds panic on the receiving side.
    pub fn key_by_hash<K, KF, HF>(self, key_fn: KF, hash_fn: HF) -> KeyedStream<'j, T, K, KF>
    where
        T: Wire,
        K: KeyHash + 'static,
        KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
        HF: Fn(&T) -> u64 + Clone + Send + Sync + 'static,
    {
        self.partition_by_key(move |record: &T| Prehashed(hash_fn(record)), key_fn)
    }

    /// Ends the stage in a key_by exchange that routes each record by the
    /// hash of `route_fn`'s key, which must be `key_fn`'s key's hash (the
    /// receiver's keyed operator checks it in debug builds).
    fn partition_by_key<K, KF, RK, RF>(self, route_fn: RF, key_fn: KF) -> KeyedStream<'j, T, K, KF>
    where
        T: Wire,
        K: KeyHash + 'static,
        KF: KeySelector<T, Key = K>,
        RK: KeyHash + 'static,
        RF: Fn(&T) -> RK + Clone + Send + Sync + 'static,
    {
        let exchange = self.job.new_exchange("HASH");
        let name = self.name.clone();
        // The stream after the exchange: its timestamps come from this one.
        let stamped = self.stamped.clone().map(|d| TimestampDemand::after([d]));
        let job = self.end_stage(
            name,
            ExchangeTail {
                exchange,
                key_fn: route_fn,
                stamped: stamped.clone(),
                _types: PhantomData,
            },
            Some(exchange),
        );
        KeyedStream {
            job,
            exchange,
            key_fn,
            stamped,
            _types: PhantomData,
        }
    }
}

/// A key's hash standing for the key where only the hash is needed: the
/// sending side of [`Stream::key_by_ref`] and [`Stream::key_by_hash`]
/// routes by it.
#[derive(Clone, Copy)]
struct Prehashed(u64);

impl KeyHash for Prehashed {
    #[inline(always)]
    fn key_hash(&self) -> u64 {
        self.0
    }
}

/// A stream partitioned by key, ready for a keyed operator.
pub struct KeyedStream<'j, T, K, KF> {
    pub(crate) job: &'j JobGraph,
    pub(crate) exchange: usize,
    pub(crate) key_fn: KF,
    /// The stream's record timestamps, if it has event time (they cross
    /// the exchange if read downstream).
    pub(crate) stamped: Option<TimestampDemand>,
    pub(crate) _types: PhantomData<fn(T) -> K>,
}

impl<'j, T, K, KF> KeyedStream<'j, T, K, KF>
where
    T: Wire,
    K: KeyHash + Eq + 'static,
    KF: KeySelector<T, Key = K>,
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
        // The function may read its records' timestamps (`ctx.timestamp()`).
        self.process_reading_timestamps(uid, factory, true)
    }

    /// [`process`](Self::process) by an operator of weir's own that reads
    /// its records' timestamps only if `reads` (a window whose assigner
    /// does).
    pub(crate) fn process_reading_timestamps<F, FF>(
        self,
        uid: &str,
        factory: FF,
        reads: bool,
    ) -> Stream<'j, F::Out, KeyedProcessChain<ExchangeInputChain<T>, FF, KF>>
    where
        F: KeyedProcessFunction<Key = K, In = T>,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        if let (true, Some(d)) = (reads, &self.stamped) {
            d.mark();
        }
        self.job.register_uid(uid);
        let side = BranchList::default();
        let selector = self.key_fn.clone();
        Stream {
            name: uid.to_owned(),
            chain: KeyedProcessChain {
                prev: ExchangeInputChain {
                    exchange: self.exchange,
                    route: key_route_of(move |r: &T| selector.key(r), self.stamped.clone()),
                    stamped: self.stamped.clone(),
                    _record: PhantomData,
                },
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                key_fn: self.key_fn,
                side: side.clone(),
            },
            job: self.job,
            parallelism: None,
            input: Some(self.exchange),
            branch: None,
            side: Some(side),
            reserved: Cell::new(None),
            union: None,
            stamped: self.stamped,
            _record: PhantomData,
        }
    }
}
