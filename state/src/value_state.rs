//! Flink's keyed `ValueState`, for all keys of one operator subtask on one
//! worker, stored inline in a [`SlotArena`].
//!
//! Each arena slot holds `(hash, key, value)` — for a `u64` key and a
//! `(u64, u64)` value that is 32 bytes, two entries per cache line — so a
//! lookup usually costs one cache line, and [`ValueState::prefetch_hashed`]
//! can start loading it before the record is processed. The table is open
//! addressing with linear probing, power-of-two capacity and at most 13/16
//! of the slots used; it grows by doubling into a new arena.
//!
//! The bucket is taken from the HIGH bits of the hash (`hash >> (64 -
//! log2(capacity))`): the low bits choose the key group (`hash %
//! max_parallelism`), so all keys of one worker share patterns there and
//! would cluster if the bucket came from them.
//!
//! Deletion uses backward-shift deletion, not tombstones: after a removal the
//! following entries of the cluster that may legally move are shifted back
//! into the hole, so lookups never walk over dead slots and the load never
//! creeps up under churn.

use std::fmt;

use crate::arena::SlotArena;
use crate::key_group::KeyHash;

/// Smallest capacity: a few cache lines, so `new` is cheap.
const MIN_CAPACITY: usize = 16;

/// One slot: `tag == 0` means empty; otherwise `tag = hash | 1` (the low
/// bit forced so no real entry looks empty).
#[derive(Clone, Copy, Debug)]
struct Slot<K, V> {
    tag: u64,
    key: K,
    value: V,
}

const EMPTY: u64 = 0;

#[inline(always)]
fn tag_of(hash: u64) -> u64 {
    hash | 1
}

/// Most entries a table of `capacity` slots may hold (13/16): with linear
/// probing a hit then costs ~3 slots on average, within one or two cache
/// lines of 32-byte slots, and the table stays small enough for L2.
#[inline]
fn max_len_for(capacity: usize) -> usize {
    capacity / 2 + capacity / 4 + capacity / 16
}

/// Result of a probe sequence.
enum Probe {
    /// The key is at this position.
    Found(usize),
    /// The key is absent; this empty position is where it would go.
    Vacant(usize),
}

/// Keyed value state: one `V` per key `K` for all keys of an operator
/// subtask on one worker.
pub struct ValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    name: String,
    slots: SlotArena<Slot<K, V>>,
    len: usize,
    /// `capacity - 1`.
    mask: usize,
    /// `64 - log2(capacity)`: `hash >> shift` is the bucket.
    shift: u32,
    /// Grow before an insert would exceed this many entries.
    max_len: usize,
    /// Filler for empty slots (keys and values of empty slots are never
    /// read; they only need to be some valid value).
    filler: Option<Slot<K, V>>,
}

