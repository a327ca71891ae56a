//! The built-in jobs: the quickstart job and the W1/W2/W3/W4 benchmark jobs,
//! written with the public job API exactly as a user would write them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::{JobGraph, SubtaskInfo, TumblingEventTimeWindows, WatermarkStrategy};

use crate::output::W1OutputSink;
use crate::w2::{w2_timestamp, CountAndSum, WindowChecksumSink, WindowResults, W2_WINDOW_MS};
use crate::workload::{
    splitmix64, ChecksumSink, FastMod, KeyedCount, RunClock, SinkResults, SlowSink, SourceCounts,
    SourcePlan, WorkloadSource,
};

/// W1 keyed-count: `source(P) -> key_by(key) -> keyed op -> sink(P)`;
/// with `output`, the sink also writes every record as a line
/// `key,count,sum` into that directory, exactly once (transactional).
pub fn w1(
    records: u64,
    keys: u64,
    rate: Option<u64>,
    results: Arc<SinkResults>,
    output: Option<PathBuf>,
) -> JobGraph {
    let clock = Arc::new(RunClock::default());
    let plan = SourcePlan {
        records,
        rate,
        run_for: None,
    };
    let mut job = JobGraph::new("w1-keyed-count");
    job.parameter("records", records).parameter("keys", keys);
    if let Some(dir) = &output {
        job.output_directory(dir);
    }
    let counted = job
        .source("w1-source", move |info: &SubtaskInfo| {
            WorkloadSource::new(info, plan, clock.clone(), move |i| {
                (splitmix64(i) % keys, i)
            })
        })
        .key_by(|r: &(u64, u64)| r.0)
        .process("w1-keyed-count", |_| KeyedCount::<(u64, u64)>::default());
    match output {
        Some(dir) => counted.sink("w1-output-sink", move |info: &SubtaskInfo| {
            W1OutputSink::new(info, results.clone(), &dir)
        }),
        None => counted.sink("w1-checksum-sink", move |info: &SubtaskInfo| {
            ChecksumSink::new(info, results.clone())
        }),
    }
    job
}

/// W3 end-to-end latency: the W1 pipeline with a `ts_ns` on every record,
/// sources paced to `rate` records/s in total, run for `warmup + duration`.
pub fn w3(
    keys: u64,
    rate: u64,
    warmup: Duration,
    duration: Duration,
    results: Arc<SinkResults>,
    counts: Arc<SourceCounts>,
) -> JobGraph {
    let clock = Arc::new(RunClock::default());
    let sink_clock = clock.clone();
    let plan = SourcePlan {
        records: u64::MAX,
        rate: Some(rate),
        run_for: Some(warmup + duration),
    };
    let modulo = FastMod::new(keys);
    let mut job = JobGraph::new("w3-latency");
    job.parameter("keys", keys);
    job.source("w3-source", move |info: &SubtaskInfo| {
        WorkloadSource::new(info, plan, clock.clone(), move |i| {
            (modulo.rem(splitmix64(i)), i, crate::workload::clock_ns())
        })
        .reporting_to(counts.clone())
    })
    .key_by(|r: &(u64, u64, u64)| r.0)
    .process("w3-keyed-count", |_| {
        KeyedCount::<(u64, u64, u64)>::default()
    })
    .sink("w3-latency-sink", move |info: &SubtaskInfo| {
        ChecksumSink::with_latency(info, results.clone(), sink_clock.clone(), warmup, duration)
    });
    job
}

/// W4 checkpoints under backpressure: the W1 pipeline, its source as fast
/// as allowed (or paced to `rate`) for `duration` (or until `records`),
/// into a sink that spins `spin` per record. The sink also counts what it
/// finished within `duration` of the start (the rate while the source ran).
pub fn w4(
    records: Option<u64>,
    keys: u64,
    rate: Option<u64>,
    duration: Duration,
    spin: Duration,
    results: Arc<SinkResults>,
    counts: Arc<SourceCounts>,
) -> JobGraph {
    let clock = Arc::new(RunClock::default());
    let sink_clock = clock.clone();
    let plan = SourcePlan {
        records: records.unwrap_or(u64::MAX),
        rate,
        run_for: Some(duration),
    };
    let modulo = FastMod::new(keys);
    let mut job = JobGraph::new("w4-backpressure");
    job.parameter("keys", keys);
    if let Some(records) = records {
        job.parameter("records", records);
    }
    job.source("w4-source", move |info: &SubtaskInfo| {
        WorkloadSource::new(info, plan, clock.clone(), move |i| {
            (modulo.rem(splitmix64(i)), i)
        })
        .reporting_to(counts.clone())
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("w4-keyed-count", |_| KeyedCount::<(u64, u64)>::default())
    .sink("w4-slow-sink", move |info: &SubtaskInfo| {
        SlowSink::new(info, results.clone(), sink_clock.clone(), spin, duration)
    });
    job
}

/// W2 event-time tumbling window: `source(P) -> watermarks (max seen event
/// time, no out-of-orderness) -> key_by(key) -> tumbling 1000 ms
/// event-time window (count, sum) -> sink(P)`.
pub fn w2(records: u64, keys: u64, rate: Option<u64>, results: Arc<WindowResults>) -> JobGraph {
    let clock = Arc::new(RunClock::default());
    let plan = SourcePlan {
        records,
        rate,
        run_for: None,
    };
    let modulo = FastMod::new(keys);
    let mut job = JobGraph::new("w2-event-time-window");
    job.parameter("records", records).parameter("keys", keys);
    job.source("w2-source", move |info: &SubtaskInfo| {
        WorkloadSource::new(info, plan, clock.clone(), move |i| {
            (modulo.rem(splitmix64(i)), i)
        })
    })
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
            .with_timestamp_assigner(w2_timestamp),
    )
    .key_by(|r: &(u64, u64)| r.0)
    .window(TumblingEventTimeWindows::of(
        Duration::from_millis(W2_WINDOW_MS),
        w2_timestamp,
    ))
    .aggregate("w2-window", CountAndSum)
    .sink("w2-window-sink", move |info: &SubtaskInfo| {
        WindowChecksumSink::new(info, results.clone())
    });
    job
}
