//! The chunked arena that owns the entries of keyed state.
//!
//! Entries are fixed-size `Copy` values addressed by a `u32` index. They are
//! stored in chunks of [`CHUNK_LEN`] entries, each allocated once with its
//! full capacity, so an entry never moves once written: growing the arena
//! adds a chunk instead of reallocating. That stability is what lets a later
//! snapshot freeze whole chunks copy-on-write, and lets indexes store plain
//! `u32` slots. Removed slots go on a free list (a `Vec<u32>`) and are reused
//! by the next push; there is no allocation per entry.

/// log2 of [`CHUNK_LEN`].
pub const CHUNK_SHIFT: u32 = 12;

/// Entries per chunk (4096): large enough to amortise the allocation and the
/// chunk-table lookup, small enough that a snapshot copying one chunk on
/// write copies little.
pub const CHUNK_LEN: usize = 1 << CHUNK_SHIFT;

/// Mask of the in-chunk offset bits of an index.
const OFFSET_MASK: u32 = (CHUNK_LEN as u32) - 1;

/// Largest number of slots an arena can hold. `u32::MAX` itself is never a
/// valid index, so users may encode "index + 1" in a `u32`.
pub const MAX_SLOTS: u32 = u32::MAX;

/// An append-only arena of `T` values in fixed-capacity chunks.
///
/// Not `Clone` on purpose: cloning a chunk's `Vec` would shrink its capacity
/// to its length and the next push into it would reallocate, moving entries.
pub struct Arena<T: Copy> {
    /// Every chunk has capacity exactly [`CHUNK_LEN`]; all but the last are
    /// full. Pushing within that capacity never reallocates, so entries keep
    /// their address without any `unsafe` uninitialised-memory handling.
    chunks: Vec<Vec<T>>,
    /// Freed slots, reused LIFO (the most recently freed slot is the most
    /// likely to still be in cache).
    free: Vec<u32>,
    /// One bit per written slot: set while the slot is live. Lets snapshots
    /// and iteration skip freed slots without consulting an index, and
    /// catches double frees.
    live: Vec<u64>,
    /// Number of live entries.
    len: u32,
}

impl<T: Copy> Default for Arena<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> Arena<T> {
    /// An empty arena; allocates nothing until the first push.
    pub fn new() -> Self {
        Self {
            chunks: Vec::new(),
            free: Vec::new(),
            live: Vec::new(),
            len: 0,
        }
    }

    /// Splits an index into (chunk, offset).
    #[inline]
    fn locate(index: u32) -> (usize, usize) {
        (
            (index >> CHUNK_SHIFT) as usize,
            (index & OFFSET_MASK) as usize,
        )
    }

    /// Number of slots ever written (live or free): the high-water mark.
    #[inline]
    fn written(&self) -> u32 {
        match self.chunks.last() {
            None => 0,
            Some(last) => ((self.chunks.len() - 1) * CHUNK_LEN + last.len()) as u32,
        }
    }

    /// Stores `value` and returns its index, reusing a freed slot if any.
    ///
    /// # Panics
    /// If the arena already holds [`MAX_SLOTS`] slots.
    #[inline]
    pub fn push(&mut self, value: T) -> u32 {
        let index = if let Some(index) = self.free.pop() {
            let (c, o) = Self::locate(index);
            self.chunks[c][o] = value;
            index
        } else {
            self.push_new_slot(value)
        };
        self.live[(index >> 6) as usize] |= 1 << (index & 63);
        self.len += 1;
        index
    }

    /// Appends a never-used slot, adding a chunk when the last one is full.
    #[inline]
    fn push_new_slot(&mut self, value: T) -> u32 {
        let index = self.written();
        assert!(index < MAX_SLOTS, "arena is full ({MAX_SLOTS} slots)");
        let last_full = match self.chunks.last() {
            None => true,
            Some(c) => c.len() == CHUNK_LEN,
        };
        if last_full {
            self.chunks.push(Vec::with_capacity(CHUNK_LEN));
        }
        let chunk = self.chunks.last_mut().expect("a chunk was just ensured");
        debug_assert!(chunk.len() < chunk.capacity(), "push must not reallocate");
        chunk.push(value);
        if (index as usize) >> 6 >= self.live.len() {
            self.live.push(0);
        }
        index
    }

    /// Whether `index` is a live slot (written and not freed).
    #[inline]
    pub fn is_live(&self, index: u32) -> bool {
        self.live
            .get((index >> 6) as usize)
            .is_some_and(|w| w & (1 << (index & 63)) != 0)
    }

    /// The value in slot `index`.
    ///
    /// # Panics
    /// If `index` was never written. Reading a freed slot is a logic error
    /// caught by a debug assertion; release builds return the stale value.
    #[inline]
    pub fn get(&self, index: u32) -> &T {
        debug_assert!(self.is_live(index), "arena slot {index} is not live");
        let (c, o) = Self::locate(index);
        &self.chunks[c][o]
    }

