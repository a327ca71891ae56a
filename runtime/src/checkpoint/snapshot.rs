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

use std::time::{Duration, Instant};

use weir_net::{CheckpointBarrier, Wire};
use weir_state::snapshot::{BlockKind, Extent};
use weir_state::value_state::FrozenValueState;
use weir_state::{KeyGroupAssigner, KeyGroupRange, KeyHash};

use crate::checkpoint::restore::{KeyedBlock, RestoreScope};
use crate::checkpoint::table_block::{TableBlock, TableHeader};
use crate::keyed::KeyedValueState;
use crate::keyed_state::{
    AggregateFunction, KeyedAggregatingState, KeyedListState, KeyedMapState, KeyedReducingState,
    KeyedTtlValueState,
};
use crate::source::SubtaskInfo;

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
    /// per key group ([`serialize_part`](Self::serialize_part)): a plain
    /// `ValueState`.
    fn is_table(&self) -> bool {
        false
    }

    /// Serializes the slots of the arena chunks `chunks` into `out` as the
    /// payload of one table block ([`table_block`](super::table_block):
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
}

impl<K, V> FrozenKeyedState for FrozenValueState<K, V>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    fn len(&self) -> usize {
        FrozenValueState::len(self)
    }

    fn chunk_count(&self) -> usize {
        FrozenValueState::chunk_count(self)
    }

    fn estimated_bytes(&self) -> usize {
        let per_entry = self
            .iter()
            .next()
            .map_or(0, |(k, v)| k.encoded_len() + v.encoded_len());
        per_entry * self.len()
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        let share = part_share(self, range, &chunks);
        serialize_entries(
            self,
            chunks,
            share,
            max_parallelism,
            range,
            out,
            |k| k.key_hash(),
            append_entry,
        );
    }

    fn is_table(&self) -> bool {
        true
    }

    fn serialize_table_part(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) {
        let used = table_prefix(self, chunks.clone(), out);
        if used == 0 {
            out.clear();
            return;
        }
        let per_entry = self.estimated_bytes() / self.len().max(1);
        out.reserve(used * per_entry + per_entry);
        self.for_each_in_chunks(chunks, |k, v| append_entry(out, k, v));
    }

    fn table_part_layout(
        &self,
        chunks: std::ops::Range<usize>,
        prefix: &mut Vec<u8>,
    ) -> Option<usize> {
        let entry = K::FIXED_LEN? + V::FIXED_LEN?;
        let used = table_prefix(self, chunks, prefix);
        Some(if used == 0 {
            0
        } else {
            prefix.len() + used * entry
        })
    }

    fn write_table_entries(&self, chunks: std::ops::Range<usize>, out: &mut [u8]) {
        let (kn, vn) = match (K::FIXED_LEN, V::FIXED_LEN) {
            (Some(kn), Some(vn)) => (kn, vn),
            _ => unreachable!("write_table_entries of a table of variable-size entries"),
        };
        let mut rest = out;
        self.for_each_in_chunks(chunks, |k, v| {
            // Panics if `out` is shorter than the entries.
            let (entry, tail) = std::mem::take(&mut rest).split_at_mut(kn + vn);
            k.write(&mut entry[..kn]);
            v.write(&mut entry[kn..]);
            rest = tail;
        });
        assert!(
            rest.is_empty(),
            "table block entries left {} bytes of the payload unwritten",
            rest.len()
        );
    }
}

/// Sets `out` to the header and occupancy bitmap of the table block of
/// the arena chunks `chunks` of `view`; returns the entries they hold.
fn table_prefix<K, V>(
    view: &FrozenValueState<K, V>,
    chunks: std::ops::Range<usize>,
    out: &mut Vec<u8>,
) -> usize
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    out.clear();
    let slots = view.chunk_slots(chunks);
    TableHeader {
        log2_capacity: view.log2_capacity() as u8,
        table_len: view.len() as u64,
        first_slot: slots.start as u64,
        slot_count: slots.len() as u64,
    }
    .write(out);
    view.occupancy(slots, out)
}

/// Bytes each key group's buffer should reserve for serializing the
/// arena chunks `chunks` of `view`: keys spread evenly over chunks and key
/// groups.
fn part_share(
    view: &dyn FrozenKeyedState,
    range: KeyGroupRange,
    chunks: &std::ops::Range<usize>,
) -> usize {
    let all = view.chunk_count().max(1);
    view.estimated_bytes() * chunks.len().min(all) / all / range.len().max(1) as usize
}

