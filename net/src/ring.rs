//! The lock-free single-producer/single-consumer ring that carries channel
//! events between two cores.
//!
//! This is a bounded Lamport queue: the producer owns `tail`, the consumer
//! owns `head`, each on its own cache line. Each side keeps a private copy of
//! the other side's index and only re-reads the shared one when its copy says
//! the ring is full (producer) or empty (consumer), so in the steady state a
//! push or pop touches no cache line written by the other core except the
//! slot itself. A full ring hands the value back: the caller decides how to
//! wait (that is backpressure), nothing is ever dropped or queued elsewhere.
//!
//! All `unsafe` of moving data between cores lives here (the only other
//! block of the crate is the codec's ASCII string decode). It is model
//! checked with loom
//! (`RUSTFLAGS="--cfg loom" cargo test -p weir-net --test loom_ring --release`)
//! and runs under miri (`cargo +nightly miri test -p weir-net ring`).

use std::mem::MaybeUninit;

use crossbeam_utils::CachePadded;

use crate::sync::{Arc, AtomicUsize, Ordering, UnsafeCell};

struct Ring<T> {
    /// Next slot the consumer reads; written only by the consumer.
    head: CachePadded<AtomicUsize>,
    /// Next slot the producer writes; written only by the producer.
    tail: CachePadded<AtomicUsize>,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: usize,
}

// SAFETY: the ring hands each `T` from exactly one producer thread to exactly
// one consumer thread; a slot is accessed by one side at a time, ordered by the
// release/acquire pairs on `head` and `tail`. So it is `Send`/`Sync` whenever
// `T` may be sent between threads.
unsafe impl<T: Send> Send for Ring<T> {}
// SAFETY: see above; shared access only goes through the index protocol.
unsafe impl<T: Send> Sync for Ring<T> {}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // Both endpoints are gone (we hold the last Arc), so every index is
        // stable; drop the values still queued between head and tail.
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        let mut i = head;
        while i != tail {
            self.slots[i & self.mask].with_mut(|slot| {
                // SAFETY: slots in [head, tail) were written by `push` and not
                // yet read by `pop`, so each holds an initialised value that
                // nobody else will read again.
                unsafe { (*slot).assume_init_drop() }
            });
            i = i.wrapping_add(1);
        }
    }
}

/// Creates a ring holding at most `capacity` values (rounded up to a power of
/// two, at least 1) and returns its two endpoints.
pub fn ring<T: Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let capacity = capacity.max(1).next_power_of_two();
    let slots = (0..capacity)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect::<Vec<_>>()
        .into_boxed_slice();
    let ring = Arc::new(Ring {
        head: CachePadded::new(AtomicUsize::new(0)),
        tail: CachePadded::new(AtomicUsize::new(0)),
        slots,
        mask: capacity - 1,
    });
    (
        Producer {
            ring: ring.clone(),
            tail: 0,
            cached_head: 0,
            capacity,
        },
        Consumer {
            ring,
            head: 0,
            cached_tail: 0,
            capacity,
        },
    )
}

/// The sending end of a ring. Exactly one exists per ring; it is `Send` but
/// not `Clone`, which is what makes the ring single-producer.
pub struct Producer<T> {
    ring: Arc<Ring<T>>,
    /// Our own `tail` (we are its only writer, so no need to load it).
    tail: usize,
    /// Last `head` we saw; the real one can only be further along.
    cached_head: usize,
    capacity: usize,
}

