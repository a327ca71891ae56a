//! The harnesses themselves: what a user's test relies on them for.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::*;
use crate::chain::control::Collector;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::process::{InitializationContext, ProcessContext, ProcessFunction};
use crate::operators::side_output::{OutputTag, SideOutput, SideOutputs};
use crate::operators::window::{
    AggregateFold, TimeWindow, TumblingEventTimeWindows, TumblingProcessingTimeWindows, Windowing,
};
use crate::state::aggregating::AggregateFunction;
use crate::state::key_context::KeyContext;
use crate::state::operator::list::OperatorListState;
use crate::state::timers::{KeyedTimerService, TimeDomain, TimerQueues};
use crate::state::value::KeyedValueState;
use crate::state::visitor::{KeyedStates, OperatorStates};

/// Per key: counts records in keyed state; a record `(key, Some(t))`
/// registers an event-time timer at `t`, `(key, None)` a processing-time
/// timer 100 ms after now. A firing emits `(key, count, ts)`.
struct Counter {
    count: KeyedValueState<u64, u64>,
    timers: KeyedTimerService<u64>,
}

fn counter(_: &SubtaskInfo) -> Counter {
    Counter {
        count: KeyedValueState::new("count"),
        timers: KeyedTimerService::new(),
    }
}

type Rec = (u64, Option<i64>);

fn key(r: &Rec) -> u64 {
    r.0
}

impl KeyedProcessFunction for Counter {
    type Key = u64;
    type In = Rec;
    type Out = (u64, u64, i64);

    fn process<C: Collector<Self::Out>>(&mut self, ctx: &KeyContext<u64>, r: Rec, _: &mut C) {
        *self.count.value_mut_or_insert_with(ctx, || 0) += 1;
        match r.1 {
            Some(t) => self.timers.register_event_time_timer(ctx, t),
            None => {
                let at = self.timers.current_processing_time() + 100;
                self.timers.register_processing_time_timer(ctx, at);
            }
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.count);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        ts: i64,
        ctx: &KeyContext<u64>,
        _: TimeDomain,
        out: &mut C,
    ) {
        out.collect((*ctx.key(), self.count.value(ctx).unwrap_or(0), ts));
    }
}

#[test]
fn keyed_harness_fires_event_timers_on_watermarks_and_processing_timers_on_its_clock() {
    let setup = HarnessSetup::new().processing_time(1_000);
    let mut h = KeyedOperatorHarness::with_setup(setup, counter, key).unwrap();
    h.process_elements([(1, Some(50)), (2, Some(20)), (1, Some(50)), (3, None)]);
    assert!(h.output().is_empty());
    assert_eq!(h.event_time_timers(), vec![(20, 2), (50, 1)]);
    assert_eq!(h.processing_time_timers(), vec![(1_100, 3)]);
    assert_eq!(h.function().count.value(&h.key_context(1)), Some(2));

    h.process_watermark(30);
    assert_eq!(h.take_output(), vec![(2, 1, 20)]);
    assert_eq!(h.emitted_watermarks(), &[30]);
    // The clock is the harness's, whatever clock the function chose.
    h.set_processing_time(1_099);
    assert!(h.output().is_empty());
    h.advance_processing_time(Duration::from_millis(1));
    assert_eq!(h.take_output(), vec![(3, 1, 1_100)]);
    assert!(h.processing_time_timers().is_empty());

    h.end_input();
    assert_eq!(
        h.take_output(),
        vec![(1, 2, 50)],
        "end of input fires the rest"
    );
    assert!(h.input_ended());
}

