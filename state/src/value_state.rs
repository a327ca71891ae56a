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
//!
//! # Freezing for checkpoints
//!
//! [`ValueState::freeze`] returns a [`FrozenValueState`]: exactly the
//! entries present at that moment, whatever the live state does afterwards
//! (put, update, remove, clear, growth into a bigger table). A checkpoint
//! freezes synchronously, then serializes the view from another task on the
//! same thread while the worker keeps processing and writing. The freeze
//! copies nothing: the view shares the arena's chunks (see
//! [`crate::arena`]) and the tag array, both reference-counted. The first
//! write into a shared chunk copies that chunk, once per freeze; the first
//! insert or remove copies the tag array (1 byte per slot; updates of
//! existing keys never touch it, so a running aggregation over known keys
//! copies only the chunks it writes). Growth needs no copy at all: the new
//! table is the live state's alone and the view keeps the old one.
//! [`ValueState::cow_stats`] counts what was copied.
//!
//! The writing hot paths ([`ValueState::get_or_insert_with_hashed`],
//! [`ValueState::put_hashed`]) branch once on
//! [`SlotArena::writes_are_direct`], which is false while a view may share
//! a chunk and also while the table has no arena yet; that one branch
//! replaces the empty-table check the probe needed anyway, and everything
//! rare runs out of line. With no freeze outstanding they cost what they
//! cost without copy-on-write.
//!
//! # Cleaning up and shrinking
//!
//! A table whose entries expire (state TTL) is walked a few entries at a
//! time by [`ValueState::purge_step`], from a cursor that persists between
//! steps, and given back memory by [`ValueState::shrink_if_sparse`] once
//! it has become sparse: see [`sweep`]. Only callers that ask pay for
//! either; a table without TTL never runs them.
//!
//! # Restoring
//!
//! [`ValueState::with_capacity`] and [`ValueState::reserve`] size the table
//! for a known number of keys up front, so that a restore inserting
//! millions of entries never rehashes.

use std::fmt;
use std::rc::Rc;

use crate::arena::{FreezeIds, FrozenArena, SlotArena, CHUNK_LEN};
use crate::bounds::{StateKey, StateValue};

mod sweep;
pub use sweep::SweepStep;

/// Smallest capacity: a few cache lines, so `new` is cheap.
const MIN_CAPACITY: usize = 16;

/// Tables of at least this many bytes of slots and tags are worth a
/// prefetch per lookup ([`ValueState::prefetch_pays`]): 8 MiB, four times
/// a core's L2 cache on the machines `bench/RESULTS.md` was measured on.
pub const PREFETCH_MIN_BYTES: usize = 8 << 20;

/// One entry (an empty slot holds `Default` values).
#[derive(Clone, Debug, Default)]
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

