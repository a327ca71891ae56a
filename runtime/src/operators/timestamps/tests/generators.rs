//! Watermark generators in the timestamps link: per-record watermarks go
//! out right behind their records, in runs as one by one; periodic
//! emission happens inside long runs; monotonous timestamps, a zero
//! interval, idleness around any generator; and, for any sequence of
//! records, emissions and clock ticks, watermarks never go backwards and
//! statuses alternate.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use weir_net::WatermarkStatus::{Active, Idle};

use super::log::{ts, Event, LogTail, Punctuated, Rec, ACTIVE, IDLE, PLAIN};
use crate::chain::control::{ChainControl, Collector};
use crate::operators::timestamps::generator::{
    BoundedOutOfOrderness, WatermarkGenerator, WatermarksWithIdleness,
};
use crate::operators::timestamps::{TimestampsOp, WatermarkStrategy};

/// An interval no test reaches: periodic emission only when a test flushes
/// past it.
const NEVER: Duration = Duration::from_secs(3600);

type Link<G> = TimestampsOp<Rec, fn(&Rec) -> i64, G, LogTail>;

fn link<G: WatermarkGenerator<Rec>>(generator: G, interval: Duration) -> Link<G> {
    TimestampsOp::new(
        ts as fn(&Rec) -> i64,
        generator,
        interval,
        LogTail::default(),
    )
}

use Event::{Record as R, Status as S, Watermark as W};

/// Records with markers, one lower than the watermark before it.
fn marked() -> Vec<Rec> {
    vec![
        (5, PLAIN),
        (3, PLAIN),
        (4, 4),
        (9, PLAIN),
        (7, 8),
        (10, PLAIN),
        (12, 2),
        (13, 13),
        (14, PLAIN),
    ]
}

fn marked_log() -> Vec<Event> {
    vec![
        R(5),
        R(3),
        R(4),
        W(4),
        R(9),
        R(7),
        W(8),
        R(10),
        R(12),
        R(13),
        W(13),
        R(14),
    ]
}

#[test]
fn punctuated_watermarks_go_out_right_behind_their_marker_records() {
    // One by one.
    let mut one = link(Punctuated::default(), NEVER);
    for r in marked() {
        one.collect(r);
    }
    assert_eq!(one.out.events, marked_log());
    // In one run: the run stops after each marker and goes on.
    let mut run = link(Punctuated::default(), NEVER);
    let records = marked();
    assert_eq!(
        run.collect_many(&mut records.iter().copied(), 100),
        records.len()
    );
    assert_eq!(run.out.events, marked_log());
    // In runs of any limit.
    for limit in 1..=4 {
        let mut runs = link(Punctuated::default(), NEVER);
        let mut it = marked().into_iter();
        let mut taken = 0;
        loop {
            let n = runs.collect_many(&mut it, limit);
            assert!(n <= limit);
            taken += n;
            if n < limit {
                break;
            }
        }
        assert_eq!(taken, marked().len());
        assert_eq!(runs.out.events, marked_log(), "runs of {limit}");
    }
    // The lower marker (2) was ignored: the current watermark is 13.
    assert_eq!(run.current_watermark(), 13);
}

#[test]
fn a_run_stops_where_the_chain_becomes_unavailable_with_its_watermark_out() {
    let mut op = link(Punctuated::default(), NEVER);
    let records = [(1, PLAIN), (2, 2), (3, PLAIN)];
    // The chain takes one record: the marker's watermark waits for its
    // record, which has not been taken.
    op.out.available = true;
    let mut it = records.iter().copied();
    assert_eq!(op.collect_many(&mut it, 1), 1);
    op.out.available = true;
    assert_eq!(op.collect_many(&mut it, 1), 1);
    assert_eq!(op.out.events, vec![R(1), R(2), W(2)]);
    op.out.available = false;
    assert_eq!(op.collect_many(&mut it, 10), 0);
    assert!(!op.is_available());
    op.out.available = true;
    assert_eq!(op.collect_many(&mut it, 10), 1);
    assert_eq!(op.out.events, vec![R(1), R(2), W(2), R(3)]);
}

/// An iterator of records `(i, PLAIN)` that sleeps 1 ms every 128 records.
fn slow_records(n: i64) -> impl Iterator<Item = Rec> {
    (0..n).map(|i| {
        if i % 128 == 127 {
            std::thread::sleep(Duration::from_millis(1));
        }
        (i, PLAIN)
    })
}

