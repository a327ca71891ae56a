//! The payload of a [`BlockKind::KeyedTableDelta`](weir_state::snapshot::BlockKind)
//! block: the slots of one part of a keyed state's hash table that
//! were written or emptied since the checkpoint an incremental checkpoint
//! follows, each with what it holds now. Applied, newest delta first, over
//! the [`table_block`](super::table_block)s of the chain's full checkpoint,
//! a slot takes the contents of the newest block that mentions it: the
//! table as it was at the newest checkpoint, slot for slot (the table's
//! capacity is the same along a chain: a table that grew is written in
//! full).
//!
//! Layout, little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0..32 | a table block's header (see [`TableHeader`]) with magic `WTD1`: capacity, entries in the whole table, the part's first slot and slot count |
//! | 32..40 | number of records |
//! | then | per record: the slot's offset in the part (u32, strictly increasing, below the part's slot count), a flag (1: the slot holds an entry, 0: it is empty) and, for 1, the entry (key then value, `Wire`) |
//!
//! Everything is checked before it is used; a payload that fails is
//! reported as malformed (its checksum is checked too, by the caller).

use crate::checkpoint::table_block::{TableBlockError, TableHeader, HEADER_LEN, MAX_LOG2_CAPACITY};

const MAGIC: [u8; 4] = *b"WTD1";

/// Bytes before the first record.
pub const DELTA_HEAD_LEN: usize = HEADER_LEN + 8;

/// Appends a delta block's header to `out` (which should be empty);
/// [`push_record`] then appends the records and [`finish`] sets their
/// count.
pub fn start(header: &TableHeader, out: &mut Vec<u8>) {
    header.write(out);
    let at = out.len() - HEADER_LEN;
    out[at..at + 4].copy_from_slice(&MAGIC);
    out.extend_from_slice(&0u64.to_le_bytes());
}

/// Appends the record of slot `offset` of the part; `entry` appends the
/// entry's bytes if the slot holds one.
pub fn push_record(out: &mut Vec<u8>, offset: u32, entry: Option<impl FnOnce(&mut Vec<u8>)>) {
    out.extend_from_slice(&offset.to_le_bytes());
    match entry {
        Some(write) => {
            out.push(1);
            write(out);
        }
        None => out.push(0),
    }
}

/// Sets the record count of the delta block in `out`.
pub fn finish(out: &mut [u8], records: u64) {
    out[HEADER_LEN..DELTA_HEAD_LEN].copy_from_slice(&records.to_le_bytes());
}

/// A parsed delta block: its header and its records' bytes.
pub struct DeltaBlock<'a> {
    /// The header.
    pub header: TableHeader,
    /// Number of records.
    pub records: u64,
    /// The records' bytes.
    pub body: &'a [u8],
}

/// What is wrong with one record of a delta block.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeltaRecordError {
    /// The header or the records are malformed.
    #[error(transparent)]
    Header(#[from] TableBlockError),
    /// A record is cut short.
    #[error("delta record cut short")]
    Short,
    /// A record's offset is not above the previous one's or lies past the part.
    #[error("delta record of slot offset {offset} out of order or past the part's {slots} slots")]
    Offset {
        /// The offset.
        offset: u32,
        /// Slots in the part.
        slots: u64,
    },
    /// A record's flag is neither 0 nor 1.
    #[error("delta record flag {0} is neither 0 nor 1")]
    Flag(u8),
    /// Records are left over, or missing.
    #[error("delta block says {said} records, holds {found}")]
    Count {
        /// The count in the header.
        said: u64,
        /// Records found.
        found: u64,
    },
}

