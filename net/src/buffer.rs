//! Network buffers and the pool that owns them.
//!
//! A [`NetworkBuffer`] is a fixed-capacity byte block allocated once, when its
//! pool is created. Records are appended to it in their [`Wire`] form; the
//! buffer then moves by ownership (three machine words, never the bytes)
//! through a channel's ring, the consumer reads the records in place and the
//! buffer travels back through the channel's return ring to the
//! [`BufferPool`] it came from. No record ever causes an allocation, with
//! one exception: output that one record (or one watermark's firing) makes
//! beyond every buffer its pool may own goes into *unpooled* buffers
//! ([`NetworkBuffer::unpooled`]), which the consumer frees instead of
//! returning.

use std::marker::PhantomData;

use crate::codec::{DecodeError, Wire};
use crate::ring::Consumer;

/// A fixed-capacity block of serialized records.
///
/// A writer may fill it only up to a *limit* below its capacity
/// ([`NetworkBuffer::limit_to`]): buffer debloating ships smaller buffers
/// without allocating new ones, and the check costs nothing more than the
/// capacity check [`NetworkBuffer::try_append`] makes anyway.
#[derive(Debug)]
pub struct NetworkBuffer {
    data: Box<[u8]>,
    len: usize,
    /// Bytes a writer may fill (at most the capacity).
    limit: usize,
    /// Records appended.
    records: u32,
    /// Belongs to no pool: freed when consumed, never returned.
    unpooled: bool,
}

impl NetworkBuffer {
    /// Allocates a zeroed buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            data: vec![0u8; capacity].into_boxed_slice(),
            len: 0,
            limit: capacity,
            records: 0,
            unpooled: false,
        }
    }

    /// A zeroed buffer of `capacity` bytes that belongs to no pool: for
    /// output beyond what a pool may own (its return rings are sized for
    /// the pool), freed by whoever consumes it.
    pub fn unpooled(capacity: usize) -> Self {
        Self {
            unpooled: true,
            ..Self::with_capacity(capacity)
        }
    }

    /// True if the buffer belongs to no pool ([`NetworkBuffer::unpooled`]).
    #[inline]
    pub fn is_unpooled(&self) -> bool {
        self.unpooled
    }

    /// Lets writers fill only `limit` bytes (clamped to at least the bytes
    /// written and at most the capacity) until [`NetworkBuffer::clear`].
    #[inline]
    pub fn limit_to(&mut self, limit: usize) {
        self.limit = limit.clamp(self.len, self.data.len());
    }

    /// Records appended since the last [`NetworkBuffer::clear`].
    #[inline]
    pub fn records(&self) -> u32 {
        self.records
    }

    /// Bytes this buffer can hold.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.data.len()
    }

    /// Bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no record was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes still free (up to the limit).
    #[inline]
    pub fn remaining(&self) -> usize {
        self.limit - self.len
    }

    /// The written bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// Forgets the content (the bytes are overwritten by the next writer)
    /// and the limit.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.records = 0;
        self.limit = self.data.len();
    }

    /// Appends `record` if it fits below the limit; returns false (and
    /// writes nothing) if not.
    // Always inlined: it is every record's write into a buffer, and a
    // call (measured: not inlined for a tuple with a string) passes and
    // checks the record through memory.
    #[inline(always)]
    pub fn try_append<T: Wire>(&mut self, record: &T) -> bool {
        let n = record.encoded_len();
        if n > self.limit - self.len {
            return false;
        }
        record.write(&mut self.data[self.len..self.len + n]);
        self.len += n;
        self.records += 1;
        true
    }

    /// Reads the records in place, front to back.
    #[inline]
    pub fn read_records<T: Wire>(&self) -> RecordReader<'_, T> {
        RecordReader::new(self.as_bytes())
    }
}

/// Iterates over the records of a byte slice written by
/// [`NetworkBuffer::try_append`]. Yields an error (once) on malformed bytes.
pub struct RecordReader<'a, T> {
    bytes: &'a [u8],
    pos: usize,
    _record: PhantomData<fn() -> T>,
}

impl<'a, T: Wire> RecordReader<'a, T> {
    /// A reader over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            pos: 0,
            _record: PhantomData,
        }
    }

    /// Byte offset of the next record (lets a consumer stop mid-buffer under
    /// backpressure and resume at the same record later).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// A reader resuming at byte offset `pos`.
    pub fn at(bytes: &'a [u8], pos: usize) -> Self {
        Self {
            bytes,
            pos,
            _record: PhantomData,
        }
    }
}

