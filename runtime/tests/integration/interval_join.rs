//! Interval join end to end: two keyed streams with out-of-order event
//! times joined within bounds, compared with a nested-loop reference
//! computed here; after a crash and restore (also at another parallelism)
//! the buffered records come back and the output is the same.

use crate::InjectedFailure;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    Collector, ExecutionOptions, JobError, JobGraph, JoinContext, Offset, ProcessJoinFunction,
    RestoreFrom, Sink, SubtaskInfo, WatermarkStrategy,
};

use crate::checkpoint::PacedSource;
use crate::{collect_into, options, run_job, run_ok, sorted, splitmix64, temp_dir, Collected};

/// `(key, timestamp, id)`.
type Rec = (u64, i64, u64);
/// `(left id, right id, pair timestamp)`.
type Pair = (u64, u64, i64);

/// How far out of order each side's timestamps are (ms).
const BOUND: i64 = 25;

/// Left record `i`: timestamp about `i`, up to [`BOUND`] early.
fn left(k: u64, i: u64) -> Rec {
    (
        k,
        i as i64 - (splitmix64(i ^ 0x55) % (BOUND as u64 + 1)) as i64,
        i,
    )
}

/// Right record `i`: timestamp about `2 i` (half as dense), out of order
/// the same way, its key another of the key space's.
fn right(k: u64, i: u64, keys: u64) -> Rec {
    (
        (k * 13 + 5) % keys,
        2 * i as i64 - (splitmix64(i ^ 0xAA) % (BOUND as u64 + 1)) as i64,
        i,
    )
}

/// Emits the ids and the pair's timestamp.
struct PairIds;

impl ProcessJoinFunction<Rec, Rec> for PairIds {
    type Out = Pair;
    fn process_element<C: Collector<Pair>>(
        &mut self,
        l: Rec,
        r: Rec,
        ctx: &JoinContext,
        out: &mut C,
    ) {
        out.collect((l.2, r.2, ctx.timestamp()));
    }
}

/// The sides, the join between `lower` and `upper` (`exclusive` lower
/// bound) and a sink made by `sink`.
#[allow(clippy::too_many_arguments)]
fn job<S, SF>(
    (n, n2, keys): (u64, u64, u64),
    (lower, upper, exclusive): (i64, i64, bool),
    parallelism: usize,
    fail: InjectedFailure,
    sink: SF,
) -> JobGraph
where
    S: Sink<In = Pair>,
    SF: Fn(&SubtaskInfo) -> S + Send + Sync + 'static,
{
    let strategy = || {
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(BOUND as u64))
            .with_timestamp_assigner(|r: &Rec| r.1)
    };
    let job = JobGraph::new("interval-join");
    let rights = job
        .source("rights", move |info: &SubtaskInfo| {
            PacedSource::new(info, n2, keys, 250)
        })
        .map("right", move |(k, i): (u64, u64)| right(k, i, keys))
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &Rec| r.0)
        .detach();
    let join = job
        .source("lefts", move |info: &SubtaskInfo| {
            PacedSource::new(info, n, keys, 500)
        })
        .map("left", move |(k, i): (u64, u64)| {
            if fail.hits(i) {
                panic!("injected failure at left record {i}");
            }
            left(k, i)
        })
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &Rec| r.0)
        .interval_join(rights, |l: &Rec| l.1, |r: &Rec| r.1)
        .between(offset(lower), offset(upper));
    let join = if exclusive {
        join.lower_bound_exclusive()
    } else {
        join
    };
    join.process("join", |_: &SubtaskInfo| PairIds)
        .parallelism(parallelism)
        .sink("pairs", sink);
    job
}

/// The bound `ms` (signed) from the left record's timestamp, as Flink's
/// `Duration.ofMillis(ms)`.
fn offset(ms: i64) -> Offset {
    let span = Duration::from_millis(ms.unsigned_abs());
    if ms < 0 {
        Offset::before(span)
    } else {
        Offset::after(span)
    }
}

