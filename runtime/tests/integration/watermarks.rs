//! Watermark generators and alignment end to end.
//!
//! - A punctuated generator (watermarks emitted on marker records) fires
//!   tumbling windows exactly at the markers: the window results, their
//!   late firings and the late-data side output equal a single-threaded
//!   computation of Flink's semantics over the same out-of-order input,
//!   whatever the periodic interval.
//! - Watermark alignment: a source whose event time runs 50 times faster
//!   than another's, both feeding an interval join, never leads the slow
//!   one's watermark by more than the allowed drift plus one of its own
//!   steps, and the join equals a nested loop.
//! - An idle member of an alignment group holds nobody back.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use weir_runtime::{
    AggregateFunction, Collector, JobGraph, JoinContext, Offset, OutputTag, ProcessJoinFunction,
    Source, SourcePoll, SubtaskInfo, TimeWindow, TumblingEventTimeWindows, WatermarkGenerator,
    WatermarkOutput, WatermarkStrategy,
};

use crate::{collect_into, ms, options, run_ok, sorted, splitmix64, Collected};

/// `(key, timestamp, value, marker)`: a marker other than [`NO_MARK`] is
/// the watermark the record announces.
type Rec = (u64, i64, u64, i64);

const NO_MARK: i64 = i64::MIN;

/// Emits `records` in order, at most the budget per poll, as one run
/// (`collect_many`).
struct ListSource<T> {
    records: std::vec::IntoIter<T>,
}

impl<T: 'static> Source for ListSource<T> {
    type Out = T;

    fn poll_next<C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.records.len() == 0 {
            return SourcePoll::Finished;
        }
        SourcePoll::Emitted(out.collect_many(&mut self.records, budget))
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn restore_position(&mut self, _position: &[u8]) -> Result<(), String> {
        Err("not restored in these tests".into())
    }
}

/// Emits each marker record's marker: per-record watermarks.
struct Markers;

