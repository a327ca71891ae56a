//! Session windows, full-window functions and processing-time windows end
//! to end: event-time sessions over out-of-order input on two workers fire
//! every session of every key once with exactly its records (compared with
//! sessions computed by sorting each key's timestamps); a job with session
//! windows and a process-window function that fails mid-run and restores
//! from a checkpoint emits exactly what an uninterrupted run does (window
//! contents and timers survive); with allowed lateness late session
//! records fire their sessions again (extended if they extend them) and
//! those past it reach the side output; session windows restored at
//! another parallelism fire exactly the workload's sessions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    AggregateFunction, EventTimeSessionWindows, ExecutionOptions, JobError, JobGraph, OutputTag,
    RestoreFrom, Sink, SubtaskInfo, TimeWindow, WatermarkStrategy, WindowCollector,
};

use crate::checkpoint::PacedSource;
use crate::{
    collect_into, has_completed_checkpoint, ms, options, run_job, run_ok, sorted, splitmix64,
    temp_dir, Collected, EarlyThenLate, M,
};

/// `(key, event time, value)`.
pub(crate) type Rec = (u64, i64, u64);

/// A fired session: key, start, end, record count, value sum.
pub(crate) type Session = (u64, i64, i64, u64, u64);

/// The session gap (ms).
const GAP: i64 = 40;

/// How far a record's timestamp may lag the largest one before it (ms).
const JITTER: u64 = 8;

/// Record `i`'s event time: `i / 20` ms, a pause of 150 ms every 4,000
/// records (so that every key's sessions end there), and up to
/// [`JITTER`] ms of disorder.
fn event_time(i: u64) -> i64 {
    (i / 20 + (i / 4_000) * 150 + splitmix64(i ^ 0xA5A5) % JITTER) as i64
}

/// Record `i` of `(key, i)` from the paced source.
pub(crate) fn stamp((key, i): (u64, u64)) -> Rec {
    (key, event_time(i), i)
}

fn strategy() -> WatermarkStrategy<impl Fn(&Rec) -> i64 + Clone + Send + Sync> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(JITTER))
        .with_timestamp_assigner(|r: &Rec| r.1)
}

/// The sessions of records `0..n` over `keys` keys by brute force: each
/// key's timestamps sorted, cut where two are more than the gap apart
/// (closer ones' windows `[t, t + gap)` overlap or touch, so they merge).
fn reference(n: u64, keys: u64) -> Vec<Session> {
    let mut per_key: BTreeMap<u64, Vec<(i64, u64)>> = BTreeMap::new();
    for i in 0..n {
        let (k, ts, v) = stamp((splitmix64(i) % keys, i));
        per_key.entry(k).or_default().push((ts, v));
    }
    let mut out = Vec::new();
    for (k, mut recs) in per_key {
        recs.sort_unstable();
        let mut cur: Option<Session> = None;
        for (ts, v) in recs {
            cur = Some(match cur {
                Some((_, s, e, c, sum)) if ts <= e => (k, s, e.max(ts + GAP), c + 1, sum + v),
                other => {
                    out.extend(other);
                    (k, ts, ts + GAP, 1, v)
                }
            });
        }
        out.extend(cur);
    }
    sorted(out)
}

/// Count and sum of the values.
#[derive(Clone)]
pub(crate) struct CountSum;

