//! End-to-end tests of the `weir` command line: the real binary, its exit
//! codes, its JSON report and its configuration errors.
//!
//! Expected checksums are computed here, independently of weir-bench.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
const QUICKSTART_TOML: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/quickstart.toml");
const M: u64 = 0x9E37_79B9_7F4A_7C15;
/// The longest one `weir` invocation may take before the test calls it a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Benchmarks measure time; running them one at a time keeps the timing
/// figures (W3's achieved rate) undisturbed by the other tests' runs.
static BENCH_LOCK: Mutex<()> = Mutex::new(());

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// W1's checksum in closed form: per key with count c, the sinks add
/// `key·M + 1, key·M + 2, …, key·M + c`, i.e. `c·key·M + c(c+1)/2`.
fn w1_checksum(n: u64, k: u64) -> u64 {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for i in 0..n {
        *counts.entry(splitmix64(i) % k).or_default() += 1;
    }
    counts.iter().fold(0u64, |acc, (&key, &c)| {
        acc.wrapping_add(c.wrapping_mul(key).wrapping_mul(M))
            .wrapping_add(c * (c + 1) / 2)
    })
}

/// Runs `weir args…`, failing the test if it does not exit within
/// [`RUN_TIMEOUT`] (the child is then killed).
fn weir(args: &[&str]) -> Output {
    weir_with_env(args, &[])
}

/// [`weir`] with environment variables `env` set. `RUST_LOG` and
/// `WEIR_TRACE_CHECKPOINTS` are not inherited: what weir prints on stderr
/// is then the same wherever the tests run.
fn weir_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let child = Command::new(WEIR)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("WEIR_TRACE_CHECKPOINTS")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the weir binary");
    let pid = child.id();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(RUN_TIMEOUT) {
        Ok(output) => output.expect("wait for weir"),
        Err(RecvTimeoutError::Timeout) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!(
                "`weir {}` did not exit within {RUN_TIMEOUT:?}",
                args.join(" ")
            )
        }
        Err(RecvTimeoutError::Disconnected) => panic!("lost the weir child process"),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

/// The JSON object on the last line of stdout.
fn last_line_json(output: &Output) -> Value {
    let stdout = text(&output.stdout);
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("no output: {}", describe(output)));
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("last line is not JSON ({e}): {}", describe(output)))
}

fn number(report: &Value, field: &str) -> f64 {
    report[field]
        .as_f64()
        .unwrap_or_else(|| panic!("`{field}` is not a number in {report}"))
}

fn bench_w1(workers: usize) {
    let (n, k) = (1_000_000u64, 1_000u64);
    let expected = w1_checksum(n, k);
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "bench",
            "w1",
            "--n",
            &n.to_string(),
            "--k",
            &k.to_string(),
            "--workers",
            &workers.to_string(),
            "--quiet",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["workload"], "w1", "{report}");
    assert_eq!(report["workers"].as_u64(), Some(workers as u64), "{report}");
    assert_eq!(report["records"].as_u64(), Some(n), "{report}");
    assert_eq!(
        report["checksum"].as_str(),
        Some(expected.to_string().as_str()),
        "checksum against this test's own reference: {report}"
    );
    assert!(number(&report, "elapsed_s") > 0.0, "{report}");
    assert!(number(&report, "records_per_s") > 0.0, "{report}");
    check_subtasks(&report, workers, n);
}

