//! Broadcast state end to end: rules broadcast to a keyed stream (and to a
//! non-keyed one) reach every subtask; after a failure the restored
//! broadcast state keeps the rules (the rules' source does not send them
//! again), also when the stage restores at another parallelism.

use crate::InjectedFailure;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    BroadcastProcessFunction, BroadcastState, Collector, ExecutionOptions, JobError, JobGraph,
    KeyContext, KeyedBroadcastProcessFunction, KeyedMapState, KeyedStates, KeyedTimerService,
    KeyedValueState, RestoreFrom, SequenceSource, Sink, SubtaskInfo, TimeDomain, TimerQueues,
    WatermarkStrategy,
};

use crate::checkpoint::PacedSource;
use crate::{collect_into, options, run_job, run_ok, sorted, splitmix64, temp_dir, Collected};

/// A rule change: `(rule id, modulus, weight, delete)`.
type Rule = (u64, u64, u64, bool);

/// The id that marks the end of the rules (non-keyed test).
const END_OF_RULES: u64 = u64::MAX;

/// The rule stream: eight rules, one overwritten, one deleted.
fn rule(i: u64) -> Rule {
    match i {
        0..=7 => (i, i + 2, 10 * (i + 1), false),
        8 => (3, 7, 1_000, false),
        9 => (5, 0, 0, true),
        _ => (END_OF_RULES, 1, 0, false),
    }
}

const RULE_EVENTS: u64 = 11;

/// The rules in force after the whole rule stream: id -> (modulus, weight).
fn final_rules() -> HashMap<u64, (u64, u64)> {
    let mut m = HashMap::new();
    for i in 0..RULE_EVENTS {
        let (id, modulus, weight, delete) = rule(i);
        if delete {
            m.remove(&id);
        } else if id != END_OF_RULES {
            m.insert(id, (modulus, weight));
        }
    }
    m
}

fn apply<'a>(rules: impl Iterator<Item = (u64, (u64, u64))> + 'a, v: u64) -> u64 {
    rules
        .filter(|(id, (m, _))| *id != END_OF_RULES && v.is_multiple_of(*m))
        .map(|(_, (_, w))| w)
        .sum()
}

fn update_rules(state: &mut BroadcastState<u64, (u64, u64)>, (id, m, w, delete): Rule) {
    if delete {
        state.remove(&id);
    } else {
        state.put(id, (m, w));
    }
}

/// Holds each keyed record until event time passes it (so every rule, at
/// event time 0, is in), then adds the weights of the rules it matches to
/// its key's totals and emits `(key, count, sum)`.
struct RuleTotals {
    pending: KeyedMapState<u64, i64, u64>,
    totals: KeyedValueState<u64, (u64, u64)>,
    timers: KeyedTimerService<u64>,
    fail: InjectedFailure,
}

impl KeyedBroadcastProcessFunction for RuleTotals {
    type Key = u64;
    type In = (u64, u64);
    type Broadcast = Rule;
    type Out = (u64, u64, u64);
    type StateKey = u64;
    type StateValue = (u64, u64);

    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        _state: &BroadcastState<u64, (u64, u64)>,
        _out: &mut C,
    ) {
        if self.fail.hits(i) {
            panic!("injected failure at record {i}");
        }
        let ts = i as i64 + 1;
        self.pending.put(ctx, ts, i);
        self.timers.register_event_time_timer(ctx, ts);
    }

    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        r: Rule,
        state: &mut BroadcastState<u64, (u64, u64)>,
        _out: &mut C,
    ) {
        update_rules(state, r);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.pending);
        states.value(&mut self.totals);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        ts: i64,
        ctx: &KeyContext<u64>,
        _domain: TimeDomain,
        state: &BroadcastState<u64, (u64, u64)>,
        out: &mut C,
    ) {
        let v = self.pending.remove(ctx, &ts).expect("a pending record");
        let (c, s) = self.totals.value(ctx).unwrap_or((0, 0));
        let t = (c + 1, s + apply(state.iter(), v));
        self.totals.update(ctx, t);
        out.collect((*ctx.key(), t.0, t.1));
    }
}

/// Keeps, per key, the totals with the largest count (a replay re-emits
/// what is there). Stateless, so its stage may rescale.
struct LatestTotals(Arc<Mutex<HashMap<u64, (u64, u64)>>>);

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

type Totals = Arc<Mutex<HashMap<u64, (u64, u64)>>>;

