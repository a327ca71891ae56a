//! The general window operator against a brute-force model of Flink's
//! window operator with its default triggers, over random out-of-order
//! input: every window kind, every window function, allowed lateness, late
//! firings and the late-data output, event and processing time.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod context;
mod flink;
mod triggers;

use super::*;
use crate::chain::control::ChainControl;
use crate::chain::testing::VecTail;
use crate::core::duration::ms;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::op::KeyedProcessOp;
use crate::operators::window::assign::EventTimeSessionWindows;
use crate::operators::window::assign::*;
use crate::operators::window::contents::Accumulated;
use crate::operators::window::contents::Buffered;
use crate::operators::window::contents::FnProcessWindowFunction;
use crate::operators::window::contents::FnWindowFunction;
use crate::operators::window::contents::KeyWindowResult;
use crate::operators::window::contents::WindowCollector;
use crate::operators::window::event_time::{SlidingEventTimeWindows, TumblingEventTimeWindows};
use crate::operators::window::fold::{AggregateFold, ReduceFold};
use crate::operators::window::operator::WindowOperator;
use crate::operators::window::processing_time::ProcessingTimeSessionWindows;
use crate::operators::window::processing_time::SlidingProcessingTimeWindows;
use crate::operators::window::processing_time::TumblingProcessingTimeWindows;
use crate::operators::window::trigger::{NoState, Trigger, TriggerContext, TriggerResult};
use crate::operators::window::triggers::{EventTimeTrigger, ProcessingTimeTrigger};
use crate::state::aggregating::AggregateFunction;

/// `(key, timestamp, value)`.
type Rec = (u64, i64, u64);

/// A firing as the tests compare them: key, window start, window end and
/// the window's values, sorted.
type Fired = (u64, i64, i64, Vec<u64>);

type Harness<F> = KeyedProcessOp<F, fn(&Rec) -> u64, VecTail<<F as KeyedProcessFunction>::Out>>;

fn harness<F: KeyedProcessFunction<Key = u64, In = Rec>>(f: F) -> Harness<F> {
    let info = SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    };
    KeyedProcessOp::new(
        f,
        (|r: &Rec| r.0) as fn(&Rec) -> u64,
        VecTail {
            items: Vec::new(),
            finished: false,
            watermarks: Vec::new(),
            statuses: Vec::new(),
            markers: Vec::new(),
        },
        "window",
        &info,
        false,
    )
}

/// The process function of the tests: the window and its sorted values.
fn sorted_values(
    key: &u64,
    w: &TimeWindow,
    elements: &[Rec],
    out: &mut WindowCollector<'_, Fired>,
) {
    let mut values: Vec<u64> = elements.iter().map(|r| r.2).collect();
    values.sort_unstable();
    out.collect((*key, w.start, w.end, values));
}

/// The window function of the tests' aggregates: the window and the
/// result.
fn with_window(
    key: &u64,
    w: &TimeWindow,
    r: (u64, u64),
    out: &mut WindowCollector<'_, (u64, i64, i64, (u64, u64))>,
) {
    out.collect((*key, w.start, w.end, r));
}