impl WatermarkGenerator<Rec> for Markers {
    fn on_event(&mut self, record: &Rec, _timestamp: i64, output: &mut WatermarkOutput) {
        if record.3 != NO_MARK {
            output.emit_watermark(record.3);
        }
    }

    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

const KEYS: u64 = 5;
const SIZE: i64 = 10;
const LATENESS: i64 = 8;

/// Timestamps up to 40 ms out of order; every 37th record a marker 15 ms
/// behind the largest timestamp so far, so that records after it are on
/// time, late but within the lateness, or dropped.
fn input(n: u64) -> Vec<Rec> {
    let mut max = i64::MIN;
    (0..n)
        .map(|i| {
            let ts = (i / 3) as i64 + 40 - (splitmix64(i ^ 0x77) % 41) as i64;
            max = max.max(ts);
            let mark = if i % 37 == 36 { max - 15 } else { NO_MARK };
            (splitmix64(i) % KEYS, ts, i, mark)
        })
        .collect()
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
    fn add(&self, r: Rec, (c, s): (u64, u64)) -> (u64, u64) {
        (c + 1, s + r.2)
    }
    fn get_result(&self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// A window operator's output: `(key, window start, (count, sum))`.
type Firing = (u64, TimeWindow, (u64, u64));

/// Per key: each firing `(window start, (count, sum))` in order; and the
/// late records, in order.
type PerKey = BTreeMap<u64, (Vec<(i64, (u64, u64))>, Vec<Rec>)>;

/// Flink's tumbling event-time windows with allowed lateness, computed
/// record by record in one thread: the watermark moves at each marker.
fn reference(records: &[Rec]) -> PerKey {
    let mut out = PerKey::new();
    // (key, start) -> (count, sum, fired)
    let mut windows: BTreeMap<(u64, i64), (u64, u64, bool)> = BTreeMap::new();
    let mut watermark = i64::MIN;
    let fire =
        |windows: &mut BTreeMap<(u64, i64), (u64, u64, bool)>, out: &mut PerKey, watermark: i64| {
            // Per key in start order (the order per key is what is compared).
            for (&(key, start), w) in windows.iter_mut() {
                if !w.2 && start + SIZE - 1 <= watermark {
                    w.2 = true;
                    out.entry(key).or_default().0.push((start, (w.0, w.1)));
                }
            }
            windows.retain(|&(_, start), _| start + SIZE - 1 + LATENESS > watermark);
        };
    for &r in records {
        let (key, ts) = (r.0, r.1);
        let start = ts - ts.rem_euclid(SIZE);
        if start + SIZE - 1 + LATENESS <= watermark {
            out.entry(key).or_default().1.push(r);
        } else {
            let w = windows.entry((key, start)).or_insert((0, 0, false));
            w.0 += 1;
            w.1 += r.2;
            if start + SIZE - 1 <= watermark {
                // On time for a window the watermark passed: it fires (again)
                // at once.
                w.2 = true;
                out.entry(key).or_default().0.push((start, (w.0, w.1)));
            }
        }
        if r.3 > watermark {
            watermark = r.3;
            fire(&mut windows, &mut out, watermark);
        }
    }
    fire(&mut windows, &mut out, i64::MAX);
    out
}

#[test]
fn punctuated_watermarks_fire_windows_at_their_markers_as_a_single_threaded_run() {
    let records = input(6_000);
    let want = reference(&records);
    let late_firings = want
        .values()
        .flat_map(|(f, _)| f.windows(2).filter(|p| p[0].0 >= p[1].0))
        .count();
    let dropped: usize = want.values().map(|(_, l)| l.len()).sum();
    assert!(
        late_firings > 20 && dropped > 20,
        "the input exercises late firings ({late_firings}) and late records ({dropped})"
    );
    for interval in [
        Duration::ZERO,
        Duration::from_millis(1),
        Duration::from_millis(200),
    ] {
        let collected: Arc<Collected<Firing>> = Collected::new();
        let late: Arc<Collected<Rec>> = Collected::new();
        let late_tag = OutputTag::<Rec>::new("late");
        let input = records.clone();
        let job = JobGraph::new("punctuated-windows");
        let windows = job
            .source("records", move |_: &SubtaskInfo| ListSource {
                records: input.clone().into_iter(),
            })
            .parallelism(1)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_generator(|_: &SubtaskInfo| Markers)
                    .with_timestamp_assigner(|r: &Rec| r.1),
            )
            .key_by(|r: &Rec| r.0)
            .window(TumblingEventTimeWindows::of(ms(SIZE), |r: &Rec| r.1))
            .allowed_lateness(ms(LATENESS))
            .side_output_late_data(&late_tag)
            .aggregate("count-sum", CountSum);
        windows
            .get_side_output(&late_tag)
            .sink("late", collect_into(&late));
        windows.sink("collect", collect_into(&collected));
        let mut o = options(2);
        o.auto_watermark_interval = interval;
        run_ok(job, &o);

        let mut got = PerKey::new();
        for (key, window, result) in collected.take_all() {
            assert_eq!(window.end, window.start + SIZE);
            got.entry(key).or_default().0.push((window.start, result));
        }
        for r in late.take_all() {
            got.entry(r.0).or_default().1.push(r);
        }
        assert_same(&got, &want, &format!("interval {interval:?}"));
    }
}

/// Fails naming the first key and position where `got` and `want` differ
/// (the whole maps are too long to read).
fn assert_same(got: &PerKey, want: &PerKey, what: &str) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: keys"
    );
    for (key, (firings, late)) in want {
        let (got_firings, got_late) = &got[key];
        let at = |a: &[(i64, (u64, u64))], b: &[(i64, (u64, u64))]| {
            a.iter().zip(b).position(|(x, y)| x != y)
        };
        if let Some(i) = at(got_firings, firings) {
            panic!(
                "{what}: key {key}, firing {i}: got {:?}, want {:?}",
                &got_firings[i..(i + 3).min(got_firings.len())],
                &firings[i..(i + 3).min(firings.len())]
            );
        }
        assert_eq!(
            got_firings.len(),
            firings.len(),
            "{what}: key {key}, firings"
        );
        assert_eq!(got_late, late, "{what}: key {key}, late records");
    }
}

/// Alignment test records: `(key, timestamp)`.
type Ev = (u64, i64);

/// Which source a logged watermark is from.
const SLOW: u8 = 0;
const FAST: u8 = 1;

/// Every watermark the sources' generators emitted, in order, with when.
type Log = Arc<Mutex<Vec<(u8, i64, Instant)>>>;

/// Emits `timestamp - 1` after every `every`-th record and logs it.
struct Logged {
    source: u8,
    every: u64,
    seen: u64,
    log: Log,
}

impl WatermarkGenerator<Ev> for Logged {
    fn on_event(&mut self, _record: &Ev, timestamp: i64, output: &mut WatermarkOutput) {
        self.seen += 1;
        if self.seen.is_multiple_of(self.every) {
            let at = Instant::now();
            self.log
                .lock()
                .unwrap()
                .push((self.source, timestamp - 1, at));
            output.emit_watermark(timestamp - 1);
        }
    }

    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

/// Records `(i % 7, step * i)` for `i < n`, as fast as the chain takes
/// them. The slow side notes when its first poll has emitted (`first`);
/// the fast side starts only `wait` after that, so that its first
/// alignment update already sees the slow side's watermark.
struct Timeline {
    next: u64,
    n: u64,
    step: i64,
    first: Arc<OnceLock<Instant>>,
    wait: Option<Duration>,
}

impl Source for Timeline {
    type Out = Ev;

