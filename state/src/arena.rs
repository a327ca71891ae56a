//! The arena behind keyed state: a fixed number of fixed-size slots stored
//! in large chunks, shared copy-on-write with frozen views of it.
//!
//! A [`SlotArena`] is allocated chunk by chunk when it is created (never per
//! entry) and its slots never move while it lives: a table that grows
//! builds a new arena and moves its entries once.
//!
//! # Freezing
//!
//! Keeping the slots in reference-counted chunks rather than one block is
//! what lets a checkpoint freeze the state while the worker keeps writing.
//! [`SlotArena::freeze`] returns a [`FrozenArena`] that shares every chunk
//! with the live arena: it costs one reference-count increment per chunk and
//! copies no slot. Afterwards the first [`SlotArena::get_mut`] into a chunk
//! that is still shared copies that chunk once, so the frozen view keeps the
//! old contents; later writes to the copy are direct. ([`SlotArena::fill`]
//! gives a shared chunk a new one instead.) Several views may be alive at
//! once, each seeing its own freeze time; a chunk is copied at most once per
//! freeze. Once every view of a chunk has been dropped it is written in
//! place again, without a copy. [`SlotArena::cow_copies`] counts the chunks
//! copied so far, for checkpoint statistics.
//!
//! # What a write costs
//!
//! A write checks one flag, [`SlotArena::writes_are_direct`]: set while the
//! arena has slots and every chunk is known to be exclusive to it. A freeze
//! clears it along with a per-chunk "owned" mark. While it is clear, a write
//! goes out of line: it copies its chunk if a view still holds it (or just
//! marks it owned if not), and sets the flag again once every chunk is owned
//! or no view is alive any more (the views hold a shared token, so the arena
//! sees that without visiting them). With no freeze outstanding, a write
//! therefore costs one predictable branch on a field the caller has in
//! cache, and the out-of-line path gets no pointer into the arena's owner,
//! so a caller's loop keeps the owner's fields in registers. The one
//! `unsafe` block turns the shared chunk into `&mut` once the flag or the
//! owned mark says no other reference to it exists (`Rc::get_mut` would
//! read the reference counts, in the chunk's first cache line, on every
//! write).
//!
//! Chunks are counted with [`Rc`], so arenas and their frozen views are
//! `!Send`: keyed state and its snapshots stay on their worker's thread.

use std::cell::Cell;
use std::rc::Rc;

/// Slots per chunk (a power of two): 512 slots, 12 KiB for the 24-byte
/// entries of a `ValueState<u64, (u64, u64)>`. Every chunk has exactly
/// this many slots (a small arena's one chunk too), so indexing inside a
/// chunk needs no bounds check.
pub const CHUNK_SHIFT: u32 = 9;
/// Slots per chunk.
pub const CHUNK_LEN: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_LEN - 1;

/// One chunk's slots, shared by the live arena and its frozen views.
type Chunk<T> = Rc<[T; CHUNK_LEN]>;

/// A chunk of `fill`s, built in place on the heap (a chunk can be larger
/// than a stack should hold).
fn new_chunk<T: Copy>(fill: T) -> Chunk<T> {
    let slots: Rc<[T]> = std::iter::repeat_n(fill, CHUNK_LEN).collect();
    slots
        .try_into()
        .unwrap_or_else(|_| unreachable!("the chunk has CHUNK_LEN slots"))
}

/// A private copy of `chunk`, copied heap to heap.
fn copy_chunk<T: Copy>(chunk: &[T; CHUNK_LEN]) -> Chunk<T> {
    let slots: Rc<[T]> = Rc::from(&chunk[..]);
    slots
        .try_into()
        .unwrap_or_else(|_| unreachable!("the copy has CHUNK_LEN slots"))
}

/// A fixed number of `T` slots in chunks of [`CHUNK_LEN`].
pub struct SlotArena<T: Copy> {
    chunks: Vec<Chunk<T>>,
    len: usize,
    /// On the heap, so that the out-of-line copy path gets no pointer into
    /// the arena's owner and a caller's loop can keep the owner's fields in
    /// registers across it.
    cow: Box<Cow>,
    /// True while the arena has slots and every chunk is exclusive to it:
    /// writes then go straight to the slots. The one flag a write checks.
    direct: Cell<bool>,
}

