//! Incremental checkpoints (`execution.checkpointing.incremental`, Flink's
//! key): what each worker's snapshot writer remembers of the chains of its
//! keyed tables, and how it writes a table's changed slots.
//!
//! A keyed state's table (a `ValueState`'s, or the one table a map, list,
//! reducing, aggregating or TTL value state keeps its entries in) written
//! by checkpoint `n` as a *delta* holds only
//! the slots written or emptied since the view the writer wrote last (the
//! arena's per-slot dirty bits, `weir_state::arena`, "Dirty slots"), as
//! [`table_delta`](super::table_delta) blocks in `chk-<n>`'s segment; the
//! manifest lists, for the subtask, the table blocks of the chain's full
//! checkpoint and every delta since, those of earlier checkpoints named
//! `../chk-<id>/<segment>`. A restore applies them newest first
//! (`checkpoint::chain_restore`).
//!
//! A table is written in full instead (and starts a new chain) unless all
//! of these hold, so a delta is only ever taken against a complete
//! checkpoint with the same table layout:
//! - the chain's last checkpoint is the latest complete one, and the view
//!   follows the very freeze the writer wrote last (a declined, failed or
//!   skipped checkpoint, a restore or a savepoint in between breaks this);
//! - the table has the chain's capacity (a table that grew moved every
//!   entry);
//! - the chain has fewer than [`MAX_INCREMENTS`] deltas, and its deltas'
//!   bytes are at most half of its full checkpoint's (so a restore reads
//!   at most ten deltas, and at most a third of the chain's bytes is
//!   superseded: the compaction scheme is "write it in full again");
//! - at most 1/[`MAX_DIRTY_SHARE`] of the slots changed.
//!
//! Savepoints are always full and self-contained, and never a chain's base.
//! Window panes and slices, timers, operator and channel state are written
//! in full in every checkpoint. A composite kind's entry expired under its
//! TTL when the view was taken is left out of a full table and recorded
//! as emptied in a delta where its slot changed; one expired in an
//! unchanged slot stays in the chain until its slot changes (a restored
//! entry is checked against its TTL when read, so it is never seen).

use std::collections::HashMap;

use weir_state::snapshot::{BlockKind, Extent};
use weir_state::KeyGroupRange;

use crate::checkpoint::error::Result;
use crate::checkpoint::segment_file::SegmentFile;
use crate::checkpoint::table_block::TABLE_BLOCK_CHUNKS;
use crate::core::snapshot::{FrozenKeyedState, TableTracking};

/// Deltas a chain may hold before the table is written in full again.
pub const MAX_INCREMENTS: usize = 10;

/// A delta is written only if at most `capacity / MAX_DIRTY_SHARE` slots
/// changed (a delta record costs 5 bytes more than a slot of a full
/// table block, whose empty slots cost a bit).
pub const MAX_DIRTY_SHARE: usize = 16;

/// Bytes of delta blocks written between two turns given to the reactor
/// (`writer::PART_BYTES`, the full writer's cadence).
const YIELD_BYTES: u64 = 16 << 20;

/// Which table a chain is of: operator uid, subtask index, state name.
pub type TableKey = (String, u32, String);

/// One table's chain: a full checkpoint and the deltas since.
struct Chain {
    /// The checkpoint written last.
    checkpoint: u64,
    /// The freeze of the view written last.
    freeze_id: u64,
    log2_capacity: u8,
    full_bytes: u64,
    delta_bytes: u64,
    increments: usize,
    /// The chain's blocks, oldest first, with the checkpoint whose segment
    /// holds each.
    extents: Vec<(u64, Extent)>,
}

/// The chains of one worker's tables.
#[derive(Default)]
pub struct Chains {
    chains: HashMap<TableKey, Chain>,
}

