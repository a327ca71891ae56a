//! Failures as a user of the `weir` binary meets them: an error a restart
//! cannot cure exits 2 at once with one `error:` line and no panic output
//! (a refused rescale, a sink that cannot write its file, a checkpoint
//! directory another run holds or that is a file), while an operator's
//! panic still goes through the restart strategy and the job completes
//! with exactly-once output.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
/// The longest one `weir` invocation may take before the test calls it a
/// hang (a failure retried forever would be one).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("weir-failures-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `command` (stdin closed, output captured, `RUST_LOG` not
/// inherited), killing it and failing the test after [`RUN_TIMEOUT`].
/// Returns its output and how long it ran.
fn run(mut command: Command) -> (Output, Duration) {
    let started = Instant::now();
    let child = command
        .env_remove("RUST_LOG")
        .env_remove("WEIR_TRACE_CHECKPOINTS")
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
        Ok(output) => (output.expect("wait for weir"), started.elapsed()),
        Err(RecvTimeoutError::Timeout) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("{command:?} did not exit within {RUN_TIMEOUT:?}")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("lost the weir child process"),
    }
}

fn weir(args: &[&str]) -> Command {
    let mut c = Command::new(WEIR);
    c.args(args);
    c
}

fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What a user sees of an expected failure: exit 2, the reason on one
/// `error:` line, no panic and no backtrace, no restart.
fn assert_fails_fast_and_clean(output: &Output) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{}", describe(output));
    assert!(
        err.lines().any(|l| l.starts_with("error: ")),
        "{}",
        describe(output)
    );
    for noise in ["panicked at", "stack backtrace", "RUST_BACKTRACE"] {
        assert!(!err.contains(noise), "`{noise}` in {}", describe(output));
    }
    assert!(
        !err.contains("restarting"),
        "not for the restart strategy: {}",
        describe(output)
    );
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp dir")
}

/// The scenario of issue 17, after issue 18 made it a rescale that
/// succeeds: a two-worker quickstart run with checkpoints, then
/// `--restore latest` on one worker with another max parallelism. Key
/// groups cannot be remapped: the run exits 2 at once, well before the
/// restart strategy's first delay, naming the setting, instead of
/// restarting forever.
#[test]
fn a_restore_that_cannot_succeed_exits_2_at_once_without_a_panic() {
    let d = Scratch::new("rescale");
    let ck = d.join("ck");
    let dir = format!("state.checkpoints.dir={}", path(&ck));
    let common = [
        "--set",
        "job.records=200000",
        "--set",
        "execution.checkpointing.interval=50ms",
        "--set",
        &dir,
    ];
    let mut first = weir(&["run", "--workers", "2"]);
    first.args(common);
    let (out, _) = run(first);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));

    // The default strategy with checkpointing on is exponential-delay; a
    // first delay of 20 s makes a restart impossible to miss.
    let mut second = weir(&["run", "--workers", "1", "--restore", "latest"]);
    second.args(common).args([
        "--set",
        "pipeline.max-parallelism=64",
        "--set",
        "restart-strategy.exponential-delay.initial-backoff=20s",
    ]);
    second.env("RUST_BACKTRACE", "1");
    let (out, took) = run(second);
    assert_fails_fast_and_clean(&out);
    let err = stderr(&out);
    assert!(
        err.contains("max-parallelism") && err.contains("64"),
        "{}",
        describe(&out)
    );
    assert!(
        took < Duration::from_secs(10),
        "took {took:?}: not through the restart strategy's 20 s delay"
    );

    // The same checkpoint on one worker with the max parallelism it was
    // taken with: a rescale, which completes.
    let mut third = weir(&["run", "--workers", "1", "--restore", "latest"]);
    third.args(common);
    let (out, _) = run(third);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

