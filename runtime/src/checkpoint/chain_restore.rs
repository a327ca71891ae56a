//! Restoring a value table written incrementally (see
//! [`incremental`](super::incremental)): per old subtask, a chain of the
//! full checkpoint's table blocks and the deltas since.
//!
//! A slot of the table at the newest checkpoint holds what the newest
//! block that mentions it says: the newest delta's record of the slot if
//! a delta has one, else the full checkpoint's table block. The deltas
//! are read first, newest first, each record once: the first record of a
//! slot decides it, and the slot is marked with the delta whose entry
//! wins it (or as emptied). Then the table blocks are read in slot order,
//! and the winning entries of the deltas go in between, in slot order too
//! (each delta's winners are in slot order, so a slot's mark says which
//! list its entry is next in): out comes the newest table, slot by slot,
//! the table blocks' superseded entries skipped. At the same parallelism,
//! into a table of the chain's capacity, every entry goes back to its
//! slot without a probe, as a full checkpoint's table blocks do
//! ([`keyed_restore`](super::keyed_restore)); at another parallelism the
//! entries of the key groups the subtask owns are inserted. Each block's
//! header, records, order, key groups and checksum are checked as in
//! `keyed_restore`; nothing restored counts unless every check passed.

use weir_state::snapshot::{BlockKind, Extent};
use weir_state::{KeyGroupAssigner, KeyGroupRange};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::keyed_restore::next_window;
use crate::checkpoint::restore::{KeyedBlock, RestoreScope};
use crate::checkpoint::restore_sink::RestoreSink;
use crate::checkpoint::table_block::TableBlock;
use crate::checkpoint::table_delta::{DeltaBlock, DeltaRecordError};

/// Entries placed ([`RestoreSink::place_batch`]) or inserted at once.
const BATCH: usize = 64;

/// What [`restore_chains`] did, for the trace.
#[derive(Debug, Default)]
pub(crate) struct ChainRestored {
    /// Entries of the deltas that decided their slot.
    pub delta_entries: usize,
    /// Entries of the full checkpoint's table blocks whose slot a delta
    /// decided (skipped).
    pub superseded: usize,
    /// Entries that did not fit their slot and were inserted after.
    pub inserted_after: usize,
    /// The time the deltas took to read (before the table blocks).
    pub deltas_read: std::time::Duration,
}

