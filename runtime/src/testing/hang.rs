//! What a test job that did not finish in time was doing, printed with
//! the failure so that a hang seen once on a loaded machine can be read
//! afterwards: per subtask whether it ended, its records and bytes in and
//! out, what it has in flight and its input watermark; the job's restarts,
//! checkpoints and errors; then every worker thread of the process with
//! its scheduler state (`R` runs or spins, `S` sleeps) and the kernel
//! function it waits in.

use std::fmt::Write;

use crate::exec::handle::JobHandle;

/// The report for the job of `handle`.
pub fn hang_report(handle: &JobHandle) -> String {
    let mut s = String::new();
    match handle.view() {
        None => s.push_str("the job had not started\n"),
        Some(v) => {
            let _ = writeln!(
                s,
                "job state {:?}, {} restarts, checkpoints: {} completed, {} failed, {} in progress",
                v.state,
                v.restarts,
                v.checkpoints_completed,
                v.checkpoints_failed,
                v.checkpoints_in_progress
            );
            for e in &v.exceptions {
                let _ = writeln!(
                    s,
                    "error in {}: {}",
                    e.task.as_deref().unwrap_or("the job"),
                    e.message
                );
            }
            for vertex in &v.vertices {
                for t in &vertex.subtasks {
                    let n = &t.now;
                    let _ = writeln!(
                        s,
                        "{} ({}/{}) on worker {}: {}, records in {} out {}, bytes in {} out {}, in flight {:?}, input watermark {:?}",
                        vertex.name,
                        t.index + 1,
                        vertex.parallelism,
                        t.worker,
                        if n.ended_ns.is_some() {
                            "ended"
                        } else if n.started_ns.is_some() {
                            "running"
                        } else {
                            "not started"
                        },
                        n.records_in,
                        n.records_out,
                        n.bytes_in,
                        n.bytes_out,
                        n.in_flight_bytes,
                        n.input_watermark,
                    );
                }
            }
        }
    }
    s.push_str(&worker_threads());
    s
}

/// Each `weir-worker-*` thread of this process: name, state, wait channel.
fn worker_threads() -> String {
    let mut s = String::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return s;
    };
    for task in tasks.flatten() {
        let path = task.path();
        let read = |f: &str| std::fs::read_to_string(path.join(f)).unwrap_or_default();
        let name = read("comm").trim().to_owned();
        if !name.starts_with("weir-worker") {
            continue;
        }
        // `pid (comm) S ...`: the state follows the last ')'.
        let stat = read("stat");
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("?")
            .to_owned();
        let _ = writeln!(
            s,
            "thread {} {name}: state {state}, waits in {}",
            task.file_name().to_string_lossy(),
            read("wchan").trim()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_not_started_says_so() {
        let report = hang_report(&JobHandle::new());
        assert!(report.starts_with("the job had not started\n"), "{report}");
    }
}
