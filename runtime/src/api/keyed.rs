//! A stream partitioned by key, ready for a keyed operator or windows.

use crate::api::graph::JobGraph;
use crate::api::stream::Stream;
use crate::api::window::WindowedStream;
use crate::build::exchange::ExchangeInputChain;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::chain::KeyedProcessChain;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::window::assign::Windowing;
use std::marker::PhantomData;
use std::sync::Arc;
use weir_net::Wire;
use weir_state::KeyHash;

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
