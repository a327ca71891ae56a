//! The arena behind keyed state: a fixed number of slots stored in large
//! chunks, shared copy-on-write with frozen views of it.
//!
//! A slot holds a `T: Clone`. For a plain-data `T` (no destructor: the
//! integers and tuples of them that W1 keys by) a slot is the whole entry,
//! chunks may come from one huge-page slab, and a copy-on-write copy is a
//! memcpy. A `T` that owns memory (a `String` key, a user struct with a
//! `Vec`) keeps its bytes on the heap behind the slot: its chunks are
//! ordinary heap chunks that run the destructors when dropped, and a
//! copy-on-write copy clones each slot of the chunk.
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
//! A view can also let go of some chunks before it is dropped
//! ([`FrozenArena::release_chunks`]): the snapshot writer releases each
//! part of a state as soon as it has serialized it, so the live arena's
//! writes into those chunks stop copying while the writer still works on
//! the rest. Without it a checkpoint costs a copy of every chunk written
//! until its whole state is written, and when checkpoints come back to back
//! (a job whose CPU is shared with other programs) nearly every record's
//! write copied a chunk.
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
//! `unsafe` write path turns the shared chunk into `&mut` once the flag or the
//! owned mark says no other reference to it exists (checking the chunk's
//! reference count instead would load it on every write).
//!
//! Chunks are counted with [`Rc`], so arenas and their frozen views are
//! `!Send`: keyed state and its snapshots stay on their worker's thread.
//!
//! # Dirty slots (incremental checkpoints)
//!
//! An arena can also keep one bit per slot: the slots written since the
//! last freeze. A freeze hands the bits to its view and starts a cleared
//! set, so an incremental checkpoint writes only the slots its view marks.
//! Chunk granularity (the "owned" marks above) would cost nothing more,
//! but 1% of 10 M keys changed at random touches ~95% of 512-slot chunks,
//! so an incremental checkpoint would write almost everything.
//!
//! Tracking is off until asked for, so that a job without incremental
//! checkpoints pays nothing: a bit store on every write cost W1 3.7% of
//! its instructions (`bench/RESULTS.md`). A writer that wants deltas calls
//! [`FrozenArena::request_tracking`] on a view it writes in full; the
//! arena's next freeze turns tracking on, and from then on the arena keeps
//! [`SlotArena::writes_are_direct`] false, so every write takes the
//! out-of-line path that copy-on-write already has, which sets the bit.
//! A view says whether its bits are complete ([`FrozenArena::is_tracked`]):
//! only a view of a freeze after tracking began is. A new arena (and
//! [`SlotArena::fill`]) marks every slot. Each freeze gets a process-wide
//! unique id and says which freeze came before it on this arena, so a
//! writer can tell whether a view's bits follow the view it wrote last.
//!
//! # Where the chunks live
//!
//! A small arena allocates each chunk on the heap. A large one (at least
//! [`SLAB_MIN_BYTES`] of slots, such as the table a restore of millions
//! of keys builds) takes all its chunks from one anonymous mapping, a
//! slab, advised to use transparent huge pages: creating it then costs a
//! few hundred page faults instead of one per 4 KiB page (which was half
//! of a restore's time), and random lookups into it miss the TLB far less.
//! Each chunk still has its own reference count, so copy-on-write works
//! chunk by chunk as above; a chunk copied away from a slab goes to the
//! heap, and once no view holds its old slots any more their whole pages
//! are given back to the system (so a slab whose chunks were mostly
//! copied does not keep twice the memory). The slab is unmapped when its
//! last chunk is dropped. Where huge pages are off, the advice is ignored
//! and the slab is ordinary memory.

use std::cell::Cell;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids of freezes, unique in the process (0: no freeze yet).
static FREEZE_IDS: AtomicU64 = AtomicU64::new(1);

/// A dirty bitmap of `len` slots: every bit set (`all`) or none. It has a
/// word for every 64 slots of whole chunks (`CHUNK_LEN` is a multiple of
/// 64), so any slot of an existing chunk has its word: `get_mut` relies on
/// that to skip the bounds check. Bits past `len` stay clear.
fn dirty_bits(len: usize, all: bool) -> Vec<u64> {
    let words = len.div_ceil(CHUNK_LEN) * (CHUNK_LEN / 64);
    let mut bits = vec![0; words];
    if all {
        bits[..len / 64].fill(u64::MAX);
    }
    if all && !len.is_multiple_of(64) {
        bits[len / 64] = (1u64 << (len % 64)) - 1;
    }
    bits
}

