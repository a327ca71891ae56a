//! Restoring a keyed table written incrementally (see
//! [`incremental`](super::incremental)): per old subtask, a chain of the
//! full checkpoint's table blocks and the deltas since.
//!
//! A slot of the table at the newest checkpoint holds what the newest
//! block that mentions it says: the newest delta's record of the slot if
//! a delta has one, else the full checkpoint's table block. The table
//! blocks are read in slot order, and the deltas (each in slot order
//! too) alongside them, a window of slots at a time: the deltas' records
//! of the window, newest delta first, mark each slot with the delta that
//! decides it (or as emptied), in a byte per slot of the window that
//! stays in cache; then the table blocks' entries of the window go out
//! in slot order, those of decided slots skipped, and the winning entries
//! of the deltas in between (where they lie in the deltas' blocks, which
//! the window notes too). So out comes the newest table, slot by slot,
//! every record and entry read where it lies, nothing kept aside. At the same parallelism, into a table of the chain's capacity,
//! every entry goes back to its slot without a probe, as a full
//! checkpoint's table blocks do ([`keyed_restore`](super::keyed_restore));
//! at another parallelism the entries of the key groups the subtask owns
//! are inserted. Each block's header, records, order, key groups and
//! checksum are checked as in `keyed_restore`; nothing restored counts
//! unless every check passed.