#[test]
fn a_keyed_snapshot_restores_state_timers_and_the_end_of_input() {
    let mut h = KeyedOperatorHarness::new(counter, key).unwrap();
    h.process_elements([(1, Some(50)), (2, Some(70)), (2, Some(70))]);
    let before = h.snapshot().unwrap();
    assert_eq!(before.checkpoint_id(), 1);
    assert_eq!(
        before.state_names(),
        vec!["_timers_event".to_string(), "count".to_string()]
    );
    // What happens after the snapshot is not in it.
    h.process_element((1, Some(60)));

    let mut r = KeyedOperatorHarness::restore(counter, key, &before).unwrap();
    assert_eq!(r.event_time_timers(), vec![(50, 1), (70, 2)]);
    assert_eq!(r.function().count.value(&r.key_context(2)), Some(2));
    r.process_watermark(100);
    assert_eq!(r.take_output(), vec![(1, 1, 50), (2, 2, 70)]);
    assert_eq!(r.snapshot().unwrap().checkpoint_id(), 2, "ids go on");

    // A snapshot after the end of input: the restored operator does not
    // end (fire its timers, run on_end_of_input) again.
    h.end_input();
    let ended = h.snapshot().unwrap();
    let mut e = KeyedOperatorHarness::restore(counter, key, &ended).unwrap();
    assert!(e.input_ended());
    e.end_input();
    assert!(e.output().is_empty());
}

