//! The chain restore (`checkpoint::chain_restore`) of value tables, into
//! their sink, and of a composite state kind's table (with a TTL, into a
//! sink that inserts every entry), against a model: tables changed over a full
//! checkpoint and the deltas after it (puts of new keys, updates,
//! removes), written as the snapshot writer writes them, are restored at
//! the same and at other parallelisms: each new subtask must hold exactly
//! the entries of its key groups in the tables at the newest checkpoint,
//! what applying the chain naively gives; at the same parallelism, slot
//! for slot. Corrupt and disordered blocks are refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use weir_state::snapshot::{
    BlockKind, Extent, Manifest, OperatorSnapshot, SegmentWriter, SnapshotKind, SubtaskSnapshot,
    BLOCK_HEADER_LEN,
};
use weir_state::value_state::ValueState;
use weir_state::{KeyGroupAssigner, KeyGroupRange, KeyHash};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::keyed_restore::restore_entries;
use crate::checkpoint::keyed_restore::RestoreSink;
use crate::checkpoint::RestoredCheckpoint;
use crate::core::snapshot::FrozenKeyedState;
use crate::core::SubtaskInfo;
use crate::state::codec::{FrozenTable, ValueSink};

const MAX_PARALLELISM: u32 = 128;
const STATE: &str = "totals";
const UID: &str = "op";
const JOB: &str = "chains";

type Table = ValueState<u64, (u64, u64)>;
type Model = BTreeMap<u64, (u64, u64)>;

/// A change to a table: a put (new key or update) or a remove of the key
/// of index `.0` among the subtask's keys.
#[derive(Clone, Debug)]
enum Op {
    Put(usize, u64),
    Remove(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..600, any::<u64>()).prop_map(|(k, v)| Op::Put(k, v)),
        1 => (0usize..600).prop_map(Op::Remove),
    ]
}

/// How the checkpoints are written: arena chunks per full table block
/// and per delta block (the writer's differ: a full checkpoint's blocks
/// end at its parts' bounds), and whether the table is a composite
/// state kind's ([`FrozenTable`], restored by insertion, not slot for
/// slot), with a TTL under which the entries of the first
/// [`EXPIRED_BELOW`] key indices have expired.
#[derive(Clone, Copy, Debug)]
struct Layout {
    full_chunks: usize,
    delta_chunks: usize,
    composite: bool,
}

/// A composite table's entry `(key, (value, key index))` has the key
/// index as its TTL stamp; at "now" 200 with a TTL of 100, entries of an
/// index below 101 have expired.
const EXPIRED_BELOW: u64 = 101;

/// The TTL cutoff `(now, ttl)` of [`EXPIRED_BELOW`].
const EXPIRY: (u64, u64) = (200, 100);

/// Whether a composite table's snapshot keeps `v`.
fn live(v: &(u64, u64)) -> bool {
    v.1 >= EXPIRED_BELOW
}

/// A table's view as `layout` says it is written.
fn frozen(table: &Table, layout: Layout) -> Box<dyn FrozenKeyedState> {
    fn write(buf: &mut Vec<u8>, k: &u64, v: &(u64, u64)) {
        crate::core::wire::append_wire(buf, k);
        crate::core::wire::append_wire(buf, v);
    }
    let view = table.freeze();
    if layout.composite {
        Box::new(FrozenTable::new(
            view,
            |k| k.key_hash(),
            write,
            |v| v.1,
            Some(EXPIRY),
        ))
    } else {
        Box::new(view)
    }
}

/// A restore target that inserts every entry, as a map's or a list's
/// does (they are never placed slot for slot).
struct Inserting<'t>(ValueSink<'t, u64, (u64, u64)>);

impl RestoreSink for Inserting<'_> {
    type Entry = (u64, (u64, u64));

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), weir_net::DecodeError> {
        ValueSink::<u64, (u64, u64)>::decode(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        ValueSink::<u64, (u64, u64)>::group_hash(entry)
    }

    fn reserve(&mut self, entries: usize) {
        self.0.reserve(entries);
    }

    fn insert(&mut self, entry: Self::Entry, hash: u64) {
        self.0.insert(entry, hash);
    }

    fn entry_count(&self) -> usize {
        self.0.entry_count()
    }
}

