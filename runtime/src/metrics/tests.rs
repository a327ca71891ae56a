//! How a subtask's time splits into busy, backpressured and idle, and
//! the readings and summaries made of it.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::metrics::counters::epoch;
use crate::metrics::counters::ChannelBytes;
use crate::metrics::subtask::SubtaskEntry;
use crate::metrics::subtask::TaskClock;
const MS: u64 = 1_000_000;

fn id() -> SubtaskId {
    SubtaskId {
        stage: "count -> sink".into(),
        index: 1,
        parallelism: 2,
        worker: 1,
    }
}

fn entry(metrics: &SubtaskMetrics) -> SubtaskEntry {
    SubtaskEntry {
        metrics: metrics.clone(),
        inputs: Vec::new(),
        outputs: Vec::new(),
    }
}

#[test]
fn every_instant_counts_in_exactly_one_state() {
    let metrics = SubtaskMetrics::new(id());
    let mut clock = TaskClock::start_at(metrics.clone(), epoch(), 1000 * MS);
    // Idle until its first poll at +5 ms, busy in it until +8 ms, and
    // it ran out of budget: busy until its next poll.
    clock.record(1005 * MS, 1008 * MS, true, TimeState::Busy, false);
    // Next poll at +10 ms stops on a full output at +12 ms.
    clock.record(1010 * MS, 1012 * MS, true, TimeState::BackPressured, false);
    // A poll at +30 ms that moves nothing (1 ms): still backpressured.
    clock.record(1030 * MS, 1031 * MS, false, TimeState::BackPressured, false);
    // At +50 ms it moves records until +60 ms and finds no input.
    clock.record(1050 * MS, 1060 * MS, true, TimeState::Idle, false);
    let snap = entry(&metrics).read(1100 * MS);
    assert_eq!(snap.busy_ns, (3 + 2 + 2 + 10) * MS);
    assert_eq!(snap.backpressured_ns, (18 + 1 + 19) * MS);
    assert_eq!(snap.idle_ns, (5 + 40) * MS);
    assert_eq!(
        snap.busy_ns + snap.backpressured_ns + snap.idle_ns,
        100 * MS,
        "the three add up to the elapsed time"
    );
    let shares = snap.shares_since(None).unwrap();
    assert!((shares.busy - 170.0).abs() < 1e-9, "{shares:?}");
    assert!((shares.backpressured - 380.0).abs() < 1e-9, "{shares:?}");
    assert!((shares.idle - 450.0).abs() < 1e-9, "{shares:?}");
    assert_eq!(shares.level(), BackpressureLevel::Low);
}

#[test]
fn a_finished_subtask_stops_counting_and_intervals_use_deltas() {
    let metrics = SubtaskMetrics::new(id());
    let e = entry(&metrics);
    assert_eq!(
        e.read(10 * MS).started_ns,
        None,
        "not started before its worker starts it"
    );
    assert!(e.read(10 * MS).shares_since(None).is_none());
    let mut clock = TaskClock::start_at(metrics.clone(), epoch(), 0);
    clock.record(0, 400 * MS, true, TimeState::BackPressured, false);
    let first = e.read(500 * MS);
    assert_eq!(first.busy_ns, 400 * MS);
    assert_eq!(first.backpressured_ns, 100 * MS);
    // The next 500 ms: backpressured until a poll at 800 ms that
    // finishes the subtask at 900 ms.
    clock.record(800 * MS, 900 * MS, true, TimeState::Idle, true);
    let second = e.read(1000 * MS);
    assert_eq!(second.ended_ns, Some(900 * MS));
    assert_eq!(second.idle_ns, 0, "no time counts after the end");
    let shares = second.shares_since(Some(&first)).unwrap();
    // 400 ms over 300 ms backpressured and 100 ms busy.
    assert!((shares.backpressured - 750.0).abs() < 1e-9, "{shares:?}");
    assert!((shares.busy - 250.0).abs() < 1e-9, "{shares:?}");
    assert!((shares.total() - 1000.0).abs() < 1e-9);
    let later = e.read(2000 * MS);
    assert!(later.shares_since(Some(&second)).is_none());
    assert_eq!(later.running_time(), Duration::from_millis(900));
}