use weir_state::snapshot::{BlockKind, Extent};
use weir_state::{KeyGroupAssigner, KeyGroupRange};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::{next_window, KeyedBlock, RestoreScope};
use crate::checkpoint::restore_sink::RestoreSink;
use crate::checkpoint::table_block::TableBlock;
use crate::checkpoint::table_delta::{DeltaBlock, DeltaRecordError, DeltaRecords};

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
            let what = format_args!(
                "a chain of {} deltas (at most {MAX_DELTAS})",
                by_delta.len()
            );
            return Err(scope.reject(block.malformed(name, 0, what)));
        }
        let mut deltas = Deltas::new(reading, &by_delta);
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
                    if pos >= deltas.next
                        && deltas.take_up_to::<S>(pos, &groups, &mut out, &mut stats)?
                    {
                        stats.superseded += 1;
                        continue;
                    }
                    let hash = S::group_hash(&entry);
                    let kg = groups.key_group(hash);
                    if !block.key_groups.contains(kg) {
                        return Err(scope.reject(block.misplaced(name, "key", kg)));
                    }
                    out.put(pos, entry, hash, || kg);
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
        deltas.take_up_to::<S>(usize::MAX, &groups, &mut out, &mut stats)?;
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
    /// hash `hash`, in key group `kg()`). Placed entries come in slot
    /// order.
    #[inline(always)]
    fn put(&mut self, pos: usize, entry: S::Entry, hash: u64, kg: impl FnOnce() -> u32) {
        if self.placing {
            self.placed.push((pos, entry, hash));
            if self.placed.len() == BATCH {
                self.sink.place_batch(&mut self.placed, &mut self.deferred);
            }
        } else if self.mine.contains(kg()) {
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

/// Slots of a window of the deltas' records ([`Deltas`]): its marks
/// (16 KiB) stay in the cache, and a window holds ~1% of its slots' worth
/// of records per delta of 1% of the keys.
const WINDOW: usize = 1 << 14;

/// The mark of a slot a delta emptied; `0` is a slot no delta decided,
/// `1 + i` one the `i`th delta (newest first) holds an entry of.
const EMPTIED: u8 = u8::MAX;

/// Deltas a chain may have: their marks are bytes below [`EMPTIED`]. (A
/// writer makes chains of at most
/// [`MAX_INCREMENTS`](super::incremental::MAX_INCREMENTS).)
const MAX_DELTAS: usize = EMPTIED as usize - 1;

/// The deltas of a chain, read a window of slots at a time alongside the
/// table blocks: of each slot, the newest record.
struct Deltas<'r, 'a> {
    reading: Reading<'r, 'a>,
    /// The deltas, newest first.
    streams: Vec<DeltaStream<'r, 'a>>,
    /// Per slot of the window, the mark of the delta that decides it.
    marks: Vec<u8>,
    /// Per slot of the window a delta's entry wins, where the entry is:
    /// the block (in its delta's [`DeltaStream::blocks`]) and the offset
    /// in the block's payload.
    winners: Vec<(u32, u32)>,
    /// The window's first slot; `active` while its marks are in `marks`.
    lo: usize,
    active: bool,
    /// The slots of the window before it are taken (their winning
    /// entries put).
    scan: usize,
    /// The window's first decided slot from `scan` on (its end if none).
    found: usize,
    /// The lowest slot whose table entry needs [`take_up_to`](Self::take_up_to)
    /// first: the next decided slot of the window, the window's end, or
    /// the next window's start (`usize::MAX` after the last record).
    next: usize,
}

impl<'r, 'a> Deltas<'r, 'a> {
    /// The deltas `by_delta` (each its blocks in slot order, newest first).
    fn new(reading: Reading<'r, 'a>, by_delta: &[&'r [&'a Extent]]) -> Self {
        Self {
            reading,
            streams: by_delta
                .iter()
                .map(|blocks| DeltaStream::new(blocks))
                .collect(),
            marks: vec![0; WINDOW],
            winners: vec![(0, 0); WINDOW],
            lo: 0,
            active: false,
            scan: 0,
            found: 0,
            next: 0,
        }
    }

    /// Puts the winning entries of the slots up to `slot` into `out`, in
    /// slot order (reading the deltas as far as needed); returns whether a
    /// delta decided `slot` itself (the table blocks' entry there, if any,
    /// is superseded). `usize::MAX` reads the deltas to their end.
    #[inline(never)]
    fn take_up_to<S: RestoreSink>(
        &mut self,
        slot: usize,
        groups: &KeyGroupAssigner,
        out: &mut Target<'_, S>,
        stats: &mut ChainRestored,
    ) -> Result<bool, RestoreError> {
        loop {
            if self.active {
                let end = self.lo + WINDOW;
                let after = self.put_through::<S>(slot.min(end - 1), groups, out, stats)?;
                if slot < end {
                    self.next = after;
                    return Ok(self.marks[slot - self.lo] != 0);
                }
                self.active = false;
            }
            if !self.open_window::<S>(slot)? {
                return Ok(false);
            }
        }
    }

    /// Makes the next window that holds a record the window, marking its
    /// slots with the deltas' records, if it starts at or before `slot`;
    /// else sets [`next`](Self::next) to where it starts and returns false.
    #[inline(never)]
    fn open_window<S: RestoreSink>(&mut self, slot: usize) -> Result<bool, RestoreError> {
        let mut first = usize::MAX;
        for d in &mut self.streams {
            first = first.min(d.peek::<S>(self.reading)?.map_or(usize::MAX, |r| r.0));
        }
        if first == usize::MAX {
            self.next = usize::MAX;
            return Ok(false);
        }
        let start = first - first % WINDOW;
        if slot < start {
            self.next = start;
            return Ok(false);
        }
        // Its records, newest delta first: the first of a slot decides.
        self.marks.fill(0);
        (self.lo, self.scan, self.active) = (start, start, true);
        let end = start + WINDOW;
        for (i, d) in self.streams.iter_mut().enumerate() {
            let mark = i as u8 + 1;
            loop {
                let (pos, entry) = match d.head.take() {
                    Some(record) => record,
                    None => match d.read::<S>(self.reading)? {
                        Some(record) => record,
                        None => break,
                    },
                };
                if pos >= end {
                    d.head = Some((pos, entry));
                    break;
                }
                let m = &mut self.marks[pos - start];
                if *m == 0 {
                    *m = match entry {
                        Some(at) => {
                            self.winners[pos - start] = at;
                            mark
                        }
                        None => EMPTIED,
                    };
                }
            }
        }
        self.found = self.find(start);
        Ok(true)
    }

    /// Puts the winning entries of the window's slots from `scan` through
    /// `last` into `out`; returns the window's first decided slot after
    /// `last` (its end if none).
    fn put_through<S: RestoreSink>(
        &mut self,
        last: usize,
        groups: &KeyGroupAssigner,
        out: &mut Target<'_, S>,
        stats: &mut ChainRestored,
    ) -> Result<usize, RestoreError> {
        let mut pos = self.found;
        while pos <= last {
            let mark = self.marks[pos - self.lo];
            if mark != EMPTIED {
                let d = &self.streams[usize::from(mark - 1)];
                let (block, at) = self.winners[pos - self.lo];
                let (payload, key_groups) = d.blocks[block as usize];
                // Decoded once already, when read (decoding is a function
                // of the bytes).
                let (entry, _) =
                    S::decode(&payload[at as usize..]).expect("a winning entry decodes again");
                let hash = S::group_hash(&entry);
                let kg = groups.key_group(hash);
                if !key_groups.contains(kg) {
                    return Err(d.misplaced(block, kg, self.reading));
                }
                stats.delta_entries += 1;
                out.put(pos, entry, hash, || kg);
            }
            pos = self.find(pos + 1);
        }
        (self.scan, self.found) = (last + 1, pos);
        Ok(pos)
    }

    /// The first slot of the window from `from` on that a delta decided,
    /// else the window's end; eight marks at a time.
    #[inline]
    fn find(&self, from: usize) -> usize {
        const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let end = self.lo + WINDOW;
        let mut at = (from - self.lo) & !7;
        // The marks before `from` cleared.
        let mut clear = u64::MAX << (8 * ((from - self.lo) - at));
        while let Some(word) = self.marks.get(at..at + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("eight marks")) & clear;
            // The high bit of every mark that is not 0.
            let decided = (((word & LOW) + LOW) | word) & !LOW;
            if decided != 0 {
                return self.lo + at + decided.trailing_zeros() as usize / 8;
            }
            at += 8;
            clear = u64::MAX;
        }
        end
    }
}