/// Restores the chains `chains` of state `name` (from
/// [`RestoreScope::keyed_chains`]) into `sink`.
pub(crate) fn restore_chains<S: RestoreSink>(
    scope: &RestoreScope<'_>,
    name: &str,
    chains: &[Vec<&Extent>],
    sink: &mut S,
) -> Result<ChainRestored, RestoreError> {
    let groups = KeyGroupAssigner::new(scope.max_parallelism(), 1);
    let mut stats = ChainRestored::default();
    let mut out = Target {
        sink,
        placing: false,
        mine: scope.key_groups(),
        placed: Vec::with_capacity(BATCH),
        deferred: Vec::new(),
        batch: Vec::with_capacity(BATCH),
    };
    for chain in chains {
        let (tables, deltas): (Vec<&Extent>, Vec<&Extent>) =
            chain.iter().partition(|e| e.kind == BlockKind::KeyedTable);
        // The deltas, each its checkpoint's blocks (in its segment, in
        // slot order), newest first.
        let mut by_delta: Vec<&[&Extent]> =
            deltas.chunk_by(|a, b| a.segment == b.segment).collect();
        by_delta.reverse();
        // Read-ahead: the deltas (a few percent of the bytes), then the
        // table blocks a window at a time as they are read.
        for &blocks in &by_delta {
            scope.will_need(blocks);
        }
        // The table's capacity and length, from the newest block.
        let newest = *chain.last().expect("a chain has blocks");
        let head = {
            let block = scope.open_block(newest)?;
            let header = if newest.kind == BlockKind::KeyedTable {
                TableBlock::parse(block.payload).map(|t| t.header)
            } else {
                DeltaBlock::parse(block.payload).map(|d| d.header)
            };
            header.map_err(|e| scope.reject(block.malformed(name, 0, e)))?
        };
        let whole = chain.iter().all(|e| e.key_groups == out.mine);
        if whole {
            let total: u64 = chain.iter().map(|e| e.length).sum();
            out.sink.reserve(head.table_len.min(total) as usize);
            out.sink.reserve_table(1usize << head.log2_capacity);
        }
        // Asked after sizing: an empty table has its smallest capacity,
        // which no table block of the chain's size fits.
        out.placing = whole && out.sink.placeable(head.log2_capacity);
        let reading = Reading {
            scope,
            name,
            log2_capacity: head.log2_capacity,
        };
        if by_delta.len() > MAX_DELTAS {
            let block = scope.open_block(newest)?;
            return Err(scope.reject(block.malformed(
                name,
                0,
                format_args!(
                    "a chain of {} deltas (at most {MAX_DELTAS})",
                    by_delta.len()
                ),
            )));
        }
        let started = std::time::Instant::now();
        let mut deltas = Winners::read::<S>(reading, &by_delta, &groups, &mut stats)?;
        stats.deltas_read += started.elapsed();
        // The table blocks in slot order, each entry after the deltas'
        // records of lower slots, skipped if a delta has its slot.
        let mut end = 0;
        let mut rest = tables.as_slice();
        scope.will_need(&rest[..next_window(rest)]);
        while !rest.is_empty() {
            let (window, later) = rest.split_at(next_window(rest));
            rest = later;
            // While this window is decoded, the device reads the next one.
            scope.will_need(&rest[..next_window(rest)]);
            for &e in window {
                let mut parsed = None;
                let (block, _, part_end) = reading.open(e, end, |payload| {
                    let table = TableBlock::parse(payload).map_err(|e| e.to_string())?;
                    let h = table.header;
                    parsed = Some((table.positions(), table.entries));
                    Ok((h.log2_capacity, h.first_slot, h.slot_count))
                })?;
                end = part_end;
                let (positions, bytes) = parsed.expect("parsed with its header");
                let entries_at = block.payload.len() - bytes.len();
                let mut at = 0;
                for pos in positions {
                    let (entry, n) = S::decode(&bytes[at..])
                        .map_err(|err| scope.reject(block.malformed(name, entries_at + at, err)))?;
                    at += n;
                    if pos >= deltas.next && deltas.take_up_to::<S>(pos, &groups, &mut out) {
                        stats.superseded += 1;
                        continue;
                    }
                    let hash = S::group_hash(&entry);
                    let kg = groups.key_group(hash);
                    if !block.key_groups.contains(kg) {
                        return Err(scope.reject(block.misplaced(name, "key", kg)));
                    }
                    out.put(pos, entry, hash, kg);
                }
                if at != bytes.len() {
                    return Err(scope.reject(block.malformed(
                        name,
                        entries_at + at,
                        "bytes after the entries of its used slots",
                    )));
                }
                // Its checksum now, while it is in cache (a block is a
                // few hundred KB).
                reading.finish(block)?;
            }
        }
        // The deltas' records past the table blocks' last entry.
        deltas.take_up_to::<S>(usize::MAX, &groups, &mut out);
        out.sink.place_batch(&mut out.placed, &mut out.deferred);
    }
    out.sink.insert_batch(&mut out.batch);
    stats.inserted_after = out.deferred.len();
    out.sink.insert_batch(&mut out.deferred);
    out.sink.finish();
    Ok(stats)
}

/// Where a chain's entries go.
struct Target<'s, S: RestoreSink> {
    sink: &'s mut S,
    /// Back to their slots; else inserted if of `mine`.
    placing: bool,
    /// The key groups of the restoring subtask.
    mine: KeyGroupRange,
    placed: Vec<(usize, S::Entry, u64)>,
    /// Placed entries that did not fit their slot, inserted at the end.
    deferred: Vec<(S::Entry, u64)>,
    batch: Vec<(S::Entry, u64)>,
}

impl<S: RestoreSink> Target<'_, S> {
    /// Takes the entry of slot `pos` of the newest table (of key-group
    /// hash `hash`, in key group `kg`). Placed entries come in slot order.
    #[inline(always)]
    fn put(&mut self, pos: usize, entry: S::Entry, hash: u64, kg: u32) {
        if self.placing {
            self.placed.push((pos, entry, hash));
            if self.placed.len() == BATCH {
                self.sink.place_batch(&mut self.placed, &mut self.deferred);
            }
        } else if self.mine.contains(kg) {
            self.sink.prefetch(&entry, hash);
            self.batch.push((entry, hash));
            if self.batch.len() == BATCH {
                self.sink.insert_batch(&mut self.batch);
            }
        }
    }
}

