//! Triggers and evictors on the general window operator, over random
//! out-of-order input with a watermark after every few records:
//!
//! - against the plain transcription of Flink's window operators in
//!   [`flink`](super::flink), for every built-in event-time trigger and
//!   evictor on tumbling, sliding and session windows with lateness;
//! - against closed forms of what each trigger and evictor does, written
//!   without their code: a count trigger fires every `n`th element of a
//!   window (with everything since the last purge), a continuous trigger
//!   at every interval the watermark passes and at the window's end, a
//!   count evictor shows the last `k` elements, a time evictor those within
//!   `d` of the newest.

use std::collections::BTreeMap;
use std::time::Duration;

use super::flink::{Firing, Reference, Windows};
use super::{harness, rng, sorted, Rec};
use crate::chain::control::ChainControl;
use crate::core::duration::ms;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::window::assign::{EventTimeSessionWindows, Windowing};
use crate::operators::window::contents::{
    Buffered, ProcessWindowFunction, WindowCollector, WindowContents,
};
use crate::operators::window::context::WindowContext;
use crate::operators::window::event_time::{SlidingEventTimeWindows, TumblingEventTimeWindows};
use crate::operators::window::evicting::Evicting;
use crate::operators::window::evictor::{CountEvictor, Evictor, TimeEvictor};
use crate::operators::window::general::GeneralWindowOperator;
use crate::operators::window::spec::WindowSpec;
use crate::operators::window::trigger::Trigger;
use crate::operators::window::triggers::{
    ContinuousEventTimeTrigger, CountTrigger, EventTimeTrigger, PurgingTrigger,
};

/// The window function of these tests: the window, its sorted values and
/// whether the firing is late.
#[derive(Clone)]
pub(super) struct Seen;

impl ProcessWindowFunction<u64, Rec> for Seen {
    type Out = Firing;

    fn process(
        &mut self,
        key: &u64,
        ctx: &mut WindowContext<'_, u64>,
        elements: &[Rec],
        out: &mut WindowCollector<'_, Firing>,
    ) {
        let mut values: Vec<u64> = elements.iter().map(|r| r.2).collect();
        values.sort_unstable();
        let w = ctx.window();
        out.collect((*key, w.start, w.end, values, ctx.is_late()));
    }
}

fn ts(r: &Rec) -> i64 {
    r.1
}

fn spec(windows: Windows) -> WindowSpec<Rec> {
    match windows {
        Windows::Fixed { size, slide } if size == slide => {
            TumblingEventTimeWindows::of(ms(size), ts as fn(&Rec) -> i64).spec()
        }
        Windows::Fixed { size, slide } => {
            SlidingEventTimeWindows::of(ms(size), ms(slide), ts as fn(&Rec) -> i64).spec()
        }
        Windows::Sessions { gap } => {
            EventTimeSessionWindows::with_gap(ms(gap), ts as fn(&Rec) -> i64).spec()
        }
    }
}

/// One input event: a record, or a watermark.
#[derive(Clone, Copy, Debug)]
pub(super) enum Event {
    Record(Rec),
    Watermark(i64),
}

/// 300 records of 3 keys, up to 30 ms out of order, with a rising
/// watermark after every few records (some past records still to come).
pub(super) fn input(seed: u64) -> Vec<Event> {
    let mut next = rng(seed);
    let mut events = Vec::new();
    let mut watermark = i64::MIN;
    for i in 0..300u64 {
        if next().is_multiple_of(3) {
            let w = (i as i64) / 2 - (next() % 25) as i64;
            if w > watermark {
                watermark = w;
                events.push(Event::Watermark(w));
            }
        }
        events.push(Event::Record((
            next() % 3,
            (i as i64) / 2 - (next() % 30) as i64,
            i,
        )));
    }
    events
}