/// Every pair by a nested loop over each key's records (no record is late:
/// each side's timestamps are within the strategy's bound).
fn reference((n, n2, keys): (u64, u64, u64), lower: i64, upper: i64) -> Vec<Pair> {
    let mut lefts: HashMap<u64, Vec<Rec>> = HashMap::new();
    for i in 0..n {
        let r = left(splitmix64(i) % keys, i);
        lefts.entry(r.0).or_default().push(r);
    }
    let mut out = Vec::new();
    for i in 0..n2 {
        let r = right(splitmix64(i) % keys, i, keys);
        for l in lefts.get(&r.0).into_iter().flatten() {
            if l.1 + lower <= r.1 && r.1 <= l.1 + upper {
                out.push((l.2, r.2, l.1.max(r.1)));
            }
        }
    }
    sorted(out)
}

fn checkpointed(dir: &std::path::Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 2;
    o.auto_watermark_interval = Duration::from_millis(5);
    o
}

#[test]
fn an_interval_join_of_out_of_order_streams_equals_a_nested_loop() {
    let sizes = (45_000, 22_000, 300);
    for (lower, upper, exclusive) in [(-20, 15, false), (3, 40, true), (-30, -5, false)] {
        let collected: Arc<Collected<Pair>> = Collected::new();
        let dir = temp_dir("ij-plain");
        let result = run_ok(
            job(
                sizes,
                (lower, upper, exclusive),
                2,
                InjectedFailure::never(),
                collect_into(&collected),
            ),
            &checkpointed(&dir),
        );
        let entries: Vec<(bool, u64)> = result
            .checkpoints
            .iter()
            .map(|c| {
                let e = c
                    .tasks
                    .iter()
                    .filter(|t| t.task.starts_with("join"))
                    .map(|t| t.entries)
                    .sum();
                (c.is_final, e)
            })
            .collect();
        // Buffers (and their timers) are in the checkpoints while records
        // flow, and empty in the final one: every buffered record was
        // cleaned up (mid-run cleanup by watermark is checked exactly in
        // the operator's unit test).
        assert!(entries.iter().any(|&(fin, e)| !fin && e > 0), "{entries:?}");
        assert_eq!(
            entries.iter().find(|c| c.0),
            Some(&(true, 0)),
            "{entries:?}"
        );
        let lo = lower + i64::from(exclusive);
        let want = reference(sizes, lo, upper);
        assert!(want.len() > 1_000, "{} pairs", want.len());
        assert_eq!(
            sorted(collected.take_all()),
            want,
            "between({lower}, {upper}), lower exclusive: {exclusive}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Keeps the distinct pairs (a replay after a restore re-emits some).
struct PairSet(Arc<Mutex<HashSet<Pair>>>);

impl Sink for PairSet {
    type In = Pair;
    fn invoke(&mut self, p: Pair) {
        self.0.lock().unwrap().insert(p);
    }
}

const CRASH_SIZES: (u64, u64, u64) = (150_000, 75_000, 500);

fn pair_set(set: &Arc<Mutex<HashSet<Pair>>>) -> Vec<Pair> {
    sorted(set.lock().unwrap().iter().copied().collect())
}

#[test]
fn an_interval_join_restored_after_a_crash_has_the_pairs_of_an_uninterrupted_run() {
    let dir = temp_dir("ij-crash");
    let set = Arc::new(Mutex::new(HashSet::new()));
    let into = set.clone();
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(
        job(
            CRASH_SIZES,
            (-20, 15, false),
            2,
            InjectedFailure::at(110_001, &dir),
            move |_: &SubtaskInfo| PairSet(into.clone()),
        ),
        &o,
    );
    assert_eq!(result.restarts, 1);
    assert!(result.restored.expect("restored").state_bytes > 0);
    assert_eq!(pair_set(&set), reference(CRASH_SIZES, -20, 15));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_interval_join_restores_its_buffers_at_another_parallelism() {
    let dir = temp_dir("ij-rescale");
    let set = Arc::new(Mutex::new(HashSet::new()));
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    let into = set.clone();
    let sink = move |_: &SubtaskInfo| PairSet(into.clone());
    match run_job(
        job(
            CRASH_SIZES,
            (-20, 15, false),
            2,
            InjectedFailure::at(110_001, &dir),
            sink,
        ),
        &o,
    ) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let into = set.clone();
    let sink = move |_: &SubtaskInfo| PairSet(into.clone());
    let result = run_ok(
        job(
            CRASH_SIZES,
            (-20, 15, false),
            3,
            InjectedFailure::never(),
            sink,
        ),
        &o,
    );
    assert!(result.restored.expect("restored").state_bytes > 0);
    assert_eq!(pair_set(&set), reference(CRASH_SIZES, -20, 15));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bounds_that_leave_no_interval_fail_the_job_naming_the_join() {
    let collected: Arc<Collected<Pair>> = Collected::new();
    match run_job(
        job(
            (10, 10, 5),
            (5, 5, true),
            1,
            InjectedFailure::never(),
            collect_into(&collected),
        ),
        &options(1),
    ) {
        Err(JobError::InvalidJob(e)) => assert!(
            e.contains("interval join `join`") && e.contains("leave no interval"),
            "{e}"
        ),
        other => panic!("expected an invalid job, got {other:?}"),
    }
}

#[test]
fn late_records_of_either_side_are_side_output_streams() {
    use weir_runtime::OutputTag;
    let strategy = || {
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
            .with_timestamp_assigner(|r: &Rec| r.1)
    };
    let (pairs, late) = (Collected::new(), Collected::new());
    let (late_left, late_right) = (
        OutputTag::<Rec>::new("late-left"),
        OutputTag::<Rec>::new("late-right"),
    );
    let job = JobGraph::new("interval-join-late");
    // Each side: key 1 at 0..100, a pause for the watermarks (99) to pass,
    // then one record at 3: late.
    let rights = job
        .source("rights", |_: &SubtaskInfo| {
            crate::EarlyThenLate::new(
                (0..100).map(|t| (1, t, 1_000 + t as u64)).collect(),
                Duration::from_millis(300),
                vec![(1, 3, 7_777)],
            )
        })
        .parallelism(1)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &Rec| r.0)
        .detach();
    let joined = job
        .source("lefts", |_: &SubtaskInfo| {
            crate::EarlyThenLate::new(
                (0..100).map(|t| (1, t, t as u64)).collect(),
                Duration::from_millis(300),
                vec![(1, 4, 9_999)],
            )
        })
        .parallelism(1)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &Rec| r.0)
        .interval_join(rights, |l: &Rec| l.1, |r: &Rec| r.1)
        .between(Duration::ZERO, Duration::ZERO)
        .side_output_left_late_data(&late_left)
        .side_output_right_late_data(&late_right)
        .process("join", |_: &SubtaskInfo| PairIds);
    // The two late streams, merged and tagged by side.
    let left_late = joined
        .get_side_output(&late_left)
        .map("tag-left", |r: Rec| (String::from("left"), r.2));
    let right_late = joined
        .get_side_output(&late_right)
        .map("tag-right", |r: Rec| (String::from("right"), r.2));
    left_late
        .union(right_late)
        .sink("late", collect_into(&late));
    joined.sink("pairs", collect_into(&pairs));
    let mut o = options(2);
    o.auto_watermark_interval = Duration::from_millis(5);
    run_ok(job, &o);
    assert_eq!(pairs.take_all().len(), 100, "each timestamp pairs once");
    assert_eq!(
        sorted(late.take_all()),
        vec![("left".to_string(), 9_999), ("right".to_string(), 7_777)]
    );
}