    /// The value in slot `index`, mutably. Same panics as [`Arena::get`].
    #[inline]
    pub fn get_mut(&mut self, index: u32) -> &mut T {
        debug_assert!(self.is_live(index), "arena slot {index} is not live");
        let (c, o) = Self::locate(index);
        &mut self.chunks[c][o]
    }

    /// Frees slot `index` for reuse by a later push. The old value stays in
    /// place until then.
    ///
    /// # Panics
    /// If `index` is not live (never written or already freed).
    #[inline]
    pub fn free(&mut self, index: u32) {
        assert!(
            self.is_live(index),
            "freeing arena slot {index} that is not live"
        );
        self.live[(index >> 6) as usize] &= !(1 << (index & 63));
        self.free.push(index);
        self.len -= 1;
    }

    /// Number of live entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the arena holds no live entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of allocated chunks.
    #[inline]
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Number of slots the allocated chunks can hold without allocating.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.chunks.len() * CHUNK_LEN
    }

    /// The written part of every chunk, in index order: chunk `c` holds
    /// indices `c * CHUNK_LEN ..`. Includes freed slots (with stale values);
    /// use [`Arena::is_live`] or [`Arena::iter`] to skip them.
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> + '_ {
        self.chunks.iter().map(|c| c.as_slice())
    }

    /// Live entries with their indices, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        self.chunks
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| (i as u32, v))
            .filter(move |(i, _)| self.is_live(*i))
    }

    /// Removes every entry and releases the chunks.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.free.clear();
        self.live.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_get_and_update() {
        let mut a = Arena::new();
        assert!(a.is_empty());
        let i = a.push(10u64);
        let j = a.push(20u64);
        assert_eq!((i, j), (0, 1));
        assert_eq!(*a.get(i), 10);
        *a.get_mut(j) += 5;
        assert_eq!(*a.get(j), 25);
        assert_eq!(a.len(), 2);
        assert_eq!(a.chunk_count(), 1);
        assert_eq!(a.capacity(), CHUNK_LEN);
    }

    #[test]
    fn entries_never_move_when_growing() {
        let mut a = Arena::new();
        let first = a.push(7u32);
        let addr = a.get(first) as *const u32;
        let chunk0 = a.chunks().next().unwrap().as_ptr();
        for v in 0..(3 * CHUNK_LEN as u32) {
            a.push(v);
        }
        assert_eq!(a.chunk_count(), 4);
        assert_eq!(a.get(first) as *const u32, addr);
        assert_eq!(a.chunks().next().unwrap().as_ptr(), chunk0);
        assert_eq!(*a.get(first), 7);
        assert_eq!(*a.get(CHUNK_LEN as u32), CHUNK_LEN as u32 - 1);
        let lens: Vec<usize> = a.chunks().map(<[u32]>::len).collect();
        assert_eq!(lens, vec![CHUNK_LEN, CHUNK_LEN, CHUNK_LEN, 1]);
    }

    #[test]
    fn freed_slots_are_reused_without_growing() {
        let mut a = Arena::new();
        let idx: Vec<u32> = (0..100u32).map(|v| a.push(v)).collect();
        for &i in &idx[10..60] {
            a.free(i);
        }
        assert_eq!(a.len(), 50);
        assert!(!a.is_live(10) && a.is_live(9) && a.is_live(60));
        let mut reused: Vec<u32> = (0..50).map(|v| a.push(1000 + v)).collect();
        reused.sort_unstable();
        assert_eq!(reused, idx[10..60].to_vec());
        assert_eq!(a.len(), 100);
        assert_eq!(a.chunks().map(<[u32]>::len).sum::<usize>(), 100);
        assert_eq!(a.push(5), 100, "free list empty: next slot is fresh");
    }

    #[test]
    fn iter_yields_only_live_entries() {
        let mut a = Arena::new();
        for v in 0..(CHUNK_LEN as u32 + 10) {
            a.push(v);
        }
        for i in (0..CHUNK_LEN as u32 + 10).filter(|i| i % 3 != 0) {
            a.free(i);
        }
        let got: Vec<(u32, u32)> = a.iter().map(|(i, v)| (i, *v)).collect();
        let want: Vec<(u32, u32)> = (0..CHUNK_LEN as u32 + 10)
            .filter(|i| i % 3 == 0)
            .map(|i| (i, i))
            .collect();
        assert_eq!(got, want);
        assert_eq!(a.len(), want.len());
    }

    #[test]
    #[should_panic(expected = "not live")]
    fn double_free_panics() {
        let mut a = Arena::new();
        let i = a.push(1u8);
        a.free(i);
        a.free(i);
    }

    #[test]
    fn clear_resets() {
        let mut a = Arena::new();
        for v in 0..5000u32 {
            a.push(v);
        }
        a.clear();
        assert_eq!((a.len(), a.chunk_count(), a.capacity()), (0, 0, 0));
        assert!(!a.is_live(0));
        assert_eq!(a.push(9), 0);
        assert_eq!(*a.get(0), 9);
    }
}
