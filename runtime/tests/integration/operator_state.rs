//! Operator (non-keyed) state end to end: a process function that buffers
//! records in even-split list state and counts them in union list state
//! fails mid-run and is restored, at the same parallelism (its output
//! equals an uninterrupted run's) and at another (its buffers are split
//! as Flink splits them, every new subtask gets every old counter, and
//! nothing is lost or duplicated).
//!
//! The job: a paced source, a keyed pass-through (so that the next stage
//! starts at an exchange and may change parallelism), the `batch` process
//! function chained behind it, another exchange and an exactly-once sink
//! that keeps what it received in memory and truncates it to its
//! checkpointed length on restore.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::checkpoint::{find_latest, CheckpointStorage};
use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::exec::RunIdentity;
use weir_runtime::{
    Collector, ExecutionOptions, InitializationContext, JobError, JobGraph, KeyContext,
    KeyedProcessFunction, OperatorListState, OperatorStates, ProcessContext, ProcessFunction,
    RestoreFrom, Sink, SubtaskInfo, UnionListState,
};
use weir_state::snapshot::{BlockKind, SegmentReader};

use crate::checkpoint::PacedSource;
use crate::{options, run_job, run_ok, sorted, temp_dir};

/// Records a `batch` subtask buffers before emitting them all.
const BATCH: usize = 100;

/// Records a `batch` subtask has seen before a completed checkpoint arms
/// the injected failure.
const FAIL_AFTER: u64 = 1_000;

/// A restored `batch` subtask's buffer and union counters
/// `(old subtask, count)`.
type Restored = (Vec<u64>, Vec<(u64, u64)>);

/// What the subtasks of one run tell the test.
#[derive(Default)]
struct Report {
    /// Per restored `batch` subtask: its buffer and its union counters.
    restored: HashMap<usize, Restored>,
    /// Per `batch` subtask at the end of its input: records it counted.
    finals: HashMap<usize, u64>,
    /// Per sink subtask: the values received (exactly once).
    delivered: HashMap<usize, Vec<u64>>,
    /// Per restored sink subtask: how many values its checkpoint kept.
    sink_restored: HashMap<usize, usize>,
}

type Shared = Arc<Mutex<Report>>;

/// Emits a key's values unchanged (a keyed stage between exchanges).
struct PassThrough;

impl KeyedProcessFunction for PassThrough {
    type Key = u64;
    type In = (u64, u64);
    type Out = u64;

    fn process<C: Collector<u64>>(&mut self, _: &KeyContext<u64>, r: (u64, u64), out: &mut C) {
        out.collect(r.1);
    }
}

/// The same for the stage of the sink.
struct Deliver;

impl KeyedProcessFunction for Deliver {
    type Key = u64;
    type In = u64;
    type Out = u64;

    fn process<C: Collector<u64>>(&mut self, _: &KeyContext<u64>, v: u64, out: &mut C) {
        out.collect(v);
    }
}

/// Buffers values in list state and emits them [`BATCH`] at a time (the
/// rest at the end of the input); counts the values it saw, keeping
/// `(subtask, count)` in union list state. After a restore, subtask `i`
/// takes over the counts of the old subtasks `j` with `j % P == i`, so the
/// counts add up to the records whatever the parallelism. With `fail`, a
/// subtask that had seen [`FAIL_AFTER`] records when a checkpoint
/// completed panics at its next record (once per job: `armed`), so the
/// failure always finds a complete checkpoint however slow the machine.
struct Batcher {
    index: usize,
    buffer: OperatorListState<u64>,
    counts: UnionListState<(u64, u64)>,
    seen: u64,
    fail: bool,
    checkpointed: bool,
    armed: Arc<AtomicBool>,
    report: Shared,
}

impl ProcessFunction for Batcher {
    type In = u64;
    type Out = u64;

