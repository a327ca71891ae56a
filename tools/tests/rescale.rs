//! Rescaling on every restore (issue 18), with the real `weir` binary: a
//! job is killed with SIGKILL at random moments and restored each time
//! with another `--workers`, and its committed output must hold every
//! result exactly once; the quickstart restored on fewer workers must give
//! an uninterrupted run's totals. (A restore that cannot succeed fails at
//! once with exit 2: `failures.rs`.)
//!
//! The kill moments are random (the seed is printed, and `WEIR_TEST_SEED`
//! replays one), each after the run completed a checkpoint of its own, so
//! every run restores state a run at another parallelism wrote.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod support;
use support::*;

/// A seed for the kill moments: `WEIR_TEST_SEED`, or the clock.
fn seed() -> u64 {
    let seed = std::env::var("WEIR_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("kill moments from seed {seed} (WEIR_TEST_SEED={seed} replays them)");
    seed
}

/// The judged scenario of issue 18: W1 with the transactional file sink,
/// SIGKILLed at random moments and restored each time with another
/// `--workers` (2 -> 1 -> 3 -> 2); the last run finishes. Every result is
/// committed exactly once.
#[test]
fn killed_and_restored_at_another_parallelism_each_time_commits_every_result_once() {
    let s = Scratch::new("rescale", "w1-kills");
    let (ck, out) = (s.join("ck"), s.join("out"));
    let (n, k) = (240_000u64, 1_000u64);
    let mut rng = seed();
    let w1 = |workers: usize| {
        let mut c = Command::new(WEIR);
        c.args(["bench", "w1", "--quiet", "--workers", &workers.to_string()])
            .args(["--n", &n.to_string(), "--k", &k.to_string()])
            .args(["--rate", "60000"])
            .arg("--output")
            .arg(&out)
            .arg("--set")
            .arg(format!("state.checkpoints.dir={}", ck.display()))
            .args(["--set", "execution.checkpointing.interval=150ms"])
            .args(["--set", "weir.worker.pin-cores=false"])
            .env("RUST_BACKTRACE", "1")
            .env_remove("RUST_LOG")
            .env_remove("WEIR_FAILPOINTS");
        c
    };
    let plan = [2usize, 1, 3, 2];
    for (i, &workers) in plan.iter().enumerate() {
        let last = i + 1 == plan.len();
        let mut cmd = w1(workers);
        if i > 0 {
            cmd.args(["--restore", "latest"]);
        }
        let label = format!("run{i}-workers{workers}");
        let mut run = Proc::spawn(&s, &label, cmd);
        if last {
            let status = run.wait(FINISH);
            assert!(status.success(), "`{label}`: {status}\n{}", run.stderr());
            break;
        }
        // A checkpoint of this run's own, then a random moment.
        let before = complete_checkpoints(&ck).last().copied().unwrap_or(0);
        let running = run.wait_until("a checkpoint of its own", || {
            complete_checkpoints(&ck)
                .last()
                .is_some_and(|&c| c > before)
        });
        assert!(running, "`{label}` finished before it could be killed");
        rng = splitmix64(rng);
        std::thread::sleep(Duration::from_millis(rng % 700));
        assert!(run.kill(), "`{label}` finished before it could be killed");
        let err = run.stderr();
        assert!(!err.contains("panicked"), "`{label}` panicked\n{err}");
        if i > 0 {
            assert!(
                err.contains("restoring checkpoint"),
                "`{label}` restored a checkpoint\n{err}"
            );
        }
    }
    assert_w1_exactly_once(&out, n, k, "after 2 -> 1 -> 3 -> 2 workers");
}

/// Issue 18: the quickstart run on 2 workers, killed, and restored on 1
/// completes with exactly the totals of an uninterrupted run (which it
/// verifies against a single-threaded computation, and prints).
#[test]
fn the_quickstart_killed_on_two_workers_completes_on_one() {
    quickstart_killed_and_restored("integer", "2", "1");
}

/// The same with `String` user ids (variable-size keys in the keyed
/// state, its checkpoints and the redistribution), 2 workers then 3.
#[test]
fn the_quickstart_with_string_ids_killed_on_two_workers_completes_on_three() {
    quickstart_killed_and_restored("string", "2", "3");
}

/// The same with `CompactString` user ids, 1 worker then 2.
#[test]
fn the_quickstart_with_compact_string_ids_killed_on_one_worker_completes_on_two() {
    quickstart_killed_and_restored("compact-string", "1", "2");
}

/// The quickstart over ids of `key_type`, killed after a checkpoint on
/// `from` workers and restored on `to`: the restored run verifies its
/// totals and prints the heaviest users an uninterrupted run prints.
fn quickstart_killed_and_restored(key_type: &str, from: &str, to: &str) {
    let s = Scratch::new("rescale", &format!("quickstart-{key_type}"));
    let ck = s.join("ck");
    let events = "4000000";
    let quickstart = |workers: &str| {
        let mut c = Command::new(WEIR);
        c.args(["run", "--workers", workers])
            .args(["--set", &format!("job.records={events}")])
            .args(["--set", &format!("job.key-type={key_type}")])
            .args(["--set", "execution.checkpointing.interval=100ms"])
            .arg("--set")
            .arg(format!("state.checkpoints.dir={}", ck.display()))
            .args(["--set", "weir.worker.pin-cores=false"])
            .env("RUST_BACKTRACE", "1")
            .env_remove("RUST_LOG");
        c
    };
    let mut first = Proc::spawn(&s, "first", quickstart(from));
    let running = first.wait_until("a complete checkpoint", || {
        !complete_checkpoints(&ck).is_empty()
    });
    assert!(running, "the first run finished before it could be killed");
    assert!(
        first.kill(),
        "the first run finished before it could be killed"
    );

    let mut second = quickstart(to);
    second.args(["--restore", "latest"]);
    let restored: Output = second.output().expect("run weir");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&restored.stdout),
        String::from_utf8_lossy(&restored.stderr),
    );
    assert!(
        restored.status.success(),
        "{}\n{stdout}\n{stderr}",
        restored.status
    );
    assert!(
        stderr.contains("restoring checkpoint"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("({key_type} ids)")),
        "the run used {key_type} ids\n{stdout}"
    );
    assert!(
        stdout.contains("verified: all") && stdout.contains("equal a single-threaded computation"),
        "the restored run's totals are an uninterrupted run's\n{stdout}\n{stderr}"
    );

    // The uninterrupted run prints the same heaviest users.
    let fresh: Output = Command::new(WEIR)
        .args(["run", "--workers", "1"])
        .args(["--set", &format!("job.records={events}")])
        .args(["--set", &format!("job.key-type={key_type}")])
        .args(["--set", "weir.worker.pin-cores=false"])
        .output()
        .expect("run weir");
    assert!(fresh.status.success());
    let heaviest = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.trim_start().starts_with("user "))
            .map(str::to_owned)
            .collect()
    };
    let fresh = String::from_utf8_lossy(&fresh.stdout).into_owned();
    assert!(!heaviest(&fresh).is_empty(), "{fresh}");
    assert_eq!(heaviest(&stdout), heaviest(&fresh));
}

