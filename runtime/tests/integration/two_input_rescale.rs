//! Unaligned channel state of two-input stages at another parallelism: a
//! keyed co-process job and a broadcast-connect job whose two-input
//! operator is slow (so the barriers of unaligned checkpoints overtake
//! records on both of its inputs) run on 2 workers until a checkpoint
//! holding in-flight records of both inputs is complete, fail, and that
//! checkpoint is restored on 3 workers and on 1. Keyed records follow
//! their key groups, round-robin ones go whole to one new subtask, and
//! each new subtask replays the broadcast records of the old subtask whose
//! broadcast state it restores: the results are exactly those of an
//! uninterrupted run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir_runtime::{
    BroadcastProcessFunction, BroadcastState, Collector, JobError, JobGraph, KeyContext,
    KeyedCoProcessFunction, KeyedProcessFunction, KeyedStates, KeyedValueState, RestoreFrom,
    SequenceSource, Sink, SubtaskInfo,
};
use weir_state::snapshot::{BlockKind, Manifest};

use crate::rescale::{unaligned, with_channel_state, Paced};
use crate::{run_job, run_ok, splitmix64, temp_dir};

const KEYS: u64 = 100;
/// Records of the first input (the keyed or round-robin one).
const N: u64 = 20_000;
/// Records of the second input (keyed or broadcast).
const N2: u64 = 8_000;

/// The checkpoints of `dir` in which a subtask of a two-input stage holds
/// in-flight records of both of its inputs (told apart by the stage's
/// `input-channels` inline state).
fn in_flight_on_both_inputs(dir: &Path) -> Vec<PathBuf> {
    with_channel_state(dir)
        .into_iter()
        .filter(|p| {
            let Ok(m) = Manifest::read(p.join("_metadata")) else {
                return false;
            };
            m.operators.iter().flat_map(|op| &op.subtasks).any(|s| {
                let Some(layout) = s.inline_state.iter().find(|i| i.name == "input-channels")
                else {
                    return false;
                };
                let first = u32::from_le_bytes(layout.bytes[..4].try_into().unwrap());
                let mut sides = [false; 2];
                for e in &s.extents {
                    if e.kind == BlockKind::ChannelState && e.length > 0 {
                        let c: u32 = e.state.strip_prefix("input-").unwrap().parse().unwrap();
                        sides[usize::from(c >= first)] = true;
                    }
                }
                sides == [true, true]
            })
        })
        .collect()
}

/// The checkpoints of [`in_flight_on_both_inputs`] in which the old
/// subtasks of `count-broadcasts` hold different broadcast states (had
/// processed different broadcast records at the barrier): only there does
/// it matter which old subtask's in-flight broadcast records a new one
/// replays.
fn in_flight_with_diverged_broadcast_state(dir: &Path) -> Vec<PathBuf> {
    in_flight_on_both_inputs(dir)
        .into_iter()
        .filter(|p| {
            Manifest::read(p.join("_metadata")).is_ok_and(|m| {
                m.operators.iter().any(|op| {
                    let states: Vec<_> = op
                        .subtasks
                        .iter()
                        .flat_map(|s| &s.inline_state)
                        .filter(|i| op.uid == "count-broadcasts" && i.name == "broadcast-state")
                        .map(|i| &i.bytes)
                        .collect();
                    states.len() == 2 && states[0] != states[1]
                })
            })
        })
        .collect()
}

/// Which checkpoints a test waits for and restores.
type Wanted = fn(&Path) -> Vec<PathBuf>;

/// In the run that fails (`fail_in`): spins `slow` per record (longer on
/// higher subtasks, so that the old subtasks have processed different
/// numbers of broadcast records at a checkpoint's barrier), and every 64th
/// call panics once that directory holds a checkpoint of `wanted`. The
/// restored run does not spin: it only replays and finishes, and spinning
/// there (up to 180 µs a record on 3 workers) made it take 10-20 s on a
/// loaded 2-core machine, near the harness's hang limit.
struct Slow {
    slow: Duration,
    fail_in: Option<PathBuf>,
    wanted: Wanted,
    seen: u64,
}

impl Slow {
    fn new(info: &SubtaskInfo, fail_in: &Option<PathBuf>, wanted: Wanted) -> Self {
        Self {
            wanted,
            slow: match fail_in {
                Some(_) => Duration::from_micros(60 * (1 + info.index as u64)),
                None => Duration::ZERO,
            },
            fail_in: fail_in.clone(),
            seen: 0,
        }
    }

