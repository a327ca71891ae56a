//! Key groups: the stable key hash, the key → key group mapping and the
//! key group → subtask mapping, with Apache Flink's exact formulas.
//!
//! A key group is the unit in which keyed state is partitioned, snapshotted
//! and redistributed on rescaling. A key belongs to key group
//! `key_hash(key) % max_parallelism`; a subtask `i` of an operator with
//! parallelism `P` owns the contiguous range of key groups returned by
//! [`KeyGroupRange::for_subtask`]. Because snapshot bytes are laid out per key
//! group, [`KeyHash`] must never change: it is specified bit for bit below
//! and pinned by golden tests.

use std::fmt;

use crate::short_bytes;

/// Maximum parallelism used when the job does not set one (Flink's default
/// lower bound for derived max parallelism).
pub const DEFAULT_MAX_PARALLELISM: u32 = 128;

/// Largest allowed max parallelism (Flink's `UPPER_BOUND_MAX_PARALLELISM`,
/// `1 << 15`). It keeps subtask indices within `u16`.
pub const UPPER_BOUND_MAX_PARALLELISM: u32 = 1 << 15;

/// murmur3's 64-bit finaliser (`fmix64`): a bijective avalanche mix.
///
/// `k ^= k >> 33; k *= 0xff51afd7ed558ccd; k ^= k >> 33;
/// k *= 0xc4ceb9fe1a85ec53; k ^= k >> 33` (wrapping multiplication).
#[inline]
pub const fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The odd multiplier of [`hash_bytes`] (2^64 divided by the golden ratio).
const WORD_MUL: u64 = 0x9E37_79B9_7F4A_7C15;
/// The seed of [`hash_bytes`] (the first fractional bits of pi), so that
/// the empty string does not hash like `0u64`.
const BYTES_SEED: u64 = 0x243F_6A88_85A3_08D3;

/// The stable byte-string hash, eight bytes at a time: starting from
/// `len * WORD_MUL ^ BYTES_SEED`, each little-endian 8-byte word `w` (the last one
/// zero-padded) gives `h = ((h ^ w) * WORD_MUL).rotate_left(29)`; then
/// [`fmix64`].
///
/// The length in the seed keeps `"a"` and `"a\0"` apart; the rotation
/// carries each word's high bits into the next multiplication, and the
/// finaliser spreads every input bit over the low bits that pick the key
/// group. Word-wise, a short key costs a few instructions where a
/// byte-wise hash (FNV-1a, this function's definition before keys that
/// own memory could be checkpointed) cost several per byte.
///
/// Always inlined for keys of up to 16 bytes: a call costs a sending
/// exchange as much as the short key's words; longer keys take the loop
/// out of line.
#[inline(always)]
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let h = seed(n);
    if n <= 16 {
        return fmix64(fold_short(h, bytes));
    }
    hash_long(h, bytes)
}

/// [`hash_bytes`] of the first `n` (at most 24) bytes of `words`, three
/// little-endian words: the same hash from values a caller already holds
/// as words (an inline `CompactString`), bytes past `n` masked off rather
/// than read. Reading a short key's bytes at its length's offsets, as
/// [`hash_bytes`] does, loads a word across the two stores that had just
/// written the key (a copy of it on the stack), which the processor cannot
/// forward: a stall of about a dozen cycles per record.
#[inline(always)]
pub fn hash_words(words: [u64; 3], n: usize) -> u64 {
    debug_assert!(n <= 24);
    // The low `k` (1 to 8) bytes of a word.
    let low = |w: u64, k: usize| w & (u64::MAX >> (64 - 8 * k));
    let h = seed(n);
    let h = match n {
        0 => h,
        1..=8 => fold(h, low(words[0], n)),
        9..=16 => fold(fold(h, words[0]), low(words[1], n - 8)),
        _ => fold(fold(fold(h, words[0]), words[1]), low(words[2], n - 16)),
    };
    fmix64(h)
}

/// [`hash_bytes`] of a key longer than 16 bytes, from its seed `h`.
#[inline(never)]
fn hash_long(mut h: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_else(|_| unreachable!("8 bytes")));
        h = fold(h, w);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        h = fold(h, short_bytes::last_word(bytes, rest.len()));
    }
    fmix64(h)
}

