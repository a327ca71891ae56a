//! Triggers, evictors and window-function contexts in jobs: a purging
//! count trigger with per-window state fires each window every 5 records
//! as a brute-force grouping says, also across a crash and restore in the
//! middle of its windows (trigger counts, timers, contents and window
//! state restored: the output equals an uninterrupted run's); a count
//! evictor under a count trigger aggregates the last records of each
//! firing; a process window function tells late firings, and its side
//! output is a stream of its own beside the late data.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    Collector, CountEvictor, CountTrigger, JobError, JobGraph, OutputTag, ProcessContext,
    ProcessFunction, ProcessWindowFunction, PurgingTrigger, RestoreFrom, SideOutput, SideOutputs,
    Sink, SubtaskInfo, TimeWindow, Trigger, TriggerContext, TriggerResult,
    TumblingEventTimeWindows, ValueStateDescriptor, WatermarkStrategy, WindowCollector,
    WindowContext,
};

use crate::checkpoint::PacedSource;
use crate::sessions::{checkpointed, CountSum, Rec};
use crate::{
    collect_into, ms, options, run_job, run_ok, sorted, splitmix64, temp_dir, Collected,
    DigestSink, Digests, EarlyThenLate, InjectedFailure, M,
};

/// Record `i`: `(key, i / 20 ms, i)`.
fn stamp((key, i): (u64, u64)) -> Rec {
    (key, (i / 20) as i64, i)
}

fn strategy() -> WatermarkStrategy<impl Fn(&Rec) -> i64 + Clone + Send + Sync> {
    WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
        .with_timestamp_assigner(|r: &Rec| r.1)
}

/// Window size (ms).
const SIZE: i64 = 100;

/// Every `(key, window start)`'s records in the order the one source
/// subtask makes them (`splitmix64(i) % keys`, `i` rising).
fn per_window(n: u64, keys: u64) -> BTreeMap<(u64, i64), Vec<u64>> {
    let mut windows: BTreeMap<(u64, i64), Vec<u64>> = BTreeMap::new();
    for i in 0..n {
        let (k, ts, v) = stamp((splitmix64(i) % keys, i));
        windows.entry((k, ts - ts % SIZE)).or_default().push(v);
    }
    windows
}

/// A firing: key, window start and end, the window's firing number, the
/// record count and value sum.
type Chunk = (u64, i64, i64, u32, u64, u64);

/// Numbers each window's firings in per-window state.
struct Numbered {
    fires: ValueStateDescriptor<u32>,
}

impl ProcessWindowFunction<u64, Rec> for Numbered {
    type Out = Chunk;

    fn process(
        &mut self,
        key: &u64,
        ctx: &mut WindowContext<'_, u64>,
        elements: &[Rec],
        out: &mut WindowCollector<'_, Chunk>,
    ) {
        let n = ctx.window_state().value(&self.fires).unwrap_or(0) + 1;
        ctx.window_state().update(&self.fires, n);
        let w = ctx.window();
        let sum = elements.iter().map(|r| r.2).sum();
        out.collect((*key, w.start, w.end, n, elements.len() as u64, sum));
    }
}

fn mix(c: &Chunk) -> u64 {
    let (k, s, e, n, count, sum) = *c;
    splitmix64(
        k.wrapping_mul(M) ^ (s as u64) ^ ((e as u64) << 20) ^ (u64::from(n) << 40) ^ count ^ sum,
    )
}

/// The purging count-trigger job over `n` records of `keys` keys, failing
/// once at `fail`.
fn chunks_job(n: u64, keys: u64, fail: InjectedFailure, into: &Digests) -> JobGraph {
    let into = into.clone();
    let job = JobGraph::new("count-trigger-chunks");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 1_000)
    })
    .parallelism(1)
    .map("stamp", move |r: (u64, u64)| {
        if fail.hits(r.1) {
            panic!("injected failure at record {}", r.1);
        }
        stamp(r)
    })
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &Rec| r.0)
    .window(TumblingEventTimeWindows::of(ms(SIZE), |r: &Rec| r.1))
    .trigger(PurgingTrigger::of(CountTrigger::of(5)))
    .process_with("chunks", |_: &SubtaskInfo| Numbered {
        fires: ValueStateDescriptor::new("fires"),
    })
    .sink("digest", move |info: &SubtaskInfo| {
        DigestSink::new(info, mix, &into)
    });
    job
}

