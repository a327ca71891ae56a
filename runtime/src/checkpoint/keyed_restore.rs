//! Reading a keyed state back from a checkpoint: every block of the state
//! that overlaps the subtask's key groups, checked and decoded into a
//! `RestoreSink` that each state kind implements.

use std::time::{Duration, Instant};

use weir_state::snapshot::BlockKind;
use weir_state::{KeyGroupAssigner, KeyGroupRange};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::{next_window, KeyedBlock, RestoreScope};
use crate::checkpoint::table_block::TableBlock;
use crate::core::log::CHECKPOINT;

pub(crate) use crate::checkpoint::restore_sink::RestoreSink;

/// Entries of a table block with their slots, `(slot, entry, hash)`.
type Placed<E> = Vec<(usize, E, u64)>;

/// Entries with their hashes, `(entry, hash)`.
type Batch<E> = Vec<(E, u64)>;

/// Entries of a table block placed at once ([`RestoreSink::place_batch`]).
const PLACE_BATCH: usize = 64;

/// The key group of the entry of key-group hash `hash` read from `block`,
/// or the error that makes the checkpoint unusable if the block does not
/// hold that key group.
fn checked_key_group(
    scope: &RestoreScope<'_>,
    name: &str,
    block: &KeyedBlock<'_>,
    groups: &KeyGroupAssigner,
    hash: u64,
) -> Result<u32, RestoreError> {
    let kg = groups.key_group(hash);
    if block.key_groups.contains(kg) {
        return Ok(kg);
    }
    Err(scope.reject(block.misplaced(name, "key", kg)))
}

/// The calling thread's CPU time so far, in user and in kernel mode, and
/// its page faults (zero where they cannot be read): the restore's trace
/// says how much of its time was its own work and how much the kernel's
/// (faulting in the table's fresh memory), whatever else ran on the core
/// meanwhile.
fn thread_cpu() -> (Duration, Duration, u64) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the `rusage` it is given a pointer to,
    // and the zeroed one is a valid value if it fails.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let faults = (usage.ru_minflt.max(0) + usage.ru_majflt.max(0)) as u64;
    (time(usage.ru_utime), time(usage.ru_stime), faults)
}

/// Puts the entries of the table block `table` (of `block`, whose payload
/// holds `head` bytes of header and occupancy before them) back at their
/// slots in `sink`, which [`RestoreSink::placeable`] said has the block's
/// capacity, checking each entry's key group against the block's and
/// feeding the entries' bytes to the block's checksum. Entries that cannot
/// go to their slot are left in `deferred`.
fn place_table_block<S: RestoreSink>(
    scope: &RestoreScope<'_>,
    name: &str,
    block: &mut KeyedBlock<'_>,
    table: &TableBlock<'_>,
    (groups, head): (&KeyGroupAssigner, usize),
    sink: &mut S,
    (placed, deferred): (&mut Placed<S::Entry>, &mut Batch<S::Entry>),
) -> Result<(), RestoreError> {
    const CHECKED: usize = 32 << 10;
    let bytes = table.entries;
    let mut at = 0;
    let mut checked = 0;
    for pos in table.positions() {
        let (entry, n) = S::decode(&bytes[at..])
            .map_err(|e| scope.reject(block.malformed(name, head + at, e)))?;
        at += n;
        let hash = S::group_hash(&entry);
        checked_key_group(scope, name, block, groups, hash)?;
        placed.push((pos, entry, hash));
        if placed.len() == PLACE_BATCH {
            sink.place_batch(placed, deferred);
            // The checksum in pieces of CHECKED bytes, while they are in
            // cache: large enough for its three-way parallel loop.
            if at - checked >= CHECKED {
                block.check.update(&bytes[checked..at]);
                checked = at;
            }
        }
    }
    sink.place_batch(placed, deferred);
    block.check.update(&bytes[checked..at]);
    if at != bytes.len() {
        return Err(scope.reject(block.malformed(
            name,
            head + at,
            "bytes after the entries of its used slots",
        )));
    }
    Ok(())
}