impl AggregateFunction for CountSum {
    type In = Rec;
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, r: Rec, (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + r.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// The process-window function of the tests: the session and its count
/// and sum, checked against the elements themselves.
fn summarize(key: &u64, w: &TimeWindow, elements: &[Rec], out: &mut WindowCollector<'_, Session>) {
    let first = elements
        .iter()
        .map(|r| r.1)
        .min()
        .expect("a fired window has elements");
    let last = elements
        .iter()
        .map(|r| r.1)
        .max()
        .expect("a fired window has elements");
    assert_eq!(
        (w.start, w.end),
        (first, last + GAP),
        "a session spans its first record to its last + the gap"
    );
    assert!(
        elements.iter().all(|r| r.0 == *key),
        "elements of another key"
    );
    let sum = elements.iter().map(|r| r.2).sum();
    out.collect((*key, w.start, w.end, elements.len() as u64, sum));
}

#[test]
fn event_time_sessions_fire_once_with_all_their_records() {
    let (n, keys) = (40_000, 37);
    let by_process = Collected::new();
    let by_aggregate = Collected::new();
    for (uid, collected) in [("process", &by_process), ("aggregate", &by_aggregate)] {
        let job = JobGraph::new(format!("sessions-{uid}"));
        let windowed = job
            .source("paced", move |info: &SubtaskInfo| {
                PacedSource::new(info, n, keys, 4_000)
            })
            .map("stamp", stamp)
            .assign_timestamps_and_watermarks(strategy())
            .key_by(|r: &Rec| r.0)
            .window(EventTimeSessionWindows::with_gap(ms(GAP), |r: &Rec| r.1));
        if uid == "process" {
            windowed
                .process("sessions", summarize)
                .sink("collect", collect_into(collected));
        } else {
            windowed
                .aggregate_with(
                    "sessions",
                    CountSum,
                    |k: &u64,
                     w: &TimeWindow,
                     (c, s): (u64, u64),
                     out: &mut WindowCollector<'_, Session>| {
                        out.collect((*k, w.start, w.end, c, s))
                    },
                )
                .sink("collect", collect_into(collected));
        }
        let mut o = options(2);
        o.auto_watermark_interval = Duration::from_millis(2);
        run_ok(job, &o);
    }
    let want = reference(n, keys);
    assert!(
        want.len() > 2 * keys as usize,
        "keys have several sessions each"
    );
    assert_eq!(sorted(by_process.take_all()), want, "process");
    assert_eq!(sorted(by_aggregate.take_all()), want, "aggregate_with");
}

/// The fold of one fired session into the sinks' checksums.
pub(crate) fn mix((k, s, e, c, sum): Session) -> u64 {
    splitmix64(k.wrapping_mul(M) ^ (s as u64) ^ ((e as u64) << 20) ^ (c << 40) ^ sum)
}

pub(crate) type Totals = crate::Digests;

/// Digests fired sessions by [`mix`] (checkpointed: exactly once across a
/// restore).
pub(crate) fn session_sink(info: &SubtaskInfo, into: &Totals) -> crate::DigestSink<Session> {
    crate::DigestSink::new(info, |s| mix(*s), into)
}

pub(crate) fn total(totals: &Totals) -> [u64; 3] {
    totals
        .lock()
        .unwrap()
        .iter()
        .fold([0, 0, 0], |[c, s, x], (_, st)| {
            [c + st[0], s.wrapping_add(st[1]), x ^ st[2]]
        })
}

/// A session job whose process-window function panics once when it fires
/// a session holding a record from `fail_at` on, once `dir` has a
/// complete checkpoint.
fn failing_job(
    n: u64,
    keys: u64,
    fail_at: Option<u64>,
    dir: &std::path::Path,
) -> (JobGraph, Totals) {
    let dir = dir.to_owned();
    let armed = Arc::new(AtomicBool::new(fail_at.is_some()));
    let fail_at = fail_at.unwrap_or(u64::MAX);
    let totals: Totals = Arc::default();
    let into = totals.clone();
    let job = JobGraph::new("sessions-failover");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 1_000)
    })
    .map("stamp", stamp)
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &Rec| r.0)
    .window(EventTimeSessionWindows::with_gap(ms(GAP), |r: &Rec| r.1))
    .process(
        "sessions",
        move |k: &u64, w: &TimeWindow, elements: &[Rec], out: &mut WindowCollector<'_, Session>| {
            if armed.load(Ordering::SeqCst)
                && elements.iter().any(|r| r.2 >= fail_at)
                && has_completed_checkpoint(&dir)
                && armed.swap(false, Ordering::SeqCst)
            {
                panic!("injected failure firing a session after record {fail_at}");
            }
            summarize(k, w, elements, out);
        },
    )
    .sink("sessions-out", move |info: &SubtaskInfo| {
        session_sink(info, &into)
    });
    (job, totals)
}

pub(crate) fn checkpointed(dir: &std::path::Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 1;
    o.auto_watermark_interval = Duration::from_millis(5);
    o
}

