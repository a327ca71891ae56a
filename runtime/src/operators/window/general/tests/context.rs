//! The window function's context on the general operator: late firings
//! told apart, per-window state kept until the window's cleanup and
//! dropped then (after the function's `clear`), global state across a
//! key's windows, refused per-window state on sessions, and
//! processing-time triggers on the operator's clock.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{harness, Rec};
use crate::chain::control::{ChainControl, Collector};
use crate::core::duration::ms;
use crate::operators::window::assign::{EventTimeSessionWindows, Windowing};
use crate::operators::window::contents::{Buffered, ProcessWindowFunction, WindowCollector};
use crate::operators::window::context::{ValueStateDescriptor, WindowContext};
use crate::operators::window::event_time::TumblingEventTimeWindows;
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::processing_time::TumblingProcessingTimeWindows;
use crate::operators::window::triggers::{ContinuousProcessingTimeTrigger, EventTimeTrigger};

/// A firing: key, window start, the window's firing number, the key's
/// firing number, late, watermark, the values.
type Counted = (u64, i64, u32, u64, bool, i64, Vec<u64>);

/// What the `clear` hook saw: key, window start, the window's firings,
/// the key's.
type Cleared = Rc<RefCell<Vec<(u64, i64, Option<u32>, Option<u64>)>>>;

/// Counts each window's firings in per-window state and the key's in
/// global state; records what its `clear` hook sees.
#[derive(Clone)]
struct Counting {
    fires: ValueStateDescriptor<u32>,
    total: ValueStateDescriptor<u64>,
    cleared: Cleared,
}

impl Counting {
    fn new() -> Self {
        Self {
            fires: ValueStateDescriptor::new("fires"),
            total: ValueStateDescriptor::new("total"),
            cleared: Rc::default(),
        }
    }
}

impl ProcessWindowFunction<u64, Rec> for Counting {
    type Out = Counted;

    fn process(
        &mut self,
        key: &u64,
        ctx: &mut WindowContext<'_, u64>,
        elements: &[Rec],
        out: &mut WindowCollector<'_, Counted>,
    ) {
        let n = ctx.window_state().value(&self.fires).unwrap_or(0) + 1;
        ctx.window_state().update(&self.fires, n);
        let total = ctx.global_state().value(&self.total).unwrap_or(0) + 1;
        ctx.global_state().update(&self.total, total);
        let mut values: Vec<u64> = elements.iter().map(|r| r.2).collect();
        values.sort_unstable();
        out.collect((
            *key,
            ctx.window().start,
            n,
            total,
            ctx.is_late(),
            ctx.current_watermark(),
            values,
        ));
    }

    fn clear(&mut self, key: &u64, ctx: &mut WindowContext<'_, u64>) {
        let fires = ctx.window_state().value(&self.fires);
        let total = ctx.global_state().value(&self.total);
        self.cleared
            .borrow_mut()
            .push((*key, ctx.window().start, fires, total));
    }
}

fn ts(r: &Rec) -> i64 {
    r.1
}

