//! The payload of a [`BlockKind::KeyedTable`](weir_state::snapshot::BlockKind)
//! block: one part of a keyed state's hash table (a `ValueState`'s, or the
//! table a composite kind keeps its entries in, each entry as the kind
//! writes it) in the order of its slots, with the slots' occupancy, so
//! that a restore of a value table into a table of the same capacity puts
//! every entry back at its slot without probing for it (see
//! `ValueState::load_placed_batch`); a composite kind's entries are
//! inserted.
//!
//! A writer serializes a table as blocks of a run of arena chunks each,
//! i.e. a run of slots, whose key-group range is the whole subtask's (a
//! table mixes all its key groups). A restore at another parallelism reads the same blocks entry
//! by entry and keeps the entries of the key groups it owns.
//!
//! Layout, little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `WTB1` |
//! | 4 | log2 of the table's capacity (at most [`MAX_LOG2_CAPACITY`]) |
//! | 5..8 | zero |
//! | 8..16 | entries in the whole table (to size the restored one) |
//! | 16..24 | position of the part's first slot |
//! | 24..32 | slots in the part (first + slots <= capacity) |
//! | 32.. | occupancy: `ceil(slots / 64)` 64-bit words, bit `i % 64` of word `i / 64` set iff slot `first + i` holds an entry; the last word's bits past the part are zero |
//! | then | the entries of the used slots in slot order, each its key then its value (`Wire`) |
//!
//! Everything here is checked before it is used; a payload that fails is
//! reported as malformed, never trusted (its checksum is checked too, by
//! the caller).

/// Bytes of the header, before the occupancy bitmap.
pub const HEADER_LEN: usize = 32;

const MAGIC: [u8; 4] = *b"WTB1";

/// Largest table a block may describe: 2^48 slots.
pub const MAX_LOG2_CAPACITY: u8 = 48;

/// The header of a table block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableHeader {
    /// `log2` of the table's capacity.
    pub log2_capacity: u8,
    /// Entries in the whole table.
    pub table_len: u64,
    /// Position of the part's first slot.
    pub first_slot: u64,
    /// Slots in the part.
    pub slot_count: u64,
}

/// What is wrong with a table block's header or occupancy (the caller
/// reports it with the block's state, segment and offset).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableBlockError {
    /// The payload is shorter than the header.
    #[error("table block of {len} bytes is shorter than its {HEADER_LEN}-byte header")]
    Short {
        /// The payload's length.
        len: usize,
    },
    /// The magic or the reserved bytes are wrong.
    #[error("table block has no valid header")]
    BadHeader,
    /// The table is larger than any table a block may describe.
    #[error(
        "table block claims a table of 2^{log2_capacity} slots (at most 2^{MAX_LOG2_CAPACITY})"
    )]
    Capacity {
        /// `log2` of the claimed capacity.
        log2_capacity: u8,
    },
    /// The part's slots do not lie inside the table.
    #[error("table block's slots {first}+{count} lie outside its table of {capacity}")]
    SlotsOutside {
        /// The part's first slot.
        first: u64,
        /// Slots in the part.
        count: u64,
        /// The table's capacity.
        capacity: u64,
    },
    /// The occupancy bitmap is cut short.
    #[error("table block's occupancy of {slots} slots needs {needed} bytes, {left} left")]
    ShortBitmap {
        /// Slots in the part.
        slots: u64,
        /// Bytes the bitmap needs.
        needed: u64,
        /// Bytes left after the header.
        left: usize,
    },
    /// The bitmap's last word marks slots beyond the part.
    #[error("table block marks slots past its part as used")]
    SlotsPastPart,
}

/// A parsed table block: its header, occupancy bitmap and entry bytes.
pub struct TableBlock<'a> {
    /// The header.
    pub header: TableHeader,
    /// The occupancy bitmap, a whole number of 8-byte words.
    pub bitmap: &'a [u8],
    /// The entries' bytes.
    pub entries: &'a [u8],
}

impl TableHeader {
    /// Bytes of the occupancy bitmap of `slot_count` slots.
    pub fn bitmap_len(slot_count: u64) -> u64 {
        slot_count.div_ceil(64) * 8
    }

