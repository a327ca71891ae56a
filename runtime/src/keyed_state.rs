//! Flink's other keyed state kinds: [`KeyedMapState`], [`KeyedListState`],
//! [`KeyedReducingState`] and [`KeyedAggregatingState`], each scoped to the
//! current key of a [`KeyContext`], each optionally with a time-to-live
//! ([`crate::ttl`]), and [`KeyedTtlValueState`], value state with a
//! time-to-live.
//!
//! # Storage
//!
//! Like [`crate::KeyedValueState`] they live in the worker's arena-backed
//! open-addressing tables ([`weir_state::ValueState`]), with no heap
//! allocation per entry, so keys, user keys and values are fixed-size
//! (`Copy`) types with a [`Wire`] encoding:
//!
//! - **Map state** is one table keyed by the composite key `(key, user
//!   key)` (its hash mixes both, so a key's entries spread over the table),
//!   plus a small table per key with the key's first user key and entry
//!   count. The entries of one key form a doubly linked list through the
//!   user keys stored beside each value, so the key's entries can be
//!   iterated and an entry removed with a few lookups, never a scan.
//! - **List state** is one table keyed by `(key, index)` for the elements
//!   and a table of list lengths: elements `0..len` of a key, in order.
//! - **Reducing** and **aggregating state** are one table of the
//!   accumulated value per key; **TTL value state** one table of values.
//!
//! Every stored value carries its last-access time in milliseconds (0 and
//! never looked at without TTL; 8 bytes per entry).
//!
//! # Checkpoints
//!
//! A snapshot freezes the entry tables (copy-on-write, as for value state)
//! and writes each entry into the block of the key group of its *primary*
//! key, never of the composite key: a restore at another parallelism finds
//! a key's map entries and list elements with the key. Map heads and list
//! lengths are not written; a restore rebuilds them from the entries.
//! Entry formats (each field in its [`Wire`] encoding): map `key, user key,
//! value, timestamp`; list `key, index, element, timestamp`; reducing,
//! aggregating and TTL value `key, accumulator | value, timestamp`. With TTL the snapshot leaves
//! out entries expired when it was taken (full cleanup); list elements
//! that were left out are closed up on restore.

use std::rc::Rc;

use weir_net::{DecodeError, Wire};
use weir_state::{KeyHash, ValueState};

use crate::checkpoint::snapshot::{append_wire, FrozenTable, RestoreSink};
use crate::keyed::{register_state, KeyContext};
use crate::ttl::{ProcessingTimeClock, StateTtlConfig, Ttl, TtlClock};

/// Attaches [`StateTtlConfig`]s to a state.
fn ttl_for(config: StateTtlConfig, clock: Option<Rc<dyn TtlClock>>) -> Ttl {
    Ttl::new(
        config,
        clock.unwrap_or_else(|| Rc::new(ProcessingTimeClock)),
    )
}

// ---------------------------------------------------------------- map

/// A map entry: the value, its last access, and the neighbouring user keys
/// of the same key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapSlot<UK, UV> {
    value: UV,
    stamp: u64,
    prev: Option<UK>,
    next: Option<UK>,
}

/// A key's map: its first user key and its number of entries.
#[derive(Clone, Copy, Debug)]
struct MapHead<UK> {
    first: UK,
    len: u32,
}

/// Flink's keyed `MapState<UK, UV>`: a map per key, scoped to the current
/// key of a [`KeyContext`].
pub struct KeyedMapState<K, UK, UV>
where
    K: Copy + Eq + KeyHash,
    UK: Copy + Eq + KeyHash,
    UV: Copy,
{
    entries: ValueState<(K, UK), MapSlot<UK, UV>>,
    heads: ValueState<K, MapHead<UK>>,
    ttl: Ttl,
}