/// The report's `subtasks`: a source and a keyed-count subtask per worker,
/// each with times adding up to about 1000 ms/s, a level, and records and
/// bytes that add up across the exchange.
fn check_subtasks(report: &Value, workers: usize, n: u64) {
    let subtasks = report["subtasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no `subtasks` list in {report}"));
    assert_eq!(subtasks.len(), 2 * workers, "{report}");
    let (mut out_records, mut in_records, mut out_bytes, mut in_bytes) = (0, 0, 0, 0);
    for s in subtasks {
        let total = number(s, "busy_ms_per_s")
            + number(s, "backpressured_ms_per_s")
            + number(s, "idle_ms_per_s");
        assert!((900.0..=1100.0).contains(&total), "times add up: {s}");
        let level = s["backpressure"].as_str().unwrap_or_default();
        assert!(["OK", "LOW", "HIGH"].contains(&level), "{s}");
        assert!(
            s["worker"].as_u64().is_some_and(|w| w < workers as u64),
            "{s}"
        );
        let name = s["name"].as_str().unwrap_or_default();
        let field = |f: &str| s[f].as_u64().unwrap_or_else(|| panic!("`{f}` in {s}"));
        if name.starts_with("w1-source") {
            assert_eq!(
                s["in_flight_bytes"].as_array().map(Vec::len),
                Some(workers),
                "{s}"
            );
            out_records += field("records_out");
            out_bytes += field("bytes_out");
        } else {
            in_records += field("records_in");
            in_bytes += field("bytes_in");
        }
    }
    assert_eq!((out_records, in_records), (n, n), "{report}");
    assert_eq!(
        out_bytes, in_bytes,
        "every byte shipped was taken: {report}"
    );
    assert_eq!(out_bytes, 16 * n, "two u64 per record: {report}");
}

#[test]
fn bench_w1_one_worker() {
    bench_w1(1);
}

#[test]
fn bench_w1_two_workers() {
    bench_w1(2);
}

#[test]
fn bench_w1_three_workers() {
    bench_w1(3);
}

/// W2 by brute force: `(key, window_start)` -> `(count, sum)` over every
/// record, then the checksum of WORKLOADS.md over the windows.
fn w2_reference(n: u64, k: u64) -> (u64, u64) {
    let mut windows: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
    for i in 0..n {
        let ts = i / 1000;
        let w = windows
            .entry((splitmix64(i) % k, ts - ts % 1000))
            .or_default();
        w.0 += 1;
        w.1 = w.1.wrapping_add(i);
    }
    let checksum = windows
        .iter()
        .fold(0u64, |acc, (&(key, start), &(c, sum))| {
            acc.wrapping_add(key.wrapping_mul(M))
                .wrapping_add(start)
                .wrapping_add(c.wrapping_mul(31))
                .wrapping_add(sum)
        });
    (windows.len() as u64, checksum)
}

#[test]
fn bench_w2_fires_every_window_with_the_reference_checksum() {
    // 1.5 event-time seconds: a full window and a half one per key.
    let (n, k) = (1_500_000u64, 300u64);
    let (windows, checksum) = w2_reference(n, k);
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "bench",
            "w2",
            "--n",
            &n.to_string(),
            "--k",
            &k.to_string(),
            "--workers",
            "2",
            "--quiet",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["workload"], "w2", "{report}");
    assert_eq!(report["windows"].as_u64(), Some(windows), "{report}");
    assert_eq!(report["records"].as_u64(), Some(n), "{report}");
    assert_eq!(
        report["checksum"].as_str(),
        Some(checksum.to_string().as_str()),
        "checksum against this test's own reference: {report}"
    );
    assert_eq!(report["verified"], true, "{report}");
    assert!(number(&report, "records_per_s") > 0.0, "{report}");
}