    fn record(&mut self) {
        self.seen += 1;
        if let Some(dir) = &self.fail_in {
            if self.seen.is_multiple_of(64) && !(self.wanted)(dir).is_empty() {
                panic!("injected failure after a checkpoint with in-flight records of both inputs");
            }
        }
        let until = Instant::now() + self.slow;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// The largest count seen per `(kind, id)`: the final counts (a replay
/// re-emits smaller ones, never larger).
type Largest = Arc<Mutex<HashMap<(u64, u64), u64>>>;

struct LargestSink(Largest);

impl Sink for LargestSink {
    type In = (u64, u64, u64);

    fn invoke(&mut self, (kind, id, n): (u64, u64, u64)) {
        let mut m = self.0.lock().unwrap();
        let e = m.entry((kind, id)).or_insert(0);
        *e = (*e).max(n);
    }
}

/// A paced sequence of `f(0..n)`.
type PacedSequence<T> = Paced<SequenceSource<fn(u64) -> T>>;

fn paced<T>(info: &SubtaskInfo, n: u64, f: fn(u64) -> T) -> PacedSequence<T> {
    Paced {
        inner: SequenceSource::new(info, n, f),
        per_ms: 20,
        next_at: None,
    }
}

/// Per key, the number of records of each input: emits `(0, key, count)`
/// for the first, `(2, key, count)` for the second.
struct CoCount {
    counts: KeyedValueState<u64, (u64, u64)>,
    slow: Slow,
}

impl CoCount {
    fn count<C: Collector<(u64, u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        second: bool,
        out: &mut C,
    ) {
        self.slow.record();
        let (a, b) = self.counts.value(ctx).unwrap_or((0, 0));
        let (a, b) = if second { (a, b + 1) } else { (a + 1, b) };
        self.counts.update(ctx, (a, b));
        out.collect((
            2 * u64::from(second),
            *ctx.key(),
            if second { b } else { a },
        ));
    }
}

impl KeyedCoProcessFunction for CoCount {
    type Key = u64;
    type In1 = (u64, u64);
    type In2 = (u64, u64);
    type Out = (u64, u64, u64);

    fn process_element1<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        _: (u64, u64),
        out: &mut C,
    ) {
        self.count(ctx, false, out);
    }

    fn process_element2<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        _: (u64, u64),
        out: &mut C,
    ) {
        self.count(ctx, true, out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.counts);
    }
}

fn first_record(i: u64) -> (u64, u64) {
    (splitmix64(i) % KEYS, i)
}

fn second_record(i: u64) -> (u64, u64) {
    (splitmix64(i ^ 0x9e37) % KEYS, i)
}

fn co_process_job(fail_in: Option<PathBuf>, largest: &Largest) -> JobGraph {
    let into = largest.clone();
    let job = JobGraph::new("co-unaligned-rescale");
    let second = job
        .source("second", |info: &SubtaskInfo| {
            paced(info, N2, second_record)
        })
        .key_by(|r: &(u64, u64)| r.0)
        .detach();
    job.source("first", |info: &SubtaskInfo| paced(info, N, first_record))
        .key_by(|r: &(u64, u64)| r.0)
        .connect(second)
        .process("co-count", move |info: &SubtaskInfo| CoCount {
            counts: KeyedValueState::new("counts"),
            slow: Slow::new(info, &fail_in, in_flight_on_both_inputs),
        })
        .sink("largest", move |_: &SubtaskInfo| LargestSink(into.clone()));
    job
}

fn co_process_reference() -> HashMap<(u64, u64), u64> {
    let mut want = HashMap::new();
    for i in 0..N {
        *want.entry((0, first_record(i).0)).or_insert(0) += 1;
    }
    for i in 0..N2 {
        *want.entry((2, second_record(i).0)).or_insert(0) += 1;
    }
    want
}

/// Round-robin values meet a broadcast stream: each value is tagged with
/// its key `(0, key)`; each broadcast record adds one to the subtask's
/// count in broadcast state and emits `(1, subtask, count)`.
struct CountBroadcasts {
    subtask: u64,
    slow: Slow,
}

impl BroadcastProcessFunction for CountBroadcasts {
    type In = u64;
    type Broadcast = u64;
    type Out = (u64, u64, u64);
    type StateKey = u64;
    type StateValue = u64;

    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        v: u64,
        _: &BroadcastState<u64, u64>,
        out: &mut C,
    ) {
        self.slow.record();
        out.collect((0, splitmix64(v) % KEYS, 0));
    }

    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        _: u64,
        state: &mut BroadcastState<u64, u64>,
        out: &mut C,
    ) {
        self.slow.record();
        let n = state.get(&0).unwrap_or(0) + 1;
        state.put(0, n);
        out.collect((1, self.subtask, n));
    }
}

/// Counts the tagged values per key (`(0, key, count)`), passes the
/// broadcast counts on.
struct CountTagged {
    counts: KeyedValueState<(u64, u64), u64>,
}

impl KeyedProcessFunction for CountTagged {
    type Key = (u64, u64);
    type In = (u64, u64, u64);
    type Out = (u64, u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<(u64, u64)>,
        (kind, id, n): (u64, u64, u64),
        out: &mut C,
    ) {
        if kind == 1 {
            out.collect((kind, id, n));
            return;
        }
        let n = self.counts.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        out.collect((kind, id, *n));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.counts);
    }
}