/// Runs `events` through `op`; returns its firings, sorted, and checks it
/// keeps no window, timer or element after the end of the input.
fn run_op<Tr, C>(
    op: GeneralWindowOperator<u64, Rec, Tr, C>,
    events: &[Event],
    what: &str,
) -> Vec<Firing>
where
    Tr: Trigger<Rec>,
    C: WindowContents<u64, Rec, Out = Firing>,
{
    let mut op = harness(op);
    for e in events {
        match *e {
            Event::Record(r) => crate::chain::control::Collector::collect(&mut op, r),
            Event::Watermark(w) => op.on_watermark(w),
        }
    }
    op.end_input();
    let f = op.function_mut();
    assert_eq!(
        (f.open_windows(), f.timers(), f.function_states()),
        (0, 0, 0),
        "{what}: windows, timers and states left"
    );
    sorted(std::mem::take(&mut op.output_mut().items))
        .into_iter()
        .inspect(|f| assert!(f.2 > f.1, "{what}: a window ends after it starts"))
        .collect()
}

/// The operator and the reference on the same input: the same firings
/// (window, values, lateness), late records and nothing left at the end.
fn against_reference<Tr, E>(
    trigger: Tr,
    evictor: Option<E>,
    windows: Windows,
    lateness: i64,
    seed: u64,
) where
    Tr: Trigger<Rec> + std::fmt::Debug,
    E: Evictor<Rec> + std::fmt::Debug,
{
    let what = format!("{trigger:?}, {evictor:?}, lateness {lateness}, seed {seed}");
    let events = input(seed);
    let mut reference = Reference::new(trigger.clone(), evictor.clone(), windows, lateness);
    for e in &events {
        match *e {
            Event::Record(r) => reference.element(r),
            Event::Watermark(w) => reference.watermark(w),
        }
    }
    reference.end();
    assert_eq!(
        reference.left(),
        (0, 0, 0),
        "{what}: the reference keeps nothing"
    );
    let want = sorted(reference.fired.clone());
    assert!(!want.is_empty(), "{what}: nothing fired");
    let late = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let sink = late.clone();
    let late_output: Option<crate::operators::late_data::LateOutput<Rec>> =
        Some(Box::new(move |r| sink.borrow_mut().push(r)));
    let got = match evictor {
        None => {
            let op = GeneralWindowOperator::new(
                spec(windows),
                trigger,
                Buffered::new(Seen),
                ms(lateness),
                late_output,
            );
            run_op(op, &events, &what)
        }
        Some(e) => {
            let op = GeneralWindowOperator::new(
                spec(windows),
                trigger,
                Evicting::new(e, Seen),
                ms(lateness),
                late_output,
            );
            run_op(op, &events, &what)
        }
    };
    assert_eq!(got, want, "{what}");
    assert_eq!(*late.borrow(), reference.late, "{what}: late records");
}

const WINDOWS: [Windows; 4] = [
    Windows::Fixed {
        size: 10,
        slide: 10,
    },
    Windows::Fixed { size: 12, slide: 5 },
    Windows::Sessions { gap: 3 },
    Windows::Sessions { gap: 8 },
];

#[test]
fn triggers_follow_flinks_window_operator() {
    for (i, windows) in WINDOWS.into_iter().enumerate() {
        for lateness in [0, 7, 40] {
            let seed = 0x7216 + i as u64 * 31 + lateness as u64;
            let none: Option<CountEvictor> = None;
            against_reference(EventTimeTrigger, none, windows, lateness, seed);
            against_reference(
                PurgingTrigger::of(EventTimeTrigger),
                none,
                windows,
                lateness,
                seed,
            );
            for n in [1, 2, 5] {
                against_reference(CountTrigger::of(n), none, windows, lateness, seed + n);
                against_reference(
                    PurgingTrigger::of(CountTrigger::of(n)),
                    none,
                    windows,
                    lateness,
                    seed,
                );
            }
            for interval in [1, 3, 4] {
                against_reference(
                    ContinuousEventTimeTrigger::of(ms(interval)),
                    none,
                    windows,
                    lateness,
                    seed,
                );
                against_reference(
                    PurgingTrigger::of(ContinuousEventTimeTrigger::of(ms(interval))),
                    none,
                    windows,
                    lateness,
                    seed + 1,
                );
            }
        }
    }
}

