//! Flink's keyed `ValueState`, for all keys of one operator subtask on one
//! worker, backed by the chunked [`Arena`].
//!
//! Entries `(K, V)` live in the arena and never move. An open-addressing
//! index (linear probing, power-of-two capacity, max load 5/8) maps keys to
//! arena slots; growing doubles and rehashes only the index, from the hash
//! bits it stores, without touching the arena.
//!
//! Index slot layout (`u64`, 0 = empty): the high 32 bits are the high 32
//! bits of the key's [`KeyHash`], the low 32 bits are `arena slot + 1`. The
//! stored hash bits let most mismatches be rejected without reading the
//! arena, and they contain the bucket (see below), so growth and deletion
//! work on the index alone.
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

use crate::arena::Arena;
use crate::key_group::KeyHash;

/// Empty index slot.
const EMPTY: u64 = 0;
/// The hash bits stored in an index slot.
const HASH_BITS: u64 = 0xFFFF_FFFF_0000_0000;
/// Smallest index capacity: a few cache lines, so `new` is cheap but the
/// first inserts do not rehash repeatedly.
const MIN_CAPACITY: usize = 16;
/// Largest index capacity: the bucket must fit in the 32 stored hash bits.
const MAX_CAPACITY: usize = 1 << 32;

/// Packs an index slot.
#[inline]
fn pack(hash: u64, slot: u32) -> u64 {
    (hash & HASH_BITS) | (u64::from(slot) + 1)
}

/// Arena slot of a non-empty index slot.
#[inline]
fn slot_of(entry: u64) -> u32 {
    (entry as u32) - 1
}

/// Most entries an index of `capacity` slots may hold (load 5/8): with
/// linear probing that keeps expected probes for a miss around 4 slots,
/// i.e. within one or two cache lines of 8-byte index slots.
#[inline]
fn max_len_for(capacity: usize) -> usize {
    capacity / 2 + capacity / 8
}

/// Result of a probe sequence.
enum Probe {
    /// The key is present: its index position and arena slot.
    Found { pos: usize, slot: u32 },
    /// The key is absent; `pos` is the empty index slot where it would go.
    Vacant { pos: usize },
}

