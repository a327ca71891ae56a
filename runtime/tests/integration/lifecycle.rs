//! Bounded jobs end cleanly: `execute` returns Ok once every record is in,
//! the metrics count them, and every sink subtask's `finish` runs exactly
//! once — also on subtasks that received nothing.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use weir_runtime::{
    Collector, JobGraph, KeyContext, KeyedProcessFunction, SequenceSource, Sink, SubtaskInfo,
};

use crate::{collect_into, options, run_ok, sorted, Collected};

/// Counts records and `finish` calls into shared counters.
struct CountingSink {
    records: Arc<AtomicUsize>,
    finishes: Arc<AtomicUsize>,
    finished: bool,
}

impl Sink for CountingSink {
    type In = (u64, u64);

    fn invoke(&mut self, _record: (u64, u64)) {
        assert!(!self.finished, "a record arrived after finish");
        self.records.fetch_add(1, Ordering::SeqCst);
    }

    fn finish(&mut self) {
        self.finished = true;
        self.finishes.fetch_add(1, Ordering::SeqCst);
    }
}

struct PassThrough;

impl KeyedProcessFunction for PassThrough {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        _ctx: &KeyContext<u64>,
        record: (u64, u64),
        out: &mut C,
    ) {
        out.collect(record);
    }
}

fn keyed_job(
    n: u64,
    keys: u64,
    sink_parallelism: usize,
    records: &Arc<AtomicUsize>,
    finishes: &Arc<AtomicUsize>,
) -> JobGraph {
    let (records, finishes) = (records.clone(), finishes.clone());
    let job = JobGraph::new("bounded");
    job.source("numbers", move |info: &SubtaskInfo| {
        SequenceSource::new(info, n, move |i| (i % keys, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PassThrough)
    .parallelism(sink_parallelism)
    .sink("count", move |_: &SubtaskInfo| CountingSink {
        records: records.clone(),
        finishes: finishes.clone(),
        finished: false,
    });
    job
}

#[test]
fn bounded_job_ends_with_every_record_and_one_finish_per_sink() {
    for (workers, n) in [(1, 50_000u64), (2, 50_000), (3, 50_001)] {
        let records = Arc::new(AtomicUsize::new(0));
        let finishes = Arc::new(AtomicUsize::new(0));
        let job = keyed_job(n, 1_000, workers, &records, &finishes);
        let result = run_ok(job, &options(workers));
        assert_eq!(result.workers, workers);
        assert_eq!(
            result.metrics.total_sink_records(),
            n,
            "metrics' sink count"
        );
        assert_eq!(
            result.metrics.source_records.iter().sum::<u64>(),
            n,
            "metrics' source count"
        );
        assert_eq!(records.load(Ordering::SeqCst) as u64, n, "records invoked");
        assert_eq!(
            finishes.load(Ordering::SeqCst),
            workers,
            "finish once per sink subtask"
        );
    }
}

#[test]
fn sink_subtasks_without_records_still_finish() {
    // Two keys over five keyed/sink subtasks: at least three get nothing.
    let records = Arc::new(AtomicUsize::new(0));
    let finishes = Arc::new(AtomicUsize::new(0));
    let job = keyed_job(1_000, 2, 5, &records, &finishes);
    let result = run_ok(job, &options(2));
    assert_eq!(result.metrics.total_sink_records(), 1_000);
    assert_eq!(records.load(Ordering::SeqCst), 1_000);
    assert_eq!(finishes.load(Ordering::SeqCst), 5);
}

#[test]
fn empty_sources_end_the_job() {
    let records = Arc::new(AtomicUsize::new(0));
    let finishes = Arc::new(AtomicUsize::new(0));
    let job = keyed_job(0, 10, 3, &records, &finishes);
    let result = run_ok(job, &options(2));
    assert_eq!(result.metrics.total_sink_records(), 0);
    assert_eq!(records.load(Ordering::SeqCst), 0);
    assert_eq!(finishes.load(Ordering::SeqCst), 3);
}

#[test]
fn more_source_subtasks_than_records() {
    // Four source subtasks over three records: one source is empty from the
    // start, the others end after a record or so.
    let got = Collected::new();
    let job = JobGraph::new("sparse");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 3, |i| (i, i * 100))
    })
    .parallelism(4)
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PassThrough)
    .sink("collect", collect_into(&got));
    run_ok(job, &options(2));
    assert_eq!(got.finishes(), 2);
    assert_eq!(sorted(got.take_all()), vec![(0, 0), (1, 100), (2, 200)]);
}

#[test]
fn sequential_jobs_in_one_process() {
    // Workers and their resources are released: many short jobs in a row.
    for round in 0..20u64 {
        let got = Collected::new();
        let job = JobGraph::new("again");
        job.source("numbers", move |info: &SubtaskInfo| {
            SequenceSource::new(info, 100 + round, |i| (i % 3, i))
        })
        .key_by(|r: &(u64, u64)| r.0)
        .process("pass", |_: &SubtaskInfo| PassThrough)
        .sink("collect", collect_into(&got));
        run_ok(job, &options(2));
        let seqs: BTreeSet<u64> = got.take_all().into_iter().map(|r| r.1).collect();
        assert_eq!(seqs, (0..100 + round).collect(), "round {round}");
    }
}