    fn poll_next<C: Collector<Ev>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.next == self.n {
            return SourcePoll::Finished;
        }
        if let Some(wait) = self.wait {
            let Some(&first) = self.first.get() else {
                return SourcePoll::Idle {
                    until: Some(Instant::now() + Duration::from_millis(1)),
                };
            };
            if Instant::now() < first + wait {
                return SourcePoll::Idle {
                    until: Some(first + wait),
                };
            }
        }
        let (step, end) = (self.step, self.n);
        let mut records = (self.next..end).map(|i| ((i % 7), step * i as i64));
        let n = out.collect_many(&mut records, budget);
        self.next += n as u64;
        if self.wait.is_none() && n > 0 {
            let _ = self.first.set(Instant::now());
        }
        SourcePoll::Emitted(n)
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn restore_position(&mut self, _position: &[u8]) -> Result<(), String> {
        Err("not restored in these tests".into())
    }
}

/// The pair's timestamps.
struct Pair;

impl ProcessJoinFunction<Ev, Ev> for Pair {
    type Out = (i64, i64);
    fn process_element<C: Collector<(i64, i64)>>(
        &mut self,
        l: Ev,
        r: Ev,
        _ctx: &JoinContext,
        out: &mut C,
    ) {
        out.collect((l.1, r.1));
    }
}

const DRIFT: i64 = 200;
const UPDATE: Duration = Duration::from_millis(2);
const SLOW_RECORDS: u64 = 20_000;
const FAST_STEP: i64 = 50;
const FAST_RECORDS: u64 = 400;

#[test]
fn a_fast_source_never_leads_its_alignment_group_by_more_than_the_drift() {
    let log: Log = Arc::default();
    let first = Arc::new(OnceLock::new());
    let strategy = |source: u8, every: u64, log: &Log| {
        let log = log.clone();
        WatermarkStrategy::for_generator(move |_: &SubtaskInfo| Logged {
            source,
            every,
            seen: 0,
            log: log.clone(),
        })
        .with_timestamp_assigner(|r: &Ev| r.1)
        .with_watermark_alignment("timeline", Duration::from_millis(DRIFT as u64), UPDATE)
    };
    let collected: Arc<Collected<(i64, i64)>> = Collected::new();
    let job = JobGraph::new("aligned-join");
    let first_fast = first.clone();
    let fast = job
        .source("fast", move |_: &SubtaskInfo| Timeline {
            next: 0,
            n: FAST_RECORDS,
            step: FAST_STEP,
            first: first_fast.clone(),
            wait: Some(UPDATE * 3),
        })
        .parallelism(1)
        .assign_timestamps_and_watermarks(strategy(FAST, 1, &log))
        .key_by(|r: &Ev| r.0)
        .detach();
    job.source("slow", move |_: &SubtaskInfo| Timeline {
        next: 0,
        n: SLOW_RECORDS,
        step: 1,
        first: first.clone(),
        wait: None,
    })
    .parallelism(1)
    .assign_timestamps_and_watermarks(strategy(SLOW, 16, &log))
    .key_by(|r: &Ev| r.0)
    .interval_join(fast, |l: &Ev| l.1, |r: &Ev| r.1)
    .between(
        Offset::before(Duration::from_millis(5)),
        Duration::from_millis(5),
    )
    .process("join", |_: &SubtaskInfo| Pair)
    .sink("pairs", collect_into(&collected));
    run_ok(job, &options(2));

    let mut want = Vec::new();
    for j in 0..FAST_RECORDS {
        let t = FAST_STEP * j as i64;
        for i in (t - 5).max(0)..=(t + 5).min(SLOW_RECORDS as i64 - 1) {
            if i as u64 % 7 == j % 7 {
                want.push((i, t));
            }
        }
    }
    assert!(want.len() > 100, "{} pairs", want.len());
    assert_eq!(sorted(collected.take_all()), sorted(want));

    let log = log.lock().unwrap().clone();
    let mut slow = None;
    let mut fast_count = 0;
    for &(source, watermark, _) in &log {
        if source == SLOW {
            slow = Some(watermark);
            continue;
        }
        fast_count += 1;
        let slow = slow.expect("the fast source starts after the slow one's first watermark");
        assert!(
            watermark - slow <= DRIFT + FAST_STEP,
            "the fast source's watermark {watermark} leads the slow one's {slow} by more than \
             the drift {DRIFT} plus one step {FAST_STEP}"
        );
    }
    assert_eq!(fast_count, FAST_RECORDS as usize);
}

#[test]
fn an_idle_member_of_an_alignment_group_holds_nobody_back() {
    const IDLE_AFTER: Duration = Duration::from_millis(20);
    const IDLE_DRIFT: i64 = 100;
    let done = Arc::new(AtomicBool::new(false));
    let first = Arc::new(OnceLock::new());
    let fast_out: Arc<Collected<Ev>> = Collected::new();
    let quiet_out: Arc<Collected<Ev>> = Collected::new();
    let log: Log = Arc::default();
    let strategy = |source: u8, log: &Log| {
        let log = log.clone();
        WatermarkStrategy::for_generator(move |_: &SubtaskInfo| Logged {
            source,
            every: 1,
            seen: 0,
            log: log.clone(),
        })
        .with_timestamp_assigner(|r: &Ev| r.1)
    };
    let job = JobGraph::new("aligned-idle");
    // The fast source: 2,000 records 10 ms apart in event time, from
    // three update intervals after the quiet one's records on.
    let (fast_done, fast_first) = (done.clone(), first.clone());
    job.source("fast", move |_: &SubtaskInfo| NotingEnd {
        inner: Timeline {
            next: 0,
            n: 2_000,
            step: 10,
            first: fast_first.clone(),
            wait: Some(UPDATE * 3),
        },
        done: fast_done.clone(),
    })
    .parallelism(1)
    .assign_timestamps_and_watermarks(strategy(FAST, &log).with_watermark_alignment(
        "g",
        Duration::from_millis(IDLE_DRIFT as u64),
        UPDATE,
    ))
    .sink("fast-sink", collect_into(&fast_out));
    // The quiet source: three records (watermark 1), then nothing until
    // the fast one ended; it goes idle after 20 ms without records.
    job.source("quiet", move |_: &SubtaskInfo| QuietAfter {
        records: vec![(0, 0), (1, 1), (2, 2)],
        first: first.clone(),
        done: done.clone(),
    })
    .parallelism(1)
    .assign_timestamps_and_watermarks(
        strategy(SLOW, &log)
            .with_idleness(IDLE_AFTER)
            .with_watermark_alignment("g", Duration::from_millis(IDLE_DRIFT as u64), UPDATE),
    )
    .sink("quiet-sink", collect_into(&quiet_out));
    let mut o = options(2);
    o.auto_watermark_interval = Duration::from_millis(2);
    run_ok(job, &o);
    assert_eq!(fast_out.take_all().len(), 2_000);
    assert_eq!(quiet_out.take_all().len(), 3);

    // The fast source went past the quiet one's watermark plus the drift
    // (and one step) only once the quiet one was idle.
    let log = log.lock().unwrap().clone();
    let (quiet_watermark, quiet_last) = log
        .iter()
        .rev()
        .find(|e| e.0 == SLOW)
        .map(|e| (e.1, e.2))
        .expect("the quiet source emitted watermarks");
    assert_eq!(quiet_watermark, 1);
    let ahead: Vec<_> = log
        .iter()
        .filter(|e| e.0 == FAST && e.1 > quiet_watermark + IDLE_DRIFT + 10)
        .collect();
    assert!(!ahead.is_empty(), "the fast source went on");
    for (_, watermark, at) in ahead {
        assert!(
            *at >= quiet_last + IDLE_AFTER,
            "watermark {watermark} {:?} after the quiet source's last record, before it went idle",
            at.duration_since(quiet_last)
        );
    }
}

/// A source that notes when the one it wraps finished.
struct NotingEnd<S> {
    inner: S,
    done: Arc<AtomicBool>,
}

impl<S: Source> Source for NotingEnd<S> {
    type Out = S::Out;