fn keyed_job(
    (n, keys): (u64, u64),
    parallelism: usize,
    fail: InjectedFailure,
    totals: &Totals,
) -> JobGraph {
    let job = JobGraph::new("broadcast-rules");
    let rules = job
        .source("rules", |info: &SubtaskInfo| {
            SequenceSource::new(info, RULE_EVENTS, rule)
        })
        .parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
                .with_timestamp_assigner(|_: &Rule| 0),
        )
        .broadcast();
    let into = totals.clone();
    job.source("records", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 500)
    })
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
            .with_timestamp_assigner(|r: &(u64, u64)| r.1 as i64 + 1),
    )
    .key_by(|r: &(u64, u64)| r.0)
    .connect(rules)
    .process("rule-totals", move |_: &SubtaskInfo| RuleTotals {
        pending: KeyedMapState::new("pending"),
        totals: KeyedValueState::new("totals"),
        timers: KeyedTimerService::new(),
        fail: fail.clone(),
    })
    .parallelism(parallelism)
    .sink("latest", move |_: &SubtaskInfo| LatestTotals(into.clone()));
    job
}

fn reference((n, keys): (u64, u64)) -> HashMap<u64, (u64, u64)> {
    let rules = final_rules();
    let mut m: HashMap<u64, (u64, u64)> = HashMap::new();
    for i in 0..n {
        let e = m.entry(splitmix64(i) % keys).or_default();
        e.0 += 1;
        e.1 += apply(rules.iter().map(|(k, v)| (*k, *v)), i);
    }
    m
}

fn checkpointed(dir: &std::path::Path) -> ExecutionOptions {
    let mut o = options(2).with_checkpointing(Duration::from_millis(15), dir);
    o.checkpointing.as_mut().unwrap().coordinator.num_retained = 2;
    o.auto_watermark_interval = Duration::from_millis(5);
    o
}

fn assert_totals(totals: &Totals, want: &HashMap<u64, (u64, u64)>, what: &str) {
    let got = totals.lock().unwrap();
    assert_eq!(got.len(), want.len(), "{what}: every key");
    for (k, t) in want {
        assert_eq!(got.get(k), Some(t), "{what}: key {k}");
    }
}

#[test]
fn broadcast_rules_reach_every_subtask_of_a_keyed_stream() {
    let sizes = (30_000, 60);
    let totals = Totals::default();
    let dir = temp_dir("bc-plain");
    run_ok(
        keyed_job(sizes, 3, InjectedFailure::never(), &totals),
        &checkpointed(&dir),
    );
    let want = reference(sizes);
    assert!(want.values().any(|t| t.1 > 0), "rules matched");
    assert_totals(&totals, &want, "plain run");
    std::fs::remove_dir_all(&dir).unwrap();
}

const CRASH_SIZES: (u64, u64) = (150_000, 80);

