//! The binary's global allocator: mimalloc, entered by its plain
//! `mi_malloc` / `mi_zalloc` / `mi_realloc` wherever the alignment asked
//! for is one that mimalloc gives every block of that size anyway, and by
//! its `_aligned` entry points only for the rest.
//!
//! The `mimalloc` crate's `MiMalloc` calls `mi_malloc_aligned` for every
//! allocation, alignment 1 included; that entry point checks the alignment
//! and looks the block up its own way before it reaches the same free
//! list, about 40 instructions per small allocation against mimalloc's
//! plain path's fewer (measured: bench/RESULTS.md, "The allocator's plain
//! path"). Records that own memory (a `String` key, an SQL row's values)
//! allocate several times each, so this is per-record cost.
//!
//! Every mimalloc block is a whole number of machine words from a page
//! start aligned to at least 16 bytes, so every block is word-aligned
//! ([`WORD`]): an alignment of at most that needs nothing more. (Not 16,
//! as glibc's malloc gives: a 24-byte block is 8-aligned only. Larger
//! alignments take the `_aligned` entry points, which use a plain block
//! when it happens to be aligned.)

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment of every mimalloc block: its machine word (blocks are
/// whole words, laid out from a 16-byte aligned page start).
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc, entered by its plain path where that suffices (see the
/// [module doc](self)).
pub struct WeirAlloc;

/// Whether a block from mimalloc's plain path is aligned to `align`.
#[inline(always)]
fn plain_suffices(align: usize) -> bool {
    align <= WORD
}

// SAFETY: every method hands mimalloc a layout's size and (where it asks)
// alignment, as `GlobalAlloc` requires; the plain entry points are used
// only where their blocks meet the layout's alignment (`plain_suffices`),
// and every block, however obtained, is freed with `mi_free`, which takes
// blocks of all of mimalloc's entry points.
unsafe impl GlobalAlloc for WeirAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain_suffices(layout.align()) {
            // SAFETY: FFI call with a size; mimalloc returns null or a
            // block of at least that size, aligned as the layout asks.
            unsafe { mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: FFI call with the layout's size and power-of-two
            // alignment.
            unsafe { mi_malloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain_suffices(layout.align()) {
            // SAFETY: as in `alloc`, zeroed.
            unsafe { mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: as in `alloc`, zeroed.
            unsafe { mi_zalloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from one of this allocator's methods, i.e.
        // from mimalloc, and is freed once (the caller's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain_suffices(layout.align()) {
            // SAFETY: `ptr` is a live block of mimalloc's (the caller's
            // contract); the new block is aligned as the layout asks.
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
        } else {
            // SAFETY: as above, with the alignment passed on.
            unsafe { mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size and alignment the plain path takes, and the aligned
    /// path's, give blocks aligned as asked that keep their contents
    /// through a realloc.
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_bytes() {
        let a = WeirAlloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [
                1usize, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 33, 100, 1000, 70_000,
            ] {
                let layout = Layout::from_size_align(size, align).expect("a layout");
                // SAFETY: a non-zero size; the block is written within
                // its size, reallocated with its layout and freed once.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    for i in 0..size {
                        p.add(i).write(i as u8);
                    }
                    let grown = size * 3;
                    let q = a.realloc(p, layout, grown);
                    assert!(!q.is_null());
                    assert_eq!(q as usize % align, 0, "realloc to {grown}, align {align}");
                    for i in 0..size {
                        assert_eq!(q.add(i).read(), i as u8);
                    }
                    a.dealloc(q, Layout::from_size_align(grown, align).expect("a layout"));
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| z.add(i).read() == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }

    #[test]
    fn the_plain_path_is_taken_up_to_word_alignment() {
        assert!(plain_suffices(1));
        assert!(plain_suffices(8));
        assert!(!plain_suffices(16), "a 24-byte block is 8-aligned only");
    }
}
