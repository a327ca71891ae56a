//! Records carry their event timestamps through the pipeline (Flink's
//! `StreamRecord` timestamp): given once by the timestamps link, they
//! survive maps that drop the field they came from, key_by exchanges,
//! rebalances and unions, and window assigners read them
//! (`record_timestamp`); a window's result has its last millisecond as
//! timestamp, an event-time timer's output the timer's time; streams
//! without event time have none.

use std::collections::BTreeMap;
use std::time::Duration;

use weir_runtime::{
    record_timestamp, Collector, JobGraph, KeyContext, KeyedProcessFunction, KeyedStates,
    KeyedTimerService, ProcessContext, ProcessFunction, SequenceSource, Sink, SubtaskInfo,
    TimeWindow, TumblingEventTimeWindows, WatermarkStrategy,
};

use crate::{collect_into, ms, options, run_ok, sorted, Collected};

const N: u64 = 20_000;
const KEYS: u64 = 11;
const SIZE: i64 = 40;

/// Record `i`: key, timestamp up to 15 ms out of order, value.
fn record(i: u64) -> (u64, i64, u64) {
    let jitter = (crate::splitmix64(i) % 15) as i64;
    (i % KEYS, (i / 8) as i64 + 15 - jitter, i)
}

fn strategy() -> WatermarkStrategy<impl Fn(&(u64, i64, u64)) -> i64 + Clone + Send + Sync> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(20))
        .with_timestamp_assigner(|r: &(u64, i64, u64)| r.1)
}

/// `(key, window start) -> (count, sum)` by brute force, from the
/// records' own timestamps.
fn reference() -> Vec<(u64, TimeWindow, (u64, u64))> {
    let mut w: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
    for i in 0..N {
        let (k, ts, v) = record(i);
        let e = w.entry((k, ts - ts.rem_euclid(SIZE))).or_default();
        e.0 += 1;
        e.1 += v;
    }
    w.into_iter()
        .map(|((k, s), a)| (k, TimeWindow::new(s, s + SIZE), a))
        .collect()
}

/// Count and sum of `(key, value)` pairs.
#[derive(Clone)]
struct CountSum;