/// Slots per chunk (a power of two): 512 slots, 12 KiB for the 24-byte
/// entries of a `ValueState<u64, (u64, u64)>`. Every chunk has exactly
/// this many slots (a small arena's one chunk too), so indexing inside a
/// chunk needs no bounds check.
pub const CHUNK_SHIFT: u32 = 9;
/// Slots per chunk.
pub const CHUNK_LEN: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_LEN - 1;

/// Arenas with at least this many bytes of slots take their chunks from
/// one slab (see "Where the chunks live"): 4 MiB, two huge pages.
pub const SLAB_MIN_BYTES: usize = 4 << 20;

/// One chunk's slots, shared by the live arena and its frozen views: a
/// pointer to the slots and the reference-counted owner of their memory.
struct Chunk<T: Clone> {
    /// The chunk's `CHUNK_LEN` slots, all initialized; valid for as long
    /// as `backing` is alive.
    slots: NonNull<[T; CHUNK_LEN]>,
    /// Counts the holders of this chunk (the arena and its frozen views);
    /// no `Weak` is ever made.
    backing: Rc<Backing<T>>,
}

/// What keeps a chunk's memory alive.
enum Backing<T: Clone> {
    /// A heap allocation of its own (a `Box<[T; CHUNK_LEN]>` turned into
    /// a raw pointer, freed on drop).
    Heap(NonNull<[T; CHUNK_LEN]>),
    /// A share of a slab, which lives until its last chunk is dropped:
    /// the chunk-sized bytes at `offset` of it.
    Slab { slab: Rc<Slab>, offset: usize },
}

impl<T: Clone> Drop for Backing<T> {
    fn drop(&mut self) {
        match self {
            Backing::Heap(slots) => {
                // SAFETY: `slots` came from `Box::into_raw` in
                // `Chunk::from_box` and is freed only here, once, when the
                // chunk's last holder drops its `Rc`.
                drop(unsafe { Box::from_raw(slots.as_ptr()) });
            }
            Backing::Slab { slab, offset } => {
                slab.release(*offset, std::mem::size_of::<[T; CHUNK_LEN]>());
            }
        }
    }
}

/// One anonymous mapping holding the chunks of a large arena. It is
/// unmapped when its last chunk is dropped; a chunk dropped before that
/// (copied away by a write after a freeze, and its view gone) gives its
/// whole pages back to the system at once, so a slab whose chunks were
/// mostly copied does not keep their memory.
struct Slab {
    map: memmap2::MmapRaw,
    /// Bytes given back so far (for tests).
    released: Cell<usize>,
    /// Set when the arena holding every remaining chunk is dropped: the
    /// whole mapping goes at once, so its chunks give nothing back one by
    /// one (that was one `madvise` per chunk for nothing).
    retiring: Cell<bool>,
}

impl Slab {
    /// Gives back the pages lying wholly inside bytes `offset..offset +
    /// len`, the memory of a chunk nothing refers to any more.
    fn release(&self, offset: usize, len: usize) {
        let page = page_size();
        let start = offset.next_multiple_of(page);
        let end = (offset + len) / page * page;
        if cfg!(miri) || self.retiring.get() || end <= start {
            return;
        }
        // SAFETY: bytes `offset..offset + len` belonged to one chunk, whose
        // last holder is being dropped, so nothing reads or writes them
        // again; the range is cut to whole pages inside them, so no other
        // chunk's bytes are touched. Afterwards the pages read as zeros,
        // which nobody does.
        let given_back = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
        if given_back.is_ok() {
            self.released.set(self.released.get() + (end - start));
        }
    }
}

/// The system's page size (4 KiB if it cannot be read).
fn page_size() -> usize {
    use std::sync::OnceLock;
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: `sysconf` only reads a system constant.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(size)
            .ok()
            .filter(|s| s.is_power_of_two())
            .unwrap_or(4096)
    })
}

impl<T: Clone> Chunk<T> {
    /// A heap chunk of `fill`s, built in place (a chunk can be larger than
    /// a stack should hold).
    fn heap(fill: T) -> Self {
        let slots: Box<[T]> = std::iter::repeat_n(fill, CHUNK_LEN).collect();
        let slots: Box<[T; CHUNK_LEN]> = slots
            .try_into()
            .unwrap_or_else(|_| unreachable!("the chunk has CHUNK_LEN slots"));
        Self::from_box(slots)
    }

