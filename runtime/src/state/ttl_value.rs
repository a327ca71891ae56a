//! A keyed `ValueState` with a time-to-live: one table of `(value,
//! timestamp)`, so the plain value state's hot path stays as it is.

use std::rc::Rc;

use weir_net::Wire;
use weir_state::{StateKey, StateValue, SweepStep, ValueState};

use crate::state::aggregating::AccTable;
use crate::state::codec::FrozenTable;
use crate::state::key_context::KeyContext;
use crate::state::ttl::Ttl;
use crate::state::ttl::{ttl_for, StateTtlConfig, TtlClock};
use crate::state::ttl_cleanup::{run_pass, CleanupPass, TtlTables};

/// Flink's keyed `ValueState<V>` with a time-to-live: one value per key
/// that expires (see [`crate::state::ttl`]). A separate type from
/// [`crate::state::value::KeyedValueState`], whose entries carry no timestamp, so that
/// state without TTL costs nothing for it.
pub struct KeyedTtlValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    acc: AccTable<K, V>,
}

impl<K, V> KeyedTtlValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    /// An empty value state named `name` whose values live as `config`
    /// says, on processing time.
    pub fn new(name: &str, config: StateTtlConfig) -> Self {
        let mut acc = AccTable::new(name);
        acc.ttl = ttl_for(config, None);
        Self { acc }
    }

    /// The same state with time-to-live `config` measured by `clock`.
    pub fn with_ttl_clock(mut self, config: StateTtlConfig, clock: Rc<dyn TtlClock>) -> Self {
        self.acc.ttl = ttl_for(config, Some(clock));
        self
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        self.acc.table.name()
    }

    /// The current key's value, if any and not expired.
    pub fn value(&mut self, ctx: &KeyContext<K>) -> Option<V> {
        self.acc.get(ctx)
    }

    /// Sets the current key's value.
    pub fn update(&mut self, ctx: &KeyContext<K>, value: V) {
        self.acc.update(ctx, |_| value);
    }

    /// Removes the current key's value.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.acc.clear(ctx);
    }

    /// Values of all keys on this subtask (expired ones not cleaned up
    /// yet included).
    pub fn total_len(&self) -> usize {
        self.acc.table.len()
    }

    /// Bytes of the state's table (expired entries not cleaned up yet
    /// included): what TTL cleanup gives back.
    pub fn memory_bytes(&self) -> usize {
        self.acc.memory_bytes()
    }

    /// Slots of the state's table (it shrinks when cleanup leaves it
    /// sparse).
    pub fn capacity(&self) -> usize {
        self.acc.table.capacity()
    }

    /// Runs a TTL cleanup pass (see [`crate::state::ttl_cleanup`]).
    pub(crate) fn run_cleanup(&mut self, pass: &mut CleanupPass) {
        run_pass(&mut self.acc, pass);
    }
}

impl<K, V> TtlTables for KeyedTtlValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    fn ttl(&self) -> &Ttl {
        self.acc.ttl()
    }

    fn stored_entries(&self) -> usize {
        self.acc.stored_entries()
    }

    fn slots(&self) -> usize {
        self.acc.slots()
    }

    fn purge(&mut self, budget: usize, now: u64) -> SweepStep {
        self.acc.purge(budget, now)
    }
}

impl<K, V> KeyedTtlValueState<K, V>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
{
    /// A frozen view for a checkpoint (see the module doc for the format).
    pub(crate) fn freeze(&self) -> FrozenTable<K, (V, u64)> {
        self.acc.freeze()
    }

    /// The value table, for restores.
    pub(crate) fn table_mut(&mut self) -> &mut ValueState<K, (V, u64)> {
        &mut self.acc.table
    }
}