/// The high bit of each byte of `group`, packed: bit `i` of the result is
/// the high bit of byte `i` (a used slot's tag, for occupancy bitmaps).
#[inline(always)]
fn pack_high_bits(group: u64) -> u64 {
    // Each byte's bit, moved to bit 0 of its byte, is carried by the
    // multiplication to bit 56 + i; no two products meet in the top byte.
    (((group & HIGH_BITS) >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Byte index of the lowest set high bit.
#[inline(always)]
fn first_byte(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// The 8 tags of `tags` at `pos..pos + 8` (see [`ValueState::group_at`]).
#[inline(always)]
fn group_at(tags: &[u8], pos: usize) -> u64 {
    let bytes: [u8; GROUP] = tags[pos..pos + GROUP]
        .try_into()
        .expect("tag array has GROUP trailing bytes");
    u64::from_le_bytes(bytes)
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

/// Smallest power-of-two capacity (at least [`MIN_CAPACITY`]) whose load
/// limit admits `n` entries.
fn capacity_for(n: usize, name: &str) -> usize {
    let mut capacity = MIN_CAPACITY;
    while max_len_for(capacity) < n {
        capacity = capacity
            .checked_mul(2)
            .unwrap_or_else(|| panic!("ValueState '{name}': capacity for {n} keys too large"));
    }
    capacity
}

/// The value of `slot`, for a fold that replaces it: a copy for a type
/// that owns no memory (the slot keeps it, so a panicking fold changes
/// nothing), else moved out (no clone of a `String`), leaving `Default`.
#[inline(always)]
fn take_for_update<V: StateValue>(slot: &mut V) -> V {
    if std::mem::needs_drop::<V>() {
        std::mem::take(slot)
    } else {
        slot.clone()
    }
}

/// Result of a probe sequence.
enum Probe {
    /// The key is at this position.
    Found(usize),
    /// The key is absent; this empty position is where it would go.
    Vacant(usize),
}

/// What a bulk load writes, taken apart ([`ValueState::bulk`]).
struct Bulk<'a, K: StateKey, V: StateValue> {
    slots: &'a mut SlotArena<Slot<K, V>>,
    tags: &'a mut [u8],
    len: &'a mut usize,
    mask: usize,
    shift: u32,
}

/// Keyed value state: one `V` per key `K` for all keys of an operator
/// subtask on one worker.
pub struct ValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    name: String,
    slots: SlotArena<Slot<K, V>>,
    /// One tag per slot, then the first `GROUP` tags again. Shared with
    /// frozen views, copied by the first tag write after a freeze.
    tags: Rc<[u8]>,
    len: usize,
    /// `capacity - 1`.
    mask: usize,
    /// `64 - log2(capacity)`: `hash >> shift` is the bucket.
    shift: u32,
    /// Grow before an insert would exceed this many entries.
    max_len: usize,
    /// Copy-on-write work of arenas this state has since replaced, and of
    /// its tag arrays.
    retired_chunk_copies: u64,
    tag_copies: u64,
    tag_bytes_copied: u64,
    /// The slot the next [`purge_step`](Self::purge_step) starts at (see
    /// [`sweep`]); back to 0 on every rebuild.
    sweep: usize,
    /// The entries when [`shrink_if_sparse`](Self::shrink_if_sparse) last
    /// found the table too unevenly filled to shrink: it looks again once
    /// a quarter of them are gone (0: no such finding).
    uneven_at: usize,
}

impl<K, V> ValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    /// An empty state called `name` (the name a snapshot files it under).
    pub fn new(name: &str) -> Self {
        Self::with_capacity(name, 0)
    }

    /// An empty state that holds `n` keys without growing: inserting `n`
    /// distinct keys never rehashes (what a restore wants). The slots are
    /// allocated by the first insert.
    pub fn with_capacity(name: &str, n: usize) -> Self {
        let capacity = capacity_for(n, name);
        Self {
            name: name.to_owned(),
            // No filler yet: the arena is created on the first insert, when
            // a key and value exist to fill empty slots with.
            slots: SlotArena::empty(),
            tags: Rc::new([]),
            len: 0,
            mask: capacity - 1,
            shift: 64 - capacity.trailing_zeros(),
            max_len: max_len_for(capacity),
            retired_chunk_copies: 0,
            tag_copies: 0,
            tag_bytes_copied: 0,
            sweep: 0,
            uneven_at: 0,
        }
    }

    /// Prefetches the table position `hash` would be stored at, for bulk
    /// inserts that know their next keys (a restore): a hint, no effect on
    /// the state.
    #[inline(always)]
    pub fn prefetch_hashed(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let pos = (hash >> self.shift) as usize;
        crate::prefetch::prefetch_read(&self.tags[pos]);
        crate::prefetch::prefetch_read(self.slots.get(pos));
    }

    /// Whether a loop over records of random keys gains by prefetching
    /// their positions ([`prefetch_hashed`](Self::prefetch_hashed)) a few
    /// records ahead: only once the table is far larger than a core's
    /// cache ([`PREFETCH_MIN_BYTES`]). Below that its lines are mostly in
    /// cache and the look-ahead's own work costs more than it hides.
    #[inline]
    pub fn prefetch_pays(&self) -> bool {
        self.memory_bytes() >= PREFETCH_MIN_BYTES
    }

    /// Makes room for `additional` more keys, so that inserting them never
    /// rehashes: grows the table once, now, to the capacity they need (a
    /// restore calls this with the number of entries it will insert).
    pub fn reserve(&mut self, additional: usize) {
        let needed = self.len.checked_add(additional).unwrap_or_else(|| {
            panic!(
                "ValueState '{}': reserve({additional}) overflows",
                self.name
            )
        });
        if needed <= self.max_len {
            return;
        }
        self.grow_to(capacity_for(needed, &self.name));
    }

    /// Moves the table to `capacity` slots (a power of two, larger than
    /// now): only the capacity is set while there is no arena yet.
    fn grow_to(&mut self, capacity: usize) {
        if self.slots.is_empty() {
            self.set_capacity(capacity);
        } else {
            self.rebuild(capacity);
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

    /// Finds `key` (whose hash is `hash`), also in a table that has no
    /// arena yet.
    #[inline(always)]
    fn find(&self, key: &K, hash: u64) -> Probe {
        if self.slots.is_empty() {
            return Probe::Vacant(0);
        }
        self.probe(key, hash)
    }

    /// Finds `key` (whose hash is `hash`) in a table that has its arena:
    /// one probe sequence.
    #[inline(always)]
    fn probe(&self, key: &K, hash: u64) -> Probe {
        let tag = tag_of(hash);
        let pos = (hash >> self.shift) as usize;
        // Most keys sit in their home slot: check it before the group scan.
        if self.tags[pos] == tag && self.slots.get(pos).key.key_eq(key) {
            return Probe::Found(pos);
        }
        Self::scan_from(
            &self.tags,
            &self.slots,
            self.mask,
            |k| k.key_eq(key),
            tag,
            pos,
        )
    }

    /// The group scan of [`probe`](Self::probe), from the key's home slot
    /// `pos` (whose own check the caller has made), over the table's parts:
    /// [`upsert_run`](Self::upsert_run) holds them in locals.
    #[inline(always)]
    fn scan_from(
        tags: &[u8],
        slots: &SlotArena<Slot<K, V>>,
        mask: usize,
        is_key: impl Fn(&K) -> bool,
        tag: u8,
        mut pos: usize,
    ) -> Probe {
        loop {
            // Tags pos..pos+8, read as one word: mostly one candidate, so
            // the branches below are predictable (SwissTable's idea, with
            // linear probing's invariant kept slot by slot).
            let group = group_at(tags, pos);
            let mut matches = match_tag(group, tag);
            while matches != 0 {
                let at = (pos + first_byte(matches)) & mask;
                if is_key(&slots.get(at).key) {
                    return Probe::Found(at);
                }
                matches &= matches - 1;
            }
            // A key is never stored past an empty slot of its probe path, so
            // the first empty slot ends the search.
            let empty = match_empty(group);
            if empty != 0 {
                return Probe::Vacant((pos + first_byte(empty)) & mask);
            }
            // Terminates: the load is capped below 1, so an empty slot exists.
            pos = (pos + GROUP) & mask;
        }
    }

    /// The 8 tags at `pos..pos + 8` (the tag array repeats its first
    /// `GROUP` tags at its end, so a group never wraps).
    #[inline(always)]
    fn group_at(&self, pos: usize) -> u64 {
        group_at(&self.tags, pos)
    }

    /// Sets the tag of `pos`, and its mirror past the end if it has one.
    #[inline(always)]
    fn set_tag(&mut self, pos: usize, tag: u8) {
        let mirror = self.mask + 1 + pos;
        // A tag changes without a slot write when an entry is removed.
        self.slots.mark_dirty(pos);
        let tags = self.tags_mut();
        tags[pos] = tag;
        if pos < GROUP {
            tags[mirror] = tag;
        }
    }

    /// The tag array, writable: copied first if a frozen view shares it.
    #[inline(always)]
    fn tags_mut(&mut self) -> &mut [u8] {
        if Rc::get_mut(&mut self.tags).is_none() {
            self.unshare_tags();
        }
        Rc::get_mut(&mut self.tags).unwrap_or_else(|| unreachable!("the tags were just unshared"))
    }

    /// Gives the live state its own copy of the tag array.
    #[cold]
    #[inline(never)]
    fn unshare_tags(&mut self) {
        self.tags = Rc::from(&self.tags[..]);
        self.tag_copies += 1;
        self.tag_bytes_copied += self.tags.len() as u64;
    }

    /// Sets the capacity fields for `capacity` slots.
    fn set_capacity(&mut self, capacity: usize) {
        self.mask = capacity - 1;
        self.shift = 64 - capacity.trailing_zeros();
        self.max_len = max_len_for(capacity);
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

    /// Moves every entry into an arena of `capacity` slots (whose empty
    /// slots hold `Default` values).
    #[cold]
    fn rebuild(&mut self, capacity: usize) {
        // Frozen views keep the old arena's chunks and tags alive; the new
        // ones are this state's alone.
        let new_slots = SlotArena::new(capacity, Slot::default());
        let mut old_slots = std::mem::replace(&mut self.slots, new_slots);
        self.retired_chunk_copies += old_slots.cow_copies();
        let old_tags = std::mem::replace(&mut self.tags, Rc::from(vec![EMPTY; capacity + GROUP]));
        self.set_capacity(capacity);
        self.sweep = 0;
        self.uneven_at = 0;
        // Entries move out of an old arena no view shares (for types that
        // own memory, no clone); one a view shares is cloned from.
        let movable = old_slots.writes_are_direct();
        for old in 0..old_slots.len() {
            if old_tags[old] == EMPTY {
                continue;
            }
            let slot = if movable {
                std::mem::take(old_slots.get_mut(old))
            } else {
                old_slots.get(old).clone()
            };
            let hash = slot.key.key_hash();
            let pos = self.vacant_pos(hash);
            *self.slots.get_mut(pos) = slot;
            self.set_tag(pos, tag_of(hash));
        }
    }

    /// Stores `(key, value)` at the vacant position `pos`, creating or
    /// growing the arena first if needed. Returns the value's slot.
    ///
    /// Kept out of line: inserts are the rare case of a running keyed
    /// aggregation, and inlining them stopped the lookup from being inlined
    /// into the caller's loop.
    #[inline(never)]
    fn insert_at(&mut self, mut pos: usize, key: K, hash: u64, value: V) -> &mut V {
        let slot = Slot { key, value };
        if self.slots.is_empty() {
            // The arena is made by the first insert.
            self.rebuild(self.capacity());
            pos = self.vacant_pos(hash);
        } else if self.len >= self.max_len {
            let capacity = self
                .capacity()
                .checked_mul(2)
                .unwrap_or_else(|| panic!("ValueState '{}' is full", self.name));
            self.rebuild(capacity);
            pos = self.vacant_pos(hash);
        }
        self.set_tag(pos, tag_of(hash));
        self.len += 1;
        let stored = self.slots.get_mut(pos);
        *stored = slot;
        &mut stored.value
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
        match self.find(key, hash) {
            Probe::Found(pos) => Some(&self.slots.get(pos).value),
            Probe::Vacant(_) => None,
        }
    }

    /// The value of the key for which `is_key` holds, given that key's
    /// hash: a lookup by a key's parts, without building the key (the
    /// owned parts of a composite key are not cloned for it).
    #[inline]
    pub fn get_hashed_by(&self, hash: u64, is_key: impl Fn(&K) -> bool) -> Option<&V> {
        if self.slots.is_empty() {
            return None;
        }
        let tag = tag_of(hash);
        let pos = (hash >> self.shift) as usize;
        if self.tags[pos] == tag && is_key(&self.slots.get(pos).key) {
            return Some(&self.slots.get(pos).value);
        }
        match Self::scan_from(&self.tags, &self.slots, self.mask, is_key, tag, pos) {
            Probe::Found(at) => Some(&self.slots.get(at).value),
            Probe::Vacant(_) => None,
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.get_hashed(key, key.key_hash())
    }

    // `get_or_insert_with_hashed` and `put_hashed` branch once on
    // `writes_are_direct` (the arena exists and no frozen view may share a
    // chunk): then the probe skips its empty-table check and the write its
    // copy-on-write check, so with no freeze outstanding copy-on-write costs
    // them only that branch. The rare rest runs out of line in a `*_slow`
    // twin. `get_mut_hashed` keeps the arena's own check, whose out-of-line
    // path touches only the arena's boxed bookkeeping.

    /// The value of `key`, mutably, given `hash == key.key_hash()`.
    #[inline]
    pub fn get_mut_hashed(&mut self, key: &K, hash: u64) -> Option<&mut V> {
        Self::check_hash(key, hash);
        match self.find(key, hash) {
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
        self.get_or_insert_with_hashed_ref(&key, hash, f)
    }

    /// [`get_or_insert_with_hashed`](Self::get_or_insert_with_hashed) of a
    /// borrowed key, cloned only if it is inserted (a `String` key that is
    /// there already costs no allocation).
    #[inline(always)]
    pub fn get_or_insert_with_hashed_ref(
        &mut self,
        key: &K,
        hash: u64,
        f: impl FnOnce() -> V,
    ) -> &mut V {
        Self::check_hash(key, hash);
        if !self.slots.writes_are_direct() {
            return self.get_or_insert_slow(key, hash, f);
        }
        match self.probe(key, hash) {
            Probe::Found(pos) => &mut self.slots.get_mut(pos).value,
            Probe::Vacant(pos) => {
                let value = f();
                self.insert_at(pos, key.clone(), hash, value)
            }
        }
    }

    /// [`get_or_insert_with_hashed`](Self::get_or_insert_with_hashed)
    /// without the arena or with chunks shared with a frozen view.
    #[cold]
    #[inline(never)]
    fn get_or_insert_slow(&mut self, key: &K, hash: u64, f: impl FnOnce() -> V) -> &mut V {
        match self.find(key, hash) {
            Probe::Found(pos) => &mut self.slots.get_mut(pos).value,
            Probe::Vacant(pos) => {
                let value = f();
                self.insert_at(pos, key.clone(), hash, value)
            }
        }
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
        if !self.slots.writes_are_direct() {
            return self.put_slow(key, hash, value);
        }
        match self.probe(&key, hash) {
            Probe::Found(pos) => self.slots.get_mut(pos).value = value,
            Probe::Vacant(pos) => {
                self.insert_at(pos, key, hash, value);
            }
        }
    }

    /// [`put_hashed`](Self::put_hashed) of a borrowed key, cloned only if
    /// it is inserted.
    #[inline]
    pub fn put_hashed_ref(&mut self, key: &K, hash: u64, value: V) {
        Self::check_hash(key, hash);
        match self.find(key, hash) {
            Probe::Found(pos) => self.slots.get_mut(pos).value = value,
            Probe::Vacant(pos) => {
                self.insert_at(pos, key.clone(), hash, value);
            }
        }
    }

    /// [`put_hashed`](Self::put_hashed) without the arena or with chunks
    /// shared with a frozen view.
    #[cold]
    #[inline(never)]
    fn put_slow(&mut self, key: K, hash: u64, value: V) {
        match self.find(&key, hash) {
            Probe::Found(pos) => self.slots.get_mut(pos).value = value,
            Probe::Vacant(pos) => {
                self.insert_at(pos, key, hash, value);
            }
        }
    }

    /// [`put_hashed`](Self::put_hashed) for bulk loads (a restore filling
    /// a table [`reserve`](Self::reserve)d for its entries): the same
    /// result, in one inlined probe that writes the tag and the slot
    /// itself. Everything rare (no arena yet, a shared chunk or tag array,
    /// a table that must grow) takes `put_hashed`'s out-of-line path.
    #[inline(always)]
    pub fn load_hashed(&mut self, key: K, hash: u64, value: V) {
        Self::check_hash(&key, hash);
        if !self.slots.writes_are_direct() || self.len >= self.max_len {
            return self.put_slow(key, hash, value);
        }
        let Some(tags) = Rc::get_mut(&mut self.tags) else {
            return self.put_slow(key, hash, value);
        };
        let added = Self::load_in_place(
            &mut self.slots,
            tags,
            self.mask,
            self.shift,
            key,
            hash,
            value,
        );
        self.len += usize::from(added);
    }

    /// [`load_hashed`](Self::load_hashed) of every `((key, value), hash)`
    /// of `entries`, in order (a restore's batch of decoded entries). The
    /// checks that choose the inlined path (the arena exists and is not
    /// shared, the tags are not shared, the batch fits without growing)
    /// are made once for the batch instead of once per entry.
    pub fn load_batch(&mut self, entries: &[((K, V), u64)]) {
        let Some(Bulk {
            slots,
            tags,
            len,
            mask,
            shift,
        }) = self.bulk(entries.len())
        else {
            for ((key, value), hash) in entries {
                self.load_hashed(key.clone(), *hash, value.clone());
            }
            return;
        };
        for ((key, value), hash) in entries {
            Self::check_hash(key, *hash);
            *len += usize::from(Self::load_in_place(
                slots,
                tags,
                mask,
                shift,
                key.clone(),
                *hash,
                value.clone(),
            ));
        }
    }

    /// Makes the table at least `capacity` slots large (rounded up to a
    /// power of two), so that a restore of a table block finds the
    /// capacity its positions were taken at (see
    /// [`load_placed_batch`](Self::load_placed_batch)).
    pub fn reserve_capacity(&mut self, capacity: usize) {
        let capacity = capacity
            .max(MIN_CAPACITY)
            .checked_next_power_of_two()
            .unwrap_or_else(|| panic!("ValueState '{}': capacity {capacity} too large", self.name));
        if capacity > self.capacity() {
            self.grow_to(capacity);
        }
    }

    /// [`load_batch`](Self::load_batch) of entries that carry the position
    /// a table of this capacity held them at, `(pos, (key, value), hash)`
    /// (a restore of a table block, taken in slot order): an entry is
    /// stored at `pos` without a probe for its key when `pos` is the first
    /// empty slot of its probe path, which is where an insert would put it
    /// (always so when a whole table of the same capacity is loaded in
    /// slot order); any other entry is appended to `deferred`, for the
    /// caller to [`load_batch`](Self::load_batch) after the last placed
    /// batch. (Inserting it at once could take the place of a later
    /// entry: the entries at a table's start whose cluster wraps around its
    /// end come before the end's entries in slot order.)
    ///
    /// The keys must not be in the table yet (a snapshot of one table holds
    /// each key once): a placed key is not looked for first. Whatever the
    /// positions say, the table stays a valid one; they only save the work.
    pub fn load_placed_batch(
        &mut self,
        entries: &[(usize, (K, V), u64)],
        deferred: &mut Vec<((K, V), u64)>,
    ) {
        if self.slots.is_empty() && !entries.is_empty() {
            self.rebuild(self.capacity());
        }
        let Some(Bulk {
            slots,
            tags,
            len,
            mask,
            shift,
        }) = self.bulk(entries.len())
        else {
            // Shared with a frozen view, or too full: nothing is placed.
            deferred.extend(
                entries
                    .iter()
                    .map(|(_, entry, hash)| (entry.clone(), *hash)),
            );
            return;
        };
        for (pos, (key, value), hash) in entries {
            let (pos, hash) = (*pos, *hash);
            Self::check_hash(key, hash);
            // The first empty slot from the key's bucket on (terminates:
            // the load is capped below 1).
            let mut at = (hash >> shift) as usize;
            let vacant = loop {
                let group = u64::from_le_bytes(
                    tags[at..at + GROUP]
                        .try_into()
                        .expect("tag array has GROUP trailing bytes"),
                );
                let empty = match_empty(group);
                if empty != 0 {
                    break (at + first_byte(empty)) & mask;
                }
                at = (at + GROUP) & mask;
            };
            if vacant == pos {
                let tag = tag_of(hash);
                tags[pos] = tag;
                if pos < GROUP {
                    tags[mask + 1 + pos] = tag;
                }
                *slots.get_mut(pos) = Slot {
                    key: key.clone(),
                    value: value.clone(),
                };
                *len += 1;
            } else {
                deferred.push(((key.clone(), value.clone()), hash));
            }
        }
    }

    /// The fields a bulk load of `n` entries writes, if it may take the
    /// inlined path: the arena exists and no frozen view shares it or the
    /// tags, and `n` more keys fit without growing. The checks are made
    /// once for a batch; the fields come apart so that the batch's loop
    /// keeps them in registers.
    #[inline(always)]
    fn bulk(&mut self, n: usize) -> Option<Bulk<'_, K, V>> {
        let fits = self.len.checked_add(n).is_some_and(|n| n <= self.max_len);
        if !(self.slots.writes_are_direct() && fits) {
            return None;
        }
        let tags = Rc::get_mut(&mut self.tags)?;
        Some(Bulk {
            slots: &mut self.slots,
            tags,
            len: &mut self.len,
            mask: self.mask,
            shift: self.shift,
        })
    }

    /// The probe of the bulk loads, on an arena whose writes are direct and
    /// an exclusive tag array with room for one more key: overwrites the
    /// value of `key` or stores it in the first empty slot of its probe
    /// path. Returns true if the key is new. Takes the fields it needs, so
    /// that a caller's loop keeps the others in registers.
    #[inline(always)]
    fn load_in_place(
        slots: &mut SlotArena<Slot<K, V>>,
        tags: &mut [u8],
        mask: usize,
        shift: u32,
        key: K,
        hash: u64,
        value: V,
    ) -> bool {
        let tag = tag_of(hash);
        let mut pos = (hash >> shift) as usize;
        loop {
            let group = u64::from_le_bytes(
                tags[pos..pos + GROUP]
                    .try_into()
                    .expect("tag array has GROUP trailing bytes"),
            );
            let mut matches = match_tag(group, tag);
            while matches != 0 {
                let at = (pos + first_byte(matches)) & mask;
                if slots.get(at).key.key_eq(&key) {
                    slots.get_mut(at).value = value;
                    return false;
                }
                matches &= matches - 1;
            }
            let empty = match_empty(group);
            if empty != 0 {
                let at = (pos + first_byte(empty)) & mask;
                tags[at] = tag;
                if at < GROUP {
                    tags[mask + 1 + at] = tag;
                }
                *slots.get_mut(at) = Slot { key, value };
                return true;
            }
            pos = (pos + GROUP) & mask;
        }
    }

    /// Replaces the value of `key` by `f` of it (`None` if absent), given
    /// `hash == key.key_hash()`; returns the new value and whether the key
    /// is new. One probe sequence: the fold of an incremental aggregate
    /// (a window's accumulator), which has no neutral value to insert
    /// first. If `f` panics a fixed-size state is unchanged; a value that
    /// owns memory was moved into `f` and its slot holds `Default`.
    #[inline(always)]
    pub fn upsert_hashed(
        &mut self,
        key: K,
        hash: u64,
        f: impl FnOnce(Option<V>) -> V,
    ) -> (&mut V, bool) {
        self.upsert_hashed_ref(&key, hash, f)
    }

    /// [`upsert_hashed`](Self::upsert_hashed) of a borrowed key, cloned
    /// only if it is inserted.
    #[inline(always)]
    pub fn upsert_hashed_ref(
        &mut self,
        key: &K,
        hash: u64,
        f: impl FnOnce(Option<V>) -> V,
    ) -> (&mut V, bool) {
        Self::check_hash(key, hash);
        let probe = if self.slots.writes_are_direct() {
            self.probe(key, hash)
        } else {
            self.find(key, hash)
        };
        match probe {
            Probe::Found(pos) => {
                let slot = &mut self.slots.get_mut(pos).value;
                *slot = f(Some(take_for_update(slot)));
                (slot, false)
            }
            Probe::Vacant(pos) => {
                let value = f(None);
                (self.insert_at(pos, key.clone(), hash, value), true)
            }
        }
    }

    /// [`upsert_hashed`](Self::upsert_hashed) for each `(key, hash,
    /// input)` of `records`, in order: folds the input into the key's value
    /// with `f` (given `None` for a new key). Returns how many records it
    /// took (all of them).
    ///
    /// The same as calling `upsert_hashed` for each, but the loop holds the
    /// table's fields (tag array, shift, mask) in locals for as long as no
    /// insert changes them: after a write through a slot the compiler must
    /// assume any field may have changed and reads it again, which costs a
    /// per-record call a dozen loads.
    #[inline(always)]
    pub fn upsert_run<T>(
        &mut self,
        mut records: impl Iterator<Item = (K, u64, T)>,
        f: impl Fn(Option<V>, T) -> V,
    ) -> usize {
        let mut taken = 0;
        loop {
            if !self.slots.writes_are_direct() {
                // No arena yet, or chunks shared with a frozen view.
                let Some((key, hash, input)) = records.next() else {
                    return taken;
                };
                taken += 1;
                self.upsert_hashed(key, hash, |v| f(v, input));
                continue;
            }
            let (tags, slots, shift, mask) = (&*self.tags, &mut self.slots, self.shift, self.mask);
            let vacant = loop {
                let Some((key, hash, input)) = records.next() else {
                    return taken;
                };
                taken += 1;
                Self::check_hash(&key, hash);
                // The home slot first, through one mutable borrow: the
                // slot's address is computed once for the check and the
                // write (a `Found` from the probe computes it again).
                let (tag, home) = (tag_of(hash), (hash >> shift) as usize);
                if tags[home] == tag {
                    let slot = slots.get_mut(home);
                    if slot.key.key_eq(&key) {
                        slot.value = f(Some(take_for_update(&mut slot.value)), input);
                        continue;
                    }
                }
                match Self::scan_from(tags, slots, mask, |k| k.key_eq(&key), tag, home) {
                    Probe::Found(pos) => {
                        let slot = &mut slots.get_mut(pos).value;
                        *slot = f(Some(take_for_update(slot)), input);
                    }
                    Probe::Vacant(pos) => break (pos, key, hash, input),
                }
            };
            // A new key: the insert may grow the table (new fields).
            let (pos, key, hash, input) = vacant;
            let value = f(None, input);
            self.insert_at(pos, key, hash, value);
        }
    }

    /// Sets the value of `key` (insert or overwrite).
    #[inline]
    pub fn put(&mut self, key: K, value: V) {
        let hash = key.key_hash();
        self.put_hashed(key, hash, value)
    }

    /// Removes `key` and returns its value, given `hash == key.key_hash()`.
    #[inline]
    pub fn remove_hashed(&mut self, key: &K, hash: u64) -> Option<V> {
        Self::check_hash(key, hash);
        match self.find(key, hash) {
            Probe::Vacant(_) => None,
            Probe::Found(pos) => {
                let removed = self.take_slot(pos);
                self.backward_shift(pos);
                self.len -= 1;
                Some(removed.value)
            }
        }
    }

    /// The entry at `pos`, taken out: a type that owns memory is moved out
    /// and the slot reset to `Default` (so a removal frees it); a
    /// fixed-size one is copied and the slot left as it is (no write, so no
    /// copy of a chunk a frozen view shares).
    #[inline]
    fn take_slot(&mut self, pos: usize) -> Slot<K, V> {
        if std::mem::needs_drop::<Slot<K, V>>() {
            std::mem::take(self.slots.get_mut(pos))
        } else {
            self.slots.get(pos).clone()
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
            let bucket = (self.slots.get(pos).key.key_hash() >> self.shift) as usize;
            // The entry may move into the hole iff the hole lies on its probe
            // path: its distance from its bucket reaches back to the hole.
            // Distances are taken modulo the capacity (the table wraps).
            let distance = pos.wrapping_sub(bucket) & self.mask;
            let to_hole = pos.wrapping_sub(hole) & self.mask;
            if distance >= to_hole {
                let slot = self.take_slot(pos);
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
        match Rc::get_mut(&mut self.tags) {
            Some(tags) => tags.fill(EMPTY),
            // A frozen view holds the tags: start a new array rather than
            // copy the old one only to overwrite it.
            None => self.tags = Rc::from(vec![EMPTY; self.tags.len()]),
        }
        if std::mem::needs_drop::<Slot<K, V>>() && !self.slots.is_empty() {
            // Free what the entries own (a frozen view keeps its chunks).
            self.slots.fill(Slot::default());
        }
        if !self.slots.is_empty() {
            self.slots.mark_all_dirty();
        }
        self.len = 0;
    }

    /// A read-only view of exactly the entries present now, unaffected by
    /// anything done to this state afterwards (puts, updates, removes,
    /// `clear`, growth into a bigger table).
    ///
    /// Costs one reference-count increment per arena chunk and one for the
    /// tag array; nothing is copied here. Later writes copy what they
    /// touch while a view still shares it: each arena chunk at most once per
    /// freeze (see [`crate::arena`]), the tag array on the first insert or
    /// remove. Dropping every view ends the sharing. Until every shared
    /// chunk has been written or every view dropped, writes take an
    /// out-of-line path that checks their chunk.
    pub fn freeze(&self) -> FrozenValueState<K, V> {
        FrozenValueState {
            name: self.name.clone(),
            slots: self.slots.freeze(),
            tags: Rc::clone(&self.tags),
            len: self.len,
            mask: self.mask,
            shift: self.shift,
        }
    }

    /// Copy-on-write work done so far because of frozen views.
    pub fn cow_stats(&self) -> CowStats {
        let chunks_copied = self.retired_chunk_copies + self.slots.cow_copies();
        let chunk_bytes = (CHUNK_LEN * std::mem::size_of::<Slot<K, V>>()) as u64;
        CowStats {
            chunks_copied,
            tag_arrays_copied: self.tag_copies,
            bytes_copied: chunks_copied * chunk_bytes + self.tag_bytes_copied,
        }
    }
}

impl<K, V> fmt::Debug for ValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValueState")
            .field("name", &self.name)
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// Copy-on-write work a [`ValueState`] has done because frozen views
/// shared its memory (for checkpoint statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CowStats {
    /// Arena chunks copied ([`CHUNK_LEN`] slots each).
    pub chunks_copied: u64,
    /// Tag arrays copied (one byte per slot).
    pub tag_arrays_copied: u64,
    /// Bytes copied by both.
    pub bytes_copied: u64,
}

/// The entries of a [`ValueState`] as they were at
/// [`ValueState::freeze`]: read-only, and unchanged by anything the live
/// state does afterwards. It shares the live state's memory until the live
/// state writes to it; dropping it ends the sharing.
///
/// A checkpoint freezes the state synchronously, then serializes the view
/// from another task on the same thread while the worker keeps processing.
/// Like the state it is `!Send`. Cloning it is cheap and shares too.
#[derive(Clone)]
pub struct FrozenValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    name: String,
    slots: FrozenArena<Slot<K, V>>,
    tags: Rc<[u8]>,
    len: usize,
    mask: usize,
    shift: u32,
}

impl<K, V> FrozenValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of keys with a value.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no key had a value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slots of the table the view was taken of.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Bytes of slot memory the view refers to (shared with the live state
    /// until it writes).
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * (std::mem::size_of::<Slot<K, V>>() + 1)
    }

    /// The value `key` had.
    pub fn get(&self, key: &K) -> Option<&V> {
        if self.slots.is_empty() {
            return None;
        }
        let hash = key.key_hash();
        let tag = tag_of(hash);
        let mut pos = (hash >> self.shift) as usize;
        // Slot by slot: a view is read by iteration, lookups are for checks.
        loop {
            match self.tags[pos] {
                EMPTY => return None,
                t if t == tag && self.slots.get(pos).key.key_eq(key) => {
                    return Some(&self.slots.get(pos).value)
                }
                _ => pos = (pos + 1) & self.mask,
            }
        }
    }

    /// Every `(key, value)`, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.slots
            .iter()
            .zip(self.tags.iter())
            .filter(|(_, &t)| t != EMPTY)
            .map(|(s, _)| (&s.key, &s.value))
    }

    /// Number of arena chunks the slots are stored in (see
    /// [`iter_chunks`](Self::iter_chunks)).
    pub fn chunk_count(&self) -> usize {
        self.slots.chunk_count()
    }

    /// `log2` of [`capacity`](Self::capacity).
    pub fn log2_capacity(&self) -> u32 {
        self.capacity().trailing_zeros()
    }

    /// Which freeze of the table's arena this view is (see
    /// [`crate::arena`], "Dirty slots"). A view of a table that has no
    /// arena yet follows no freeze (`since` is 0).
    pub fn freeze_ids(&self) -> FreezeIds {
        self.slots.freeze_ids()
    }

    /// Whether the table's dirty positions ([`dirty_count`](Self::dirty_count),
    /// [`for_each_dirty`](Self::for_each_dirty)) are complete: its arena
    /// tracked writes since the previous freeze (see [`crate::arena`],
    /// "Dirty slots").
    pub fn is_tracked(&self) -> bool {
        self.slots.is_tracked()
    }

    /// Asks the live table's arena to track dirty slots from its next
    /// freeze on.
    pub fn request_tracking(&self) {
        self.slots.request_tracking();
    }

    /// How many positions of `slots` were written (or emptied) between the
    /// previous freeze of the table and this one.
    pub fn dirty_count(&self, slots: std::ops::Range<usize>) -> usize {
        let words = self.slots.dirty_words();
        self.dirty_positions(words, slots).count()
    }

    /// Calls `f(position, entry)` for every position of `slots` written or
    /// emptied between the previous freeze of the table and this one, in
    /// order, with the entry it holds now (`None`: empty).
    pub fn for_each_dirty(
        &self,
        slots: std::ops::Range<usize>,
        mut f: impl FnMut(usize, Option<(&K, &V)>),
    ) {
        let words = self.slots.dirty_words();
        for pos in self.dirty_positions(words, slots) {
            let entry = (self.tags[pos] != EMPTY).then(|| {
                let s = self.slots.get(pos);
                (&s.key, &s.value)
            });
            f(pos, entry);
        }
    }

    /// The dirty positions of `slots` by the bits of `words`.
    fn dirty_positions<'w>(
        &self,
        words: &'w [u64],
        slots: std::ops::Range<usize>,
    ) -> impl Iterator<Item = usize> + 'w {
        let end = slots.end.min(words.len() * 64);
        let start = slots.start.min(end);
        (start / 64..end.div_ceil(64)).flat_map(move |w| {
            let mut bits = words[w];
            if w * 64 < start {
                bits &= u64::MAX << (start - w * 64);
            }
            if (w + 1) * 64 > end {
                bits &= u64::MAX >> ((w + 1) * 64 - end);
            }
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// The table positions held by the arena chunks `chunks` (empty past
    /// the end; a table smaller than a chunk uses the chunk's first slots).
    pub fn chunk_slots(&self, chunks: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let end = (chunks.end.min(self.slots.chunk_count()) * CHUNK_LEN).min(self.capacity());
        (chunks.start * CHUNK_LEN).min(end)..end
    }

    /// Appends the occupancy of the positions `slots` to `out` as a bitmap
    /// of little-endian 64-bit words: bit `i % 64` of word `i / 64` is set
    /// iff position `slots.start + i` holds an entry; the last word is
    /// padded with zero bits. Returns the number of entries. `slots` must
    /// lie in the table and start at a multiple of 8 (as
    /// [`chunk_slots`](Self::chunk_slots) ranges do).
    ///
    /// # Panics
    /// If `slots` does not.
    pub fn occupancy(&self, slots: std::ops::Range<usize>, out: &mut Vec<u8>) -> usize {
        assert!(
            slots.start.is_multiple_of(GROUP)
                && slots.end <= self.capacity()
                && slots.start <= slots.end,
            "occupancy of positions {slots:?} of a table of {}",
            self.capacity()
        );
        let mut used = 0;
        if self.slots.is_empty() {
            out.resize(out.len() + slots.len().div_ceil(64) * 8, 0);
            return 0;
        }
        let tags = &self.tags[slots.clone()];
        let words = tags.chunks(64);
        for word_tags in words {
            let mut word = 0u64;
            for (i, group) in word_tags.chunks(GROUP).enumerate() {
                let mut bytes = [EMPTY; GROUP];
                bytes[..group.len()].copy_from_slice(group);
                let bits = pack_high_bits(u64::from_le_bytes(bytes));
                word |= bits << (i * GROUP);
            }
            used += word.count_ones() as usize;
            out.extend_from_slice(&word.to_le_bytes());
        }
        used
    }

    /// The `(key, value)`s stored in the arena chunks `chunks`, in slot
    /// order: a snapshot serializes a large view part by part this way and
    /// writes each part while it serializes the next. Chunks past the end
    /// yield nothing.
    pub fn iter_chunks(
        &self,
        chunks: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (&K, &V)> + '_ {
        let first = chunks.start;
        self.slots
            .chunks()
            .enumerate()
            .skip(first)
            .take(chunks.len())
            .flat_map(move |(c, slots)| {
                assert!(
                    self.slots.holds_chunk(c),
                    "chunk {c} iterated after its release"
                );
                slots
                    .iter()
                    .zip(self.tags[c * CHUNK_LEN..].iter())
                    .filter(|(_, &t)| t != EMPTY)
                    .map(|(s, _)| (&s.key, &s.value))
            })
    }
}

impl<K, V> FrozenValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    /// Lets go of the arena chunks `chunks` (see
    /// [`FrozenArena::release_chunks`]): the live state's writes into them
    /// stop copying them. Reading their entries afterwards panics.
    pub fn release_chunks(&mut self, chunks: std::ops::Range<usize>) {
        self.slots.release_chunks(chunks);
    }

    /// Calls `f` on every `(key, value)` stored in the arena chunks
    /// `chunks`, in slot order (what [`iter_chunks`](Self::iter_chunks)
    /// yields): the snapshot writer's loop. It reads the tags eight at a
    /// time and visits the used slots of each group by their bits, so a
    /// table at its usual 40-80% load costs no mispredicted branch per slot.
    #[inline]
    pub fn for_each_in_chunks(&self, chunks: std::ops::Range<usize>, mut f: impl FnMut(&K, &V)) {
        let capacity = self.capacity();
        let end = chunks.end.min(self.slots.chunk_count());
        for (c, slots) in self.slots.chunks().enumerate().take(end).skip(chunks.start) {
            assert!(
                self.slots.holds_chunk(c),
                "chunk {c} serialized after its release"
            );
            let first = c * CHUNK_LEN;
            // A table smaller than a chunk uses the chunk's first slots;
            // capacities are powers of two of at least GROUP slots.
            let used = slots.len().min(capacity - first);
            let tags = &self.tags[first..first + used];
            let slots = &slots[..used];
            for (group, slots) in tags.chunks_exact(GROUP).zip(slots.chunks_exact(GROUP)) {
                let word = u64::from_le_bytes(group.try_into().expect("GROUP tags"));
                let mut full = word & HIGH_BITS;
                while full != 0 {
                    let s = &slots[first_byte(full)];
                    f(&s.key, &s.value);
                    full &= full - 1;
                }
            }
        }
    }
}

impl<K, V> fmt::Debug for FrozenValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrozenValueState")
            .field("name", &self.name)
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .finish()
    }
}

#[cfg(test)]
mod tests;