#[test]
fn levels_follow_flinks_thresholds() {
    assert_eq!(BackpressureLevel::of(0.0), BackpressureLevel::Ok);
    assert_eq!(BackpressureLevel::of(0.10), BackpressureLevel::Ok);
    assert_eq!(BackpressureLevel::of(0.11), BackpressureLevel::Low);
    assert_eq!(BackpressureLevel::of(0.50), BackpressureLevel::Low);
    assert_eq!(BackpressureLevel::of(0.51), BackpressureLevel::High);
    assert_eq!(BackpressureLevel::of(1.0), BackpressureLevel::High);
    let s = TimeShares {
        busy: 811.6,
        backpressured: 0.0,
        idle: 188.4,
    };
    assert_eq!(s.compact(), "busy 812 bp 0 idle 188 OK");
}

#[test]
fn channel_bytes_publish_in_flight_as_shipped_minus_taken() {
    let counters = Arc::new(ChannelCounters::default());
    let mut sender = ChannelBytes::new(vec![counters.clone()]);
    let mut receiver = ChannelBytes::new(vec![counters.clone()]);
    sender.add(0, 3000);
    assert_eq!(counters.in_flight(), 0, "nothing before a publication");
    sender.publish(true);
    receiver.add(0, 1000);
    receiver.publish(false);
    assert_eq!((counters.shipped(), counters.taken()), (3000, 1000));
    assert_eq!(counters.in_flight(), 2000);
    receiver.add(0, 2500);
    receiver.publish(false);
    assert_eq!(
        counters.in_flight(),
        0,
        "a reading that lags never goes negative"
    );
}

#[test]
fn concurrent_readers_see_consistent_times() {
    let metrics = SubtaskMetrics::new(id());
    let e = entry(&metrics);
    let writer = {
        let metrics = metrics.clone();
        std::thread::spawn(move || {
            let mut clock = TaskClock::start_at(metrics, epoch(), 0);
            for i in 1..=200_000u64 {
                let state = match i % 3 {
                    0 => TimeState::Busy,
                    1 => TimeState::BackPressured,
                    _ => TimeState::Idle,
                };
                clock.record(i * 10, i * 10 + 5, i % 2 == 0, state, false);
            }
        })
    };
    let mut last = 0;
    while !writer.is_finished() {
        let t = e.metrics.read_time();
        let sum: u64 = t.totals.iter().sum();
        if t.started.is_some() {
            // Published totals always cover exactly [start, since].
            assert_eq!(sum, t.since, "{t:?}");
            assert!(t.since >= last);
            last = t.since;
        }
    }
    writer.join().unwrap();
}

/// Records and bytes per second are counted over the time the subtask
/// ran between two readings, as its time shares are.
#[test]
fn rates_are_deltas_over_the_running_time() {
    let at = |at_ns: u64, records: u64, ended_ns: Option<u64>| SubtaskSnapshot {
        id: id(),
        at_ns,
        started_ns: Some(1000 * MS),
        ended_ns,
        busy_ns: 0,
        backpressured_ns: 0,
        idle_ns: 0,
        records_in: records,
        records_out: records / 2,
        source_records: 0,
        bytes_in: records * 8,
        bytes_out: records * 4,
        in_flight_bytes: Vec::new(),
        input_watermark: None,
    };
    // 2,000 records in its first 500 ms: 4,000/s.
    let first = at(1500 * MS, 2000, None);
    let r = first.rates_since(None).unwrap();
    assert_eq!(
        (r.records_in, r.records_out, r.bytes_in, r.bytes_out),
        (4000.0, 2000.0, 32000.0, 16000.0)
    );
    // 1,000 more until it ended 250 ms later, read long after: 4,000/s
    // over the 250 ms it ran, not over the 1.5 s between the readings.
    let second = at(3000 * MS, 3000, Some(1750 * MS));
    let r = second.rates_since(Some(&first)).unwrap();
    assert!((r.records_in - 4000.0).abs() < 1e-9, "{r:?}");
    assert!(at(4000 * MS, 3000, Some(1750 * MS))
        .rates_since(Some(&second))
        .is_none());
    let not_started = SubtaskSnapshot {
        started_ns: None,
        ..at(10 * MS, 0, None)
    };
    assert!(not_started.rates_since(None).is_none());
}
