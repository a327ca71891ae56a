//! Timers fired by the keyed process operator: event-time timers in
//! timestamp order as the watermark passes them, processing-time timers by
//! the service's clock, deduplicated per key and timestamp.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::chain::control::{ChainControl, Collector};
use crate::chain::testing::VecTail;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::keyed::op::KeyedProcessOp;
use crate::state::key_context::KeyContext;
use crate::state::timers::{KeyedTimerService, TimeDomain, TimerQueues};

/// Per record `(key, event ts, processing ts, delete)`: registers (or
/// deletes) the timers; emits `(key, ts, domain)` per firing. A firing
/// of an event-time timer at an odd timestamp registers one at `ts - 1`
/// (already passed: must fire in the same advance).
struct Fn1 {
    timers: KeyedTimerService<u64>,
}

impl KeyedProcessFunction for Fn1 {
    type Key = u64;
    type In = (u64, Option<i64>, Option<i64>, bool);
    type Out = (u64, i64, TimeDomain);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (_, event, processing, delete): Self::In,
        _out: &mut C,
    ) {
        if let Some(ts) = event {
            if delete {
                self.timers.delete_event_time_timer(ctx, ts);
            } else {
                self.timers.register_event_time_timer(ctx, ts);
            }
        }
        if let Some(ts) = processing {
            if delete {
                self.timers.delete_processing_time_timer(ctx, ts);
            } else {
                self.timers.register_processing_time_timer(ctx, ts);
            }
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
        if domain == TimeDomain::EventTime {
            assert!(ctx.current_watermark() >= ts, "fired before its time");
            assert_eq!(self.timers.current_watermark(), ctx.current_watermark());
            if ts % 2 == 1 {
                self.timers.register_event_time_timer(ctx, ts - 1);
            }
        }
        out.collect((*ctx.key(), ts, domain));
    }
}

type Op = KeyedProcessOp<
    Fn1,
    fn(&(u64, Option<i64>, Option<i64>, bool)) -> u64,
    VecTail<(u64, i64, TimeDomain)>,
>;

fn op(clock: Rc<Cell<i64>>) -> Op {
    let info = SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    };
    KeyedProcessOp::new(
        Fn1 {
            timers: KeyedTimerService::with_clock(move || clock.get()),
        },
        |r: &(u64, Option<i64>, Option<i64>, bool)| r.0,
        VecTail {
            items: Vec::new(),
            finished: false,
            watermarks: Vec::new(),
            statuses: Vec::new(),
            markers: Vec::new(),
        },
        "timers",
        &info,
        false,
    )
}

fn fired(op: &mut Op) -> Vec<(u64, i64, TimeDomain)> {
    std::mem::take(&mut op_tail(op).items)
}

fn op_tail(op: &mut Op) -> &mut VecTail<(u64, i64, TimeDomain)> {
    op.output_mut()
}

const E: TimeDomain = TimeDomain::EventTime;
const P: TimeDomain = TimeDomain::ProcessingTime;

#[test]
fn event_timers_fire_in_time_order_once_the_watermark_passes_them() {
    let mut op = op(Rc::new(Cell::new(0)));
    for (key, ts) in [(1, 30), (2, 10), (3, 20), (1, 10), (2, 40)] {
        op.collect((key, Some(ts), None, false));
    }
    op.on_watermark(9);
    assert!(fired(&mut op).is_empty(), "nothing is due at 9");
    op.on_watermark(20);
    let got = fired(&mut op);
    let times: Vec<i64> = got.iter().map(|f| f.1).collect();
    assert_eq!(times, vec![10, 10, 20]);
    let mut keys_at_10: Vec<u64> = got.iter().filter(|f| f.1 == 10).map(|f| f.0).collect();
    keys_at_10.sort();
    assert_eq!(keys_at_10, vec![1, 2]);
    assert_eq!(got[2], (3, 20, E));
    // The watermark is passed on after the timers it fired.
    assert_eq!(op_tail(&mut op).watermarks, vec![9, 20]);
    op.on_watermark(100);
    assert_eq!(fired(&mut op), vec![(1, 30, E), (2, 40, E)]);
}

#[test]
fn timers_are_deduplicated_per_key_and_timestamp_and_can_be_deleted() {
    let mut op = op(Rc::new(Cell::new(0)));
    for _ in 0..3 {
        op.collect((7, Some(50), None, false));
    }
    op.collect((8, Some(50), None, false));
    op.collect((9, Some(60), None, false));
    op.collect((9, Some(60), None, true));
    // Delete, register again, delete again: gone.
    op.collect((9, Some(70), None, false));
    op.collect((9, Some(70), None, true));
    op.collect((9, Some(70), None, false));
    op.collect((9, Some(70), None, true));
    // Delete then register again: fires once.
    op.collect((8, Some(80), None, false));
    op.collect((8, Some(80), None, true));
    op.collect((8, Some(80), None, false));
    op.on_watermark(1_000);
    let mut got = fired(&mut op);
    got.sort_by_key(|f| (f.1, f.0));
    assert_eq!(got, vec![(7, 50, E), (8, 50, E), (8, 80, E)]);
}