type ProcessFn = fn(&u64, &TimeWindow, &[Rec], &mut WindowCollector<'_, Fired>);
type AggFn =
    fn(&u64, &TimeWindow, (u64, u64), &mut WindowCollector<'_, (u64, i64, i64, (u64, u64))>);
type ProcessOp = GeneralWindowOperator<
    u64,
    Rec,
    Dflt,
    Buffered<u64, Rec, FnProcessWindowFunction<ProcessFn, Fired>>,
>;
type AggOp = GeneralWindowOperator<
    u64,
    Rec,
    Dflt,
    Accumulated<AggregateFold<CountSum>, FnWindowFunction<AggFn, (u64, i64, i64, (u64, u64))>>,
>;

/// The default trigger of `spec`'s domain, as one type for both.
#[derive(Clone, Copy)]
enum Dflt {
    Event,
    Processing,
}

fn dflt(spec: &WindowSpec<Rec>) -> Dflt {
    match spec.domain() {
        TimeDomain::EventTime => Dflt::Event,
        TimeDomain::ProcessingTime => Dflt::Processing,
    }
}

impl Trigger<Rec> for Dflt {
    type State = NoState;

    fn on_element(
        &self,
        r: &Rec,
        ts: i64,
        w: &TimeWindow,
        c: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        match self {
            Dflt::Event => EventTimeTrigger.on_element(r, ts, w, c),
            Dflt::Processing => Trigger::<Rec>::on_element(&ProcessingTimeTrigger, r, ts, w, c),
        }
    }

    fn on_event_time(
        &self,
        t: i64,
        w: &TimeWindow,
        c: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        match self {
            Dflt::Event => Trigger::<Rec>::on_event_time(&EventTimeTrigger, t, w, c),
            Dflt::Processing => Trigger::<Rec>::on_event_time(&ProcessingTimeTrigger, t, w, c),
        }
    }

    fn on_processing_time(
        &self,
        t: i64,
        w: &TimeWindow,
        c: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        match self {
            Dflt::Event => Trigger::<Rec>::on_processing_time(&EventTimeTrigger, t, w, c),
            Dflt::Processing => Trigger::<Rec>::on_processing_time(&ProcessingTimeTrigger, t, w, c),
        }
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(
        &self,
        w: &TimeWindow,
        c: &mut crate::operators::window::trigger::OnMergeContext<'_, NoState>,
    ) {
        match self {
            Dflt::Event => Trigger::<Rec>::on_merge(&EventTimeTrigger, w, c),
            Dflt::Processing => Trigger::<Rec>::on_merge(&ProcessingTimeTrigger, w, c),
        }
    }

    fn clear(&self, w: &TimeWindow, c: &mut TriggerContext<'_, NoState>) {
        match self {
            Dflt::Event => Trigger::<Rec>::clear(&EventTimeTrigger, w, c),
            Dflt::Processing => Trigger::<Rec>::clear(&ProcessingTimeTrigger, w, c),
        }
    }
}

fn process_op(spec: WindowSpec<Rec>, lateness: i64, late: Option<LateOutput<Rec>>) -> ProcessOp {
    GeneralWindowOperator::new(
        spec.clone(),
        dflt(&spec),
        Buffered::new(FnProcessWindowFunction::new(sorted_values as ProcessFn)),
        ms(lateness),
        late,
    )
}

fn agg_op(spec: WindowSpec<Rec>, lateness: i64) -> AggOp {
    GeneralWindowOperator::new(
        spec.clone(),
        dflt(&spec),
        Accumulated::new(
            AggregateFold(CountSum),
            FnWindowFunction::new(with_window as AggFn),
        ),
        ms(lateness),
        None,
    )
}

/// Count and sum of the values.
#[derive(Clone)]
struct CountSum;

impl AggregateFunction for CountSum {
    type In = Rec;
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, v: Rec, (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + v.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// Which windows the model keeps.
#[derive(Clone, Copy)]
enum Kind {
    Fixed { size: i64, slide: i64 },
    Session(fn(&Rec) -> i64),
}

/// Brute force of Flink's window operator with the default triggers,
/// keeping each window's values in a list: a record goes to the windows
/// of its time that are not past their lateness (a session record opens
/// `[t, t + gap)`, which swallows every session it intersects); a window
/// fires when the time reaches its end - 1, and again on a record added
/// after that (event time); it is dropped at end - 1 + lateness.
struct Model {
    kind: Kind,
    event_time: bool,
    lateness: i64,
    time: i64,
    windows: BTreeMap<u64, Vec<(TimeWindow, Vec<u64>)>>,
    fired: Vec<Fired>,
    late: Vec<Rec>,
}

impl Model {
    fn new(kind: Kind, event_time: bool, lateness: i64) -> Self {
        Self {
            kind,
            event_time,
            lateness: if event_time { lateness } else { 0 },
            time: i64::MIN,
            windows: BTreeMap::new(),
            fired: Vec::new(),
            late: Vec::new(),
        }
    }

    fn emit(fired: &mut Vec<Fired>, key: u64, w: TimeWindow, values: &[u64]) {
        let mut v = values.to_vec();
        v.sort_unstable();
        fired.push((key, w.start, w.end, v));
    }

    fn late(&self, w: &TimeWindow) -> bool {
        self.event_time && w.end - 1 + self.lateness <= self.time
    }

    fn record(&mut self, r: Rec) {
        let ts = if self.event_time { r.1 } else { self.time };
        let key = r.0;
        let event_time = self.event_time;
        let time = self.time;
        match self.kind {
            Kind::Fixed { size, slide } => {
                let mut taken = false;
                // Every start s = n * slide with s <= ts < s + size.
                let mut starts = Vec::new();
                let mut s = ts.div_euclid(slide) * slide;
                while s > ts - size {
                    starts.push(s);
                    s -= slide;
                }
                for s in starts {
                    let w = TimeWindow::new(s, s + size);
                    if self.late(&w) {
                        continue;
                    }
                    taken = true;
                    let list = self.windows.entry(key).or_default();
                    let at = match list.iter().position(|(x, _)| *x == w) {
                        Some(at) => at,
                        None => {
                            list.push((w, Vec::new()));
                            list.len() - 1
                        }
                    };
                    list[at].1.push(r.2);
                    if event_time && w.end - 1 <= time {
                        Self::emit(&mut self.fired, key, w, &list[at].1);
                    }
                }
                if !taken {
                    self.late.push(r);
                }
            }
            Kind::Session(gap) => {
                let new = TimeWindow::new(ts, ts + gap(&r));
                let list = self.windows.entry(key).or_default();
                let mut merged = new;
                let mut values = vec![r.2];
                let mut any = false;
                // Flink's TimeWindow::intersects: overlapping or touching.
                while let Some(at) = list
                    .iter()
                    .position(|(w, _)| w.start <= merged.end && w.end >= merged.start)
                {
                    let (w, v) = list.remove(at);
                    merged = TimeWindow::new(merged.start.min(w.start), merged.end.max(w.end));
                    values.extend(v);
                    any = true;
                }
                if !any && self.event_time && new.end - 1 + self.lateness <= time {
                    self.late.push(r);
                    return;
                }
                if event_time && merged.end - 1 <= time {
                    Self::emit(&mut self.fired, key, merged, &values);
                }
                self.windows.entry(key).or_default().push((merged, values));
            }
        }
    }

    /// The time advances to `to`: windows ending by then fire (those whose
    /// end - 1 the time had not reached), those past the lateness go.
    /// On processing time every window whose end the clock reached fires
    /// (and goes) at the flush at `to`.
    fn advance(&mut self, to: i64) {
        let from = self.time;
        if self.event_time && to <= from {
            return;
        }
        self.time = to.max(from);
        let lateness = self.lateness;
        let event_time = self.event_time;
        for (&key, list) in self.windows.iter_mut() {
            for (w, values) in list.iter() {
                let max = w.end - 1;
                let fires = if event_time {
                    max > from && max <= to
                } else {
                    // 1 ms after end - 1, as Flink's processing-time timers.
                    w.end <= to
                };
                if fires {
                    Self::emit(&mut self.fired, key, *w, values);
                }
            }
            list.retain(|(w, _)| {
                if event_time {
                    w.end - 1 + lateness > to
                } else {
                    w.end > to
                }
            });
        }
    }

    /// The input ends: every window whose end the time had not reached
    /// fires.
    fn end(&mut self) {
        self.advance(i64::MAX);
    }

    fn fired(&self) -> Vec<Fired> {
        let mut f = self.fired.clone();
        f.sort();
        f
    }
}

/// splitmix64's finalizer, as a small deterministic generator.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state = mix(state);
        state
    }
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// Turns `(key, start, end, values)` firings into `(key, start, end,
/// (count, sum))`.
fn count_sum(fired: &[Fired]) -> Vec<(u64, i64, i64, (u64, u64))> {
    sorted(
        fired
            .iter()
            .map(|(k, s, e, v)| (*k, *s, *e, (v.len() as u64, v.iter().sum())))
            .collect(),
    )
}

fn rec_ts(r: &Rec) -> i64 {
    r.1
}

fn dynamic_gap(r: &Rec) -> i64 {
    1 + (r.2 % 7) as i64
}

/// Event-time sessions, static and dynamic gaps, with lateness: the
/// process function (every element), `aggregate_with` (merged
/// accumulators) and plain `aggregate` (`(key, window, result)`) all match
/// the model; late records reach the side output; nothing is left after
/// the end of the input.
#[test]
fn event_time_sessions_match_a_brute_force_reference() {
    let mut next = rng(0x5E55_1011);
    for round in 0..80 {
        let gap = [1, 2, 3, 5, 10, 30][(next() % 6) as usize];
        let dynamic = round % 4 == 3;
        let lateness = [0, 0, 3, 10][(next() % 4) as usize];
        let (spec, gap_fn): (WindowSpec<Rec>, fn(&Rec) -> i64) = if dynamic {
            (
                EventTimeSessionWindows::with_dynamic_gap(dynamic_gap, rec_ts).spec(),
                dynamic_gap,
            )
        } else {
            let g: fn(&Rec) -> i64 = match gap {
                1 => |_| 1,
                2 => |_| 2,
                3 => |_| 3,
                5 => |_| 5,
                10 => |_| 10,
                _ => |_| 30,
            };
            (EventTimeSessionWindows::with_gap(ms(gap), rec_ts).spec(), g)
        };
        let late_seen = Rc::new(RefCell::new(Vec::new()));
        let sink = late_seen.clone();
        let mut process = harness(process_op(
            spec.clone(),
            lateness,
            Some(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
        ));
        let mut agg = harness(agg_op(spec.clone(), lateness));
        let mut plain = harness(GeneralWindowOperator::new(
            spec.clone(),
            EventTimeTrigger,
            Accumulated::new(AggregateFold(CountSum), KeyWindowResult),
            ms(lateness),
            None,
        ));
        let mut reduce = harness(GeneralWindowOperator::new(
            spec.clone(),
            EventTimeTrigger,
            Accumulated::new(
                ReduceFold::new(|a: Rec, b: Rec| if a.2 >= b.2 { a } else { b }),
                KeyWindowResult,
            ),
            ms(lateness),
            None,
        ));
        let mut model = Model::new(Kind::Session(gap_fn), true, lateness);
        let mut watermark = i64::MIN;
        for i in 0..300u64 {
            if next().is_multiple_of(8) {
                let w = (i as i64) / 2 - (next() % 25) as i64;
                if w > watermark {
                    watermark = w;
                    process.on_watermark(w);
                    agg.on_watermark(w);
                    plain.on_watermark(w);
                    reduce.on_watermark(w);
                    model.advance(w);
                }
            }
            let r = (next() % 3, (i as i64) / 2 - (next() % 30) as i64, i);
            process.collect(r);
            agg.collect(r);
            plain.collect(r);
            reduce.collect(r);
            model.record(r);
        }
        process.end_input();
        agg.end_input();
        plain.end_input();
        reduce.end_input();
        model.end();
        let what = format!("round {round}: gap {gap} (dynamic {dynamic}), lateness {lateness}");
        let want_max: Vec<_> = sorted(
            model
                .fired()
                .into_iter()
                .map(|(k, s, _, v)| (k, s, *v.last().expect("a fired window has values")))
                .collect(),
        );
        let got_max: Vec<_> = sorted(
            std::mem::take(&mut reduce.output_mut().items)
                .into_iter()
                .map(|(k, w, r)| (k, w.start, r.2))
                .collect(),
        );
        assert_eq!(got_max, want_max, "{what}: reduce");
        let want = model.fired();
        assert!(!want.is_empty(), "{what}: the model fired nothing");
        assert_eq!(
            sorted(std::mem::take(&mut process.output_mut().items)),
            want,
            "{what}: process"
        );
        assert_eq!(
            sorted(std::mem::take(&mut agg.output_mut().items)),
            count_sum(&want),
            "{what}: aggregate_with"
        );
        let got_plain: Vec<_> = std::mem::take(&mut plain.output_mut().items)
            .into_iter()
            .map(|(k, w, r)| (k, w.start, w.end, r))
            .collect();
        assert_eq!(sorted(got_plain), count_sum(&want), "{what}: aggregate");
        assert_eq!(*late_seen.borrow(), model.late, "{what}: late records");
        assert_eq!(
            process.function_mut().late_records(),
            model.late.len() as u64,
            "{what}"
        );
        for f in [
            process.function_mut().open_windows(),
            process.function_mut().timers(),
            process.function_mut().contents().buffered(),
        ] {
            assert_eq!(f, 0, "{what}: state left after the end");
        }
        assert_eq!(agg.function_mut().open_windows(), 0, "{what}");
    }
}

/// Tumbling and sliding event-time windows with lateness: the process
/// function and `aggregate_with` match the model, and the general
/// operator's plain aggregate emits exactly what the fast tumbling /
/// sliding operator does.
#[test]
fn fixed_event_time_windows_with_window_functions_match_a_brute_force_reference() {
    let mut next = rng(0xF1_5ED);
    for round in 0..60 {
        let slide = 1 + (next() % 7) as i64;
        let size = if round % 2 == 0 {
            slide
        } else {
            slide * (1 + (next() % 3) as i64) + (next() % 3) as i64
        };
        let lateness = [0, 0, 4, 12][(next() % 4) as usize];
        let spec = if size == slide {
            TumblingEventTimeWindows::of(ms(size), rec_ts).spec()
        } else {
            SlidingEventTimeWindows::of(ms(size), ms(slide), rec_ts).spec()
        };
        let late_seen = Rc::new(RefCell::new(Vec::new()));
        let sink = late_seen.clone();
        let mut process = harness(process_op(
            spec.clone(),
            lateness,
            Some(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
        ));
        let mut agg = harness(agg_op(spec.clone(), lateness));
        let mut plain = harness(GeneralWindowOperator::new(
            spec,
            EventTimeTrigger,
            Accumulated::new(AggregateFold(CountSum), KeyWindowResult),
            ms(lateness),
            None,
        ));
        let mut fast = harness(
            WindowOperator::new(
                SlidingEventTimeWindows::of(ms(size), ms(slide), rec_ts as fn(&Rec) -> i64),
                AggregateFold(CountSum),
            )
            .with_allowed_lateness(ms(lateness)),
        );
        let mut model = Model::new(Kind::Fixed { size, slide }, true, lateness);
        let mut watermark = i64::MIN;
        for i in 0..300u64 {
            if next().is_multiple_of(8) {
                let w = (i as i64) / 2 - (next() % 25) as i64;
                if w > watermark {
                    watermark = w;
                    process.on_watermark(w);
                    agg.on_watermark(w);
                    plain.on_watermark(w);
                    fast.on_watermark(w);
                    model.advance(w);
                }
            }
            let r = (next() % 3, (i as i64) / 2 - (next() % 30) as i64, i);
            process.collect(r);
            agg.collect(r);
            plain.collect(r);
            fast.collect(r);
            model.record(r);
        }
        process.end_input();
        agg.end_input();
        plain.end_input();
        fast.end_input();
        model.end();
        let what = format!("round {round}: size {size}, slide {slide}, lateness {lateness}");
        let want = model.fired();
        assert_eq!(
            sorted(std::mem::take(&mut process.output_mut().items)),
            want,
            "{what}: process"
        );
        assert_eq!(
            sorted(std::mem::take(&mut agg.output_mut().items)),
            count_sum(&want),
            "{what}: aggregate_with"
        );
        assert_eq!(
            sorted(std::mem::take(&mut plain.output_mut().items)),
            sorted(std::mem::take(&mut fast.output_mut().items)),
            "{what}: general and fast operators"
        );
        assert_eq!(*late_seen.borrow(), model.late, "{what}: late records");
        assert_eq!(process.function_mut().open_windows(), 0, "{what}");
        assert_eq!(process.function_mut().contents().buffered(), 0, "{what}");
    }
}

/// Processing-time tumbling, sliding and session windows on a manual
/// clock: records go to the windows of the clock's time, windows fire at
/// the first flush once the clock reached their end, and the rest at the
/// end of the input.
#[test]
fn processing_time_windows_match_a_brute_force_reference_on_a_manual_clock() {
    let mut next = rng(0xC10C);
    for round in 0..60 {
        let clock = Arc::new(AtomicI64::new(1_000));
        let c = clock.clone();
        let now = move || c.load(Ordering::Relaxed);
        let size = 1 + (next() % 12) as i64;
        let slide = 1 + (next() % size as u64) as i64;
        let (spec, kind): (WindowSpec<Rec>, Kind) = match round % 3 {
            0 => (
                TumblingProcessingTimeWindows::of(ms(size))
                    .with_clock(now)
                    .spec(),
                Kind::Fixed { size, slide: size },
            ),
            1 => (
                SlidingProcessingTimeWindows::of(ms(size), ms(slide))
                    .with_clock(now)
                    .spec(),
                Kind::Fixed { size, slide },
            ),
            _ => (
                ProcessingTimeSessionWindows::with_dynamic_gap(dynamic_gap)
                    .with_clock(now)
                    .spec(),
                Kind::Session(dynamic_gap),
            ),
        };
        // Allowed lateness does not apply to processing time.
        let mut process = harness(process_op(spec.clone(), 50, None));
        let mut agg = harness(agg_op(spec, 0));
        let mut model = Model::new(kind, false, 0);
        model.advance(1_000);
        for i in 0..300u64 {
            if next().is_multiple_of(4) {
                let t = clock.load(Ordering::Relaxed) + (next() % 6) as i64;
                clock.store(t, Ordering::Relaxed);
                process.flush(Instant::now());
                agg.flush(Instant::now());
                model.advance(t);
            }
            // The record's own timestamp plays no part.
            let r = (next() % 3, -(i as i64), i);
            process.collect(r);
            agg.collect(r);
            model.record(r);
        }
        process.end_input();
        agg.end_input();
        model.end();
        let what = format!("round {round}: size {size}, slide {slide}");
        let want = model.fired();
        assert!(!want.is_empty(), "{what}");
        assert_eq!(
            sorted(std::mem::take(&mut process.output_mut().items)),
            want,
            "{what}: process"
        );
        assert_eq!(
            sorted(std::mem::take(&mut agg.output_mut().items)),
            count_sum(&want),
            "{what}: aggregate_with"
        );
        assert_eq!(process.function_mut().late_records(), 0, "{what}");
        assert_eq!(process.function_mut().open_windows(), 0, "{what}");
        assert_eq!(process.function_mut().timers(), 0, "{what}");
    }
}

/// Two sessions and a record bridging them: one session remains, with one
/// timer, holding all three records; the late-firing and late-output
/// rules of Flink on a fired session.
#[test]
fn sessions_merge_their_contents_and_timers_and_late_records_follow_flink() {
    let late_seen = Rc::new(RefCell::new(Vec::new()));
    let sink = late_seen.clone();
    let spec = EventTimeSessionWindows::with_gap(ms(10), rec_ts).spec();
    let mut op = harness(process_op(
        spec,
        20,
        Some(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
    ));
    op.collect((1, 0, 1));
    op.collect((1, 25, 2));
    assert_eq!(op.function_mut().open_windows(), 2);
    // Fire and cleanup timer of each.
    assert_eq!(op.function_mut().timers(), 4);
    op.collect((1, 12, 3)); // [12, 22) touches [0, 10)? no; overlaps [25, 35)? no: a third.
    assert_eq!(op.function_mut().open_windows(), 3);
    op.collect((1, 8, 4)); // [8, 18) merges [0, 10) and [12, 22) into [0, 22).
    assert_eq!(op.function_mut().open_windows(), 2);
    assert_eq!(
        op.function_mut().timers(),
        4,
        "the merged sessions' timers are deleted"
    );
    op.on_watermark(21);
    assert_eq!(op.output_mut().items, vec![(1, 0, 22, vec![1, 3, 4])]);
    // Within the lateness: a late firing with the record added.
    op.collect((1, 3, 5));
    assert_eq!(op.output_mut().items[1], (1, 0, 22, vec![1, 3, 4, 5]));
    // [20, 30) bridges the fired [0, 22) and [25, 35): the merged session
    // ends later than the watermark, so it fires when the watermark gets
    // there, not now.
    op.collect((1, 20, 6));
    assert_eq!(op.output_mut().items.len(), 2);
    assert_eq!(op.function_mut().open_windows(), 1);
    op.on_watermark(34);
    assert_eq!(op.output_mut().items[2], (1, 0, 35, vec![1, 2, 3, 4, 5, 6]));
    // Past the lateness (34 + 20 <= 60): cleaned up; a record that would
    // have joined it is late.
    op.on_watermark(60);
    assert_eq!(op.function_mut().open_windows(), 0);
    assert_eq!(op.function_mut().timers(), 0);
    op.collect((1, 30, 7));
    assert_eq!(*late_seen.borrow(), vec![(1, 30, 7)]);
    op.end_input();
    assert_eq!(
        op.output_mut().items.len(),
        3,
        "nothing left to fire at the end"
    );
}

#[test]
#[should_panic(
    expected = "DynamicEventTimeSessionWindows: the session gap extractor returned 0 ms"
)]
fn a_gap_that_is_not_positive_fails_naming_the_assigner() {
    let spec = EventTimeSessionWindows::with_dynamic_gap(|_: &Rec| 0, rec_ts).spec();
    let mut op = harness(process_op(spec, 0, None));
    op.collect((1, 0, 1));
}

#[test]
#[should_panic(expected = "EventTimeSessionWindows: session gap must be positive, got 0ns")]
fn a_static_gap_that_is_not_positive_is_refused() {
    let _ = EventTimeSessionWindows::with_gap(Duration::ZERO, rec_ts);
}

#[test]
#[should_panic(
    expected = "TumblingEventTimeWindows: window size must be a whole number of milliseconds, got 1.5ms"
)]
fn a_window_size_with_a_fraction_of_a_millisecond_is_refused_not_truncated() {
    let _ = TumblingEventTimeWindows::of(Duration::from_micros(1_500), rec_ts);
}

#[test]
#[should_panic(
    expected = "window allowed lateness must be a whole number of milliseconds, got 10.0001ms"
)]
fn an_allowed_lateness_with_a_fraction_of_a_millisecond_is_refused() {
    let _ = WindowOperator::<u64, _, _>::new(
        TumblingEventTimeWindows::of(ms(10), rec_ts as fn(&Rec) -> i64),
        AggregateFold(CountSum),
    )
    .with_allowed_lateness(Duration::from_nanos(10_000_100));
}

/// Attached windows on the general operator (a window function, any
/// trigger): each record in the one window its end names, fired when the
/// watermark reaches that end - 1; a record of a fired window is late.
#[test]
fn attached_windows_fire_each_record_in_the_window_it_names() {
    let late_seen = Rc::new(RefCell::new(Vec::new()));
    let sink = late_seen.clone();
    let spec =
        crate::operators::window::attached::AttachedEventTimeWindows::of(ms(10), rec_ts).spec();
    let mut op = harness(process_op(
        spec,
        0,
        Some(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
    ));
    // Window ends of hopping windows of 10 every 2.
    op.collect((1, 10, 1));
    op.collect((1, 12, 2));
    op.collect((1, 10, 3));
    op.on_watermark(8);
    assert!(op.output_mut().items.is_empty());
    op.on_watermark(9);
    assert_eq!(op.output_mut().items, vec![(1, 0, 10, vec![1, 3])]);
    op.collect((1, 10, 4));
    assert_eq!(*late_seen.borrow(), vec![(1, 10, 4)]);
    op.on_watermark(11);
    assert_eq!(op.output_mut().items[1], (1, 2, 12, vec![2]));
    assert_eq!(op.function_mut().open_windows(), 0);
}

thread_local! {
    /// Clones of [`Tracked`] accumulators on this thread.
    static ACC_CLONES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// An accumulator holding every value (as a DISTINCT aggregate's set does:
/// a copy costs its size) that counts its clones.
#[derive(Default, Debug, PartialEq)]
struct Tracked(Vec<u64>);

impl Clone for Tracked {
    fn clone(&self) -> Self {
        ACC_CLONES.with(|c| c.set(c.get() + 1));
        Tracked(self.0.clone())
    }
}

/// As its values' little-endian bytes (a byte vector on the wire).
impl weir_net::Wire for Tracked {
    fn encoded_len(&self) -> usize {
        self.bytes().encoded_len()
    }
    fn write(&self, out: &mut [u8]) {
        self.bytes().write(out)
    }
    fn read(input: &[u8]) -> Result<(Self, usize), weir_net::DecodeError> {
        let (bytes, n) = Vec::<u8>::read(input)?;
        let values = bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        Ok((Tracked(values.collect()), n))
    }
}

impl Tracked {
    fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

/// The values of a window, kept in a [`Tracked`] accumulator.
#[derive(Clone)]
struct AllValues;

impl AggregateFunction for AllValues {
    type In = Rec;
    type Acc = Tracked;
    type Out = usize;
    fn create_accumulator(&self) -> Tracked {
        Tracked::default()
    }
    fn add(&self, v: Rec, mut acc: Tracked) -> Tracked {
        acc.0.push(v.2);
        acc
    }
    fn get_result(&self, acc: &Tracked) -> usize {
        acc.0.len()
    }
    fn merge(&self, mut a: Tracked, b: Tracked) -> Tracked {
        a.0.extend(b.0);
        a
    }
}

type CountFn = fn(&u64, &TimeWindow, usize, &mut WindowCollector<'_, (u64, i64, i64, usize)>);

/// A window's accumulator is not copied per record: a record added to a
/// cumulating window, to a session it falls inside, or to a session it
/// extends moves the accumulator in and out of the window set. (Each
/// record copied the accumulator of every window it joined: with a
/// DISTINCT aggregate's values in it, a CUMULATE or SESSION query ran in
/// time quadratic in a window's distinct values, 16 s for 200 k Nexmark
/// bids.) Only a firing may copy, once per window.
#[test]
fn a_window_accumulator_is_not_copied_per_record() {
    fn with_count(
        key: &u64,
        w: &TimeWindow,
        n: usize,
        out: &mut WindowCollector<'_, (u64, i64, i64, usize)>,
    ) {
        out.collect((*key, w.start, w.end, n));
    }
    let specs = [
        (
            "cumulate",
            CumulativeEventTimeWindows::of(ms(10), ms(40), rec_ts).spec(),
        ),
        (
            "session",
            EventTimeSessionWindows::with_gap(ms(5), rec_ts).spec(),
        ),
    ];
    for (name, spec) in specs {
        let mut op = harness(GeneralWindowOperator::new(
            spec.clone(),
            dflt(&spec),
            Accumulated::new(
                AggregateFold(AllValues),
                FnWindowFunction::new(with_count as CountFn),
            ),
            ms(0),
            None,
        ));
        let before = ACC_CLONES.with(|c| c.get());
        // Two keys, a record every ms, in order (each extends the key's
        // session) and now and then one out of order inside the session.
        let mut times = Vec::new();
        for t in 0..400i64 {
            times.push(t);
            op.collect((t as u64 % 2, t, t as u64));
            if t % 7 == 6 {
                times.push(t - 3);
                op.collect((t as u64 % 2, t - 3, 1000 + t as u64));
            }
        }
        let clones = ACC_CLONES.with(|c| c.get()) - before;
        assert_eq!(
            clones, 0,
            "{name}: accumulators copied while adding records"
        );
        op.on_watermark(i64::MAX);
        let fired = op.output_mut().items.clone();
        let held: usize = match name {
            // A record at `t` is in the windows of its cumulation that end
            // after it: 4 - (t mod 40) / 10 of them.
            "cumulate" => times.iter().map(|t| 4 - (t % 40 / 10) as usize).sum(),
            // One session per key holds every record of that key.
            _ => {
                assert_eq!(fired.len(), 2, "one session per key");
                times.len()
            }
        };
        assert_eq!(fired.iter().map(|f| f.3).sum::<usize>(), held, "{name}");
        assert!(
            ACC_CLONES.with(|c| c.get()) - before <= fired.len() as u64,
            "{name}: more copies than firings"
        );
    }
}
