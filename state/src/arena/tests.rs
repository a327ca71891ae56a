//! Unit tests of [`SlotArena`](super::SlotArena) and its frozen views.

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

/// An arena of `chunks` full chunks whose slot `i` holds `i`.
fn numbered(chunks: usize) -> SlotArena<u32> {
    let mut a = SlotArena::new(chunks * CHUNK_LEN, 0u32);
    for i in 0..a.len() {
        *a.get_mut(i) = i as u32;
    }
    a
}

#[test]
fn freeze_shares_every_chunk_and_copies_nothing() {
    let a = numbered(3);
    let f = a.freeze();
    assert_eq!(a.shared_chunks(), 3);
    assert_eq!(a.cow_copies(), 0);
    assert!(!a.writes_are_direct());
    assert_eq!(
        (f.len(), f.chunk_count(), f.is_empty()),
        (a.len(), 3, false)
    );
    assert!(f.iter().enumerate().all(|(i, v)| *v == i as u32));
    for (fc, ac) in f.chunks().zip(a.chunks()) {
        assert!(std::ptr::eq(fc, ac), "a frozen chunk is the live chunk");
    }
}

#[test]
fn first_write_copies_the_chunk_once_and_the_view_keeps_the_old_slots() {
    let mut a = numbered(3);
    let f = a.freeze();
    *a.get_mut(CHUNK_LEN + 5) = 1_000_000;
    assert_eq!(a.cow_copies(), 1);
    assert_eq!(a.shared_chunks(), 2);
    // More writes to the copied chunk are direct.
    for i in CHUNK_LEN..2 * CHUNK_LEN {
        *a.get_mut(i) += 1;
    }
    assert_eq!(a.cow_copies(), 1);
    assert_eq!(*a.get(CHUNK_LEN + 5), 1_000_001);
    assert_eq!(*a.get(CHUNK_LEN + 6), (CHUNK_LEN + 7) as u32);
    // The view still has the slots of freeze time, all of them.
    assert!(f.iter().enumerate().all(|(i, v)| *v == i as u32));
    assert_eq!(*f.get(CHUNK_LEN + 5), (CHUNK_LEN + 5) as u32);
    // Untouched chunks are still shared, not copied.
    assert!(std::ptr::eq(
        f.chunks().next().unwrap(),
        a.chunks().next().unwrap()
    ));
}

#[test]
fn every_chunk_is_copied_at_most_once_per_freeze() {
    let mut a = numbered(4);
    let f = a.freeze();
    for _ in 0..3 {
        for i in 0..a.len() {
            *a.get_mut(i) += 1;
        }
    }
    assert_eq!(a.cow_copies(), 4);
    assert_eq!(a.shared_chunks(), 0);
    assert!(a.writes_are_direct(), "all chunks owned again");
    assert!(f.iter().enumerate().all(|(i, v)| *v == i as u32));
    assert!(a.iter().enumerate().all(|(i, v)| *v == i as u32 + 3));
    // A second freeze: each chunk once more.
    let g = a.freeze();
    for i in (0..a.len()).rev() {
        *a.get_mut(i) = 0;
    }
    assert_eq!(a.cow_copies(), 8);
    assert!(g.iter().enumerate().all(|(i, v)| *v == i as u32 + 3));
    assert!(f.iter().enumerate().all(|(i, v)| *v == i as u32));
}

#[test]
fn dropping_the_view_ends_the_sharing_without_copies() {
    let mut a = numbered(3);
    let f = a.freeze();
    *a.get_mut(0) = 7;
    assert_eq!(a.cow_copies(), 1);
    drop(f);
    assert_eq!(a.shared_chunks(), 0);
    // The next write sees no view alive: no copy, and direct writes again.
    *a.get_mut(2 * CHUNK_LEN) = 9;
    assert_eq!(a.cow_copies(), 1);
    assert!(a.writes_are_direct());
    *a.get_mut(CHUNK_LEN) = 8;
    assert_eq!(a.cow_copies(), 1);
    assert_eq!(
        (*a.get(0), *a.get(CHUNK_LEN), *a.get(2 * CHUNK_LEN)),
        (7, 8, 9)
    );
}