    fn process<C: Collector<u64>>(&mut self, _ctx: &ProcessContext, value: u64, out: &mut C) {
        if self.fail && self.checkpointed && self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected failure at record {value}");
        }
        self.seen += 1;
        self.buffer.add(value);
        if self.buffer.len() == BATCH {
            for v in self.buffer.iter() {
                out.collect(v);
            }
            self.buffer.clear();
        }
    }

    fn on_end_of_input<C: Collector<u64>>(&mut self, out: &mut C) {
        for v in self.buffer.iter() {
            out.collect(v);
        }
        self.buffer.clear();
        self.report
            .lock()
            .unwrap()
            .finals
            .insert(self.index, self.seen);
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.list(&mut self.buffer);
        states.union_list(&mut self.counts);
    }

    fn initialize_state(&mut self, ctx: &InitializationContext) {
        if !ctx.is_restored() {
            return;
        }
        let counts = self.counts.to_vec();
        let p = ctx.parallelism() as u64;
        self.seen = counts
            .iter()
            .filter(|(j, _)| j % p == ctx.subtask_index() as u64)
            .map(|(_, n)| n)
            .sum();
        self.report
            .lock()
            .unwrap()
            .restored
            .insert(ctx.subtask_index(), (self.buffer.to_vec(), counts));
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) {
        self.counts.update([(self.index as u64, self.seen)]);
    }

    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {
        self.checkpointed |= self.seen >= FAIL_AFTER;
    }
}

/// Keeps what it receives in the report; its state is how many values it
/// had at the barrier, and a restore truncates to that: exactly once.
struct Delivered {
    index: usize,
    report: Shared,
}

impl Sink for Delivered {
    type In = u64;

    fn invoke(&mut self, v: u64) {
        let mut r = self.report.lock().unwrap();
        r.delivered.entry(self.index).or_default().push(v);
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let keep = match restored {
            Some((_, b)) => u64::from_le_bytes(b.try_into().map_err(|_| "8 bytes")?) as usize,
            None => 0,
        };
        let mut r = self.report.lock().unwrap();
        r.delivered.entry(self.index).or_default().truncate(keep);
        if restored.is_some() {
            r.sink_restored.insert(self.index, keep);
        }
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let r = self.report.lock().unwrap();
        let n = r.delivered.get(&self.index).map_or(0, Vec::len) as u64;
        Ok(n.to_le_bytes().to_vec())
    }
}

/// The job over `n` records with `batch` at `parallelism`, failing once
/// after a checkpoint with `fail`.
fn job(n: u64, parallelism: usize, fail: bool, report: &Shared) -> JobGraph {
    let armed = Arc::new(AtomicBool::new(true));
    let (to_batch, to_sink) = (report.clone(), report.clone());
    let job = JobGraph::new("operator-state");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, 1_000, 80)
    })
    .parallelism(2)
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PassThrough)
    .process("batch", move |info: &SubtaskInfo| Batcher {
        index: info.index,
        buffer: OperatorListState::new("buffer"),
        counts: UnionListState::new("counts"),
        seen: 0,
        fail,
        checkpointed: false,
        armed: armed.clone(),
        report: to_batch.clone(),
    })
    .parallelism(parallelism)
    .key_by(|v: &u64| *v)
    .process("deliver", |_: &SubtaskInfo| Deliver)
    .parallelism(1)
    .sink("delivered", move |info: &SubtaskInfo| Delivered {
        index: info.index,
        report: to_sink.clone(),
    });
    job
}

fn checkpointed(dir: &Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 2;
    o
}

/// Every value delivered, sorted.
fn delivered(report: &Shared) -> Vec<u64> {
    sorted(
        report
            .lock()
            .unwrap()
            .delivered
            .values()
            .flatten()
            .copied()
            .collect(),
    )
}

/// What a restore must see, whatever the parallelism: the union counters
/// of the checkpoint add up to the values the sink had plus those in the
/// buffers (aligned: nothing was in flight), and every `batch` subtask got
/// the same counters, one per old subtask.
fn assert_consistent_restore(r: &Report, old_parallelism: u64, new_parallelism: usize) {
    assert_eq!(r.restored.len(), new_parallelism, "every subtask restored");
    let counters = &r.restored[&0].1;
    let mut old: Vec<u64> = counters.iter().map(|c| c.0).collect();
    old.sort_unstable();
    assert_eq!(old, (0..old_parallelism).collect::<Vec<_>>());
    for (i, (_, c)) in &r.restored {
        assert_eq!(c, counters, "subtask {i} got every old counter");
    }
    let counted: u64 = counters.iter().map(|c| c.1).sum();
    let buffered: usize = r.restored.values().map(|(b, _)| b.len()).sum();
    let at_sink: usize = r.sink_restored.values().sum();
    assert_eq!(counted, (at_sink + buffered) as u64);
}

