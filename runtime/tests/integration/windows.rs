//! Tumbling event-time windows end to end: two source subtasks with
//! monotonous timestamps, a key_by exchange and a window aggregate (and a
//! window reduce) on two workers must fire every `(key, window)` exactly
//! once with what a brute-force grouping of the input computes; sliding
//! windows likewise; and with allowed lateness a record arriving after its
//! window fired fires it again, one past the lateness goes to the late-data
//! side output.

use std::collections::BTreeMap;
use std::time::Duration;

use weir_runtime::{
    AggregateFunction, CumulativeEventTimeWindows, JobGraph, OutputTag, SequenceSource,
    SlidingEventTimeWindows, SubtaskInfo, TimeWindow, TumblingEventTimeWindows, WatermarkStrategy,
};

use crate::{collect_into, ms, options, run_ok, Collected, EarlyThenLate};

/// Records in all.
const N: u64 = 20_000;
/// Keys.
const KEYS: u64 = 13;
/// Window size (ms).
const SIZE: i64 = 50;

/// Record `i`: key `i % KEYS`, timestamp `i / 10` ms, value `i`.
fn record(i: u64) -> (u64, i64, u64) {
    (i % KEYS, (i / 10) as i64, i)
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

fn strategy() -> WatermarkStrategy<impl Fn(&(u64, i64, u64)) -> i64 + Clone + Send + Sync> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
        .with_timestamp_assigner(|r: &(u64, i64, u64)| r.1)
}

/// `(key, window_start) -> (count, sum, max value)` by brute force.
fn reference() -> BTreeMap<(u64, i64), (u64, u64, u64)> {
    let mut windows = BTreeMap::new();
    for i in 0..N {
        let (key, ts, v) = record(i);
        let e: &mut (u64, u64, u64) = windows.entry((key, ts - ts % SIZE)).or_default();
        e.0 += 1;
        e.1 += v;
        e.2 = e.2.max(v);
    }
    windows
}

#[test]
fn tumbling_aggregate_fires_every_window_once_with_its_records() {
    let collected = Collected::new();
    let job = JobGraph::new("windows-aggregate");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, N, record)
    })
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &(u64, i64, u64)| r.0)
    .window(TumblingEventTimeWindows::of(
        ms(SIZE),
        |r: &(u64, i64, u64)| r.1,
    ))
    .aggregate("count-sum", CountSum)
    .sink("collect", collect_into(&collected));
    run_ok(job, &options(2));

    let mut got = collected.take_all();
    got.sort();
    let want: Vec<_> = reference()
        .into_iter()
        .map(|((k, s), (c, sum, _))| (k, TimeWindow::new(s, s + SIZE), (c, sum)))
        .collect();
    assert_eq!(got.len(), want.len(), "windows fired");
    assert_eq!(got, want);
}

#[test]
fn tumbling_reduce_keeps_the_largest_value_per_window() {
    let collected = Collected::new();
    let job = JobGraph::new("windows-reduce");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, N, record)
    })
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &(u64, i64, u64)| r.0)
    .window(TumblingEventTimeWindows::of(
        ms(SIZE),
        |r: &(u64, i64, u64)| r.1,
    ))
    .reduce(
        "max",
        |a: (u64, i64, u64), b: (u64, i64, u64)| {
            if a.2 >= b.2 {
                a
            } else {
                b
            }
        },
    )
    .sink("collect", collect_into(&collected));
    run_ok(job, &options(2));

    let mut got: Vec<_> = collected
        .take_all()
        .into_iter()
        .map(|(k, w, r)| (k, w, r.2))
        .collect();
    got.sort();
    let want: Vec<_> = reference()
        .into_iter()
        .map(|((k, s), (_, _, max))| (k, TimeWindow::new(s, s + SIZE), max))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn sliding_aggregate_puts_each_record_in_every_window_holding_it() {
    const SLIDE: i64 = 20;
    let collected = Collected::new();
    let job = JobGraph::new("windows-sliding");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, N, record)
    })
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &(u64, i64, u64)| r.0)
    .window(SlidingEventTimeWindows::of(
        ms(SIZE),
        ms(SLIDE),
        |r: &(u64, i64, u64)| r.1,
    ))
    .aggregate("count-sum", CountSum)
    .sink("collect", collect_into(&collected));
    run_ok(job, &options(2));

    let mut want: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
    for i in 0..N {
        let (key, ts, v) = record(i);
        for start in (ts - SIZE + 1..=ts).filter(|s| s.rem_euclid(SLIDE) == 0) {
            let w = want.entry((key, start)).or_default();
            w.0 += 1;
            w.1 += v;
        }
    }
    let mut got = collected.take_all();
    got.sort();
    let want: Vec<_> = want
        .into_iter()
        .map(|((k, s), r)| (k, TimeWindow::new(s, s + SIZE), r))
        .collect();
    assert_eq!(got, want);
}