impl<K, UK, UV> KeyedMapState<K, UK, UV>
where
    K: Copy + Eq + KeyHash,
    UK: Copy + Eq + KeyHash,
    UV: Copy,
{
    /// An empty map state named `name` (unique within its operator).
    pub fn new(name: &str) -> Self {
        register_state(name);
        Self {
            entries: ValueState::new(name),
            heads: ValueState::new(name),
            ttl: Ttl::default(),
        }
    }

    /// The same state with time-to-live `config`, on processing time.
    pub fn with_ttl(self, config: StateTtlConfig) -> Self {
        Self {
            ttl: ttl_for(config, None),
            ..self
        }
    }

    /// The same state with time-to-live `config` measured by `clock`.
    pub fn with_ttl_clock(self, config: StateTtlConfig, clock: Rc<dyn TtlClock>) -> Self {
        Self {
            ttl: ttl_for(config, Some(clock)),
            ..self
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        self.entries.name()
    }

    /// Entries of all keys on this subtask (expired ones not cleaned up
    /// yet included).
    pub fn total_len(&self) -> usize {
        self.entries.len()
    }

    /// The current key's value for `user_key`, if any and not expired.
    pub fn get(&mut self, ctx: &KeyContext<K>, user_key: &UK) -> Option<UV> {
        let key = (*ctx.key(), *user_key);
        let slot = *self.entries.get(&key)?;
        if self.ttl.enabled() {
            let now = self.ttl.now();
            if self.ttl.expired(slot.stamp, now) {
                self.unlink(key, slot);
                return None;
            }
            if self.ttl.renew_on_read() {
                self.entries.get_mut(&key).expect("just read").stamp = now;
            }
        }
        Some(slot.value)
    }

    /// True if the current key has a value for `user_key` (a read).
    pub fn contains(&mut self, ctx: &KeyContext<K>, user_key: &UK) -> bool {
        self.get(ctx, user_key).is_some()
    }

    /// Sets the current key's value for `user_key`.
    pub fn put(&mut self, ctx: &KeyContext<K>, user_key: UK, value: UV) {
        let stamp = self.ttl.now();
        self.put_stamped(*ctx.key(), user_key, value, stamp);
    }

    /// Sets `(key, user_key)` to `value` last accessed at `stamp`.
    fn put_stamped(&mut self, key: K, user_key: UK, value: UV, stamp: u64) {
        if let Some(slot) = self.entries.get_mut(&(key, user_key)) {
            slot.value = value;
            slot.stamp = stamp;
            return;
        }
        // New entries go to the front of the key's list.
        let head = self.heads.get(&key).copied();
        if let Some(h) = head {
            self.entries
                .get_mut(&(key, h.first))
                .expect("a map head names a stored entry")
                .prev = Some(user_key);
        }
        self.entries.put(
            (key, user_key),
            MapSlot {
                value,
                stamp,
                prev: None,
                next: head.map(|h| h.first),
            },
        );
        self.heads.put(
            key,
            MapHead {
                first: user_key,
                len: head.map_or(0, |h| h.len) + 1,
            },
        );
    }

    /// Replaces the current key's value for `user_key` by `f` of it (`None`
    /// if absent or expired) and returns the new value and whether the
    /// entry is new: one lookup when the entry exists (a read and a write,
    /// as for TTL; the hot path of window aggregation).
    #[inline]
    pub fn upsert(
        &mut self,
        ctx: &KeyContext<K>,
        user_key: UK,
        f: impl FnOnce(Option<UV>) -> UV,
    ) -> (UV, bool) {
        let key = (*ctx.key(), user_key);
        let now = self.ttl.now();
        if let Some(slot) = self.entries.get_mut(&key) {
            if !self.ttl.expired(slot.stamp, now) {
                slot.value = f(Some(slot.value));
                slot.stamp = now;
                return (slot.value, false);
            }
            let expired = *slot;
            self.unlink(key, expired);
        }
        let value = f(None);
        self.put_stamped(key.0, user_key, value, now);
        (value, true)
    }

    /// Removes the current key's value for `user_key`; returns it unless
    /// it had expired.
    pub fn remove(&mut self, ctx: &KeyContext<K>, user_key: &UK) -> Option<UV> {
        let key = (*ctx.key(), *user_key);
        let slot = *self.entries.get(&key)?;
        self.unlink(key, slot);
        (!self.ttl.expired(slot.stamp, self.ttl.now())).then_some(slot.value)
    }

    /// Removes the entry `key` (stored as `slot`) and its links.
    fn unlink(&mut self, key: (K, UK), slot: MapSlot<UK, UV>) {
        let (k, _) = key;
        if let Some(p) = slot.prev {
            self.entries
                .get_mut(&(k, p))
                .expect("a map entry's predecessor is stored")
                .next = slot.next;
        }
        if let Some(n) = slot.next {
            self.entries
                .get_mut(&(k, n))
                .expect("a map entry's successor is stored")
                .prev = slot.prev;
        }
        let head = self
            .heads
            .get_mut(&k)
            .expect("a stored entry's key has a head");
        head.len -= 1;
        if head.len == 0 {
            self.heads.remove(&k);
        } else if slot.prev.is_none() {
            head.first = slot.next.expect("a head of more entries has a successor");
        }
        self.entries.remove(&key);
    }

    /// Removes the current key's expired entries and, when reads renew
    /// them, renews the others: what every iteration does first.
    fn prepare_iteration(&mut self, key: K) {
        if !self.ttl.enabled() {
            return;
        }
        let now = self.ttl.now();
        let renew = self.ttl.renew_on_read();
        let mut cur = self.heads.get(&key).map(|h| h.first);
        while let Some(uk) = cur {
            let slot = *self.entries.get(&(key, uk)).expect("a listed entry");
            cur = slot.next;
            if self.ttl.expired(slot.stamp, now) {
                self.unlink((key, uk), slot);
            } else if renew {
                self.entries.get_mut(&(key, uk)).expect("listed").stamp = now;
            }
        }
    }

    /// The current key's `(user key, value)`s, newest first.
    pub fn entries(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = (UK, UV)> + '_ {
        let key = *ctx.key();
        self.prepare_iteration(key);
        let mut cur = self.heads.get(&key).map(|h| h.first);
        std::iter::from_fn(move || {
            let uk = cur?;
            let slot = self.entries.get(&(key, uk)).expect("a listed entry");
            cur = slot.next;
            Some((uk, slot.value))
        })
    }

    /// The current key's user keys.
    pub fn keys(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = UK> + '_ {
        self.entries(ctx).map(|(k, _)| k)
    }

    /// The current key's values.
    pub fn values(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = UV> + '_ {
        self.entries(ctx).map(|(_, v)| v)
    }

    /// The current key's number of (unexpired) entries.
    pub fn len(&mut self, ctx: &KeyContext<K>) -> usize {
        self.prepare_iteration(*ctx.key());
        self.heads.get(ctx.key()).map_or(0, |h| h.len as usize)
    }

    /// True if the current key has no (unexpired) entry.
    pub fn is_empty(&mut self, ctx: &KeyContext<K>) -> bool {
        self.len(ctx) == 0
    }

    /// Removes every entry of the current key.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        let key = *ctx.key();
        let mut cur = self.heads.remove(&key).map(|h| h.first);
        while let Some(uk) = cur {
            cur = self
                .entries
                .remove(&(key, uk))
                .expect("a listed entry")
                .next;
        }
    }
}