/// Checks that watermarks came between the records of one run, each
/// below the records before it.
fn assert_emitted_inside(events: &[Event], records: usize) {
    let mut seen = 0;
    let mut max = i64::MIN;
    let mut inside = 0;
    for e in events {
        match *e {
            R(t) => {
                seen += 1;
                max = max.max(t);
            }
            W(w) => {
                assert!(w < max, "watermark {w} after records up to {max}");
                if seen < records {
                    inside += 1;
                }
            }
            S(_) => {}
        }
    }
    assert!(
        inside >= 2,
        "periodic watermarks inside the run: {:?}",
        events
            .iter()
            .filter(|e| matches!(e, W(_)))
            .collect::<Vec<_>>()
    );
}

#[test]
fn periodic_emission_happens_inside_a_long_run() {
    let mut op = link(
        BoundedOutOfOrderness::new(Duration::ZERO),
        Duration::from_millis(1),
    );
    op.flush(Instant::now());
    let n = 4096;
    // One run of 4,096 records taking at least 32 ms: the link looks at
    // the clock every 1,024 records and emits each time.
    assert_eq!(
        op.collect_many(&mut slow_records(n), n as usize),
        n as usize
    );
    assert_emitted_inside(&op.out.events, n as usize);
}

#[test]
fn periodic_emission_happens_between_records_collected_one_by_one() {
    let mut op = link(
        BoundedOutOfOrderness::new(Duration::ZERO),
        Duration::from_millis(1),
    );
    op.flush(Instant::now());
    let n = 4096;
    for r in slow_records(n) {
        op.collect(r);
    }
    assert_emitted_inside(&op.out.events, n as usize);
}

#[test]
fn monotonous_timestamps_give_the_largest_timestamp_minus_one() {
    let s = WatermarkStrategy::for_monotonous_timestamps();
    assert_eq!(s.out_of_orderness(), Duration::ZERO);
    let mut op = link(*s.generator(), Duration::from_millis(10));
    let t0 = Instant::now();
    op.flush(t0);
    for t in [3, 4, 4, 9] {
        op.collect((t, PLAIN));
    }
    op.flush(t0 + Duration::from_millis(10));
    op.collect((12, PLAIN));
    op.flush(t0 + Duration::from_millis(20));
    op.flush(t0 + Duration::from_millis(30));
    op.end_input();
    assert_eq!(op.out.watermarks(), vec![8, 11, i64::MAX]);
}

#[test]
fn a_zero_interval_disables_periodic_emission_but_not_per_record_watermarks() {
    let mut periodic = link(BoundedOutOfOrderness::new(Duration::ZERO), Duration::ZERO);
    let mut punctuated = link(
        Punctuated {
            periodic: Some(100),
        },
        Duration::ZERO,
    );
    let t0 = Instant::now();
    for k in 0..5 {
        periodic.flush(t0 + Duration::from_secs(k));
        punctuated.flush(t0 + Duration::from_secs(k));
        periodic.collect((k as i64, PLAIN));
        punctuated.collect((k as i64, k as i64));
    }
    assert!(periodic.flush(t0).next_deadline.is_none(), "no wake-up");
    assert_eq!(periodic.out.watermarks(), Vec::<i64>::new());
    assert_eq!(punctuated.out.watermarks(), vec![0, 1, 2, 3, 4]);
    periodic.end_input();
    assert_eq!(periodic.out.watermarks(), vec![i64::MAX]);
}

#[test]
fn idleness_wraps_any_generator() {
    let s = WatermarkStrategy::for_generator(|_: &crate::core::subtask::SubtaskInfo| {
        Punctuated::default()
    })
    .with_idleness(Duration::from_millis(20));
    assert_eq!(s.idleness(), Duration::from_millis(20));
    let mut op = link(
        WatermarksWithIdleness::new(Punctuated::default(), s.idleness()),
        Duration::from_millis(10),
    );
    let t0 = op.started;
    let at = |ms| t0 + Duration::from_millis(ms);
    op.flush(at(0));
    op.collect((1, 1));
    op.flush(at(10)); // saw a record
    op.flush(at(20));
    assert!(!op.is_idle(), "10 ms without records");
    op.flush(at(30));
    assert!(op.is_idle(), "20 ms without records");
    op.flush(at(40));
    // Its next record makes it active before the record, and its marker
    // goes out behind it.
    op.collect((5, 5));
    assert_eq!(
        op.out.events,
        vec![R(1), W(1), S(Idle), S(Active), R(5), W(5)]
    );
}