#[test]
fn late_firings_per_window_and_global_state_follow_the_window_to_its_cleanup() {
    let function = Counting::new();
    let cleared = function.cleared.clone();
    let late = Rc::new(RefCell::new(Vec::new()));
    let sink = late.clone();
    let mut op = harness(GeneralWindowOperator::new(
        TumblingEventTimeWindows::of(ms(10), ts as fn(&Rec) -> i64).spec(),
        EventTimeTrigger,
        Buffered::new(function),
        ms(20),
        Some(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
    ));
    op.collect((1, 1, 10));
    op.collect((1, 5, 11));
    op.collect((2, 3, 20));
    op.on_watermark(9);
    op.collect((1, 12, 12));
    // Within the lateness of [0, 10): a late firing.
    op.collect((1, 7, 13));
    op.on_watermark(19);
    let mut fired = std::mem::take(&mut op.output_mut().items);
    fired.sort();
    assert_eq!(
        fired,
        vec![
            (1, 0, 1, 1, false, 9, vec![10, 11]),
            (1, 0, 2, 2, true, 9, vec![10, 11, 13]),
            (1, 10, 1, 3, false, 19, vec![12]),
            (2, 0, 1, 1, false, 9, vec![20]),
        ]
    );
    // Per window: [0, 10) of keys 1 and 2, [10, 20) of key 1; global: 2.
    assert_eq!(op.function_mut().function_states(), 5);
    assert!(cleared.borrow().is_empty());
    op.on_watermark(29);
    cleared.borrow_mut().sort();
    assert_eq!(
        *cleared.borrow(),
        vec![(1, 0, Some(2), Some(3)), (2, 0, Some(1), Some(1))],
        "the clear hook sees the window's state"
    );
    assert_eq!(
        op.function_mut().function_states(),
        3,
        "[0, 10)'s state dropped at its cleanup"
    );
    // Past the lateness: dropped, to the late output.
    op.collect((1, 8, 14));
    assert_eq!(*late.borrow(), vec![(1, 8, 14)]);
    op.end_input();
    assert_eq!(op.function_mut().function_states(), 2, "global state stays");
    assert_eq!(op.function_mut().open_windows(), 0);
    assert!(op.output_mut().items.is_empty());
}

#[test]
#[should_panic(expected = "Per-window state is not allowed when using merging windows.")]
fn per_window_state_on_sessions_is_refused_as_in_flink() {
    let mut op = harness(GeneralWindowOperator::new(
        EventTimeSessionWindows::with_gap(ms(5), ts as fn(&Rec) -> i64).spec(),
        EventTimeTrigger,
        Buffered::new(Counting::new()),
        Duration::ZERO,
        None,
    ));
    op.collect((1, 1, 10));
    op.on_watermark(10);
}

/// A continuous processing-time trigger of 3 ms on windows of 10 ms, on a
/// manual clock: the first element at 100 aims at 102; the window fires
/// once the clock passed 102 (at 103, as Flink's timers fire 1 ms after
/// their time), then at 105, 108 and its end 109, all due when the clock
/// reaches 110; nothing is left.
#[test]
fn continuous_processing_time_triggers_fire_on_the_clock() {
    let clock = Arc::new(AtomicI64::new(100));
    let c = clock.clone();
    let spec = TumblingProcessingTimeWindows::of(ms(10))
        .with_clock(move || c.load(Ordering::Relaxed))
        .spec();
    let mut op = harness(GeneralWindowOperator::new(
        spec,
        ContinuousProcessingTimeTrigger::of(ms(3)),
        Buffered::new(Counting::new()),
        Duration::ZERO,
        None,
    ));
    op.collect((1, 0, 1));
    clock.store(102, Ordering::Relaxed);
    op.flush(Instant::now());
    assert!(op.output_mut().items.is_empty(), "102 is not past yet");
    op.collect((1, 0, 2));
    clock.store(103, Ordering::Relaxed);
    op.flush(Instant::now());
    op.collect((1, 0, 3));
    clock.store(110, Ordering::Relaxed);
    op.flush(Instant::now());
    let fired: Vec<_> = std::mem::take(&mut op.output_mut().items)
        .into_iter()
        .map(|(k, start, n, _, late, _, values)| (k, start, n, late, values))
        .collect();
    assert_eq!(
        fired,
        vec![
            (1, 100, 1, false, vec![1, 2]),
            (1, 100, 2, false, vec![1, 2, 3]),
            (1, 100, 3, false, vec![1, 2, 3]),
            (1, 100, 4, false, vec![1, 2, 3]),
        ]
    );
    assert_eq!(op.function_mut().open_windows(), 0);
    assert_eq!(op.function_mut().timers(), 0);
    assert_eq!(op.function_mut().function_states(), 1, "the key's total");
}