/// [`hash_bytes`]'s state before the words of a string of `n` bytes.
#[inline(always)]
fn seed(n: usize) -> u64 {
    (n as u64).wrapping_mul(WORD_MUL) ^ BYTES_SEED
}

/// One word into [`hash_bytes`]'s state.
#[inline(always)]
fn fold(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(WORD_MUL).rotate_left(29)
}

/// [`hash_bytes`]'s words of a key of at most 16 bytes, without the loop
/// (most string keys are this short, and the loop's trip count and tail
/// cost more than the two words themselves): the same words in the same
/// order.
#[inline(always)]
fn fold_short(h: u64, bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!(n <= 16);
    if n > 8 {
        // A full word, then the other `n - 8` bytes zero-padded: the last
        // eight bytes with the first word's share shifted out (for
        // `n == 16` a second full word).
        let first = short_bytes::word(bytes, 0);
        let last = short_bytes::word(bytes, n - 8) >> (8 * (16 - n));
        return fold(fold(h, first), last);
    }
    if n == 8 {
        return fold(h, short_bytes::word(bytes, 0));
    }
    if n > 0 {
        return fold(h, short_bytes::last_word(bytes, n));
    }
    h
}

/// A key hash that is stable across platforms, Rust versions and releases of
/// weir.
///
/// It decides the key group of a key and so which snapshot bytes the key's
/// state lands in; it must therefore never depend on `std`'s `Hasher`,
/// `RandomState` or the pointer width. The definition, which is part of
/// weir's snapshot format:
///
/// - unsigned integers (`u8`, `u16`, `u32`, `u64`, `usize`), `bool`
///   (`false` = 0, `true` = 1) and `char` (its scalar value): [`fmix64`] of
///   the value zero-extended to `u64`;
/// - signed integers (`i8`, `i16`, `i32`, `i64`, `isize`): [`fmix64`] of the
///   value sign-extended to `i64` and then cast to `u64` (so `-1i8` hashes
///   like `u64::MAX`);
/// - byte strings (`[u8]`, `str`, `String`, `CompactString`, `Vec<u8>`,
///   `[u8; N]`):
///   [`hash_bytes`] (word-wise multiply-rotate, then [`fmix64`]);
/// - pairs `(A, B)`: `fmix64(a ^ b.rotate_left(32))` where `a` and `b` are the
///   elements' key hashes (the rotation keeps `(x, y)` and `(y, x)` apart);
/// - triples `(A, B, C)`: the pair hash of `((A, B), C)`;
/// - `&T`, `&mut T` and `Box<T>`: forward to `T`.
pub trait KeyHash {
    /// Whether cloning the key allocates (a `String`'s or a `Vec<u8>`'s
    /// bytes): a keyed operator whose key is selected by reference then
    /// keeps one key for a run of records and clones each record's key
    /// into it (`clone_from`) instead of cloning it anew. False by default
    /// (and for `CompactString`, whose ids up to 24 bytes clone inline:
    /// kept across records, its key measured 20% slower).
    const CLONE_ALLOCATES: bool = false;

    /// The stable 64-bit hash of this key.
    fn key_hash(&self) -> u64;

    /// Whether `self` and `other` are the same key, as keyed state's
    /// tables test it on a probe: always `self == other`, which is the
    /// default. Byte strings compare short keys a word at a time instead
    /// of calling `memcmp`.
    #[inline(always)]
    fn key_eq(&self, other: &Self) -> bool
    where
        Self: PartialEq,
    {
        self == other
    }
}

macro_rules! key_hash_unsigned {
    ($($t:ty),*) => {$(
        impl KeyHash for $t {
            #[inline]
            fn key_hash(&self) -> u64 {
                fmix64(*self as u64)
            }
        }
    )*};
}
key_hash_unsigned!(u8, u16, u32, u64, usize);

macro_rules! key_hash_signed {
    ($($t:ty),*) => {$(
        impl KeyHash for $t {
            #[inline]
            fn key_hash(&self) -> u64 {
                // Sign-extend first so the hash does not depend on the width
                // of the type the value happened to be stored in.
                fmix64(*self as i64 as u64)
            }
        }
    )*};
}
key_hash_signed!(i8, i16, i32, i64, isize);