#[test]
fn merged_keyed_snapshots_restore_at_another_parallelism() {
    let keys = 0..64u64;
    let mut snapshots = Vec::new();
    for index in 0..2 {
        let setup = HarnessSetup::new().subtask(index, 2);
        let mut h = KeyedOperatorHarness::with_setup(setup, counter, key).unwrap();
        let mine: Vec<u64> = keys.clone().filter(|k| h.owns_key(k)).collect();
        for k in mine {
            for _ in 0..=k % 3 {
                h.process_element((k, Some(k as i64)));
            }
        }
        snapshots.push(h.snapshot().unwrap());
    }
    let all = OperatorSnapshot::merge(&snapshots.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(all.subtask_indices(), vec![0, 1]);
    assert_eq!(all.parallelism(), 2);

    // Three subtasks now: each gets the keys of its key groups, with their
    // counts and timers.
    let mut counts = Vec::new();
    for index in 0..3 {
        let setup = HarnessSetup::new().subtask(index, 3).restore(&all);
        let mut h = KeyedOperatorHarness::with_setup(setup, counter, key).unwrap();
        let mine: Vec<u64> = keys.clone().filter(|k| h.owns_key(k)).collect();
        let timers: Vec<u64> = h.event_time_timers().into_iter().map(|t| t.1).collect();
        assert_eq!(timers, mine, "subtask {index} has the timers of its keys");
        h.end_input();
        counts.extend(h.take_output().into_iter().map(|(k, n, _)| (k, n)));
    }
    counts.sort();
    let want: Vec<(u64, u64)> = keys.map(|k| (k, k % 3 + 1)).collect();
    assert_eq!(counts, want);

    let twice = OperatorSnapshot::merge(&[&snapshots[0], &snapshots[0]]).unwrap_err();
    assert!(twice.to_string().contains("subtask 0"), "{twice}");
}

#[test]
#[should_panic(expected = "does not own")]
fn a_record_of_another_subtask_s_key_is_refused() {
    let setup = HarnessSetup::new().subtask(0, 2);
    let mut h = KeyedOperatorHarness::with_setup(setup, counter, key).unwrap();
    let other = (0..).find(|k| !h.owns_key(k)).unwrap();
    h.process_element((other, None));
}

/// Creates a state it does not visit.
struct Forgetful {
    _lost: KeyedValueState<u64, u64>,
}

impl KeyedProcessFunction for Forgetful {
    type Key = u64;
    type In = u64;
    type Out = u64;
    fn process<C: Collector<u64>>(&mut self, _: &KeyContext<u64>, _: u64, _: &mut C) {}
}

#[test]
fn a_state_the_function_does_not_visit_fails_the_harness() {
    let made = KeyedOperatorHarness::new(
        |_: &SubtaskInfo| Forgetful {
            _lost: KeyedValueState::new("lost"),
        },
        |r: &u64| *r,
    );
    let e = made.err().expect("refused").to_string();
    assert!(e.contains("lost"), "{e}");
}

/// Count and sum of the values.
#[derive(Clone)]
struct CountSum;

impl AggregateFunction for CountSum {
    type In = (u64, i64, u64);
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, r: (u64, i64, u64), (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + r.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

type Ev = (u64, i64, u64);

#[test]
fn a_window_operator_runs_in_the_keyed_harness_with_lateness_and_late_data() {
    let late = Rc::new(RefCell::new(Vec::new()));
    let into = late.clone();
    let make = move |_: &SubtaskInfo| {
        TumblingEventTimeWindows::of(Duration::from_millis(10), |r: &Ev| r.1).incremental::<u64, _>(
            AggregateFold(CountSum),
            Duration::from_millis(20),
            Some(Box::new(move |r: Ev| into.borrow_mut().push(r))),
        )
    };
    let mut h = KeyedOperatorHarness::new(make, |r: &Ev| r.0).unwrap();
    h.process_elements([(1, 3, 1), (1, 12, 2), (2, 5, 4)]);
    h.process_watermark(9);
    let mut fired = h.take_output();
    fired.sort();
    let w = |start: i64| TimeWindow::new(start, start + 10);
    assert_eq!(fired, vec![(1, w(0), (1, 1)), (2, w(0), (1, 4))]);
    // Within the lateness: [0, 10) fires again with the late record.
    h.process_element((1, 7, 8));
    assert_eq!(h.take_output(), vec![(1, w(0), (2, 9))]);
    // Past it (cleanup at 9 + 20): dropped to the late output.
    h.process_watermark(40);
    h.process_element((1, 8, 16));
    assert_eq!(h.take_output(), vec![(1, w(10), (1, 2))]);
    assert_eq!(*late.borrow(), vec![(1, 8, 16)]);
}

#[test]
fn processing_time_windows_follow_the_harness_clock() {
    let make = |_: &SubtaskInfo| {
        TumblingProcessingTimeWindows::of(Duration::from_millis(100)).incremental::<u64, _>(
            AggregateFold(CountSum),
            Duration::ZERO,
            None,
        )
    };
    let setup = HarnessSetup::new().processing_time(1_000);
    let mut h = KeyedOperatorHarness::with_setup(setup, make, |r: &Ev| r.0).unwrap();
    h.process_elements([(1, 0, 1), (1, 0, 2)]);
    h.set_processing_time(1_050);
    h.process_element((1, 0, 4));
    assert!(h.output().is_empty());
    h.set_processing_time(1_100);
    assert_eq!(
        h.take_output(),
        vec![(1, TimeWindow::new(1_000, 1_100), (3, 7))]
    );
}

/// Pairs up values; the odd one out waits in operator state.
struct Pairs {
    waiting: OperatorListState<u64>,
    restored: Option<u64>,
    completed: Vec<u64>,
}

fn pairs(_: &SubtaskInfo) -> Pairs {
    Pairs {
        waiting: OperatorListState::new("waiting"),
        restored: None,
        completed: Vec::new(),
    }
}

impl ProcessFunction for Pairs {
    type In = u64;
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(&mut self, _: &ProcessContext, v: u64, out: &mut C) {
        match self.waiting.get(0) {
            Some(first) => {
                self.waiting.clear();
                out.collect((first, v));
            }
            None => self.waiting.add(v),
        }
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.list(&mut self.waiting);
    }

    fn initialize_state(&mut self, ctx: &InitializationContext) {
        self.restored = ctx.restored_checkpoint();
    }

    fn notify_checkpoint_complete(&mut self, id: u64) {
        self.completed.push(id);
    }
}

#[test]
fn process_harness_snapshots_and_redistributes_operator_state() {
    let mut snapshots = Vec::new();
    for (index, values) in [vec![1, 2, 3], vec![4]].into_iter().enumerate() {
        let setup = HarnessSetup::new().subtask(index, 2);
        let mut h = ProcessOperatorHarness::with_setup(setup, pairs).unwrap();
        h.process_elements(values);
        let s = h.snapshot().unwrap();
        h.notify_checkpoint_complete(s.checkpoint_id());
        assert_eq!(h.function().completed, vec![1]);
        snapshots.push(s);
    }
    assert_eq!(
        ProcessOperatorHarness::restore(pairs, &snapshots[0])
            .unwrap()
            .function()
            .restored,
        Some(1)
    );
    // At parallelism 1 the one subtask gets both waiting values (3 and 4)
    // and pairs the first with the next record.
    let all = OperatorSnapshot::merge(&[&snapshots[0], &snapshots[1]]).unwrap();
    let mut h = ProcessOperatorHarness::restore(pairs, &all).unwrap();
    assert_eq!(h.function().waiting.len(), 2);
    h.process_watermark(5);
    assert_eq!(h.emitted_watermarks(), &[5]);
    h.process_element(9);
    assert_eq!(h.take_output(), vec![(3, 9)]);
}

#[test]
fn collected_gathers_every_subtask_of_a_job() {
    let collected = Collected::new();
    let job = crate::api::graph::JobGraph::new("collect");
    job.source("numbers", |info: &SubtaskInfo| {
        crate::operators::source::SequenceSource::new(info, 1_000, |i| i)
    })
    .key_by(|i: &u64| i % 7)
    .process("count", |_: &SubtaskInfo| counter_of_values())
    .sink("collect", collect_into(&collected));
    run_ok(job, &small_buffers(test_options(2)));
    assert_eq!(collected.finishes(), 2);
    assert_eq!(collected.take_sorted(), (0..1_000).collect::<Vec<u64>>());
}

/// Emits every value it gets (a keyed pass-through).
fn counter_of_values() -> impl KeyedProcessFunction<Key = u64, In = u64, Out = u64> {
    struct Pass;
    impl KeyedProcessFunction for Pass {
        type Key = u64;
        type In = u64;
        type Out = u64;
        fn process<C: Collector<u64>>(&mut self, _: &KeyContext<u64>, v: u64, out: &mut C) {
            out.collect(v);
        }
    }
    Pass
}

/// Passes even values on; odd ones go to a side output.
struct SplitOdd {
    odd: SideOutput<u64>,
}

impl KeyedProcessFunction for SplitOdd {
    type Key = u64;
    type In = u64;
    type Out = u64;
    fn process<C: Collector<u64>>(&mut self, _: &KeyContext<u64>, v: u64, out: &mut C) {
        if v.is_multiple_of(2) {
            out.collect(v);
        } else {
            self.odd.emit(v);
        }
    }
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        outputs.connect(&self.odd);
    }
}

#[test]
fn the_keyed_harness_keeps_side_outputs_per_tag() {
    let odd = OutputTag::<u64>::new("odd");
    let tag = odd.clone();
    let mut h = KeyedOperatorHarness::new(
        move |_: &SubtaskInfo| SplitOdd {
            odd: SideOutput::new(&tag),
        },
        |v: &u64| v % 4,
    )
    .unwrap();
    h.process_elements(0..6);
    assert_eq!(h.take_output(), vec![0, 2, 4]);
    assert_eq!(h.take_side_output(&odd), vec![1, 3, 5]);
    assert!(h.take_side_output(&odd).is_empty(), "taken");
    h.process_watermark(7);
    assert_eq!(h.emitted_watermarks(), &[7]);
}

#[test]
#[should_panic(expected = "lists no side output `other`")]
fn a_side_output_the_function_does_not_list_is_an_error() {
    let mut h = KeyedOperatorHarness::new(
        |_: &SubtaskInfo| SplitOdd {
            odd: SideOutput::new(&OutputTag::new("odd")),
        },
        |v: &u64| *v,
    )
    .unwrap();
    h.take_side_output(&OutputTag::<u64>::new("other"));
}

/// Counts records; says at each snapshot how many it saw, on a side
/// output.
struct Announce {
    seen: u64,
    said: SideOutput<String>,
}

impl ProcessFunction for Announce {
    type In = u64;
    type Out = u64;
    fn process<C: Collector<u64>>(&mut self, _: &ProcessContext, v: u64, out: &mut C) {
        self.seen += 1;
        out.collect(v);
    }
    fn snapshot_state(&mut self, checkpoint_id: u64) {
        self.said.emit(format!("{} at {checkpoint_id}", self.seen));
    }
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        outputs.connect(&self.said);
    }
}

#[test]
fn the_process_harness_keeps_side_outputs_per_tag() {
    let said = OutputTag::<String>::new("said");
    let tag = said.clone();
    let mut h = ProcessOperatorHarness::new(move |_: &SubtaskInfo| Announce {
        seen: 0,
        said: SideOutput::new(&tag),
    })
    .unwrap();
    h.process_elements([4, 5]);
    h.snapshot().unwrap();
    assert_eq!(h.take_output(), vec![4, 5]);
    assert_eq!(h.take_side_output(&said), vec!["2 at 1".to_string()]);
}
