//! Tests of the event-time window operator: window assignment against
//! Flink's formulas and its output against brute-force references over
//! random out-of-order input, with lateness and the late-data output.

use std::collections::BTreeMap;
use std::time::Duration;

use weir_net::Wire;

use super::*;
use crate::chain::control::ChainControl;
use crate::chain::control::Collector;
use crate::chain::testing::VecTail;
use crate::core::duration::{ms, Offset};
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::op::KeyedProcessOp;
use crate::state::aggregating::AggregateFunction;

/// Count and sum of the second field.
#[derive(Clone)]
struct CountSum;

impl AggregateFunction for CountSum {
    type In = (u64, i64, u64);
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, v: (u64, i64, u64), (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + v.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

type Rec = (u64, i64, u64);
type Ts = fn(&Rec) -> i64;
type Op<W, A = TumblingEventTimeWindows<Ts>> = KeyedProcessOp<
    WindowOperator<u64, W, A>,
    fn(&Rec) -> u64,
    VecTail<(u64, TimeWindow, <W as WindowFold>::Out)>,
>;

/// The window operator's `(key, window, result)` as `(key, window start,
/// result)`, checking that every window is as long as the others.
fn starts<O>(fired: Vec<(u64, TimeWindow, O)>) -> Vec<(u64, i64, O)> {
    if let Some((_, first, _)) = fired.first() {
        let size = first.end - first.start;
        assert!(fired.iter().all(|(_, w, _)| w.end - w.start == size));
    }
    fired.into_iter().map(|(k, w, r)| (k, w.start, r)).collect()
}

fn info() -> SubtaskInfo {
    SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    }
}

fn op<W: WindowFold<In = Rec>>(size: i64, fold: W) -> Op<W>
where
    W::Acc: Wire,
{
    let assigner = TumblingEventTimeWindows::of(ms(size), (|r: &Rec| r.1) as Ts);
    op_with(WindowOperator::new(assigner, fold))
}

fn op_with<W: WindowFold<In = Rec>, A: WindowAssigner<Rec>>(
    window: WindowOperator<u64, W, A>,
) -> Op<W, A>
where
    W::Acc: Wire,
{
    KeyedProcessOp::new(
        window,
        (|r: &Rec| r.0) as fn(&Rec) -> u64,
        VecTail {
            items: Vec::new(),
            finished: false,
            watermarks: Vec::new(),
            statuses: Vec::new(),
            markers: Vec::new(),
        },
        "window",
        &info(),
        false,
    )
}

#[test]
fn window_start_follows_flink_also_for_negative_times_and_offsets() {
    let w = TumblingEventTimeWindows::of(Duration::from_secs(1), |_: &()| 0);
    assert_eq!(w.window_start(0), 0);
    assert_eq!(w.window_start(999), 0);
    assert_eq!(w.window_start(1000), 1000);
    assert_eq!(w.window_start(-1), -1000);
    let w = w.with_offset(Duration::from_millis(250));
    assert_eq!(w.window_start(249), -750);
    assert_eq!(w.window_start(250), 250);
    // Flink's negative offset (`Duration.ofMillis(-750)`): the same starts.
    let before = TumblingEventTimeWindows::of(Duration::from_secs(1), |_: &()| 0)
        .with_offset(Offset::before(Duration::from_millis(750)));
    assert_eq!(before.window_start(249), -750);
    assert_eq!(before.window_start(250), 250);
}

#[test]
fn windows_fire_when_the_watermark_passes_their_end_and_late_records_are_dropped() {
    let mut op = op(10, AggregateFold(CountSum));
    op.collect((1, 0, 5));
    op.collect((1, 9, 7));
    op.collect((2, 3, 1));
    op.collect((1, 10, 100));
    op.on_watermark(8);
    assert!(op.output_mut().items.is_empty(), "no window ended yet");
    op.on_watermark(9);
    let mut fired = starts(std::mem::take(&mut op.output_mut().items));
    fired.sort();
    assert_eq!(fired, vec![(1, 0, (2, 12)), (2, 0, (1, 1))]);
    // Window [0, 10) fired: a record for it is late and dropped.
    op.collect((2, 5, 1000));
    op.collect((2, 15, 3));
    op.end_input();
    let mut fired = starts(std::mem::take(&mut op.output_mut().items));
    fired.sort();
    assert_eq!(fired, vec![(1, 10, (1, 100)), (2, 10, (1, 3))]);
    // The watermark reached the chain after the windows it fired.
    assert_eq!(op.output_mut().watermarks, vec![8, 9]);
}

#[test]
fn reduce_keeps_one_value_per_window() {
    let mut op = op(
        5,
        ReduceFold::new(|a: Rec, b: Rec| (a.0, a.1.max(b.1), a.2.max(b.2))),
    );
    for (k, ts, v) in [(7, 1, 3), (7, 4, 9), (7, 2, 4), (7, 6, 1)] {
        op.collect((k, ts, v));
    }
    op.on_watermark(4);
    assert_eq!(
        starts(std::mem::take(&mut op.output_mut().items)),
        vec![(7, 0, (7, 4, 9))]
    );
}

/// Brute force: every record of a window that had not fired when it
/// arrived counts; a window fires once, with what it had.
#[test]
fn random_out_of_order_inputs_match_a_brute_force_reference() {
    let mut rng = 0x1234_5678_u64;
    let mut next = move || {
        rng = crate::operators::window::tests::mix(rng);
        rng
    };
    for round in 0..50 {
        let size = 1 + (next() % 20) as i64;
        let mut op = op(size, AggregateFold(CountSum));
        let mut expected: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
        let mut watermark = i64::MIN;
        let mut late = 0u64;
        for i in 0..400u64 {
            if next() % 10 == 0 {
                let w = (i as i64) / 2 - (next() % 30) as i64;
                if w > watermark {
                    watermark = w;
                    op.on_watermark(w);
                }
            }
            let key = next() % 4;
            let ts = (i as i64) / 2 - (next() % 40) as i64;
            let start = ts - ts.rem_euclid(size);
            op.collect((key, ts, i));
            if start + size - 1 <= watermark {
                late += 1;
                continue;
            }
            let e = expected.entry((key, start)).or_default();
            e.0 += 1;
            e.1 += i;
        }
        op.end_input();
        let mut got: Vec<_> = starts(std::mem::take(&mut op.output_mut().items));
        got.sort();
        let want: Vec<_> = expected.into_iter().map(|((k, s), r)| (k, s, r)).collect();
        assert_eq!(got, want, "round {round}, size {size}");
        assert_eq!(op.function_mut().late_records(), late, "round {round}");
        assert_eq!(op.function_mut().open_windows(), 0, "round {round}");
    }
}

/// [`CountSum`] that folds only borrowed records: its by-value `add`
/// fails the test.
#[derive(Clone)]
struct CountSumByRef;

impl AggregateFunction for CountSumByRef {
    type In = Rec;
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, _: Rec, _: (u64, u64)) -> (u64, u64) {
        panic!("a record of several windows was cloned for each")
    }
    fn add_ref(&self, v: &Rec, (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + v.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// A record of several sliding windows is folded into each by reference
/// (`AggregateFunction::add_ref`), not cloned per window, late firings
/// included, and the results are those of the by-value fold.
#[test]
fn sliding_windows_fold_a_record_of_several_windows_by_reference() {
    fn run<W: WindowFold<In = Rec, Out = (u64, u64)>>(fold: W) -> Vec<(u64, i64, (u64, u64))>
    where
        W::Acc: Wire,
    {
        let assigner = SlidingEventTimeWindows::of(ms(10), ms(5), (|r: &Rec| r.1) as Ts);
        let mut op = op_with(WindowOperator::new(assigner, fold).with_allowed_lateness(ms(20)));
        let records = [(1, 3, 10), (2, 7, 20), (1, 12, 30), (1, 4, 40), (2, 26, 50)];
        for (i, r) in records.into_iter().enumerate() {
            op.collect(r);
            if i == 2 {
                op.on_watermark(14);
            }
        }
        op.end_input();
        starts(std::mem::take(&mut op.output_mut().items))
    }
    let got = run(AggregateFold(CountSumByRef));
    assert_eq!(got, run(AggregateFold(CountSum)));
    // Window [0, 10) fired at watermark 14 with keys 1 and 2, then again
    // for key 1's late record at 4 (within the lateness).
    assert!(got.contains(&(1, 0, (1, 10))), "{got:?}");
    assert!(got.contains(&(1, 0, (2, 50))), "{got:?}");
}

/// Brute force of sliding windows with allowed lateness over random
/// out-of-order input: replays the input keeping, per `(key, window)`,
/// its records; a window fires when the watermark reaches its end - 1
/// and again on every record accepted after that; a record goes to the
/// side output when all its windows are past their lateness.
#[test]
fn sliding_windows_with_lateness_match_a_brute_force_reference() {
    use std::cell::RefCell;
    use std::rc::Rc;

    let mut rng = 0xABCD_u64;
    let mut next = move || {
        rng = mix(rng);
        rng
    };
    for round in 0..60 {
        let slide = 1 + (next() % 7) as i64;
        let size = slide * (1 + (next() % 4) as i64)
            + if round % 3 == 0 {
                0
            } else {
                (next() % 3) as i64
            };
        let lateness = [0, 0, 3, 10][(next() % 4) as usize];
        let late_seen = Rc::new(RefCell::new(Vec::new()));
        let sink = late_seen.clone();
        let assigner = SlidingEventTimeWindows::of(ms(size), ms(slide), (|r: &Rec| r.1) as Ts);
        let mut op = op_with(
            WindowOperator::new(assigner, AggregateFold(CountSum))
                .with_allowed_lateness(ms(lateness))
                .with_late_output(Box::new(move |r: Rec| sink.borrow_mut().push(r))),
        );
        // Per window: (count, sum), fired yet.
        let mut windows: BTreeMap<(u64, i64), ((u64, u64), bool)> = BTreeMap::new();
        let mut want = Vec::new();
        let mut want_late = Vec::new();
        let mut watermark = i64::MIN;
        for i in 0..300u64 {
            if next() % 8 == 0 {
                let w = (i as i64) / 2 - (next() % 25) as i64;
                if w > watermark {
                    watermark = w;
                    op.on_watermark(w);
                    for (&(k, s), (acc, fired)) in windows.iter_mut() {
                        if !*fired && s + size - 1 <= w {
                            *fired = true;
                            want.push((k, s, *acc));
                        }
                    }
                }
            }
            let key = next() % 3;
            let ts = (i as i64) / 2 - (next() % 30) as i64;
            op.collect((key, ts, i));
            let mut taken = false;
            // Every window start s with s <= ts < s + size, s = k * slide.
            let mut s = ts - ts.rem_euclid(slide);
            while s > ts - size {
                if s + size - 1 + lateness > watermark {
                    taken = true;
                    let (acc, fired) = windows.entry((key, s)).or_insert(((0, 0), false));
                    acc.0 += 1;
                    acc.1 += i;
                    if s + size - 1 <= watermark {
                        *fired = true;
                        want.push((key, s, *acc));
                    }
                }
                s -= slide;
            }
            if !taken {
                want_late.push((key, ts, i));
            }
        }
        op.end_input();
        for (&(k, s), (acc, fired)) in windows.iter() {
            if !*fired {
                want.push((k, s, *acc));
            }
        }
        let mut got = starts(std::mem::take(&mut op.output_mut().items));
        got.sort();
        want.sort();
        let what = format!("round {round}: size {size}, slide {slide}, lateness {lateness}");
        assert_eq!(got, want, "{what}");
        assert_eq!(*late_seen.borrow(), want_late, "{what}");
        assert_eq!(
            op.function_mut().late_records(),
            want_late.len() as u64,
            "{what}"
        );
        assert_eq!(op.function_mut().open_windows(), 0, "{what}");
    }
}

#[test]
fn sliding_windows_assign_every_window_holding_a_timestamp() {
    let w = SlidingEventTimeWindows::of(ms(10), ms(3), |_: &()| 0);
    assert_eq!(
        WindowAssigner::<()>::window_starts(&w, 7).collect::<Vec<_>>(),
        vec![6, 3, 0]
    );
    assert_eq!(
        WindowAssigner::<()>::window_starts(&w, -1).collect::<Vec<_>>(),
        vec![-3, -6, -9]
    );
    // Windows shorter than the slide leave gaps: no window there.
    let gaps = SlidingEventTimeWindows::of(ms(2), ms(5), |_: &()| 0);
    assert_eq!(
        WindowAssigner::<()>::window_starts(&gaps, 6).collect::<Vec<_>>(),
        vec![5]
    );
    assert_eq!(WindowAssigner::<()>::window_starts(&gaps, 7).count(), 0);
}

/// The range an assigner reports holds exactly the timestamps with the
/// same windows: the operator reuses them there without re-assigning.
#[test]
fn window_starts_range_covers_exactly_the_timestamps_with_the_same_windows() {
    fn check<A: WindowAssigner<()>>(a: &A, ts: i64) {
        let (starts, lo, hi) = a.window_starts_range(ts);
        let want: Vec<i64> = a.window_starts(ts).collect();
        assert_eq!(starts.collect::<Vec<_>>(), want);
        assert!(lo <= ts && ts < hi, "{ts} outside {lo}..{hi}");
        for t in lo..hi {
            assert_eq!(a.window_starts(t).collect::<Vec<_>>(), want, "ts {t}");
        }
        assert_ne!(a.window_starts(lo - 1).collect::<Vec<_>>(), want);
        assert_ne!(a.window_starts(hi).collect::<Vec<_>>(), want);
    }
    let mut rng = 99_u64;
    for _ in 0..200 {
        rng = mix(rng);
        let size = 1 + (rng % 17) as i64;
        let slide = 1 + (rng >> 8) as i64 % 9;
        let offset = match (rng >> 16) as i64 % 100 - 50 {
            o if o < 0 => Offset::before(ms(-o)),
            o => Offset::after(ms(o)),
        };
        let ts = (rng >> 24) as i64 % 1000 - 500;
        check(
            &TumblingEventTimeWindows::of(ms(size), |_: &()| 0).with_offset(offset),
            ts,
        );
        // Windows shorter than their slide leave gaps with no window.
        let sliding = SlidingEventTimeWindows::of(ms(size.max(slide)), ms(slide), |_: &()| 0);
        check(&sliding.with_offset(offset), ts);
    }
}

/// splitmix64's finalizer, as a small deterministic generator.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Records taken a run at a time (`collect_many`, the path of a gate's
/// buffer) give exactly what they give one by one (`collect`): the same
/// firings in the same order, the same late records. Mostly in-order
/// timestamps, so that long runs share a window, with jumps back (late
/// and within-lateness records), for tumbling and sliding windows.
#[test]
fn records_taken_a_run_at_a_time_give_what_they_give_one_by_one() {
    use std::cell::RefCell;
    use std::rc::Rc;

    let mut rng = 0x5EED_u64;
    let mut next = move || {
        rng = mix(rng);
        rng
    };
    for round in 0..80 {
        let size = 2 + (next() % 9) as i64;
        let slide = if round % 2 == 0 {
            size
        } else {
            1 + (next() % size as u64) as i64
        };
        let lateness = [0, 0, 2, 7][(next() % 4) as usize];
        let records: Vec<Rec> = (0..400u64)
            .map(|i| {
                let back = if next() % 10 == 0 {
                    (next() % 20) as i64
                } else {
                    0
                };
                (next() % 4, (i as i64) / 3 - back, i)
            })
            .collect();
        // Watermarks between chunks of records: (records before it, watermark).
        let mut cuts = Vec::new();
        let mut at = 0usize;
        while at < records.len() {
            at += 1 + (next() % 40) as usize;
            cuts.push((at.min(records.len()), (at as i64) / 3 - (next() % 6) as i64));
        }
        let make = |late: Rc<RefCell<Vec<Rec>>>| {
            let assigner = SlidingEventTimeWindows::of(ms(size), ms(slide), (|r: &Rec| r.1) as Ts);
            op_with(
                WindowOperator::new(assigner, AggregateFold(CountSum))
                    .with_allowed_lateness(ms(lateness))
                    .with_late_output(Box::new(move |r: Rec| late.borrow_mut().push(r))),
            )
        };
        let (late_one, late_many) = (Rc::default(), Rc::default());
        let (mut one, mut many) = (make(Rc::clone(&late_one)), make(Rc::clone(&late_many)));
        let mut from = 0;
        for &(to, watermark) in &cuts {
            for r in &records[from..to] {
                one.collect(*r);
            }
            let mut rest = records[from..to].iter().copied();
            let mut left = to - from;
            while left > 0 {
                let limit = 1 + (next() % 50) as usize;
                let taken = many.collect_many(&mut rest, limit);
                assert_eq!(
                    taken,
                    limit.min(left),
                    "round {round}: takes up to its limit"
                );
                left -= taken;
            }
            one.on_watermark(watermark);
            many.on_watermark(watermark);
            from = to;
        }
        one.end_input();
        many.end_input();
        let what = format!("round {round}: size {size}, slide {slide}, lateness {lateness}");
        assert!(!one.output_mut().items.is_empty(), "{what}: windows fired");
        assert_eq!(one.output_mut().items, many.output_mut().items, "{what}");
        assert_eq!(*late_one.borrow(), *late_many.borrow(), "{what}");
        assert_eq!(
            one.function_mut().late_records(),
            many.function_mut().late_records(),
            "{what}"
        );
    }
}

/// An aggregate that says whether its merge is exact (the flag): sliding
/// windows of one that does fold each record into one slice
/// (`window::slices`).
#[derive(Clone)]
struct Exact<F>(F, bool);

impl<F: AggregateFunction> AggregateFunction for Exact<F> {
    type In = F::In;
    type Acc = F::Acc;
    type Out = F::Out;
    fn create_accumulator(&self) -> F::Acc {
        self.0.create_accumulator()
    }
    fn add(&self, v: F::In, acc: F::Acc) -> F::Acc {
        self.0.add(v, acc)
    }
    fn get_result(&self, acc: &F::Acc) -> F::Out {
        self.0.get_result(acc)
    }
    fn merge(&self, a: F::Acc, b: F::Acc) -> F::Acc {
        self.0.merge(a, b)
    }
    fn merges_exactly(&self) -> bool {
        self.1
    }
}

/// Sliced sliding windows (a record folds into its slice; a window merges
/// its slices when it fires) against the pane operator (a record folds
/// into every window) over random out-of-order input, sizes, slides and
/// offsets: the same `(key, window, result)` multiset, each key's windows
/// in the same order, the same late records. Half the rounds checkpoint
/// mid-stream and restore into 1 to 3 subtasks (each record then goes to
/// the subtask of its key group), from the sliced operator's checkpoint
/// or from the pane operator's (a checkpoint written before slicing), or
/// restore a sliced checkpoint into the pane operator with lateness.
#[test]
fn sliced_windows_give_what_every_window_gives_across_restores_and_rescales() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use weir_state::{key_group_for_hash, KeyGroupRange, KeyHash};

    type Late = Rc<RefCell<Vec<Rec>>>;
    let mut rng = 0x511CE_u64;
    let mut next = move || {
        rng = mix(rng);
        rng
    };
    let max_parallelism = 128u32;
    for round in 0..120 {
        let slide = 1 + (next() % 6) as i64;
        let size = slide + 1 + (next() % 16) as i64;
        let offset = Offset::after(ms((next() % 7) as i64));
        let make = |exact: bool, lateness: i64, late: &Late| {
            let late = Rc::clone(late);
            let assigner = SlidingEventTimeWindows::of(ms(size), ms(slide), (|r: &Rec| r.1) as Ts)
                .with_offset(offset);
            // Not exact: the same fold without saying so, on panes.
            let op = WindowOperator::new(assigner, AggregateFold(Exact(CountSum, exact)))
                .with_allowed_lateness(ms(lateness))
                .with_late_output(Box::new(move |r: Rec| late.borrow_mut().push(r)));
            assert_eq!(op.is_sliced(), exact && lateness == 0);
            op_with(op)
        };
        let records: Vec<Rec> = (0..300u64)
            .map(|i| {
                let back = if next() % 4 == 0 {
                    (next() % 25) as i64
                } else {
                    0
                };
                (next() % 6, (i as i64) / 2 - back, i)
            })
            .collect();
        let mut cuts = Vec::new();
        let mut at = 0usize;
        while at < records.len() {
            at += 1 + (next() % 30) as usize;
            cuts.push((
                at.min(records.len()),
                (at as i64) / 2 - 8 - (next() % 6) as i64,
            ));
        }
        // How the run is cut: 0 none, 1 sliced -> sliced, 2 panes ->
        // sliced, 3 sliced -> panes with lateness.
        let restore = if round % 2 == 0 {
            0
        } else {
            1 + (next() % 3) as usize
        };
        let cut = cuts.len() / 2;
        // The watermark before the cut, which the restored operators get
        // again first (a restore starts without one).
        let resumed = cuts[..cut].iter().map(|c| c.1).max();
        let restore = if resumed.is_some() { restore } else { 0 };
        let parallelism = 1 + (next() % 3) as u32;

        // The reference: the pane operator throughout (with lateness
        // after the cut when the restore adds it).
        let late_want: Late = Rc::default();
        let mut want_out = Vec::new();
        {
            let mut op = make(false, 0, &late_want);
            let mut from = 0;
            for (i, &(to, wm)) in cuts.iter().enumerate() {
                if i == cut && restore == 3 {
                    let ck = op.function_mut().checkpoint_groups(max_parallelism);
                    want_out.append(&mut op.output_mut().items);
                    let mut after = make(false, 3, &late_want);
                    after
                        .function_mut()
                        .restore_groups(&ck, 0..max_parallelism as usize);
                    after.on_watermark(resumed.unwrap());
                    op = after;
                }
                for r in &records[from..to] {
                    op.collect(*r);
                }
                op.on_watermark(wm);
                from = to;
            }
            op.end_input();
            want_out.append(&mut op.output_mut().items);
        }

        let late_got: Late = Rc::default();
        let mut got_out = Vec::new();
        {
            let mut ops = vec![make(restore != 2, 0, &late_got)];
            let mut from = 0;
            for (i, &(to, wm)) in cuts.iter().enumerate() {
                if i == cut && restore != 0 {
                    let ck = ops[0].function_mut().checkpoint_groups(max_parallelism);
                    got_out.append(&mut ops[0].output_mut().items);
                    ops = (0..parallelism)
                        .map(|sub| {
                            let range =
                                KeyGroupRange::for_subtask(max_parallelism, parallelism, sub);
                            let mut op = make(true, if restore == 3 { 3 } else { 0 }, &late_got);
                            op.function_mut()
                                .restore_groups(&ck, range.start() as usize..range.end() as usize);
                            // The watermark is the one before the cut again.
                            op.on_watermark(resumed.unwrap());
                            op
                        })
                        .collect();
                }
                let n = ops.len() as u32;
                let subtask = |r: &Rec| {
                    let kg = key_group_for_hash(r.0.key_hash(), max_parallelism);
                    (0..n)
                        .position(|s| {
                            KeyGroupRange::for_subtask(max_parallelism, n, s).contains(kg)
                        })
                        .unwrap()
                };
                // Runs of records a subtask takes at a time, as a gate
                // hands them.
                let mut rest = records[from..to].iter().copied().peekable();
                while let Some(r) = rest.peek().copied() {
                    let s = subtask(&r);
                    let limit = 1 + (next() % 20) as usize;
                    let mut run = Vec::new();
                    while let Some(r) = rest.peek().copied() {
                        if subtask(&r) != s || run.len() == limit {
                            break;
                        }
                        run.push(r);
                        rest.next();
                    }
                    let len = run.len();
                    assert_eq!(ops[s].collect_many(&mut run.into_iter(), limit), len);
                }
                for op in &mut ops {
                    op.on_watermark(wm);
                }
                from = to;
            }
            for op in &mut ops {
                op.end_input();
                let out = std::mem::take(&mut op.output_mut().items);
                // Each key's windows in order on its subtask (without
                // lateness: no late firing).
                let mut last: BTreeMap<u64, i64> = BTreeMap::new();
                for (k, w, _) in &out {
                    let prev = last.insert(*k, w.start);
                    let ordered = restore == 3 || prev.is_none_or(|p| p < w.start);
                    assert!(ordered, "round {round}, restore {restore}: order");
                }
                assert_eq!(op.function_mut().open_windows(), 0);
                got_out.extend(out);
            }
        }
        let what = format!(
            "round {round}: size {size}, slide {slide}, {offset:?}, restore {restore} \
             at {parallelism}"
        );
        let mut want = starts(want_out);
        let mut got = starts(got_out);
        assert!(!want.is_empty(), "{what}: windows fired");
        want.sort();
        got.sort();
        assert_eq!(got, want, "{what}");
        let (mut lw, mut lg) = (late_want.borrow().clone(), late_got.borrow().clone());
        lw.sort();
        lg.sort();
        assert_eq!(lg, lw, "{what}: late records");
    }
}

/// A sliced operator keeps what fired across a restore: windows that fired
/// before the checkpoint do not fire again, and a record that comes after
/// it, before any watermark, for windows that all fired is late.
#[test]
fn a_restored_sliced_operator_keeps_its_fired_windows_and_late_records_late() {
    let make = || {
        let assigner = SlidingEventTimeWindows::of(ms(10), ms(5), (|r: &Rec| r.1) as Ts);
        op_with(WindowOperator::new(
            assigner,
            AggregateFold(Exact(CountSum, true)),
        ))
    };
    let mut op = make();
    assert!(op.function_mut().is_sliced());
    op.collect((1, 3, 1));
    op.collect((1, 8, 2));
    op.on_watermark(9);
    let mut fired = starts(std::mem::take(&mut op.output_mut().items));
    fired.sort();
    assert_eq!(fired, vec![(1, -5, (1, 1)), (1, 0, (2, 3))]);
    let checkpoint = op.function_mut().checkpoint_groups(128);
    let mut restored = make();
    restored.function_mut().restore_groups(&checkpoint, 0..128);
    // Windows [-5, 5) and [0, 10) fired: late.
    restored.collect((1, 2, 10));
    // [0, 10) fired, [5, 15) did not.
    restored.collect((1, 7, 20));
    restored.end_input();
    let fired = starts(std::mem::take(&mut restored.output_mut().items));
    assert_eq!(fired, vec![(1, 5, (2, 22))]);
    assert_eq!(restored.function_mut().late_records(), 1);
}

/// Records carrying their window's end (field 1): each is in that one
/// window of the size, whatever windows of that size overlap; a window
/// fires once the watermark reaches its end - 1, and a record of a window
/// already fired is late.
#[test]
fn attached_windows_hold_each_record_in_the_window_it_names() {
    let assigner = AttachedEventTimeWindows::of(ms(10), (|r: &Rec| r.1) as Ts);
    assert_eq!(WindowAssigner::<Rec>::timestamp(&assigner, &(0, 12, 0)), 11);
    let mut op = op_with(WindowOperator::new(assigner, AggregateFold(CountSum)));
    // Hopping windows of 10 every 2, as a window aggregation emits them.
    op.collect((1, 10, 5));
    op.collect((1, 12, 7));
    op.collect((1, 10, 1));
    op.collect((2, 12, 3));
    op.on_watermark(8);
    assert!(op.output_mut().items.is_empty(), "no window ended yet");
    op.on_watermark(9);
    let fired = std::mem::take(&mut op.output_mut().items);
    assert_eq!(fired, vec![(1, TimeWindow::new(0, 10), (2, 6))]);
    // [0, 10) fired: a record naming it is late; [2, 12) is still open.
    op.collect((1, 10, 1000));
    op.collect((1, 12, 1));
    op.end_input();
    let mut fired = std::mem::take(&mut op.output_mut().items);
    fired.sort_by_key(|(k, w, _)| (*k, w.start));
    assert_eq!(
        fired,
        vec![
            (1, TimeWindow::new(2, 12), (2, 8)),
            (2, TimeWindow::new(2, 12), (1, 3)),
        ]
    );
}