/// A checkpoint directory being written: every checkpoint's blocks in
/// segments of their own, the chains' extents per old subtask.
struct Written {
    dir: PathBuf,
    /// Per old subtask: its table now, the model of it, and its chain.
    subtasks: Vec<(Table, Model, Vec<Extent>)>,
    /// The subtask's keys (in its key groups), by index.
    keys: Vec<Vec<u64>>,
    old: u32,
    checkpoints: usize,
}

fn fresh_dir(test: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("weir-chain-{test}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Written {
    /// `old` subtasks, each with up to 600 keys of its key groups in a
    /// table sized not to grow (a table that grew starts a new chain).
    fn new(test: &str, old: u32) -> Self {
        let groups = KeyGroupAssigner::new(MAX_PARALLELISM, 1);
        let keys: Vec<Vec<u64>> = (0..old)
            .map(|i| {
                let range = KeyGroupRange::for_subtask(MAX_PARALLELISM, old, i);
                (0u64..)
                    .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    .filter(|k| range.contains(groups.key_group(k.key_hash())))
                    .take(600)
                    .collect()
            })
            .collect();
        Self {
            dir: fresh_dir(test),
            subtasks: (0..old)
                .map(|_| (Table::with_capacity(STATE, 600), Model::new(), Vec::new()))
                .collect(),
            keys,
            old,
            checkpoints: 0,
        }
    }

    /// Applies `ops` to subtask `i`'s table and its model.
    fn apply(&mut self, i: usize, ops: &[Op]) {
        let (table, model, _) = &mut self.subtasks[i];
        for op in ops {
            match *op {
                Op::Put(k, v) => {
                    let key = self.keys[i][k];
                    table.put(key, (v, k as u64));
                    model.insert(key, (v, k as u64));
                }
                Op::Remove(k) => {
                    let key = self.keys[i][k];
                    assert_eq!(table.remove(&key), model.remove(&key));
                }
            }
        }
    }

    /// Takes a checkpoint of every table as the incremental writer does:
    /// a delta where the view's dirty slots are complete and a chain
    /// exists, else in full (starting a chain, and asking for tracking).
    fn checkpoint(&mut self, layout: Layout) {
        self.checkpoints += 1;
        for (i, (table, _, chain)) in self.subtasks.iter_mut().enumerate() {
            let range = KeyGroupRange::for_subtask(MAX_PARALLELISM, self.old, i as u32);
            let view = frozen(table, layout);
            let path = self.dir.join(format!("c{}-s{i}.seg", self.checkpoints));
            let mut segment = SegmentWriter::create(&path).unwrap();
            let mut buf = Vec::new();
            let chunks = view.chunk_count();
            // Asking starts the table's tracking from its next freeze on.
            let tracking = view.table_tracking().expect("a table tracks its writes");
            let delta = tracking.tracked && !chain.is_empty();
            if !delta {
                chain.clear();
            }
            let step = if delta {
                layout.delta_chunks
            } else {
                layout.full_chunks
            };
            for first in (0..chunks).step_by(step) {
                let part = first..(first + step).min(chunks);
                let kind = if delta {
                    if view.serialize_table_delta(part, &mut buf) == 0 {
                        continue;
                    }
                    BlockKind::KeyedTableDelta
                } else {
                    view.serialize_table_part(part, &mut buf);
                    if buf.is_empty() {
                        continue;
                    }
                    BlockKind::KeyedTable
                };
                chain.push(segment.append_block(kind, range, STATE, &buf).unwrap());
            }
            segment.finish().unwrap();
        }
    }

    /// Whether every subtask's newest checkpoint was a delta.
    fn all_deltas(&self) -> bool {
        self.subtasks.iter().all(|(_, _, chain)| {
            chain
                .last()
                .is_some_and(|e| e.kind == BlockKind::KeyedTableDelta)
        })
    }

    /// Writes the manifest of the newest checkpoint: each old subtask's
    /// chain, `edit`ed first.
    fn manifest(&self, edit: impl FnOnce(&mut Vec<Vec<Extent>>)) -> PathBuf {
        let mut chains: Vec<Vec<Extent>> = self.subtasks.iter().map(|s| s.2.clone()).collect();
        edit(&mut chains);
        let manifest = Manifest {
            job_name: JOB.into(),
            checkpoint_id: self.checkpoints as u64,
            timestamp_ms: 0,
            max_parallelism: MAX_PARALLELISM,
            lineage: None,
            kind: SnapshotKind::Checkpoint,
            operators: vec![OperatorSnapshot {
                uid: UID.into(),
                parallelism: self.old,
                subtasks: chains
                    .into_iter()
                    .enumerate()
                    .map(|(i, extents)| SubtaskSnapshot {
                        index: i as u32,
                        key_groups: KeyGroupRange::for_subtask(MAX_PARALLELISM, self.old, i as u32),
                        extents,
                        inline_state: Vec::new(),
                    })
                    .collect(),
            }],
        };
        manifest.write(&self.dir, "_metadata").unwrap();
        self.dir.clone()
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Restores subtask `index` of `parallelism` from the checkpoint in
/// `dir` into a fresh table (by insertion if `composite`).
fn restore(
    dir: &Path,
    index: usize,
    parallelism: usize,
    composite: bool,
) -> Result<Table, RestoreError> {
    let restored = RestoredCheckpoint::open(dir, JOB, MAX_PARALLELISM).unwrap();
    let info = SubtaskInfo {
        index,
        parallelism,
        worker: 0,
        max_parallelism: MAX_PARALLELISM,
    };
    let scope = restored.scope(UID, &info);
    assert!(!scope.keyed_chains(STATE).is_empty(), "a chain restore");
    let mut table = Table::new(STATE);
    if composite {
        restore_entries(&scope, STATE, &mut Inserting(ValueSink(&mut table)))?;
    } else {
        restore_entries(&scope, STATE, &mut ValueSink(&mut table))?;
    }
    Ok(table)
}

/// Every entry of `table`, checked to be found by its key.
fn entries(table: &Table) -> Model {
    let all: Model = table.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(all.len(), table.len(), "a key twice");
    for (k, v) in &all {
        assert_eq!(table.get(k), Some(v), "key {k} not found where it is");
    }
    all
}

/// Writes the chains of `rounds` (per checkpoint, the ops of each old
/// subtask) and restores them at `new` subtasks; checks every one.
fn check_chains(old: u32, new: u32, rounds: &[Vec<Vec<Op>>], layout: Layout) {
    let mut w = Written::new("model", old);
    for round in rounds {
        for (i, ops) in round.iter().enumerate().take(old as usize) {
            w.apply(i, ops);
        }
        w.checkpoint(layout);
    }
    assert!(w.all_deltas(), "the newest checkpoint is a delta");
    let dir = w.manifest(|_| {});
    let groups = KeyGroupAssigner::new(MAX_PARALLELISM, 1);
    for j in 0..new {
        let range = KeyGroupRange::for_subtask(MAX_PARALLELISM, new, j);
        let table = restore(&dir, j as usize, new as usize, layout.composite).unwrap();
        let want: Model = w
            .subtasks
            .iter()
            .flat_map(|(_, model, _)| model.iter())
            .filter(|(k, _)| range.contains(groups.key_group(k.key_hash())))
            .filter(|(_, v)| !layout.composite || live(v))
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(entries(&table), want, "subtask {j} of {new} from {old}");
        if new == old && !layout.composite {
            // The newest table, slot for slot.
            let (live, _, _) = &w.subtasks[j as usize];
            assert_eq!(table.capacity(), live.capacity());
            let order = |t: &Table| t.iter().map(|(k, _)| *k).collect::<Vec<_>>();
            assert_eq!(order(&table), order(live), "subtask {j}: another layout");
        }
    }
}

/// Ops for every old subtask (at most 3) of one checkpoint.
fn round() -> impl Strategy<Value = Vec<Vec<Op>>> {
    prop::collection::vec(prop::collection::vec(op(), 0..120), 3)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A full checkpoint, then deltas (the first checkpoint after the
    /// one that asked for tracking is still full): restored at 1, 2 or 3
    /// subtasks from 1, 2 or 3, the entries are the newest tables'.
    #[test]
    fn a_restored_chain_holds_the_newest_tables(
        old in 1u32..=3,
        new in 1u32..=3,
        first in prop::collection::vec((0usize..600, any::<u64>()), 100..500),
        rounds in prop::collection::vec(round(), 2..6),
        full_chunks in 1usize..4,
        delta_chunks in 1usize..4,
        composite in any::<bool>(),
    ) {
        let fill: Vec<Vec<Op>> =
            (0..3).map(|_| first.iter().map(|&(k, v)| Op::Put(k, v)).collect()).collect();
        let mut all = vec![fill, Vec::new()];
        all.extend(rounds);
        check_chains(old, new, &all, Layout { full_chunks, delta_chunks, composite });
    }
}

/// Keys removed and put again, updated in several deltas, a table
/// emptied and refilled: the newest record of a slot decides it.
#[test]
fn the_newest_record_of_a_slot_decides_it() {
    let put = |keys: std::ops::Range<usize>, v: u64| keys.map(|k| Op::Put(k, v)).collect();
    let remove = |keys: std::ops::Range<usize>| keys.map(Op::Remove).collect::<Vec<_>>();
    let rounds: Vec<Vec<Vec<Op>>> = vec![
        vec![put(0..400, 1); 3],
        vec![Vec::new(); 3],
        vec![remove(0..100); 3],
        vec![put(0..50, 2); 3],
        vec![[remove(0..400), put(300..350, 3)].concat(); 3],
        vec![put(0..10, 4); 3],
        vec![put(0..5, 5); 3],
    ];
    for old in 1..=3 {
        for new in 1..=3 {
            for (full_chunks, delta_chunks, composite) in [
                (1, 1, false),
                (3, 2, false),
                (2, 3, false),
                (1, 1, true),
                (3, 2, true),
            ] {
                check_chains(
                    old,
                    new,
                    &rounds,
                    Layout {
                        full_chunks,
                        delta_chunks,
                        composite,
                    },
                );
            }
        }
    }
}

/// A chain written over three checkpoints at 2 subtasks.
fn written(test: &str) -> Written {
    let mut w = Written::new(test, 2);
    let layout = Layout {
        full_chunks: 1,
        delta_chunks: 1,
        composite: false,
    };
    for (r, n) in [400usize, 0, 30, 30].into_iter().enumerate() {
        for i in 0..2 {
            let ops: Vec<Op> = (0..n)
                .map(|k| Op::Put((k * 7 + r) % 600, r as u64))
                .collect();
            w.apply(i, &ops);
        }
        w.checkpoint(layout);
    }
    assert!(w.all_deltas());
    w
}

/// A flipped byte in a delta block makes the checkpoint unusable, with
/// an error naming the segment.
#[test]
fn a_corrupt_delta_block_is_refused_naming_its_segment() {
    let w = written("corrupt");
    let dir = w.manifest(|_| {});
    let delta = w.subtasks[0]
        .2
        .iter()
        .rfind(|e| e.kind == BlockKind::KeyedTableDelta)
        .unwrap()
        .clone();
    let path = dir.join(&delta.segment);
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte of the first record's entry.
    bytes[delta.offset as usize + BLOCK_HEADER_LEN + 50] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    let e = restore(&dir, 0, 2, false).unwrap_err();
    assert!(e.unusable(), "{e}");
    assert!(e.to_string().contains(&delta.segment), "{e}");
}

/// Table blocks listed out of slot order are refused, not restored into
/// a table that would be wrong.
#[test]
fn blocks_out_of_slot_order_are_refused() {
    let w = written("order");
    let dir = w.manifest(|chains| {
        let tables = chains[0]
            .iter()
            .filter(|e| e.kind == BlockKind::KeyedTable)
            .count();
        assert!(tables >= 2, "{tables} table blocks");
        chains[0].swap(0, 1);
    });
    let e = restore(&dir, 0, 2, false).unwrap_err();
    assert!(e.unusable(), "{e}");
    assert!(e.to_string().contains("out of slot order"), "{e}");
}
