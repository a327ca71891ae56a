//! Flink's keyed `ReducingState` and `AggregatingState` (with its
//! `AggregateFunction`): one accumulator per key.

use std::rc::Rc;

use weir_net::Wire;
use weir_state::{StateKey, StateValue, SweepStep, ValueState};

use crate::core::wire::append_wire;
use crate::state::codec::FrozenTable;
use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};
use crate::state::ttl::{ttl_for, StateTtlConfig, Ttl, TtlClock};
use crate::state::ttl_cleanup::{run_pass, CleanupPass, TtlTables};

// ---------------------------------------------------- reducing, aggregating

/// Flink's `AggregateFunction`: folds inputs into an accumulator and reads
/// a result from it.
pub trait AggregateFunction: 'static {
    /// Values added.
    type In;
    /// The accumulator stored per key (any [`StateValue`]: fixed-size or
    /// owning memory, with a `Default` for empty slots).
    type Acc: StateValue;
    /// Results read.
    type Out;

    /// A new, empty accumulator.
    fn create_accumulator(&self) -> Self::Acc;
    /// `acc` with `value` added.
    fn add(&self, value: Self::In, acc: Self::Acc) -> Self::Acc;
    /// `acc` with a borrowed `value` added: what a window that assigns a
    /// record to several windows (sliding, cumulating) folds into each.
    /// The default clones the value for [`add`](Self::add); a function
    /// that only reads its value overrides this to save the clone.
    #[inline]
    fn add_ref(&self, value: &Self::In, acc: Self::Acc) -> Self::Acc
    where
        Self::In: Clone,
    {
        self.add(value.clone(), acc)
    }
    /// The result of `acc`.
    fn get_result(&self, acc: &Self::Acc) -> Self::Out;
    /// Two accumulators merged into one.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// [`merge`](Self::merge) of a borrowed `b`: the default clones it.
    #[inline]
    fn merge_ref(&self, a: Self::Acc, b: &Self::Acc) -> Self::Acc {
        self.merge(a, b.clone())
    }
    /// Whether [`merge`](Self::merge) gives exactly the accumulator that
    /// folding the records of both, in any order, gives (COUNT, an
    /// integer SUM, MIN, MAX: not a floating-point sum, nor a result that
    /// depends on the order records came in). Sliding windows of such a
    /// function fold each record once, into its slice, and merge the
    /// slices of a window when it fires (Flink SQL's window slicing);
    /// otherwise (the default, as Flink's DataStream windows) each record
    /// folds into every window that holds it.
    fn merges_exactly(&self) -> bool {
        false
    }
}

/// One accumulator per key with its last access: what reducing and
/// aggregating state store.
pub(crate) struct AccTable<K, A>
where
    K: StateKey,
    A: StateValue,
{
    pub(crate) table: ValueState<K, (A, u64)>,
    pub(crate) ttl: Ttl,
}