impl<K, UK, UV> KeyedMapState<K, UK, UV>
where
    K: Copy + Eq + KeyHash + Wire,
    UK: Copy + Eq + KeyHash + Wire,
    UV: Copy + Wire,
{
    /// A frozen view for a checkpoint (see the module doc for the format).
    pub(crate) fn freeze(&self) -> FrozenTable<(K, UK), MapSlot<UK, UV>> {
        FrozenTable::new(
            self.entries.freeze(),
            |(k, _)| k.key_hash(),
            |buf, (k, uk), slot| {
                append_wire(buf, k);
                append_wire(buf, uk);
                append_wire(buf, &slot.value);
                append_wire(buf, &slot.stamp);
            },
            |slot| slot.stamp,
            self.ttl.snapshot_cutoff(),
        )
    }
}

impl<K, UK, UV> RestoreSink for KeyedMapState<K, UK, UV>
where
    K: Copy + Eq + KeyHash + Wire,
    UK: Copy + Eq + KeyHash + Wire,
    UV: Copy + Wire,
{
    type Entry = (K, UK, UV, u64);

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), DecodeError> {
        <(K, UK, UV, u64)>::read(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, entries: usize) {
        self.entries.reserve(entries);
    }

    fn insert(&mut self, (k, uk, uv, stamp): Self::Entry, _hash: u64) {
        self.put_stamped(k, uk, uv, stamp);
    }

    fn entry_count(&self) -> usize {
        self.entries.len()
    }
}

