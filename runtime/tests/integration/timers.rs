//! Keyed event-time timers end to end: registered per record, fired by the
//! watermarks (and the final one at the end of the input), checkpointed and
//! restored after a failure with exactly the firings of an uninterrupted
//! run, each once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    Collector, ExecutionOptions, JobError, JobGraph, KeyContext, KeyedProcessFunction, KeyedStates,
    KeyedTimerService, KeyedValueState, SubtaskInfo, TimeDomain, TimerQueues, WatermarkStrategy,
};

use crate::checkpoint::PacedSource;
use crate::{
    options, run_job, run_ok, splitmix64, temp_dir, DigestSink, Digests, InjectedFailure, M,
};

/// Event time of record `i` (ms).
fn event_time(i: u64) -> i64 {
    2 * i as i64
}

/// How far behind a record its own timer is (ms).
const DELAY: i64 = 10_000;

/// Records per coarse timer (one per key and window).
const WINDOW: u64 = 1_000;

/// The timers record `(key, i)` registers: its own (odd, unique) and its
/// key's window end (even, shared by the key's records of the window).
fn timers_of(i: u64) -> [i64; 2] {
    [
        event_time(i) + DELAY + 1,
        event_time((i / WINDOW + 1) * WINDOW) + DELAY,
    ]
}

/// Registers [`timers_of`] each record; emits `(key, timestamp)` per
/// firing; panics once when `fail` says so.
struct TimerJob {
    timers: KeyedTimerService<u64>,
    fail: Arc<InjectedFailure>,
}

impl KeyedProcessFunction for TimerJob {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, i64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        _out: &mut C,
    ) {
        if self.fail.hits(i) {
            panic!("injected failure at record {i}");
        }
        for ts in timers_of(i) {
            self.timers.register_event_time_timer(ctx, ts);
        }
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
        assert!(ctx.current_watermark() >= ts, "timer {ts} fired early");
        out.collect((*ctx.key(), ts));
    }
}

/// The fold of one firing into the sinks' checksums.
fn mix(key: u64, ts: i64) -> u64 {
    splitmix64(key.wrapping_mul(M) ^ ts as u64)
}

/// Digests firings by [`mix`] (checkpointed).
fn fired_sink(info: &SubtaskInfo, into: &Fired) -> DigestSink<(u64, i64)> {
    DigestSink::new(info, |&(k, ts)| mix(k, ts), into)
}

type Fired = Digests;

fn job(n: u64, keys: u64, fail: InjectedFailure) -> (JobGraph, Fired) {
    let fail = Arc::new(fail);
    let fired: Fired = Arc::new(Mutex::new(Vec::new()));
    let into = fired.clone();
    let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
        .with_timestamp_assigner(|r: &(u64, u64)| event_time(r.1));
    let job = JobGraph::new("timers");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 1_000)
    })
    .assign_timestamps_and_watermarks(strategy)
    .key_by(|r: &(u64, u64)| r.0)
    .process("timers", move |_: &SubtaskInfo| TimerJob {
        timers: KeyedTimerService::new(),
        fail: fail.clone(),
    })
    .sink("fired", move |info: &SubtaskInfo| fired_sink(info, &into));
    (job, fired)
}

/// Count, sum and xor of the firings the job must produce: every distinct
/// `(key, timestamp)` registered, once.
fn reference(n: u64, keys: u64) -> [u64; 3] {
    let set: BTreeSet<(u64, i64)> = (0..n)
        .flat_map(|i| timers_of(i).map(|ts| (splitmix64(i) % keys, ts)))
        .collect();
    set.iter().fold([0, 0, 0], |[c, s, x], &(k, ts)| {
        let h = mix(k, ts);
        [c + 1, s.wrapping_add(h), x ^ h]
    })
}

fn total(fired: &Fired) -> [u64; 3] {
    fired
        .lock()
        .unwrap()
        .iter()
        .fold([0, 0, 0], |[c, s, x], (_, st)| {
            [c + st[0], s.wrapping_add(st[1]), x ^ st[2]]
        })
}

fn checkpointed(dir: &std::path::Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 1;
    o.auto_watermark_interval = Duration::from_millis(5);
    o
}

#[test]
fn timers_fire_once_each_and_all_by_the_end_of_input() {
    let (n, keys) = (60_000, 40);
    let dir = temp_dir("timers-plain");
    let (job, fired) = job(n, keys, InjectedFailure::never());
    run_ok(job, &checkpointed(&dir));
    let expected = reference(n, keys);
    assert!(expected[0] > n, "both kinds of timers are registered");
    assert_eq!(total(&fired), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timers_survive_a_crash_and_restore_with_the_firings_of_an_uninterrupted_run() {
    let (n, keys) = (200_000, 50);
    let expected = reference(n, keys);

    let dir = temp_dir("timers-uninterrupted");
    let (job_a, fired_a) = job(n, keys, InjectedFailure::never());
    run_ok(job_a, &checkpointed(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(total(&fired_a), expected, "uninterrupted run");

    let dir = temp_dir("timers-failover");
    let (job_b, fired_b) = job(n, keys, InjectedFailure::at(100_001, &dir));
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job_b, &o);
    assert_eq!(result.restarts, 1);
    // The failure is mid-stream, so any checkpoint before it is too
    // (how many completed by then depends on the machine's load).
    let restored = result.restored.expect("the second attempt restored");
    assert!(restored.checkpoint_id >= 1);
    assert_eq!(
        total(&fired_b),
        total(&fired_a),
        "the restored run fired every timer exactly once, as the uninterrupted one"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_state_named_like_the_timers_is_rejected() {
    struct Clashing(KeyedValueState<u64, u64>);
    impl KeyedProcessFunction for Clashing {
        type Key = u64;
        type In = (u64, u64);
        type Out = (u64, i64);
        fn process<C: Collector<Self::Out>>(
            &mut self,
            ctx: &KeyContext<u64>,
            r: (u64, u64),
            _out: &mut C,
        ) {
            self.0.update(ctx, r.1);
        }
        fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
            states.value(&mut self.0);
        }
    }
    let dir = temp_dir("timers-clash");
    let job = JobGraph::new("timers-clash");
    job.source("numbers", |info: &SubtaskInfo| {
        weir_runtime::SequenceSource::new(info, 100, |i| (i % 7, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("clash", |_: &SubtaskInfo| {
        Clashing(KeyedValueState::new(
            weir_runtime::state::timers::EVENT_TIMERS_STATE,
        ))
    })
    .sink("fired", |info: &SubtaskInfo| {
        fired_sink(info, &Fired::default())
    });
    match run_job(job, &checkpointed(&dir)) {
        Err(e @ JobError::TaskFailed { .. }) => assert!(
            e.to_string()
                .contains("has a state named `_timers_event`, the name of its timers"),
            "{e}"
        ),
        other => panic!("expected a failure at start, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