    /// Appends the header to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&[self.log2_capacity, 0, 0, 0]);
        out.extend_from_slice(&self.table_len.to_le_bytes());
        out.extend_from_slice(&self.first_slot.to_le_bytes());
        out.extend_from_slice(&self.slot_count.to_le_bytes());
    }
}

impl<'a> TableBlock<'a> {
    /// Splits and checks `payload`; the error says what is wrong.
    pub fn parse(payload: &'a [u8]) -> Result<Self, TableBlockError> {
        if payload.len() < HEADER_LEN {
            return Err(TableBlockError::Short { len: payload.len() });
        }
        let word = |at: usize| {
            u64::from_le_bytes(
                payload[at..at + 8]
                    .try_into()
                    .expect("eight bytes of the header"),
            )
        };
        if payload[..4] != MAGIC || payload[5..8] != [0, 0, 0] {
            return Err(TableBlockError::BadHeader);
        }
        let header = TableHeader {
            log2_capacity: payload[4],
            table_len: word(8),
            first_slot: word(16),
            slot_count: word(24),
        };
        if header.log2_capacity > MAX_LOG2_CAPACITY {
            return Err(TableBlockError::Capacity {
                log2_capacity: header.log2_capacity,
            });
        }
        let capacity = 1u64 << header.log2_capacity;
        if header
            .first_slot
            .checked_add(header.slot_count)
            .is_none_or(|end| end > capacity)
        {
            return Err(TableBlockError::SlotsOutside {
                first: header.first_slot,
                count: header.slot_count,
                capacity,
            });
        }
        let rest = &payload[HEADER_LEN..];
        let bitmap_len = TableHeader::bitmap_len(header.slot_count);
        if bitmap_len > rest.len() as u64 {
            return Err(TableBlockError::ShortBitmap {
                slots: header.slot_count,
                needed: bitmap_len,
                left: rest.len(),
            });
        }
        let (bitmap, entries) = rest.split_at(bitmap_len as usize);
        let tail = header.slot_count % 64;
        if tail != 0 {
            let last = u64::from_le_bytes(
                bitmap[bitmap.len() - 8..]
                    .try_into()
                    .expect("a bitmap word"),
            );
            if last >> tail != 0 {
                return Err(TableBlockError::SlotsPastPart);
            }
        }
        Ok(Self {
            header,
            bitmap,
            entries,
        })
    }

    /// The positions of the used slots, in order.
    pub fn positions(&self) -> Positions<'a> {
        Positions {
            bitmap: self.bitmap,
            next_word: 0,
            base: self.header.first_slot as usize,
            bits: 0,
        }
    }
}

/// The positions of a table block's used slots, in order
/// ([`TableBlock::positions`]).
#[derive(Clone, Debug, Default)]
pub struct Positions<'a> {
    bitmap: &'a [u8],
    /// The bitmap word after the one in `bits`.
    next_word: usize,
    /// The slot of bit 0 of `bits`.
    base: usize,
    /// The word being read, its slots taken cleared.
    bits: u64,
}

impl Iterator for Positions<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            let at = self.next_word * 8;
            let word = self.bitmap.get(at..at + 8)?;
            if self.next_word > 0 {
                self.base += 64;
            }
            self.next_word += 1;
            self.bits = u64::from_le_bytes(word.try_into().expect("a bitmap word"));
        }
        let at = self.base + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(at)
    }
}

