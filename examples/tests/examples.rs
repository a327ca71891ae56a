//! Runs every example binary as a user would, on small input, and checks
//! its exit status and what it printed. Each example checks its own
//! result against a reference it computes without weir and prints
//! `verified: ...` (exit 0) or an `error: ...` (exit 1); these tests make
//! `cargo test --workspace` run them all, and drive the checkpointed one
//! through a SIGKILL and a SIGTERM with restores.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest an example may run here.
const LIMIT: Duration = Duration::from_secs(120);

/// Two unpinned workers: tests run side by side on shared cores.
const SMALL: [&str; 4] = [
    "--set",
    "parallelism.default=2",
    "--set",
    "weir.worker.pin-cores=false",
];

/// A fresh directory for test `tag` (removed first if it exists).
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-examples-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// The example binary `name`, with `args` and two unpinned workers,
/// started with its output captured.
fn start(bin: &str, args: &[&str]) -> Child {
    Command::new(bin)
        .args(args)
        .args(SMALL)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"))
}

/// Waits for `child` within [`LIMIT`] (killing it after that).
fn finish(mut child: Child, what: &str) -> Output {
    let deadline = Instant::now() + LIMIT;
    while child.try_wait().expect("wait for the example").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
        .wait_with_output()
        .expect("collect the example's output")
}