impl<T> Producer<T> {
    /// Appends `value`, or hands it back if the ring is full.
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), T> {
        if self.tail.wrapping_sub(self.cached_head) == self.capacity {
            // Acquire: the consumer's reads of slots before `head` are done.
            self.cached_head = self.ring.head.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.cached_head) == self.capacity {
                return Err(value);
            }
        }
        self.ring.slots[self.tail & self.ring.mask].with_mut(|slot| {
            // SAFETY: the slot at `tail` is outside [head, tail): the consumer
            // has finished with it (Acquire above / earlier) and will not
            // touch it until we publish a tail beyond it.
            unsafe { (*slot).write(value) };
        });
        self.tail = self.tail.wrapping_add(1);
        // Release: the slot write happens-before the consumer sees the tail.
        self.ring.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// True if a push would fail right now (re-reads the consumer's index).
    #[inline]
    pub fn is_full(&mut self) -> bool {
        if self.tail.wrapping_sub(self.cached_head) < self.capacity {
            return false;
        }
        self.cached_head = self.ring.head.load(Ordering::Acquire);
        self.tail.wrapping_sub(self.cached_head) == self.capacity
    }

    /// Values currently queued (exact for the producer's own pushes; the
    /// consumer may have taken some since).
    pub fn len(&self) -> usize {
        self.tail
            .wrapping_sub(self.ring.head.load(Ordering::Acquire))
    }

    /// True if the consumer has taken every value pushed so far.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values pushed since the ring was created (wrapping): the position
    /// in the ring's sequence the next push takes.
    #[inline]
    pub fn pushed(&self) -> usize {
        self.tail
    }

    /// The ring's capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// The receiving end of a ring. Exactly one exists per ring.
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,
    head: usize,
    cached_tail: usize,
    capacity: usize,
}

impl<T> Consumer<T> {
    /// Takes the oldest value, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.cached_tail {
            // Acquire: pairs with the producer's Release store of `tail`.
            self.cached_tail = self.ring.tail.load(Ordering::Acquire);
            if self.head == self.cached_tail {
                return None;
            }
        }
        let value = self.ring.slots[self.head & self.ring.mask].with_mut(|slot| {
            // SAFETY: head < tail (seen with Acquire), so the producer wrote
            // this slot and will not touch it again until we publish a head
            // beyond it; we read it exactly once.
            unsafe { (*slot).assume_init_read() }
        });
        self.head = self.head.wrapping_add(1);
        // Release: our read of the slot happens-before the producer reuses it.
        self.ring.head.store(self.head, Ordering::Release);
        Some(value)
    }

    /// True if there is nothing to pop right now.
    #[inline]
    pub fn is_empty(&mut self) -> bool {
        if self.head != self.cached_tail {
            return false;
        }
        self.cached_tail = self.ring.tail.load(Ordering::Acquire);
        self.head == self.cached_tail
    }

    /// Values popped since the ring was created (wrapping): the position
    /// in the ring's sequence of the next pop.
    #[inline]
    pub fn popped(&self) -> usize {
        self.head
    }

    /// Values ready to pop.
    pub fn queued(&self) -> usize {
        self.ring
            .tail
            .load(Ordering::Acquire)
            .wrapping_sub(self.head)
    }

    /// The ring's capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_full() {
        let (mut p, mut c) = ring::<u32>(3);
        assert_eq!(p.capacity(), 4);
        for i in 0..4 {
            p.push(i).unwrap();
        }
        assert_eq!(p.push(9), Err(9), "a full ring hands the value back");
        assert!(p.is_full());
        assert_eq!(c.pop(), Some(0));
        assert!(!p.is_full());
        p.push(4).unwrap();
        let got: Vec<_> = std::iter::from_fn(|| c.pop()).collect();
        assert_eq!(got, vec![1, 2, 3, 4]);
        assert!(c.is_empty());
    }

    #[test]
    fn queued_values_are_dropped_with_the_ring() {
        let marker = std::sync::Arc::new(());
        let (mut p, c) = ring(8);
        for _ in 0..5 {
            p.push(marker.clone()).unwrap();
        }
        drop(p);
        drop(c);
        assert_eq!(std::sync::Arc::strong_count(&marker), 1);
    }

    #[test]
    fn two_threads_keep_order() {
        const N: u64 = 200_000;
        let (mut p, mut c) = ring::<u64>(16);
        let t = std::thread::spawn(move || {
            for i in 0..N {
                let mut v = i;
                while let Err(back) = p.push(v) {
                    v = back;
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 0;
        while next < N {
            if let Some(v) = c.pop() {
                assert_eq!(v, next);
                next += 1;
            }
        }
        t.join().unwrap();
    }
}