/// Arena chunks per table block (see `writer::write_keyed_state`, and
/// `incremental::write_table_delta` for delta blocks): 8 chunks of 512
/// slots hold ~75 KB of W1's entries at the table's usual load, so that
/// many blocks share one of the segment's I/O buffers. A block is also
/// the unit of the writer's work between two turns of the worker on the
/// same core: serializing one takes ~15-80 µs (most under 25), which
/// bounds what a record arriving meanwhile waits (32 chunks took 50-250
/// µs, one of the stalls in W3's tail under checkpoints; bench/RESULTS.md,
/// "W3's tail: the writer's slices, copy-on-write's page faults and the
/// control thread").
pub(crate) const TABLE_BLOCK_CHUNKS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    fn block(header: TableHeader, bitmap: &[u64], entries: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        header.write(&mut out);
        for w in bitmap {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(entries);
        out
    }

    const HEADER: TableHeader = TableHeader {
        log2_capacity: 10,
        table_len: 3,
        first_slot: 512,
        slot_count: 70,
    };

    #[test]
    fn a_block_round_trips_with_its_positions() {
        let bytes = block(HEADER, &[0b1001, 1 << 5], b"entries");
        let parsed = TableBlock::parse(&bytes).unwrap();
        assert_eq!(parsed.header, HEADER);
        assert_eq!(parsed.bitmap.len(), 16);
        assert_eq!(parsed.entries, b"entries");
        assert_eq!(
            parsed.positions().collect::<Vec<_>>(),
            [512, 515, 512 + 64 + 5]
        );
    }

    #[test]
    fn every_malformed_header_is_an_error() {
        let good = block(HEADER, &[1, 1], b"");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..HEADER_LEN - 1].to_vec(), "shorter than"),
            (good[..HEADER_LEN + 8].to_vec(), "needs 16 bytes"),
            (
                block(
                    TableHeader {
                        log2_capacity: 49,
                        ..HEADER
                    },
                    &[],
                    b"",
                ),
                "2^49",
            ),
            (
                block(
                    TableHeader {
                        first_slot: 1000,
                        ..HEADER
                    },
                    &[1, 1],
                    b"",
                ),
                "outside",
            ),
            (
                block(
                    TableHeader {
                        slot_count: u64::MAX,
                        ..HEADER
                    },
                    &[],
                    b"",
                ),
                "outside",
            ),
            (block(HEADER, &[1, 1 << 6], b""), "past its part"),
            (
                {
                    let mut b = good.clone();
                    b[0] = b'X';
                    b
                },
                "no valid header",
            ),
            (
                {
                    let mut b = good.clone();
                    b[6] = 1;
                    b
                },
                "no valid header",
            ),
        ];
        for (bytes, want) in cases {
            let err = TableBlock::parse(&bytes).err().expect(want).to_string();
            assert!(err.contains(want), "{err} (wanted {want})");
        }
    }

    proptest::proptest! {
        /// Valid blocks with bytes flipped, cut or appended: parsing
        /// never panics, and what parses names no slot outside its part.
        #[test]
        fn mutated_blocks_never_panic(
            log2 in 0u8..20,
            first in 0u64..4_096,
            slots in 0u64..2_000,
            words in proptest::collection::vec(proptest::num::u64::ANY, 0..40),
            flips in proptest::collection::vec((0usize..400, 0u8..8), 0..4),
            cut in proptest::option::of(0usize..400),
            extra in proptest::collection::vec(proptest::num::u8::ANY, 0..16),
        ) {
            let header = TableHeader { log2_capacity: log2, table_len: 1, first_slot: first, slot_count: slots };
            let mut bytes = block(header, &words, b"entries");
            for (at, bit) in flips {
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 1 << bit;
                }
            }
            if let Some(cut) = cut {
                bytes.truncate(cut);
            }
            bytes.extend_from_slice(&extra);
            if let Ok(b) = TableBlock::parse(&bytes) {
                let end = b.header.first_slot + b.header.slot_count;
                proptest::prop_assert!(end <= 1 << b.header.log2_capacity);
                for pos in b.positions() {
                    proptest::prop_assert!((pos as u64) >= b.header.first_slot && (pos as u64) < end);
                }
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..400 {
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if len >= HEADER_LEN {
                // A plausible header, so that the later checks run too.
                bytes[..4].copy_from_slice(&MAGIC);
                bytes[4] = 11;
                bytes[5..8].fill(0);
                bytes[16..24].copy_from_slice(&(x % 1024).to_le_bytes());
                bytes[24..32].copy_from_slice(&(x % 1200).to_le_bytes());
            }
            if let Ok(b) = TableBlock::parse(&bytes) {
                assert!(b.positions().count() <= b.header.slot_count as usize);
            }
        }
    }
}