/// W2 with checkpoints and a source failure two thirds in: the job
/// restarts in process from a checkpoint (open windows, their timers and
/// the sinks' totals restored) and still fires every window exactly once.
#[test]
fn bench_w2_restores_open_windows_after_a_failure() {
    let (n, k) = (3_000_000u64, 200u64);
    let (windows, checksum) = w2_reference(n, k);
    let dir = scratch_dir("w2-failover");
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        Command::new(WEIR)
            .args([
                "bench",
                "w2",
                "--n",
                &n.to_string(),
                "--k",
                &k.to_string(),
                "--workers",
                "2",
                "--quiet",
                "--set",
                "execution.checkpointing.interval=20ms",
                "--set",
                &format!("state.checkpoints.dir={}", dir.display()),
                "--set",
                "restart-strategy.type=fixed-delay",
                "--set",
                "restart-strategy.fixed-delay.delay=10ms",
            ])
            .env("WEIR_FAILPOINTS", "source-panic=2000000")
            .stdin(Stdio::null())
            .output()
            .expect("run the weir binary")
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["restarts"], 1, "{report}");
    assert!(
        report["restored"]["checkpoint"].as_u64().is_some(),
        "restarted from a checkpoint: {report}"
    );
    assert_eq!(report["windows"].as_u64(), Some(windows), "{report}");
    assert_eq!(report["records"].as_u64(), Some(n), "{report}");
    assert_eq!(
        report["checksum"].as_str(),
        Some(checksum.to_string().as_str()),
        "{report}"
    );
}

#[test]
fn bench_w3_paced_latency_report() {
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "bench",
            "w3",
            "--rate",
            "20000",
            "--warmup",
            "1",
            "--duration",
            "1",
            "--workers",
            "2",
            "--quiet",
            "--set",
            "execution.buffer-timeout=0ms",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["workload"], "w3", "{report}");
    assert_eq!(report["verified"], true, "{report}");
    assert!(report["records"].as_u64().unwrap_or(0) > 0, "{report}");
    let rate = number(&report, "achieved_rate");
    assert!(
        (16_000.0..=24_000.0).contains(&rate),
        "achieved rate {rate} not within 20% of 20000: {report}"
    );
    let latency = &report["latency_us"];
    let p = |q: &str| {
        latency[q]
            .as_f64()
            .unwrap_or_else(|| panic!("latency_us.{q} missing: {report}"))
    };
    let (p50, p99, p999, p9999, max) = (p("p50"), p("p99"), p("p999"), p("p9999"), p("max"));
    assert!(p50 > 0.0, "{report}");
    assert!(
        p50 <= p99 && p99 <= p999 && p999 <= p9999 && p9999 <= max,
        "percentiles out of order: {report}"
    );
}

/// A unique scratch directory for one test.
fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

#[test]
fn run_quickstart_config_verifies() {
    let config = if Path::new(QUICKSTART_TOML).exists() {
        PathBuf::from(QUICKSTART_TOML)
    } else {
        let path = scratch_dir("quickstart").join("quickstart.toml");
        std::fs::write(&path, "job.name = \"quickstart\"\n").unwrap();
        path
    };
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--set",
            "job.records=2000000",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        text(&output.stdout).contains("verified"),
        "{}",
        describe(&output)
    );
}