#[test]
fn session_windows_survive_a_crash_and_restore_with_the_output_of_an_uninterrupted_run() {
    let (n, keys) = (120_000, 41);
    let want = reference(n, keys)
        .into_iter()
        .fold([0u64, 0, 0], |[c, s, x], session| {
            let h = mix(session);
            [c + 1, s.wrapping_add(h), x ^ h]
        });

    let dir = temp_dir("sessions-uninterrupted");
    let (job_a, totals_a) = failing_job(n, keys, None, &dir);
    run_ok(job_a, &checkpointed(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        total(&totals_a),
        want,
        "uninterrupted run against the reference"
    );

    let dir = temp_dir("sessions-failover");
    let (job_b, totals_b) = failing_job(n, keys, Some(70_001), &dir);
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job_b, &o);
    assert_eq!(
        result.restarts, 1,
        "the injected failure restarted the job once"
    );
    let restored = result
        .restored
        .expect("the second attempt restored a checkpoint");
    assert!(restored.checkpoint_id >= 1);
    assert_eq!(
        total(&totals_b),
        total(&totals_a),
        "the restored run fired every session once, with its records, as the uninterrupted one"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keeps every session fired, once (replays after a restore fire the same
/// sessions again): no checkpointed state, so its stage may rescale.
struct SessionSet(Arc<Mutex<BTreeSet<Session>>>);

impl Sink for SessionSet {
    type In = Session;

    fn invoke(&mut self, s: Session) {
        self.0.lock().unwrap().insert(s);
    }
}

/// Window contents and timers follow their key groups: a session job with
/// 2 window subtasks fails, is restored with 3, and has fired exactly the
/// sessions of the workload (a session restored without some of its
/// records, or without its timer, would be missing or extra).
#[test]
fn session_windows_are_restored_at_another_parallelism() {
    let (n, keys) = (120_000u64, 300u64);
    let dir = temp_dir("sessions-rescale");
    let fired: Arc<Mutex<BTreeSet<Session>>> = Arc::default();
    let build = |parallelism: usize, fail_at: u64| {
        let armed = Arc::new(AtomicBool::new(true));
        let dir = dir.clone();
        let into = fired.clone();
        let job = JobGraph::new("sessions-rescaled");
        job.source("paced", move |info: &SubtaskInfo| {
            PacedSource::new(info, n, keys, 1_000)
        })
        .map("stamp", stamp)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &Rec| r.0)
        .window(EventTimeSessionWindows::with_gap(ms(GAP), |r: &Rec| r.1))
        .process(
            "sessions",
            move |k: &u64,
                  w: &TimeWindow,
                  elements: &[Rec],
                  out: &mut WindowCollector<'_, Session>| {
                if armed.load(Ordering::SeqCst)
                    && elements.iter().any(|r| r.2 >= fail_at)
                    && has_completed_checkpoint(&dir)
                    && armed.swap(false, Ordering::SeqCst)
                {
                    panic!("injected failure firing a session after record {fail_at}");
                }
                summarize(k, w, elements, out);
            },
        )
        .parallelism(parallelism)
        .sink("set", move |_: &SubtaskInfo| SessionSet(into.clone()));
        job
    };
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    match run_job(build(2, 80_001), &o) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(build(3, u64::MAX), &o);
    let restored = result
        .restored
        .expect("restored the failed run's checkpoint");
    assert!(restored.state_bytes > 0, "open sessions were checkpointed");
    let got: Vec<Session> = fired.lock().unwrap().iter().copied().collect();
    assert_eq!(got, reference(n, keys));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With an allowed lateness of 50 ms, after the watermark reached 99:
/// a record inside the session [40, 50 + 5) fires it again with the
/// record; one that extends it fires the extended session at once; one
/// for the session [0, 14), cleaned up at 13 + 50, goes to the side
/// output.
#[test]
fn late_session_records_fire_late_or_reach_the_side_output() {
    // Key 1 at timestamps 0..10, 20..30, 40..50 and 100: three sessions
    // of gap 5 and a fourth that moves the watermark to 99.
    let early: Vec<Rec> = (0..10)
        .chain(20..30)
        .chain(40..50)
        .chain([100])
        .map(|t| (1, t, t as u64))
        .collect();
    let collected = Collected::new();
    let late = Collected::new();
    let late_tag = OutputTag::<Rec>::new("late");
    let job = JobGraph::new("sessions-lateness");
    let sessions = job
        .source("late", move |_: &SubtaskInfo| {
            EarlyThenLate::new(
                early.clone(),
                Duration::from_millis(300),
                vec![(1, 45, 3_000), (1, 5, 2_000), (1, 52, 1_000)],
            )
        })
        .parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
                .with_timestamp_assigner(|r: &Rec| r.1),
        )
        .key_by(|r: &Rec| r.0)
        .window(EventTimeSessionWindows::with_gap(
            Duration::from_millis(5),
            |r: &Rec| r.1,
        ))
        .allowed_lateness(Duration::from_millis(50))
        .side_output_late_data(&late_tag)
        .aggregate_with(
            "sessions",
            CountSum,
            |k: &u64,
             w: &TimeWindow,
             (c, s): (u64, u64),
             out: &mut WindowCollector<'_, Session>| {
                out.collect((*k, w.start, w.end, c, s))
            },
        );
    sessions
        .get_side_output(&late_tag)
        .sink("late-records", collect_into(&late));
    sessions.sink("collect", collect_into(&collected));
    let mut o = options(2);
    o.auto_watermark_interval = Duration::from_millis(5);
    run_ok(job, &o);

    let sum = |r: std::ops::Range<u64>| r.sum::<u64>();
    let got = collected.take_all();
    let want = vec![
        (1, 0, 14, 10, sum(0..10)),
        (1, 20, 34, 10, sum(20..30)),
        (1, 40, 54, 10, sum(40..50)),
        // The late firings, in the order of their records.
        (1, 40, 54, 11, sum(40..50) + 3_000),
        (1, 40, 57, 12, sum(40..50) + 3_000 + 1_000),
        // At the end of the input.
        (1, 100, 105, 1, 100),
    ];
    assert_eq!(got, want);
    assert_eq!(late.take_all(), vec![(1, 5, 2_000)]);
}