    fn from_box(slots: Box<[T; CHUNK_LEN]>) -> Self {
        let slots = NonNull::from(Box::leak(slots));
        Self {
            slots,
            backing: Rc::new(Backing::Heap(slots)),
        }
    }

    /// A private heap copy of this chunk's slots, copied heap to heap.
    fn copy(&self) -> Self {
        let slots: Box<[T]> = Box::from(&self[..]);
        Self::from_box(
            slots
                .try_into()
                .unwrap_or_else(|_| unreachable!("the copy has CHUNK_LEN slots")),
        )
    }

    /// `count` chunks of `fill`s in one slab, or `None` if the mapping
    /// cannot be made (the caller then uses heap chunks).
    fn slab(count: usize, fill: T) -> Option<Vec<Self>> {
        // A slab gives its pages back without running destructors: slots
        // that own memory (a `String`) live in heap chunks, which drop them.
        if cfg!(miri)
            || std::mem::needs_drop::<T>()
            || std::mem::align_of::<[T; CHUNK_LEN]>() > 4096
        {
            return None;
        }
        let bytes = count.checked_mul(std::mem::size_of::<[T; CHUNK_LEN]>())?;
        let map: memmap2::MmapRaw = memmap2::MmapOptions::new()
            .len(bytes)
            .map_anon()
            .ok()?
            .into();
        // A hint: without transparent huge pages the slab is still correct.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let base = map.as_mut_ptr().cast::<[T; CHUNK_LEN]>();
        let slab = Rc::new(Slab {
            map,
            released: Cell::new(0),
            retiring: Cell::new(false),
        });
        let chunk_bytes = std::mem::size_of::<[T; CHUNK_LEN]>();
        let chunks = (0..count)
            .map(|c| {
                // SAFETY: chunk `c` is the `c`-th of `count` chunk-sized,
                // suitably aligned (the mapping is page-aligned, and the
                // alignment was checked above) pieces of the mapping, which
                // `slab` keeps alive for as long as this chunk's backing;
                // nothing else points into it. Writing every slot before
                // the chunk is handed out initializes it.
                let slots = unsafe {
                    let slots = base.add(c);
                    for i in 0..CHUNK_LEN {
                        slots.cast::<T>().add(i).write(fill.clone());
                    }
                    NonNull::new_unchecked(slots)
                };
                Self {
                    slots,
                    backing: Rc::new(Backing::Slab {
                        slab: Rc::clone(&slab),
                        offset: c * chunk_bytes,
                    }),
                }
            })
            .collect();
        Some(chunks)
    }

    /// True if no frozen view holds this chunk.
    #[inline]
    fn is_unique(&self) -> bool {
        Rc::strong_count(&self.backing) == 1
    }

    /// The slots, mutably.
    ///
    /// # Safety
    ///
    /// No other reference to this chunk's slots may exist while the
    /// returned borrow is alive: the caller holds the chunk's only handle
    /// (or knows that every other holder is gone) and has it borrowed
    /// mutably.
    #[inline(always)]
    unsafe fn slots_mut(&mut self) -> &mut [T; CHUNK_LEN] {
        // SAFETY: valid and initialized as long as `backing` is alive
        // (held by `self`); exclusive by the caller's contract.
        unsafe { self.slots.as_mut() }
    }
}

impl<T: Clone> Clone for Chunk<T> {
    fn clone(&self) -> Self {
        Self {
            slots: self.slots,
            backing: Rc::clone(&self.backing),
        }
    }
}

impl<T: Clone> std::ops::Deref for Chunk<T> {
    type Target = [T; CHUNK_LEN];

    #[inline(always)]
    fn deref(&self) -> &[T; CHUNK_LEN] {
        // SAFETY: the slots are initialized and stay allocated while
        // `backing`, held by `self`, is alive. A mutable borrow of them is
        // only ever made through `slots_mut` while the chunk is exclusive
        // to the live arena and that arena is borrowed mutably, so no
        // shared borrow from `&self` can overlap it.
        unsafe { self.slots.as_ref() }
    }
}

/// `count` chunks of `fill`s: from one slab if they make a large arena,
/// else each on the heap.
fn new_chunks<T: Clone>(count: usize, fill: T) -> Vec<Chunk<T>> {
    let bytes = count.saturating_mul(std::mem::size_of::<[T; CHUNK_LEN]>());
    if bytes >= SLAB_MIN_BYTES {
        if let Some(chunks) = Chunk::slab(count, fill.clone()) {
            return chunks;
        }
    }
    (0..count).map(|_| Chunk::heap(fill.clone())).collect()
}

