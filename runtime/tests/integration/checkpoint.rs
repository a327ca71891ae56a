//! Checkpoints end to end: aligned barriers, asynchronous snapshots,
//! completion, restore, in-process failover and corrupt checkpoints.
//!
//! The job is W1's shape with a paced source (so that it lives long enough
//! for many checkpoints), a keyed count and a sink whose running totals are
//! its checkpointed state. Exactly-once shows in two ways: the final totals
//! equal the reference even after failures and restores, and in *every*
//! completed checkpoint the count of records the sources had emitted, the
//! sum of the keyed counts and the sink's count are equal (the consistency
//! check of the Chandy-Lamport / ABS papers: no recorded receive without
//! its recorded send, and nothing in flight in an aligned snapshot).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir_runtime::checkpoint::lineage::Fingerprint;
use weir_runtime::checkpoint::table_block::TableBlock;
use weir_runtime::checkpoint::{find_latest, CheckpointStorage, RestoredCheckpoint};
use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::exec::RunIdentity;
use weir_runtime::operators::source::function::decode_u64_position;
use weir_runtime::{
    Collector, ExecutionOptions, JobError, JobGraph, KeyContext, KeyedProcessFunction, KeyedStates,
    KeyedValueState, RestoreFrom, Sink, Source, SourcePoll, SubtaskInfo,
};
use weir_state::snapshot::{BlockKind, Lineage, Manifest, SegmentReader};

use crate::w1::reference;
use crate::{options, run_job, run_ok, splitmix64, temp_dir, InjectedFailure, M};

/// Records `(splitmix64(i) % keys, i)` for this subtask's share of
/// `0..count`, at most `per_ms` per millisecond.
pub struct PacedSource {
    next: u64,
    step: u64,
    count: u64,
    keys: u64,
    per_ms: u64,
    started: Option<Instant>,
    emitted: u64,
}

impl PacedSource {
    /// Subtask `info`'s share of `count` records over `keys` keys, at most
    /// `per_ms` per millisecond over all subtasks.
    pub fn new(info: &SubtaskInfo, count: u64, keys: u64, per_ms: u64) -> Self {
        Self {
            next: info.index as u64,
            step: info.parallelism as u64,
            count,
            keys,
            per_ms: per_ms / info.parallelism as u64,
            started: None,
            emitted: 0,
        }
    }
}

impl Source for PacedSource {
    type Out = (u64, u64);

    fn poll_next<C: Collector<(u64, u64)>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let started = *self.started.get_or_insert_with(Instant::now);
        let due = (started.elapsed().as_micros() as u64 * self.per_ms) / 1000;
        if self.next >= self.count {
            return SourcePoll::Finished;
        }
        if due <= self.emitted {
            return SourcePoll::Idle {
                until: Some(Instant::now() + Duration::from_micros(200)),
            };
        }
        let mut n = 0;
        while n < budget as u64 && self.emitted < due && self.next < self.count {
            if !out.is_available() {
                break;
            }
            out.collect((splitmix64(self.next) % self.keys, self.next));
            self.next += self.step;
            self.emitted += 1;
            n += 1;
        }
        SourcePoll::Emitted(n as usize)
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.next = decode_u64_position(position)?;
        Ok(())
    }
}

/// Keyed `count += 1; sum += value`, emitting `(key, count, sum)`; panics
/// once where `fail` says.
struct CountAndSum {
    totals: KeyedValueState<u64, (u64, u64)>,
    fail: InjectedFailure,
    /// Busy time per record (to fill the channels: backpressure).
    slow: Duration,
}

impl KeyedProcessFunction for CountAndSum {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (key, value): (u64, u64),
        out: &mut C,
    ) {
        if self.fail.hits(value) {
            panic!("injected failure at record {value}");
        }
        if !self.slow.is_zero() {
            let until = Instant::now() + self.slow;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        let t = self.totals.value_mut_or_insert_with(ctx, || (0, 0));
        t.0 += 1;
        t.1 = t.1.wrapping_add(value);
        out.collect((key, t.0, t.1));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.totals);
    }
}

/// Folds `checksum += key·M + count`; the running totals are its state.
struct TallySink {
    index: usize,
    records: u64,
    checksum: u64,
    into: Arc<Mutex<Vec<(usize, u64, u64)>>>,
}

impl Sink for TallySink {
    type In = (u64, u64, u64);

    fn invoke(&mut self, (key, count, _sum): (u64, u64, u64)) {
        self.records += 1;
        self.checksum = self
            .checksum
            .wrapping_add(key.wrapping_mul(M))
            .wrapping_add(count);
    }

    fn finish(&mut self) {
        let mut into = self.into.lock().unwrap();
        into.retain(|(i, _, _)| *i != self.index);
        into.push((self.index, self.records, self.checksum));
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        if let Some((_, state)) = restored {
            (self.records, self.checksum) = decode_tally(state)?;
        }
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let mut s = self.records.to_le_bytes().to_vec();
        s.extend_from_slice(&self.checksum.to_le_bytes());
        Ok(s)
    }
}