/// Runs example `bin` with `args` and returns its output.
fn run(bin: &str, args: &[&str]) -> Output {
    finish(start(bin, args), bin)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts that the run succeeded and verified its own result; returns
/// its stdout.
fn verified(o: &Output, what: &str) -> String {
    let (out, err) = (stdout(o), String::from_utf8_lossy(&o.stderr));
    assert!(
        o.status.success() && out.contains("verified: "),
        "{what} failed ({}):\n--- stdout\n{out}\n--- stderr\n{err}",
        o.status
    );
    out
}

#[test]
fn word_count_counts_the_bundled_texts() {
    let out_dir = temp_dir("word-count");
    let output = run(
        env!("CARGO_BIN_EXE_word_count"),
        &["--output", out_dir.to_str().unwrap()],
    );
    let out = verified(&output, "word_count");
    assert!(out.contains("most frequent words"), "{out}");
    // The committed files are what a user reads.
    let parts = committed_parts(&out_dir);
    assert!(!parts.is_empty(), "no part-* file in {}", out_dir.display());
    let text: String = parts
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        text.lines().any(|l| l == "weir 2"),
        "`weir` is in the texts twice:\n{text}"
    );
    // A second run into the same directory starts over (the first run's
    // parts are moved aside) and verifies again.
    let again = run(
        env!("CARGO_BIN_EXE_word_count"),
        &["--output", out_dir.to_str().unwrap()],
    );
    verified(&again, "word_count run again");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn word_count_reads_a_directory_of_many_files() {
    let root = temp_dir("word-count-many");
    let input = root.join("in");
    std::fs::create_dir_all(&input).unwrap();
    for f in 0..7 {
        let text: String = (0..300)
            .map(|i| {
                format!(
                    "line {i} of file {f} says w{} and w{}\n",
                    i % 13,
                    (i * f) % 29
                )
            })
            .collect();
        std::fs::write(input.join(format!("part-{f}.txt")), text).unwrap();
    }
    std::fs::write(input.join(".hidden"), "skipped skipped skipped\n").unwrap();
    let output = run(
        env!("CARGO_BIN_EXE_word_count"),
        &[
            "--input",
            input.to_str().unwrap(),
            "--output",
            root.join("out").to_str().unwrap(),
        ],
    );
    let out = verified(&output, "word_count over generated files");
    assert!(
        !out.contains("skipped"),
        "hidden files are not read:\n{out}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn word_count_refuses_a_missing_input_directory() {
    let root = temp_dir("word-count-missing");
    let output = run(
        env!("CARGO_BIN_EXE_word_count"),
        &[
            "--input",
            root.join("nope").to_str().unwrap(),
            "--output",
            root.join("out").to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("error: cannot read input directory"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn sensor_windows_fire_late_and_drop_what_is_too_late() {
    let output = run(env!("CARGO_BIN_EXE_sensor_windows"), &[]);
    let out = verified(&output, "sensor_windows");
    assert!(out.contains("(fired again: a late reading"), "{out}");
    assert!(out.contains("late: sensor 3 at 21.3 s"), "{out}");
}

#[test]
fn fraud_detection_finds_the_alerts_of_the_rule() {
    let output = run(
        env!("CARGO_BIN_EXE_fraud_detection"),
        &["--transactions", "50000"],
    );
    let out = verified(&output, "fraud_detection");
    assert!(out.contains("ALERT account"), "{out}");
}

#[test]
fn checkpointed_totals_runs_to_the_end() {
    let root = temp_dir("totals-plain");
    let out_dir = root.join("out");
    let output = run(
        env!("CARGO_BIN_EXE_checkpointed_totals"),
        &[
            "--output",
            out_dir.to_str().unwrap(),
            "--payments",
            "50000",
            "--set",
            "execution.checkpointing.interval=50ms",
        ],
    );
    verified(&output, "checkpointed_totals");
    assert!(
        root.join("out-checkpoints").is_dir(),
        "checkpoints go next to the output by default"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn checkpointed_totals_runs_with_its_config_file() {
    let root = temp_dir("totals-config");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/checkpointed_totals.toml");
    let output = run(
        env!("CARGO_BIN_EXE_checkpointed_totals"),
        &[
            "--config",
            config,
            "--output",
            root.join("out").to_str().unwrap(),
            "--payments",
            "20000",
            // The file's directories are under /tmp; this test's are its own.
            "--set",
            &format!("state.checkpoints.dir={}", root.join("ck").display()),
            "--set",
            &format!("state.savepoints.dir={}", root.join("sp").display()),
        ],
    );
    let out = verified(&output, "checkpointed_totals --config");
    assert!(out.contains("checkpoints every 500ms"), "{out}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Starts the checkpointed example paced to last several seconds, with
/// checkpoints every 100 ms into `root/checkpoints`, and waits for its
/// first complete checkpoint.
fn start_paced_totals(root: &Path) -> Child {
    let checkpoints = root.join("checkpoints");
    let child = start(
        env!("CARGO_BIN_EXE_checkpointed_totals"),
        &[
            "--output",
            root.join("out").to_str().unwrap(),
            "--payments",
            "100000",
            "--rate",
            "10000",
            "--set",
            "execution.checkpointing.interval=100ms",
            "--set",
            &format!("state.checkpoints.dir={}", checkpoints.display()),
        ],
    );
    let deadline = Instant::now() + LIMIT;
    while !has_completed_checkpoint(&checkpoints) {
        assert!(
            Instant::now() < deadline,
            "no checkpoint completed within {LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The same job, restored from `from`, unpaced, to its end.
fn restore_totals(root: &Path, from: &str) -> Output {
    run(
        env!("CARGO_BIN_EXE_checkpointed_totals"),
        &[
            "--output",
            root.join("out").to_str().unwrap(),
            "--payments",
            "100000",
            "--set",
            &format!(
                "state.checkpoints.dir={}",
                root.join("checkpoints").display()
            ),
            "--restore",
            from,
        ],
    )
}

#[test]
fn checkpointed_totals_killed_and_restored_writes_every_line_once() {
    let root = temp_dir("totals-kill");
    let mut child = start_paced_totals(&root);
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("SIGKILL the example");
    let killed = finish(child, "the killed run");
    assert!(!killed.status.success(), "it was killed mid-run");

    let restored = restore_totals(&root, "latest");
    let out = verified(&restored, "the restored run");
    assert!(out.contains("restored checkpoint"), "{out}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn checkpointed_totals_stopped_by_sigterm_resumes_from_its_snapshot() {
    let root = temp_dir("totals-stop");
    let child = start_paced_totals(&root);
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
    let stopped = finish(child, "the stopped run");
    let out = stdout(&stopped);
    assert!(stopped.status.success(), "a stop exits 0:\n{out}");
    let snapshot = out
        .lines()
        .find_map(|l| l.strip_prefix("stopped with a checkpoint: "))
        .unwrap_or_else(|| panic!("no snapshot printed:\n{out}"))
        .to_owned();

    let restored = restore_totals(&root, &snapshot);
    let out = verified(&restored, "the run restored from the stop's snapshot");
    assert!(out.contains("restored checkpoint"), "{out}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn checkpointed_totals_refuses_a_config_without_checkpoints() {
    let root = temp_dir("totals-no-checkpoints");
    let config = root.join("plain.toml");
    std::fs::write(&config, "parallelism.default = 1\n").unwrap();
    let output = run(
        env!("CARGO_BIN_EXE_checkpointed_totals"),
        &[
            "--output",
            root.join("out").to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("needs checkpoints"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

/// The committed `part-*` files of `dir`.
fn committed_parts(dir: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("part-"))
        })
        .collect();
    parts.sort();
    parts
}

/// True once `dir` holds a complete checkpoint (a `chk-<id>` with its
/// `_metadata`).
fn has_completed_checkpoint(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with("chk-")
                && e.path().join("_metadata").exists()
        })
    })
}
