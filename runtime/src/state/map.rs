//! Flink's keyed `MapState`: one table keyed by `(key, user key)` whose
//! values also link each key's entries (a doubly linked list through the
//! table), plus a table of each key's first user key and entry count.

use std::rc::Rc;

use weir_net::{DecodeError, Wire};
use weir_state::{KeyHash, ValueState};

use crate::checkpoint::keyed_restore::RestoreSink;
use crate::core::wire::append_wire;
use crate::state::codec::FrozenTable;
use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};
use crate::state::ttl::{ttl_for, StateTtlConfig, Ttl, TtlClock};

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
        register_state(StateKind::Keyed, name);
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