fn decode_tally(state: &[u8]) -> Result<(u64, u64), String> {
    if state.len() != 16 {
        return Err(format!("tally state has {} bytes", state.len()));
    }
    let v = |i: usize| u64::from_le_bytes(state[i..i + 8].try_into().unwrap());
    Ok((v(0), v(8)))
}

struct Setup {
    n: u64,
    keys: u64,
    per_ms: u64,
    fail: InjectedFailure,
    slow: Duration,
}

impl Setup {
    /// `n` records over `keys` keys, 1,000 records per ms, no failure.
    fn new(n: u64, keys: u64) -> Self {
        Self {
            n,
            keys,
            per_ms: 1_000,
            fail: InjectedFailure::never(),
            slow: Duration::ZERO,
        }
    }
}

type Tallies = Arc<Mutex<Vec<(usize, u64, u64)>>>;

fn job(s: &Setup) -> (JobGraph, Tallies) {
    let (n, keys, per_ms, slow) = (s.n, s.keys, s.per_ms, s.slow);
    let fail = s.fail.clone();
    let tallies: Tallies = Arc::new(Mutex::new(Vec::new()));
    let into = tallies.clone();
    let job = JobGraph::new("checkpointed-count");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, per_ms)
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("count", move |_: &SubtaskInfo| CountAndSum {
        totals: KeyedValueState::new("totals"),
        fail: fail.clone(),
        slow,
    })
    .sink("tally", move |info: &SubtaskInfo| TallySink {
        index: info.index,
        records: 0,
        checksum: 0,
        into: into.clone(),
    });
    (job, tallies)
}

/// The fingerprint of the job of `s` checkpointing into `dir`.
fn fingerprint(s: &Setup, dir: &Path) -> Fingerprint {
    RunIdentity::of(&job(s).0, &checkpointed(2, dir, 3)).fingerprint
}

fn checkpointed(workers: usize, dir: &Path, retained: usize) -> ExecutionOptions {
    let mut o = options(workers).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = retained;
    o
}

fn assert_exact(tallies: &Tallies, n: u64, keys: u64) {
    let t = tallies.lock().unwrap();
    let records: u64 = t.iter().map(|x| x.1).sum();
    let checksum = t.iter().fold(0u64, |a, x| a.wrapping_add(x.2));
    assert_eq!(records, n, "every record reached the sinks exactly once");
    assert_eq!(
        checksum,
        reference(n, keys).checksum,
        "checksum equals the reference"
    );
}

/// Per complete checkpoint: (records the sources had emitted, sum of the
/// keyed counts, records the sinks had received).
fn counters_of(dir: &Path, workers: u64) -> Vec<(u64, u64, u64, u64)> {
    let storage = CheckpointStorage::open(dir).unwrap();
    let mut out = Vec::new();
    for c in storage.list().unwrap().into_iter().filter(|c| c.complete) {
        let manifest = Manifest::read(c.dir.join("_metadata")).unwrap();
        let (mut emitted, mut keyed, mut sunk) = (0u64, 0u64, 0u64);
        for op in &manifest.operators {
            for st in &op.subtasks {
                for inline in &st.inline_state {
                    match (op.uid.as_str(), inline.name.as_str()) {
                        ("paced", "source.position") => {
                            let next = decode_u64_position(&inline.bytes).unwrap();
                            emitted += (next - u64::from(st.index)) / workers;
                        }
                        ("tally", "sink.state") => sunk += decode_tally(&inline.bytes).unwrap().0,
                        _ => {}
                    }
                }
                for e in &st.extents {
                    let seg = SegmentReader::open(c.dir.join(&e.segment)).unwrap();
                    keyed += keyed_counts(e.kind, seg.read_block(e).unwrap());
                }
            }
        }
        out.push((c.id, emitted, keyed, sunk));
    }
    out
}

/// The sum of the counts of a W1 state block's `(key, (count, sum))`
/// entries: per key group (`KeyedState`) or in table order with the
/// slots' occupancy first (`KeyedTable`), whose used slots must match the
/// entries.
fn keyed_counts(kind: BlockKind, payload: &[u8]) -> u64 {
    let entries = match kind {
        BlockKind::KeyedState => payload,
        BlockKind::KeyedTable => {
            let table = TableBlock::parse(payload).unwrap();
            assert_eq!(table.positions().count() * 24, table.entries.len());
            table.entries
        }
        other => panic!("W1's keyed state in a block of kind {other}"),
    };
    assert_eq!(entries.len() % 24, 0, "(key, (count, sum)) entries");
    entries
        .chunks_exact(24)
        .map(|entry| u64::from_le_bytes(entry[8..16].try_into().unwrap()))
        .sum()
}

