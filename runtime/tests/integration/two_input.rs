//! Two-input keyed stages end to end: two keyed streams connected into a
//! `KeyedCoProcessFunction` sharing the key's state and timers, with the
//! event time the minimum over both inputs; checked against a reference
//! computed here, and after a crash and restore (aligned, unaligned, and at
//! another parallelism) against the same reference.

use crate::InjectedFailure;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    Collector, ExecutionOptions, JobError, JobGraph, KeyContext, KeyedCoProcessFunction,
    KeyedMapState, KeyedStates, KeyedTimerService, RestoreFrom, Sink, SubtaskInfo, TimeDomain,
    TimerQueues, WatermarkStrategy,
};

use crate::checkpoint::PacedSource;
use crate::{options, run_job, run_ok, splitmix64, temp_dir};

/// Event-time window of the co-process function (ms).
pub const WINDOW: i64 = 1_000;

/// The key of the second input's record `i` (a different key of the
/// same key space than the first input's record `i`).
fn second_key(k: u64, keys: u64) -> u64 {
    (k * 7 + 3) % keys
}

/// Per key and event-time window: the number of first-input records and
/// the sum of second-input values, emitted by a timer at the window's end
/// (so only once both inputs' watermarks passed it).
struct WindowTally {
    /// Per key: window -> (first-input count, second-input sum).
    tallies: KeyedMapState<u64, i64, (u64, u64)>,
    timers: KeyedTimerService<u64>,
    fail: InjectedFailure,
}

impl WindowTally {
    fn new(fail: InjectedFailure) -> Self {
        Self {
            tallies: KeyedMapState::new("tallies"),
            timers: KeyedTimerService::new(),
            fail,
        }
    }

    fn window_end(ts: i64) -> i64 {
        (ts / WINDOW + 1) * WINDOW - 1
    }
}

impl KeyedCoProcessFunction for WindowTally {
    type Key = u64;
    type In1 = (u64, u64);
    type In2 = (u64, u64);
    type Out = (u64, i64, u64, u64);

    fn process_element1<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        _out: &mut C,
    ) {
        let ts = i as i64;
        assert!(ts > ctx.current_watermark(), "no record is late here");
        let end = Self::window_end(ts);
        let (c, s) = self.tallies.get(ctx, &end).unwrap_or((0, 0));
        self.tallies.put(ctx, end, (c + 1, s));
        self.timers.register_event_time_timer(ctx, end);
    }

    fn process_element2<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        _out: &mut C,
    ) {
        if self.fail.hits(i) {
            panic!("injected failure at second-input record {i}");
        }
        let ts = i as i64;
        assert!(ts > ctx.current_watermark(), "no record is late here");
        let end = Self::window_end(ts);
        let (c, s) = self.tallies.get(ctx, &end).unwrap_or((0, 0));
        self.tallies.put(ctx, end, (c, s + i));
        self.timers.register_event_time_timer(ctx, end);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.tallies);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        ts: i64,
        ctx: &KeyContext<u64>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        assert_eq!(domain, TimeDomain::EventTime);
        let (count, sum) = self
            .tallies
            .remove(ctx, &ts)
            .expect("a window's timer comes with its tally");
        out.collect((*ctx.key(), ts / WINDOW, count, sum));
    }
}

/// Results by (key, window); a replay after a restore must emit what is
/// already there (anything else is recorded as a conflict).
#[derive(Default)]
pub struct Results {
    map: HashMap<(u64, i64), (u64, u64)>,
    conflicts: Vec<String>,
}

/// Shared [`Results`].
pub type Shared = Arc<Mutex<Results>>;

/// A stateless sink into [`Results`] (so its stage may rescale).
struct ResultSink(Shared);

impl Sink for ResultSink {
    type In = (u64, i64, u64, u64);

    fn invoke(&mut self, (k, w, c, s): (u64, i64, u64, u64)) {
        let mut r = self.0.lock().unwrap();
        if let Some(old) = r.map.insert((k, w), (c, s)) {
            if old != (c, s) {
                r.conflicts
                    .push(format!("key {k} window {w}: {old:?} then {:?}", (c, s)));
            }
        }
    }
}

/// The job: first input `n` records, second input `n2` records paced
/// slower (its event time lags), both keyed by the record's key.
fn job(
    n: u64,
    n2: u64,
    keys: u64,
    parallelism: usize,
    fail: InjectedFailure,
    results: &Shared,
) -> JobGraph {
    let strategy = || {
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
            .with_timestamp_assigner(|r: &(u64, u64)| r.1 as i64)
    };
    let job = JobGraph::new("co-process");
    let second = job
        .source("second", move |info: &SubtaskInfo| {
            PacedSource::new(info, n2, keys, 200)
        })
        .map("rekey", move |(k, i): (u64, u64)| (second_key(k, keys), i))
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &(u64, u64)| r.0)
        .detach();
    let into = results.clone();
    job.source("first", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 1_000)
    })
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &(u64, u64)| r.0)
    .connect(second)
    .process("tally", move |_: &SubtaskInfo| {
        WindowTally::new(fail.clone())
    })
    .parallelism(parallelism)
    .sink("results", move |_: &SubtaskInfo| ResultSink(into.clone()));
    job
}

