//! Restoring a value table written incrementally (see
//! [`incremental`](super::incremental)): per old subtask, a chain of the
//! full checkpoint's table blocks and the deltas since.
//!
//! The deltas are read newest first: the first record of a slot decides
//! it (the slot's contents at the newest checkpoint); then the table
//! blocks, whose slots not decided by a delta go back as from a full
//! checkpoint (slot for slot at the same parallelism, else entry by entry
//! keeping the key groups the subtask owns); the deltas' entries are
//! inserted last. Each block's header, records, key groups and checksum
//! are checked as in [`keyed_restore`](super::keyed_restore); nothing
//! restored counts unless every check passed.

use weir_state::snapshot::{BlockKind, Extent};
use weir_state::KeyGroupAssigner;

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::checkpoint::restore_sink::RestoreSink;
use crate::checkpoint::table_block::TableBlock;
use crate::checkpoint::table_delta::{DeltaBlock, DeltaRecordError};

/// Restores the chains `chains` of state `name` (from
/// [`RestoreScope::keyed_chains`]) into `sink`.
pub(crate) fn restore_chains<S: RestoreSink>(
    scope: &RestoreScope<'_>,
    name: &str,
    chains: &[Vec<&Extent>],
    sink: &mut S,
) -> Result<(), RestoreError> {
    let mine = scope.key_groups();
    let groups = KeyGroupAssigner::new(scope.max_parallelism(), 1);
    let mut late: Vec<(S::Entry, u64)> = Vec::new();
    let mut deferred: Vec<(S::Entry, u64)> = Vec::new();
    let mut placed: Vec<(usize, S::Entry, u64)> = Vec::with_capacity(64);
    let mut batch: Vec<(S::Entry, u64)> = Vec::with_capacity(64);
    for chain in chains {
        // Read-ahead per segment: a chain's blocks are in the segments of
        // up to eleven checkpoints.
        for run in chain.chunk_by(|a, b| a.segment == b.segment) {
            scope.will_need(run);
        }
        let (tables, deltas): (Vec<&Extent>, Vec<&Extent>) =
            chain.iter().partition(|e| e.kind == BlockKind::KeyedTable);
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
        let capacity = 1usize << head.log2_capacity;
        let whole = chain.iter().all(|e| e.key_groups == mine);
        if whole {
            sink.reserve(head.table_len as usize);
            sink.reserve_table(capacity);
        }
        // Asked after sizing: an empty table has its smallest capacity,
        // which no table block of the chain's size fits.
        let placing = whole && sink.placeable(head.log2_capacity);
        let mut decided = vec![0u64; capacity.div_ceil(64)];
        for &e in deltas.iter().rev() {
            let mut block = scope.open_block(e)?;
            let delta = DeltaBlock::parse(block.payload)
                .map_err(|err| scope.reject(block.malformed(name, 0, err)))?;
            if delta.header.log2_capacity != head.log2_capacity {
                return Err(scope.reject(block.malformed(
                    name,
                    0,
                    "a delta of a table of another capacity than its chain's",
                )));
            }
            let body_at = block.payload.len() - delta.body.len();
            let mut failed: Option<RestoreError> = None;
            let framing = delta.for_each(
                |bytes| {
                    S::decode(bytes)
                        .map(|(_, n)| n)
                        .map_err(|_| DeltaRecordError::Short)
                },
                |pos, entry| {
                    let bit = 1u64 << (pos % 64);
                    if decided[pos / 64] & bit != 0 {
                        return Ok(());
                    }
                    decided[pos / 64] |= bit;
                    if let Some(bytes) = entry {
                        let Ok((entry, _)) = S::decode(bytes) else {
                            return Err(DeltaRecordError::Short);
                        };
                        let hash = S::group_hash(&entry);
                        let kg = groups.key_group(hash);
                        if !block.key_groups.contains(kg) {
                            failed.get_or_insert(block.misplaced(name, "key", kg));
                            return Err(DeltaRecordError::Short);
                        }
                        if mine.contains(kg) {
                            late.push((entry, hash));
                        }
                    }
                    Ok(())
                },
            );
            if let Some(e) = failed {
                return Err(scope.reject(e));
            }
            framing.map_err(|err| scope.reject(block.malformed(name, body_at, err)))?;
            block.check.update(block.payload);
            scope.finish_check(name, block.check)?;
        }
        for &e in &tables {
            let mut block = scope.open_block(e)?;
            let table = TableBlock::parse(block.payload)
                .map_err(|err| scope.reject(block.malformed(name, 0, err)))?;
            if table.header.log2_capacity != head.log2_capacity {
                return Err(scope.reject(block.malformed(
                    name,
                    0,
                    "a table block of another capacity than its chain's",
                )));
            }
            let entries_at = block.payload.len() - table.entries.len();
            let bytes = table.entries;
            let mut at = 0;
            for pos in table.positions() {
                let (entry, n) = S::decode(&bytes[at..])
                    .map_err(|err| scope.reject(block.malformed(name, entries_at + at, err)))?;
                at += n;
                if decided[pos / 64] & (1 << (pos % 64)) != 0 {
                    continue;
                }
                let hash = S::group_hash(&entry);
                let kg = groups.key_group(hash);
                if !block.key_groups.contains(kg) {
                    return Err(scope.reject(block.misplaced(name, "key", kg)));
                }
                if placing {
                    placed.push((pos, entry, hash));
                    if placed.len() == placed.capacity() {
                        sink.place_batch(&mut placed, &mut deferred);
                    }
                } else if mine.contains(kg) {
                    batch.push((entry, hash));
                    if batch.len() == batch.capacity() {
                        sink.insert_batch(&mut batch);
                    }
                }
            }
            if at != bytes.len() {
                return Err(scope.reject(block.malformed(
                    name,
                    entries_at + at,
                    "bytes after the entries of its used slots",
                )));
            }
            sink.place_batch(&mut placed, &mut deferred);
            block.check.update(block.payload);
            scope.finish_check(name, block.check)?;
        }
    }
    sink.insert_batch(&mut batch);
    sink.insert_batch(&mut deferred);
    sink.insert_batch(&mut late);
    sink.finish();
    Ok(())
}