/// The sink cannot write its in-progress file: the process may write no
/// file above 32 KiB (`ulimit -f 64`, in 512-byte blocks for sh, with
/// SIGXFSZ ignored so that the write fails with EFBIG), and the sink
/// writes 256 KiB at a time. The error names the file and the reason; a
/// replay would write the same bytes, so even a restart strategy that
/// allows restarts is not consulted. Nothing is committed.
#[test]
fn a_sink_that_cannot_write_its_file_reports_it_without_a_panic() {
    let d = Scratch::new("sink-write");
    let out_dir = d.join("out");
    let mut c = Command::new("sh");
    c.args([
        "-c",
        r#"ulimit -f 64 && trap "" XFSZ && exec "$0" "$@""#,
        WEIR,
        "bench",
        "w1",
        "--quiet",
        "--n",
        "200000",
        "--k",
        "100",
        "--workers",
        "2",
        "--output",
        path(&out_dir),
        "--set",
        "restart-strategy.type=fixed-delay",
        "--set",
        "restart-strategy.fixed-delay.attempts=3",
        "--set",
        "restart-strategy.fixed-delay.delay=10ms",
    ]);
    c.env("RUST_BACKTRACE", "1");
    let (out, _) = run(c);
    assert_fails_fast_and_clean(&out);
    let err = stderr(&out);
    assert!(
        err.contains("sink `w1-output-sink`")
            && err.contains("failed to write its records: cannot write in-progress file")
            && err.contains(path(&out_dir))
            && err.contains("File too large"),
        "{}",
        describe(&out)
    );
    let committed: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("part-"))
        .collect();
    assert!(committed.is_empty(), "{committed:?}");
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The committed `part-*` lines of W1 hold, for every key seen `c` times
/// among records `0..n`, the counts `1..=c`, each exactly once.
fn assert_exactly_once(dir: &Path, n: u64, k: u64) {
    let mut want: HashMap<u64, u64> = HashMap::new();
    for i in 0..n {
        *want.entry(splitmix64(i) % k).or_default() += 1;
    }
    let mut seen = HashSet::new();
    let mut lines = 0u64;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if !entry.file_name().to_string_lossy().starts_with("part-") {
            continue;
        }
        for line in std::fs::read_to_string(entry.path()).unwrap().lines() {
            let mut fields = line.split(',').map(|f| f.parse::<u64>().unwrap());
            let (key, count) = (fields.next().unwrap(), fields.next().unwrap());
            assert!(seen.insert((key, count)), "duplicated line {line}");
            assert!(count >= 1 && count <= want[&key], "line {line} too many");
            lines += 1;
        }
    }
    assert_eq!(lines, n, "every record's line, once");
}

/// A user function's panic (here the source's, by fail point) is a failure
/// a restart may cure: the default restart strategy (exponential-delay,
/// with checkpointing on) restarts the job from its latest checkpoint and
/// the output is exactly once.
#[test]
fn a_panicking_function_is_still_restarted() {
    let (n, k) = (600_000u64, 1_000u64);
    let d = Scratch::new("panic-restart");
    let out_dir = d.join("out");
    let ck = format!("state.checkpoints.dir={}", path(&d.join("ck")));
    let mut c = weir(&[
        "bench",
        "w1",
        "--quiet",
        "--n",
        &n.to_string(),
        "--k",
        &k.to_string(),
        "--workers",
        "2",
        "--output",
        path(&out_dir),
        "--set",
        "execution.checkpointing.interval=50ms",
        "--set",
        &ck,
        "--set",
        "restart-strategy.exponential-delay.initial-backoff=10ms",
    ]);
    c.env("WEIR_FAILPOINTS", "source-panic=400000");
    let (out, _) = run(c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        err.contains("injected failure (fail point source-panic at") && err.contains("restarting"),
        "{}",
        describe(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["restarts"], 1, "{report}");
    assert_eq!(report["output"]["exactly_once"], true, "{report}");
    assert_exactly_once(&out_dir, n, k);
}

/// A checkpoint directory that is a regular file: exit 2, naming it.
#[test]
fn a_checkpoint_directory_that_is_a_file_exits_2() {
    let d = Scratch::new("dir-is-file");
    let file = d.join("ck");
    std::fs::write(&file, b"not a directory").unwrap();
    let dir = format!("state.checkpoints.dir={}", path(&file));
    let (out, _) = run(weir(&[
        "bench",
        "w1",
        "--quiet",
        "--n",
        "1000",
        "--set",
        "execution.checkpointing.interval=50ms",
        "--set",
        &dir,
    ]));
    assert_fails_fast_and_clean(&out);
    assert!(stderr(&out).contains(path(&file)), "{}", describe(&out));
}

/// A second run into a checkpoint directory a running job holds exits 2
/// at once, naming the holder, and leaves the first run alone.
#[test]
fn a_checkpoint_directory_in_use_exits_2() {
    let d = Scratch::new("locked");
    let ck = d.join("ck");
    let dir = format!("state.checkpoints.dir={}", path(&ck));
    // Paced: it runs until killed.
    let args = [
        "bench",
        "w1",
        "--quiet",
        "--workers",
        "1",
        "--n",
        "100000000",
        "--rate",
        "1000",
        "--set",
        "execution.checkpointing.interval=100ms",
        "--set",
        &dir,
    ];
    let mut first = weir(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = ck.join(".weir-lock");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&lock).map_or(true, |pid| pid.trim().is_empty()) {
        assert!(
            Instant::now() < deadline,
            "the first run never took {lock:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (out, _) = run(weir(&args));
    let _ = first.kill();
    let _ = first.wait();
    assert_fails_fast_and_clean(&out);
    assert!(
        stderr(&out).contains(&format!("is in use by process {}", first.id())),
        "{}",
        describe(&out)
    );
}