/// A failure mid-run restarts from the latest checkpoint: the values
/// delivered are exactly those of an uninterrupted run (each record once:
/// the buffers and counters were restored), and the counts add up.
#[test]
fn a_process_function_restores_its_operator_state_exactly_once() {
    let n = 80_000;
    let dir = temp_dir("opstate-failover");
    let clean: Shared = Arc::default();
    run_ok(job(n, 2, false, &clean), &options(2));
    let want = delivered(&clean);
    assert_eq!(want, (0..n).collect::<Vec<_>>());

    let report: Shared = Arc::default();
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job(n, 2, true, &report), &o);
    assert_eq!(result.restarts, 1);
    assert!(result.restored.is_some(), "the second attempt restored");
    assert_eq!(delivered(&report), want);
    let r = report.lock().unwrap();
    assert_consistent_restore(&r, 2, 2);
    assert_eq!(r.finals.values().sum::<u64>(), n);
    drop(r);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `batch` buffers of a checkpoint, per old subtask, read from its
/// segments (payload: mode tag, u32 count, u64 elements).
fn buffers_in_checkpoint(dir: &Path) -> Vec<Vec<u64>> {
    let storage = CheckpointStorage::open(dir).unwrap();
    let report = Shared::default();
    let fingerprint = RunIdentity::of(&job(0, 2, false, &report), &checkpointed(dir)).fingerprint;
    let latest = find_latest(&storage, "operator-state", 128, &fingerprint, None)
        .unwrap()
        .unwrap()
        .found
        .expect("a complete checkpoint");
    let op = latest
        .manifest()
        .operators
        .iter()
        .find(|o| o.uid == "batch")
        .unwrap();
    let mut out = vec![Vec::new(); op.parallelism as usize];
    for st in &op.subtasks {
        for e in st
            .extents
            .iter()
            .filter(|e| e.kind == BlockKind::OperatorState && e.state == "buffer")
        {
            let seg = SegmentReader::open(latest.dir().join(&e.segment)).unwrap();
            let payload = seg.read_block(e).unwrap();
            assert_eq!(payload[0], 1, "even-split tag");
            let count = u32::from_le_bytes(payload[1..5].try_into().unwrap()) as usize;
            let values: Vec<u64> = payload[5..]
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
                .collect();
            assert_eq!(values.len(), count);
            out[st.index as usize].extend(values);
        }
    }
    out
}

