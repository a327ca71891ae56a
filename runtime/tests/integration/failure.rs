//! Failures: a panicking operator fails the job promptly with its message;
//! malformed jobs are rejected before anything runs.

use weir_runtime::{
    Collector, JobError, JobGraph, KeyContext, KeyedProcessFunction, SequenceSource, SubtaskInfo,
    TaskFailure,
};

use crate::{collect_into, options, run_job, Collected};

/// Panics on the record whose value is `at`; passes everything else on.
struct PanicAt {
    at: u64,
}

impl KeyedProcessFunction for PanicAt {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<Self::Out>>(
        &mut self,
        _ctx: &KeyContext<u64>,
        record: (u64, u64),
        out: &mut C,
    ) {
        if record.1 == self.at {
            panic!("poisoned record {} reached the keyed operator", self.at);
        }
        out.collect(record);
    }
}

fn panicking_job(n: u64, at: u64) -> JobGraph {
    let mut job = JobGraph::new("panics");
    job.source("numbers", move |info: &SubtaskInfo| {
        SequenceSource::new(info, n, |i| (i % 113, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("explode", move |_: &SubtaskInfo| PanicAt { at })
    .sink("collect", collect_into(&Collected::new()));
    job
}

fn expect_task_failure(workers: usize) {
    let result = run_job(panicking_job(500_000, 4_242), &options(workers));
    match result {
        Err(JobError::TaskFailed {
            worker,
            task,
            cause,
        }) => {
            assert!(
                matches!(&cause, TaskFailure::Panic(message)
                    if message.contains("poisoned record 4242 reached the keyed operator")),
                "the panic message is reported, got {cause:?}"
            );
            assert!(
                task.contains("explode"),
                "the failing task is named, got {task:?}"
            );
            assert!(worker < workers, "worker {worker} of {workers}");
        }
        Err(other) => panic!("expected TaskFailed, got {other:?}"),
        Ok(r) => panic!("a job whose operator panicked succeeded: {r:?}"),
    }
}

#[test]
fn panic_in_keyed_operator_fails_the_job_one_worker() {
    expect_task_failure(1);
}

#[test]
fn panic_in_keyed_operator_fails_the_job_two_workers() {
    expect_task_failure(2);
}

#[test]
fn panic_in_a_source_fails_the_job() {
    let mut job = JobGraph::new("source-panics");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 100_000, |i| {
            assert!(i != 777, "source gave up at 777");
            (i % 5, i)
        })
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PanicAt { at: u64::MAX })
    .sink("collect", collect_into(&Collected::new()));
    match run_job(job, &options(2)) {
        Err(e @ JobError::TaskFailed { .. }) => {
            assert!(e.to_string().contains("source gave up at 777"), "{e}")
        }
        other => panic!("expected TaskFailed, got {other:?}"),
    }
}

fn invalid_job_message(job: JobGraph, options: &weir_runtime::ExecutionOptions) -> String {
    match run_job(job, options) {
        Err(JobError::InvalidJob(message)) => message,
        other => panic!("expected InvalidJob, got {other:?}"),
    }
}

#[test]
fn duplicate_uids_are_rejected() {
    let mut job = JobGraph::new("dup");
    job.source("twin", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .map("twin", |r: (u64, u64)| r)
    .sink("collect", collect_into(&Collected::new()));
    let message = invalid_job_message(job, &options(1));
    assert!(
        message.contains("twin") && message.contains("twice"),
        "names the duplicated uid: {message:?}"
    );
}

#[test]
fn parallelism_zero_is_rejected() {
    let mut job = JobGraph::new("zero");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .parallelism(0)
    .sink("collect", collect_into(&Collected::new()));
    let message = invalid_job_message(job, &options(1));
    assert!(
        message.contains("parallelism 0") && message.contains("numbers"),
        "names the stage and the zero parallelism: {message:?}"
    );
}

#[test]
fn parallelism_above_max_parallelism_is_rejected() {
    let mut job = JobGraph::new("too-wide");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PanicAt { at: u64::MAX })
    .parallelism(5)
    .sink("collect", collect_into(&Collected::new()));
    let mut o = options(1);
    o.max_parallelism = 4;
    let message = invalid_job_message(job, &o);
    assert!(
        message.contains("parallelism 5") && message.contains("max-parallelism 4"),
        "names both numbers: {message:?}"
    );
}

#[test]
fn more_workers_than_key_groups_is_rejected() {
    // The default parallelism is the worker count: 3 workers, 2 key groups.
    let mut job = JobGraph::new("too-many-workers");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| (i, i))
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("pass", |_: &SubtaskInfo| PanicAt { at: u64::MAX })
    .sink("collect", collect_into(&Collected::new()));
    let mut o = options(3);
    o.max_parallelism = 2;
    let message = invalid_job_message(job, &o);
    assert!(message.contains("max-parallelism"), "{message:?}");
}

#[test]
fn zero_workers_and_empty_jobs_are_rejected() {
    let mut job = JobGraph::new("no-workers");
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| i)
    })
    .sink("collect", collect_into(&Collected::new()));
    let message = invalid_job_message(job, &options(0));
    assert!(message.contains("worker"), "{message:?}");

    let mut job = JobGraph::new("no-sink");
    let _ = job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, 10, |i| i)
    });
    let message = invalid_job_message(job, &options(1));
    assert!(message.contains("no sink"), "{message:?}");
}
