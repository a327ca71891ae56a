//! What a task hands over at a checkpoint barrier: the hand-off types
//! between the operators (which freeze their state) and the checkpoint writer
//! (which writes it).
//!
//! When barrier `n` has been aligned at a task, the task walks its chain head
//! to tail; every stateful operator adds its part to the [`TaskSnapshot`]:
//! small states inline (a source's position, a sink's pending transactions),
//! keyed states as *frozen views* ([`FrozenKeyedState`]) and operator list
//! states as [`FrozenOperatorList`]s, which cost O(chunks) to take and stay
//! valid while the operator keeps writing (copy-on-write arena chunks). This
//! is the synchronous part of the checkpoint. The worker's snapshot writer
//! later serializes the frozen views into blocks of the worker's segment file
//! (the asynchronous part) and acknowledges the checkpoint to the
//! coordinator. The state kinds implement the traits (they bring their own
//! codecs); the writer only sees the traits.

use std::ops::Range;
use std::time::{Duration, Instant};

use weir_net::CheckpointBarrier;
use weir_state::KeyGroupRange;

use crate::core::subtask::SubtaskInfo;

/// A keyed state frozen at a barrier, to be written per key group.
pub trait FrozenKeyedState {
    /// Entries in the view.
    fn len(&self) -> usize;

    /// True if the view holds no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of parts the view can be serialized in (its arena chunks):
    /// see [`serialize_part`](Self::serialize_part).
    fn chunk_count(&self) -> usize;

    /// Bytes the whole view serializes to (an estimate from one entry for
    /// variable-size keys or values).
    fn estimated_bytes(&self) -> usize;

    /// Serializes the entries stored in the arena chunks `chunks` into
    /// `out`, per key group of `range` (`out[i]` holds key group
    /// `range.start() + i`), reusing the buffers' memory: the writer keeps
    /// them across parts and checkpoints, so their pages are not faulted
    /// in and zeroed by the kernel every time. Serializing disjoint chunk
    /// ranges that cover `0..chunk_count()` serializes every entry once;
    /// the writer writes one part's blocks while it serializes the next.
    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    );

    /// Whether the state is written as table blocks
    /// ([`serialize_table_part`](Self::serialize_table_part)) instead of
    /// per key group ([`serialize_part`](Self::serialize_part)): a keyed
    /// state kept in one hash table (value, map, list, reducing,
    /// aggregating), written in slot order and incrementally.
    fn is_table(&self) -> bool {
        false
    }

    /// Serializes the slots of the arena chunks `chunks` into `out` as the
    /// payload of one table block ([`table_block`](crate::checkpoint::table_block):
    /// the slots in table order with their occupancy), or leaves `out`
    /// empty if they hold no entry (or the state is no table).
    fn serialize_table_part(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) {
        let _ = chunks;
        out.clear();
    }

    /// The layout of the table block of `chunks` when its entries are of
    /// fixed size, so the writer can write it straight into the segment's
    /// I/O buffer: sets `prefix` to the payload's header and occupancy and
    /// returns the whole payload's length (0 if the chunks hold no entry).
    /// `None` (the default) if the state is no table or its entries vary
    /// in size: the writer then uses
    /// [`serialize_table_part`](Self::serialize_table_part).
    fn table_part_layout(
        &self,
        chunks: std::ops::Range<usize>,
        prefix: &mut Vec<u8>,
    ) -> Option<usize> {
        let _ = (chunks, prefix);
        None
    }

    /// Writes the entries of the table block of `chunks` into `out`, which
    /// is exactly the payload's length less its prefix's (see
    /// [`table_part_layout`](Self::table_part_layout)).
    ///
    /// # Panics
    /// If `out` is not that long, or the state has no such layout.
    fn write_table_entries(&self, chunks: std::ops::Range<usize>, out: &mut [u8]) {
        let _ = (chunks, out);
        unreachable!("write_table_entries of a state without a table layout");
    }

    /// What an incremental checkpoint needs to know of a table view (see
    /// `weir_state::arena`, "Dirty slots"); `None` (the default) for a
    /// state that is always written in full.
    fn table_tracking(&self) -> Option<TableTracking> {
        None
    }

    /// Replaces `out` by the payload of one delta block
    /// ([`table_delta`](crate::checkpoint::table_delta)) of the slots of
    /// the arena chunks `chunks` written or emptied since the previous
    /// freeze; returns its record count (0: nothing changed there, `out`
    /// is then to be ignored).
    fn serialize_table_delta(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) -> u64 {
        let _ = chunks;
        out.clear();
        0
    }

    /// Tells the view the writer is done with the arena chunks `chunks`
    /// (it serialized them): a view may let go of them, so the live
    /// state's writes into them stop copying them while the rest is
    /// written (see `weir_state::arena`, "Freezing"). The writer reads
    /// them no more. The default keeps them until the view is dropped.
    fn release_chunks(&mut self, chunks: std::ops::Range<usize>) {
        let _ = chunks;
    }
}

/// A table view's place in a chain of incremental checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableTracking {
    /// Which freeze of the table's arena the view is, and the one before.
    pub freeze: weir_state::FreezeIds,
    /// `log2` of the table's capacity (a delta applies to a table of the
    /// same capacity only).
    pub log2_capacity: u8,
    /// Slots written or emptied since the previous freeze.
    pub dirty_slots: usize,
    /// Entries in the table.
    pub entries: usize,
    /// Slots of the table.
    pub capacity: usize,
    /// `dirty_slots` is complete: the table tracked its writes since the
    /// previous freeze (tracking starts when a writer first asks for it).
    pub tracked: bool,
}