/// `batch` ran with 2 subtasks, failed, and is restored with 3: the three
/// new buffers are the two old ones concatenated and cut into contiguous
/// even parts, every new subtask got both old counters, and every record
/// is delivered exactly once in the end.
#[test]
fn operator_state_is_redistributed_at_another_parallelism() {
    let n = 80_000;
    let dir = temp_dir("opstate-rescale");
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    let first: Shared = Arc::default();
    match run_job(job(n, 2, true, &first), &o) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    let old = buffers_in_checkpoint(&dir);
    assert_eq!(old.len(), 2);

    // The second run starts from what the first had delivered.
    let report: Shared = Arc::new(Mutex::new(Report {
        delivered: std::mem::take(&mut first.lock().unwrap().delivered),
        ..Report::default()
    }));
    o.restore = RestoreFrom::Latest;
    let result = run_ok(job(n, 3, false, &report), &o);
    assert!(result.restored.is_some());
    let r = report.lock().unwrap();
    assert_consistent_restore(&r, 2, 3);
    let total: usize = old.iter().map(Vec::len).sum();
    let concatenated: Vec<u64> = old.iter().flatten().copied().collect();
    let mut at = 0;
    for i in 0..3 {
        let part = &r.restored[&i].0;
        let want = total / 3 + usize::from(i < total % 3);
        assert_eq!(part.len(), want, "subtask {i}'s share of {total}");
        assert_eq!(part[..], concatenated[at..at + want], "subtask {i}");
        at += want;
    }
    assert!(total > 0, "the checkpoint had buffered records");
    assert_eq!(r.finals.values().sum::<u64>(), n, "counts add up");
    drop(r);
    assert_eq!(delivered(&report), (0..n).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keeps the last [`KEPT`] values it saw in list state `kept`, of the
/// even-split kind or, with `union`, of the union kind; reports what it
/// restored.
struct KeepLast<S> {
    kept: S,
    restored: Arc<Mutex<Vec<Vec<u64>>>>,
}

/// Values [`KeepLast`] keeps.
const KEPT: usize = 10;

/// The list states [`KeepLast`] may keep its values in.
trait KeptList: 'static {
    fn new(name: &str) -> Self;
    fn list(&mut self) -> &mut weir_runtime::state::operator::ArenaList<u64>;
    fn visit(&mut self, states: &mut OperatorStates<'_>);
}

impl KeptList for OperatorListState<u64> {
    fn new(name: &str) -> Self {
        OperatorListState::new(name)
    }
    fn list(&mut self) -> &mut weir_runtime::state::operator::ArenaList<u64> {
        self
    }
    fn visit(&mut self, states: &mut OperatorStates<'_>) {
        states.list(self);
    }
}

impl KeptList for UnionListState<u64> {
    fn new(name: &str) -> Self {
        UnionListState::new(name)
    }
    fn list(&mut self) -> &mut weir_runtime::state::operator::ArenaList<u64> {
        self
    }
    fn visit(&mut self, states: &mut OperatorStates<'_>) {
        states.union_list(self);
    }
}

impl<S: KeptList> ProcessFunction for KeepLast<S> {
    type In = u64;
    type Out = u64;

    fn process<C: Collector<u64>>(&mut self, _ctx: &ProcessContext, value: u64, out: &mut C) {
        let list = self.kept.list();
        let mut last: Vec<u64> = list.iter().collect();
        last.push(value);
        let from = last.len().saturating_sub(KEPT);
        list.update(last[from..].iter().copied());
        out.collect(value);
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.kept.visit(states);
    }

    fn initialize_state(&mut self, ctx: &InitializationContext) {
        if ctx.is_restored() {
            let list = self.kept.list().to_vec();
            self.restored.lock().unwrap().push(list);
        }
    }
}

/// Drops what it receives.
struct Discard;

impl Sink for Discard {
    type In = u64;
    fn invoke(&mut self, _: u64) {}
}

/// A bounded job of `n` values on one subtask through [`KeepLast`] with
/// state kind `S`.
fn keep_last_job<S: KeptList>(n: u64, restored: &Arc<Mutex<Vec<Vec<u64>>>>) -> JobGraph {
    let restored = restored.clone();
    let job = JobGraph::new("keep-last");
    job.source("numbers", move |info: &SubtaskInfo| {
        weir_runtime::SequenceSource::new(info, n, |i| i)
    })
    .process("keep", move |_: &SubtaskInfo| KeepLast {
        kept: S::new("kept"),
        restored: restored.clone(),
    })
    .parallelism(1)
    .sink("discard", |_: &SubtaskInfo| Discard);
    job
}

/// A job restored from its final checkpoint finds its list as it was, and
/// a job that declares the same state with the other redistribution mode
/// is refused with an error naming the state and both modes (Flink's
/// "incompatible assignment mode").
#[test]
fn a_state_restored_with_another_redistribution_mode_is_refused() {
    let dir = temp_dir("opstate-mode");
    let restored = Arc::new(Mutex::new(Vec::new()));
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    run_ok(
        keep_last_job::<OperatorListState<u64>>(1_000, &restored),
        &o,
    );
    o.restore = RestoreFrom::Latest;
    run_ok(
        keep_last_job::<OperatorListState<u64>>(1_000, &restored),
        &o,
    );
    assert_eq!(
        *restored.lock().unwrap(),
        vec![(990..1_000).collect::<Vec<u64>>()],
        "the last {KEPT} values"
    );
    match run_job(keep_last_job::<UnionListState<u64>>(1_000, &restored), &o) {
        Err(e @ JobError::TaskFailed { .. }) => assert!(
            e.to_string().contains(
                "operator state `kept` was checkpointed as list state (even-split \
                 redistribution) and is now declared as union list state"
            ),
            "{e}"
        ),
        other => panic!("expected the restore to be refused, got {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With checkpointing on, a function whose `visit_state` misses one of its
/// operator states fails the job at start, naming the state.
#[test]
fn a_function_that_does_not_visit_its_operator_state_is_rejected() {
    struct Forgetful {
        _kept: OperatorListState<u64>,
    }
    impl ProcessFunction for Forgetful {
        type In = u64;
        type Out = u64;
        fn process<C: Collector<u64>>(&mut self, _: &ProcessContext, v: u64, out: &mut C) {
            out.collect(v);
        }
    }
    let dir = temp_dir("opstate-forgetful");
    let job = JobGraph::new("forgetful-process");
    job.source("numbers", |info: &SubtaskInfo| {
        weir_runtime::SequenceSource::new(info, 100, |i| i)
    })
    .process("forgets", |_: &SubtaskInfo| Forgetful {
        _kept: OperatorListState::new("remembered"),
    })
    .sink("discard", |_: &SubtaskInfo| Discard);
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    match run_job(job, &o) {
        Err(e @ JobError::TaskFailed { .. }) => assert!(
            e.to_string().contains(
                "process operator `forgets` creates operator state `remembered` but its \
                 visit_state does not visit it"
            ),
            "{e}"
        ),
        other => panic!("expected a failure at start, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