/// Serializes the entries of `view` stored in the arena chunks `chunks`
/// into `out` per key group of `range` (see
/// [`FrozenKeyedState::serialize_part`]): `group_hash` gives the hash that
/// decides an entry's key group (its primary key's), `write` appends the
/// entry's bytes (or nothing, to leave it out). Each buffer reserves
/// `share` bytes (with 1/8 slack), so they do not grow entry by entry.
#[inline]
#[allow(clippy::too_many_arguments)]
fn serialize_entries<KK: Copy + Eq + KeyHash, VV: Copy>(
    view: &FrozenValueState<KK, VV>,
    chunks: std::ops::Range<usize>,
    share: usize,
    max_parallelism: u32,
    range: KeyGroupRange,
    out: &mut Vec<Vec<u8>>,
    group_hash: impl Fn(&KK) -> u64,
    mut write: impl FnMut(&mut Vec<u8>, &KK, &VV),
) {
    out.resize_with(range.len() as usize, Vec::new);
    for buf in out.iter_mut() {
        buf.clear();
        buf.reserve(share + share / 8 + 64);
    }
    // A mask instead of a division when the key groups are a power of
    // two (the default 128).
    let groups = KeyGroupAssigner::new(max_parallelism, 1);
    let start = range.start();
    view.for_each_in_chunks(chunks, |k, v| {
        let kg = groups.key_group(group_hash(k));
        debug_assert!(range.contains(kg), "a key outside the subtask's range");
        write(&mut out[(kg - start) as usize], k, v);
    });
}

/// A frozen table of one of the composite keyed states (map, list,
/// reducing, aggregating; see [`crate::keyed_state`]), with how its
/// entries are written: the hash of an entry's *primary* key, which alone
/// decides its key group (a map entry `(key, user key)` belongs to `key`'s
/// group, so a restore at another parallelism finds it), the entry's
/// bytes, and its TTL timestamp. With TTL the snapshot is also the full
/// cleanup: entries expired when the view was taken are not written.
pub struct FrozenTable<KK, VV>
where
    KK: Copy + Eq + KeyHash,
    VV: Copy,
{
    view: FrozenValueState<KK, VV>,
    group_hash: fn(&KK) -> u64,
    write: fn(&mut Vec<u8>, &KK, &VV),
    stamp: fn(&VV) -> u64,
    /// `(now, ttl)` in milliseconds, when expired entries are left out.
    expiry: Option<(u64, u64)>,
}

impl<KK, VV> FrozenTable<KK, VV>
where
    KK: Copy + Eq + KeyHash,
    VV: Copy,
{
    /// `view` written entry by entry with `write`, into the key group of
    /// `group_hash`; with `expiry = Some((now, ttl))` an entry whose
    /// `stamp + ttl <= now` is left out.
    pub fn new(
        view: FrozenValueState<KK, VV>,
        group_hash: fn(&KK) -> u64,
        write: fn(&mut Vec<u8>, &KK, &VV),
        stamp: fn(&VV) -> u64,
        expiry: Option<(u64, u64)>,
    ) -> Self {
        Self {
            view,
            group_hash,
            write,
            stamp,
            expiry,
        }
    }

    fn live(&self, v: &VV) -> bool {
        self.expiry
            .is_none_or(|(now, ttl)| (self.stamp)(v).saturating_add(ttl) > now)
    }
}

impl<KK, VV> FrozenKeyedState for FrozenTable<KK, VV>
where
    KK: Copy + Eq + KeyHash,
    VV: Copy,
{
    fn len(&self) -> usize {
        self.view.len()
    }

    fn chunk_count(&self) -> usize {
        self.view.chunk_count()
    }

    fn estimated_bytes(&self) -> usize {
        let mut one = Vec::new();
        if let Some((k, v)) = self.view.iter().next() {
            (self.write)(&mut one, k, v);
        }
        one.len() * self.view.len()
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        let share = part_share(self, range, &chunks);
        serialize_entries(
            &self.view,
            chunks,
            share,
            max_parallelism,
            range,
            out,
            self.group_hash,
            |buf, k, v| {
                if self.live(v) {
                    (self.write)(buf, k, v);
                }
            },
        );
    }
}