/// What a chain's blocks are read with.
#[derive(Clone, Copy)]
struct Reading<'r, 'a> {
    scope: &'r RestoreScope<'a>,
    /// The state's name.
    name: &'r str,
    /// The chain's table capacity, which every block must have.
    log2_capacity: u8,
}

impl<'a> Reading<'_, 'a> {
    /// Opens the block of `e`, the next of a run in slot order that so
    /// far ends at slot `end`: its header says a part of the chain's
    /// capacity from `end` on. Returns it with the header's part.
    fn open(
        &self,
        e: &'a Extent,
        end: u64,
        header: impl FnOnce(&'a [u8]) -> Result<(u8, u64, u64), String>,
    ) -> Result<(KeyedBlock<'a>, u64, u64), RestoreError> {
        let block = self.scope.open_block(e)?;
        let (log2_capacity, first, count) = header(block.payload)
            .map_err(|err| self.scope.reject(block.malformed(self.name, 0, err)))?;
        let what = if log2_capacity != self.log2_capacity {
            "a block of a table of another capacity than its chain's"
        } else if first < end {
            "a block of slots before the previous block's (out of slot order)"
        } else {
            return Ok((block, first, first + count));
        };
        Err(self.scope.reject(block.malformed(self.name, 0, what)))
    }

    /// Finishes `block`, whose bytes were all read.
    fn finish(&self, mut block: KeyedBlock<'a>) -> Result<(), RestoreError> {
        block.check.update(block.payload);
        self.scope.finish_check(self.name, block.check)
    }
}

/// A slot no delta decided ([`Winners::marks`]).
const UNDECIDED: u8 = 0;

/// A slot a delta emptied.
const EMPTIED: u8 = u8::MAX;

/// Deltas a chain may have: each delta's mark is its index (newest
/// first) plus one, below [`EMPTIED`]. A writer makes chains of at most
/// [`MAX_INCREMENTS`](super::incremental::MAX_INCREMENTS).
const MAX_DELTAS: usize = EMPTIED as usize - 1;

/// The deltas of a chain, read: which slots they decide, and the entries
/// that win their slots.
struct Winners<'a> {
    /// Per slot of the table: [`UNDECIDED`], [`EMPTIED`], or the mark of
    /// the delta whose entry it holds (empty when the chain has no delta).
    marks: Vec<u8>,
    /// Per delta, newest first, its winning entries in slot order.
    lists: Vec<Won<'a>>,
    /// The next slot a delta decided not taken yet (`usize::MAX` after
    /// the last).
    next: usize,
}

/// The winning entries of one delta.
struct Won<'a> {
    /// The payloads of the delta's blocks.
    payloads: Vec<&'a [u8]>,
    /// Its winning entries in slot order: the block (index in
    /// `payloads`) and the entry's offset in its payload. (Eight bytes
    /// each: fresh memory is what a restore pays most for.)
    entries: std::vec::IntoIter<(u32, u32)>,
}