#[test]
fn released_chunks_are_written_in_place_and_the_others_still_copied() {
    let mut a = numbered(4);
    let mut f = a.freeze();
    f.release_chunks(1..3);
    assert_eq!(a.shared_chunks(), 2);
    assert!((0..4)
        .map(|c| f.holds_chunk(c))
        .eq([true, false, false, true]));
    // The released chunks: no copy, also with the view alive.
    for i in CHUNK_LEN..3 * CHUNK_LEN {
        *a.get_mut(i) += 10;
    }
    assert_eq!(a.cow_copies(), 0);
    // The held ones: copied once, and the view keeps their old slots.
    *a.get_mut(5) = 0;
    *a.get_mut(3 * CHUNK_LEN) = 0;
    assert_eq!(a.cow_copies(), 2);
    assert_eq!(
        (*f.get(5), *f.get(3 * CHUNK_LEN)),
        (5, 3 * CHUNK_LEN as u32)
    );
    // Released chunks read empty through `chunks`; past the end is ignored.
    let lens: Vec<usize> = f.chunks().map(<[u32]>::len).collect();
    assert_eq!(lens, [CHUNK_LEN, 0, 0, CHUNK_LEN]);
    f.release_chunks(3..9);
    assert!(!f.holds_chunk(3) && f.holds_chunk(0));
    assert_eq!(*f.get(5), 5);
    assert!((0..4 * CHUNK_LEN).all(|i| {
        let want = match i {
            _ if i == 5 || i == 3 * CHUNK_LEN => 0,
            _ if (CHUNK_LEN..3 * CHUNK_LEN).contains(&i) => i as u32 + 10,
            _ => i as u32,
        };
        *a.get(i) == want
    }));
}

#[test]
#[should_panic(expected = "chunk 1 of a frozen arena read after its release")]
fn reading_a_released_chunk_panics() {
    let a = numbered(2);
    let mut f = a.freeze();
    f.release_chunks(1..2);
    let _ = f.get(CHUNK_LEN);
}

#[test]
fn several_views_each_keep_their_own_time() {
    let mut a = numbered(2);
    let f1 = a.freeze();
    *a.get_mut(3) = 100;
    let f2 = a.freeze();
    *a.get_mut(3) = 200;
    *a.get_mut(CHUNK_LEN) = 300;
    let f3 = f2.clone();
    drop(f2);
    assert_eq!((*f1.get(3), *f3.get(3), *a.get(3)), (3, 100, 200));
    assert_eq!(
        (*f1.get(CHUNK_LEN), *f3.get(CHUNK_LEN), *a.get(CHUNK_LEN)),
        (CHUNK_LEN as u32, CHUNK_LEN as u32, 300)
    );
    // Chunk 0: copied once per freeze; chunk 1: once, for the last freeze.
    assert_eq!(a.cow_copies(), 3);
    drop(f1);
    // The clone of the second view still holds chunk 1's old copy.
    *a.get_mut(CHUNK_LEN + 1) = 1;
    assert_eq!(*f3.get(CHUNK_LEN + 1), CHUNK_LEN as u32 + 1);
    assert_eq!(
        a.cow_copies(),
        3,
        "chunk 1 was already copied for that view"
    );
}

#[test]
fn fill_replaces_shared_chunks_instead_of_writing_them() {
    let mut a = numbered(2);
    let f = a.freeze();
    a.fill(5);
    assert!(a.iter().all(|v| *v == 5));
    assert!(f.iter().enumerate().all(|(i, v)| *v == i as u32));
    assert_eq!((a.cow_copies(), a.shared_chunks()), (0, 0));
    assert!(a.writes_are_direct());
}

#[test]
fn frozen_view_of_a_short_arena_is_cut_to_its_length() {
    let mut a = SlotArena::new(CHUNK_LEN + 10, 1u64);
    let f = a.freeze();
    *a.get_mut(CHUNK_LEN + 9) = 2;
    let sizes: Vec<usize> = f.chunks().map(<[u64]>::len).collect();
    assert_eq!(sizes, vec![CHUNK_LEN, 10]);
    assert_eq!(f.iter().count(), CHUNK_LEN + 10);
    assert!(f.iter().all(|v| *v == 1));
    assert_eq!(*f.get(CHUNK_LEN + 9), 1);
}

#[test]
#[should_panic(expected = "slot 10 of a frozen arena of 10")]
fn frozen_get_past_the_end_panics() {
    let a = SlotArena::new(10, 0u8);
    let _ = a.freeze().get(10);
}

#[test]
fn empty_arena_freezes_to_an_empty_view() {
    let a: SlotArena<u16> = SlotArena::empty();
    assert!(
        !a.writes_are_direct(),
        "an empty arena has nothing to write"
    );
    let f = a.freeze();
    assert!(f.is_empty() && f.iter().next().is_none());
    assert_eq!((f.len(), f.chunk_count()), (0, 0));
}