#[test]
fn evictors_follow_flinks_evicting_window_operator() {
    for (i, windows) in WINDOWS.into_iter().enumerate() {
        for lateness in [0, 7] {
            let seed = 0xE71C + i as u64 * 17 + lateness as u64;
            for keep in [0, 2, 6] {
                against_reference(
                    EventTimeTrigger,
                    Some(TimeEvictor::of(ms(keep))),
                    windows,
                    lateness,
                    seed,
                );
                against_reference(
                    CountTrigger::of(3),
                    Some(TimeEvictor::of_after(ms(keep), true)),
                    windows,
                    lateness,
                    seed,
                );
            }
            if let Windows::Sessions { .. } = windows {
                // A merged session's elements are in another order than
                // Flink's (whose order follows a hash set): the last `k`
                // differ, so count evictors are compared on fixed windows.
                continue;
            }
            for keep in [0, 1, 3] {
                against_reference(
                    CountTrigger::of(2),
                    Some(CountEvictor::of(keep)),
                    windows,
                    lateness,
                    seed,
                );
                against_reference(
                    EventTimeTrigger,
                    Some(CountEvictor::of(keep)),
                    windows,
                    lateness,
                    seed,
                );
                against_reference(
                    ContinuousEventTimeTrigger::of(ms(3)),
                    Some(CountEvictor::of_after(keep, true)),
                    windows,
                    lateness,
                    seed,
                );
            }
        }
    }
}

/// Per `(key, tumbling window)`: the elements it took in their order, each
/// with the watermark when it came, and the watermarks that followed.
struct PerWindow {
    /// `(record, watermark at arrival)`, elements the window took.
    taken: Vec<(Rec, i64)>,
}

/// The elements each tumbling window of `size` takes (those arriving
/// before its cleanup), by brute force.
fn taken(events: &[Event], size: i64, lateness: i64) -> BTreeMap<(u64, i64), PerWindow> {
    let mut windows: BTreeMap<(u64, i64), PerWindow> = BTreeMap::new();
    let mut watermark = i64::MIN;
    for e in events {
        match *e {
            Event::Watermark(w) => watermark = w,
            Event::Record(r) => {
                let start = r.1.div_euclid(size) * size;
                if start + size - 1 + lateness > watermark {
                    windows
                        .entry((r.0, start))
                        .or_insert(PerWindow { taken: Vec::new() })
                        .taken
                        .push((r, watermark));
                }
            }
        }
    }
    windows
}

fn values(records: &[(Rec, i64)]) -> Vec<u64> {
    sorted(records.iter().map(|(r, _)| r.2).collect())
}

fn tumbling_op<Tr: Trigger<Rec>>(
    size: i64,
    trigger: Tr,
    lateness: i64,
) -> GeneralWindowOperator<u64, Rec, Tr, Buffered<u64, Rec, Seen>> {
    GeneralWindowOperator::new(
        spec(Windows::Fixed { size, slide: size }),
        trigger,
        Buffered::new(Seen),
        ms(lateness),
        None,
    )
}

