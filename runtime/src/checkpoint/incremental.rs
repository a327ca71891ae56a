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
//! - the delta is estimated at most 1/[`MAX_DELTA_SHARE`] of the chain's
//!   full write: its changed slots, each a record of [`RECORD_BYTES`]
//!   and an entry of the full write's mean size per entry (so a table
//!   of small entries, W1's, takes a delta up to about 1/7 of its slots
//!   changed, and one of larger entries, a SQL join's rows, up to more:
//!   each changed slot costs less against its full write). With the
//!   rule above, a chain then holds at least two deltas before it is
//!   written in full again.
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

/// A delta is written only if it is estimated at most
/// `full bytes / MAX_DELTA_SHARE`.
pub const MAX_DELTA_SHARE: u64 = 4;

/// What a delta record costs besides its entry: the slot's offset and
/// its flag (a slot of a full table block costs its entry and a bit).
pub const RECORD_BYTES: u64 = 5;

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
    /// Entries of the full write.
    full_entries: u64,
    delta_bytes: u64,
    increments: usize,
    /// The chain's blocks, oldest first, with the checkpoint whose segment
    /// holds each.
    extents: Vec<(u64, Extent)>,
}

impl Chain {
    /// The bytes of a delta of `dirty` changed slots: a record each, with
    /// an entry of the full write's mean size (its bytes, bitmap and
    /// headers included, per entry: a slight overestimate).
    fn delta_estimate(&self, dirty: usize) -> u64 {
        let per_entry = self.full_bytes / self.full_entries.max(1);
        (dirty as u64).saturating_mul(RECORD_BYTES + per_entry)
    }
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
            && c.delta_estimate(t.dirty_slots) <= c.full_bytes / MAX_DELTA_SHARE
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
                full_entries: t.entries as u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A view of a table of 2^17 slots and `entries` entries, of the
    /// freeze after freeze 1, with `dirty` changed slots.
    fn tracking(entries: usize, dirty: usize) -> TableTracking {
        TableTracking {
            freeze: weir_state::FreezeIds { id: 2, since: 1 },
            log2_capacity: 17,
            dirty_slots: dirty,
            capacity: 1 << 17,
            entries,
            tracked: true,
        }
    }

    /// The chain of a table whose full write in checkpoint 1 (freeze 1)
    /// was `bytes` for `entries` entries.
    fn chains(entries: usize, bytes: u64) -> (Chains, TableKey) {
        let key: TableKey = ("op".into(), 0, "state".into());
        let mut chains = Chains::default();
        let mut full = tracking(entries, 0);
        full.freeze = weir_state::FreezeIds { id: 1, since: 0 };
        let extent = Extent {
            segment: "w000.seg".into(),
            kind: BlockKind::KeyedTable,
            key_groups: KeyGroupRange::new(0, 64),
            state: "state".into(),
            offset: 0,
            length: bytes,
            payload_crc32c: 0,
        };
        chains.record_full(key.clone(), 1, &full, &[extent]);
        (chains, key)
    }

    /// A delta is taken while it is estimated at most a quarter of the
    /// full write: for small entries about 1/7 of the slots, for large
    /// ones more.
    #[test]
    fn a_delta_is_taken_while_it_is_small_against_the_full_write() {
        // 95,000 entries of 24 bytes: ~19,800 changed slots at most.
        let (c, key) = chains(95_000, 95_000 * 24 + (1 << 14));
        assert!(c.can_delta(&key, &tracking(95_000, 19_000), 1));
        assert!(!c.can_delta(&key, &tracking(95_000, 21_000), 1));
        // 95,000 rows of 200 bytes: up to ~23,200.
        let (c, key) = chains(95_000, 95_000 * 200 + (1 << 14));
        assert!(c.can_delta(&key, &tracking(95_000, 22_500), 1));
        assert!(!c.can_delta(&key, &tracking(95_000, 24_000), 1));
        // Never after a checkpoint other than the chain's last.
        assert!(!c.can_delta(&key, &tracking(95_000, 10), 2));
    }
}