/// A fixed number of `T` slots in chunks of [`CHUNK_LEN`].
pub struct SlotArena<T: Clone> {
    chunks: Vec<Chunk<T>>,
    len: usize,
    /// On the heap, so that the out-of-line copy path gets no pointer into
    /// the arena's owner and a caller's loop can keep the owner's fields in
    /// registers across it.
    cow: Box<Cow>,
    /// True while the arena has slots and every chunk is exclusive to it:
    /// writes then go straight to the slots. The one flag a write checks.
    direct: Cell<bool>,
    /// The id of this arena's last freeze (0: none yet).
    last_freeze: Cell<u64>,
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
    /// Dirty slots are tracked (see "Dirty slots"): writes then all take
    /// [`Cow::own_chunk`], which marks them.
    track: Cell<bool>,
    /// Set by a view's [`FrozenArena::request_tracking`]; the next freeze
    /// turns tracking on.
    requested: Rc<Cell<bool>>,
    /// One bit per slot: written since the last freeze, while tracking. A
    /// `Cell` so that `freeze(&self)` can take it.
    dirty: Cell<Vec<u64>>,
}

impl Cow {
    /// Bookkeeping for `chunks` chunks of `len` slots, all exclusive, not
    /// tracking.
    fn new(chunks: usize, len: usize) -> Box<Self> {
        Box::new(Self {
            owned: (0..chunks).map(|_| Cell::new(true)).collect(),
            unowned: Cell::new(0),
            views: Rc::new(()),
            copies: 0,
            track: Cell::new(false),
            requested: Rc::new(Cell::new(false)),
            dirty: Cell::new(dirty_bits(len, true)),
        })
    }

    /// Marks slot `i` written, if tracking.
    #[inline]
    fn mark(&mut self, i: usize) {
        if self.track.get() {
            self.dirty.get_mut()[i >> 6] |= 1 << (i & 63);
        }
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
    ///
    /// Also marks slot `i` written when tracking, and then returns false:
    /// writes must keep coming here.
    #[cold]
    #[inline(never)]
    fn own_chunk<T: Clone>(&mut self, chunks: &mut [Chunk<T>], c: usize, i: usize) -> bool {
        self.mark(i);
        if Rc::strong_count(&self.views) == 1 {
            // Every view is gone, and with them every other holder of a
            // chunk: all chunks are exclusive again.
            self.mark_all(true);
        } else if !self.owned[c].get() {
            let chunk = &mut chunks[c];
            if !chunk.is_unique() {
                *chunk = chunk.copy();
                self.copies += 1;
            }
            self.owned[c].set(true);
            self.unowned.set(self.unowned.get() - 1);
        }
        self.unowned.get() == 0 && !self.track.get()
    }
}

impl<T: Clone> SlotArena<T> {
    /// An arena of no slots (allocates no chunk, only its small
    /// copy-on-write bookkeeping).
    pub fn empty() -> Self {
        Self {
            chunks: Vec::new(),
            len: 0,
            cow: Cow::new(0, 0),
            direct: Cell::new(false),
            last_freeze: Cell::new(0),
        }
    }

    /// `len` slots, each set to `fill`, in `len / CHUNK_LEN` chunks
    /// (rounded up; the slots past `len` in the last chunk are unused).
    pub fn new(len: usize, fill: T) -> Self {
        let chunks = new_chunks(len.div_ceil(CHUNK_LEN), fill);
        Self {
            cow: Cow::new(chunks.len(), len),
            direct: Cell::new(len > 0),
            last_freeze: Cell::new(0),
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
        if !self.direct.get() && self.cow.own_chunk(&mut self.chunks, c, i) {
            // `own_chunk` gets no pointer into `self` (only the chunks and
            // the boxed bookkeeping), so a caller's loop can keep its
            // fields in registers; the flag is updated here instead.
            self.direct.set(self.len > 0);
        }
        // SAFETY: no reference to chunk `c`'s slots exists but through
        // `self`, so borrowing them mutably is sound for as long as
        // `&mut self` is borrowed. Chunk `c` is marked owned
        // here: either `direct` is set, which happens only while every
        // chunk is owned (`new`, `fill`, or `own_chunk` finding none
        // unowned), or `own_chunk` just marked it. A chunk is marked owned
        // only while this arena holds its sole handle (a new chunk, a fresh
        // copy, one `is_unique` found, or every chunk once the `views`
        // token shows that no frozen view, the only other holder of
        // chunks, is alive). `freeze`, the only code that clones a chunk's
        // handle, first clears every mark and `direct`; no `Weak` is ever
        // made, and `&self` accessors hand out only borrows, which
        // `&mut self` rules out here.
        let slots = unsafe { self.chunks[c].slots_mut() };
        &mut slots[i & CHUNK_MASK]
    }

    /// Counts slot `i` as written without writing it (for a caller whose
    /// own bookkeeping beside the slot changed, such as a table's tag):
    /// see "Dirty slots".
    #[inline]
    pub fn mark_dirty(&mut self, i: usize) {
        self.cow.mark(i);
    }

    /// Counts every slot as written.
    pub fn mark_all_dirty(&mut self) {
        self.cow.dirty.set(dirty_bits(self.len, true));
    }

    /// The chunks, in slot order, each cut to the arena's `len`.
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> + '_ {
        let len = self.len;
        (self.chunks.iter().enumerate()).map(move |(i, c)| chunk_slice(c, i, len))
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
            if chunk.is_unique() {
                // SAFETY: this arena holds the chunk's only handle and is
                // borrowed mutably, so no other reference to its slots
                // exists.
                unsafe { chunk.slots_mut() }.fill(fill.clone());
            } else {
                *chunk = Chunk::heap(fill.clone());
            }
        }
        self.cow.mark_all(true);
        self.direct.set(self.len > 0 && !self.cow.track.get());
        self.cow.dirty.set(dirty_bits(self.len, true));
    }