/// Chunks of `u64` slots that make an arena just large enough for a slab.
fn slab_sized_chunks() -> usize {
    SLAB_MIN_BYTES.div_ceil(CHUNK_LEN * std::mem::size_of::<u64>())
}

#[test]
#[cfg_attr(miri, ignore = "millions of slots are too slow to interpret")]
fn small_arenas_are_on_the_heap_and_large_ones_in_a_slab() {
    let chunks = slab_sized_chunks();
    let small = SlotArena::new((chunks - 1) * CHUNK_LEN, 0u64);
    assert_eq!(small.slab_chunks(), 0);
    let large = SlotArena::new(chunks * CHUNK_LEN - 3, 5u64);
    if cfg!(miri) {
        assert_eq!(large.slab_chunks(), 0, "miri cannot map memory");
    } else {
        assert_eq!(large.slab_chunks(), chunks);
    }
    assert_eq!(large.len(), chunks * CHUNK_LEN - 3);
    assert!(large.iter().all(|v| *v == 5), "every slab slot is filled");
}

#[test]
#[cfg_attr(miri, ignore = "millions of slots are too slow to interpret")]
fn slab_chunks_are_copied_on_write_and_outlive_their_arena_in_a_view() {
    let chunks = slab_sized_chunks();
    let mut a = SlotArena::new(chunks * CHUNK_LEN, 0u64);
    for i in 0..a.len() {
        *a.get_mut(i) = i as u64;
    }
    let f = a.freeze();
    assert_eq!(a.shared_chunks(), chunks);
    // A write copies its chunk out of the slab onto the heap; the view
    // keeps the slab's slots.
    *a.get_mut(3 * CHUNK_LEN + 1) = u64::MAX;
    assert_eq!(a.cow_copies(), 1);
    let slab = a.slab_chunks();
    assert!(slab == chunks - 1 || cfg!(miri), "{slab} of {chunks}");
    assert_eq!(*f.get(3 * CHUNK_LEN + 1), (3 * CHUNK_LEN + 1) as u64);
    assert_eq!(*a.get(3 * CHUNK_LEN + 1), u64::MAX);
    // `fill` writes unshared slab chunks in place and replaces shared ones.
    let g = a.freeze();
    drop(f);
    a.fill(9);
    assert!(a.iter().all(|v| *v == 9));
    assert_eq!(*g.get(3 * CHUNK_LEN + 1), u64::MAX);
    // The view keeps the slab alive after the arena is gone.
    drop(a);
    assert!(g.iter().enumerate().all(|(i, v)| *v
        == if i == 3 * CHUNK_LEN + 1 {
            u64::MAX
        } else {
            i as u64
        }));
}

#[test]
#[cfg_attr(miri, ignore = "miri cannot map memory")]
fn a_slab_gives_back_the_pages_of_chunks_copied_away() {
    let chunks = slab_sized_chunks();
    let mut a = SlotArena::new(chunks * CHUNK_LEN, 1u64);
    let f = a.freeze();
    // Every chunk but the first is written, so copied to the heap.
    for c in 1..chunks {
        *a.get_mut(c * CHUNK_LEN) = 2;
    }
    assert_eq!(a.slab_chunks(), 1);
    assert_eq!(a.slab_bytes_released(), 0, "the view still holds them");
    drop(f);
    // The view held the last handles of the copied chunks: their pages
    // (whole pages only) are given back; the first chunk stays.
    let chunk_bytes = CHUNK_LEN * std::mem::size_of::<u64>();
    let released = a.slab_bytes_released();
    assert!(released > 0);
    assert!(released <= (chunks - 1) * chunk_bytes);
    assert!(released + 2 * super::page_size() * chunks >= (chunks - 1) * chunk_bytes);
    assert!(a.iter().take(CHUNK_LEN).all(|v| *v == 1));
    assert!((1..chunks).all(|c| *a.get(c * CHUNK_LEN) == 2 && *a.get(c * CHUNK_LEN + 1) == 1));
}

/// The slots whose bits a frozen view's dirty words set.
fn dirty_slots(view: &FrozenArena<u32>) -> Vec<usize> {
    let words = view.dirty_words();
    (0..words.len() * 64)
        .filter(|&i| words[i / 64] & (1 << (i % 64)) != 0)
        .collect()
}

