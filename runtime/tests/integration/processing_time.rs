//! Processing-time windows end to end: they fire on the clock while the
//! job runs, the ones still open at the end of the input fire then, and
//! their contents and timers survive a crash and restore.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    JobGraph, ProcessWindowFunction, ProcessingTimeSessionWindows, SubtaskInfo, TimeWindow,
    TumblingProcessingTimeWindows, WindowCollector, WindowContext,
};

use crate::checkpoint::PacedSource;
use crate::sessions::{
    checkpointed, mix, session_sink, stamp, total, CountSum, Rec, Session, Totals,
};
use crate::{
    collect_into, has_completed_checkpoint, options, run_ok, sorted, splitmix64, temp_dir,
    Collected,
};

/// A process-window function as a type: the window with its record count
/// and value sum.
#[derive(Clone)]
struct CountAndSum;

impl ProcessWindowFunction<u64, Rec> for CountAndSum {
    type Out = Session;

    fn process(
        &mut self,
        key: &u64,
        ctx: &mut WindowContext<'_, u64>,
        elements: &[Rec],
        out: &mut WindowCollector<'_, Session>,
    ) {
        assert!(!ctx.is_late(), "processing-time windows are never late");
        let w = ctx.window();
        let sum = elements.iter().map(|r| r.2).sum();
        out.collect((*key, w.start, w.end, elements.len() as u64, sum));
    }
}

/// Processing-time windows in a job: on the system clock, tumbling windows
/// of 5 ms fire while the job runs and the last ones at the end, and
/// together hold every record once; on a clock stopped at 7,000 ms, every
/// key has one session, which only the end of the input fires.
#[test]
fn processing_time_windows_fire_on_the_clock_and_at_the_end_of_the_input() {
    let (n, keys) = (30_000, 11);
    let mut per_key: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for i in 0..n {
        let e = per_key.entry(splitmix64(i) % keys).or_default();
        e.0 += 1;
        e.1 += i;
    }

    let tumbling = Collected::new();
    let job = JobGraph::new("processing-tumbling");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 1_000)
    })
    .map("stamp", stamp)
    .key_by(|r: &Rec| r.0)
    .window(TumblingProcessingTimeWindows::of(Duration::from_millis(5)))
    .aggregate("count-sum", CountSum)
    .sink("collect", collect_into(&tumbling));
    run_ok(job, &options(2));
    let windows = tumbling.take_all();
    let mut summed: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for &(k, w, (c, s)) in &windows {
        assert_eq!(
            w.start.rem_euclid(5),
            0,
            "windows are aligned to their size"
        );
        assert_eq!(w.end, w.start + 5);
        let e = summed.entry(k).or_default();
        e.0 += c;
        e.1 += s;
    }
    assert_eq!(summed, per_key, "every record in exactly one window");
    let mut starts: Vec<_> = windows.iter().map(|&(k, s, _)| (k, s)).collect();
    starts.sort_unstable();
    starts.dedup();
    assert_eq!(starts.len(), windows.len(), "each (key, window) fired once");
    assert!(
        windows.len() > keys as usize,
        "the 30 ms run spans several windows"
    );

    let clock = Arc::new(AtomicI64::new(7_000));
    let sessions = Collected::new();
    let job = JobGraph::new("processing-sessions");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 10_000)
    })
    .map("stamp", stamp)
    .key_by(|r: &Rec| r.0)
    .window(
        ProcessingTimeSessionWindows::with_gap(Duration::from_millis(100))
            .with_clock(move || clock.load(Ordering::Relaxed)),
    )
    .process_with("sessions", |_: &SubtaskInfo| CountAndSum)
    .sink("collect", collect_into(&sessions));
    run_ok(job, &options(2));
    let want: Vec<Session> = per_key
        .iter()
        .map(|(&k, &(c, s))| (k, 7_000, 7_100, c, s))
        .collect();
    assert_eq!(sorted(sessions.take_all()), want);
}

/// Processing-time window contents and timers survive a restore: on a
/// clock stopped at 5,500 ms every key's records gather in its window
/// `[5000, 6000)`, which only the end of the input fires; a failure
/// mid-run (in the stage before the windows) restores them from a
/// checkpoint, and the run still fires each key's window once with all
/// its records.
#[test]
fn processing_time_windows_survive_a_crash_and_restore() {
    let (n, keys) = (120_000u64, 23u64);
    let want = {
        let mut per_key: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for i in 0..n {
            let e = per_key.entry(splitmix64(i) % keys).or_default();
            e.0 += 1;
            e.1 += i;
        }
        per_key
            .into_iter()
            .fold([0u64, 0, 0], |[c, s, x], (k, (count, sum))| {
                let h = mix((k, 5_000, 6_000, count, sum));
                [c + 1, s.wrapping_add(h), x ^ h]
            })
    };
    let armed = Arc::new(AtomicBool::new(true));
    let dir = temp_dir("processing-failover");
    let failing_dir = dir.clone();
    let totals: Totals = Arc::default();
    let into = totals.clone();
    let job = JobGraph::new("processing-failover");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 1_000)
    })
    .map("trip", move |r: (u64, u64)| {
        let dir = &failing_dir;
        // From record 60,000 on, once a checkpoint is complete (checked
        // every 1,000 records).
        if r.1 >= 60_000
            && r.1 % 1_000 < 2
            && armed.load(Ordering::SeqCst)
            && has_completed_checkpoint(dir)
            && armed.swap(false, Ordering::SeqCst)
        {
            panic!("injected failure at record {}", r.1);
        }
        stamp(r)
    })
    .key_by(|r: &Rec| r.0)
    .window(TumblingProcessingTimeWindows::of(Duration::from_secs(1)).with_clock(|| 5_500))
    .process(
        "windows",
        |k: &u64, w: &TimeWindow, elements: &[Rec], out: &mut WindowCollector<'_, Session>| {
            let sum = elements.iter().map(|r| r.2).sum();
            out.collect((*k, w.start, w.end, elements.len() as u64, sum));
        },
    )
    .sink("windows-out", move |info: &SubtaskInfo| {
        session_sink(info, &into)
    });
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job, &o);
    assert_eq!(
        result.restarts, 1,
        "the injected failure restarted the job once"
    );
    let restored = result
        .restored
        .expect("the second attempt restored a checkpoint");
    assert!(restored.checkpoint_id >= 1);
    assert_eq!(total(&totals), want);
    std::fs::remove_dir_all(&dir).unwrap();
}
