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
use std::ffi::{c_int, c_long, c_void};

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

// mimalloc's option calls (declared here: the `libmimalloc-sys` crate
// declares them only behind a feature that pulls another crate in).
unsafe extern "C" {
    #[cfg(test)]
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
}

/// `mi_option_purge_delay` in mimalloc 3's `mi_option_t`: milliseconds
/// between a page's last block being freed and its memory being given
/// back to the system. Checked against the bundled default by a test.
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// How long freed pages stay committed: longer than the checkpoint
/// intervals jobs use, so that the chunks a checkpoint's copy-on-write
/// allocates (freed when its snapshot is written) are the same committed
/// memory at the next checkpoint. With mimalloc's 1 s default the pages
/// were given back just before a 1 s interval's next checkpoint, and each
/// copy then took its pages' faults: ~170 per worker per checkpoint in
/// W3, stalls of 0.1-0.5 ms in the worker's passes (bench/RESULTS.md,
/// "W3's tail: the writer's slices, copy-on-write's page faults and the
/// control thread").
/// Memory freed for good (a table shrunk by TTL cleanup, a dropped
/// state) goes back this much later; large tables are mappings of their
/// own and are unmapped at once.
const PURGE_DELAY_MS: c_long = 10_000;

/// Sets mimalloc's purge delay to [`PURGE_DELAY_MS`], unless the user
/// set one (`MIMALLOC_PURGE_DELAY`, which mimalloc reads itself). Call
/// once, early in `main`.
pub fn keep_freed_pages() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: FFI call with an option of mimalloc's enum and a value
        // in its range; options may be set at any time.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) }
    }
}

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

    /// The option's index is mimalloc 3's purge delay: its bundled default
    /// is read there before it is set, and the set value after.
    #[test]
    fn the_purge_delay_is_set_where_mimalloc_reads_it() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: FFI call with an option of mimalloc's enum.
        let before = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(before, 1000, "mimalloc 3's default purge delay");
        keep_freed_pages();
        // SAFETY: as above.
        let after = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(after, PURGE_DELAY_MS);
    }

    #[test]
    fn the_plain_path_is_taken_up_to_word_alignment() {
        assert!(plain_suffices(1));
        assert!(plain_suffices(8));
        assert!(!plain_suffices(16), "a 24-byte block is 8-aligned only");
    }
}