impl<'a> DeltaBlock<'a> {
    /// Splits and checks the header of `payload`.
    pub fn parse(payload: &'a [u8]) -> Result<Self, TableBlockError> {
        if payload.len() < DELTA_HEAD_LEN {
            return Err(TableBlockError::Short { len: payload.len() });
        }
        if payload[..4] != MAGIC || payload[5..8] != [0, 0, 0] {
            return Err(TableBlockError::BadHeader);
        }
        let word = |at: usize| {
            u64::from_le_bytes(payload[at..at + 8].try_into().expect("eight header bytes"))
        };
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
            || header.slot_count > u64::from(u32::MAX)
        {
            return Err(TableBlockError::SlotsOutside {
                first: header.first_slot,
                count: header.slot_count,
                capacity,
            });
        }
        Ok(Self {
            header,
            records: word(HEADER_LEN),
            body: &payload[DELTA_HEAD_LEN..],
        })
    }

    /// The records, one at a time.
    pub fn records(&self) -> DeltaRecords<'a> {
        DeltaRecords {
            body_len: self.body.len(),
            rest: self.body,
            first_slot: self.header.first_slot,
            slot_count: self.header.slot_count,
            next_min: 0,
            found: 0,
            records: self.records,
        }
    }

    /// Calls `f(position, entry)` for every record in order (`None`: the
    /// slot is empty); `decode` reads the entry at the front of its bytes
    /// and says how many bytes it took (each entry is decoded once).
    /// Stops at the first error, of the records' framing, of `decode` or
    /// of `f`.
    pub fn for_each<T, E: From<DeltaRecordError>>(
        &self,
        mut decode: impl FnMut(&'a [u8]) -> Result<(T, usize), E>,
        mut f: impl FnMut(usize, Option<T>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut records = self.records();
        while let Some((pos, entry)) = records.next(&mut decode)? {
            f(pos, entry)?;
        }
        Ok(())
    }
}

/// The records of a delta block, read one at a time
/// ([`DeltaBlock::records`]), each checked as it is read.
#[derive(Clone, Debug)]
pub struct DeltaRecords<'a> {
    body_len: usize,
    rest: &'a [u8],
    first_slot: u64,
    slot_count: u64,
    /// The lowest offset the next record may have.
    next_min: u64,
    found: u64,
    records: u64,
}