/// Restores keyed state `name` of `scope` into `sink`: every entry of every
/// block overlapping the subtask's key groups whose key group it owns.
///
/// Table blocks ([`super::table_block`]) of a table of the capacity the
/// sink has put their entries back at their slots; table blocks of
/// another capacity, or overlapping other key groups (the parallelism
/// changed), are read entry by entry like blocks per key group.
pub(crate) fn restore_entries<S: RestoreSink>(
    scope: &RestoreScope<'_>,
    name: &str,
    sink: &mut S,
) -> Result<(), RestoreError> {
    let name = name.to_owned();
    let started = Instant::now();
    let cpu = thread_cpu();
    // The thread's CPU time since `cpu`, user and kernel, and its page
    // faults.
    let cpu_since = || {
        let now = thread_cpu();
        (
            now.0.saturating_sub(cpu.0),
            now.1.saturating_sub(cpu.1),
            now.2.saturating_sub(cpu.2),
        )
    };
    let chains = scope.keyed_chains(&name);
    if !chains.is_empty() {
        let done = crate::checkpoint::chain_restore::restore_chains(scope, &name, &chains, sink)?;
        let (user, sys, faults) = cpu_since();
        let info = scope.subtask_info();
        // `delta_entries`: entries the deltas decided; `superseded`:
        // entries of the full checkpoint's blocks a delta replaced;
        // `inserted_after`: entries that did not fit their slots; `user`,
        // `sys`, `faults`: the thread's CPU time and page faults.
        tracing::debug!(
            target: CHECKPOINT,
            checkpoint = scope.checkpoint_id(),
            operator = scope.uid(),
            subtask = info.index,
            worker = info.worker,
            state = name.as_str(),
            chains = chains.len(),
            entries = sink.entry_count(),
            elapsed = ?started.elapsed(),
            delta_entries = done.delta_entries,
            superseded = done.superseded,
            inserted_after = done.inserted_after,
            user = ?user,
            sys = ?sys,
            faults,
            "restored state from incremental chains"
        );
        return Ok(());
    }
    let extents = scope.keyed_extents(&name);
    let mine = scope.key_groups();
    // At an unchanged parallelism every key of a block is ours.
    // (Ranges are contiguous: holding both ends holds it all.)
    let all_mine = |kgs: KeyGroupRange| {
        !kgs.is_empty() && mine.contains(kgs.start()) && mine.contains(kgs.end() - 1)
    };
    let total: u64 = extents.iter().map(|e| e.length).sum();
    // Size the table once. The blocks of one table of exactly our key
    // groups (the parallelism did not change) say its capacity and
    // length; otherwise the first entry's encoded size estimates the
    // number of entries from the extents' lengths (slightly over, by the
    // blocks' headers and padding).
    let one_table = extents
        .iter()
        .all(|e| e.kind == BlockKind::KeyedTable && e.key_groups == mine);
    if let Some(&first) = extents.first() {
        let block = scope.open_block(first)?;
        let corrupt = |e: &dyn std::fmt::Display| scope.reject(block.malformed(&name, 0, e));
        let entries = if first.kind == BlockKind::KeyedTable {
            let table = TableBlock::parse(block.payload).map_err(|e| corrupt(&e))?;
            if one_table {
                // Every slot is one bit of some block's occupancy.
                let capacity = 1u64 << table.header.log2_capacity;
                if capacity > total.saturating_mul(8) {
                    return Err(corrupt(&format_args!(
                        "a table of {capacity} slots cannot be stored in {total} bytes"
                    )));
                }
                sink.reserve(table.header.table_len.min(total) as usize);
                sink.reserve_table(capacity as usize);
            }
            table.entries
        } else {
            block.payload
        };
        if !one_table && !entries.is_empty() {
            let (_, entry) = S::decode(entries).map_err(|e| corrupt(&e))?;
            sink.reserve((total / entry.max(1) as u64) as usize);
        }
    }
    let reserved = started.elapsed();
    // Entries land at scattered table positions: they are decoded in
    // batches, each one's slot prefetched as it is decoded and the batch
    // inserted after, so the cache misses overlap.
    const BATCH: usize = 32;
    let groups = KeyGroupAssigner::new(scope.max_parallelism(), 1);
    let mut batch: Batch<S::Entry> = Vec::with_capacity(BATCH);
    let mut placed: Placed<S::Entry> = Vec::with_capacity(PLACE_BATCH);
    let mut deferred: Batch<S::Entry> = Vec::new();
    // The blocks are taken in file order, a window of about WINDOW bytes
    // at a time, the next window asked for while this one is decoded, so
    // that decoding follows the device's reads instead of waiting for the
    // whole segment. A writer serializes a large state part by part, each part one
    // region of its table, with one block per key group: within a window
    // the blocks are taken in lockstep, a slice of each per round, so that
    // each round inserts into one region of the new table, which is
    // cache-friendly. (Only speed depends on this order; any order
    // restores the same state.)
    const ROUNDS: usize = 64;
    let mut blocks: Vec<KeyedBlock<'_>> = Vec::new();
    let mut cursors: Vec<usize> = Vec::new();
    let mut rest = extents.as_slice();
    let mut block_count = 0;
    let mut table_blocks_placed = 0;
    scope.will_need(&rest[..next_window(rest)]);
    while !rest.is_empty() {
        let (window, later) = rest.split_at(next_window(rest));
        rest = later;
        // While this window is decoded, the device reads the next one.
        scope.will_need(&rest[..next_window(rest)]);
        blocks.clear();
        for &e in window {
            let mut block = scope.open_block(e)?;
            block_count += 1;
            if block.kind == BlockKind::KeyedTable {
                let table = TableBlock::parse(block.payload)
                    .map_err(|e| scope.reject(block.malformed(&name, 0, e)))?;
                let head = block.payload.len() - table.entries.len();
                block.check.update(&block.payload[..head]);
                if all_mine(block.key_groups) && sink.placeable(table.header.log2_capacity) {
                    place_table_block(
                        scope,
                        &name,
                        &mut block,
                        &table,
                        (&groups, head),
                        sink,
                        (&mut placed, &mut deferred),
                    )?;
                    table_blocks_placed += 1;
                    scope.finish_check(&name, block.check)?;
                    continue;
                }
                // Read entry by entry, like a block per key group.
                block.payload = table.entries;
            }
            blocks.push(block);
        }
        cursors.clear();
        cursors.resize(blocks.len(), 0);
        // Each block's checksum is computed over the bytes as they are
        // decoded (one pass over the mapped pages); nothing decoded counts
        // until every checksum matched: a mismatch makes the checkpoint
        // unusable.
        for round in 1..=ROUNDS {
            for (block, pos) in blocks.iter_mut().zip(cursors.iter_mut()) {
                let bytes = block.payload;
                let all_mine = all_mine(block.key_groups);
                let end = bytes.len() * round / ROUNDS;
                let from = *pos;
                while *pos < end {
                    let at = *pos;
                    let (entry, n) = S::decode(&bytes[at..])
                        .map_err(|e| scope.reject(block.malformed(&name, at, e)))?;
                    *pos = at + n;
                    let hash = S::group_hash(&entry);
                    let kg = checked_key_group(scope, &name, block, &groups, hash)?;
                    if all_mine || mine.contains(kg) {
                        sink.prefetch(&entry, hash);
                        batch.push((entry, hash));
                        if batch.len() == BATCH {
                            sink.insert_batch(&mut batch);
                        }
                    }
                }
                block.check.update(&bytes[from..*pos]);
            }
        }
        for block in blocks.drain(..) {
            scope.finish_check(&name, block.check)?;
        }
    }
    sink.insert_batch(&mut batch);
    let deferred_count = deferred.len();
    sink.insert_batch(&mut deferred);
    sink.finish();
    let (user, sys, faults) = cpu_since();
    let info = scope.subtask_info();
    // `sizing`: the time to size the table; `table_blocks_placed`: table
    // blocks put back slot for slot; `inserted_after`: their entries that
    // did not fit their slots and were inserted after; `user`, `sys`,
    // `faults`: the thread's CPU time and page faults.
    tracing::debug!(
        target: CHECKPOINT,
        checkpoint = scope.checkpoint_id(),
        operator = scope.uid(),
        subtask = info.index,
        worker = info.worker,
        state = name.as_str(),
        entries = sink.entry_count(),
        blocks = block_count,
        bytes = total,
        elapsed = ?started.elapsed(),
        sizing = ?reserved,
        table_blocks_placed,
        inserted_after = deferred_count,
        user = ?user,
        sys = ?sys,
        faults,
        "restored state"
    );
    Ok(())
}