/// One operator subtask's part of a task snapshot.
pub struct OperatorState {
    /// The operator's uid.
    pub uid: String,
    /// Subtask index and parallelism.
    pub info: SubtaskInfo,
    /// Small states stored in the manifest: `(name, bytes)`.
    pub inline: Vec<(String, Vec<u8>)>,
    /// Keyed states: `(state name, frozen view)`.
    pub keyed: Vec<(String, Box<dyn FrozenKeyedState>)>,
    /// Channel state of an unaligned checkpoint: `(input name, records)`.
    pub channel: Vec<(String, Vec<u8>)>,
    /// Operator (non-keyed) list states: `(state name, frozen view)`.
    pub operator_lists: Vec<(String, Box<dyn crate::core::snapshot::FrozenOperatorList>)>,
}

impl OperatorState {
    /// The key groups this subtask owns.
    pub fn key_groups(&self) -> KeyGroupRange {
        KeyGroupRange::for_subtask(
            self.info.max_parallelism,
            self.info.parallelism as u32,
            self.info.index as u32,
        )
    }
}

/// Timing of one task's checkpoint, for statistics.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotTiming {
    /// When the first barrier of the checkpoint reached the task (for a
    /// source: when it saw the trigger).
    pub first_barrier_at: Instant,
    /// From the first to the last input's barrier (0 for one input).
    pub alignment: Duration,
    /// When the synchronous part started.
    pub sync_started: Instant,
    /// How long the synchronous part took (set when the chain is done).
    pub sync: Duration,
}

/// Everything one task snapshots at one barrier.
pub struct TaskSnapshot {
    /// The barrier.
    pub barrier: CheckpointBarrier,
    /// The task's name, for messages.
    pub task: String,
    /// The operators' parts, in chain order.
    pub operators: Vec<OperatorState>,
    /// Timing.
    pub timing: SnapshotTiming,
    /// Files sinks pre-committed without syncing: fsynced in the
    /// asynchronous part, before the acknowledgement.
    pub files_to_sync: Vec<std::path::PathBuf>,
    /// Pre-commits that sinks' own threads finish (a flush to a broker):
    /// awaited in the asynchronous part, before the acknowledgement.
    pub precommits: Vec<crate::core::completion::Completion>,
    /// An unaligned snapshot: outputs send the barrier overtaking their
    /// queued data, and the task adds its inputs' channel state.
    pub unaligned: bool,
}

impl TaskSnapshot {
    /// A snapshot of `task` for `barrier` whose first barrier arrived at
    /// `first_barrier_at` after `alignment` of waiting for the others.
    pub fn new(
        barrier: CheckpointBarrier,
        task: String,
        first_barrier_at: Instant,
        alignment: Duration,
    ) -> Self {
        let now = Instant::now();
        Self {
            barrier,
            task,
            operators: Vec::new(),
            timing: SnapshotTiming {
                first_barrier_at,
                alignment,
                sync_started: now,
                sync: Duration::ZERO,
            },
            files_to_sync: Vec::new(),
            precommits: Vec::new(),
            unaligned: false,
        }
    }

    /// The checkpoint id.
    pub fn checkpoint_id(&self) -> u64 {
        self.barrier.id
    }

    /// The part of operator `uid` (created on first use).
    pub fn operator(&mut self, uid: &str, info: &SubtaskInfo) -> &mut OperatorState {
        if let Some(i) = self.operators.iter().position(|o| o.uid == uid) {
            return &mut self.operators[i];
        }
        self.operators.push(OperatorState {
            uid: uid.to_owned(),
            info: *info,
            inline: Vec::new(),
            keyed: Vec::new(),
            channel: Vec::new(),
            operator_lists: Vec::new(),
        });
        self.operators.last_mut().expect("just pushed")
    }

    /// Adds a small state of operator `uid`, kept in the manifest.
    pub fn add_inline(&mut self, uid: &str, info: &SubtaskInfo, name: &str, bytes: Vec<u8>) {
        self.operator(uid, info)
            .inline
            .push((name.to_owned(), bytes));
    }

    /// Ends the synchronous part.
    pub fn end_sync(&mut self) {
        self.timing.sync = self.timing.sync_started.elapsed();
    }
}

/// An operator list state frozen at a barrier, to be written as blocks.
pub trait FrozenOperatorList {
    /// Elements in the view.
    fn len(&self) -> usize;

    /// True if the view holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How the list is redistributed on restore.
    fn redistribution(&self) -> Redistribution;

    /// Bytes of one element (0 if empty).
    fn element_bytes(&self) -> usize;

    /// Replaces `out` by the payload of one block holding the elements
    /// `elements`: the mode's tag, their count (u32, little-endian), their
    /// wire bytes.
    fn serialize(&self, elements: Range<usize>, out: &mut Vec<u8>);
}

/// How a list state's elements are redistributed when a job is restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redistribution {
    /// Even split (Flink's `getListState`): concatenate the old subtasks'
    /// lists and cut them into contiguous even parts.
    EvenSplit,
    /// Union (Flink's `getUnionListState`): every new subtask gets all
    /// elements of all old subtasks.
    Union,
}

impl Redistribution {
    /// The mode's byte at the front of each block's payload.
    pub(crate) fn tag(self) -> u8 {
        match self {
            Self::EvenSplit => 1,
            Self::Union => 2,
        }
    }

    pub(crate) fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(Self::EvenSplit),
            2 => Some(Self::Union),
            _ => None,
        }
    }
}

impl std::fmt::Display for Redistribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::EvenSplit => "list state (even-split redistribution)",
            Self::Union => "union list state (union redistribution)",
        })
    }
}