/// What the job must emit, computed by brute force over both inputs.
fn reference(n: u64, n2: u64, keys: u64) -> HashMap<(u64, i64), (u64, u64)> {
    let mut m: HashMap<(u64, i64), (u64, u64)> = HashMap::new();
    for i in 0..n {
        m.entry((splitmix64(i) % keys, i as i64 / WINDOW))
            .or_default()
            .0 += 1;
    }
    for i in 0..n2 {
        let k = second_key(splitmix64(i) % keys, keys);
        m.entry((k, i as i64 / WINDOW)).or_default().1 += i;
    }
    m
}

fn checkpointed(dir: &std::path::Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 2;
    o.auto_watermark_interval = Duration::from_millis(5);
    o
}

fn assert_matches(results: &Shared, want: &HashMap<(u64, i64), (u64, u64)>, what: &str) {
    let r = results.lock().unwrap();
    assert!(r.conflicts.is_empty(), "{what}: {:?}", &r.conflicts[..1]);
    assert_eq!(r.map.len(), want.len(), "{what}: every (key, window)");
    for (kw, v) in want {
        assert_eq!(r.map.get(kw), Some(v), "{what}: key and window {kw:?}");
    }
}

#[test]
fn a_keyed_co_process_function_sees_both_inputs_and_the_minimum_watermark() {
    let (n, n2, keys) = (40_000, 16_000, 30);
    let results = Shared::default();
    let dir = temp_dir("co-plain");
    run_ok(
        job(n, n2, keys, 2, InjectedFailure::never(), &results),
        &checkpointed(&dir),
    );
    assert_matches(&results, &reference(n, n2, keys), "plain run");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs the job with a failure at second-input record 50,001 under
/// `configure`d checkpoints, restarting in the process, and compares with
/// the reference (the uninterrupted run's output, checked above).
fn crash_and_restore(tag: &str, configure: impl Fn(&mut ExecutionOptions)) {
    let (n, n2, keys) = (200_000, 70_000, 40);
    let results = Shared::default();
    let dir = temp_dir(tag);
    let mut o = checkpointed(&dir);
    configure(&mut o);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(
        job(n, n2, keys, 2, InjectedFailure::at(50_001, &dir), &results),
        &o,
    );
    assert_eq!(result.restarts, 1);
    assert!(result.restored.expect("restored").checkpoint_id >= 1);
    assert_matches(&results, &reference(n, n2, keys), tag);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_co_process_job_restored_after_a_crash_equals_an_uninterrupted_run() {
    crash_and_restore("co-aligned", |_| {});
}

#[test]
fn a_co_process_job_restores_with_unaligned_checkpoints() {
    crash_and_restore("co-unaligned", |o| {
        o.checkpointing.as_mut().unwrap().unaligned = true;
    });
}

/// At least once, barriers are counted over both inputs without blocking
/// either: checkpoints complete and, without a failure, results are exact.
#[test]
fn a_co_process_job_completes_at_least_once_checkpoints() {
    let (n, n2, keys) = (60_000, 24_000, 30);
    let results = Shared::default();
    let dir = temp_dir("co-alo");
    let mut o = checkpointed(&dir);
    o.checkpointing.as_mut().unwrap().exactly_once = false;
    let result = run_ok(job(n, n2, keys, 2, InjectedFailure::never(), &results), &o);
    assert!(!result.checkpoints.is_empty(), "checkpoints completed");
    assert_matches(&results, &reference(n, n2, keys), "at least once");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keyed state and timers of a two-input stage follow their key groups:
/// a run at parallelism 2 fails; the restore runs the stage with 3.
#[test]
fn a_co_process_stage_restores_at_another_parallelism() {
    let (n, n2, keys) = (200_000, 70_000, 40);
    let results = Shared::default();
    let dir = temp_dir("co-rescale");
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    match run_job(
        job(n, n2, keys, 2, InjectedFailure::at(50_001, &dir), &results),
        &o,
    ) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(job(n, n2, keys, 3, InjectedFailure::never(), &results), &o);
    assert!(result.restored.expect("restored").state_bytes > 0);
    assert_matches(&results, &reference(n, n2, keys), "rescaled 2 -> 3");
    std::fs::remove_dir_all(&dir).unwrap();
}
