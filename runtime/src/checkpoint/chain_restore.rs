//! Restoring a value table written incrementally (see
//! [`incremental`](super::incremental)): per old subtask, a chain of the
//! full checkpoint's table blocks and the deltas since.
//!
//! A slot of the table at the newest checkpoint holds what the newest
//! block that mentions it says: the newest delta's record of the slot if
//! a delta has one, else the full checkpoint's table block. The deltas
//! are read first, newest first, each record once: the first record of a
//! slot decides it (a bit per slot), and if it holds an entry, that entry
//! wins the slot (a list per delta, in slot order, as a delta's records
//! are). Then the table blocks are read in slot order, their entries of
//! decided slots skipped, and the winning entries go in between, merged
//! from the deltas' lists by slot: out comes the newest table, slot by
//! slot. At the same parallelism, into a table of the chain's capacity,
//! every entry goes back to its slot without a probe, as a full
//! checkpoint's table blocks do ([`keyed_restore`](super::keyed_restore));
//! at another parallelism the entries of the key groups the subtask owns
//! are inserted. Each block's header, records, order, key groups and
//! checksum are checked as in `keyed_restore`; nothing restored counts
//! unless every check passed.

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
                    if pos >= deltas.next_slot() {
                        deltas.put_up_to::<S>(pos, &groups, &mut out);
                    }
                    if deltas.decided(pos) {
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
        deltas.put_up_to::<S>(usize::MAX, &groups, &mut out);
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

/// The deltas of a chain, read: which slots they decide, and the entries
/// that win their slots.
struct Winners<'a> {
    /// One bit per slot of the table: a delta decided it (its entry wins
    /// it, or it emptied it). Empty when the chain has no delta. (A bit,
    /// not more: the deltas' records set them in random order, and a
    /// bitmap of a few MB stays in cache.)
    decided: Vec<u64>,
    /// Per delta, newest first, its winning entries in slot order.
    lists: Vec<Won<'a>>,
    /// The winning entries of every delta, each delta's a run of them
    /// ([`Won::next`]..[`Won::end`]): the slot, the block (index in its
    /// delta's [`Won::payloads`]) and the entry's offset in the block's
    /// payload. One list, reserved once: fresh memory is what a restore
    /// pays most for (the kernel clears it a huge page at a time), so the
    /// list neither grows nor starts a huge page per delta.
    entries: Vec<(usize, u32, u32)>,
    /// The next slot of each list (`usize::MAX` when it has no more).
    heads: Vec<usize>,
    /// The lowest of `heads`, and its list: the next winning entry.
    next: (usize, usize),
}

/// The winning entries of one delta.
struct Won<'a> {
    /// The payloads of the delta's blocks.
    payloads: Vec<&'a [u8]>,
    /// Its next entry not taken, in [`Winners::entries`].
    next: usize,
    /// The end of its entries there.
    end: usize,
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
        let mut decided = if by_delta.is_empty() {
            Vec::new()
        } else {
            vec![0u64; (1usize << reading.log2_capacity).div_ceil(64)]
        };
        let mut lists = Vec::with_capacity(by_delta.len());
        // Room for all their records (each takes at least 5 bytes of its
        // block): room not touched costs nothing.
        let most = by_delta
            .iter()
            .flat_map(|blocks| blocks.iter())
            .map(|e| e.length as usize / 5)
            .sum();
        let mut entries: Vec<(usize, u32, u32)> = Vec::with_capacity(most);
        for &blocks in by_delta {
            let start = entries.len();
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
                    let (word, bit) = (&mut decided[pos / 64], 1u64 << (pos % 64));
                    if *word & bit != 0 {
                        continue;
                    }
                    *word |= bit;
                    let Some((entry, bytes)) = entry else {
                        continue;
                    };
                    let kg = groups.key_group(S::group_hash(&entry));
                    if !block.key_groups.contains(kg) {
                        return Err(scope.reject(block.misplaced(name, "key", kg)));
                    }
                    // `bytes` is the payload's tail from the entry on (and
                    // a payload is shorter than 4 GiB).
                    entries.push((pos, index, (payload.len() - bytes.len()) as u32));
                }
                reading.finish(block)?;
            }
            lists.push(Won {
                payloads,
                next: start,
                end: entries.len(),
            });
        }
        stats.delta_entries += entries.len();
        let head = |won: &Won<'_>| entries.get(won.next).filter(|_| won.next < won.end);
        let heads: Vec<usize> = lists
            .iter()
            .map(|won| head(won).map_or(usize::MAX, |e| e.0))
            .collect();
        let mut winners = Self {
            decided,
            lists,
            entries,
            heads,
            next: (usize::MAX, 0),
        };
        winners.find_next();
        Ok(winners)
    }

    /// Whether a delta decided slot `pos` (the table blocks' entry there,
    /// if any, is superseded).
    #[inline(always)]
    fn decided(&self, pos: usize) -> bool {
        self.decided
            .get(pos / 64)
            .is_some_and(|w| w >> (pos % 64) & 1 != 0)
    }

    /// The slot of the next winning entry (`usize::MAX` if none).
    #[inline(always)]
    fn next_slot(&self) -> usize {
        self.next.0
    }

    #[inline]
    fn find_next(&mut self) {
        let mut next = (usize::MAX, 0);
        for (i, &slot) in self.heads.iter().enumerate() {
            if slot < next.0 {
                next = (slot, i);
            }
        }
        self.next = next;
    }

    /// Puts the winning entries of the slots up to `slot` into `out`, in
    /// slot order.
    #[inline(never)]
    fn put_up_to<S: RestoreSink>(
        &mut self,
        slot: usize,
        groups: &KeyGroupAssigner,
        out: &mut Target<'_, S>,
    ) {
        while self.next.0 <= slot && self.next.0 != usize::MAX {
            let (pos, list) = self.next;
            let won = &mut self.lists[list];
            let (_, block, at) = self.entries[won.next];
            won.next += 1;
            self.heads[list] = if won.next < won.end {
                self.entries[won.next].0
            } else {
                usize::MAX
            };
            let bytes = &won.payloads[block as usize][at as usize..];
            self.find_next();
            // Decoded once already, when read (decoding is a function of
            // the bytes).
            let (entry, _) = S::decode(bytes).expect("a winning entry decodes again");
            let hash = S::group_hash(&entry);
            out.put(pos, entry, hash, groups.key_group(hash));
        }
    }
}

#[cfg(test)]
mod tests;