#[test]
fn a_generator_marks_the_stream_idle_and_a_record_or_a_watermark_active() {
    let mut op = link(Punctuated::default(), NEVER);
    let records = [(1, IDLE), (2, PLAIN), (3, IDLE), (4, ACTIVE), (5, IDLE)];
    op.collect_many(&mut records.iter().copied(), 10);
    op.collect((6, 6));
    op.collect((7, IDLE));
    op.end_input();
    assert_eq!(
        op.out.events,
        vec![
            R(1),
            S(Idle),
            S(Active),
            R(2),
            R(3),
            S(Idle),
            // The record marks it active, its generator too: no change.
            S(Active),
            R(4),
            R(5),
            S(Idle),
            S(Active),
            R(6),
            W(6),
            R(7),
            S(Idle),
            // The final watermark marks it active first.
            S(Active),
            W(i64::MAX),
        ]
    );
}

/// What a test run does: a record (timestamp, action), a run of records
/// handed over at once with a limit, or processing time passing.
#[derive(Clone, Debug)]
enum Step {
    One(Rec),
    Run(Vec<Rec>, usize),
    Tick(u64),
}

fn record() -> impl Strategy<Value = Rec> {
    (
        -50i64..200,
        prop_oneof![
            6 => Just(PLAIN),
            1 => Just(IDLE),
            1 => Just(ACTIVE),
            3 => -60i64..220,
        ],
    )
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            3 => record().prop_map(Step::One),
            2 => (prop::collection::vec(record(), 0..30), 0usize..40)
                .prop_map(|(rs, limit)| Step::Run(rs, limit)),
            1 => (0u64..30).prop_map(Step::Tick),
        ],
        0..60,
    )
}

/// Plays `steps` on a link whose generator is the punctuated one around
/// a bounded one (periodic watermarks too), with idleness; returns its log.
/// With `one_by_one`, runs are collected record by record.
fn play(steps: &[Step], one_by_one: bool) -> Vec<Event> {
    #[derive(Clone, Copy)]
    struct Both(Punctuated, BoundedOutOfOrderness);
    impl WatermarkGenerator<Rec> for Both {
        fn on_event(
            &mut self,
            r: &Rec,
            t: i64,
            out: &mut crate::operators::timestamps::WatermarkOutput,
        ) {
            self.0.on_event(r, t, out);
            WatermarkGenerator::<Rec>::on_event(&mut self.1, r, t, out);
        }
        fn on_periodic_emit(&mut self, out: &mut crate::operators::timestamps::WatermarkOutput) {
            WatermarkGenerator::<Rec>::on_periodic_emit(&mut self.1, out);
        }
    }
    let generator = WatermarksWithIdleness::new(
        Both(
            Punctuated::default(),
            BoundedOutOfOrderness::new(Duration::from_millis(5)),
        ),
        Duration::from_millis(15),
    );
    let mut op = link(generator, Duration::from_millis(10));
    let mut now = op.started;
    op.flush(now);
    for step in steps {
        match step {
            Step::One(r) => op.collect(*r),
            Step::Run(rs, limit) => {
                let mut it = rs.iter().copied();
                if one_by_one {
                    for r in it.by_ref().take(*limit) {
                        op.collect(r);
                    }
                } else {
                    let n = op.collect_many(&mut it, *limit);
                    assert_eq!(n, (*limit).min(rs.len()), "an available chain takes all");
                }
            }
            Step::Tick(ms) => {
                now += Duration::from_millis(*ms);
                op.flush(now);
            }
        }
    }
    op.end_input();
    op.out.events
}

proptest! {
    /// Whatever the records, their markers (lower ones too), idle and
    /// active marks and the passing of time: watermarks only go up, end at
    /// `i64::MAX`, statuses alternate starting with idle, no watermark and
    /// no record passes while the stream is idle, and runs give the same
    /// log as records one by one.
    #[test]
    fn watermarks_never_go_backwards(steps in steps()) {
        let events = play(&steps, false);
        prop_assert_eq!(&events, &play(&steps, true));
        let mut last = i64::MIN;
        let mut idle = false;
        for e in &events {
            match *e {
                W(w) => {
                    prop_assert!(w > last, "watermark {} after {}", w, last);
                    prop_assert!(!idle, "a watermark while idle");
                    last = w;
                }
                S(Idle) => {
                    prop_assert!(!idle, "idle twice");
                    idle = true;
                }
                S(Active) => {
                    prop_assert!(idle, "active twice");
                    idle = false;
                }
                R(_) => prop_assert!(!idle, "a record while idle"),
            }
        }
        prop_assert_eq!(events.last(), Some(&W(i64::MAX)));
    }
}