/// A count trigger fires every `n`th element a window takes with all its
/// elements so far (never at the window's end); purging, with those since
/// the last firing. A firing is late if its element came after the
/// watermark passed the window's end.
#[test]
fn count_triggers_fire_every_nth_element() {
    for seed in 0..6u64 {
        let events = input(0xC0_0000 + seed);
        for (n, lateness) in [(1, 0), (3, 0), (4, 25)] {
            let mut want = Vec::new();
            let mut want_purged = Vec::new();
            for (&(k, start), w) in &taken(&events, 10, lateness) {
                for (i, &(_, watermark)) in w.taken.iter().enumerate() {
                    if (i + 1) % n as usize == 0 {
                        let late = start + 9 <= watermark;
                        want.push((k, start, start + 10, values(&w.taken[..=i]), late));
                        let from = i + 1 - n as usize;
                        want_purged.push((k, start, start + 10, values(&w.taken[from..=i]), late));
                    }
                }
            }
            let what = format!("seed {seed}, n {n}, lateness {lateness}");
            assert_eq!(
                run_op(
                    tumbling_op(10, CountTrigger::of(n), lateness),
                    &events,
                    &what
                ),
                sorted(want),
                "{what}"
            );
            assert_eq!(
                run_op(
                    tumbling_op(10, PurgingTrigger::of(CountTrigger::of(n)), lateness),
                    &events,
                    &what
                ),
                sorted(want_purged),
                "{what}: purging"
            );
        }
    }
}

/// A continuous event-time trigger of interval `i` fires a window at every
/// `i` of event time from its first element's interval on (early firings,
/// each time the watermark passes one; several if it passes several), at
/// its end, and for every element after its end (late firings), each time
/// with everything the window took before.
#[test]
fn continuous_event_time_triggers_fire_early_on_time_and_late() {
    for seed in 0..6u64 {
        let events = input(0xC0_1000 + seed);
        for (interval, lateness) in [(2, 0), (3, 12), (20, 5)] {
            let size = 10;
            let mut want = Vec::new();
            // Per window: its elements so far, the next early firing (none
            // before its first on-time element) and whether the watermark
            // passed its end.
            struct State {
                elements: Vec<(Rec, i64)>,
                next: Option<i64>,
                ended: bool,
            }
            let mut open: BTreeMap<(u64, i64), State> = BTreeMap::new();
            let mut watermark = i64::MIN;
            for e in &events {
                match *e {
                    Event::Record(r) => {
                        let start = r.1.div_euclid(size) * size;
                        let max = start + size - 1;
                        if max + lateness <= watermark {
                            continue;
                        }
                        let w = open.entry((r.0, start)).or_insert(State {
                            elements: Vec::new(),
                            next: None,
                            ended: false,
                        });
                        w.elements.push((r, watermark));
                        if max <= watermark {
                            // Late: fires at once, registers nothing.
                            w.ended = true;
                            want.push((r.0, start, start + size, values(&w.elements), true));
                        } else if w.next.is_none() {
                            w.next = Some((r.1 - r.1 % interval + interval).min(max));
                        }
                    }
                    Event::Watermark(to) => {
                        watermark = to;
                        for (&(k, start), w) in open.iter_mut() {
                            let max = start + size - 1;
                            while let Some(next) = w.next.filter(|&n| n <= to && n < max) {
                                want.push((k, start, start + size, values(&w.elements), false));
                                w.next = Some((next + interval).min(max));
                            }
                            if !w.ended && max <= to {
                                w.ended = true;
                                want.push((k, start, start + size, values(&w.elements), false));
                            }
                        }
                        open.retain(|&(_, start), _| start + size - 1 + lateness > to);
                    }
                }
            }
            for (&(k, start), w) in &open {
                let max = start + size - 1;
                let mut next = w.next;
                while let Some(n) = next.filter(|&n| n < max) {
                    want.push((k, start, start + size, values(&w.elements), false));
                    next = Some((n + interval).min(max));
                }
                if !w.ended {
                    want.push((k, start, start + size, values(&w.elements), false));
                }
            }
            let what = format!("seed {seed}, interval {interval}, lateness {lateness}");
            let got = run_op(
                tumbling_op(size, ContinuousEventTimeTrigger::of(ms(interval)), lateness),
                &events,
                &what,
            );
            assert!(got.len() > open.len(), "{what}: early firings");
            assert_eq!(got, sorted(want), "{what}");
        }
    }
}

