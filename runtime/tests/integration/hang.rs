//! A test job that does not end in time fails the test with what its
//! subtasks and worker threads were doing, and is cancelled so that it
//! does not keep cores from the tests after it.

use std::time::{Duration, Instant};

use weir_runtime::testing::run_job_within;
use weir_runtime::{JobGraph, JobState, SequenceSource, SubtaskInfo};

use crate::{collect_into, options, Collected};

#[test]
fn a_job_past_its_time_limit_fails_with_a_report_and_is_cancelled() {
    let job = JobGraph::new("endless");
    let collected: std::sync::Arc<Collected<u64>> = Collected::new();
    job.source("numbers", |info: &SubtaskInfo| {
        SequenceSource::new(info, u64::MAX, |i| i)
    })
    .rebalance()
    .map("same", |x: u64| x)
    .sink("collect", collect_into(&collected));
    let o = options(2);
    let handle = o.handle.clone();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_job_within(job, &o, Duration::from_secs(5))
    }))
    .expect_err("an endless job runs past any limit");
    let message = panic
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert!(
        message.contains("job `endless` did not finish within 5s"),
        "{message}"
    );
    // Each subtask of both stages (before and after the exchange),
    // running, with its counts (5 s leaves the workers time to start on
    // a loaded machine).
    let subtasks = message
        .lines()
        .filter(|l| l.contains("/2) on worker ") && l.contains(": running, records in "))
        .count();
    assert_eq!(subtasks, 4, "{message}");
    assert!(message.contains("weir-worker"), "{message}");
    // Where gdb is installed, each worker's stack, down to its loop.
    let gdb = std::process::Command::new("gdb")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if gdb {
        // Unless the kernel does not let gdb attach (yama's ptrace_scope
        // for a user who is not root).
        assert!(
            message.contains("run_worker")
                || message.contains("no thread stacks: gdb may not attach"),
            "{message}"
        );
    } else {
        assert!(
            message.contains("no thread stacks: gdb is not installed"),
            "{message}"
        );
    }
    // Cancelled: it ends by itself soon after.
    let asked = Instant::now();
    while handle.state() != JobState::Canceled {
        assert!(
            asked.elapsed() < Duration::from_secs(20),
            "still {:?} 20 s after the cancel",
            handle.state()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