/// Copy-on-write bookkeeping of a [`SlotArena`].
struct Cow {
    /// Per chunk: known to be exclusive to this arena. Cleared by a
    /// freeze, set again by the first write into the chunk.
    owned: Vec<Cell<bool>>,
    /// Chunks whose `owned` is false.
    unowned: Cell<usize>,
    /// Held by every frozen view of this arena: a count of one means no
    /// view is alive, so no chunk is shared any more.
    views: Rc<()>,
    /// Chunks copied because a frozen view still shared them.
    copies: u64,
}

impl Cow {
    /// Bookkeeping for `chunks` chunks, all exclusive.
    fn new(chunks: usize) -> Box<Self> {
        Box::new(Self {
            owned: (0..chunks).map(|_| Cell::new(true)).collect(),
            unowned: Cell::new(0),
            views: Rc::new(()),
            copies: 0,
        })
    }

    /// Marks every chunk owned (or, with `owned == false`, shared).
    fn mark_all(&self, owned: bool) {
        self.owned.iter().for_each(|o| o.set(owned));
        self.unowned.set(if owned { 0 } else { self.owned.len() });
    }

    /// Makes chunk `c` of `chunks` exclusive to the arena, copying it if a
    /// frozen view still holds it. Once no view is alive, marks every chunk
    /// exclusive without looking at them one by one. Returns whether every
    /// chunk is now exclusive.
    #[cold]
    #[inline(never)]
    fn own_chunk<T: Copy>(&mut self, chunks: &mut [Chunk<T>], c: usize) -> bool {
        if Rc::strong_count(&self.views) == 1 {
            // Every view is gone, and with them every other holder of a
            // chunk: all chunks are exclusive again.
            self.mark_all(true);
        } else if !self.owned[c].get() {
            let chunk = &mut chunks[c];
            if Rc::get_mut(chunk).is_none() {
                *chunk = copy_chunk(chunk);
                self.copies += 1;
            }
            self.owned[c].set(true);
            self.unowned.set(self.unowned.get() - 1);
        }
        self.unowned.get() == 0
    }
}

impl<T: Copy> SlotArena<T> {
    /// An arena of no slots (allocates no chunk, only its small
    /// copy-on-write bookkeeping).
    pub fn empty() -> Self {
        Self {
            chunks: Vec::new(),
            len: 0,
            cow: Cow::new(0),
            direct: Cell::new(false),
        }
    }

