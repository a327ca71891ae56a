//! The arena behind keyed state: a fixed number of fixed-size slots stored
//! in large chunks.
//!
//! A [`SlotArena`] is allocated chunk by chunk when it is created (never per
//! entry) and its slots never move while it lives: a table that grows
//! builds a new arena and moves its entries once. Keeping the slots in
//! chunks rather than one block is what lets a snapshot later freeze the
//! state copy-on-write, chunk by chunk, while the worker keeps writing.

/// Slots per chunk (a power of two): 512 slots, 12 KiB for the 24-byte
/// entries of a `ValueState<u64, (u64, u64)>`. Every chunk has exactly
/// this many slots (a small arena's one chunk too), so indexing inside a
/// chunk needs no bounds check.
pub const CHUNK_SHIFT: u32 = 9;
/// Slots per chunk.
pub const CHUNK_LEN: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_LEN - 1;

/// A fixed number of `T` slots in chunks of [`CHUNK_LEN`].
pub struct SlotArena<T: Copy> {
    chunks: Vec<Box<[T; CHUNK_LEN]>>,
    len: usize,
}

impl<T: Copy> SlotArena<T> {
    /// An arena of no slots (allocates nothing).
    pub fn empty() -> Self {
        Self {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// `len` slots, each set to `fill`, in `len / CHUNK_LEN` chunks
    /// (rounded up; the slots past `len` in the last chunk are unused).
    pub fn new(len: usize, fill: T) -> Self {
        let chunks = (0..len.div_ceil(CHUNK_LEN))
            .map(|_| {
                vec![fill; CHUNK_LEN]
                    .into_boxed_slice()
                    .try_into()
                    .unwrap_or_else(|_| unreachable!("the vector has CHUNK_LEN slots"))
            })
            .collect();
        Self { chunks, len }
    }

    /// Number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the arena has no slot.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> &T {
        debug_assert!(i < self.len, "slot {i} of {}", self.len);
        &self.chunks[i >> CHUNK_SHIFT][i & CHUNK_MASK]
    }

    /// Slot `i`, mutably.
    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.len, "slot {i} of {}", self.len);
        &mut self.chunks[i >> CHUNK_SHIFT][i & CHUNK_MASK]
    }

    /// The chunks, in slot order, each cut to the arena's `len`.
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> + '_ {
        let len = self.len;
        self.chunks
            .iter()
            .enumerate()
            .map(move |(i, c)| &c[..(len - i * CHUNK_LEN).min(CHUNK_LEN)])
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Every slot, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks().flat_map(|c| c.iter())
    }

    /// Sets every slot to `fill`.
    pub fn fill(&mut self, fill: T) {
        for c in &mut self.chunks {
            c.fill(fill);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_span_chunks() {
        let mut a = SlotArena::new(CHUNK_LEN * 2 + 3, 0u32);
        assert_eq!(a.len(), CHUNK_LEN * 2 + 3);
        assert_eq!(a.chunk_count(), 3);
        for i in 0..a.len() {
            *a.get_mut(i) = i as u32;
        }
        assert!(a.iter().enumerate().all(|(i, v)| *v == i as u32));
        let sizes: Vec<usize> = a.chunks().map(<[u32]>::len).collect();
        assert_eq!(sizes, vec![CHUNK_LEN, CHUNK_LEN, 3]);
        a.fill(7);
        assert!(a.iter().all(|v| *v == 7));
    }

    #[test]
    fn small_arena_is_one_short_chunk() {
        let a = SlotArena::new(16, 1u8);
        assert_eq!(a.chunk_count(), 1);
        assert_eq!(a.chunks().next().unwrap().len(), 16);
        assert!(SlotArena::new(0, 0u8).is_empty());
    }
}