/// A delta's record as read: its slot and, if it holds an entry, where
/// (see [`Deltas::winners`]).
type Record = (usize, Option<(u32, u32)>);

/// One delta of a chain, its records read in slot order, each block and
/// record checked.
struct DeltaStream<'r, 'a> {
    extents: &'r [&'a Extent],
    /// The block being read, its records, and where they start.
    block: Option<(KeyedBlock<'a>, DeltaRecords<'a>, usize)>,
    /// The slot after the last block's part (blocks come in slot order).
    end: u64,
    /// The next record read and not marked yet: its slot and, if it holds
    /// an entry, where (see [`Deltas::winners`]).
    head: Option<Record>,
    /// The payload and key groups of every block opened, in order (the
    /// index of the next of `extents` to open is their number).
    blocks: Vec<(&'a [u8], KeyGroupRange)>,
}

impl<'r, 'a> DeltaStream<'r, 'a> {
    fn new(extents: &'r [&'a Extent]) -> Self {
        Self {
            extents,
            block: None,
            end: 0,
            head: None,
            blocks: Vec::with_capacity(extents.len()),
        }
    }

    /// The next record not marked yet, reading (and checking) it if need
    /// be.
    #[inline]
    fn peek<S: RestoreSink>(
        &mut self,
        reading: Reading<'_, 'a>,
    ) -> Result<Option<Record>, RestoreError> {
        if self.head.is_none() {
            self.head = self.read::<S>(reading)?;
        }
        Ok(self.head)
    }

    /// Reads the next record, finishing and opening blocks as needed: its
    /// slot and, if it holds an entry, where.
    fn read<S: RestoreSink>(
        &mut self,
        reading: Reading<'_, 'a>,
    ) -> Result<Option<Record>, RestoreError> {
        loop {
            if let Some((block, records, body_at)) = &mut self.block {
                let payload = block.payload;
                // A payload is shorter than 4 GiB, a delta has fewer
                // blocks.
                let index = (self.blocks.len() - 1) as u32;
                let record = records.next(|bytes| {
                    S::decode(bytes)
                        .map(|(_, n)| ((index, (payload.len() - bytes.len()) as u32), n))
                        .map_err(|_| DeltaRecordError::Short)
                });
                match record {
                    Ok(Some(record)) => return Ok(Some(record)),
                    Ok(None) => {
                        let (block, _, _) = self.block.take().expect("a block being read");
                        reading.finish(block)?;
                    }
                    Err(err) => {
                        let at = *body_at + records.read();
                        let scope = reading.scope;
                        return Err(scope.reject(block.malformed(reading.name, at, err)));
                    }
                }
            }
            let Some(&e) = self.extents.get(self.blocks.len()) else {
                return Ok(None);
            };
            let mut parsed = None;
            let (block, _, end) = reading.open(e, self.end, |payload| {
                let delta = DeltaBlock::parse(payload).map_err(|e| e.to_string())?;
                let h = delta.header;
                parsed = Some((delta.records(), payload.len() - delta.body.len()));
                Ok((h.log2_capacity, h.first_slot, h.slot_count))
            })?;
            self.end = end;
            let (records, body_at) = parsed.expect("parsed with its header");
            self.blocks.push((block.payload, block.key_groups));
            self.block = Some((block, records, body_at));
        }
    }

    /// The error of an entry of key group `kg` in block `block`.
    #[cold]
    fn misplaced(&self, block: u32, kg: u32, reading: Reading<'_, 'a>) -> RestoreError {
        let e = self.extents[block as usize];
        match reading.scope.open_block(e) {
            Ok(block) => reading
                .scope
                .reject(block.misplaced(reading.name, "key", kg)),
            Err(err) => err,
        }
    }
}