impl<K, V> ValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    /// An empty state called `name` (the name a snapshot files it under).
    pub fn new(name: &str) -> Self {
        Self::with_capacity(name, 0)
    }

    /// An empty state that holds `n` keys without growing.
    pub fn with_capacity(name: &str, n: usize) -> Self {
        let mut capacity = MIN_CAPACITY;
        while max_len_for(capacity) < n {
            capacity = capacity
                .checked_mul(2)
                .unwrap_or_else(|| panic!("ValueState capacity {n} too large"));
        }
        Self {
            name: name.to_owned(),
            // No filler yet: the arena is created on the first insert, when
            // a key and value exist to fill empty slots with.
            slots: SlotArena::empty(),
            len: 0,
            mask: capacity - 1,
            shift: 64 - capacity.trailing_zeros(),
            max_len: max_len_for(capacity),
            filler: None,
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of keys with a value.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no key has a value.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slots (a power of two); up to 13/16 of them are used.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Bytes of slot memory (for metrics and snapshot sizing).
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot<K, V>>()
    }

    /// Starts loading the slot where the key of `hash` would be, so that a
    /// lookup a few records later finds it in cache.
    #[inline(always)]
    pub fn prefetch_hashed(&self, hash: u64) {
        if !self.slots.is_empty() {
            self.slots.prefetch((hash >> self.shift) as usize);
        }
    }

    /// Finds `key` (whose hash is `hash`): one probe sequence.
    #[inline(always)]
    fn probe(&self, key: &K, hash: u64) -> Probe {
        if self.slots.is_empty() {
            return Probe::Vacant(0);
        }
        let tag = tag_of(hash);
        let mut pos = (hash >> self.shift) as usize;
        loop {
            let slot = self.slots.get(pos);
            if slot.tag == EMPTY {
                return Probe::Vacant(pos);
            }
            if slot.tag == tag && slot.key == *key {
                return Probe::Found(pos);
            }
            // Terminates: the load is capped below 1, so an empty slot exists.
            pos = (pos + 1) & self.mask;
        }
    }

    /// First empty position on the probe path of `hash`.
    #[inline]
    fn vacant_pos(&self, hash: u64) -> usize {
        let mut pos = (hash >> self.shift) as usize;
        while self.slots.get(pos).tag != EMPTY {
            pos = (pos + 1) & self.mask;
        }
        pos
    }

    /// Moves every entry into an arena of `capacity` slots.
    #[cold]
    fn rebuild(&mut self, capacity: usize, filler: Slot<K, V>) {
        let empty = Slot {
            tag: EMPTY,
            ..filler
        };
        let old = std::mem::replace(&mut self.slots, SlotArena::new(capacity, empty));
        self.mask = capacity - 1;
        self.shift = 64 - capacity.trailing_zeros();
        self.max_len = max_len_for(capacity);
        for slot in old.iter().filter(|s| s.tag != EMPTY) {
            let pos = self.vacant_pos(slot.tag);
            *self.slots.get_mut(pos) = *slot;
        }
    }

    /// Stores `(key, value)` at the vacant position `pos`, creating or
    /// growing the arena first if needed. Returns the position.
    ///
    /// Kept out of line: inserts are the rare case of a running keyed
    /// aggregation, and inlining them stopped the lookup from being inlined
    /// into the caller's loop.
    #[inline(never)]
    fn insert_at(&mut self, mut pos: usize, key: K, hash: u64, value: V) -> usize {
        let slot = Slot {
            tag: tag_of(hash),
            key,
            value,
        };
        if self.slots.is_empty() {
            self.filler = Some(slot);
            self.rebuild(self.capacity(), slot);
            pos = self.vacant_pos(hash);
        } else if self.len >= self.max_len {
            let capacity = self
                .capacity()
                .checked_mul(2)
                .unwrap_or_else(|| panic!("ValueState '{}' is full", self.name));
            self.rebuild(capacity, slot);
            pos = self.vacant_pos(hash);
        }
        *self.slots.get_mut(pos) = slot;
        self.len += 1;
        pos
    }

    /// Debug check that a caller-supplied hash is the key's [`KeyHash`].
    #[inline(always)]
    fn check_hash(key: &K, hash: u64) {
        debug_assert_eq!(
            hash,
            key.key_hash(),
            "hash passed to a ValueState *_hashed method must be key.key_hash()"
        );
    }

    /// The value of `key`, given `hash == key.key_hash()`.
    #[inline]
    pub fn get_hashed(&self, key: &K, hash: u64) -> Option<&V> {
        Self::check_hash(key, hash);
        match self.probe(key, hash) {
            Probe::Found(pos) => Some(&self.slots.get(pos).value),
            Probe::Vacant(_) => None,
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.get_hashed(key, key.key_hash())
    }

    /// The value of `key`, mutably, given `hash == key.key_hash()`.
    #[inline]
    pub fn get_mut_hashed(&mut self, key: &K, hash: u64) -> Option<&mut V> {
        Self::check_hash(key, hash);
        match self.probe(key, hash) {
            Probe::Found(pos) => Some(&mut self.slots.get_mut(pos).value),
            Probe::Vacant(_) => None,
        }
    }

    /// The value of `key`, mutably.
    #[inline]
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.get_mut_hashed(key, key.key_hash())
    }

    /// The value of `key`, inserting `f()` first if there is none, given
    /// `hash == key.key_hash()`. One probe sequence (plus a re-probe on the
    /// rare insert that grows the table). If `f` panics the state is
    /// unchanged.
    #[inline(always)]
    pub fn get_or_insert_with_hashed(
        &mut self,
        key: K,
        hash: u64,
        f: impl FnOnce() -> V,
    ) -> &mut V {
        Self::check_hash(&key, hash);
        let pos = match self.probe(&key, hash) {
            Probe::Found(pos) => pos,
            Probe::Vacant(pos) => {
                let value = f();
                self.insert_at(pos, key, hash, value)
            }
        };
        &mut self.slots.get_mut(pos).value
    }

    /// The value of `key`, inserting `f()` first if there is none.
    #[inline]
    pub fn get_or_insert_with(&mut self, key: K, f: impl FnOnce() -> V) -> &mut V {
        let hash = key.key_hash();
        self.get_or_insert_with_hashed(key, hash, f)
    }

    /// Sets the value of `key` (insert or overwrite), given
    /// `hash == key.key_hash()`.
    #[inline]
    pub fn put_hashed(&mut self, key: K, hash: u64, value: V) {
        Self::check_hash(&key, hash);
        match self.probe(&key, hash) {
            Probe::Found(pos) => self.slots.get_mut(pos).value = value,
            Probe::Vacant(pos) => {
                self.insert_at(pos, key, hash, value);
            }
        }
    }

    /// Sets the value of `key` (insert or overwrite).
    #[inline]
    pub fn put(&mut self, key: K, value: V) {
        self.put_hashed(key, key.key_hash(), value)
    }

    /// Removes `key` and returns its value, given `hash == key.key_hash()`.
    #[inline]
    pub fn remove_hashed(&mut self, key: &K, hash: u64) -> Option<V> {
        Self::check_hash(key, hash);
        match self.probe(key, hash) {
            Probe::Vacant(_) => None,
            Probe::Found(pos) => {
                let value = self.slots.get(pos).value;
                self.backward_shift(pos);
                self.len -= 1;
                Some(value)
            }
        }
    }

    /// Removes `key` and returns its value.
    #[inline]
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.remove_hashed(key, key.key_hash())
    }

    /// Empties position `hole`, shifting later entries of its cluster back
    /// so that every entry stays reachable from its bucket without crossing
    /// an empty slot (the linear-probing invariant).
    fn backward_shift(&mut self, mut hole: usize) {
        let mut pos = hole;
        loop {
            pos = (pos + 1) & self.mask;
            let slot = *self.slots.get(pos);
            if slot.tag == EMPTY {
                break;
            }
            let bucket = (slot.tag >> self.shift) as usize;
            // The entry may move into the hole iff the hole lies on its probe
            // path: its distance from its bucket reaches back to the hole.
            // Distances are taken modulo the capacity (the table wraps).
            let distance = pos.wrapping_sub(bucket) & self.mask;
            let to_hole = pos.wrapping_sub(hole) & self.mask;
            if distance >= to_hole {
                *self.slots.get_mut(hole) = slot;
                hole = pos;
            }
        }
        self.slots.get_mut(hole).tag = EMPTY;
    }

    /// Every `(key, value)`, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.tag != EMPTY)
            .map(|s| (&s.key, &s.value))
    }

    /// Removes every key; the table keeps its capacity.
    pub fn clear(&mut self) {
        if let Some(filler) = self.filler {
            self.slots.fill(Slot {
                tag: EMPTY,
                ..filler
            });
        }
        self.len = 0;
    }
}

impl<K, V> fmt::Debug for ValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueState")
            .field("name", &self.name)
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

#[cfg(test)]
mod tests;