/// `weir bench quickstart` and `weir bench sql` run as the workloads do:
/// a verified quickstart, and a SQL script whose generated table
/// `--n`/`--rate` size and pace, each with its JSON line last; a SQL
/// bench without a script, or with `--k`, and either with a `--warmup` or
/// `--duration` (they run to the end), is a usage error.
#[test]
fn bench_quickstart_and_sql_print_their_json_line() {
    let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = weir(&["bench", "quickstart", "--n", "200000", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let j = last_line_json(&out);
    assert_eq!(j["job"], "quickstart", "{j}");
    assert_eq!(j["verified"], true, "{j}");
    assert_eq!(j["source_records"], 200_000, "{j}");
    // The filter drops the runts, the rest reach the sink.
    assert!(number(&j, "records") < 200_000.0 && number(&j, "records") > 190_000.0);

    let dir = scratch_dir("bench-sql");
    let script = dir.join("count.sql");
    std::fs::write(
        &script,
        "CREATE TABLE g (k BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', \
         'fields.k.min' = '0', 'fields.k.max' = '9');\n\
         CREATE TABLE out (k BIGINT) WITH ('connector' = 'blackhole');\n\
         INSERT INTO out SELECT k FROM g;\n",
    )
    .unwrap();
    let file = format!("job.sql-file={}", script.display());
    let out = weir(&[
        "bench", "sql", "--set", &file, "--n", "3000", "--rate", "10000", "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let j = last_line_json(&out);
    assert_eq!(j["job"], "sql", "{j}");
    assert_eq!(j["verified"], Value::Null, "{j}");
    // --n replaced the table's 10 rows; --rate paced them (0.3 s at least).
    assert_eq!(j["records"], 3000, "{j}");
    assert!(number(&j, "elapsed_s") >= 0.29, "{j}");
    assert!(number(&j, "achieved_rate") <= 10_500.0, "{j}");

    let out = weir(&["bench", "sql", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("job.sql-file"),
        "{}",
        describe(&out)
    );
    let out = weir(&["bench", "sql", "--set", &file, "--k", "5"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(text(&out.stderr).contains("--k"), "{}", describe(&out));
    // They run their records to the end: a time is refused, not ignored.
    for (flag, bench) in [("--duration", "sql"), ("--warmup", "quickstart")] {
        let out = weir(&["bench", bench, "--set", &file, flag, "2s"]);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(text(&out.stderr).contains(flag), "{}", describe(&out));
    }
}

/// A paced run's `achieved_rate` counts the paced sources' own records
/// only: a SQL job reading a generated table (paced by `--rate`) and a
/// file (read as fast as it goes) reports the generated table's rate, not
/// all rows over its time.
#[test]
fn achieved_rate_counts_only_the_paced_sources() {
    let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("bench-sql-mixed");
    let rows: String = (0..20_000).map(|i| format!("{i}\n")).collect();
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    std::fs::write(dir.join("keys").join("keys.csv"), rows).unwrap();
    let script = dir.join("mixed.sql");
    std::fs::write(
        &script,
        format!(
            "CREATE TABLE g (k BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', \
             'fields.k.min' = '0', 'fields.k.max' = '9');\n\
             CREATE TABLE f (k BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', \
             'format' = 'csv');\n\
             CREATE TABLE out (k BIGINT) WITH ('connector' = 'blackhole');\n\
             INSERT INTO out SELECT k FROM g UNION ALL SELECT k FROM f;\n",
            dir.join("keys").display()
        ),
    )
    .unwrap();
    let file = format!("job.sql-file={}", script.display());
    let out = weir(&[
        "bench", "sql", "--set", &file, "--n", "3000", "--rate", "10000", "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let j = last_line_json(&out);
    assert_eq!(j["records"], 23_000, "{j}");
    assert_eq!(j["source_records"], 23_000, "{j}");
    // 3,000 rows at 10,000/s: about 10,000/s, where all 23,000 rows over
    // the generated table's 0.3 s would say 75,000.
    let achieved = number(&j, "achieved_rate");
    assert!((2_000.0..=10_500.0).contains(&achieved), "{j}");
}

/// `WEIR_TRACE_CHECKPOINTS=1` prints the checkpoint trace (timed lines,
/// ids as fields) next to the usual messages; without it a run with
/// checkpoints prints no trace line.
#[test]
fn checkpoint_trace_is_printed_when_asked_for() {
    let dir = scratch_dir("trace");
    let checkpoints = format!("state.checkpoints.dir={}", dir.join("chk").display());
    let run = |restore: &[&'static str], env: &[(&str, &str)]| {
        let mut args = vec![
            "bench",
            "w1",
            "--n",
            "200000",
            "--k",
            "1000",
            "--workers",
            "1",
            "--quiet",
            "--set",
            "execution.checkpointing.interval=50ms",
            "--set",
            &checkpoints,
        ];
        args.extend_from_slice(restore);
        let output = {
            let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            weir_with_env(&args, env)
        };
        assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
        text(&output.stderr)
    };
    // The final checkpoint at the end of the input completes at least.
    let quiet = run(&[], &[]);
    assert!(!quiet.contains("[checkpoint"), "{quiet}");
    let traced = run(&["--restore", "latest"], &[("WEIR_TRACE_CHECKPOINTS", "1")]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        traced
            .lines()
            .any(|l| l.starts_with("restoring checkpoint ") && l.contains(" from ")),
        "{traced}"
    );
    for event in [
        "triggered",
        "source: barrier injected",
        "acknowledged",
        "completed",
    ] {
        assert!(
            traced
                .lines()
                .any(|l| l.starts_with("[checkpoint ") && l.contains(&format!(" ms] {event} "))),
            "no `{event}` line: {traced}"
        );
    }
}

/// Runs weir with a config problem and returns its stderr, after checking
/// the exit code is 2. A tiny `job.records` keeps the run short should the
/// problem go unnoticed.
fn config_error(args: &[&str]) -> String {
    let mut all = vec!["run", "--set", "job.records=1000"];
    all.extend_from_slice(args);
    let output = weir(&all);
    assert_eq!(
        output.status.code(),
        Some(2),
        "a config error exits with 2: {}",
        describe(&output)
    );
    text(&output.stderr)
}

#[test]
fn unknown_key_is_named_with_a_suggestion() {
    let stderr = config_error(&["--set", "execution.bufer-timeout=1ms"]);
    assert!(stderr.contains("execution.bufer-timeout"), "{stderr}");
    assert!(
        stderr.contains("did you mean `execution.buffer-timeout`"),
        "{stderr}"
    );
}

#[test]
fn bad_override_value_names_the_key() {
    let stderr = config_error(&["--set", "execution.buffer-timeout=fast"]);
    assert!(stderr.contains("execution.buffer-timeout"), "{stderr}");
    assert!(stderr.contains("fast"), "{stderr}");
}

#[test]
fn bad_value_in_a_config_file_names_the_key_and_the_file() {
    let path = scratch_dir("bad-value").join("bad.toml");
    std::fs::write(&path, "pipeline.max-parallelism = 0\n").unwrap();
    let stderr = config_error(&["--config", path.to_str().unwrap()]);
    assert!(stderr.contains("pipeline.max-parallelism"), "{stderr}");
    assert!(stderr.contains("bad.toml"), "{stderr}");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn missing_config_file_is_named() {
    let path = scratch_dir("missing").join("does-not-exist.toml");
    let stderr = config_error(&["--config", path.to_str().unwrap()]);
    assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn override_without_equals_sign_is_rejected() {
    let stderr = config_error(&["--set", "execution.buffer-timeout"]);
    assert!(stderr.contains("execution.buffer-timeout"), "{stderr}");
    assert!(stderr.contains("key=value"), "{stderr}");
}

#[test]
fn unknown_workload_is_a_usage_error() {
    let output = weir(&["bench", "w9"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(text(&output.stderr).contains("w9"), "{}", describe(&output));
}

/// W4 in aligned mode end to end: a short run under backpressure from the
/// slow sink takes checkpoints into a temporary directory (named on stderr
/// and deleted afterwards) and reports them, with the sink rate, in the
/// fields WORKLOADS.md asks for.
#[test]
fn bench_w4_aligned_reports_checkpoints_under_backpressure() {
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "bench",
            "w4",
            "--mode",
            "aligned",
            "--duration",
            "2",
            "--workers",
            "2",
            "--quiet",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["workload"], "w4", "{report}");
    assert_eq!(report["mode"], "aligned", "{report}");
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!(report["duration_s"].as_f64(), Some(2.0), "{report}");
    assert_eq!(report["unaligned"], false, "{report}");
    assert_eq!(report["debloat"], false, "{report}");
    assert_eq!(
        report["checkpoint_interval_ms"].as_f64(),
        Some(1000.0),
        "{report}"
    );
    // Two sinks spinning 10 us per record take at most 200,000 records/s.
    let rate = number(&report, "sink_records_per_s");
    assert!(rate > 0.0 && rate <= 200_000.0 * 1.01, "{report}");
    assert!(report["records"].as_u64().unwrap_or(0) > 0, "{report}");

    let c = &report["checkpoints"];
    let completed = c["completed"].as_u64().unwrap_or(0);
    assert!(completed > 0, "no checkpoint completed: {report}");
    assert!(c["failed"].as_u64().is_some(), "{report}");
    for field in ["duration_ms", "alignment_ms"] {
        let (p50, max) = (c[field]["p50"].as_f64(), c[field]["max"].as_f64());
        assert!(
            matches!((p50, max), (Some(p), Some(m)) if 0.0 <= p && p <= m),
            "{field}: {report}"
        );
    }
    assert!(c["bytes"].as_u64().unwrap_or(0) > 0, "{report}");
    assert_eq!(c["inflight_bytes"].as_u64(), Some(0), "aligned: {report}");
    let list = report["checkpoint_list"]
        .as_array()
        .expect("checkpoint_list");
    let done = list.iter().filter(|r| r["status"] == "completed").count();
    assert_eq!(done as u64, completed, "{report}");
    let subtasks = report["subtasks"].as_array().expect("subtasks");
    assert_eq!(subtasks.len(), 4, "two sources, two keyed/sink: {report}");

    // The temporary checkpoint directory was announced and removed.
    let stderr = text(&output.stderr);
    let dir = stderr
        .lines()
        .find_map(|l| l.split("checkpoints go to ").nth(1))
        .and_then(|rest| rest.split(" (deleted").next())
        .unwrap_or_else(|| panic!("no checkpoint directory named: {stderr}"));
    assert!(!Path::new(dir).exists(), "{dir} was left behind");
}

/// W4 with unaligned checkpoints: barriers overtake the data in flight,
/// which is persisted (in-flight bytes reported) and the run verifies.
#[test]
fn bench_w4_unaligned_persists_data_in_flight() {
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "bench",
            "w4",
            "--mode",
            "unaligned",
            "--duration",
            "2",
            "--workers",
            "2",
            "--quiet",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["unaligned"], true, "{report}");
    assert_eq!(report["verified"], true, "{report}");
    let c = &report["checkpoints"];
    assert!(c["completed"].as_u64().unwrap_or(0) > 0, "{report}");
    assert_eq!(c["failed"].as_u64(), Some(0), "{report}");
    assert!(
        c["inflight_bytes"].as_u64().unwrap_or(0) > 0,
        "under backpressure an unaligned checkpoint persists data in flight: {report}"
    );
}

/// W4 without checkpoints (the baseline) reports no checkpoints; an
/// unaligned mode with AT_LEAST_ONCE is a configuration error.
#[test]
fn bench_w4_baseline_and_a_bad_mode_combination() {
    let output = {
        let _serial = BENCH_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        weir(&[
            "bench",
            "w4",
            "--mode",
            "none",
            "--duration",
            "1",
            "--workers",
            "2",
            "--quiet",
        ])
    };
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = last_line_json(&output);
    assert_eq!(report["mode"], "none", "{report}");
    assert_eq!(report["verified"], true, "{report}");
    assert!(report["checkpoints"].is_null(), "{report}");
    assert_eq!(report["checkpoint_list"].as_array().map(Vec::len), Some(0));
    assert!(number(&report, "sink_records_per_s") > 0.0, "{report}");

    let output = weir(&[
        "bench",
        "w4",
        "--mode",
        "unaligned",
        "--set",
        "execution.checkpointing.mode=AT_LEAST_ONCE",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("execution.checkpointing.unaligned.enabled")
            && stderr.contains("AT_LEAST_ONCE"),
        "{stderr}"
    );
    let output = weir(&["bench", "w1", "--mode", "aligned"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
}