fn digest(d: &Digests) -> [u64; 3] {
    d.lock()
        .unwrap()
        .iter()
        .fold([0, 0, 0], |[c, s, x], (_, d)| {
            [c + d[0], s.wrapping_add(d[1]), x ^ d[2]]
        })
}

/// A purging count trigger of 5 fires every window once per 5 records, with
/// those 5 (the rest of a window, fewer than 5, is dropped at its end);
/// crashed mid-window and restored from a checkpoint, the job emits exactly
/// what it does uninterrupted.
#[test]
fn a_purging_count_trigger_fires_every_five_records_also_across_a_restore() {
    let (n, keys) = (60_000, 7);
    let mut want = [0u64, 0, 0];
    for ((k, start), values) in per_window(n, keys) {
        for (j, chunk) in values.chunks_exact(5).enumerate() {
            let c = (k, start, start + SIZE, j as u32 + 1, 5, chunk.iter().sum());
            let h = mix(&c);
            want = [want[0] + 1, want[1].wrapping_add(h), want[2] ^ h];
        }
    }

    let dir = temp_dir("count-trigger-uninterrupted");
    let plain: Digests = Digests::default();
    run_ok(
        chunks_job(n, keys, InjectedFailure::never(), &plain),
        &checkpointed(&dir),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        digest(&plain),
        want,
        "uninterrupted run against the reference"
    );

    let dir = temp_dir("count-trigger-restored");
    let restored: Digests = Digests::default();
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 2,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(
        chunks_job(n, keys, InjectedFailure::at(31_237, &dir), &restored),
        &o,
    );
    assert_eq!(result.restarts, 1, "the injected failure restarted the job");
    assert!(result.restored.is_some(), "from a checkpoint");
    assert_eq!(digest(&restored), want, "the restored run");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trigger of the job's own: fires and purges every `n` elements of a
/// window, and what is left when the watermark passes its end.
#[derive(Clone, Copy, Debug)]
struct ChunksThenRest {
    n: u64,
}

impl Trigger<Rec> for ChunksThenRest {
    type State = u64;

    fn on_element(
        &self,
        _: &Rec,
        _: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, u64>,
    ) -> TriggerResult {
        ctx.register_event_time_timer(window.max_timestamp());
        *ctx.state() += 1;
        if *ctx.state() == self.n {
            *ctx.state() = 0;
            TriggerResult::FireAndPurge
        } else {
            TriggerResult::Continue
        }
    }

    fn on_event_time(
        &self,
        time: i64,
        window: &TimeWindow,
        _: &mut TriggerContext<'_, u64>,
    ) -> TriggerResult {
        if time == window.max_timestamp() {
            TriggerResult::FireAndPurge
        } else {
            TriggerResult::Continue
        }
    }

    fn on_processing_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, u64>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_, u64>) {
        ctx.delete_event_time_timer(window.max_timestamp());
    }
}

/// Keeps every firing, once (a replay after a restore fires the same
/// ones again): no checkpointed state, so its stage may rescale.
struct ChunkSet(Arc<Mutex<BTreeSet<Chunk>>>);

impl Sink for ChunkSet {
    type In = Chunk;

    fn invoke(&mut self, c: Chunk) {
        self.0.lock().unwrap().insert(c);
    }
}