/// Appends an entry's key and value, in one copy when both are small (the
/// snapshot writer's per-entry step).
#[inline(always)]
fn append_entry<K: Wire, V: Wire>(buf: &mut Vec<u8>, k: &K, v: &V) {
    let (n, m) = (k.encoded_len(), v.encoded_len());
    if n + m <= 64 {
        let mut tmp = [0u8; 64];
        k.write(&mut tmp[..n]);
        v.write(&mut tmp[n..n + m]);
        buf.extend_from_slice(&tmp[..n + m]);
    } else {
        append_wire(buf, k);
        append_wire(buf, v);
    }
}

/// Appends `value`'s wire bytes to `buf`.
#[inline]
pub(crate) fn append_wire<T: Wire>(buf: &mut Vec<u8>, value: &T) {
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
    /// Channel state of an unaligned checkpoint: `(input name, records)`.
    pub channel: Vec<(String, Vec<u8>)>,
    /// Operator (non-keyed) list states: `(state name, frozen view)`.
    pub operator_lists: Vec<(String, Box<dyn crate::operator_state::FrozenOperatorList>)>,
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

enum Mode<'a, F: ?Sized> {
    /// Collect frozen views.
    Snapshot(&'a mut Vec<(String, Box<F>)>),
    /// Fill states from a checkpoint.
    Restore(&'a RestoreScope<'a>),
    /// List state names (to check that every state is visited).
    Names(&'a mut Vec<String>),
}

/// A visitor a function hands each of its states to, for snapshots and
/// restores alike: collecting frozen views `F`, restoring, or listing
/// names. Keyed states ([`KeyedStates`]) and operator states
/// ([`OperatorStates`](crate::OperatorStates)) are its two kinds.
pub struct StateVisitor<'a, F: ?Sized> {
    mode: Mode<'a, F>,
    error: Option<String>,
}

/// The visitor a [`KeyedProcessFunction`](crate::KeyedProcessFunction)
/// hands each of its keyed states to, for snapshots and restores alike.
pub type KeyedStates<'a> = StateVisitor<'a, dyn FrozenKeyedState + 'static>;

impl<'a, F: ?Sized> StateVisitor<'a, F> {
    pub(crate) fn snapshot(out: &'a mut Vec<(String, Box<F>)>) -> Self {
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

    /// Records the name of `state`, or snapshots it with `freeze`, or
    /// restores it with `restore` (after an error, restores nothing more):
    /// what every state kind's visit does.
    pub(crate) fn visit<S>(
        &mut self,
        name: &str,
        state: &mut S,
        freeze: impl FnOnce(&S) -> Box<F>,
        restore: impl FnOnce(&RestoreScope<'_>, &mut S) -> Result<(), String>,
    ) {
        match &mut self.mode {
            Mode::Snapshot(out) => out.push((name.to_owned(), freeze(state))),
            Mode::Names(out) => out.push(name.to_owned()),
            Mode::Restore(scope) => {
                if self.error.is_none() {
                    if let Err(e) = restore(scope, state) {
                        self.error = Some(e);
                    }
                }
            }
        }
    }
}

impl KeyedStates<'_> {
    /// Visits a keyed `ValueState`.
    pub fn value<K, V>(&mut self, state: &mut KeyedValueState<K, V>)
    where
        K: Copy + Eq + KeyHash + Wire,
        V: Copy + Wire,
    {
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.inner().freeze()),
            restore_value_state,
        );
    }

    /// Visits a keyed `MapState`.
    pub fn map<K, UK, UV>(&mut self, state: &mut KeyedMapState<K, UK, UV>)
    where
        K: Copy + Eq + KeyHash + Wire,
        UK: Copy + Eq + KeyHash + Wire,
        UV: Copy + Wire,
    {
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, s),
        );
    }

    /// Visits a keyed `ListState`.
    pub fn list<K, T>(&mut self, state: &mut KeyedListState<K, T>)
    where
        K: Copy + Eq + KeyHash + Wire,
        T: Copy + Wire,
    {
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, s),
        );
    }

    /// Visits a keyed `ReducingState`.
    pub fn reducing<K, V, F>(&mut self, state: &mut KeyedReducingState<K, V, F>)
    where
        K: Copy + Eq + KeyHash + Wire,
        V: Copy + Wire,
        F: Fn(V, V) -> V,
    {
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, &mut ValueSink(s.table_mut())),
        );
    }

    /// Visits a keyed `ValueState` with a time-to-live.
    pub fn ttl_value<K, V>(&mut self, state: &mut KeyedTtlValueState<K, V>)
    where
        K: Copy + Eq + KeyHash + Wire,
        V: Copy + Wire,
    {
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, &mut ValueSink(s.table_mut())),
        );
    }

    /// Visits a keyed `AggregatingState`.
    pub fn aggregating<K, A>(&mut self, state: &mut KeyedAggregatingState<K, A>)
    where
        K: Copy + Eq + KeyHash + Wire,
        A: AggregateFunction,
        A::Acc: Wire,
    {
        let name = state.name().to_owned();
        self.visit(
            &name,
            state,
            |s| Box::new(s.freeze()),
            |scope, s| restore_entries(scope, &name, &mut ValueSink(s.table_mut())),
        );
    }
}

