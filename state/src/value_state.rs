//! Flink's keyed `ValueState`, for all keys of one operator subtask on one
//! worker, stored inline in a [`SlotArena`].
//!
//! Entries `(key, value)` live inline in the arena's slots; beside them a
//! one-byte tag per slot (0 = empty, else 7 bits of the hash with the top bit
//! set) is all a probe reads until a tag matches. The tag array is small
//! (64 KiB for 64 Ki slots) and stays in cache, so a lookup usually costs one
//! cache miss, on the entry itself. The table is open
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

/// One entry.
#[derive(Clone, Copy, Debug)]
struct Slot<K, V> {
    key: K,
    value: V,
}

/// Tag of an empty slot.
const EMPTY: u8 = 0;

/// Tags a probe examines at once (one `u64`).
const GROUP: usize = 8;
const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Bytes of `group` equal to `tag`, as their high bits (exact: no false
/// positives, no carries between bytes).
#[inline(always)]
fn match_tag(group: u64, tag: u8) -> u64 {
    let x = group ^ (LOW_BITS * u64::from(tag));
    !(((x & !HIGH_BITS).wrapping_add(!HIGH_BITS)) | x) & HIGH_BITS
}

/// Empty bytes of `group` (used tags have their high bit set).
#[inline(always)]
fn match_empty(group: u64) -> u64 {
    !group & HIGH_BITS
}

/// Byte index of the lowest set high bit.
#[inline(always)]
fn first_byte(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// Tag of a used slot: bits 32..39 of the hash (neither the bucket's high
/// bits nor the key group's low bits) with the top bit set.
#[inline(always)]
fn tag_of(hash: u64) -> u8 {
    ((hash >> 32) as u8) | 0x80
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
    tags: Box<[u8]>,
    len: usize,
    /// `capacity - 1`.
    mask: usize,
    /// `64 - log2(capacity)`: `hash >> shift` is the bucket.
    shift: u32,
    /// Grow before an insert would exceed this many entries.
    max_len: usize,
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
            tags: Box::new([]),
            len: 0,
            mask: capacity - 1,
            shift: 64 - capacity.trailing_zeros(),
            max_len: max_len_for(capacity),
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
        self.slots.len() * (std::mem::size_of::<Slot<K, V>>() + 1)
    }

    /// Finds `key` (whose hash is `hash`): one probe sequence.
    #[inline(always)]
    fn probe(&self, key: &K, hash: u64) -> Probe {
        if self.slots.is_empty() {
            return Probe::Vacant(0);
        }
        let tag = tag_of(hash);
        let mut pos = (hash >> self.shift) as usize;
        // Most keys sit in their home slot: check it before the group scan.
        if self.tags[pos] == tag && self.slots.get(pos).key == *key {
            return Probe::Found(pos);
        }
        loop {
            // Tags pos..pos+8, read as one word: mostly one candidate, so
            // the branches below are predictable (SwissTable's idea, with
            // linear probing's invariant kept slot by slot).
            let group = self.group_at(pos);
            let mut matches = match_tag(group, tag);
            while matches != 0 {
                let at = (pos + first_byte(matches)) & self.mask;
                if self.slots.get(at).key == *key {
                    return Probe::Found(at);
                }
                matches &= matches - 1;
            }
            // A key is never stored past an empty slot of its probe path, so
            // the first empty slot ends the search.
            let empty = match_empty(group);
            if empty != 0 {
                return Probe::Vacant((pos + first_byte(empty)) & self.mask);
            }
            // Terminates: the load is capped below 1, so an empty slot exists.
            pos = (pos + GROUP) & self.mask;
        }
    }

    /// The 8 tags at `pos..pos + 8` (the tag array repeats its first
    /// `GROUP` tags at its end, so a group never wraps).
    #[inline(always)]
    fn group_at(&self, pos: usize) -> u64 {
        let bytes: [u8; GROUP] = self.tags[pos..pos + GROUP]
            .try_into()
            .expect("tag array has GROUP trailing bytes");
        u64::from_le_bytes(bytes)
    }

    /// Sets the tag of `pos`, and its mirror past the end if it has one.
    #[inline(always)]
    fn set_tag(&mut self, pos: usize, tag: u8) {
        self.tags[pos] = tag;
        if pos < GROUP {
            self.tags[self.mask + 1 + pos] = tag;
        }
    }

    /// First empty position on the probe path of `hash`.
    #[inline]
    fn vacant_pos(&self, hash: u64) -> usize {
        let mut pos = (hash >> self.shift) as usize;
        loop {
            let empty = match_empty(self.group_at(pos));
            if empty != 0 {
                return (pos + first_byte(empty)) & self.mask;
            }
            pos = (pos + GROUP) & self.mask;
        }
    }

    /// Moves every entry into an arena of `capacity` slots.
    #[cold]
    fn rebuild(&mut self, capacity: usize, filler: Slot<K, V>) {
        let old_slots = std::mem::replace(&mut self.slots, SlotArena::new(capacity, filler));
        let old_tags = std::mem::replace(
            &mut self.tags,
            vec![EMPTY; capacity + GROUP].into_boxed_slice(),
        );
        self.mask = capacity - 1;
        self.shift = 64 - capacity.trailing_zeros();
        self.max_len = max_len_for(capacity);
        // Zip stops at the slots, skipping the mirrored tags.
        for (slot, _) in old_slots
            .iter()
            .zip(old_tags.iter())
            .filter(|(_, &t)| t != EMPTY)
        {
            let hash = slot.key.key_hash();
            let pos = self.vacant_pos(hash);
            *self.slots.get_mut(pos) = *slot;
            self.set_tag(pos, tag_of(hash));
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
        let slot = Slot { key, value };
        if self.slots.is_empty() {
            // The first entry fills the arena's empty slots: their content is
            // never read (the tags say they are empty), it only has to exist.
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
        self.set_tag(pos, tag_of(hash));
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
            let tag = self.tags[pos];
            if tag == EMPTY {
                break;
            }
            let slot = *self.slots.get(pos);
            let bucket = (slot.key.key_hash() >> self.shift) as usize;
            // The entry may move into the hole iff the hole lies on its probe
            // path: its distance from its bucket reaches back to the hole.
            // Distances are taken modulo the capacity (the table wraps).
            let distance = pos.wrapping_sub(bucket) & self.mask;
            let to_hole = pos.wrapping_sub(hole) & self.mask;
            if distance >= to_hole {
                *self.slots.get_mut(hole) = slot;
                self.set_tag(hole, tag);
                hole = pos;
            }
        }
        self.set_tag(hole, EMPTY);
    }

    /// Every `(key, value)`, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.slots
            .iter()
            .zip(self.tags.iter())
            .filter(|(_, &t)| t != EMPTY)
            .map(|(s, _)| (&s.key, &s.value))
    }

    /// Removes every key; the table keeps its capacity.
    pub fn clear(&mut self) {
        self.tags.fill(EMPTY);
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