/// The `unsafe` unchecked bit store in `get_mut`: at every length around
/// word and chunk boundaries, the bitmap has a word for every slot of
/// every chunk, writing any slot (the last one of the last chunk too)
/// sets exactly its bit, bits past the length stay clear, and every
/// operation that replaces the bitmap (`fill`, `mark_all_dirty`, `freeze`)
/// keeps its size.
#[test]
fn dirty_bits_mark_exactly_the_slots_written_at_every_length() {
    let lens: [usize; 14] = [
        1, 2, 63, 64, 65, 127, 128, 511, 512, 513, 1023, 1024, 1025, 1600,
    ];
    for len in lens {
        let words = len.div_ceil(CHUNK_LEN) * (CHUNK_LEN / 64);
        let mut a = SlotArena::new(len, 0u32);
        a.track_dirty_slots();
        // A new arena counts every slot as written, none past its length.
        let view = a.freeze();
        assert!(view.is_tracked());
        assert_eq!(view.dirty_words().len(), words, "len {len}");
        assert_eq!(
            dirty_slots(&view),
            (0..len).collect::<Vec<_>>(),
            "len {len}"
        );
        // Nothing written since: no bit.
        assert!(dirty_slots(&a.freeze()).is_empty(), "len {len}");
        // Every third slot, the first and the last, while a view shares
        // the chunks (copy-on-write) and again directly.
        let mut written: Vec<usize> = (0..len).step_by(3).chain([0, len - 1]).collect();
        written.sort_unstable();
        written.dedup();
        let _shared = a.freeze();
        for &i in &written {
            *a.get_mut(i) += 1;
        }
        let view = a.freeze();
        assert_eq!(view.dirty_words().len(), words, "len {len}");
        assert_eq!(dirty_slots(&view), written, "len {len}");
        drop(view);
        for &i in written.iter().rev() {
            *a.get_mut(i) += 1;
        }
        assert_eq!(dirty_slots(&a.freeze()), written, "len {len} (direct)");
        // `fill` and `mark_all_dirty` mark every slot and keep the size.
        a.fill(7);
        let view = a.freeze();
        assert_eq!(view.dirty_words().len(), words);
        assert_eq!(dirty_slots(&view), (0..len).collect::<Vec<_>>());
        a.mark_all_dirty();
        *a.get_mut(len - 1) = 1;
        let view = a.freeze();
        assert_eq!(view.dirty_words().len(), words);
        assert_eq!(dirty_slots(&view), (0..len).collect::<Vec<_>>());
        a.mark_dirty(len / 2);
        assert_eq!(dirty_slots(&a.freeze()), vec![len / 2]);
    }
}

/// Tracking is off until a view asks: writes stay direct and mark
/// nothing; the freeze after the request starts it (that view's bits are
/// not complete yet), and the view after that has exactly the slots
/// written, through copy-on-write or not.
#[test]
fn dirty_tracking_starts_at_the_freeze_after_a_request_and_costs_nothing_before() {
    let mut a = SlotArena::new(2000, 0u32);
    let first = a.freeze();
    assert!(!first.is_tracked());
    drop(first);
    *a.get_mut(5) = 1;
    assert!(a.writes_are_direct(), "untracked writes stay direct");
    let asked = a.freeze();
    assert!(!asked.is_tracked());
    asked.request_tracking();
    *a.get_mut(6) = 1;
    let starts = a.freeze();
    assert!(
        !starts.is_tracked(),
        "writes before this freeze were not marked"
    );
    drop((asked, starts));
    for i in [7, 600, 1999] {
        *a.get_mut(i) += 1;
        assert!(
            !a.writes_are_direct(),
            "tracked writes take the marking path"
        );
    }
    a.mark_dirty(8);
    let tracked = a.freeze();
    assert!(tracked.is_tracked());
    assert_eq!(dirty_slots(&tracked), vec![7, 8, 600, 1999]);
    // With the view alive (copy-on-write) and after it is gone.
    *a.get_mut(9) = 3;
    drop(tracked);
    *a.get_mut(10) = 3;
    assert_eq!(dirty_slots(&a.freeze()), vec![9, 10]);
}

/// Freeze ids chain: each view names the freeze before it on its arena.
#[test]
fn each_freeze_names_the_one_before_it() {
    let a = SlotArena::new(10, 0u32);
    let first = a.freeze().freeze_ids();
    assert_eq!(first.since, 0);
    let second = a.freeze().freeze_ids();
    assert_eq!(second.since, first.id);
    assert!(second.id > first.id);
}

/// A write past the slots of every chunk panics before the unchecked bit
/// store (the chunk index is bounds-checked first).
#[test]
#[should_panic]
fn a_write_past_the_last_chunk_panics() {
    let mut a = SlotArena::new(CHUNK_LEN, 0u32);
    // Past the length, so skip the debug assertion's message: either it
    // or the chunk index panics, never the bit store.
    *a.get_mut(CHUNK_LEN) = 1;
}