fn evicting_op<Tr: Trigger<Rec>, E: Evictor<Rec>>(
    size: i64,
    trigger: Tr,
    evictor: E,
    lateness: i64,
) -> GeneralWindowOperator<u64, Rec, Tr, Evicting<u64, Rec, E, Seen>> {
    GeneralWindowOperator::new(
        spec(Windows::Fixed { size, slide: size }),
        trigger,
        Evicting::new(evictor, Seen),
        ms(lateness),
        None,
    )
}

/// Under a count trigger of `n`, a count evictor of `k` shows the last `k`
/// elements the window took (evicting before the function: the evicted
/// are gone for good, and the last `k` of the rest are the last `k` of
/// all); evicting after it, the function sees the last `k` of before and
/// the `n` since (all, the first time).
#[test]
fn count_evictors_keep_the_last_elements() {
    for seed in 0..6u64 {
        let events = input(0xE0_0000 + seed);
        for (n, k, lateness) in [(2, 1, 0), (3, 2, 0), (4, 6, 20), (5, 0, 9)] {
            let mut before = Vec::new();
            let mut after = Vec::new();
            for (&(key, start), w) in &taken(&events, 10, lateness) {
                for i in (0..w.taken.len()).filter(|i| (i + 1) % n == 0) {
                    let upto = &w.taken[..=i];
                    let late = start + 9 <= w.taken[i].1;
                    let last = |m: usize| values(&upto[upto.len().saturating_sub(m)..]);
                    before.push((key, start, start + 10, last(k), late));
                    after.push((key, start, start + 10, last(k + n), late));
                }
            }
            let what = format!("seed {seed}, n {n}, k {k}, lateness {lateness}");
            let trigger = CountTrigger::of(n as u64);
            assert_eq!(
                run_op(
                    evicting_op(10, trigger, CountEvictor::of(k), lateness),
                    &events,
                    &what
                ),
                sorted(before),
                "{what}: before"
            );
            assert_eq!(
                run_op(
                    evicting_op(10, trigger, CountEvictor::of_after(k, true), lateness),
                    &events,
                    &what
                ),
                sorted(after),
                "{what}: after"
            );
        }
    }
}

/// With the event-time trigger, a time evictor of `d` shows, at the
/// on-time firing and at every late one, the elements within `d` of the
/// newest the window took (later ones only raise that newest, so what it
/// evicted before stays evicted).
#[test]
fn time_evictors_keep_the_newest_elements() {
    for seed in 0..6u64 {
        let events = input(0xE0_1000 + seed);
        for (d, lateness) in [(0, 0), (3, 15), (9, 30)] {
            let size = 10;
            let mut want = Vec::new();
            let within = |upto: &[(Rec, i64)]| {
                let newest = upto.iter().map(|(r, _)| r.1).max().unwrap();
                sorted(
                    upto.iter()
                        .filter(|(r, _)| r.1 > newest - d)
                        .map(|(r, _)| r.2)
                        .collect(),
                )
            };
            // On time: the elements that came before the watermark passed
            // the window's end; late: one firing per later element.
            let mut watermarks = vec![i64::MIN];
            watermarks.extend(events.iter().filter_map(|e| match e {
                Event::Watermark(w) => Some(*w),
                Event::Record(_) => None,
            }));
            for (&(k, start), w) in &taken(&events, size, lateness) {
                let max = start + size - 1;
                let on_time = w.taken.iter().take_while(|(_, wm)| *wm < max).count();
                if on_time > 0 {
                    want.push((k, start, start + size, within(&w.taken[..on_time]), false));
                }
                for i in on_time..w.taken.len() {
                    want.push((k, start, start + size, within(&w.taken[..=i]), true));
                }
            }
            let what = format!("seed {seed}, d {d}, lateness {lateness}");
            assert_eq!(
                run_op(
                    evicting_op(size, EventTimeTrigger, TimeEvictor::of(ms(d)), lateness),
                    &events,
                    &what
                ),
                sorted(want),
                "{what}"
            );
        }
    }
}