impl KeyHash for bool {
    #[inline]
    fn key_hash(&self) -> u64 {
        fmix64(u64::from(*self))
    }
}

impl KeyHash for char {
    #[inline]
    fn key_hash(&self) -> u64 {
        fmix64(u64::from(u32::from(*self)))
    }
}

impl KeyHash for [u8] {
    #[inline]
    fn key_hash(&self) -> u64 {
        hash_bytes(self)
    }

    #[inline(always)]
    fn key_eq(&self, other: &Self) -> bool {
        short_bytes::eq(self, other)
    }
}

impl<const N: usize> KeyHash for [u8; N] {
    #[inline]
    fn key_hash(&self) -> u64 {
        hash_bytes(self)
    }
}

impl KeyHash for str {
    #[inline(always)]
    fn key_hash(&self) -> u64 {
        hash_bytes(self.as_bytes())
    }

    #[inline(always)]
    fn key_eq(&self, other: &Self) -> bool {
        short_bytes::eq(self.as_bytes(), other.as_bytes())
    }
}

impl KeyHash for String {
    const CLONE_ALLOCATES: bool = true;

    #[inline(always)]
    fn key_hash(&self) -> u64 {
        hash_bytes(self.as_bytes())
    }

    #[inline(always)]
    fn key_eq(&self, other: &Self) -> bool {
        short_bytes::eq(self.as_bytes(), other.as_bytes())
    }
}

/// As a `String`: the same text lands in the same key group whichever of
/// the two types holds it.
impl KeyHash for compact_str::CompactString {
    #[inline(always)]
    fn key_hash(&self) -> u64 {
        crate::compact_repr::hash(self)
    }

    #[inline(always)]
    fn key_eq(&self, other: &Self) -> bool {
        crate::compact_repr::eq(self, other)
    }
}

impl KeyHash for Vec<u8> {
    const CLONE_ALLOCATES: bool = true;

    #[inline]
    fn key_hash(&self) -> u64 {
        hash_bytes(self)
    }

    #[inline(always)]
    fn key_eq(&self, other: &Self) -> bool {
        short_bytes::eq(self, other)
    }
}

/// The hash of a pair whose parts hash to `a` and `b`: what `(A, B)`'s
/// [`KeyHash`] is, for a lookup by the parts without the pair.
#[inline]
pub fn pair_hash(a: u64, b: u64) -> u64 {
    fmix64(a ^ b.rotate_left(32))
}

impl<A: KeyHash, B: KeyHash> KeyHash for (A, B) {
    const CLONE_ALLOCATES: bool = A::CLONE_ALLOCATES || B::CLONE_ALLOCATES;

    #[inline]
    fn key_hash(&self) -> u64 {
        pair_hash(self.0.key_hash(), self.1.key_hash())
    }
}

impl<A: KeyHash, B: KeyHash, C: KeyHash> KeyHash for (A, B, C) {
    const CLONE_ALLOCATES: bool = A::CLONE_ALLOCATES || B::CLONE_ALLOCATES || C::CLONE_ALLOCATES;

    #[inline]
    fn key_hash(&self) -> u64 {
        let ab = fmix64(self.0.key_hash() ^ self.1.key_hash().rotate_left(32));
        fmix64(ab ^ self.2.key_hash().rotate_left(32))
    }
}

impl<T: KeyHash + ?Sized> KeyHash for &T {
    #[inline]
    fn key_hash(&self) -> u64 {
        (**self).key_hash()
    }
}

impl<T: KeyHash + ?Sized> KeyHash for &mut T {
    #[inline]
    fn key_hash(&self) -> u64 {
        (**self).key_hash()
    }
}

impl<T: KeyHash + ?Sized> KeyHash for Box<T> {
    #[inline]
    fn key_hash(&self) -> u64 {
        (**self).key_hash()
    }
}

/// Panics unless `1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM`.
#[inline]
fn check_max_parallelism(max_parallelism: u32) {
    assert!(
        (1..=UPPER_BOUND_MAX_PARALLELISM).contains(&max_parallelism),
        "max parallelism must be in 1..={UPPER_BOUND_MAX_PARALLELISM}, got {max_parallelism}"
    );
}