// ---------------------------------------------------------------- list

/// Flink's keyed `ListState<T>`: a list per key, scoped to the current key
/// of a [`KeyContext`]. With TTL each element expires on its own.
pub struct KeyedListState<K, T>
where
    K: Copy + Eq + KeyHash,
    T: Copy,
{
    elements: ValueState<(K, u32), (T, u64)>,
    lens: ValueState<K, u32>,
    ttl: Ttl,
    /// Set by a restore: the number of elements restored per key, to find
    /// the lists whose expired elements a snapshot left out.
    restored: Option<ValueState<K, u32>>,
}

impl<K, T> KeyedListState<K, T>
where
    K: Copy + Eq + KeyHash,
    T: Copy,
{
    /// An empty list state named `name` (unique within its operator).
    pub fn new(name: &str) -> Self {
        register_state(name);
        Self {
            elements: ValueState::new(name),
            lens: ValueState::new(name),
            ttl: Ttl::default(),
            restored: None,
        }
    }

    /// The same state with time-to-live `config`, on processing time.
    pub fn with_ttl(self, config: StateTtlConfig) -> Self {
        Self {
            ttl: ttl_for(config, None),
            ..self
        }
    }

    /// The same state with time-to-live `config` measured by `clock`.
    pub fn with_ttl_clock(self, config: StateTtlConfig, clock: Rc<dyn TtlClock>) -> Self {
        Self {
            ttl: ttl_for(config, Some(clock)),
            ..self
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        self.elements.name()
    }

    /// Elements of all keys on this subtask (expired ones not cleaned up
    /// yet included).
    pub fn total_len(&self) -> usize {
        self.elements.len()
    }

    /// The current key's elements, in the order they were added (expired
    /// ones are removed first).
    pub fn get(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = T> + '_ {
        let key = *ctx.key();
        if self.ttl.enabled() {
            let now = self.ttl.now();
            self.compact(key, Some(now));
            if self.ttl.renew_on_read() {
                let len = self.lens.get(&key).copied().unwrap_or(0);
                for i in 0..len {
                    self.elements
                        .get_mut(&(key, i))
                        .expect("element of a list")
                        .1 = now;
                }
            }
        }
        let len = self.lens.get(&key).copied().unwrap_or(0);
        let elements = &self.elements;
        (0..len).map(move |i| elements.get(&(key, i)).expect("element of a list").0)
    }

    /// Appends `value` to the current key's list.
    pub fn add(&mut self, ctx: &KeyContext<K>, value: T) {
        let stamp = self.ttl.now();
        let key = *ctx.key();
        let len = self.lens.get_or_insert_with(key, || 0);
        let at = *len;
        *len += 1;
        self.elements.put((key, at), (value, stamp));
    }

    /// Appends every value of `values` to the current key's list.
    pub fn add_all(&mut self, ctx: &KeyContext<K>, values: impl IntoIterator<Item = T>) {
        for v in values {
            self.add(ctx, v);
        }
    }

    /// Replaces the current key's list with `values`.
    pub fn update(&mut self, ctx: &KeyContext<K>, values: impl IntoIterator<Item = T>) {
        self.clear(ctx);
        self.add_all(ctx, values);
    }

    /// Removes the current key's list.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        let key = *ctx.key();
        if let Some(len) = self.lens.remove(&key) {
            for i in 0..len {
                self.elements.remove(&(key, i));
            }
        }
    }

    /// Closes up the gaps in `key`'s list: elements that are missing (left
    /// out by a snapshot) or, with `now`, expired are dropped and the rest
    /// keep their order.
    fn compact(&mut self, key: K, now: Option<u64>) {
        let Some(len) = self.lens.get(&key).copied() else {
            return;
        };
        let mut kept = 0;
        for i in 0..len {
            let Some(&(v, stamp)) = self.elements.get(&(key, i)) else {
                continue;
            };
            if now.is_some_and(|now| self.ttl.expired(stamp, now)) {
                self.elements.remove(&(key, i));
                continue;
            }
            if kept != i {
                self.elements.remove(&(key, i));
                self.elements.put((key, kept), (v, stamp));
            }
            kept += 1;
        }
        if kept == 0 {
            self.lens.remove(&key);
        } else if kept != len {
            self.lens.put(key, kept);
        }
    }
}

