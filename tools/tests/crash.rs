//! Crash tests a user would believe: the real `weir` binary runs W1 with
//! aligned checkpoints and the transactional file sink, is killed with
//! SIGKILL (at random moments, during a snapshot's asynchronous write,
//! between a checkpoint's completion and its commit) or fails in-process,
//! and is restarted with `--restore latest` until it completes. The
//! committed `part-*` files must then hold exactly the output of an
//! uninterrupted run: for every key seen c times, the lines with counts
//! 1..=c, each exactly once, and the last one with the key's total sum.
//! The expected output is computed here, independently of weir-bench.
//! The same kills are repeated with unaligned checkpoints, whose snapshots
//! include the data in flight between the source and the keyed operator.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
const N: u64 = 1_500_000;
const K: u64 = 5_000;

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Dirs {
    root: PathBuf,
    /// Settings every run of the test gets.
    mode: &'static [&'static str],
}

/// Unaligned checkpoints (barriers overtake the data in flight, which is
/// persisted with the snapshot and replayed on restore).
const UNALIGNED: &[&str] = &["--set", "execution.checkpointing.unaligned.enabled=true"];

impl Dirs {
    fn new(name: &str) -> Self {
        Self::with_mode(name, &[])
    }
    fn with_mode(name: &str, mode: &'static [&'static str]) -> Self {
        let root = std::env::temp_dir().join(format!("weir-crash-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Self { root, mode }
    }
    fn output(&self) -> PathBuf {
        self.root.join("output")
    }
    fn checkpoints(&self) -> PathBuf {
        self.root.join("checkpoints")
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn w1(d: &Dirs, extra: &[&str]) -> Command {
    let mut c = Command::new(WEIR);
    c.args([
        "bench",
        "w1",
        "--quiet",
        "--workers",
        "2",
        "--restore",
        "latest",
    ])
    .args(["--n", &N.to_string(), "--k", &K.to_string()])
    .arg("--output")
    .arg(d.output())
    .args(["--set", "execution.checkpointing.interval=100ms"])
    .arg("--set")
    .arg(format!(
        "state.checkpoints.dir={}",
        d.checkpoints().display()
    ))
    .args(["--set", "state.checkpoints.num-retained=2"])
    .args(["--set", "weir.worker.pin-cores=false"])
    .args(d.mode)
    .args(extra)
    // What weir prints on stderr must not depend on the environment.
    .env_remove("RUST_LOG")
    .env_remove("WEIR_TRACE_CHECKPOINTS")
    .stdin(Stdio::null());
    c
}

/// Runs to completion (restoring whatever is there) and returns the JSON.
fn finish(d: &Dirs) -> Value {
    let out = w1(d, &[]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the final run failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

/// Checks the committed output against the workload, independently.
fn assert_exactly_once(dir: &Path) {
    let mut expected: HashMap<u64, (u64, u64)> = HashMap::new();
    for i in 0..N {
        let e = expected.entry(splitmix64(i) % K).or_default();
        e.0 += 1;
        e.1 = e.1.wrapping_add(i);
    }
    let mut seen: HashMap<(u64, u64), u64> = HashMap::new();
    let mut lines = 0u64;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.starts_with("part-") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            lines += 1;
            let f: Vec<u64> = line.split(',').map(|x| x.parse().unwrap()).collect();
            let (key, count, sum) = (f[0], f[1], f[2]);
            let &(c, total) = expected.get(&key).expect("a key of the workload");
            assert!(
                count >= 1 && count <= c,
                "{name}: count {count} of key {key} beyond {c}"
            );
            if count == c {
                assert_eq!(
                    sum, total,
                    "{name}: the last line of key {key} has the total"
                );
            }
            let dup = seen.insert((key, count), lines);
            assert!(dup.is_none(), "{name}: line `{line}` is committed twice");
        }
    }
    assert_eq!(lines, N, "every record exactly once across all part files");
}

fn run_killed_at(d: &Dirs, after: Duration) -> bool {
    let mut child = w1(d, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return false; // finished before the kill
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    if status.success() {
        return false; // finished between the last poll and the kill
    }
    assert_eq!(status.signal(), Some(9), "killed with SIGKILL: {status}");
    true
}

#[test]
fn sigkill_at_random_moments_and_restore_is_exactly_once() {
    killed_at_random_moments(Dirs::new("random"), 0x5EED);
}

#[test]
fn unaligned_sigkill_at_random_moments_and_restore_is_exactly_once() {
    killed_at_random_moments(Dirs::with_mode("random-unaligned", UNALIGNED), 0xA11E);
}

fn killed_at_random_moments(d: Dirs, seed: u64) {
    // A fixed pseudo-random sequence of kill times, so failures reproduce.
    let mut x = seed;
    let mut kills = 0;
    for _ in 0..4 {
        x = splitmix64(x);
        let after = Duration::from_millis(250 + x % 700);
        kills += usize::from(run_killed_at(&d, after));
    }
    assert!(kills >= 2, "the runs must be long enough to be killed");
    let report = finish(&d);
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!(report["output"]["exactly_once"], true, "{report}");
    assert_exactly_once(&d.output());
}

fn killed_by_fail_point(d: &Dirs, point: &str) {
    let out = w1(d, &[])
        .env("WEIR_FAILPOINTS", point)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(9),
        "fail point {point} kills the run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigkill_during_an_asynchronous_snapshot_write() {
    killed_during_a_snapshot_write(Dirs::new("async-write"));
}

#[test]
fn unaligned_sigkill_during_an_asynchronous_snapshot_write() {
    killed_during_a_snapshot_write(Dirs::with_mode("async-write-unaligned", UNALIGNED));
}

fn killed_during_a_snapshot_write(d: Dirs) {
    killed_by_fail_point(&d, "snapshot-write=3");
    let report = finish(&d);
    assert_eq!(report["output"]["exactly_once"], true, "{report}");
    assert!(
        report["restored"]["checkpoint"].as_u64().unwrap() <= 2,
        "checkpoint 3 never completed: {report}"
    );
    assert_exactly_once(&d.output());
}

#[test]
fn sigkill_between_completion_and_commit() {
    let d = Dirs::new("complete-commit");
    killed_by_fail_point(&d, "checkpoint-complete=3");
    // Checkpoint 3 is complete, but its transactions are only pre-committed.
    let pending = std::fs::read_dir(d.output())
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_str().unwrap().ends_with("-0000000003")
                && n.to_str().unwrap().starts_with(".pending-")
        })
        .count();
    assert!(
        pending > 0,
        "checkpoint 3's transactions are pending at the crash"
    );
    let report = finish(&d);
    assert_eq!(report["restored"]["checkpoint"], 3, "{report}");
    assert_eq!(report["output"]["exactly_once"], true, "{report}");
    assert_exactly_once(&d.output());
}

#[test]
fn operator_failure_restarts_in_process() {
    fails_in_process(Dirs::new("in-process"));
}

#[test]
fn unaligned_operator_failure_restarts_in_process() {
    fails_in_process(Dirs::with_mode("in-process-unaligned", UNALIGNED));
}

fn fails_in_process(d: Dirs) {
    let out = w1(
        &d,
        &[
            "--set",
            "restart-strategy.type=fixed-delay",
            "--set",
            "restart-strategy.fixed-delay.attempts=2",
            "--set",
            "restart-strategy.fixed-delay.delay=20ms",
        ],
    )
    .env("WEIR_FAILPOINTS", "source-panic=700000")
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("restarting"), "{stderr}");
    let report: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(report["restarts"], 1, "{report}");
    assert_eq!(report["output"]["exactly_once"], true, "{report}");
    assert_exactly_once(&d.output());
}

#[test]
fn without_a_restart_strategy_a_failure_ends_the_process() {
    let d = Dirs::new("no-restart");
    let out = w1(&d, &["--set", "restart-strategy.type=none"])
        .env("WEIR_FAILPOINTS", "source-panic=700000")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("injected failure (fail point source-panic at"),
        "{stderr}"
    );
}

#[test]
fn too_many_failures_end_the_process_with_a_clear_message() {
    let d = Dirs::new("give-up");
    let out = w1(
        &d,
        &[
            "--set",
            "restart-strategy.type=fixed-delay",
            "--set",
            "restart-strategy.fixed-delay.attempts=2",
            "--set",
            "restart-strategy.fixed-delay.delay=10ms",
        ],
    )
    .env("WEIR_FAILPOINTS", "source-panic-always=700000")
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("; restarting (attempt").count(),
        2,
        "{stderr}"
    );
    assert!(
        stderr.contains("not restarting: restart-strategy fixed-delay: 2 attempts used"),
        "{stderr}"
    );
}