/// Where a restore puts the entries of one keyed state: how an entry is
/// decoded, which hash decides its key group, and how it is inserted.
/// [`restore_entries`] does the rest (windows, checksums, key-group checks)
/// for every state kind.
pub(crate) trait RestoreSink {
    /// One decoded entry.
    type Entry;

    /// Reads one entry from the front of `bytes`; returns it and the bytes
    /// used.
    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), weir_net::DecodeError>;

    /// The hash deciding the entry's key group (its primary key's).
    fn group_hash(entry: &Self::Entry) -> u64;

    /// Makes room for about `entries` more entries.
    fn reserve(&mut self, entries: usize);

    /// A hint that `entry` (of key-group hash `hash`) is inserted soon.
    fn prefetch(&self, entry: &Self::Entry, hash: u64) {
        let _ = (entry, hash);
    }

    /// Inserts `entry`, whose key-group hash is `hash`.
    fn insert(&mut self, entry: Self::Entry, hash: u64);

    /// Inserts every `(entry, hash)` of `batch`, in order, and empties it.
    fn insert_batch(&mut self, batch: &mut Vec<(Self::Entry, u64)>) {
        for (entry, hash) in batch.drain(..) {
            self.insert(entry, hash);
        }
    }

    /// Whether entries of a table block of a table of `2^log2_capacity`
    /// slots can go back to their slots ([`place_batch`](Self::place_batch)):
    /// only a `ValueState` of that capacity can take them.
    fn placeable(&self, log2_capacity: u8) -> bool {
        let _ = log2_capacity;
        false
    }

    /// Makes the target a table of at least `capacity` slots (before a
    /// restore of table blocks of that capacity).
    fn reserve_table(&mut self, capacity: usize) {
        let _ = capacity;
    }

    /// Stores every `(slot, entry, hash)` of `batch` at its slot where
    /// that is where an insert would put it, appends the others to
    /// `deferred` (to [`insert_batch`](Self::insert_batch) after the last
    /// table block), and empties `batch`.
    fn place_batch(
        &mut self,
        batch: &mut Vec<(usize, Self::Entry, u64)>,
        deferred: &mut Vec<(Self::Entry, u64)>,
    ) {
        deferred.extend(batch.drain(..).map(|(_, entry, hash)| (entry, hash)));
    }

    /// Called once every block was read and checked.
    fn finish(&mut self) {}

    /// Entries now held (for the trace).
    fn entry_count(&self) -> usize;
}

/// A keyed `ValueState`'s table as a restore target: entries `(key, value)`.
pub(crate) struct ValueSink<'s, K, V>(pub(crate) &'s mut weir_state::ValueState<K, V>)
where
    K: Copy + Eq + KeyHash,
    V: Copy;