impl<K, T> KeyedListState<K, T>
where
    K: Copy + Eq + KeyHash + Wire,
    T: Copy + Wire,
{
    /// A frozen view for a checkpoint (see the module doc for the format).
    pub(crate) fn freeze(&self) -> FrozenTable<(K, u32), (T, u64)> {
        FrozenTable::new(
            self.elements.freeze(),
            |(k, _)| k.key_hash(),
            |buf, (k, i), (v, stamp)| {
                append_wire(buf, k);
                append_wire(buf, i);
                append_wire(buf, v);
                append_wire(buf, stamp);
            },
            |(_, stamp)| *stamp,
            self.ttl.snapshot_cutoff(),
        )
    }
}

impl<K, T> RestoreSink for KeyedListState<K, T>
where
    K: Copy + Eq + KeyHash + Wire,
    T: Copy + Wire,
{
    type Entry = (K, u32, T, u64);

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), DecodeError> {
        <(K, u32, T, u64)>::read(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, entries: usize) {
        self.elements.reserve(entries);
    }

    fn insert(&mut self, (k, i, v, stamp): Self::Entry, _hash: u64) {
        if self.elements.get(&(k, i)).is_none() {
            *self
                .restored
                .get_or_insert_with(|| ValueState::new("restored"))
                .get_or_insert_with(k, || 0) += 1;
        }
        self.elements.put((k, i), (v, stamp));
        let len = self.lens.get_or_insert_with(k, || 0);
        *len = (*len).max(i + 1);
    }

    fn finish(&mut self) {
        // Lists with fewer elements than their highest index had elements
        // left out by the snapshot's TTL cleanup: close them up.
        let Some(restored) = self.restored.take() else {
            return;
        };
        let gappy: Vec<K> = restored
            .iter()
            .filter(|&(k, n)| self.lens.get(k) != Some(n))
            .map(|(k, _)| *k)
            .collect();
        for k in gappy {
            self.compact(k, None);
        }
    }

    fn entry_count(&self) -> usize {
        self.elements.len()
    }
}

// ---------------------------------------------------- reducing, aggregating

/// Flink's `AggregateFunction`: folds inputs into an accumulator and reads
/// a result from it.
pub trait AggregateFunction: 'static {
    /// Values added.
    type In;
    /// The accumulator stored per key (fixed size).
    type Acc: Copy;
    /// Results read.
    type Out;

    /// A new, empty accumulator.
    fn create_accumulator(&self) -> Self::Acc;
    /// `acc` with `value` added.
    fn add(&self, value: Self::In, acc: Self::Acc) -> Self::Acc;
    /// The result of `acc`.
    fn get_result(&self, acc: &Self::Acc) -> Self::Out;
    /// Two accumulators merged into one.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// One accumulator per key with its last access: what reducing and
/// aggregating state store.
struct AccTable<K, A>
where
    K: Copy + Eq + KeyHash,
    A: Copy,
{
    table: ValueState<K, (A, u64)>,
    ttl: Ttl,
}

