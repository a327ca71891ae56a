//! What a task hands over at a checkpoint barrier, and how operators expose
//! their keyed state to snapshots and restores.
//!
//! When barrier `n` has been aligned at a task, the task walks its chain
//! head to tail ([`crate::operator::ChainControl::snapshot`]); every stateful
//! operator adds its part to the [`TaskSnapshot`]: small states inline
//! (a source's position, a sink's pending transactions) and keyed states as
//! *frozen views* ([`FrozenKeyedState`]), which cost O(chunks) to take and
//! stay valid while the operator keeps writing (copy-on-write arena chunks).
//! This is the synchronous part of the checkpoint. The worker's snapshot
//! writer later serializes the frozen views per key group into blocks of
//! the worker's segment file — the asynchronous part — and acknowledges the
//! checkpoint to the coordinator.
//!
//! A keyed process function lists its states in
//! [`KeyedProcessFunction::visit_state`](crate::KeyedProcessFunction::visit_state);
//! the same visit serves snapshots and restores ([`KeyedStates`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use weir_net::{CheckpointBarrier, Wire};
use weir_state::value_state::FrozenValueState;
use weir_state::{KeyGroupAssigner, KeyGroupRange, KeyHash};

use crate::checkpoint::restore::RestoreScope;
use crate::keyed::KeyedValueState;
use crate::source::SubtaskInfo;

/// A keyed state frozen at a barrier, to be written per key group.
pub trait FrozenKeyedState {
    /// Entries in the view.
    fn len(&self) -> usize;

    /// True if the view holds no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Serializes the entries of each key group of `range` into `out`
    /// (`out[i]` holds key group `range.start() + i`), reusing the
    /// buffers' memory: the writer keeps them across checkpoints, so their
    /// pages are not faulted in and zeroed by the kernel every time.
    fn serialize_key_groups(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        out: &mut Vec<Vec<u8>>,
    );
}

impl<K, V> FrozenKeyedState for FrozenValueState<K, V>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    fn len(&self) -> usize {
        FrozenValueState::len(self)
    }

    fn serialize_key_groups(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        out: &mut Vec<Vec<u8>>,
    ) {
        // Keys spread evenly over key groups: reserve each group's share
        // (with 1/8 slack) from the first entry's size, so the buffers do
        // not grow entry by entry.
        let per_entry = self
            .iter()
            .next()
            .map_or(0, |(k, v)| k.encoded_len() + v.encoded_len());
        let share = self.len() / range.len().max(1) as usize;
        let reserve = (share + share / 8 + 16) * per_entry;
        out.resize_with(range.len() as usize, Vec::new);
        for buf in out.iter_mut() {
            buf.clear();
            buf.reserve(reserve);
        }
        // A mask instead of a division when the key groups are a power of
        // two (the default 128).
        let groups = KeyGroupAssigner::new(max_parallelism, 1);
        for (k, v) in self.iter() {
            let kg = groups.key_group(k.key_hash());
            debug_assert!(range.contains(kg), "a key outside the subtask's range");
            let buf = &mut out[(kg - range.start()) as usize];
            append_wire(buf, k);
            append_wire(buf, v);
        }
    }
}

