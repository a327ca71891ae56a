//! Event time end to end: two source subtasks generate bounded
//! out-of-orderness watermarks; one emits a few records and then nothing, so
//! it goes idle; the keyed function downstream must see watermarks that only
//! go up, never pass what the records emitted so far allow, advance although
//! one input is idle, and end with `i64::MAX`; so must a second keyed
//! function behind another exchange.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir_runtime::{
    Collector, JobGraph, KeyContext, KeyedProcessFunction, Source, SourcePoll, SubtaskInfo,
    WatermarkStrategy,
};

use crate::{collect_into, options, run_ok, Collected};

/// Records of the busy subtask.
const BUSY_RECORDS: i64 = 300;
/// Out-of-orderness bound of the strategy.
const BOUND_MS: i64 = 20;
/// The quiet subtask's largest timestamp.
const QUIET_MAX_TS: i64 = 3;

/// Subtask 0 emits `(key, timestamp)` records one per millisecond with
/// timestamps out of order by up to 18ms; subtask 1 emits four records with
/// timestamps 0 to 3 and then nothing until subtask 0 has finished.
struct TimedSource {
    busy: bool,
    next: i64,
    due: Instant,
    busy_done: Arc<AtomicBool>,
    max_emitted: Arc<AtomicI64>,
}

fn busy_timestamp(i: i64) -> i64 {
    10 * i - (i % 4) * 6
}

impl Source for TimedSource {
    type Out = (u64, i64);

    fn poll_next<C: Collector<(u64, i64)>>(&mut self, out: &mut C, _budget: usize) -> SourcePoll {
        if self.busy {
            if self.next == BUSY_RECORDS {
                self.busy_done.store(true, Ordering::SeqCst);
                return SourcePoll::Finished;
            }
            let now = Instant::now();
            if now < self.due {
                return SourcePoll::Idle {
                    until: Some(self.due),
                };
            }
            if !out.is_available() {
                return SourcePoll::Emitted(0);
            }
            let ts = busy_timestamp(self.next);
            self.max_emitted.fetch_max(ts, Ordering::SeqCst);
            out.collect((self.next as u64, ts));
            self.next += 1;
            self.due = now + Duration::from_millis(1);
            return SourcePoll::Emitted(1);
        }
        if self.next <= QUIET_MAX_TS {
            if !out.is_available() {
                return SourcePoll::Emitted(0);
            }
            self.max_emitted.fetch_max(self.next, Ordering::SeqCst);
            out.collect((1_000 + self.next as u64, self.next));
            self.next += 1;
            return SourcePoll::Emitted(1);
        }
        if self.busy_done.load(Ordering::SeqCst) {
            return SourcePoll::Finished;
        }
        SourcePoll::Idle {
            until: Some(Instant::now() + Duration::from_millis(2)),
        }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, _position: &[u8]) -> Result<(), String> {
        Err("this test source is not restored".into())
    }
}

/// What a keyed subtask observed: each watermark with the largest
/// timestamp any source had emitted when it arrived.
#[derive(Clone, Copy, Debug)]
struct Observed {
    watermark: i64,
    max_emitted: i64,
}

/// Forwards records and logs every watermark; checks that the context of
/// each record carries the operator's current watermark.
struct WatermarkLog {
    last: i64,
    max_emitted: Arc<AtomicI64>,
    log: Arc<Mutex<Vec<(usize, Observed)>>>,
    subtask: usize,
}

impl KeyedProcessFunction for WatermarkLog {
    type Key = u64;
    type In = (u64, i64);
    type Out = (u64, i64);

    fn process<C: Collector<(u64, i64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        record: (u64, i64),
        out: &mut C,
    ) {
        assert_eq!(
            ctx.current_watermark(),
            self.last,
            "the context's watermark"
        );
        out.collect(record);
    }

    fn on_watermark<C: Collector<(u64, i64)>>(&mut self, watermark: i64, _out: &mut C) {
        self.last = watermark;
        let max_emitted = self.max_emitted.load(Ordering::SeqCst);
        self.log.lock().unwrap().push((
            self.subtask,
            Observed {
                watermark,
                max_emitted,
            },
        ));
    }
}

#[test]
fn watermarks_advance_past_an_idle_source_and_end_at_max() {
    let busy_done = Arc::new(AtomicBool::new(false));
    let max_emitted = Arc::new(AtomicI64::new(i64::MIN));
    let log = Arc::new(Mutex::new(Vec::new()));
    let collected: Arc<Collected<(u64, i64)>> = Collected::new();
    let (done, max_src, max_fn, log_fn) = (
        busy_done.clone(),
        max_emitted.clone(),
        max_emitted.clone(),
        log.clone(),
    );
    let (max_fn2, log_fn2) = (max_emitted.clone(), log.clone());
    let strategy =
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(BOUND_MS as u64))
            .with_timestamp_assigner(|r: &(u64, i64)| r.1)
            .with_idleness(Duration::from_millis(30));
    let job = JobGraph::new("event-time");
    job.source("timed", move |info: &SubtaskInfo| TimedSource {
        busy: info.index == 0,
        next: 0,
        due: Instant::now(),
        busy_done: done.clone(),
        max_emitted: max_src.clone(),
    })
    .parallelism(2)
    .assign_timestamps_and_watermarks(strategy)
    .key_by(|r: &(u64, i64)| r.0)
    .process("log", move |info: &SubtaskInfo| WatermarkLog {
        last: i64::MIN,
        max_emitted: max_fn.clone(),
        log: log_fn.clone(),
        subtask: info.index,
    })
    // A second exchange: the keyed operators' watermarks are re-broadcast.
    .key_by(|r: &(u64, i64)| r.0 / 7)
    .process("log-again", move |info: &SubtaskInfo| WatermarkLog {
        last: i64::MIN,
        max_emitted: max_fn2.clone(),
        log: log_fn2.clone(),
        subtask: 2 + info.index,
    })
    .sink("collect", collect_into(&collected));
    let mut opts = options(2);
    opts.auto_watermark_interval = Duration::from_millis(5);
    run_ok(job, &opts);

    assert_eq!(collected.take_all().len(), BUSY_RECORDS as usize + 4);
    let log = log.lock().unwrap().clone();
    // Subtasks 0 and 1 of the first keyed operator, 2 and 3 of the second.
    for subtask in 0..4 {
        let seen: Vec<Observed> = log
            .iter()
            .filter(|(s, _)| *s == subtask)
            .map(|(_, o)| *o)
            .collect();
        assert!(
            seen.windows(2).all(|w| w[0].watermark < w[1].watermark),
            "subtask {subtask}: watermarks must only go up: {seen:?}"
        );
        let (last, before_end) = seen.split_last().expect("some watermark");
        assert_eq!(
            last.watermark,
            i64::MAX,
            "subtask {subtask}: final watermark"
        );
        for o in before_end {
            // Flink's bounded out-of-orderness watermark of the records so far.
            let allowed = o.max_emitted - BOUND_MS - 1;
            assert!(
                o.watermark <= allowed,
                "subtask {subtask}: watermark {} ahead of the records emitted (max {})",
                o.watermark,
                o.max_emitted
            );
        }
        // The quiet source alone would hold event time at 3 - 20 - 1; the
        // busy one carries it far beyond while the quiet one is idle.
        let highest = before_end.last().map_or(i64::MIN, |o| o.watermark);
        assert!(
            highest > busy_timestamp(BUSY_RECORDS / 2),
            "subtask {subtask}: event time stuck behind the idle source at {highest} \
             (quiet source's watermark would be {})",
            QUIET_MAX_TS - BOUND_MS - 1
        );
    }
}