fn broadcast_job(fail_in: Option<PathBuf>, largest: &Largest) -> JobGraph {
    let into = largest.clone();
    let job = JobGraph::new("broadcast-unaligned-rescale");
    let broadcasts = job
        .source("broadcasts", |info: &SubtaskInfo| paced(info, N2, |i| i))
        .broadcast();
    job.source("values", |info: &SubtaskInfo| paced(info, N, |i| i))
        .connect(broadcasts)
        .process("count-broadcasts", move |info: &SubtaskInfo| {
            CountBroadcasts {
                subtask: info.index as u64,
                slow: Slow::new(info, &fail_in, in_flight_with_diverged_broadcast_state),
            }
        })
        .key_by(|r: &(u64, u64, u64)| (r.0, r.1))
        .process("count-tagged", |_: &SubtaskInfo| CountTagged {
            counts: KeyedValueState::new("counts"),
        })
        .sink("largest", move |_: &SubtaskInfo| LargestSink(into.clone()));
    job
}

/// Every value counted once per key, and every new subtask (of
/// `parallelism`) applied every broadcast record once.
fn broadcast_reference(parallelism: usize) -> HashMap<(u64, u64), u64> {
    let mut want = HashMap::new();
    for i in 0..N {
        *want.entry((0, splitmix64(i) % KEYS)).or_insert(0) += 1;
    }
    for s in 0..parallelism as u64 {
        want.insert((1, s), N2);
    }
    want
}

/// Runs `job` on 2 workers until it fails after a checkpoint with
/// in-flight records of both inputs, restores that checkpoint on `after`
/// workers and checks the results against `want` (broadcast counts of old
/// subtasks beyond `after` are left out).
fn restore_at(
    tag: &str,
    job: fn(Option<PathBuf>, &Largest) -> JobGraph,
    wanted: Wanted,
    after: usize,
    want: HashMap<(u64, u64), u64>,
) {
    let dir = temp_dir(&format!("{tag}-{after}"));
    let largest = Largest::default();
    match run_job(job(Some(dir.clone()), &largest), &unaligned(2, &dir)) {
        Err(e @ JobError::TaskFailed { .. }) => {
            assert!(e.to_string().contains("injected failure"), "{e}")
        }
        other => panic!("expected the injected failure, got {other:?}"),
    }
    let checkpoint = wanted(&dir)
        .into_iter()
        .next()
        .expect("a checkpoint with in-flight records of both inputs");
    let mut o = unaligned(after, &dir);
    o.restore = RestoreFrom::Path(checkpoint.clone());
    let result = run_ok(job(None, &largest), &o);
    assert!(
        result.restored.is_some(),
        "restored {}",
        checkpoint.display()
    );
    let mut got = largest.lock().unwrap().clone();
    got.retain(|&(kind, id), _| kind != 1 || id < after as u64);
    assert_eq!(
        got,
        want,
        "every record processed once after restoring {} (2 workers) on {after}",
        checkpoint.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn in_flight_records_of_both_inputs_of_a_co_process_stage_follow_their_keys_to_more_subtasks() {
    restore_at(
        "co-in-flight",
        co_process_job,
        in_flight_on_both_inputs,
        3,
        co_process_reference(),
    );
}

#[test]
fn in_flight_records_of_both_inputs_of_a_co_process_stage_follow_their_keys_to_fewer_subtasks() {
    restore_at(
        "co-in-flight",
        co_process_job,
        in_flight_on_both_inputs,
        1,
        co_process_reference(),
    );
}

#[test]
fn in_flight_round_robin_and_broadcast_records_are_replayed_once_on_more_subtasks() {
    restore_at(
        "bc-in-flight",
        broadcast_job,
        in_flight_with_diverged_broadcast_state,
        3,
        broadcast_reference(3),
    );
}

#[test]
fn in_flight_round_robin_and_broadcast_records_are_replayed_once_on_fewer_subtasks() {
    restore_at(
        "bc-in-flight",
        broadcast_job,
        in_flight_with_diverged_broadcast_state,
        1,
        broadcast_reference(1),
    );
}

/// A checkpoint of an older weir, whose two-input stage did not record
/// each input's channels, still refuses to restore its in-flight records
/// at another parallelism: not retryable (exit 2), saying why.
#[test]
fn in_flight_records_of_both_inputs_without_their_channel_counts_refuse_a_rescale() {
    let dir = temp_dir("co-in-flight-old");
    let largest = Largest::default();
    match run_job(
        co_process_job(Some(dir.clone()), &largest),
        &unaligned(2, &dir),
    ) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    let checkpoint = in_flight_on_both_inputs(&dir)
        .into_iter()
        .next()
        .expect("a checkpoint with in-flight records of both inputs");
    let mut m = Manifest::read(checkpoint.join("_metadata")).unwrap();
    for s in m.operators.iter_mut().flat_map(|op| &mut op.subtasks) {
        s.inline_state.retain(|i| i.name != "input-channels");
    }
    m.write(&checkpoint, "_metadata").unwrap();
    let mut o = unaligned(3, &dir);
    o.restore = RestoreFrom::Path(checkpoint.clone());
    match run_job(co_process_job(None, &largest), &o) {
        Err(e) => {
            assert!(!e.retryable(), "{e}");
            assert!(
                e.to_string()
                    .contains("without the number of channels of each input"),
                "{e}"
            );
        }
        Ok(_) => panic!("restored {} on 3 workers", checkpoint.display()),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