/// Panics unless `1 <= parallelism <= max_parallelism <= UPPER_BOUND`.
fn check_parallelism(max_parallelism: u32, parallelism: u32) {
    check_max_parallelism(max_parallelism);
    assert!(
        (1..=max_parallelism).contains(&parallelism),
        "parallelism must be in 1..={max_parallelism} (the max parallelism), got {parallelism}"
    );
}

/// The key group of a key whose [`KeyHash`] is `hash`: `hash % max_parallelism`.
///
/// # Panics
/// If `max_parallelism` is 0 (division by zero).
#[inline]
pub fn key_group_for_hash(hash: u64, max_parallelism: u32) -> u32 {
    (hash % u64::from(max_parallelism)) as u32
}

/// The key group of `key`: `key_group_for_hash(key.key_hash(), max_parallelism)`.
#[inline]
pub fn assign_to_key_group<K: KeyHash + ?Sized>(key: &K, max_parallelism: u32) -> u32 {
    key_group_for_hash(key.key_hash(), max_parallelism)
}

/// The subtask that owns `key_group`: `key_group * parallelism / max_parallelism`
/// (Flink's `computeOperatorIndexForKeyGroup`).
///
/// This is the inverse of [`KeyGroupRange::for_subtask`]: `subtask_for_key_group(m, p, g) == i`
/// exactly when `KeyGroupRange::for_subtask(m, p, i).contains(g)`.
///
/// # Panics
/// Unless `1 <= parallelism <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM`
/// and `key_group < max_parallelism`. Callers validate user input earlier;
/// a failure here is a bug.
#[inline]
pub fn subtask_for_key_group(max_parallelism: u32, parallelism: u32, key_group: u32) -> u32 {
    check_parallelism(max_parallelism, parallelism);
    assert!(
        key_group < max_parallelism,
        "key group {key_group} out of range for max parallelism {max_parallelism}"
    );
    (u64::from(key_group) * u64::from(parallelism) / u64::from(max_parallelism)) as u32
}

/// A half-open range `[start, end)` of key groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyGroupRange {
    start: u32,
    end: u32,
}

impl KeyGroupRange {
    /// The range `[start, end)`.
    ///
    /// # Panics
    /// If `start > end`.
    #[inline]
    pub fn new(start: u32, end: u32) -> Self {
        assert!(start <= end, "key group range start {start} > end {end}");
        Self { start, end }
    }

    /// The key groups owned by subtask `subtask_index` of an operator with
    /// `parallelism` subtasks, with Flink's formula
    /// (`computeKeyGroupRangeForOperatorIndex`): `start = ceil(i * maxP / P)`,
    /// `end = ceil((i + 1) * maxP / P)` (exclusive).
    ///
    /// The ranges of subtasks `0..P` are contiguous, disjoint, non-empty and
    /// cover `[0, max_parallelism)`; [`subtask_for_key_group`] is the inverse.
    ///
    /// # Panics
    /// Unless `1 <= parallelism <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM`
    /// and `subtask_index < parallelism`.
    pub fn for_subtask(max_parallelism: u32, parallelism: u32, subtask_index: u32) -> Self {
        check_parallelism(max_parallelism, parallelism);
        assert!(
            subtask_index < parallelism,
            "subtask index {subtask_index} out of range for parallelism {parallelism}"
        );
        let (m, p, i) = (
            u64::from(max_parallelism),
            u64::from(parallelism),
            u64::from(subtask_index),
        );
        let start = (i * m).div_ceil(p);
        let end = ((i + 1) * m).div_ceil(p);
        Self::new(start as u32, end as u32)
    }

    /// First key group in the range.
    #[inline]
    pub fn start(&self) -> u32 {
        self.start
    }

    /// One past the last key group in the range.
    #[inline]
    pub fn end(&self) -> u32 {
        self.end
    }

    /// Number of key groups in the range.
    #[inline]
    pub fn len(&self) -> u32 {
        self.end - self.start
    }

    /// Whether the range holds no key group.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Whether `key_group` lies in the range.
    #[inline]
    pub fn contains(&self, key_group: u32) -> bool {
        self.start <= key_group && key_group < self.end
    }

    /// The key groups of the range, in ascending order.
    #[inline]
    pub fn iter(&self) -> std::ops::Range<u32> {
        self.start..self.end
    }
}