#[test]
fn broadcast_state_survives_a_crash_and_restore() {
    let totals = Totals::default();
    let dir = temp_dir("bc-crash");
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(
        keyed_job(CRASH_SIZES, 2, InjectedFailure::at(100_001, &dir), &totals),
        &o,
    );
    assert_eq!(result.restarts, 1);
    assert!(result.restored.expect("restored").checkpoint_id >= 1);
    assert_totals(&totals, &reference(CRASH_SIZES), "restored run");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// From 2 subtasks to 3: the third gets a copy of the rules too.
#[test]
fn broadcast_state_is_copied_to_every_subtask_at_another_parallelism() {
    let totals = Totals::default();
    let dir = temp_dir("bc-rescale");
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    match run_job(
        keyed_job(CRASH_SIZES, 2, InjectedFailure::at(100_001, &dir), &totals),
        &o,
    ) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(
        keyed_job(CRASH_SIZES, 3, InjectedFailure::never(), &totals),
        &o,
    );
    assert!(result.restored.expect("restored").state_bytes > 0);
    assert_totals(&totals, &reference(CRASH_SIZES), "rescaled 2 -> 3");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Holds values until the end-of-rules marker is in the state, then emits
/// `(value, weight of the rules it matches)`.
struct ApplyRules {
    waiting: Vec<u64>,
}

impl BroadcastProcessFunction for ApplyRules {
    type In = u64;
    type Broadcast = Rule;
    type Out = (u64, u64);
    type StateKey = u64;
    type StateValue = (u64, u64);

    fn process_element<C: Collector<(u64, u64)>>(
        &mut self,
        v: u64,
        state: &BroadcastState<u64, (u64, u64)>,
        out: &mut C,
    ) {
        if state.contains(&END_OF_RULES) {
            out.collect((v, apply(state.iter(), v)));
        } else {
            self.waiting.push(v);
        }
    }

    fn process_broadcast_element<C: Collector<(u64, u64)>>(
        &mut self,
        r: Rule,
        state: &mut BroadcastState<u64, (u64, u64)>,
        out: &mut C,
    ) {
        update_rules(state, r);
        if r.0 == END_OF_RULES {
            for v in self.waiting.drain(..) {
                out.collect((v, apply(state.iter(), v)));
            }
        }
    }
}

#[test]
fn broadcast_rules_reach_every_subtask_of_a_rebalanced_stream() {
    let n = 20_000u64;
    let collected: Arc<Collected<(u64, u64)>> = Collected::new();
    let job = JobGraph::new("broadcast-non-keyed");
    let rules = job
        .source("rules", |info: &SubtaskInfo| {
            SequenceSource::new(info, RULE_EVENTS, rule)
        })
        .parallelism(1)
        .broadcast();
    job.source("values", move |info: &SubtaskInfo| {
        SequenceSource::new(info, n, |i| i)
    })
    .parallelism(1)
    .connect(rules)
    .process("apply", |_: &SubtaskInfo| ApplyRules {
        waiting: Vec::new(),
    })
    .parallelism(3)
    .sink("out", collect_into(&collected));
    run_ok(job, &options(2));
    let parts = collected.take_parts();
    assert_eq!(parts.len(), 3);
    for (info, records) in &parts {
        // Round-robin from one sender: a third each.
        let share = records.len() as u64;
        assert!(
            share.abs_diff(n / 3) <= 1,
            "subtask {} got {share}",
            info.index
        );
    }
    let rules = final_rules();
    let want: Vec<(u64, u64)> = (0..n)
        .map(|v| (v, apply(rules.iter().map(|(k, r)| (*k, *r)), v)))
        .collect();
    let got = sorted(parts.into_iter().flat_map(|(_, r)| r).collect());
    assert_eq!(got, want);
}

/// Emits `(value, weight of the rules it matches)` once the end-of-rules
/// marker is in the state (values before it are ignored); fails once at
/// value `fail_at`.
struct ApplyOrIgnore {
    fail: InjectedFailure,
}

impl BroadcastProcessFunction for ApplyOrIgnore {
    type In = u64;
    type Broadcast = Rule;
    type Out = (u64, u64);
    type StateKey = u64;
    type StateValue = (u64, u64);

    fn process_element<C: Collector<(u64, u64)>>(
        &mut self,
        v: u64,
        state: &BroadcastState<u64, (u64, u64)>,
        out: &mut C,
    ) {
        if self.fail.hits(v) {
            panic!("injected failure at value {v}");
        }
        if state.contains(&END_OF_RULES) {
            out.collect((v, apply(state.iter(), v)));
        }
    }

    fn process_broadcast_element<C: Collector<(u64, u64)>>(
        &mut self,
        r: Rule,
        state: &mut BroadcastState<u64, (u64, u64)>,
        _out: &mut C,
    ) {
        update_rules(state, r);
    }
}

/// A non-keyed broadcast operator fails at parallelism 2 and restores at
/// 3: every value processed after the restore sees all the rules (the new
/// third subtask too), though the rules' source does not send them again.
#[test]
fn a_non_keyed_broadcast_operator_restores_its_rules_at_another_parallelism() {
    let (n, fail_at) = (150_000u64, 100_001u64);
    let dir = temp_dir("bc-non-keyed");
    let seen: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
    let build = |parallelism: usize, fail: bool| {
        let fail = if fail {
            InjectedFailure::at(fail_at, &dir)
        } else {
            InjectedFailure::never()
        };
        let into = seen.clone();
        let job = JobGraph::new("broadcast-non-keyed-restore");
        let rules = job
            .source("rules", |info: &SubtaskInfo| {
                SequenceSource::new(info, RULE_EVENTS, rule)
            })
            .parallelism(1)
            .broadcast();
        job.source("values", move |info: &SubtaskInfo| {
            PacedSource::new(info, n, 1, 500)
        })
        .map("value", |(_, i): (u64, u64)| i)
        .connect(rules)
        .process("apply", move |_: &SubtaskInfo| ApplyOrIgnore {
            fail: fail.clone(),
        })
        .parallelism(parallelism)
        .sink("out", move |_: &SubtaskInfo| SeenSink(into.clone()));
        job
    };
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    match run_job(build(2, true), &o) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(build(3, false), &o);
    assert!(
        result.restored.is_some(),
        "restored the failed run's checkpoint"
    );
    let rules = final_rules();
    let seen = seen.lock().unwrap();
    for (v, w) in seen.iter() {
        assert_eq!(
            *w,
            apply(rules.iter().map(|(k, r)| (*k, *r)), *v),
            "value {v}"
        );
    }
    let missing: Vec<u64> = (fail_at..n).filter(|v| !seen.contains_key(v)).collect();
    assert!(
        missing.is_empty(),
        "{} values after the failure were not processed with the rules, first {:?}",
        missing.len(),
        missing.first()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keeps each value's result (a replay writes the same again).
struct SeenSink(Arc<Mutex<HashMap<u64, u64>>>);

impl Sink for SeenSink {
    type In = (u64, u64);
    fn invoke(&mut self, (v, w): (u64, u64)) {
        self.0.lock().unwrap().insert(v, w);
    }
}

/// Keeps a keyed state it does not visit.
struct Forgetful(KeyedValueState<u64, u64>);

impl KeyedBroadcastProcessFunction for Forgetful {
    type Key = u64;
    type In = (u64, u64);
    type Broadcast = Rule;
    type Out = (u64, u64, u64);
    type StateKey = u64;
    type StateValue = (u64, u64);

    fn process_element<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, i): (u64, u64),
        _state: &BroadcastState<u64, (u64, u64)>,
        _out: &mut C,
    ) {
        self.0.update(ctx, i);
    }

    fn process_broadcast_element<C: Collector<Self::Out>>(
        &mut self,
        r: Rule,
        state: &mut BroadcastState<u64, (u64, u64)>,
        _out: &mut C,
    ) {
        update_rules(state, r);
    }
}

#[test]
fn a_keyed_broadcast_function_that_does_not_visit_its_state_is_rejected() {
    let dir = temp_dir("bc-forgetful");
    let job = JobGraph::new("broadcast-forgetful");
    let rules = job
        .source("rules", |info: &SubtaskInfo| {
            SequenceSource::new(info, RULE_EVENTS, rule)
        })
        .broadcast();
    job.source("records", |info: &SubtaskInfo| {
        SequenceSource::new(info, 100, |i| (i % 7, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .connect(rules)
    .process("forgets", |_: &SubtaskInfo| {
        Forgetful(KeyedValueState::new("remembered"))
    })
    .sink("latest", |_: &SubtaskInfo| LatestTotals(Arc::default()));
    match run_job(job, &checkpointed(&dir)) {
        Err(e @ JobError::TaskFailed { .. }) => assert!(
            e.to_string().contains(
                "keyed broadcast operator `forgets` creates state `remembered` but its \
                 visit_state does not visit it"
            ),
            "{e}"
        ),
        other => panic!("expected a failure at start, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Even values to the main output, odd ones to the `odd` side output; the
/// rules only fill the state.
struct SplitValues {
    odd: weir_runtime::SideOutput<u64>,
}

impl BroadcastProcessFunction for SplitValues {
    type In = u64;
    type Broadcast = Rule;
    type Out = u64;
    type StateKey = u64;
    type StateValue = (u64, u64);

    fn process_element<C: Collector<u64>>(
        &mut self,
        v: u64,
        _state: &BroadcastState<u64, (u64, u64)>,
        out: &mut C,
    ) {
        if v.is_multiple_of(2) {
            out.collect(v);
        } else {
            self.odd.emit(v);
        }
    }

    fn process_broadcast_element<C: Collector<u64>>(
        &mut self,
        r: Rule,
        state: &mut BroadcastState<u64, (u64, u64)>,
        _out: &mut C,
    ) {
        update_rules(state, r);
    }

    fn side_outputs(&mut self, outputs: &mut weir_runtime::SideOutputs<'_, '_>) {
        outputs.connect(&self.odd);
    }
}

#[test]
fn a_broadcast_process_function_emits_to_a_side_output_stream() {
    let n = 10_000u64;
    let (evens, odds) = (Collected::new(), Collected::new());
    let odd = weir_runtime::OutputTag::<u64>::new("odd");
    let job = JobGraph::new("broadcast-side-output");
    let rules = job
        .source("rules", |info: &SubtaskInfo| {
            SequenceSource::new(info, RULE_EVENTS, rule)
        })
        .parallelism(1)
        .broadcast();
    let split = job
        .source("values", move |info: &SubtaskInfo| {
            SequenceSource::new(info, n, |i| i)
        })
        .connect(rules)
        .process("split", |_: &SubtaskInfo| SplitValues {
            odd: weir_runtime::SideOutput::new(&weir_runtime::OutputTag::new("odd")),
        })
        .parallelism(3);
    split
        .get_side_output(&odd)
        .map("halve", |v: u64| v / 2)
        .sink("odds", collect_into(&odds));
    split.sink("evens", collect_into(&evens));
    run_ok(job, &options(2));
    assert_eq!(
        sorted(evens.take_all()),
        (0..n).step_by(2).collect::<Vec<_>>()
    );
    assert_eq!(
        sorted(odds.take_all()),
        (0..n)
            .filter(|v| v % 2 == 1)
            .map(|v| v / 2)
            .collect::<Vec<_>>()
    );
}