/// Cumulative windows (SQL's CUMULATE): a record at `t` counts in every
/// window `[s, s + k * STEP)` of its `SIZE`-aligned cumulation that ends
/// after `t`; each fires once.
#[test]
fn cumulative_windows_count_each_record_in_every_window_ending_after_it() {
    const STEP: i64 = 20;
    let collected = Collected::new();
    let job = JobGraph::new("windows-cumulative");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, N, record)
    })
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &(u64, i64, u64)| r.0)
    .window(CumulativeEventTimeWindows::of(
        ms(STEP),
        ms(3 * STEP),
        |r: &(u64, i64, u64)| r.1,
    ))
    .aggregate("count-sum", CountSum)
    .sink("collect", collect_into(&collected));
    run_ok(job, &options(2));

    let mut want: BTreeMap<(u64, i64, i64), (u64, u64)> = BTreeMap::new();
    for i in 0..N {
        let (key, ts, v) = record(i);
        let start = ts - ts.rem_euclid(3 * STEP);
        for end in [start + STEP, start + 2 * STEP, start + 3 * STEP] {
            if end > ts {
                let w = want.entry((key, start, end)).or_default();
                w.0 += 1;
                w.1 += v;
            }
        }
    }
    let mut got = collected.take_all();
    got.sort();
    let want: Vec<_> = want
        .into_iter()
        .map(|((k, s, e), r)| (k, TimeWindow::new(s, e), r))
        .collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
}

#[test]
fn allowed_lateness_refires_windows_and_later_records_go_to_the_side_output() {
    let collected = Collected::new();
    let late = Collected::new();
    let late_tag = OutputTag::<(u64, i64, u64)>::new("late");
    let job = JobGraph::new("windows-lateness");
    // Key 1 at timestamps 0..100, a pause long enough for the watermark
    // (99 - 1) to reach the windows, then a record at 85 (its window
    // [80, 90) fired but is within the lateness) and one at 5 (past it).
    let windows = job
        .source("late", |_: &SubtaskInfo| {
            EarlyThenLate::new(
                (0..100).map(|t| (1, t, 1)).collect(),
                Duration::from_millis(500),
                vec![(1, 85, 10), (1, 5, 100)],
            )
        })
        .parallelism(1)
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &(u64, i64, u64)| r.0)
        .window(TumblingEventTimeWindows::of(
            Duration::from_millis(10),
            |r: &(u64, i64, u64)| r.1,
        ))
        .allowed_lateness(Duration::from_millis(50))
        .side_output_late_data(&late_tag)
        .aggregate("count-sum", CountSum);
    // The late records are a stream: here through a map and its own sink.
    windows
        .get_side_output(&late_tag)
        .map("late-value", |r: (u64, i64, u64)| (r.0, r.1, r.2 * 2))
        .sink("late-records", collect_into(&late));
    windows.sink("collect", collect_into(&collected));
    let mut options = options(2);
    options.auto_watermark_interval = Duration::from_millis(5);
    run_ok(job, &options);

    let got = collected.take_all();
    let window = |start: i64| TimeWindow::new(start, start + 10);
    let mut want: Vec<_> = (0..10).map(|w| (1, window(w * 10), (10, 10))).collect();
    // [80, 90) fires on time, then again with the record at 85; [90, 100)
    // fires at the end of the input (its firing comes after the late one).
    want.insert(9, (1, window(80), (11, 20)));
    assert_eq!(got, want, "late firing of [80, 90) in its place");
    assert_eq!(late.take_all(), vec![(1, 5, 200)]);
}