    /// A read-only view of every slot as it is now, unaffected by later
    /// writes to this arena. Shares every chunk (one reference-count
    /// increment per chunk, no slot copied); the first later write into a
    /// chunk still shared copies it.
    ///
    /// The view also takes the slots written since the previous freeze
    /// (see "Dirty slots"; complete only if the arena was tracking them);
    /// the arena starts a cleared set, and starts tracking if a view asked.
    pub fn freeze(&self) -> FrozenArena<T> {
        self.cow.mark_all(false);
        self.direct.set(false);
        let id = FREEZE_IDS.fetch_add(1, Ordering::Relaxed);
        let tracked = self.cow.track.get();
        if self.cow.requested.get() {
            // From here on every write is marked (`direct` stays false).
            self.cow.track.set(true);
        }
        FrozenArena {
            chunks: self.chunks.iter().cloned().map(Some).collect(),
            len: self.len,
            _alive: Rc::clone(&self.cow.views),
            dirty: Rc::new(self.cow.dirty.replace(dirty_bits(self.len, false))),
            tracked,
            requested: Rc::clone(&self.cow.requested),
            freeze: FreezeIds {
                id,
                since: self.last_freeze.replace(id),
            },
        }
    }

    /// Tracks dirty slots from now on (tests; a writer asks through a
    /// view, [`FrozenArena::request_tracking`]). The slots written before
    /// count as dirty.
    pub fn track_dirty_slots(&mut self) {
        self.cow.track.set(true);
        self.direct.set(false);
        self.mark_all_dirty();
    }

    /// Chunks copied so far because a write found them shared with a
    /// frozen view (each chunk is copied at most once per freeze).
    pub fn cow_copies(&self) -> u64 {
        self.cow.copies
    }

    /// Chunks whose slots lie in a slab (see "Where the chunks live"); the
    /// others are on the heap.
    pub fn slab_chunks(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| matches!(*c.backing, Backing::Slab { .. }))
            .count()
    }

    /// Bytes of this arena's slabs given back to the system because their
    /// chunks were copied away and no frozen view holds them any more (see
    /// "Where the chunks live").
    pub fn slab_bytes_released(&self) -> usize {
        self.slab().map_or(0, |slab| slab.released.get())
    }

    /// The slab this arena's slab chunks come from (only [`new`](Self::new)
    /// makes one, so there is at most one).
    fn slab(&self) -> Option<&Rc<Slab>> {
        self.chunks.iter().find_map(|c| match &*c.backing {
            Backing::Slab { slab, .. } => Some(slab),
            Backing::Heap(_) => None,
        })
    }

    /// Chunks currently shared with at least one frozen view.
    pub fn shared_chunks(&self) -> usize {
        self.chunks.iter().filter(|c| !c.is_unique()).count()
    }
}

impl<T: Clone> Drop for SlotArena<T> {
    fn drop(&mut self) {
        // If this arena holds every chunk left in its slab, and no view
        // shares any of them, the slab is unmapped with the last of them:
        // tell it not to give their pages back one chunk at a time first.
        if let Some(slab) = self.slab() {
            let mut held = 0;
            for c in &self.chunks {
                if let Backing::Slab { .. } = &*c.backing {
                    if !c.is_unique() {
                        return;
                    }
                    held += 1;
                }
            }
            if Rc::strong_count(slab) == held {
                slab.retiring.set(true);
            }
        }
    }
}