#[test]
fn timers_registered_in_on_timer_for_passed_times_fire_in_the_same_advance() {
    let mut op = op(Rc::new(Cell::new(0)));
    op.collect((4, Some(11), None, false));
    op.on_watermark(15);
    // 11 fired and registered 10 (passed), which fired right after.
    assert_eq!(fired(&mut op), vec![(4, 11, E), (4, 10, E)]);
    assert_eq!(op_tail(&mut op).watermarks, vec![15]);
}

#[test]
fn a_timer_registered_for_a_passed_time_fires_at_the_next_advance() {
    let mut op = op(Rc::new(Cell::new(0)));
    op.on_watermark(100);
    op.collect((5, Some(40), None, false));
    assert!(fired(&mut op).is_empty());
    op.on_watermark(101);
    assert_eq!(fired(&mut op), vec![(5, 40, E)]);
}

#[test]
fn end_of_input_fires_every_event_timer_without_a_watermark() {
    let mut op = op(Rc::new(Cell::new(0)));
    op.collect((1, Some(i64::MAX - 1), None, false));
    op.collect((2, Some(6), None, false));
    op.collect((3, None, Some(1_000), false));
    op.end_input();
    assert_eq!(fired(&mut op), vec![(2, 6, E), (1, i64::MAX - 1, E)]);
    // No watermark was made up for downstream.
    assert!(op_tail(&mut op).watermarks.is_empty());
    // Processing-time timers no longer fire or wake the task.
    let flushed = op.flush(Instant::now());
    assert!(fired(&mut op).is_empty());
    assert_eq!(flushed.next_deadline, None);
}

#[test]
fn processing_timers_fire_by_the_clock_and_report_the_next_as_a_deadline() {
    let clock = Rc::new(Cell::new(1_000));
    let mut op = op(clock.clone());
    op.collect((1, None, Some(1_050), false));
    op.collect((2, None, Some(1_020), false));
    op.collect((2, None, Some(1_020), false));
    op.collect((3, None, Some(1_500), false));
    op.collect((3, None, Some(1_500), true));
    let now = Instant::now();
    let flushed = op.flush(now);
    assert!(!flushed.progressed);
    assert_eq!(flushed.next_deadline, Some(now + Duration::from_millis(20)));
    clock.set(1_030);
    let flushed = op.flush(now);
    assert!(flushed.progressed);
    assert_eq!(fired(&mut op), vec![(2, 1_020, P)]);
    assert_eq!(flushed.next_deadline, Some(now + Duration::from_millis(20)));
    // Event time does not fire processing timers.
    op.on_watermark(i64::MAX);
    assert!(fired(&mut op).is_empty());
    clock.set(2_000);
    let flushed = op.flush(now);
    assert_eq!(fired(&mut op), vec![(1, 1_050, P)]);
    assert_eq!(flushed.next_deadline, None);
}

/// Registers an event-time timer at each record's value and emits the
/// timers that fire; holds the watermark it passes on back by 10 ms.
struct HoldsBack {
    timers: KeyedTimerService<u64>,
}

impl KeyedProcessFunction for HoldsBack {
    type Key = u64;
    type In = u64;
    type Out = i64;

    fn process<C: Collector<i64>>(&mut self, ctx: &KeyContext<u64>, ts: u64, _out: &mut C) {
        self.timers.register_event_time_timer(ctx, ts as i64);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }

    fn on_timer<C: Collector<i64>>(
        &mut self,
        ts: i64,
        _ctx: &KeyContext<u64>,
        _domain: TimeDomain,
        out: &mut C,
    ) {
        out.collect(ts);
    }

    fn watermark_delay(&self) -> i64 {
        10
    }
}

#[test]
fn a_function_may_hold_back_the_watermark_it_passes_on() {
    let info = SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    };
    let mut op = KeyedProcessOp::new(
        HoldsBack {
            timers: KeyedTimerService::new(),
        },
        |ts: &u64| *ts % 3,
        VecTail::default(),
        "holds-back",
        &info,
        false,
    );
    op.collect(95);
    op.collect(105);
    // Its timers fire at its own watermark; the one passed on is 10 ms behind.
    op.on_watermark(100);
    assert_eq!(op.output_mut().items, vec![95]);
    assert_eq!(op.output_mut().watermarks, vec![90]);
    // The end of input passes as it is.
    op.on_watermark(i64::MAX);
    assert_eq!(op.output_mut().items, vec![95, 105]);
    assert_eq!(op.output_mut().watermarks, vec![90, i64::MAX]);
}