#[inline]
fn append_wire<T: Wire>(buf: &mut Vec<u8>, value: &T) {
    let n = value.encoded_len();
    if n <= 32 {
        // Small fixed-size values: encode on the stack, then one copy.
        let mut tmp = [0u8; 32];
        value.write(&mut tmp[..n]);
        buf.extend_from_slice(&tmp[..n]);
    } else {
        let at = buf.len();
        buf.resize(at + n, 0);
        value.write(&mut buf[at..]);
    }
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

enum Mode<'a> {
    /// Collect frozen views.
    Snapshot(&'a mut Vec<(String, Box<dyn FrozenKeyedState>)>),
    /// Fill states from a checkpoint.
    Restore(&'a RestoreScope<'a>),
    /// List state names (to check that every state is visited).
    Names(&'a mut Vec<String>),
}

/// The visitor a [`KeyedProcessFunction`](crate::KeyedProcessFunction)
/// hands each of its keyed states to, for snapshots and restores alike.
pub struct KeyedStates<'a> {
    mode: Mode<'a>,
    error: Option<String>,
}

impl<'a> KeyedStates<'a> {
    pub(crate) fn snapshot(out: &'a mut Vec<(String, Box<dyn FrozenKeyedState>)>) -> Self {
        Self {
            mode: Mode::Snapshot(out),
            error: None,
        }
    }

    pub(crate) fn restore(scope: &'a RestoreScope<'a>) -> Self {
        Self {
            mode: Mode::Restore(scope),
            error: None,
        }
    }

    pub(crate) fn names(out: &'a mut Vec<String>) -> Self {
        Self {
            mode: Mode::Names(out),
            error: None,
        }
    }

    /// The first error a restore met.
    pub(crate) fn into_error(self) -> Option<String> {
        self.error
    }

    /// Visits a keyed `ValueState`.
    pub fn value<K, V>(&mut self, state: &mut KeyedValueState<K, V>)
    where
        K: Copy + Eq + KeyHash + Wire,
        V: Copy + Wire,
    {
        match &mut self.mode {
            Mode::Snapshot(out) => {
                out.push((state.name().to_owned(), Box::new(state.inner().freeze())));
            }
            Mode::Names(out) => out.push(state.name().to_owned()),
            Mode::Restore(scope) => {
                if self.error.is_some() {
                    return;
                }
                if let Err(e) = restore_value_state(scope, state) {
                    self.error = Some(e);
                }
            }
        }
    }
}

fn restore_value_state<K, V>(
    scope: &RestoreScope<'_>,
    state: &mut KeyedValueState<K, V>,
) -> Result<(), String>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    let name = state.name().to_owned();
    let started = Instant::now();
    let mut blocks = scope.keyed_blocks(&name)?;
    let inner = state.inner_mut();
    // Size the table once: the first entry's encoded size estimates the
    // number of entries (exactly, for fixed-size keys and values).
    let total: usize = blocks.iter().map(|b| b.payload.len()).sum();
    if let Some(first) = blocks.iter().find(|b| !b.payload.is_empty()) {
        let entry = K::read(first.payload)
            .and_then(|(_, n)| V::read(&first.payload[n..]).map(|(_, m)| n + m))
            .map_err(|e| first.describe(&name, 0, &e))?;
        inner.reserve(total / entry.max(1));
    }
    // Entries land at random table positions: prefetch each one's slot a
    // few entries before inserting it, so the cache misses overlap.
    const AHEAD: usize = 16;
    let reserved = started.elapsed();
    let mine = scope.key_groups();
    let groups = KeyGroupAssigner::new(scope.max_parallelism(), 1);
    let mut pipeline: VecDeque<(K, u64, V)> = VecDeque::with_capacity(AHEAD + 1);
    // Each key group's block lists its entries in the order of the table
    // they were frozen from, i.e. by table position. Taking the blocks in
    // lockstep, a slice of each per round, makes each round insert into
    // one region of the new table: cache-friendly. (Only speed depends on
    // this order; any order restores the same state.)
    const ROUNDS: usize = 256;
    let mut cursors = vec![0usize; blocks.len()];
    // Each block's checksum is computed over the bytes as they are decoded
    // (one pass over the mapped pages); nothing decoded counts until every
    // checksum matched: a mismatch makes the checkpoint unusable.
    for round in 1..=ROUNDS {
        for (block, pos) in blocks.iter_mut().zip(cursors.iter_mut()) {
            let bytes = block.payload;
            let end = bytes.len() * round / ROUNDS;
            let from = *pos;
            while *pos < end {
                let at = *pos;
                let (k, n) = K::read(&bytes[at..])
                    .map_err(|e| scope.mark_corrupt(block.describe(&name, at, &e)))?;
                let (v, m) = V::read(&bytes[at + n..])
                    .map_err(|e| scope.mark_corrupt(block.describe(&name, at + n, &e)))?;
                *pos = at + n + m;
                let hash = k.key_hash();
                let kg = groups.key_group(hash);
                if !block.key_groups.contains(kg) {
                    return Err(scope.mark_corrupt(format!(
                        "state `{name}`: a key of key group {kg} is stored in the block of key groups {:?} ({})",
                        block.key_groups, block.segment
                    )));
                }
                if mine.contains(kg) {
                    inner.prefetch_hashed(hash);
                    pipeline.push_back((k, hash, v));
                    if pipeline.len() > AHEAD {
                        let (k, hash, v) = pipeline.pop_front().expect("not empty");
                        inner.put_hashed(k, hash, v);
                    }
                }
            }
            block.check.update(&bytes[from..*pos]);
        }
    }
    for block in blocks.drain(..) {
        block
            .check
            .finish()
            .map_err(|e| scope.mark_corrupt(e.to_string()))?;
    }
    for (k, hash, v) in pipeline {
        inner.put_hashed(k, hash, v);
    }
    crate::checkpoint::trace!(
        "restored state `{name}`: {} entries from {} blocks ({} bytes) in {:?} ({:?} to size the table)",
        inner.len(),
        blocks.len(),
        total,
        started.elapsed(),
        reserved
    );
    Ok(())
}