impl<'a> Winners<'a> {
    /// Reads the deltas `by_delta` (each its blocks in slot order, newest
    /// first), checking every block, record and key group.
    #[inline(never)]
    fn read<S: RestoreSink>(
        reading: Reading<'_, 'a>,
        by_delta: &[&[&'a Extent]],
        groups: &KeyGroupAssigner,
        stats: &mut ChainRestored,
    ) -> Result<Self, RestoreError> {
        let (scope, name) = (reading.scope, reading.name);
        // Whole words of marks, for `find`.
        let mut marks = if by_delta.is_empty() {
            Vec::new()
        } else {
            vec![UNDECIDED; (1usize << reading.log2_capacity).next_multiple_of(8)]
        };
        let mut lists = Vec::with_capacity(by_delta.len());
        for (d, &blocks) in by_delta.iter().enumerate() {
            let mark = u8::try_from(d + 1).expect("at most MAX_DELTAS deltas");
            // Room for all its records (each takes at least 5 bytes of its
            // blocks), reserved once: growing the list would take fresh
            // memory at every step; untouched room costs nothing.
            let most = blocks.iter().map(|e| e.length as usize / 5).sum();
            let mut entries: Vec<(u32, u32)> = Vec::with_capacity(most);
            let mut payloads = Vec::with_capacity(blocks.len());
            let mut end = 0;
            for &e in blocks {
                let mut parsed = None;
                let (block, _, part_end) = reading.open(e, end, |payload| {
                    let delta = DeltaBlock::parse(payload).map_err(|e| e.to_string())?;
                    let h = delta.header;
                    parsed = Some((delta.records(), payload.len() - delta.body.len()));
                    Ok((h.log2_capacity, h.first_slot, h.slot_count))
                })?;
                end = part_end;
                let (mut records, body_at) = parsed.expect("parsed with its header");
                let payload = block.payload;
                let index = u32::try_from(payloads.len()).expect("fewer than 2^32 blocks");
                payloads.push(payload);
                loop {
                    let record = records.next(|bytes| {
                        S::decode(bytes)
                            .map(|(entry, n)| ((entry, bytes), n))
                            .map_err(|_| DeltaRecordError::Short)
                    });
                    let (pos, entry) = match record {
                        Ok(Some(record)) => record,
                        Ok(None) => break,
                        Err(err) => {
                            let at = body_at + records.read();
                            return Err(scope.reject(block.malformed(name, at, err)));
                        }
                    };
                    // Inside the table: the header's part is, and the
                    // record's offset is inside the part.
                    let slot = &mut marks[pos];
                    if *slot != UNDECIDED {
                        continue;
                    }
                    let Some((entry, bytes)) = entry else {
                        *slot = EMPTIED;
                        continue;
                    };
                    let kg = groups.key_group(S::group_hash(&entry));
                    if !block.key_groups.contains(kg) {
                        return Err(scope.reject(block.misplaced(name, "key", kg)));
                    }
                    *slot = mark;
                    // `bytes` is the payload's tail from the entry on (and
                    // a payload is shorter than 4 GiB).
                    entries.push((index, (payload.len() - bytes.len()) as u32));
                }
                reading.finish(block)?;
            }
            stats.delta_entries += entries.len();
            lists.push(Won {
                payloads,
                entries: entries.into_iter(),
            });
        }
        let mut winners = Self {
            marks,
            lists,
            next: 0,
        };
        winners.next = winners.find(0);
        Ok(winners)
    }

    /// The first slot from `from` on that a delta decided (`usize::MAX`
    /// if none), eight marks at a time.
    #[inline]
    fn find(&self, from: usize) -> usize {
        const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let mut at = from & !7;
        // The marks before `from` cleared.
        let mut clear = u64::MAX << (8 * (from - at));
        while let Some(word) = self.marks.get(at..at + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("eight marks")) & clear;
            // The high bit of every mark that is not UNDECIDED.
            let decided = (((word & LOW) + LOW) | word) & !LOW;
            if decided != 0 {
                return at + decided.trailing_zeros() as usize / 8;
            }
            at += 8;
            clear = u64::MAX;
        }
        usize::MAX
    }

    /// Puts the winning entries of the slots up to `slot` into `out`, in
    /// slot order; returns whether a delta decided `slot` itself (the
    /// table blocks' entry there, if any, is superseded).
    #[inline(never)]
    fn take_up_to<S: RestoreSink>(
        &mut self,
        slot: usize,
        groups: &KeyGroupAssigner,
        out: &mut Target<'_, S>,
    ) -> bool {
        while self.next <= slot && self.next != usize::MAX {
            let pos = self.next;
            self.next = self.find(pos + 1);
            let mark = self.marks[pos];
            if mark != EMPTIED {
                // The delta's winners are in slot order, and every
                // earlier one was taken at its slot: this is the entry of
                // `pos`.
                let won = &mut self.lists[usize::from(mark - 1)];
                let (block, at) = won
                    .entries
                    .next()
                    .expect("a winning entry for every slot marked with its delta");
                let bytes = &won.payloads[block as usize][at as usize..];
                // Decoded once already, when read (decoding is a function
                // of the bytes).
                let (entry, _) = S::decode(bytes).expect("a winning entry decodes again");
                let hash = S::group_hash(&entry);
                out.put(pos, entry, hash, groups.key_group(hash));
            }
            if pos == slot {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests;