/// Chunk `i` of an arena of `len` slots, cut to the slots it holds.
fn chunk_slice<T: Clone>(chunk: &Chunk<T>, i: usize, len: usize) -> &[T] {
    &chunk[..(len - i * CHUNK_LEN).min(CHUNK_LEN)]
}

/// The slots of a [`SlotArena`] as they were at [`SlotArena::freeze`]:
/// read-only, and unchanged by anything the live arena does afterwards.
///
/// Dropping it (and its clones) releases its chunks: the live arena then
/// writes in place again, also to the chunks it had not copied yet.
/// Cloning it shares the chunks too.
#[derive(Clone)]
pub struct FrozenArena<T: Clone> {
    /// `None`: released ([`FrozenArena::release_chunks`]).
    chunks: Vec<Option<Chunk<T>>>,
    len: usize,
    /// A clone of the live arena's `views`: tells it a view is alive.
    _alive: Rc<()>,
    /// The slots written between the previous freeze and this one
    /// (complete only if `tracked`).
    dirty: Rc<Vec<u64>>,
    /// The arena tracked dirty slots from the previous freeze to this one.
    tracked: bool,
    /// The arena's request flag: see [`FrozenArena::request_tracking`].
    requested: Rc<Cell<bool>>,
    freeze: FreezeIds,
}

/// Which freeze a [`FrozenArena`] is, and which freeze of the same arena
/// came before it: its dirty slots are the slots written in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreezeIds {
    /// This freeze's id, unique in the process.
    pub id: u64,
    /// The id of the arena's previous freeze; 0 if there was none (the
    /// dirty slots are then every slot written since the arena was made,
    /// which a new arena counts as all of them).
    pub since: u64,
}

impl<T: Clone> FrozenArena<T> {
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
    /// If `i >= self.len()`, or if the view released the slot's chunk.
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        assert!(i < self.len, "slot {i} of a frozen arena of {}", self.len);
        &self.held(i >> CHUNK_SHIFT)[i & CHUNK_MASK]
    }

    /// Chunk `c`, which the view must still hold.
    fn held(&self, c: usize) -> &Chunk<T> {
        self.chunks[c]
            .as_ref()
            .unwrap_or_else(|| panic!("chunk {c} of a frozen arena read after its release"))
    }

    /// The chunks, in slot order, each cut to the view's `len`; a chunk the
    /// view released is an empty slice.
    pub fn chunks(&self) -> impl Iterator<Item = &[T]> + '_ {
        let len = self.len;
        (self.chunks.iter().enumerate())
            .map(move |(i, c)| c.as_ref().map_or(&[][..], |c| chunk_slice(c, i, len)))
    }

    /// Whether the view still holds chunk `c` (it was not released).
    pub fn holds_chunk(&self, c: usize) -> bool {
        self.chunks.get(c).is_some_and(Option::is_some)
    }

    /// Lets go of the chunks `chunks` (those past the end are ignored):
    /// the live arena then writes into them without copying them, as if
    /// this view had been dropped, while the view keeps its other chunks.
    /// For a reader that is done with them (the snapshot writer, after
    /// serializing them); reading their slots afterwards panics, and
    /// [`chunks`](Self::chunks) yields them empty.
    pub fn release_chunks(&mut self, chunks: std::ops::Range<usize>) {
        let end = chunks.end.min(self.chunks.len());
        for c in &mut self.chunks[chunks.start.min(end)..end] {
            *c = None;
        }
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Every slot, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks().flat_map(|c| c.iter())
    }

    /// The slots written between the previous freeze and this one: bit
    /// `i % 64` of word `i / 64` for slot `i` (see "Dirty slots").
    pub fn dirty_words(&self) -> &[u64] {
        &self.dirty
    }

    /// Whether [`dirty_words`](Self::dirty_words) is complete: the arena
    /// tracked writes from the previous freeze to this one.
    pub fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// Asks the arena to track dirty slots from its next freeze on (its
    /// writes then all take the out-of-line path; see "Dirty slots").
    pub fn request_tracking(&self) {
        self.requested.set(true);
    }

    /// Which freeze this view is.
    pub fn freeze_ids(&self) -> FreezeIds {
        self.freeze
    }
}

#[cfg(test)]
mod tests;