impl IntoIterator for KeyGroupRange {
    type Item = u32;
    type IntoIter = std::ops::Range<u32>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Display for KeyGroupRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// Precomputed key → key group → subtask routing for one
/// `(max_parallelism, parallelism)` pair, for the per-record hot path.
///
/// It gives the same answers as [`key_group_for_hash`] and
/// [`subtask_for_key_group`] but replaces the division by a mask (when the
/// max parallelism is a power of two) and by a table lookup.
#[derive(Clone, Debug)]
pub struct KeyGroupAssigner {
    max_parallelism: u32,
    parallelism: u32,
    /// `max_parallelism - 1` when it is a power of two, so `hash & mask`
    /// equals `hash % max_parallelism`.
    mask: Option<u64>,
    /// Owning subtask of each key group; `u16` suffices because
    /// `parallelism <= UPPER_BOUND_MAX_PARALLELISM = 2^15`.
    subtask_of: Box<[u16]>,
}

impl KeyGroupAssigner {
    /// Builds the assigner.
    ///
    /// # Panics
    /// Unless `1 <= parallelism <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM`.
    pub fn new(max_parallelism: u32, parallelism: u32) -> Self {
        check_parallelism(max_parallelism, parallelism);
        let subtask_of = (0..max_parallelism)
            .map(|kg| subtask_for_key_group(max_parallelism, parallelism, kg) as u16)
            .collect();
        let mask = max_parallelism
            .is_power_of_two()
            .then(|| u64::from(max_parallelism) - 1);
        Self {
            max_parallelism,
            parallelism,
            mask,
            subtask_of,
        }
    }

    /// The max parallelism (number of key groups).
    #[inline]
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// The operator parallelism (number of subtasks).
    #[inline]
    pub fn parallelism(&self) -> u32 {
        self.parallelism
    }

    /// Key group of a key hash; equals [`key_group_for_hash`].
    #[inline]
    pub fn key_group(&self, hash: u64) -> u32 {
        match self.mask {
            Some(mask) => (hash & mask) as u32,
            None => (hash % u64::from(self.max_parallelism)) as u32,
        }
    }

    /// Subtask owning `key_group`; equals [`subtask_for_key_group`].
    ///
    /// # Panics
    /// If `key_group >= max_parallelism`.
    #[inline]
    pub fn subtask(&self, key_group: u32) -> u32 {
        u32::from(self.subtask_of[key_group as usize])
    }

    /// Subtask owning the key whose [`KeyHash`] is `hash`.
    #[inline]
    pub fn subtask_for_hash(&self, hash: u64) -> u32 {
        self.subtask(self.key_group(hash))
    }

    /// The routing table alone, when `max_parallelism` is a power of two
    /// (as Flink's default of 128 is): a loop over many records branches
    /// on this once, and its lookups then need neither the branch on the
    /// mask nor a bounds check.
    #[inline]
    pub fn masked(&self) -> Option<MaskedAssigner<'_>> {
        let mask = self.mask? as usize;
        Some(MaskedAssigner {
            subtask_of: &self.subtask_of[..=mask],
        })
    }

    /// Key group range owned by `subtask_index`; equals
    /// [`KeyGroupRange::for_subtask`].
    pub fn range_for_subtask(&self, subtask_index: u32) -> KeyGroupRange {
        KeyGroupRange::for_subtask(self.max_parallelism, self.parallelism, subtask_index)
    }
}

/// [`KeyGroupAssigner::subtask_for_hash`] for a power-of-two max
/// parallelism: the key group is the hash's low bits, and the table has
/// exactly one entry per key group.
#[derive(Clone, Copy, Debug)]
pub struct MaskedAssigner<'a> {
    /// One entry per key group; the length is a power of two.
    subtask_of: &'a [u16],
}

impl MaskedAssigner<'_> {
    /// Subtask owning the key whose [`KeyHash`] is `hash`; equals
    /// [`KeyGroupAssigner::subtask_for_hash`].
    #[inline(always)]
    pub fn subtask_for_hash(self, hash: u64) -> u32 {
        // `len - 1` is the mask: the index is below `len` (which is at
        // least 1), so the compiler drops the bounds check.
        let mask = self.subtask_of.len() - 1;
        u32::from(self.subtask_of[hash as usize & mask])
    }
}

#[cfg(test)]
mod tests;