impl<K, A> AccTable<K, A>
where
    K: StateKey,
    A: StateValue,
{
    pub(crate) fn new(name: &str) -> Self {
        register_state(StateKind::Keyed, name);
        Self {
            table: ValueState::new(name),
            ttl: Ttl::default(),
        }
    }

    /// The key's unexpired accumulator (an expired one is removed).
    pub(crate) fn get(&mut self, ctx: &KeyContext<K>) -> Option<A> {
        if !self.ttl.enabled() {
            return self
                .table
                .get_hashed(ctx.key(), ctx.hash())
                .map(|(acc, _)| acc.clone());
        }
        let now = self.ttl.now();
        let found = self.get_ttl(ctx, now);
        self.cleanup_on_access(now);
        found
    }

    /// [`get`](Self::get) with TTL, at `now`.
    fn get_ttl(&mut self, ctx: &KeyContext<K>, now: u64) -> Option<A> {
        let (acc, stamp) = self.table.get_hashed(ctx.key(), ctx.hash())?;
        if self.ttl.expired(*stamp, now) {
            self.table.remove_hashed(ctx.key(), ctx.hash());
            return None;
        }
        let acc = acc.clone();
        if self.ttl.renew_on_read() {
            self.table
                .get_mut_hashed(ctx.key(), ctx.hash())
                .expect("just read")
                .1 = now;
        }
        Some(acc)
    }

    /// Sets the key's accumulator to `f(current unexpired one)`.
    pub(crate) fn update(&mut self, ctx: &KeyContext<K>, f: impl FnOnce(Option<A>) -> A) {
        let now = self.ttl.now();
        let ttl = &self.ttl;
        match self.table.get_mut_hashed(ctx.key(), ctx.hash()) {
            Some(slot) => {
                // Moved out, not cloned: an accumulator that owns memory
                // (a `String`) is folded in place.
                let current = (!ttl.expired(slot.1, now)).then(|| std::mem::take(&mut slot.0));
                *slot = (f(current), now);
            }
            None => {
                let value = (f(None), now);
                self.table.put_hashed_ref(ctx.key(), ctx.hash(), value);
            }
        }
        if self.ttl.enabled() {
            self.cleanup_on_access(now);
        }
    }

    pub(crate) fn clear(&mut self, ctx: &KeyContext<K>) {
        self.table.remove_hashed(ctx.key(), ctx.hash());
        if self.ttl.enabled() {
            self.cleanup_on_access(self.ttl.now());
        }
    }

    /// Bytes of the table's slots.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
    }
}

impl<K, A> TtlTables for AccTable<K, A>
where
    K: StateKey,
    A: StateValue,
{
    fn ttl(&self) -> &Ttl {
        &self.ttl
    }

    fn stored_entries(&self) -> usize {
        self.table.len()
    }

    fn slots(&self) -> usize {
        self.table.capacity()
    }

    fn purge(&mut self, budget: usize, now: u64) -> SweepStep {
        let ttl = &self.ttl;
        let step = self
            .table
            .purge_step(budget, |_, (_, stamp)| ttl.expired(*stamp, now));
        self.table.shrink_if_sparse();
        step
    }
}

impl<K, A> AccTable<K, A>
where
    K: StateKey + Wire,
    A: StateValue + Wire,
{
    pub(crate) fn freeze(&self) -> FrozenTable<K, (A, u64)> {
        FrozenTable::new(
            self.table.freeze(),
            |k| k.key_hash(),
            |buf, k, (acc, stamp)| {
                append_wire(buf, k);
                append_wire(buf, acc);
                append_wire(buf, stamp);
            },
            |(_, stamp)| *stamp,
            self.ttl.snapshot_cutoff(self.table.len()),
        )
    }
}

/// Flink's keyed `ReducingState<V>`: per key, the values added so far
/// combined by a reduce function `f(accumulated, new)`.
pub struct KeyedReducingState<K, V, F>
where
    K: StateKey,
    V: StateValue,
    F: Fn(V, V) -> V,
{
    acc: AccTable<K, V>,
    reduce: F,
}

impl<K, V, F> KeyedReducingState<K, V, F>
where
    K: StateKey,
    V: StateValue,
    F: Fn(V, V) -> V,
{
    /// An empty reducing state named `name` combining with `reduce`.
    pub fn new(name: &str, reduce: F) -> Self {
        Self {
            acc: AccTable::new(name),
            reduce,
        }
    }

    /// The same state with time-to-live `config`, on processing time.
    pub fn with_ttl(mut self, config: StateTtlConfig) -> Self {
        self.acc.ttl = ttl_for(config, None);
        self
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

    /// The current key's reduced value, if any and not expired.
    pub fn get(&mut self, ctx: &KeyContext<K>) -> Option<V> {
        self.acc.get(ctx)
    }

    /// Reduces `value` into the current key's value.
    pub fn add(&mut self, ctx: &KeyContext<K>, value: V) {
        let reduce = &self.reduce;
        self.acc.update(ctx, |cur| match cur {
            Some(acc) => reduce(acc, value),
            None => value,
        });
    }

    /// Removes the current key's value.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.acc.clear(ctx);
    }

    /// Bytes of the state's table (expired entries not cleaned up yet
    /// included).
    pub fn memory_bytes(&self) -> usize {
        self.acc.memory_bytes()
    }

    /// Runs a TTL cleanup pass (see [`crate::state::ttl_cleanup`]).
    pub(crate) fn run_cleanup(&mut self, pass: &mut CleanupPass) {
        run_pass(&mut self.acc, pass);
    }
}

