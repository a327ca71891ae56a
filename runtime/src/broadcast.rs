//! Broadcast edges and broadcast state (Flink's broadcast state pattern).
//!
//! [`Stream::broadcast`] ends a stage in a broadcast edge: every record goes
//! to every receiving subtask. Connected with a keyed stream
//! (`keyed.connect(broadcast).process(uid, KeyedBroadcastProcessFunction)`)
//! or a non-keyed one (`stream.connect(broadcast).process(uid,
//! BroadcastProcessFunction)`), it meets the other input in a two-input
//! stage (one gate over both edges' channels, see [`crate::two_input`]).
//! The operator owns one [`BroadcastState`] map per subtask: the function
//! gets it read-write in `process_broadcast_element` and read-only (a
//! shared reference) in `process_element`, so every subtask that sees the
//! same broadcast records in the same order holds the same state.
//!
//! The map lives in an arena-backed table ([`weir_state::ValueState`]),
//! fixed-size (`Copy`) keys and values like all state in weir. It is
//! checkpointed per subtask as inline state and restored by each subtask;
//! at another parallelism every new subtask gets a copy of an old
//! subtask's (Flink's behaviour). The non-broadcast side of a non-keyed
//! connection is rebalanced (round-robin) to the operator's subtasks.

use std::marker::PhantomData;

use weir_net::{DecodeError, Wire};
use weir_state::{KeyHash, ValueState};

use crate::checkpoint::KeyedStates;
use crate::job::{ChainBuilder, Stream, TailBuilder};
use crate::keyed::KeyContext;
use crate::operator::Collector;
use crate::timers::{TimeDomain, TimerQueues};
use crate::worker::BuildContext;

mod api;
mod op;

pub use api::{
    BroadcastChain, BroadcastConnectedStream, KeyedBroadcastChain, KeyedBroadcastConnectedStream,
};
pub use op::{BroadcastProcessOp, FanOutOutput, KeyedBroadcastProcessOp};

/// Name of the broadcast state in an operator's inline state.
pub const BROADCAST_STATE: &str = "broadcast-state";

/// Flink's `BroadcastState<K, V>`: a map every subtask of the operator
/// holds a copy of, written only from broadcast records.
pub struct BroadcastState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    table: ValueState<K, V>,
}

impl<K, V> Default for BroadcastState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    fn default() -> Self {
        Self {
            table: ValueState::new(BROADCAST_STATE),
        }
    }
}

impl<K, V> BroadcastState<K, V>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    /// The value of `key`, if any.
    pub fn get(&self, key: &K) -> Option<V> {
        self.table.get(key).copied()
    }

    /// Whether `key` has a value.
    pub fn contains(&self, key: &K) -> bool {
        self.table.get(key).is_some()
    }

    /// Sets the value of `key`.
    pub fn put(&mut self, key: K, value: V) {
        self.table.put(key, value);
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.table.remove(key)
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.table.clear();
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.table.iter().map(|(k, v)| (*k, *v))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True if there is no entry.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The entries as inline checkpoint state: a `u64` count, then each
    /// `key, value` in its [`Wire`] form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = (self.len() as u64).to_le_bytes().to_vec();
        for (k, v) in self.iter() {
            for part in [&k as &dyn WireBytes, &v] {
                part.append_to(&mut out);
            }
        }
        out
    }

    /// Replaces the entries with those of `bytes` (from [`encode`](Self::encode)).
    pub fn decode_into(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        let (n, mut pos) = u64::read(bytes)?;
        self.clear();
        for _ in 0..n {
            let (k, a) = K::read(&bytes[pos..])?;
            pos += a;
            let (v, b) = V::read(&bytes[pos..])?;
            pos += b;
            self.put(k, v);
        }
        Ok(())
    }
}

/// A value appended in its [`Wire`] form (so keys and values go through
/// one loop).
trait WireBytes {
    fn append_to(&self, out: &mut Vec<u8>);
}

impl<T: Wire> WireBytes for T {
    fn append_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + self.encoded_len(), 0);
        self.write(&mut out[at..]);
    }
}

/// User logic of a keyed stream connected with a broadcast stream (Flink's
/// `KeyedBroadcastProcessFunction`).
pub trait KeyedBroadcastProcessFunction: 'static {
    /// The keyed input's key type.
    type Key: Copy + Eq + KeyHash + 'static;
    /// Records of the keyed input.
    type In;
    /// Records of the broadcast input.
    type Broadcast;
    /// Records out.
    type Out;
    /// Keys of the broadcast state.
    type StateKey: Copy + Eq + KeyHash + Wire;
    /// Values of the broadcast state.
    type StateValue: Copy + Wire;

    /// Processes one keyed record of key `ctx.key()`; the broadcast state
    /// is read-only here.
    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In,
        state: &BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Processes one broadcast record (every subtask sees each one); the
    /// broadcast state is read-write here.
    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        value: Self::Broadcast,
        state: &mut BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Hands every keyed state to `states`, as
    /// [`KeyedProcessFunction::visit_state`](crate::KeyedProcessFunction::visit_state).
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let _ = states;
    }

    /// The function's timer service, if it uses timers.
    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        None
    }

    /// Timer `timestamp` fired for key `ctx.key()`; the broadcast state is
    /// read-only here.
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        state: &BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    ) {
        let _ = (timestamp, ctx, domain, state, out);
    }
}

/// User logic of a non-keyed stream connected with a broadcast stream
/// (Flink's `BroadcastProcessFunction`).
pub trait BroadcastProcessFunction: 'static {
    /// Records of the non-broadcast input.
    type In;
    /// Records of the broadcast input.
    type Broadcast;
    /// Records out.
    type Out;
    /// Keys of the broadcast state.
    type StateKey: Copy + Eq + KeyHash + Wire;
    /// Values of the broadcast state.
    type StateValue: Copy + Wire;

    /// Processes one record of the non-broadcast input; the broadcast
    /// state is read-only here.
    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        value: Self::In,
        state: &BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );

    /// Processes one broadcast record; the broadcast state is read-write.
    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        value: Self::Broadcast,
        state: &mut BroadcastState<Self::StateKey, Self::StateValue>,
        out: &mut C,
    );
}

/// A stream ended in a broadcast edge, to be connected with another stream
/// (Flink's `BroadcastStream`). It does not borrow the job: build it first.
pub struct BroadcastStream<T> {
    pub(crate) exchange: usize,
    _record: PhantomData<fn() -> T>,
}

/// Tail of a stage whose records go to every receiving subtask (`all`) or
/// round-robin to one.
pub(crate) struct FanOutTail<T> {
    exchange: usize,
    all: bool,
    _record: PhantomData<fn(T)>,
}

impl<T> FanOutTail<T> {
    pub(crate) fn new(exchange: usize, all: bool) -> Self {
        Self {
            exchange,
            all,
            _record: PhantomData,
        }
    }
}

impl<T: Wire> TailBuilder<T> for FanOutTail<T> {
    type Tail = op::FanOutOutput<T>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Self::Tail {
        op::FanOutOutput::new(ctx, self.exchange, self.all)
    }
}

impl<'j, T: Wire, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// Ends this stage in a broadcast edge (Flink's `DataStream.broadcast`):
    /// each record reaches every subtask of the operator the returned
    /// stream is connected to.
    pub fn broadcast(self) -> BroadcastStream<T> {
        let exchange = self.job.exchanges;
        self.job.exchanges += 1;
        self.end_with(FanOutTail::<T>::new(exchange, true), exchange);
        BroadcastStream {
            exchange,
            _record: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests;