impl<T: Wire> Iterator for RecordReader<'_, T> {
    type Item = Result<T, DecodeError>;

    // Always inlined, as `try_append`: a call returns the record through
    // memory.
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        match T::read(&self.bytes[self.pos..]) {
            Ok((record, n)) => {
                self.pos += n;
                Some(Ok(record))
            }
            Err(e) => {
                self.pos = self.bytes.len();
                Some(Err(e))
            }
        }
    }
}

/// The buffers of one output gate: allocated once, lent to channels, and
/// returned by receivers through per-channel return rings.
pub struct BufferPool {
    free: Vec<NetworkBuffer>,
    returns: Vec<Consumer<NetworkBuffer>>,
    total: usize,
    buffer_size: usize,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("free", &self.free.len())
            .field("total", &self.total)
            .field("buffer_size", &self.buffer_size)
            .finish()
    }
}

impl BufferPool {
    /// Allocates `count` buffers of `buffer_size` bytes.
    pub fn new(count: usize, buffer_size: usize) -> Self {
        Self {
            free: (0..count)
                .map(|_| NetworkBuffer::with_capacity(buffer_size))
                .collect(),
            returns: Vec::new(),
            total: count,
            buffer_size,
        }
    }

    /// Adds the return ring of one channel: buffers the receiver is done with
    /// arrive there.
    pub fn add_return_path(&mut self, returns: Consumer<NetworkBuffer>) {
        self.returns.push(returns);
    }

    /// A free buffer, reclaiming returned ones if the local list is empty.
    /// `None` means every buffer is in flight: the caller is backpressured.
    #[inline]
    pub fn request(&mut self) -> Option<NetworkBuffer> {
        if let Some(b) = self.free.pop() {
            return Some(b);
        }
        self.reclaim();
        self.free.pop()
    }

    /// A buffer beyond the pool's size, which joins the pool for good.
    /// For the rare record whose output exceeds every buffer of the pool;
    /// the caller bounds how often (return rings are sized for `total`).
    pub fn grow(&mut self) -> NetworkBuffer {
        self.total += 1;
        NetworkBuffer::with_capacity(self.buffer_size)
    }

    /// Puts a buffer this side still holds back into the free list (an
    /// unpooled one is freed).
    #[inline]
    pub fn recycle(&mut self, mut buffer: NetworkBuffer) {
        if buffer.is_unpooled() {
            return;
        }
        buffer.clear();
        self.free.push(buffer);
    }

    /// Moves every returned buffer to the free list; returns how many came.
    pub fn reclaim(&mut self) -> usize {
        let mut n = 0;
        for r in &mut self.returns {
            while let Some(mut b) = r.pop() {
                b.clear();
                self.free.push(b);
                n += 1;
            }
        }
        n
    }

    /// Buffers free right now without reclaiming.
    #[inline]
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Buffers this pool owns in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Capacity of each buffer.
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_appended_and_read_in_place() {
        let mut b = NetworkBuffer::with_capacity(40);
        assert!(b.try_append(&(1u64, 10u64)));
        assert!(b.try_append(&(2u64, 20u64)));
        assert!(
            !b.try_append(&(3u64, 30u64)),
            "a record that does not fit is refused"
        );
        assert_eq!(b.len(), 32);
        let got: Vec<(u64, u64)> = b.read_records().map(Result::unwrap).collect();
        assert_eq!(got, vec![(1, 10), (2, 20)]);
    }

    #[test]
    fn pool_reclaims_returned_buffers() {
        let (mut ret_tx, ret_rx) = crate::ring::ring(4);
        let mut pool = BufferPool::new(2, 64);
        pool.add_return_path(ret_rx);
        let a = pool.request().unwrap();
        let mut b = pool.request().unwrap();
        assert!(pool.request().is_none(), "an empty pool is backpressure");
        assert!(b.try_append(&5u32));
        ret_tx.push(b).unwrap();
        let again = pool.request().expect("returned buffer is reusable");
        assert!(again.is_empty(), "returned buffers come back cleared");
        pool.recycle(a);
        assert_eq!(pool.available(), 1);
    }

    #[test]
    fn a_limit_ships_smaller_buffers_and_clear_lifts_it() {
        let mut b = NetworkBuffer::with_capacity(64);
        b.limit_to(20);
        assert!(b.try_append(&1u64) && b.try_append(&2u64));
        assert!(!b.try_append(&3u64), "20 bytes hold two u64s");
        assert_eq!((b.len(), b.records(), b.remaining()), (16, 2, 4));
        b.limit_to(0);
        assert_eq!(b.remaining(), 0, "never below what is written");
        b.limit_to(usize::MAX);
        assert_eq!(b.remaining(), 48, "never above the capacity");
        b.clear();
        assert_eq!((b.len(), b.records(), b.remaining()), (0, 0, 64));
    }
}