/// Keyed value state: one `V` per key `K` for all keys of an operator
/// subtask on one worker.
pub struct ValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    name: String,
    entries: Arena<(K, V)>,
    index: Box<[u64]>,
    /// `index.len() - 1`.
    mask: usize,
    /// `64 - log2(index.len())`: `hash >> shift` is the bucket.
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

    /// An empty state whose index holds `n` keys without growing.
    pub fn with_capacity(name: &str, n: usize) -> Self {
        let mut capacity = MIN_CAPACITY;
        while max_len_for(capacity) < n {
            assert!(capacity < MAX_CAPACITY, "ValueState capacity {n} too large");
            capacity *= 2;
        }
        Self {
            name: name.to_owned(),
            entries: Arena::new(),
            index: vec![EMPTY; capacity].into_boxed_slice(),
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
        self.entries.len()
    }

    /// Whether no key has a value.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of index slots (a power of two); up to 5/8 of them are used.
    pub fn capacity(&self) -> usize {
        self.index.len()
    }

    /// The arena holding the entries; for snapshots and diagnostics.
    pub fn arena(&self) -> &Arena<(K, V)> {
        &self.entries
    }

    /// Finds `key` (whose hash is `hash`) in the index: one probe sequence.
    #[inline]
    fn probe(&self, key: &K, hash: u64) -> Probe {
        let mut pos = (hash >> self.shift) as usize;
        loop {
            let entry = self.index[pos];
            if entry == EMPTY {
                return Probe::Vacant { pos };
            }
            // Only touch the arena when the stored hash bits match.
            if (entry ^ hash) & HASH_BITS == 0 {
                let slot = slot_of(entry);
                if self.entries.get(slot).0 == *key {
                    return Probe::Found { pos, slot };
                }
            }
            // Terminates: the load is capped below 1, so an empty slot exists.
            pos = (pos + 1) & self.mask;
        }
    }

    /// First empty index position on the probe path of `hash`; for keys
    /// known to be absent.
    #[inline]
    fn vacant_pos(&self, hash: u64) -> usize {
        let mut pos = (hash >> self.shift) as usize;
        while self.index[pos] != EMPTY {
            pos = (pos + 1) & self.mask;
        }
        pos
    }

    /// Doubles the index and re-inserts every index slot from its stored
    /// hash bits. Arena entries do not move.
    #[cold]
    fn grow(&mut self) {
        let capacity = self.index.len() * 2;
        assert!(
            capacity <= MAX_CAPACITY,
            "ValueState '{}' cannot hold more than {} keys",
            self.name,
            max_len_for(MAX_CAPACITY)
        );
        let old = std::mem::replace(&mut self.index, vec![EMPTY; capacity].into_boxed_slice());
        self.mask = capacity - 1;
        self.shift -= 1;
        self.max_len = max_len_for(capacity);
        for &entry in old.iter().filter(|&&e| e != EMPTY) {
            // The stored high hash bits are all the bucket needs.
            let pos = self.vacant_pos(entry);
            self.index[pos] = entry;
        }
    }

    /// Stores `(key, value)` at the vacant index position `pos`, growing
    /// first if needed. Returns the arena slot.
    ///
    /// Kept out of line: inserts are the rare case of a running keyed
    /// aggregation, and with them inlined `get_or_insert_with` itself was
    /// no longer inlined into the caller's loop (the out-of-line insert made
    /// the keyed-count benchmark ~20% faster).
    #[inline(never)]
    fn insert_at(&mut self, mut pos: usize, key: K, hash: u64, value: V) -> u32 {
        if self.entries.len() >= self.max_len {
            self.grow();
            pos = self.vacant_pos(hash);
        }
        let slot = self.entries.push((key, value));
        self.index[pos] = pack(hash, slot);
        slot
    }

    /// Debug check that a caller-supplied hash is the key's [`KeyHash`].
    #[inline]
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
            Probe::Found { slot, .. } => Some(&self.entries.get(slot).1),
            Probe::Vacant { .. } => None,
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
            Probe::Found { slot, .. } => Some(&mut self.entries.get_mut(slot).1),
            Probe::Vacant { .. } => None,
        }
    }

    /// The value of `key`, mutably.
    #[inline]
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.get_mut_hashed(key, key.key_hash())
    }

    /// The value of `key`, inserting `f()` first if there is none, given
    /// `hash == key.key_hash()`. One probe sequence (plus a re-probe of the
    /// grown index on the rare insert that grows it). If `f` panics the
    /// state is unchanged.
    #[inline]
    pub fn get_or_insert_with_hashed(
        &mut self,
        key: K,
        hash: u64,
        f: impl FnOnce() -> V,
    ) -> &mut V {
        Self::check_hash(&key, hash);
        let slot = match self.probe(&key, hash) {
            Probe::Found { slot, .. } => slot,
            Probe::Vacant { pos } => {
                let value = f();
                self.insert_at(pos, key, hash, value)
            }
        };
        &mut self.entries.get_mut(slot).1
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
            Probe::Found { slot, .. } => self.entries.get_mut(slot).1 = value,
            Probe::Vacant { pos } => {
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
    /// The arena slot goes on the free list for the next insert.
    #[inline]
    pub fn remove_hashed(&mut self, key: &K, hash: u64) -> Option<V> {
        Self::check_hash(key, hash);
        match self.probe(key, hash) {
            Probe::Vacant { .. } => None,
            Probe::Found { pos, slot } => {
                let value = self.entries.get(slot).1;
                self.entries.free(slot);
                self.backward_shift(pos);
                Some(value)
            }
        }
    }

    /// Removes `key` and returns its value.
    #[inline]
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.remove_hashed(key, key.key_hash())
    }

    /// Empties index position `hole`, shifting later entries of its cluster
    /// back so that every entry stays reachable from its bucket without
    /// crossing an empty slot (the linear-probing invariant).
    fn backward_shift(&mut self, mut hole: usize) {
        let mut pos = hole;
        loop {
            pos = (pos + 1) & self.mask;
            let entry = self.index[pos];
            if entry == EMPTY {
                break;
            }
            let bucket = (entry >> self.shift) as usize;
            // The entry may move into the hole iff the hole lies on its probe
            // path: its distance from its bucket reaches back to the hole.
            // Distances are taken modulo the capacity (the table wraps).
            let distance = pos.wrapping_sub(bucket) & self.mask;
            let to_hole = pos.wrapping_sub(hole) & self.mask;
            if distance >= to_hole {
                self.index[hole] = entry;
                hole = pos;
            }
        }
        self.index[hole] = EMPTY;
    }

    /// Every `(key, value)`, in arena order (not insertion order).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.entries.iter().map(|(_, (k, v))| (k, v))
    }

    /// Removes every key. The index keeps its capacity; the arena releases
    /// its chunks.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.index.fill(EMPTY);
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