impl<'a> DeltaRecords<'a> {
    /// The next record: its position and, if the slot holds one, the
    /// entry `decode` reads from the front of its bytes (returning it and
    /// the bytes it took); `None` after the last record, once their count
    /// matched the header's.
    #[inline]
    pub fn next<T, E: From<DeltaRecordError>>(
        &mut self,
        decode: impl FnOnce(&'a [u8]) -> Result<(T, usize), E>,
    ) -> Result<Option<(usize, Option<T>)>, E> {
        let rest = self.rest;
        if rest.is_empty() {
            if self.found != self.records {
                return Err(DeltaRecordError::Count {
                    said: self.records,
                    found: self.found,
                }
                .into());
            }
            return Ok(None);
        }
        if rest.len() < 5 {
            return Err(DeltaRecordError::Short.into());
        }
        let offset = u32::from_le_bytes(rest[..4].try_into().expect("four bytes"));
        if u64::from(offset) < self.next_min || u64::from(offset) >= self.slot_count {
            return Err(DeltaRecordError::Offset {
                offset,
                slots: self.slot_count,
            }
            .into());
        }
        let pos = (self.first_slot + u64::from(offset)) as usize;
        let entry = match rest[4] {
            0 => {
                self.rest = &rest[5..];
                None
            }
            1 => {
                let (entry, n) = decode(&rest[5..])?;
                if n > rest.len() - 5 {
                    return Err(DeltaRecordError::Short.into());
                }
                self.rest = &rest[5 + n..];
                Some(entry)
            }
            other => return Err(DeltaRecordError::Flag(other).into()),
        };
        self.next_min = u64::from(offset) + 1;
        self.found += 1;
        Ok(Some((pos, entry)))
    }

    /// Bytes of the records read so far (where an error is).
    pub fn read(&self) -> usize {
        self.body_len - self.rest.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Vec<u8> {
        let header = TableHeader {
            log2_capacity: 10,
            table_len: 3,
            first_slot: 512,
            slot_count: 512,
        };
        let mut out = Vec::new();
        start(&header, &mut out);
        push_record(
            &mut out,
            3,
            Some(|o: &mut Vec<u8>| o.extend_from_slice(&[7; 4])),
        );
        push_record(&mut out, 9, None::<fn(&mut Vec<u8>)>);
        finish(&mut out, 2);
        out
    }

    /// A delta block's records: position and entry bytes (`None`: emptied).
    type Records = Vec<(usize, Option<Vec<u8>>)>;

    fn records(bytes: &[u8]) -> Result<Records, DeltaRecordError> {
        let b = DeltaBlock::parse(bytes)?;
        let mut out = Vec::new();
        b.for_each(
            |bytes| Ok::<_, DeltaRecordError>((bytes.get(..4).map(<[u8]>::to_vec), 4)),
            |pos, e| {
                out.push((pos, e.map(|e| e.expect("four bytes"))));
                Ok(())
            },
        )?;
        Ok(out)
    }

    #[test]
    fn records_round_trip() {
        assert_eq!(
            records(&block()).unwrap(),
            vec![(515, Some(vec![7; 4])), (521, None)]
        );
    }

    #[test]
    fn malformed_blocks_are_refused_never_trusted() {
        let good = block();
        for cut in 0..good.len() {
            assert!(records(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_flag = good.clone();
        bad_flag[DELTA_HEAD_LEN + 4] = 2;
        assert_eq!(records(&bad_flag), Err(DeltaRecordError::Flag(2)));
        let mut past = good.clone();
        past[DELTA_HEAD_LEN..DELTA_HEAD_LEN + 4].copy_from_slice(&600u32.to_le_bytes());
        assert!(matches!(
            records(&past),
            Err(DeltaRecordError::Offset { .. })
        ));
        let mut count = good;
        finish(&mut count, 5);
        assert!(matches!(
            records(&count),
            Err(DeltaRecordError::Count { .. })
        ));
    }

    proptest::proptest! {
        /// Valid delta blocks with bits flipped, cut or bytes appended:
        /// reading never panics, and what reads names each slot of its part
        /// at most once, in order.
        #[test]
        fn mutated_delta_blocks_never_panic(
            log2 in 0u8..16,
            first in 0u64..2_048,
            slots in 0u64..1_000,
            entries in proptest::collection::vec((0u32..4, proptest::option::of(0usize..6)), 0..12),
            flips in proptest::collection::vec((0usize..200, 0u8..8), 0..4),
            cut in proptest::option::of(0usize..200),
            extra in proptest::collection::vec(proptest::num::u8::ANY, 0..8),
        ) {
            let header = TableHeader { log2_capacity: log2, table_len: 1, first_slot: first, slot_count: slots };
            let mut bytes = Vec::new();
            start(&header, &mut bytes);
            let mut offset = 0u32;
            for (gap, entry) in &entries {
                offset += gap;
                let write = entry.map(|n| move |o: &mut Vec<u8>| o.extend(std::iter::repeat_n(n as u8, n)));
                push_record(&mut bytes, offset, write);
                offset += 1;
            }
            finish(&mut bytes, entries.len() as u64);
            for (at, bit) in flips {
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 1 << bit;
                }
            }
            if let Some(cut) = cut {
                bytes.truncate(cut);
            }
            bytes.extend_from_slice(&extra);
            let Ok(b) = DeltaBlock::parse(&bytes) else {
                return Ok(());
            };
            let end = b.header.first_slot + b.header.slot_count;
            proptest::prop_assert!(end <= 1 << b.header.log2_capacity);
            let mut last = None;
            // An entry is its first byte, repeated that many times.
            let decode = |e: &[u8]| match e.first() {
                Some(&n) if e.len() >= usize::from(n) => Ok((n, usize::from(n))),
                Some(_) => Err(DeltaRecordError::Short),
                None => Ok((0, 0)),
            };
            let _ = b.for_each(decode, |pos, _| {
                assert!((pos as u64) >= b.header.first_slot && (pos as u64) < end);
                assert!(last < Some(pos), "{pos} after {last:?}");
                last = Some(pos);
                Ok::<_, DeltaRecordError>(())
            });
        }
    }
}
