//! End-to-end test of `weir bench ttl` from the binary: keys written once
//! into TTL state are gone a few TTLs later, and the process's resident
//! memory went down with them.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
/// The longest the run may take before the test calls it a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn bench_ttl_gives_the_memory_of_expired_keys_back() {
    let mut child = Command::new(WEIR)
        .args([
            "bench",
            "ttl",
            "--k",
            "200000",
            "--workers",
            "2",
            "--quiet",
            "--set",
            "job.ttl=1s",
            "--set",
            "job.wait=3s",
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
    assert!(
        output.status.success(),
        "weir bench ttl failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.lines().last().expect("a JSON line"))
        .expect("the last line is JSON");
    let n = |field: &str| {
        report[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{field} in {report}"))
    };
    assert_eq!(report["workload"], "ttl");
    assert_eq!(report["verified"], true, "{report}");
    // 200,000 keys of 24-byte slots: megabytes at the peak, at most 10% of
    // them left (all expired three TTLs ago, so in fact none).
    assert!(n("state_bytes_peak") >= 4e6, "{report}");
    assert!(
        n("state_bytes_final") <= 0.1 * n("state_bytes_peak"),
        "{report}"
    );
    // The arena's memory went back to the system: the resident size fell
    // by at least half of what the state had added to it.
    let added = n("rss_bytes_at_state_peak") - n("rss_bytes_start");
    assert!(added > 0.0, "{report}");
    assert!(
        n("rss_bytes_final") <= n("rss_bytes_at_state_peak") - added / 2.0,
        "{report}"
    );
}