/// Flink's keyed `AggregatingState<IN, OUT>`: per key, an accumulator of
/// the values added so far, read through an [`AggregateFunction`].
pub struct KeyedAggregatingState<K, A>
where
    K: StateKey,
    A: AggregateFunction,
{
    acc: AccTable<K, A::Acc>,
    agg: A,
}

impl<K, A> KeyedAggregatingState<K, A>
where
    K: StateKey,
    A: AggregateFunction,
{
    /// An empty aggregating state named `name` aggregating with `agg`.
    pub fn new(name: &str, agg: A) -> Self {
        Self {
            acc: AccTable::new(name),
            agg,
        }
    }

    /// The same state with time-to-live `config`, on processing time.
    pub fn with_ttl(mut self, config: StateTtlConfig) -> Self {
        self.acc.ttl = ttl_for(config, None);
        self
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

    /// The current key's result, if it has an unexpired accumulator.
    pub fn get(&mut self, ctx: &KeyContext<K>) -> Option<A::Out> {
        self.acc.get(ctx).map(|acc| self.agg.get_result(&acc))
    }

    /// Adds `value` to the current key's accumulator.
    pub fn add(&mut self, ctx: &KeyContext<K>, value: A::In) {
        let agg = &self.agg;
        self.acc.update(ctx, |cur| {
            agg.add(value, cur.unwrap_or_else(|| agg.create_accumulator()))
        });
    }

    /// Merges `acc` into the current key's accumulator.
    pub fn merge_accumulator(&mut self, ctx: &KeyContext<K>, acc: A::Acc) {
        let agg = &self.agg;
        self.acc.update(ctx, |cur| match cur {
            Some(mine) => agg.merge(mine, acc),
            None => acc,
        });
    }

    /// Removes the current key's accumulator.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.acc.clear(ctx);
    }

    /// Bytes of the state's table (expired entries not cleaned up yet
    /// included).
    pub fn memory_bytes(&self) -> usize {
        self.acc.memory_bytes()
    }

    /// Runs a TTL cleanup pass (see [`crate::state::ttl_cleanup`]).
    pub(crate) fn run_cleanup(&mut self, pass: &mut CleanupPass) {
        run_pass(&mut self.acc, pass);
    }
}

impl<K, V, F> KeyedReducingState<K, V, F>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
    F: Fn(V, V) -> V,
{
    /// A frozen view for a checkpoint (see the module doc for the format).
    pub(crate) fn freeze(&self) -> FrozenTable<K, (V, u64)> {
        self.acc.freeze()
    }

    /// The accumulator table, for restores.
    pub(crate) fn table_mut(&mut self) -> &mut ValueState<K, (V, u64)> {
        &mut self.acc.table
    }
}

impl<K, A> KeyedAggregatingState<K, A>
where
    K: StateKey + Wire,
    A: AggregateFunction,
    A::Acc: Wire,
{
    /// A frozen view for a checkpoint (see the module doc for the format).
    pub(crate) fn freeze(&self) -> FrozenTable<K, (A::Acc, u64)> {
        self.acc.freeze()
    }

    /// The accumulator table, for restores.
    pub(crate) fn table_mut(&mut self) -> &mut ValueState<K, (A::Acc, u64)> {
        &mut self.acc.table
    }
}