impl<K, A> AccTable<K, A>
where
    K: Copy + Eq + KeyHash,
    A: Copy,
{
    fn new(name: &str) -> Self {
        register_state(name);
        Self {
            table: ValueState::new(name),
            ttl: Ttl::default(),
        }
    }

    /// The key's unexpired accumulator (an expired one is removed).
    fn get(&mut self, ctx: &KeyContext<K>) -> Option<A> {
        let &(acc, stamp) = self.table.get_hashed(ctx.key(), ctx.hash())?;
        if self.ttl.enabled() {
            let now = self.ttl.now();
            if self.ttl.expired(stamp, now) {
                self.table.remove_hashed(ctx.key(), ctx.hash());
                return None;
            }
            if self.ttl.renew_on_read() {
                self.table
                    .get_mut_hashed(ctx.key(), ctx.hash())
                    .expect("just read")
                    .1 = now;
            }
        }
        Some(acc)
    }

    /// Sets the key's accumulator to `f(current unexpired one)`.
    fn update(&mut self, ctx: &KeyContext<K>, f: impl FnOnce(Option<A>) -> A) {
        let now = self.ttl.now();
        let current = self
            .table
            .get_hashed(ctx.key(), ctx.hash())
            .filter(|(_, stamp)| !self.ttl.expired(*stamp, now))
            .map(|&(acc, _)| acc);
        self.table
            .put_hashed(*ctx.key(), ctx.hash(), (f(current), now));
    }

    fn clear(&mut self, ctx: &KeyContext<K>) {
        self.table.remove_hashed(ctx.key(), ctx.hash());
    }
}

impl<K, A> AccTable<K, A>
where
    K: Copy + Eq + KeyHash + Wire,
    A: Copy + Wire,
{
    fn freeze(&self) -> FrozenTable<K, (A, u64)> {
        FrozenTable::new(
            self.table.freeze(),
            |k| k.key_hash(),
            |buf, k, (acc, stamp)| {
                append_wire(buf, k);
                append_wire(buf, acc);
                append_wire(buf, stamp);
            },
            |(_, stamp)| *stamp,
            self.ttl.snapshot_cutoff(),
        )
    }
}

/// Flink's keyed `ReducingState<V>`: per key, the values added so far
/// combined by a reduce function `f(accumulated, new)`.
pub struct KeyedReducingState<K, V, F>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
    F: Fn(V, V) -> V,
{
    acc: AccTable<K, V>,
    reduce: F,
}

impl<K, V, F> KeyedReducingState<K, V, F>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
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
        self.acc
            .update(ctx, |cur| cur.map_or(value, |acc| reduce(acc, value)));
    }

    /// Removes the current key's value.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.acc.clear(ctx);
    }
}

/// Flink's keyed `AggregatingState<IN, OUT>`: per key, an accumulator of
/// the values added so far, read through an [`AggregateFunction`].
pub struct KeyedAggregatingState<K, A>
where
    K: Copy + Eq + KeyHash,
    A: AggregateFunction,
{
    acc: AccTable<K, A::Acc>,
    agg: A,
}

impl<K, A> KeyedAggregatingState<K, A>
where
    K: Copy + Eq + KeyHash,
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
        self.acc
            .update(ctx, |cur| cur.map_or(acc, |mine| agg.merge(mine, acc)));
    }

    /// Removes the current key's accumulator.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.acc.clear(ctx);
    }
}

/// Flink's keyed `ValueState<V>` with a time-to-live: one value per key
/// that expires (see [`crate::ttl`]). A separate type from
/// [`crate::KeyedValueState`], whose entries carry no timestamp, so that
/// state without TTL costs nothing for it.
pub struct KeyedTtlValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    acc: AccTable<K, V>,
}

impl<K, V> KeyedTtlValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
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
}

impl<K, V> KeyedTtlValueState<K, V>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
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

impl<K, V, F> KeyedReducingState<K, V, F>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
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
    K: Copy + Eq + KeyHash + Wire,
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

#[cfg(test)]
mod tests;
