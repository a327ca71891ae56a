//! Flink's keyed `MapState`: one table keyed by `(key, user key)` whose
//! values also link each key's entries (a doubly linked list through the
//! table), plus a table of each key's first user key and entry count.

use std::rc::Rc;

use weir_net::{DecodeError, Wire};
use weir_state::{StateKey, StateValue, SweepStep, ValueState};

use crate::checkpoint::keyed_restore::RestoreSink;
use crate::core::wire::append_wire;
use crate::state::codec::FrozenTable;
use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};
use crate::state::ttl::{ttl_for, StateTtlConfig, Ttl, TtlClock};
use crate::state::ttl_cleanup::{run_pass, CleanupPass, TtlTables};

// ---------------------------------------------------------------- map

/// A map entry: the value, its last access, and the neighbouring user keys
/// of the same key.
#[derive(Clone, Debug, Default)]
pub(crate) struct MapSlot<UK, UV> {
    value: UV,
    stamp: u64,
    prev: Option<UK>,
    next: Option<UK>,
}

/// A key's map: its first user key and its number of entries.
#[derive(Clone, Debug, Default)]
struct MapHead<UK> {
    first: UK,
    len: u32,
}

/// Flink's keyed `MapState<UK, UV>`: a map per key, scoped to the current
/// key of a [`KeyContext`].
pub struct KeyedMapState<K, UK, UV>
where
    K: StateKey,
    UK: StateKey,
    UV: StateValue,
{
    entries: ValueState<(K, UK), MapSlot<UK, UV>>,
    heads: ValueState<K, MapHead<UK>>,
    ttl: Ttl,
    /// Expired entries a cleanup step found (kept to reuse its memory).
    dead: Vec<(K, UK)>,
}