impl weir_runtime::AggregateFunction for CountSum {
    type In = (u64, u64);
    type Acc = (u64, u64);
    type Out = (u64, u64);
    fn create_accumulator(&self) -> (u64, u64) {
        (0, 0)
    }
    fn add(&self, r: (u64, u64), (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + r.1)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

#[test]
fn windows_read_the_timestamps_records_carried_across_maps_exchanges_and_a_union() {
    for route in ["key_by", "rebalance", "union"] {
        let got = Collected::new();
        let job = JobGraph::new(format!("record-timestamps-{route}"));
        let stamped = job
            .source("events", |info: &SubtaskInfo| {
                SequenceSource::new(info, N, record)
            })
            .assign_timestamps_and_watermarks(strategy())
            // The timestamp field is gone from here on: only the record's
            // own timestamp says when it happened.
            .map("drop-time", |r: (u64, i64, u64)| (r.0, r.2));
        let key = |p: &(u64, u64)| p.0;
        let pairs = match route {
            "key_by" => stamped.key_by(key),
            "rebalance" => stamped
                .rebalance()
                .filter("all", |_: &(u64, u64)| true)
                .key_by(key),
            _ => {
                // The same records split in two, through a union.
                let shared = stamped.share();
                let evens = shared
                    .branch()
                    .filter("evens", |p: &(u64, u64)| p.1.is_multiple_of(2));
                let odds = shared
                    .branch()
                    .filter("odds", |p: &(u64, u64)| p.1 % 2 == 1);
                evens.union(odds).key_by(key)
            }
        };
        pairs
            .window(TumblingEventTimeWindows::of(ms(SIZE), record_timestamp))
            .aggregate("count-sum", CountSum)
            .sink("collect", collect_into(&got));
        run_ok(job, &options(2));
        assert_eq!(sorted(got.take_all()), reference(), "through {route}");
    }
}

/// Emits each record's `(key, timestamp)` as its context gives it, and an
/// event-time timer's `(key, timer time)` for timers set 5 ms after each
/// window result.
#[derive(Default)]
struct SeeTimestamps {
    timers: Option<KeyedTimerService<u64>>,
}

impl KeyedProcessFunction for SeeTimestamps {
    type Key = u64;
    type In = (u64, TimeWindow, (u64, u64));
    type Out = (u64, i64, Option<i64>);
    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (k, window, _): Self::In,
        out: &mut C,
    ) {
        out.collect((k, window.start, ctx.timestamp()));
        let at = ctx.timestamp().expect("a window result has a timestamp") + 5;
        self.timers
            .get_or_insert_with(KeyedTimerService::new)
            .register_event_time_timer(ctx, at);
    }
    fn timer_service(&mut self) -> Option<&mut dyn weir_runtime::TimerQueues<u64>> {
        Some(self.timers.get_or_insert_with(KeyedTimerService::new))
    }
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<u64>,
        _domain: weir_runtime::TimeDomain,
        out: &mut C,
    ) {
        out.collect((*ctx.key(), -timestamp, ctx.timestamp()));
    }
    fn visit_state(&mut self, _states: &mut KeyedStates<'_>) {}
}

#[test]
fn a_window_result_has_its_last_millisecond_and_a_timer_output_its_time() {
    let got = Collected::new();
    let job = JobGraph::new("result-timestamps");
    job.source("events", |info: &SubtaskInfo| {
        SequenceSource::new(info, N, record)
    })
    .assign_timestamps_and_watermarks(strategy())
    .map("drop-time", |r: (u64, i64, u64)| (r.0, r.2))
    .key_by(|p: &(u64, u64)| p.0)
    .window(TumblingEventTimeWindows::of(ms(SIZE), record_timestamp))
    .aggregate("count-sum", CountSum)
    .key_by(|r: &(u64, TimeWindow, (u64, u64))| r.0)
    .process("see", |_: &SubtaskInfo| SeeTimestamps::default())
    .sink("collect", collect_into(&got));
    run_ok(job, &options(2));
    let got = got.take_all();
    let results: Vec<_> = got.iter().filter(|r| r.1 >= 0).collect();
    assert_eq!(results.len(), reference().len());
    for (_, start, ts) in &results {
        assert_eq!(
            *ts,
            Some(start + SIZE - 1),
            "window [{start}, +{SIZE})'s result"
        );
    }
    // One timer per (key, window) at end - 1 + 5, firing with that time.
    let timers: Vec<_> = got.iter().filter(|r| r.1 < 0).collect();
    assert_eq!(timers.len(), results.len());
    for (_, neg, ts) in timers {
        assert_eq!(*ts, Some(-neg), "an event-time timer's output");
    }
}

/// Emits the timestamp its context reports.
struct Report;

impl ProcessFunction for Report {
    type In = u64;
    type Out = Option<i64>;
    fn process<C: Collector<Option<i64>>>(&mut self, ctx: &ProcessContext, _: u64, out: &mut C) {
        out.collect(ctx.timestamp());
    }
}

#[test]
fn records_of_a_stream_without_event_time_have_no_timestamp() {
    let got = Collected::new();
    let job = JobGraph::new("no-timestamps");
    // A stream with event time runs on the same workers first, so a stale
    // timestamp would show.
    job.source("timed", |info: &SubtaskInfo| {
        SequenceSource::new(info, 1_000, record)
    })
    .assign_timestamps_and_watermarks(strategy())
    .sink("drop", |_: &SubtaskInfo| Discard);
    job.source("untimed", |info: &SubtaskInfo| {
        SequenceSource::new(info, 1_000, |i| i)
    })
    .rebalance()
    .process("report", |_: &SubtaskInfo| Report)
    .sink("collect", collect_into(&got));
    run_ok(job, &options(2));
    let got = got.take_all();
    assert_eq!(got.len(), 1_000);
    assert!(
        got.iter().all(Option::is_none),
        "{:?}",
        got.iter().find(|t| t.is_some())
    );
}

/// Drops what it receives.
struct Discard;

impl Sink for Discard {
    type In = (u64, i64, u64);
    fn invoke(&mut self, _: (u64, i64, u64)) {}
}