impl<K, V> RestoreSink for ValueSink<'_, K, V>
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    type Entry = (K, V);

    #[inline]
    fn decode(bytes: &[u8]) -> Result<((K, V), usize), weir_net::DecodeError> {
        let (k, n) = K::read(bytes)?;
        let (v, m) = V::read(&bytes[n..])?;
        Ok(((k, v), n + m))
    }

    #[inline]
    fn group_hash(entry: &(K, V)) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, entries: usize) {
        self.0.reserve(entries);
    }

    #[inline]
    fn prefetch(&self, _entry: &(K, V), hash: u64) {
        self.0.prefetch_hashed(hash);
    }

    #[inline(always)]
    fn insert(&mut self, (k, v): (K, V), hash: u64) {
        self.0.load_hashed(k, hash, v);
    }

    #[inline]
    fn insert_batch(&mut self, batch: &mut Vec<((K, V), u64)>) {
        self.0.load_batch(batch);
        batch.clear();
    }

    fn placeable(&self, log2_capacity: u8) -> bool {
        u32::from(log2_capacity) < usize::BITS && self.0.capacity() == 1 << log2_capacity
    }

    fn reserve_table(&mut self, capacity: usize) {
        self.0.reserve_capacity(capacity);
    }

    #[inline]
    fn place_batch(
        &mut self,
        batch: &mut Vec<(usize, (K, V), u64)>,
        deferred: &mut Vec<((K, V), u64)>,
    ) {
        self.0.load_placed_batch(batch, deferred);
        batch.clear();
    }

    fn entry_count(&self) -> usize {
        self.0.len()
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
    restore_entries(scope, &name, &mut ValueSink(state.inner_mut()))
}

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
) -> Result<u32, String> {
    let kg = groups.key_group(hash);
    if block.key_groups.contains(kg) {
        return Ok(kg);
    }
    Err(scope.mark_corrupt(format!(
        "state `{name}`: a key of key group {kg} is stored in the {} block of key groups {:?} ({})",
        block.kind, block.key_groups, block.segment
    )))
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
) -> Result<(), String> {
    const CHECKED: usize = 32 << 10;
    let bytes = table.entries;
    let mut at = 0;
    let mut checked = 0;
    for pos in table.positions() {
        let (entry, n) = S::decode(&bytes[at..])
            .map_err(|e| scope.mark_corrupt(block.describe(name, head + at, &e)))?;
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
        return Err(scope.mark_corrupt(block.describe(
            name,
            head + at,
            &"bytes after the entries of its used slots",
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
) -> Result<(), String> {
    let name = name.to_owned();
    let started = Instant::now();
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
        let corrupt = |e: String| scope.mark_corrupt(block.describe(&name, 0, &e));
        let entries = if first.kind == BlockKind::KeyedTable {
            let table = TableBlock::parse(block.payload).map_err(corrupt)?;
            if one_table {
                // Every slot is one bit of some block's occupancy.
                let capacity = 1u64 << table.header.log2_capacity;
                if capacity > total.saturating_mul(8) {
                    return Err(corrupt(format!(
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
            let (_, entry) = S::decode(entries).map_err(|e| corrupt(e.to_string()))?;
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
    const WINDOW: u64 = 16 << 20;
    const ROUNDS: usize = 64;
    let mut blocks: Vec<KeyedBlock<'_>> = Vec::new();
    let mut cursors: Vec<usize> = Vec::new();
    let mut rest = extents.as_slice();
    let mut block_count = 0;
    let mut table_blocks_placed = 0;
    // The next window of `rest`: about WINDOW bytes of one segment.
    let next_window = |rest: &[&Extent]| {
        let mut bytes = 0;
        rest.iter()
            .take_while(|e| {
                let more = bytes < WINDOW && e.segment == rest[0].segment;
                bytes += e.length;
                more
            })
            .count()
    };
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
                    .map_err(|e| scope.mark_corrupt(block.describe(&name, 0, &e)))?;
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
                    block
                        .check
                        .finish()
                        .map_err(|e| scope.mark_corrupt(e.to_string()))?;
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
                        .map_err(|e| scope.mark_corrupt(block.describe(&name, at, &e)))?;
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
            block
                .check
                .finish()
                .map_err(|e| scope.mark_corrupt(e.to_string()))?;
        }
    }
    sink.insert_batch(&mut batch);
    let deferred_count = deferred.len();
    sink.insert_batch(&mut deferred);
    sink.finish();
    crate::checkpoint::trace!(
        "restored state `{name}`: {} entries from {} blocks ({} bytes) in {:?} ({:?} to size the table; {} table blocks put back slot for slot, {} of their entries inserted after)",
        sink.entry_count(),
        block_count,
        total,
        started.elapsed(),
        reserved,
        table_blocks_placed,
        deferred_count
    );
    Ok(())
}
