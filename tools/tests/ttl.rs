//! End-to-end test of `weir bench ttl` from the binary: keys written once
//! into TTL state are gone a few TTLs later, and the process's resident
//! memory went down with them.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
/// The longest the run may take before the test calls it a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// One run of `weir bench ttl`: its exit status, output and last line as
/// JSON (if it printed one).
struct Run {
    success: bool,
    said: String,
    report: Option<Value>,
}

fn run_bench_ttl() -> Run {
    let mut child = Command::new(WEIR)
        .args([
            "bench",
            "ttl",
            "--k",
            "500000",
            "--workers",
            "2",
            "--quiet",
            "--set",
            "job.ttl=1s",
            "--set",
            // Five TTLs: a debug build on a busy machine sweeps slowly.
            "job.wait=5s",
        ])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weir runs");
    let started = Instant::now();
    while child.try_wait().expect("wait for weir").is_none() {
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            panic!("weir bench ttl did not finish within {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("weir's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<Value>(l).ok());
    Run {
        success: output.status.success(),
        said: format!(
            "{}:\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
        report,
    }
}

#[test]
fn bench_ttl_gives_the_memory_of_expired_keys_back() {
    let mut run = run_bench_ttl();
    // TTL is processing time, the system clock (as Flink's): a time
    // daemon stepping that clock during the run moves every expiry with
    // it. The bench reports such a step; only then is the run repeated.
    let step = |run: &Run| {
        run.report
            .as_ref()
            .and_then(|r| r["clock_step_ms"].as_i64())
            .unwrap_or(0)
    };
    if !run.success && step(&run).abs() >= 100 {
        eprintln!(
            "the system clock was stepped by {} ms during the run; running again",
            step(&run)
        );
        run = run_bench_ttl();
    }
    assert!(run.success, "weir bench ttl failed ({})", run.said);
    let report = run.report.expect("the last line is JSON");
    let n = |field: &str| {
        report[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{field} in {report}"))
    };
    assert_eq!(report["workload"], "ttl");
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!(report["stale_subtasks"], serde_json::json!([]), "{report}");
    // 500,000 keys: per worker a table of 512 Ki slots of 24 bytes, in a
    // slab (mmapped) arena. At most 10% of it is left (all expired four
    // TTLs ago, so in fact none).
    assert!(n("state_bytes_peak") >= 20e6, "{report}");
    assert!(
        n("state_bytes_final") <= 0.1 * n("state_bytes_peak"),
        "{report}"
    );
    // The arenas went back to the system: the resident size fell by at
    // least half of the state's peak. (Tables under 4 MiB live in heap
    // chunks, which mimalloc returns only when the idle worker allocates
    // again: a smaller run would not show it.)
    let fell = n("rss_bytes_at_state_peak") - n("rss_bytes_final");
    assert!(fell >= n("state_bytes_peak") / 2.0, "{report}");
}