impl Chains {
    /// Whether the view `t` of table `key` may be written as a delta in
    /// checkpoint `id`, with `completed` the latest complete checkpoint.
    pub fn can_delta(&self, key: &TableKey, t: &TableTracking, completed: u64) -> bool {
        let Some(c) = self.chains.get(key) else {
            return false;
        };
        c.checkpoint == completed
            && t.freeze.since != 0
            && c.freeze_id == t.freeze.since
            && c.log2_capacity == t.log2_capacity
            && c.increments < MAX_INCREMENTS
            && c.delta_bytes <= c.full_bytes / 2
            && t.dirty_slots <= t.capacity / MAX_DIRTY_SHARE
    }

    /// Starts the chain of `key` at its full write in checkpoint `id`.
    pub fn record_full(&mut self, key: TableKey, id: u64, t: &TableTracking, written: &[Extent]) {
        self.chains.insert(
            key,
            Chain {
                checkpoint: id,
                freeze_id: t.freeze.id,
                log2_capacity: t.log2_capacity,
                full_bytes: written.iter().map(|e| e.length).sum(),
                delta_bytes: 0,
                increments: 0,
                extents: written.iter().map(|e| (id, e.clone())).collect(),
            },
        );
    }

    /// Appends the delta `written` in checkpoint `id` to the chain of
    /// `key` (which [`can_delta`](Self::can_delta) allowed) and returns
    /// the chain's extents as checkpoint `id`'s manifest names them.
    pub fn record_delta(
        &mut self,
        key: &TableKey,
        id: u64,
        t: &TableTracking,
        written: &[Extent],
    ) -> Vec<Extent> {
        let c = self.chains.get_mut(key).expect("can_delta found the chain");
        c.checkpoint = id;
        c.freeze_id = t.freeze.id;
        c.increments += 1;
        c.delta_bytes += written.iter().map(|e| e.length).sum::<u64>();
        c.extents.extend(written.iter().map(|e| (id, e.clone())));
        c.extents
            .iter()
            .map(|(at, e)| {
                let mut e = e.clone();
                if *at != id {
                    e.segment = format!("../chk-{at}/{}", e.segment);
                }
                e
            })
            .collect()
    }

    /// Forgets the chain of `key` (its next write is full).
    pub fn forget(&mut self, key: &TableKey) {
        self.chains.remove(key);
    }
}

/// Writes the slots of `frozen` changed since its previous freeze as delta
/// blocks of [`TABLE_BLOCK_CHUNKS`] arena chunks each (none for chunks
/// with no change); returns the bytes written and pushes the extents.
pub async fn write_table_delta(
    file: &mut SegmentFile,
    frozen: &dyn FrozenKeyedState,
    (name, range): (&str, KeyGroupRange),
    scratch: &mut Vec<u8>,
    checkpoint: u64,
    extents: &mut Vec<Extent>,
) -> Result<u64> {
    let mut bytes = 0;
    let mut since_yield = 0;
    let chunks = frozen.chunk_count();
    for first in (0..chunks).step_by(TABLE_BLOCK_CHUNKS) {
        let part = first..(first + TABLE_BLOCK_CHUNKS).min(chunks);
        if frozen.serialize_table_delta(part, scratch) == 0 {
            continue;
        }
        let extent = file
            .append_block(BlockKind::KeyedTableDelta, range, name, scratch)
            .await?;
        bytes += extent.length;
        since_yield += extent.length;
        extents.push(extent);
        crate::core::failpoint::hit("snapshot-write", checkpoint);
        // The worker's records wait for one block at most (as in
        // `write_keyed_state`); a yield is a turn of the task queue, not
        // of the reactor.
        futures_lite::future::yield_now().await;
        // Let the reactor submit the writes, as `write_keyed_state` does
        // once per part (`writer::PART_BYTES`): per bytes written, not per block
        // (a delta's blocks are small; a turn every 16 of them was a
        // third of a 1% delta's write time at 10 M keys).
        if since_yield >= YIELD_BYTES {
            since_yield = 0;
            glommio::timer::sleep(std::time::Duration::from_micros(1)).await;
        }
    }
    Ok(bytes)
}