/// A job's own trigger, its counts and timers, and the window function's
/// per-window state follow their key groups: a job with 2 window subtasks
/// fails mid-window and is restored with 3, and fires exactly the chunks
/// and remainders of every window, numbered in order (a count or a window
/// state restored to the wrong subtask, or lost, would fire others).
#[test]
fn a_custom_trigger_is_restored_at_another_parallelism() {
    let (n, keys) = (90_000, 31);
    let mut want = BTreeSet::new();
    for ((k, start), values) in per_window(n, keys) {
        for (j, chunk) in values.chunks(7).enumerate() {
            let c = (
                k,
                start,
                start + SIZE,
                j as u32 + 1,
                chunk.len() as u64,
                chunk.iter().sum(),
            );
            want.insert(c);
        }
    }
    let dir = temp_dir("custom-trigger-rescale");
    let fired: Arc<Mutex<BTreeSet<Chunk>>> = Arc::default();
    let build = |parallelism: usize, fail: InjectedFailure| {
        let into = fired.clone();
        let job = JobGraph::new("custom-trigger-rescaled");
        job.source("paced", move |info: &SubtaskInfo| {
            PacedSource::new(info, n, keys, 1_000)
        })
        .parallelism(1)
        .map("stamp", move |r: (u64, u64)| {
            if fail.hits(r.1) {
                panic!("injected failure at record {}", r.1);
            }
            stamp(r)
        })
        .assign_timestamps_and_watermarks(strategy())
        .key_by(|r: &Rec| r.0)
        .window(TumblingEventTimeWindows::of(ms(SIZE), |r: &Rec| r.1))
        .trigger(ChunksThenRest { n: 7 })
        .process_with("chunks", |_: &SubtaskInfo| Numbered {
            fires: ValueStateDescriptor::new("fires"),
        })
        .parallelism(parallelism)
        .sink("set", move |_: &SubtaskInfo| ChunkSet(into.clone()));
        job
    };
    let mut o = checkpointed(&dir);
    o.restart = RestartStrategy::None;
    match run_job(build(2, InjectedFailure::at(60_001, &dir)), &o) {
        Err(JobError::TaskFailed { .. }) => {}
        other => panic!("expected the injected failure, got {other:?}"),
    }
    o.restore = RestoreFrom::Latest;
    let result = run_ok(build(3, InjectedFailure::never()), &o);
    let restored = result
        .restored
        .expect("restored the failed run's checkpoint");
    assert!(restored.state_bytes > 0, "open windows were checkpointed");
    let got = fired.lock().unwrap().clone();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Under a count trigger of 4 a count evictor of 3 leaves the last 3
/// records of each window to the aggregate at every 4th record.
#[test]
fn a_count_evictor_leaves_the_last_records_to_the_aggregate() {
    let (n, keys) = (20_000, 5);
    let collected = Collected::new();
    let job = JobGraph::new("count-evictor");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 2_000)
    })
    .parallelism(1)
    .map("stamp", stamp)
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &Rec| r.0)
    .window(TumblingEventTimeWindows::of(ms(SIZE), |r: &Rec| r.1))
    .trigger(CountTrigger::of(4))
    .evictor(CountEvictor::of(3))
    .aggregate("last-three", CountSum)
    .sink("collect", collect_into(&collected));
    run_ok(job, &options(2));

    let mut want = Vec::new();
    for ((k, start), values) in per_window(n, keys) {
        for i in (3..values.len()).step_by(4) {
            let last: u64 = values[i - 2..=i].iter().sum();
            want.push((k, TimeWindow::new(start, start + SIZE), (3, last)));
        }
    }
    assert_eq!(sorted(collected.take_all()), sorted(want));
}

/// A window's count and whether the firing is late; late firings also go
/// to a side output.
struct Report {
    late_firings: SideOutput<(i64, u64)>,
}

impl ProcessWindowFunction<u64, Rec> for Report {
    type Out = (i64, u64, bool);