    fn poll_next<C: Collector<S::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let poll = self.inner.poll_next(out, budget);
        if poll == SourcePoll::Finished {
            self.done.store(true, Ordering::SeqCst);
        }
        poll
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.inner.snapshot_position()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.inner.restore_position(position)
    }
}

/// Emits its records (noting when in `first`), then nothing until
/// `done`.
struct QuietAfter {
    records: Vec<Ev>,
    first: Arc<OnceLock<Instant>>,
    done: Arc<AtomicBool>,
}

impl Source for QuietAfter {
    type Out = Ev;

    fn poll_next<C: Collector<Ev>>(&mut self, out: &mut C, _budget: usize) -> SourcePoll {
        if !self.records.is_empty() {
            let records = std::mem::take(&mut self.records);
            let mut it = records.into_iter();
            let n = out.collect_many(&mut it, usize::MAX);
            self.records = it.collect();
            if self.records.is_empty() {
                let _ = self.first.set(Instant::now());
            }
            return SourcePoll::Emitted(n);
        }
        if self.done.load(Ordering::SeqCst) {
            return SourcePoll::Finished;
        }
        SourcePoll::Idle {
            until: Some(Instant::now() + Duration::from_millis(2)),
        }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn restore_position(&mut self, _position: &[u8]) -> Result<(), String> {
        Err("not restored in these tests".into())
    }
}