impl<K, UK, UV> KeyedMapState<K, UK, UV>
where
    K: StateKey,
    UK: StateKey,
    UV: StateValue,
{
    /// An empty map state named `name` (unique within its operator).
    pub fn new(name: &str) -> Self {
        register_state(StateKind::Keyed, name);
        Self {
            entries: ValueState::new(name),
            heads: ValueState::new(name),
            ttl: Ttl::default(),
            dead: Vec::new(),
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
        let key = (ctx.key().clone(), user_key.clone());
        if !self.ttl.enabled() {
            return self.entries.get(&key).map(|slot| slot.value.clone());
        }
        let now = self.ttl.now();
        let found = self.get_ttl(&key, now);
        self.cleanup_on_access(now);
        found
    }

    /// [`get`](Self::get) of entry `key` with TTL, at `now`.
    fn get_ttl(&mut self, key: &(K, UK), now: u64) -> Option<UV> {
        let stamp = self.entries.get(key)?.stamp;
        if self.ttl.expired(stamp, now) {
            self.unlink(key);
            return None;
        }
        if self.ttl.renew_on_read() {
            self.entries.get_mut(key).expect("just read").stamp = now;
        }
        self.entries.get(key).map(|slot| slot.value.clone())
    }

    /// Bytes of the state's tables (expired entries not cleaned up yet
    /// included).
    pub fn memory_bytes(&self) -> usize {
        self.entries.memory_bytes() + self.heads.memory_bytes()
    }

    /// Runs a TTL cleanup pass (see [`crate::state::ttl_cleanup`]).
    pub(crate) fn run_cleanup(&mut self, pass: &mut CleanupPass) {
        run_pass(self, pass);
    }

    /// The incremental cleanup of an access at `now`, with TTL.
    #[inline]
    fn accessed(&mut self, now: u64) {
        if self.ttl.enabled() {
            self.cleanup_on_access(now);
        }
    }

    /// True if the current key has a value for `user_key` (a read).
    pub fn contains(&mut self, ctx: &KeyContext<K>, user_key: &UK) -> bool {
        self.get(ctx, user_key).is_some()
    }

    /// Sets the current key's value for `user_key`.
    pub fn put(&mut self, ctx: &KeyContext<K>, user_key: UK, value: UV) {
        let stamp = self.ttl.now();
        self.put_stamped(ctx.key().clone(), user_key, value, stamp);
        self.accessed(stamp);
    }

    /// Sets `(key, user_key)` to `value` last accessed at `stamp`.
    fn put_stamped(&mut self, key: K, user_key: UK, value: UV, stamp: u64) {
        let entry = (key, user_key);
        if let Some(slot) = self.entries.get_mut(&entry) {
            slot.value = value;
            slot.stamp = stamp;
            return;
        }
        let (key, user_key) = entry;
        // New entries go to the front of the key's list.
        let head = self.heads.get(&key).cloned();
        if let Some(h) = &head {
            self.entries
                .get_mut(&(key.clone(), h.first.clone()))
                .expect("a map head names a stored entry")
                .prev = Some(user_key.clone());
        }
        let len = head.as_ref().map_or(0, |h| h.len) + 1;
        self.entries.put(
            (key.clone(), user_key.clone()),
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
                len,
            },
        );
    }

    /// Replaces the current key's value for `user_key` by `f` of it (`None`
    /// if absent or expired) and returns the new value and whether the
    /// entry is new: one lookup when the entry exists (a read and a write,
    /// as for TTL). Clones the new value: see
    /// [`upsert_then`](Self::upsert_then) to read only part of it.
    #[inline]
    pub fn upsert(
        &mut self,
        ctx: &KeyContext<K>,
        user_key: UK,
        f: impl FnOnce(Option<UV>) -> UV,
    ) -> (UV, bool) {
        self.upsert_then(ctx, user_key, f, UV::clone)
    }

    /// [`upsert`](Self::upsert) returning `read` of the new value instead of
    /// a clone of it: the hot path of window aggregation, whose value (an
    /// accumulator, possibly with a DISTINCT aggregate's set of values)
    /// would otherwise be copied for every record only to read its id.
    #[inline]
    pub fn upsert_then<R>(
        &mut self,
        ctx: &KeyContext<K>,
        user_key: UK,
        f: impl FnOnce(Option<UV>) -> UV,
        read: impl FnOnce(&UV) -> R,
    ) -> (R, bool) {
        let key = (ctx.key().clone(), user_key);
        let now = self.ttl.now();
        if let Some(slot) = self.entries.get_mut(&key) {
            if !self.ttl.expired(slot.stamp, now) {
                slot.value = f(Some(std::mem::take(&mut slot.value)));
                slot.stamp = now;
                let read = read(&slot.value);
                self.accessed(now);
                return (read, false);
            }
            self.unlink(&key);
        }
        let value = f(None);
        let read = read(&value);
        let (key, user_key) = key;
        self.put_stamped(key, user_key, value, now);
        self.accessed(now);
        (read, true)
    }

    /// Removes the current key's value for `user_key`; returns it unless
    /// it had expired.
    pub fn remove(&mut self, ctx: &KeyContext<K>, user_key: &UK) -> Option<UV> {
        let key = (ctx.key().clone(), user_key.clone());
        let now = self.ttl.now();
        let slot = self.unlink(&key);
        self.accessed(now);
        let slot = slot?;
        (!self.ttl.expired(slot.stamp, now)).then_some(slot.value)
    }

    /// Removes the entry `key` and its links; returns it, if it was stored.
    fn unlink(&mut self, key: &(K, UK)) -> Option<MapSlot<UK, UV>> {
        let slot = self.entries.remove(key)?;
        let k = &key.0;
        if let Some(p) = &slot.prev {
            self.entries
                .get_mut(&(k.clone(), p.clone()))
                .expect("a map entry's predecessor is stored")
                .next = slot.next.clone();
        }
        if let Some(n) = &slot.next {
            self.entries
                .get_mut(&(k.clone(), n.clone()))
                .expect("a map entry's successor is stored")
                .prev = slot.prev.clone();
        }
        let head = self
            .heads
            .get_mut(k)
            .expect("a stored entry's key has a head");
        head.len -= 1;
        if head.len == 0 {
            self.heads.remove(k);
        } else if slot.prev.is_none() {
            head.first = slot
                .next
                .clone()
                .expect("a head of more entries has a successor");
        }
        Some(slot)
    }

    /// Removes the current key's expired entries and, when reads renew
    /// them, renews the others: what every iteration does first.
    fn prepare_iteration(&mut self, key: &K) {
        if !self.ttl.enabled() {
            return;
        }
        let now = self.ttl.now();
        let renew = self.ttl.renew_on_read();
        let mut cur = self.heads.get(key).map(|h| h.first.clone());
        while let Some(uk) = cur {
            let entry = (key.clone(), uk);
            let slot = self.entries.get_mut(&entry).expect("a listed entry");
            cur = slot.next.clone();
            if self.ttl.expired(slot.stamp, now) {
                self.unlink(&entry);
            } else if renew {
                slot.stamp = now;
            }
        }
        self.cleanup_on_access(now);
    }

    /// The current key's `(user key, value)`s, newest first.
    pub fn entries(&mut self, ctx: &KeyContext<K>) -> impl Iterator<Item = (UK, UV)> + '_ {
        let key = ctx.key().clone();
        self.prepare_iteration(&key);
        let mut cur = self.heads.get(&key).map(|h| h.first.clone());
        std::iter::from_fn(move || {
            let uk = cur.take()?;
            let slot = self
                .entries
                .get(&(key.clone(), uk.clone()))
                .expect("a listed entry");
            cur = slot.next.clone();
            Some((uk, slot.value.clone()))
        })
    }

    /// Hands the current key's `(user key, value)`s to `f` by reference,
    /// newest first: [`entries`](Self::entries) without a clone of each
    /// value (a window's accumulator, a session's contents).
    pub fn for_each_entry(&mut self, ctx: &KeyContext<K>, mut f: impl FnMut(&UK, &UV)) {
        let key = ctx.key().clone();
        self.prepare_iteration(&key);
        let mut cur = self.heads.get(&key).map(|h| h.first.clone());
        while let Some(uk) = cur {
            let slot = self
                .entries
                .get(&(key.clone(), uk.clone()))
                .expect("a listed entry");
            f(&uk, &slot.value);
            cur = slot.next.clone();
        }
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
        self.prepare_iteration(ctx.key());
        self.heads.get(ctx.key()).map_or(0, |h| h.len as usize)
    }

    /// True if the current key has no (unexpired) entry.
    pub fn is_empty(&mut self, ctx: &KeyContext<K>) -> bool {
        self.len(ctx) == 0
    }

    /// Removes every entry of the current key.
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        let key = ctx.key();
        let mut cur = self.heads.remove(key).map(|h| h.first);
        while let Some(uk) = cur {
            cur = self
                .entries
                .remove(&(key.clone(), uk))
                .expect("a listed entry")
                .next;
        }
        if self.ttl.enabled() {
            self.cleanup_on_access(self.ttl.now());
        }
    }
}