fn feed<F: KeyedProcessFunction<Key = u64, In = Rec>>(op: &mut super::Harness<F>, ts: i64, v: u64) {
    crate::chain::control::Collector::collect(op, (1, ts, v));
}

/// Sessions under a count trigger of 3: a merge sums the merged sessions'
/// counts (Flink's `onMerge` with `mergePartitionedState`), so a merged
/// session fires at its next element once the sum and it reach 3, and the
/// count starts again after a firing.
#[test]
fn merging_sessions_sum_their_counts() {
    let spec = spec(Windows::Sessions { gap: 10 });
    let mut op = harness(GeneralWindowOperator::new(
        spec,
        CountTrigger::of(3),
        Buffered::new(Seen),
        Duration::ZERO,
        None,
    ));
    feed(&mut op, 0, 1);
    feed(&mut op, 5, 2); // [0, 15): count 2
    feed(&mut op, 22, 3); // [22, 32): count 1
    assert!(op.output_mut().items.is_empty());
    feed(&mut op, 14, 4); // [14, 24) bridges both: 2 + 1, and this one
    assert_eq!(
        std::mem::take(&mut op.output_mut().items),
        vec![(1, 0, 32, vec![1, 2, 3, 4], false)]
    );
    feed(&mut op, 12, 5);
    feed(&mut op, 14, 6);
    assert!(op.output_mut().items.is_empty(), "the count started again");
    feed(&mut op, 30, 7); // [30, 40) extends it: 2, and this one
    assert_eq!(
        std::mem::take(&mut op.output_mut().items),
        vec![(1, 0, 40, vec![1, 2, 3, 4, 5, 6, 7], false)]
    );
    // Two sessions of one element each, merged by a third: 1 + 1 + 1.
    feed(&mut op, 100, 8);
    feed(&mut op, 120, 9);
    feed(&mut op, 110, 10);
    assert_eq!(
        std::mem::take(&mut op.output_mut().items),
        vec![(1, 100, 130, vec![8, 9, 10], false)]
    );
    assert_eq!(op.function_mut().open_windows(), 2);
    op.end_input();
    assert!(
        op.output_mut().items.is_empty(),
        "a count trigger never fires at the end"
    );
    assert_eq!(op.function_mut().open_windows(), 0);
    assert_eq!(op.function_mut().timers(), 0);
}

/// A key's window timers are its own: a key's two windows at one time, and
/// two keys' windows, each fire once.
#[test]
fn timers_are_kept_per_key_and_window() {
    let mut op = harness(tumbling_op(10, ContinuousEventTimeTrigger::of(ms(5)), 0));
    for r in [(1, 1, 1), (2, 2, 2), (1, 11, 3), (1, 3, 4)] {
        crate::chain::control::Collector::collect(&mut op, r);
    }
    // Early firings at 5 ([0, 10) of keys 1 and 2) and 15 ([10, 20)),
    // window ends (and cleanups) at 9 and 19: each a timer of its own.
    assert_eq!(op.function_mut().timers(), 2 + 2 + 2);
    op.on_watermark(5);
    assert_eq!(
        sorted(std::mem::take(&mut op.output_mut().items)),
        vec![(1, 0, 10, vec![1, 4], false), (2, 0, 10, vec![2], false)]
    );
    op.on_watermark(i64::MAX);
    assert_eq!(
        sorted(std::mem::take(&mut op.output_mut().items)),
        vec![
            (1, 0, 10, vec![1, 4], false),
            (1, 10, 20, vec![3], false),
            (1, 10, 20, vec![3], false),
            (2, 0, 10, vec![2], false),
        ]
    );
    assert_eq!(op.function_mut().timers(), 0);
    assert_eq!(op.function_mut().open_windows(), 0);
}
