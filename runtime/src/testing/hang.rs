//! What a test job that did not finish in time was doing, printed with
//! the failure so that a hang seen once on a loaded machine can be read
//! afterwards: per subtask whether it ended, its records and bytes in and
//! out, what it has in flight and its input watermark; the job's restarts,
//! checkpoints and errors; then every worker thread of the process with
//! its scheduler state (`R` runs or spins, `S` sleeps), the kernel
//! function it waits in and, where gdb is installed, its stack
//! ([`thread_stacks`], also for a job run as a child process).

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
    s.push_str(&thread_stacks(std::process::id(), "weir-worker"));
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

/// The stack of every thread of process `pid` (this process too) whose
/// name starts with `threads`, read by attaching gdb for a moment; a line
/// saying why when gdb is missing or fails. Process ids and names are the
/// kernel's, so this works on a child process as well.
pub fn thread_stacks(pid: u32, threads: &str) -> String {
    use std::process::{Command, Stdio};
    // gdb stops every thread of the process it reads, the caller's too
    // when `pid` is this process: so it writes to a file, never into a
    // pipe that a stopped reader would leave full, and `timeout` (another
    // process, not stopped) ends a gdb that takes too long, which
    // detaches it.
    let out_path = std::env::temp_dir().join(format!(
        "weir-stacks-{}-{pid}-{}.txt",
        std::process::id(),
        crate::core::time::wall_ms()
    ));
    let file = match std::fs::File::create(&out_path) {
        Ok(f) => f,
        Err(e) => {
            return format!(
                "no thread stacks: cannot create {} ({e})\n",
                out_path.display()
            )
        }
    };
    let status = Command::new("timeout")
        .args([
            "-k",
            "5",
            "60",
            "gdb",
            "--nx",
            "--batch",
            "-p",
            &pid.to_string(),
        ])
        .args(["-ex", "set pagination off", "-ex", "thread apply all bt 40"])
        .stdin(Stdio::null())
        .stderr(match file.try_clone() {
            Ok(f) => Stdio::from(f),
            Err(_) => Stdio::null(),
        })
        .stdout(file)
        .status();
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    match status {
        Err(e) => return format!("no thread stacks: gdb did not start ({e})\n"),
        // `timeout`'s code when the command could not be found or run.
        Ok(s) if matches!(s.code(), Some(126 | 127)) => {
            return "no thread stacks: gdb is not installed\n".to_owned()
        }
        Ok(_) => {}
    }
    if out.contains("ptrace: Operation not permitted") {
        return format!(
            "no thread stacks: gdb may not attach to process {pid} (ptrace: Operation not \
             permitted; see /proc/sys/kernel/yama/ptrace_scope)\n"
        );
    }
    let wanted = format!("\"{threads}");
    let mut s = String::new();
    // gdb heads each thread's stack with `Thread N (... "name"):`.
    for section in out.split("\nThread ").skip(1) {
        let head = section.lines().next().unwrap_or_default();
        if head.contains(&wanted) {
            let _ = writeln!(s, "Thread {}", section.trim_end());
        }
    }
    if s.is_empty() {
        s = format!("no thread stacks: gdb found no thread named {threads}* in process {pid}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stacks_of_a_child_process_are_read_or_said_to_be_missing() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("start sleep");
        let stacks = thread_stacks(child.id(), "sleep");
        let _ = child.kill();
        let _ = child.wait();
        let gdb = std::process::Command::new("gdb")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if stacks.starts_with("no thread stacks: gdb may not attach") {
            // The kernel's ptrace policy (yama) refuses: said so.
        } else if gdb {
            // One thread, stopped in its sleep.
            assert!(stacks.starts_with("Thread 1 "), "{stacks}");
            assert!(stacks.contains("sleep"), "{stacks}");
        } else {
            assert_eq!(stacks, "no thread stacks: gdb is not installed\n");
        }
    }

    #[test]
    fn a_job_not_started_says_so() {
        let report = hang_report(&JobHandle::new());
        assert!(report.starts_with("the job had not started\n"), "{report}");
    }
}