    /// `len` slots, each set to `fill`, in `len / CHUNK_LEN` chunks
    /// (rounded up; the slots past `len` in the last chunk are unused).
    pub fn new(len: usize, fill: T) -> Self {
        let chunks: Vec<Chunk<T>> = (0..len.div_ceil(CHUNK_LEN))
            .map(|_| new_chunk(fill))
            .collect();
        Self {
            cow: Cow::new(chunks.len()),
            direct: Cell::new(len > 0),
            chunks,
            len,
        }
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

    /// True if the arena has slots and no chunk may be shared with a frozen
    /// view, so [`get_mut`](Self::get_mut) writes in place without a copy.
    /// One load: callers on a hot path can branch on it once and keep
    /// their rare cases (an empty table, an outstanding freeze) out of line.
    #[inline(always)]
    pub fn writes_are_direct(&self) -> bool {
        self.direct.get()
    }

    /// Slot `i`, mutably. If a frozen view still shares the slot's chunk,
    /// the chunk is copied first (once: later writes go to the copy).
    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.len, "slot {i} of {}", self.len);
        let c = i >> CHUNK_SHIFT;
        if !self.direct.get() && self.cow.own_chunk(&mut self.chunks, c) {
            // `own_chunk` gets no pointer into `self` (only the chunks and
            // the boxed bookkeeping), so a caller's loop can keep its
            // fields in registers; the flag is updated here instead.
            self.direct.set(self.len > 0);
        }
        let chunk = &self.chunks[c];
        // SAFETY: no reference to chunk `c`'s slots exists but through
        // `self`, so turning `Rc`'s shared pointer into `&mut` is sound for
        // as long as `&mut self` is borrowed. Chunk `c` is marked owned
        // here: either `direct` is set, which happens only while every
        // chunk is owned (`new`, `fill`, or `own_chunk` finding none
        // unowned), or `own_chunk` just marked it. A chunk is marked owned
        // only while this arena holds its sole `Rc` (a new chunk, a fresh
        // copy, one `Rc::get_mut` found unique, or every chunk once the
        // `views` token shows that no frozen view, the only other holder
        // of chunks, is alive). `freeze`, the only code that clones a
        // chunk's `Rc`, first clears every mark and `direct`; no `Weak` is
        // ever made, and `&self` accessors hand out only borrows, which
        // `&mut self` rules out here.
        let slots = unsafe { &mut *Rc::as_ptr(chunk).cast_mut() };
        &mut slots[i & CHUNK_MASK]
    }

    /// The chunks, in slot order, each cut to the arena's `len`.
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> + '_ {
        chunk_slices(&self.chunks, self.len)
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Every slot, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks().flat_map(|c| c.iter())
    }

    /// Sets every slot to `fill`. A chunk still shared with a frozen view
    /// is replaced by a new one rather than copied and then overwritten
    /// (and is not counted in [`cow_copies`](Self::cow_copies)).
    pub fn fill(&mut self, fill: T) {
        for chunk in &mut self.chunks {
            match Rc::get_mut(chunk) {
                Some(slots) => slots.fill(fill),
                None => *chunk = new_chunk(fill),
            }
        }
        self.cow.mark_all(true);
        self.direct.set(self.len > 0);
    }

    /// A read-only view of every slot as it is now, unaffected by later
    /// writes to this arena. Shares every chunk (one reference-count
    /// increment per chunk, no slot copied); the first later write into a
    /// chunk still shared copies it.
    pub fn freeze(&self) -> FrozenArena<T> {
        self.cow.mark_all(false);
        self.direct.set(false);
        FrozenArena {
            chunks: self.chunks.clone(),
            len: self.len,
            _alive: Rc::clone(&self.cow.views),
        }
    }

    /// Chunks copied so far because a write found them shared with a
    /// frozen view (each chunk is copied at most once per freeze).
    pub fn cow_copies(&self) -> u64 {
        self.cow.copies
    }

    /// Chunks currently shared with at least one frozen view.
    pub fn shared_chunks(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| Rc::strong_count(c) > 1)
            .count()
    }
}

/// `chunks` as slices, each cut to `len` slots in all.
fn chunk_slices<T: Copy>(chunks: &[Chunk<T>], len: usize) -> impl Iterator<Item = &[T]> + '_ {
    chunks
        .iter()
        .enumerate()
        .map(move |(i, c)| &c[..(len - i * CHUNK_LEN).min(CHUNK_LEN)])
}

/// The slots of a [`SlotArena`] as they were at [`SlotArena::freeze`]:
/// read-only, and unchanged by anything the live arena does afterwards.
///
/// Dropping it (and its clones) releases its chunks: the live arena then
/// writes in place again, also to the chunks it had not copied yet.
/// Cloning it shares the chunks too.
#[derive(Clone)]
pub struct FrozenArena<T: Copy> {
    chunks: Vec<Chunk<T>>,
    len: usize,
    /// A clone of the live arena's `views`: tells it a view is alive.
    _alive: Rc<()>,
}

impl<T: Copy> FrozenArena<T> {
    /// Number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the view has no slot.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`.
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        assert!(i < self.len, "slot {i} of a frozen arena of {}", self.len);
        &self.chunks[i >> CHUNK_SHIFT][i & CHUNK_MASK]
    }

    /// The chunks, in slot order, each cut to the view's `len`.
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> + '_ {
        chunk_slices(&self.chunks, self.len)
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Every slot, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks().flat_map(|c| c.iter())
    }
}

#[cfg(test)]
mod tests;