impl<K, UK, UV> TtlTables for KeyedMapState<K, UK, UV>
where
    K: StateKey,
    UK: StateKey,
    UV: StateValue,
{
    fn ttl(&self) -> &Ttl {
        &self.ttl
    }

    fn stored_entries(&self) -> usize {
        self.entries.len()
    }

    fn slots(&self) -> usize {
        self.entries.capacity()
    }

    fn purge(&mut self, budget: usize, now: u64) -> SweepStep {
        // Collected first, then unlinked: a removal also rewrites the
        // entry's neighbours and its key's head.
        let mut dead = std::mem::take(&mut self.dead);
        let ttl = &self.ttl;
        let step =
            self.entries
                .sweep_step(budget, |_, slot| ttl.expired(slot.stamp, now), &mut dead);
        for entry in dead.drain(..) {
            self.unlink(&entry);
        }
        self.dead = dead;
        self.entries.shrink_if_sparse();
        self.heads.shrink_if_sparse();
        step
    }
}

impl<K, UK, UV> KeyedMapState<K, UK, UV>
where
    K: StateKey + Wire,
    UK: StateKey + Wire,
    UV: StateValue + Wire,
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
            self.ttl.snapshot_cutoff(self.entries.len()),
        )
    }
}

impl<K, UK, UV> RestoreSink for KeyedMapState<K, UK, UV>
where
    K: StateKey + Wire,
    UK: StateKey + Wire,
    UV: StateValue + Wire,
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