    fn process(
        &mut self,
        _: &u64,
        ctx: &mut WindowContext<'_, u64>,
        elements: &[Rec],
        out: &mut WindowCollector<'_, (i64, u64, bool)>,
    ) {
        let (start, count) = (ctx.window().start, elements.len() as u64);
        if ctx.is_late() {
            ctx.output(&self.late_firings, (start, count));
        }
        out.collect((start, count, ctx.is_late()));
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        outputs.connect(&self.late_firings);
    }
}

/// Key 1 at timestamps 0..100, a pause for the watermark to reach 98,
/// then a record at 85 (its window fired, within the lateness: a late
/// firing) and one at 5 (past the lateness: late data). The function tells
/// the late firing, which also reaches its side output stream; the late
/// record reaches the late-data stream.
#[test]
fn a_window_function_tells_late_firings_and_emits_them_to_a_side_output() {
    let collected = Collected::new();
    let firings = Collected::new();
    let late = Collected::new();
    let firings_tag = OutputTag::<(i64, u64)>::new("late-firings");
    let late_tag = OutputTag::<Rec>::new("late-data");
    let job = JobGraph::new("late-firings");
    let tag = firings_tag.clone();
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
        .key_by(|r: &Rec| r.0)
        .window(TumblingEventTimeWindows::of(
            Duration::from_millis(10),
            |r: &Rec| r.1,
        ))
        .allowed_lateness(Duration::from_millis(50))
        .side_output_late_data(&late_tag)
        .process_with("report", move |_: &SubtaskInfo| Report {
            late_firings: SideOutput::new(&tag),
        });
    windows
        .get_side_output(&firings_tag)
        .sink("late-firings", collect_into(&firings));
    windows
        .get_side_output(&late_tag)
        .sink("late-data", collect_into(&late));
    windows.sink("collect", collect_into(&collected));
    let mut o = options(2);
    o.auto_watermark_interval = Duration::from_millis(5);
    run_ok(job, &o);

    let mut want: Vec<_> = (0..10).map(|w| (w * 10, 10, false)).collect();
    want.insert(9, (80, 11, true));
    assert_eq!(collected.take_all(), want);
    assert_eq!(firings.take_all(), vec![(80, 11)]);
    assert_eq!(late.take_all(), vec![(1, 5, 100)]);
}

/// The window and the timestamp a record of it carries.
struct SeeStamp;

impl ProcessFunction for SeeStamp {
    type In = (u64, TimeWindow, (u64, u64));
    type Out = (TimeWindow, Option<i64>);

    fn process<C: Collector<Self::Out>>(&mut self, ctx: &ProcessContext, r: Self::In, out: &mut C) {
        out.collect((r.1, ctx.timestamp()));
    }
}

/// Whatever fires a window, what it emits carries the window's last
/// millisecond as its timestamp (Flink's `window.maxTimestamp()`): here a
/// count trigger, firing long before the window's end.
#[test]
fn every_firing_carries_the_windows_last_millisecond() {
    let (n, keys) = (20_000, 5);
    let got = Collected::new();
    let job = JobGraph::new("trigger-timestamps");
    job.source("paced", move |info: &SubtaskInfo| {
        PacedSource::new(info, n, keys, 2_000)
    })
    .parallelism(1)
    .map("stamp", stamp)
    .assign_timestamps_and_watermarks(strategy())
    .key_by(|r: &Rec| r.0)
    .window(TumblingEventTimeWindows::of(ms(SIZE), |r: &Rec| r.1))
    .trigger(CountTrigger::of(3))
    .aggregate("count-sum", CountSum)
    .process("see", |_: &SubtaskInfo| SeeStamp)
    .sink("collect", collect_into(&got));
    run_ok(job, &options(2));
    let got = got.take_all();
    let fired: usize = per_window(n, keys).values().map(|v| v.len() / 3).sum();
    assert_eq!(got.len(), fired);
    for (w, ts) in got {
        assert_eq!(ts, Some(w.max_timestamp()), "a firing of {w:?}");
    }
}