#[test]
fn every_checkpoint_is_consistent_and_the_result_exact() {
    let dir = temp_dir("consistent");
    // 600 ms of input: room for several checkpoints every 15 ms even on a
    // loaded machine.
    let s = Setup {
        per_ms: 500,
        ..Setup::new(300_000, 1_000)
    };
    let (job, tallies) = job(&s);
    let result = run_ok(job, &checkpointed(2, &dir, 1_000));
    assert_exact(&tallies, s.n, s.keys);
    let completed = result
        .checkpoints
        .iter()
        .filter(|c| c.status == weir_runtime::checkpoint::stats::CheckpointStatus::Completed)
        .count();
    assert!(
        completed >= 5,
        "checkpoints every 15 ms over ~600 ms: {completed}"
    );
    assert!(
        result.checkpoints.last().unwrap().is_final,
        "the last one is final"
    );
    let counters = counters_of(&dir, 2);
    assert_eq!(
        counters.len(),
        completed,
        "every completed checkpoint is retained"
    );
    let mut nonzero = 0;
    for (id, emitted, keyed, sunk) in &counters {
        assert_eq!(
            (emitted, keyed),
            (sunk, sunk),
            "checkpoint {id}: the sources' emitted count, the keyed counts and the sink's count differ"
        );
        nonzero += usize::from(*emitted > 0 && *emitted < s.n);
    }
    assert!(nonzero >= 3, "checkpoints taken mid-stream: {counters:?}");
    assert_eq!(
        counters[0].1, s.n,
        "the final checkpoint holds every record"
    );
    assert!(dir.join("checkpoint-history.json").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn retention_keeps_the_newest_checkpoints() {
    let dir = temp_dir("retained");
    let s = Setup::new(100_000, 100);
    let (job, tallies) = job(&s);
    run_ok(job, &checkpointed(2, &dir, 2));
    assert_exact(&tallies, s.n, s.keys);
    let list = CheckpointStorage::open(&dir).unwrap().list().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    assert!(list.iter().all(|c| c.complete));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failure_restarts_from_the_latest_checkpoint_exactly_once() {
    let dir = temp_dir("failover");
    let s = Setup {
        fail: InjectedFailure::at(150_001, &dir),
        per_ms: 500,
        ..Setup::new(300_000, 500)
    };
    let (job, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 1);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job, &o);
    assert_eq!(result.restarts, 1);
    let restored = result.restored.expect("the second attempt restored");
    // Any complete checkpoint will do (on a loaded machine the failure may
    // come while only the first is complete), as long as it holds state
    // from the middle of the stream rather than from its start.
    assert!(
        restored.checkpoint_id >= 1 && restored.state_bytes > 0,
        "restored from a mid-stream checkpoint: {restored:?}"
    );
    assert_exact(&tallies, s.n, s.keys);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every keyed entry `(key, (count, sum))` of a checkpoint, the number
/// of blocks per first key group, and the slot of every entry of a table
/// block as `(first key group, slot, key)`, sorted.
#[allow(clippy::type_complexity)]
fn keyed_entries(
    chk: &Path,
) -> (
    std::collections::HashMap<u64, (u64, u64)>,
    std::collections::HashMap<u32, usize>,
    Vec<(u32, usize, u64)>,
) {
    let manifest = Manifest::read(chk.join("_metadata")).unwrap();
    let count = manifest
        .operators
        .iter()
        .find(|o| o.uid == "count")
        .unwrap();
    let (mut entries, mut blocks, mut slots) = (
        std::collections::HashMap::new(),
        std::collections::HashMap::new(),
        Vec::new(),
    );
    for e in count.subtasks.iter().flat_map(|st| &st.extents) {
        *blocks.entry(e.key_groups.start()).or_insert(0) += 1;
        let seg = SegmentReader::open(chk.join(&e.segment)).unwrap();
        let payload = seg.read_block(e).unwrap();
        let (bytes, positions): (_, Vec<usize>) = match e.kind {
            BlockKind::KeyedTable => {
                let table = TableBlock::parse(payload).unwrap();
                (table.entries, table.positions().collect())
            }
            _ => (payload, Vec::new()),
        };
        for (i, entry) in bytes.chunks_exact(24).enumerate() {
            let word = |i: usize| u64::from_le_bytes(entry[i..i + 8].try_into().unwrap());
            assert!(entries.insert(word(0), (word(8), word(16))).is_none());
            if let Some(&pos) = positions.get(i) {
                slots.push((e.key_groups.start(), pos, word(0)));
            }
        }
    }
    slots.sort_unstable();
    (entries, blocks, slots)
}

/// A state larger than the writer's part size (16 MiB per worker) is
/// written in several blocks per key group and restored window by window:
/// a job restored from its own final checkpoint takes a final checkpoint
/// with exactly the same entries.
#[test]
fn a_large_state_is_written_in_parts_and_restored_exactly() {
    let dir = temp_dir("large");
    let s = Setup {
        per_ms: 50_000,
        ..Setup::new(4_000_000, 2_000_000)
    };
    let mut o = options(2).with_checkpointing(Duration::from_secs(600), &dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 2;
    let (first, tallies) = job(&s);
    run_ok(first, &o);
    assert_exact(&tallies, s.n, s.keys);
    o.restore = RestoreFrom::Latest;
    let (second, tallies) = job(&s);
    let result = run_ok(second, &o);
    let restored = result.restored.expect("restored the final checkpoint");
    assert!(
        restored.state_bytes > 2 * (16 << 20),
        "restored {} bytes",
        restored.state_bytes
    );
    assert_exact(&tallies, s.n, s.keys);
    let list = CheckpointStorage::open(&dir).unwrap().list().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let (before, blocks, slots_before) = keyed_entries(&list[1].dir);
    let (after, _, slots_after) = keyed_entries(&list[0].dir);
    assert!(before.len() > 1_500_000, "{} keys", before.len());
    assert!(before == after, "the restored state differs");
    // Restored at the same parallelism, every entry went back to its slot.
    assert_eq!(slots_before.len(), before.len(), "all in table blocks");
    assert!(slots_before == slots_after, "the restored tables differ");
    assert!(
        blocks.values().all(|&b| b >= 2),
        "blocks per key group: {blocks:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Unaligned checkpoints under backpressure (a slow keyed operator): the
/// barriers overtake the data in the channels, which is persisted as
/// channel state; a failure restores it and replays it before new data,
/// and the result is exact.
#[test]
fn unaligned_checkpoints_under_backpressure_restore_exactly_once() {
    let dir = temp_dir("unaligned");
    let s = Setup {
        fail: InjectedFailure::at(16_001, &dir),
        slow: Duration::from_micros(20),
        per_ms: 2_000,
        ..Setup::new(24_000, 300)
    };
    let (job, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 1_000);
    o.checkpointing.as_mut().unwrap().unaligned = true;
    // Small buffers, so that the source is held back long before its end.
    o.segment_size = 1024;
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job, &o);
    assert_eq!(result.restarts, 1);
    let restored = result.restored.expect("the second attempt restored");
    assert_exact(&tallies, s.n, s.keys);
    // The restored checkpoint held channel state, which was replayed.
    let manifest = Manifest::read(restored.dir.join("_metadata")).unwrap();
    let inflight_records: usize = manifest
        .operators
        .iter()
        .flat_map(|o| &o.subtasks)
        .flat_map(|st| &st.extents)
        .filter(|e| e.kind == BlockKind::ChannelState)
        .map(|e| e.length as usize)
        .sum();
    assert!(
        inflight_records > 0,
        "checkpoint {} had nothing in flight",
        restored.checkpoint_id
    );
    // The seeds' consistency check, with the data in flight: in every
    // checkpoint the sources' emitted records are the keyed counts plus the
    // records persisted in the channels.
    let mut with_inflight = 0;
    for (id, emitted, keyed, sunk, inflight) in counters_with_inflight(&dir, 2) {
        assert_eq!(keyed, sunk, "checkpoint {id}");
        assert_eq!(
            emitted,
            keyed + inflight,
            "checkpoint {id}: emitted {emitted}, keyed {keyed}, in flight {inflight}"
        );
        with_inflight += usize::from(inflight > 0);
    }
    assert!(
        with_inflight >= 2,
        "checkpoints with data in flight: {with_inflight}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// [`counters_of`] plus the records in the channel state of each checkpoint.
fn counters_with_inflight(dir: &Path, workers: u64) -> Vec<(u64, u64, u64, u64, u64)> {
    let storage = CheckpointStorage::open(dir).unwrap();
    let mut out = Vec::new();
    for c in storage.list().unwrap().into_iter().filter(|c| c.complete) {
        let manifest = Manifest::read(c.dir.join("_metadata")).unwrap();
        let (mut emitted, mut keyed, mut sunk, mut inflight) = (0u64, 0u64, 0u64, 0u64);
        for op in &manifest.operators {
            for st in &op.subtasks {
                for inline in &st.inline_state {
                    match (op.uid.as_str(), inline.name.as_str()) {
                        ("paced", "source.position") => {
                            let next = decode_u64_position(&inline.bytes).unwrap();
                            emitted += (next - u64::from(st.index)) / workers;
                        }
                        ("tally", "sink.state") => sunk += decode_tally(&inline.bytes).unwrap().0,
                        _ => {}
                    }
                }
                for e in &st.extents {
                    let seg = SegmentReader::open(c.dir.join(&e.segment)).unwrap();
                    let payload = seg.read_block(e).unwrap();
                    match e.kind {
                        BlockKind::KeyedState | BlockKind::KeyedTable => {
                            keyed += keyed_counts(e.kind, payload);
                        }
                        BlockKind::ChannelState => {
                            assert_eq!(payload.len() % 16, 0, "(key, value) records");
                            inflight += payload.len() as u64 / 16;
                        }
                        other => panic!("unexpected block {other:?}"),
                    }
                }
            }
        }
        out.push((c.id, emitted, keyed, sunk, inflight));
    }
    out
}

#[test]
fn without_restarts_a_failure_fails_the_job() {
    let dir = temp_dir("no-restart");
    let s = Setup {
        fail: InjectedFailure::exactly(50_000),
        ..Setup::new(100_000, 100)
    };
    let (job, _) = job(&s);
    let mut o = checkpointed(2, &dir, 1);
    o.restart = RestartStrategy::None;
    match run_job(job, &o) {
        Err(e @ JobError::TaskFailed { .. }) => {
            assert!(
                e.to_string().contains("injected failure at record 50000"),
                "{e}"
            )
        }
        other => panic!("expected the failure, got {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs the paced job of the corruption tests to its end in a fresh
/// directory `name`, keeping up to 3 checkpoints: the directory, the
/// setup, the storage and the checkpoint ids, newest first.
fn run_keeping_three_checkpoints(
    name: &str,
) -> (std::path::PathBuf, Setup, CheckpointStorage, Vec<u64>) {
    let dir = temp_dir(name);
    // 400 ms of records, so that at least three checkpoints complete even
    // when the CI machine is loaded by the other tests (at 200 ms a run
    // once completed only two).
    let s = Setup {
        per_ms: 500,
        ..Setup::new(200_000, 300)
    };
    let (job1, _) = job(&s);
    run_ok(job1, &checkpointed(2, &dir, 3));
    let storage = CheckpointStorage::open(&dir).unwrap();
    let ids: Vec<u64> = storage.list().unwrap().iter().map(|c| c.id).collect();
    (dir, s, storage, ids)
}

/// Runs the job to the end keeping 3 checkpoints, damages the newest with
/// `damage`, and checks that the damage is reported naming
/// `expect_in_error` — when the checkpoint is opened (`up_front`) or by a
/// full verification (a flipped byte is found as the blocks are loaded) —
/// and that a run restoring "latest" falls back to the previous checkpoint
/// and is exact.
fn falls_back_after(name: &str, damage: impl Fn(&Path), expect_in_error: &str, up_front: bool) {
    let (dir, s, storage, ids) = run_keeping_three_checkpoints(name);
    assert_eq!(ids.len(), 3);
    damage(&storage.checkpoint_dir(ids[0]));
    let search = find_latest(
        &storage,
        "checkpointed-count",
        128,
        &fingerprint(&s, &dir),
        None,
    )
    .unwrap()
    .unwrap();
    let error = if up_front {
        assert_eq!(search.skipped.len(), 1, "{:?}", search.skipped);
        assert_eq!(search.skipped[0].0, ids[0]);
        assert_eq!(
            search.found.as_ref().map(RestoredCheckpoint::id),
            Some(ids[1])
        );
        search.skipped[0].1.to_string()
    } else {
        let found = search.found.expect("the manifest and segments are intact");
        assert_eq!(found.id(), ids[0]);
        found
            .verify()
            .expect_err("a flipped byte fails verification")
            .to_string()
    };
    assert!(
        error.contains(expect_in_error),
        "the error names the problem: {error}"
    );

    let (job2, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 3);
    o.restore = RestoreFrom::Latest;
    let result = run_ok(job2, &o);
    assert_eq!(result.restored.unwrap().checkpoint_id, ids[1]);
    assert_eq!(result.restarts, 0, "falling back is not a restart");
    assert_exact(&tallies, s.n, s.keys);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flipped_byte_in_a_segment_falls_back_to_the_previous_checkpoint() {
    falls_back_after(
        "flip",
        |chk| {
            let seg = chk.join("w000.seg");
            let mut bytes = std::fs::read(&seg).unwrap();
            let at = 40.min(bytes.len() - 1);
            bytes[at] ^= 0x20;
            std::fs::write(&seg, bytes).unwrap();
        },
        "w000.seg",
        false,
    );
}

#[test]
fn a_truncated_manifest_falls_back_to_the_previous_checkpoint() {
    falls_back_after(
        "truncate",
        |chk| {
            let meta = chk.join("_metadata");
            let bytes = std::fs::read(&meta).unwrap();
            std::fs::write(&meta, &bytes[..bytes.len() / 2]).unwrap();
        },
        "_metadata",
        true,
    );
}

#[test]
fn a_deleted_segment_falls_back_to_the_previous_checkpoint() {
    falls_back_after(
        "delete",
        |chk| std::fs::remove_file(chk.join("w001.seg")).unwrap(),
        "w001.seg",
        true,
    );
}

#[test]
fn restore_latest_without_checkpoints_starts_fresh() {
    let dir = temp_dir("fresh");
    let s = Setup {
        per_ms: 5_000,
        ..Setup::new(50_000, 50)
    };
    let (job, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 1);
    o.restore = RestoreFrom::Latest;
    let result = run_ok(job, &o);
    assert!(result.restored.is_none());
    assert_exact(&tallies, s.n, s.keys);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The lineage checkpoint `id` under `storage` records.
fn lineage_of(storage: &CheckpointStorage, id: u64) -> Lineage {
    Manifest::read(storage.checkpoint_dir(id).join("_metadata"))
        .unwrap()
        .lineage
        .expect("a checkpoint records its lineage")
}

fn flip_a_byte(chk: &Path) {
    let seg = chk.join("w000.seg");
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = 40.min(bytes.len() - 1);
    bytes[at] ^= 0x20;
    std::fs::write(&seg, bytes).unwrap();
}

/// Every file under `dir` (relative path, contents), sorted.
fn tree(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.file_name().is_some_and(|n| n != ".weir-lock") {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_explicit_restore_starts_a_timeline_that_latest_keeps_to() {
    let (dir, s, storage, ids) = run_keeping_three_checkpoints("timeline");
    assert_eq!(ids.len(), 3);
    // One run: one job id, each checkpoint the child of the one before.
    let first: Vec<Lineage> = ids.iter().map(|&id| lineage_of(&storage, id)).collect();
    assert!(first.iter().all(|l| l.job_id == first[0].job_id));
    assert_eq!(first[0].parent, Some(ids[1]));
    assert_eq!(first[1].parent, Some(ids[2]));
    assert!(first[0]
        .fingerprint
        .contains(&("job".to_string(), "checkpointed-count".to_string())));

    // Restoring the oldest abandons the two newer ones: moved aside, kept.
    let (job2, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 3);
    o.restore = RestoreFrom::Path(storage.checkpoint_dir(ids[2]));
    let result = run_ok(job2, &o);
    assert_eq!(result.restored.unwrap().checkpoint_id, ids[2]);
    assert_exact(&tallies, s.n, s.keys);
    let timeline = storage.timeline().unwrap().unwrap();
    assert_eq!(timeline.started_from, Some(ids[2]));
    assert!(timeline.abandoned.contains(&ids[0]) && timeline.abandoned.contains(&ids[1]));
    assert_ne!(timeline.job_id, first[0].job_id);
    for id in &ids[..2] {
        let aside = dir.join("abandoned").join(format!("chk-{id}"));
        assert!(
            aside.join("_metadata").is_file(),
            "{} kept",
            aside.display()
        );
        // Named where it was, it says where it went.
        let e = RestoredCheckpoint::open(&storage.checkpoint_dir(*id), "checkpointed-count", 128)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&aside.display().to_string()), "{e}");
    }
    // The new run's checkpoints: its job id, numbered above every old one,
    // each the child of the one before, the first of the restored one.
    let second: Vec<u64> = storage.list().unwrap().iter().map(|c| c.id).collect();
    assert!(!second.is_empty());
    for (i, &id) in second.iter().enumerate() {
        let l = lineage_of(&storage, id);
        if id == ids[2] {
            continue;
        }
        assert!(id > ids[0], "{id} is above every id used: {ids:?}");
        assert_eq!(l.job_id, timeline.job_id);
        let parent = l.parent.unwrap();
        assert!(parent == ids[2] || parent > ids[0], "{id}: parent {parent}");
        if let Some(&older) = second.get(i + 1) {
            if older != ids[2] {
                assert_eq!(parent, older);
            }
        }
    }
    // `latest` restores the new timeline's newest, never an abandoned one.
    let found = find_latest(
        &storage,
        "checkpointed-count",
        128,
        &fingerprint(&s, &dir),
        None,
    )
    .unwrap()
    .unwrap()
    .found
    .unwrap();
    assert_eq!(found.id(), second[0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Restore ownership: a checkpoint of another directory is only read (no
/// claim): that directory stays as it was, whatever the run does in its
/// own; one of the run's own directory belongs to its timeline (claim):
/// retention deletes it once enough newer checkpoints complete.
#[test]
fn a_checkpoint_elsewhere_is_only_read_one_of_the_directory_is_claimed() {
    let (dir, s, storage, ids) = run_keeping_three_checkpoints("no-claim");
    let before = tree(&dir);
    let own = temp_dir("no-claim-own");
    let (job2, tallies) = job(&s);
    let mut o = checkpointed(2, &own, 1);
    o.restore = RestoreFrom::Path(storage.checkpoint_dir(ids[2]));
    let result = run_ok(job2, &o);
    assert_eq!(result.restored.unwrap().checkpoint_id, ids[2]);
    assert_exact(&tallies, s.n, s.keys);
    assert_eq!(tree(&dir), before, "the other directory is untouched");
    let own_ids: Vec<u64> = CheckpointStorage::open(&own)
        .unwrap()
        .list()
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(own_ids.len(), 1, "{own_ids:?}");
    assert!(own_ids[0] > ids[2], "{own_ids:?} after {ids:?}");

    // Restored in its own directory with one retained checkpoint, the
    // restored checkpoint is the timeline's and goes once a newer one
    // completes.
    let (job3, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 1);
    o.restore = RestoreFrom::Path(storage.checkpoint_dir(ids[2]));
    run_ok(job3, &o);
    assert_exact(&tallies, s.n, s.keys);
    assert!(
        !storage.checkpoint_dir(ids[2]).exists(),
        "claimed and retired"
    );
    assert_eq!(storage.list().unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&own).unwrap();
}

#[test]
fn a_checkpoint_of_another_job_is_refused_before_anything_changes() {
    let (dir, s, _storage, ids) = run_keeping_three_checkpoints("foreign");
    let before = tree(&dir);
    for restore in [
        RestoreFrom::Latest,
        RestoreFrom::Path(dir.join(format!("chk-{}", ids[0]))),
    ] {
        let (mut job2, _) = job(&s);
        job2.parameter("keys", 7);
        let mut o = checkpointed(2, &dir, 3);
        o.restore = restore.clone();
        match run_job(job2, &o) {
            Err(e @ JobError::Restore { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("parameter keys: none in the checkpoint, 7 in this job"),
                    "{restore:?}: {text}"
                );
            }
            other => panic!("{restore:?}: expected the checkpoint refused, got {other:?}"),
        }
        assert_eq!(tree(&dir), before, "{restore:?}: nothing changed");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_checkpoint_unusable_is_an_error_not_a_fresh_start() {
    let (dir, s, storage, ids) = run_keeping_three_checkpoints("all-unusable");
    for &id in &ids {
        flip_a_byte(&storage.checkpoint_dir(id));
    }
    let before = tree(&dir);
    let (job2, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 3);
    o.restore = RestoreFrom::Latest;
    match run_job(job2, &o) {
        Err(JobError::AllUnusable { reasons, .. }) => {
            let named: Vec<u64> = reasons.iter().map(|r| r.0).collect();
            assert_eq!(named, ids, "every checkpoint, newest first");
            for (id, why) in &reasons {
                assert!(why.contains("w000.seg"), "checkpoint {id}: {why}");
            }
        }
        other => panic!("expected every checkpoint unusable, got {other:?}"),
    }
    assert!(tallies.lock().unwrap().is_empty(), "nothing ran");
    assert_eq!(tree(&dir), before, "nothing moved or removed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn at_least_once_mode_completes_checkpoints() {
    let dir = temp_dir("alo");
    let s = Setup {
        per_ms: 250,
        ..Setup::new(100_000, 100)
    };
    let (job, tallies) = job(&s);
    let mut o = checkpointed(2, &dir, 1);
    o.checkpointing.as_mut().unwrap().exactly_once = false;
    let result = run_ok(job, &o);
    assert!(result.checkpoints.len() >= 3);
    assert_exact(&tallies, s.n, s.keys);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_function_that_does_not_visit_its_state_is_rejected() {
    struct Forgetful(KeyedValueState<u64, u64>);
    impl KeyedProcessFunction for Forgetful {
        type Key = u64;
        type In = (u64, u64);
        type Out = (u64, u64, u64);
        fn process<C: Collector<Self::Out>>(
            &mut self,
            ctx: &KeyContext<u64>,
            r: (u64, u64),
            out: &mut C,
        ) {
            self.0.update(ctx, r.1);
            out.collect((r.0, 1, r.1));
        }
    }
    let dir = temp_dir("forgetful");
    let job = JobGraph::new("forgetful");
    job.source("numbers", |info: &SubtaskInfo| {
        weir_runtime::SequenceSource::new(info, 100, |i| (i % 7, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("forgets", |_: &SubtaskInfo| {
        Forgetful(KeyedValueState::new("remembered"))
    })
    .sink("tally", |info: &SubtaskInfo| TallySink {
        index: info.index,
        records: 0,
        checksum: 0,
        into: Arc::default(),
    });
    match run_job(job, &checkpointed(1, &dir, 1)) {
        Err(e @ JobError::TaskFailed { .. }) => assert!(
            e.to_string()
                .contains("creates state `remembered` but its visit_state does not visit it"),
            "{e}"
        ),
        other => panic!("expected a failure at start, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Keeps, per key, the largest `(count, sum)` the keyed operator emitted
/// (counts grow by one per record, so a replay re-emits what is already
/// there): the final totals, whatever restarts happened. No checkpointed
/// state, so the sink stage may change parallelism.
struct LatestTotals(Arc<Mutex<std::collections::HashMap<u64, (u64, u64)>>>);

impl Sink for LatestTotals {
    type In = (u64, u64, u64);

    fn invoke(&mut self, (key, count, sum): (u64, u64, u64)) {
        let mut m = self.0.lock().unwrap();
        let e = m.entry(key).or_insert((0, 0));
        if count > e.0 {
            *e = (count, sum);
        }
    }
}

/// Keyed state follows its key groups: a job whose keyed stage ran with 2
/// subtasks fails, and is restored with 3; every key's final totals are
/// those of the workload.
#[test]
fn keyed_state_is_restored_at_another_parallelism() {
    let dir = temp_dir("rescale");
    let (n, keys) = (120_000u64, 500u64);
    let totals = Arc::new(Mutex::new(std::collections::HashMap::new()));
    let build = |parallelism: usize, fail: InjectedFailure| {
        let into = totals.clone();
        let job = JobGraph::new("rescaled-count");
        job.source("paced", move |info: &SubtaskInfo| {
            PacedSource::new(info, n, keys, 400)
        })
        .key_by(|r: &(u64, u64)| r.0)
        .process("count", move |_: &SubtaskInfo| CountAndSum {
            totals: KeyedValueState::new("totals"),
            fail: fail.clone(),
            slow: Duration::ZERO,
        })
        .parallelism(parallelism)
        .sink("latest", move |_: &SubtaskInfo| LatestTotals(into.clone()));
        job
    };
    let mut o = checkpointed(2, &dir, 2);
    o.restart = RestartStrategy::None;
    match run_job(build(2, InjectedFailure::at(80_001, &dir)), &o) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(build(3, InjectedFailure::never()), &o);
    let restored = result
        .restored
        .expect("restored the failed run's checkpoint");
    assert!(restored.state_bytes > 0);
    let want = reference_totals(n, keys);
    let got = totals.lock().unwrap().clone();
    assert_eq!(got.len(), want.len(), "every key");
    for (k, t) in &want {
        assert_eq!(got.get(k), Some(t), "key {k}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Per key: the number of records and the sum of their values.
fn reference_totals(n: u64, keys: u64) -> std::collections::HashMap<u64, (u64, u64)> {
    let mut m = std::collections::HashMap::new();
    for i in 0..n {
        let e = m.entry(splitmix64(i) % keys).or_insert((0u64, 0u64));
        e.0 += 1;
        e.1 = e.1.wrapping_add(i);
    }
    m
}

/// Rewrites the first table block of operator `count`'s subtask 0 in
/// checkpoint `chk` with `lie` applied to its payload (which may grow by
/// up to its padding), sealing it again and recording the new checksum in
/// the manifest: a block whose checksum is right and whose contents lie.
/// Returns the block's segment.
fn rewrite_table_block(chk: &Path, lie: impl Fn(&mut Vec<u8>)) -> String {
    let mut manifest = Manifest::read(chk.join("_metadata")).unwrap();
    let op = manifest
        .operators
        .iter_mut()
        .find(|o| o.uid == "count")
        .unwrap();
    let st = op.subtasks.iter_mut().find(|s| s.index == 0).unwrap();
    let e = st
        .extents
        .iter_mut()
        .find(|e| e.kind == BlockKind::KeyedTable)
        .expect("W1's counts are written as table blocks");
    let seg_path = chk.join(&e.segment);
    let mut payload = SegmentReader::open(&seg_path)
        .unwrap()
        .read_block(e)
        .unwrap()
        .to_vec();
    lie(&mut payload);
    let length = weir_state::snapshot::padded_block_len(payload.len() as u32);
    assert_eq!(length, e.length, "the lie fits the block's padding");
    let mut block = vec![0u8; length as usize];
    e.payload_crc32c =
        weir_state::snapshot::encode_block(&mut block, e.kind, e.key_groups, &payload);
    let mut seg = std::fs::read(&seg_path).unwrap();
    seg[e.offset as usize..(e.offset + length) as usize].copy_from_slice(&block);
    std::fs::write(&seg_path, seg).unwrap();
    let segment = e.segment.clone();
    std::fs::remove_file(chk.join("_metadata")).unwrap();
    manifest.write(chk, "_metadata").unwrap();
    segment
}

/// A table block whose checksum is right but whose contents lie — an
/// entry of another subtask's key group, or bytes after the entries of
/// its used slots — is refused while it is loaded, naming the segment;
/// restoring "latest" then falls back to the previous checkpoint and the
/// result is exact.
#[test]
fn a_table_block_that_lies_is_refused_and_the_previous_checkpoint_used() {
    use weir_state::{KeyGroupAssigner, KeyHash};
    let foreign = |payload: &mut Vec<u8>| {
        // Subtask 0 of 2 owns key groups 0..64 of 128.
        let groups = KeyGroupAssigner::new(128, 1);
        let key = (1_000_000u64..)
            .find(|k| groups.key_group(k.key_hash()) >= 64)
            .unwrap();
        let at = TableBlock::parse(payload).unwrap().bitmap.len()
            + weir_runtime::checkpoint::table_block::HEADER_LEN;
        payload[at..at + 8].copy_from_slice(&key.to_le_bytes());
    };
    let trailing = |payload: &mut Vec<u8>| payload.extend_from_slice(&[0; 8]);
    type Lie<'a> = &'a dyn Fn(&mut Vec<u8>);
    let cases: [(&str, Lie<'_>, &str); 2] = [
        ("lie-foreign", &foreign, "key group"),
        ("lie-trailing", &trailing, "bytes after the entries"),
    ];
    for (name, lie, expect) in cases {
        let (dir, s, storage, ids) = run_keeping_three_checkpoints(name);
        assert!(ids.len() >= 2, "{ids:?}");
        let newest = storage.checkpoint_dir(ids[0]);
        let segment = rewrite_table_block(&newest, lie);
        // The checksums and the manifest are right: only loading finds it.
        let found = find_latest(
            &storage,
            "checkpointed-count",
            128,
            &fingerprint(&s, &dir),
            None,
        )
        .unwrap()
        .unwrap()
        .found
        .expect("the checkpoint verifies");
        assert_eq!(found.id(), ids[0]);
        found.verify().unwrap();

        let (job2, _) = job(&s);
        let mut o = checkpointed(2, &dir, 3);
        o.restore = RestoreFrom::Path(newest.clone());
        match run_job(job2, &o) {
            Err(JobError::RestoreCorrupt {
                checkpoint,
                message,
            }) => {
                assert_eq!(checkpoint, ids[0]);
                assert!(
                    message.contains(expect) && message.contains(&segment),
                    "{message}"
                );
            }
            other => panic!("expected the lie to be found, got {other:?}"),
        }
        let (job3, tallies) = job(&s);
        o.restore = RestoreFrom::Latest;
        let result = run_ok(job3, &o);
        assert_eq!(result.restored.unwrap().checkpoint_id, ids[1]);
        assert_exact(&tallies, s.n, s.keys);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