/// The checkpoint statistics in `ck`'s `checkpoint-history.json`
/// (empty until the first checkpoint ended).
fn checkpoint_history(ck: &Path) -> Vec<serde_json::Value> {
    fs::read(ck.join("checkpoint-history.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Savepoints are always aligned (as in Flink): W1 with the transactional
/// file sink under backpressure (an unpaced source) with unaligned
/// checkpoints, whose checkpoints persist data in flight, is stopped with
/// SIGTERM; its savepoint holds no channel state, restores on 3 workers
/// instead of 2, and the output is every result exactly once.
#[test]
fn a_stop_under_unaligned_checkpoints_takes_an_aligned_savepoint_that_rescales() {
    let s = Scratch::new("rescale", "unaligned-stop");
    let (ck, sp, out) = (s.join("ck"), s.join("sp"), s.join("out"));
    let (n, k) = (2_000_000u64, 5_000u64);
    let w1 = |workers: &str| {
        let mut c = Command::new(WEIR);
        c.args(["bench", "w1", "--quiet", "--workers", workers])
            .args(["--n", &n.to_string(), "--k", &k.to_string()])
            .arg("--output")
            .arg(&out)
            .arg("--set")
            .arg(format!("state.checkpoints.dir={}", ck.display()))
            .arg("--set")
            .arg(format!("state.savepoints.dir={}", sp.display()))
            .args(["--set", "execution.checkpointing.interval=100ms"])
            .args(["--set", "execution.checkpointing.unaligned.enabled=true"])
            .args(["--set", "weir.worker.pin-cores=false"])
            .env("RUST_BACKTRACE", "1")
            .env_remove("RUST_LOG")
            .env_remove("WEIR_FAILPOINTS");
        c
    };
    let mut first = Proc::spawn(&s, "first-2-workers", w1("2"));
    let running = first.wait_until("a checkpoint with data in flight", || {
        checkpoint_history(&ck)
            .iter()
            .any(|r| r["status"] == "completed" && r["inflight_bytes"].as_u64().unwrap_or(0) > 0)
    });
    assert!(running, "the run finished before it could be stopped");
    let ok = Command::new("kill")
        .args(["-TERM", &first.child.id().to_string()])
        .status()
        .is_ok_and(|st| st.success());
    assert!(ok, "kill -TERM");
    let status = first.wait(FINISH);
    assert!(
        status.success(),
        "SIGTERM stops gracefully: {status}\n{}",
        first.stderr()
    );
    let stdout = fs::read_to_string(s.join("first-2-workers.stdout")).unwrap();
    let savepoint = stdout
        .lines()
        .find_map(|l| l.strip_prefix("stopped with a savepoint: "))
        .map(|p| PathBuf::from(p.trim()))
        .unwrap_or_else(|| panic!("no savepoint line\n{stdout}\n{}", first.stderr()));
    assert!(savepoint.starts_with(&sp), "{}", savepoint.display());

    // No channel state: no in-flight bytes in its statistics, and no
    // `weir.exchange-<n>.input` operator in its manifest.
    let id: u64 = savepoint
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|f| f.rsplit('-').next())
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("a savepoint-<job>-<id> directory: {}", savepoint.display()));
    let history = checkpoint_history(&ck);
    let record = history
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("savepoint {id} in the statistics: {history:?}"));
    assert_eq!(record["status"], "completed", "{record}");
    assert_eq!(record["inflight_bytes"], 0, "{record}");
    let described = Command::new(WEIR)
        .args(["checkpoints", "describe", "--json"])
        .arg(&savepoint)
        .output()
        .expect("run weir checkpoints describe");
    assert!(described.status.success(), "{described:?}");
    let manifest: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(manifest["kind"], "savepoint", "{manifest}");
    assert_eq!(manifest["verified"], true, "{manifest}");
    let uids: Vec<&str> = manifest["operators"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["uid"].as_str())
        .collect();
    assert!(uids.contains(&"w1-keyed-count"), "{uids:?}");
    assert!(
        !uids.iter().any(|u| u.starts_with("weir.exchange-")),
        "a savepoint holds no channel state: {uids:?}"
    );
    let committed = committed_lines(&out).len() as u64;
    assert!(
        0 < committed && committed < n,
        "a prefix is committed: {committed} of {n}"
    );

    // Restored on 3 workers, still with unaligned checkpoints on.
    let mut restore = w1("3");
    restore.arg("--restore").arg(&savepoint);
    let mut second = Proc::spawn(&s, "restore-3-workers", restore);
    let status = second.wait(FINISH);
    assert!(status.success(), "{status}\n{}", second.stderr());
    assert!(
        second.stderr().contains(&savepoint.display().to_string()),
        "the run restored the savepoint\n{}",
        second.stderr()
    );
    assert_w1_exactly_once(&out, n, k, "stopped on 2 workers, restored on 3");
}
