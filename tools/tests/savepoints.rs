//! Savepoints as a user of the `weir` binary meets them (issue 18): SIGTERM
//! or SIGINT stops a run with a savepoint whose path it prints; the
//! savepoint restores to the output of an uninterrupted run, exactly once,
//! also after it was moved, and however many checkpoints retention deleted
//! meanwhile (weir never changes it); a second SIGINT aborts at once and
//! the next run recovers from the last checkpoint; state of an operator the
//! new job lacks is refused naming it, or skipped with
//! `--allow-non-restored-state`; `weir checkpoints` lists, describes and
//! verifies what is there.
//!
//! The W1 runs use one worker, so the committed output (`key,count,sum`
//! per record) is known in closed form and compared line by line.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::{complete_checkpoints, splitmix64, WEIR};

const FINISH: Duration = Duration::from_secs(60);
const CONDITION: Duration = Duration::from_secs(20);

/// W1's committed output of an uninterrupted one-worker run, sorted.
fn w1_expected(n: u64, k: u64) -> Vec<String> {
    let mut totals: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            let key = splitmix64(i) % k;
            let t = totals.entry(key).or_default();
            t.0 += 1;
            t.1 = t.1.wrapping_add(i);
            format!("{key},{},{}", t.0, t.1)
        })
        .collect();
    lines.sort();
    lines
}

/// One test's directory: checkpoints `ck`, savepoints `sp`, output `out`,
/// and the runs' stdout and stderr (kept if the test fails).
struct Scratch {
    root: PathBuf,
    runs: AtomicU64,
}

impl Scratch {
    fn new(test: &str) -> Self {
        let base = fs::canonicalize(std::env::temp_dir()).unwrap();
        let root = base.join(format!("weir-savepoints-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        Self {
            root,
            runs: AtomicU64::new(0),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// `weir bench w1` on one worker: `n` records at `rate`/s, output into
    /// `out` (if given), checkpoints every 200 ms into `ck` keeping
    /// `retained`, savepoints into `sp`.
    fn w1(&self, n: u64, rate: Option<u64>, out: bool, retained: u32) -> Command {
        let mut c = Command::new(WEIR);
        c.args(["bench", "w1", "--quiet", "--workers", "1"]).args([
            "--n",
            &n.to_string(),
            "--k",
            "50",
        ]);
        if let Some(r) = rate {
            c.args(["--rate", &r.to_string()]);
        }
        if out {
            c.arg("--output").arg(self.path("out"));
        }
        for set in [
            format!("state.checkpoints.dir={}", self.path("ck").display()),
            format!("state.savepoints.dir={}", self.path("sp").display()),
            "execution.checkpointing.interval=200ms".into(),
            format!("state.checkpoints.num-retained={retained}"),
            "weir.worker.pin-cores=false".into(),
        ] {
            c.arg("--set").arg(set);
        }
        c.env("RUST_BACKTRACE", "1")
            .env_remove("RUST_LOG")
            .env_remove("WEIR_FAILPOINTS")
            .stdin(Stdio::null());
        c
    }

    fn spawn(&self, label: &str, cmd: &mut Command) -> Proc {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let stdout = self.path(&format!("run-{n:02}-{label}.stdout"));
        let stderr = self.path(&format!("run-{n:02}-{label}.stderr"));
        let child = cmd
            .stdout(File::create(&stdout).unwrap())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("start weir");
        Proc {
            label: label.into(),
            child,
            stdout,
            stderr,
            started: Instant::now(),
            done: false,
        }
    }

    fn run(&self, label: &str, cmd: &mut Command) -> Finished {
        self.spawn(label, cmd).wait()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {}", self.root.display());
        } else {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

struct Proc {
    label: String,
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    started: Instant,
    done: bool,
}

impl Proc {
    fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{signal}");
    }

    fn wait_until(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let since = Instant::now();
        while !cond() {
            assert!(
                self.child.try_wait().unwrap().is_none(),
                "`{}` ended before {what}\n{}",
                self.label,
                fs::read_to_string(&self.stderr).unwrap_or_default()
            );
            assert!(since.elapsed() < CONDITION, "no {what} in {CONDITION:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn wait(mut self) -> Finished {
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                self.started.elapsed() < FINISH,
                "`{}` did not exit in {FINISH:?}",
                self.label
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        self.done = true;
        Finished {
            label: self.label.clone(),
            status,
            stdout: fs::read_to_string(&self.stdout).unwrap_or_default(),
            stderr: fs::read_to_string(&self.stderr).unwrap_or_default(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Finished {
    label: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn describe(&self) -> String {
        format!(
            "`{}`: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.label, self.status, self.stdout, self.stderr
        )
    }

    fn assert_exit(&self, code: i32, why: &str) {
        assert_eq!(self.status.code(), Some(code), "{why}\n{}", self.describe());
        for mark in ["panicked at", "stack backtrace"] {
            assert!(!self.stderr.contains(mark), "no panic\n{}", self.describe());
        }
    }

    /// The path of `stopped with a savepoint: PATH`.
    fn savepoint(&self) -> PathBuf {
        let line = self
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("stopped with a savepoint: "))
            .unwrap_or_else(|| panic!("no savepoint line\n{}", self.describe()));
        PathBuf::from(line.trim())
    }

    fn report(&self) -> Value {
        let last = self.stdout.lines().last().unwrap_or_default();
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}\n{}", self.describe()))
    }
}

/// Every committed line of `out`, sorted.
fn committed_lines(out: &Path) -> Vec<String> {
    let mut lines: Vec<String> = fs::read_dir(out)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_str()?.to_owned();
            name.starts_with("part-")
                .then(|| fs::read_to_string(e.path()).unwrap())
        })
        .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    lines.sort();
    lines
}

/// Files under `dir` (recursively) with their contents, lock files left
/// out.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_name() == ".weir-lock" {
                // Rewritten by every process that takes the lock.
                continue;
            }
            if p.is_dir() {
                todo.push(p);
            } else {
                all.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                );
            }
        }
    }
    all
}

/// Runs W1 (200 records at 50/s, four seconds) until two checkpoints
/// completed and stops it with `signal`: exit 0, the savepoint's path on
/// stdout, nothing pending in the output.
fn stop_midway(s: &Scratch, signal: &str) -> (Finished, PathBuf) {
    let mut run = s.spawn("first", &mut s.w1(200, Some(50), true, 1));
    let ck = s.path("ck");
    let mut seen = Vec::new();
    run.wait_until("two complete checkpoints", || {
        for id in complete_checkpoints(&ck) {
            if !seen.contains(&id) {
                seen.push(id);
            }
        }
        seen.len() >= 2
    });
    run.signal(signal);
    let first = run.wait();
    first.assert_exit(0, &format!("{signal} stops the run gracefully"));
    let savepoint = first.savepoint();
    assert!(
        savepoint.starts_with(s.path("sp"))
            && savepoint
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("savepoint-"),
        "a savepoint-* directory in state.savepoints.dir: {}",
        savepoint.display()
    );
    assert!(savepoint.join("_metadata").is_file());
    let lines = committed_lines(&s.path("out"));
    assert!(
        !lines.is_empty() && lines.len() < 200,
        "a prefix of the output is committed: {} lines",
        lines.len()
    );
    let pending: Vec<String> = fs::read_dir(s.path("out"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".pending"))
        .collect();
    assert!(
        pending.is_empty(),
        "the savepoint's transaction is committed: {pending:?}"
    );
    (first, savepoint)
}

#[test]
fn sigterm_stops_with_a_savepoint_that_restores_exactly_once_moved_and_after_retention() {
    let s = Scratch::new("sigterm");
    let (_, savepoint) = stop_midway(&s, "TERM");

    // Moved elsewhere (as to another machine): its references are relative.
    let moved = s.path("elsewhere").join("my-savepoint");
    fs::create_dir_all(moved.parent().unwrap()).unwrap();
    fs::rename(&savepoint, &moved).unwrap();
    let before = tree(&moved);

    // Restored, and run on paced so that retention (1) deletes several
    // checkpoints meanwhile.
    let restored = s.run(
        "restore",
        s.w1(200, Some(100), true, 1).arg("--restore").arg(&moved),
    );
    restored.assert_exit(0, "the run restored from the savepoint completes");
    let report = restored.report();
    assert_eq!(
        report["output"]["exactly_once"],
        true,
        "{}",
        restored.describe()
    );
    assert!(
        restored.stderr.contains("restoring savepoint"),
        "{}",
        restored.describe()
    );
    assert_eq!(
        committed_lines(&s.path("out")),
        w1_expected(200, 50),
        "the output equals an uninterrupted run's"
    );
    assert!(
        report["checkpoints"]["completed"].as_u64().unwrap() >= 2,
        "checkpoints were taken (and retention deleted some): {}",
        report["checkpoints"]
    );
    assert_eq!(
        before,
        tree(&moved),
        "weir never changes a savepoint (no claim)"
    );

    // The new run's checkpoints name the savepoint as their parent.
    let describe = s.run(
        "describe",
        Command::new(WEIR)
            .args(["checkpoints", "describe", "--json"])
            .arg(
                s.path("ck")
                    .join(format!("chk-{}", complete_checkpoints(&s.path("ck"))[0])),
            ),
    );
    describe.assert_exit(0, "describe a checkpoint");
    let m: Value = serde_json::from_str(describe.stdout.trim()).unwrap();
    let sp_id = moved_id(&moved);
    assert!(m["parent"].as_u64().unwrap() >= sp_id, "{m}");
}

/// The id in a savepoint's manifest (via the inspector).
fn moved_id(dir: &Path) -> u64 {
    let out = Command::new(WEIR)
        .args(["checkpoints", "describe", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "savepoint", "{v}");
    v["id"].as_u64().unwrap()
}

#[test]
fn sigint_stops_too_and_a_copy_restores_leaving_the_original_alone() {
    let s = Scratch::new("sigint");
    let (_, savepoint) = stop_midway(&s, "INT");
    let copy = s.path("copy-of-savepoint");
    fs::create_dir_all(&copy).unwrap();
    for e in fs::read_dir(&savepoint).unwrap().flatten() {
        fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let original = tree(&savepoint);
    let restored = s.run(
        "restore-copy",
        s.w1(200, None, true, 1).arg("--restore").arg(&copy),
    );
    restored.assert_exit(0, "a copied savepoint restores");
    assert_eq!(committed_lines(&s.path("out")), w1_expected(200, 50));
    assert_eq!(original, tree(&savepoint), "the original is untouched");
}

#[test]
fn a_second_sigint_aborts_and_the_next_run_recovers_from_the_last_checkpoint() {
    let s = Scratch::new("abort");
    let mut cmd = s.w1(200, Some(50), true, 2);
    // The stop's savepoint waits 2 s to be triggered: the second signal
    // comes while the stop is under way.
    cmd.env("WEIR_FAILPOINTS", "stop-delay=2000");
    let mut run = s.spawn("aborted", &mut cmd);
    let ck = s.path("ck");
    run.wait_until("a complete checkpoint", || {
        !complete_checkpoints(&ck).is_empty()
    });
    run.signal("INT");
    std::thread::sleep(Duration::from_millis(300));
    run.signal("INT");
    let aborted = run.wait();
    assert_eq!(aborted.status.code(), Some(130), "{}", aborted.describe());
    assert!(
        !aborted.stdout.contains("stopped with"),
        "no savepoint\n{}",
        aborted.describe()
    );
    assert!(
        aborted.stderr.contains("aborting"),
        "{}",
        aborted.describe()
    );
    let savepoints: Vec<_> = fs::read_dir(s.path("sp"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("_metadata").is_file())
        .collect();
    assert!(savepoints.is_empty(), "no complete savepoint");

    let next = s.run(
        "restore-latest",
        s.w1(200, None, true, 2).args(["--restore", "latest"]),
    );
    next.assert_exit(0, "the next run recovers from the last checkpoint");
    assert!(next.report()["restored"]["checkpoint"].is_u64());
    assert_eq!(
        committed_lines(&s.path("out")),
        w1_expected(200, 50),
        "exactly once after the abort"
    );
}

/// A second SIGINT while the stop's savepoint is written but not complete
/// removes its directory, as Flink disposes of a failed savepoint: nothing
/// half-written stays in `state.savepoints.dir`.
#[test]
fn a_second_sigint_removes_the_incomplete_savepoint() {
    let s = Scratch::new("abort-written");
    let mut cmd = s.w1(200, Some(50), true, 2);
    // The stop's savepoint waits 10 s before its manifest is written.
    cmd.env("WEIR_FAILPOINTS", "stop-complete-delay=10000");
    let mut run = s.spawn("aborted", &mut cmd);
    let (ck, sp) = (s.path("ck"), s.path("sp"));
    run.wait_until("a complete checkpoint", || {
        !complete_checkpoints(&ck).is_empty()
    });
    run.signal("INT");
    let savepoint_dirs = || -> Vec<PathBuf> {
        fs::read_dir(&sp)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect()
    };
    // Its segments are written (the delay holds only the manifest back).
    run.wait_until("the savepoint's segments", || {
        savepoint_dirs().iter().any(|d| {
            fs::read_dir(d)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| e.file_name() != "_metadata")
        })
    });
    run.signal("INT");
    let aborted = run.wait();
    assert_eq!(aborted.status.code(), Some(130), "{}", aborted.describe());
    assert!(
        aborted.stderr.contains("removed the incomplete savepoint"),
        "{}",
        aborted.describe()
    );
    assert_eq!(
        savepoint_dirs(),
        Vec::<PathBuf>::new(),
        "nothing left in sp"
    );
    let next = s.run(
        "restore-latest",
        s.w1(200, None, true, 2).args(["--restore", "latest"]),
    );
    next.assert_exit(0, "the next run recovers from the last checkpoint");
    assert_eq!(
        committed_lines(&s.path("out")),
        w1_expected(200, 50),
        "exactly once after the abort"
    );
}

#[test]
fn state_of_a_missing_operator_is_refused_naming_it_or_skipped_when_allowed() {
    let s = Scratch::new("non-restored");
    let (_, savepoint) = stop_midway(&s, "TERM");
    // W1 without --output has a checksum sink instead of `w1-output-sink`.
    let refused = s.run(
        "refused",
        s.w1(200, None, false, 1).arg("--restore").arg(&savepoint),
    );
    refused.assert_exit(2, "state of an operator the job lacks is refused");
    assert!(
        refused.stderr.contains("`w1-output-sink`")
            && refused.stderr.contains("--allow-non-restored-state"),
        "{}",
        refused.describe()
    );
    let allowed = s.run(
        "allowed",
        s.w1(200, None, false, 1)
            .arg("--restore")
            .arg(&savepoint)
            .arg("--allow-non-restored-state"),
    );
    assert!(
        allowed
            .stderr
            .contains("skipping the state of operator `w1-output-sink`"),
        "{}",
        allowed.describe()
    );
    // The run goes through; its new checksum sink starts empty, so it
    // counts only the records after the savepoint (the bench then reports
    // a mismatch with the reference, exit 1), never a refusal.
    let report = allowed.report();
    assert_eq!(
        report["restored"]["checkpoint"].as_u64(),
        Some(moved_id(&savepoint))
    );
    let records = report["records"].as_u64().unwrap();
    assert!(records > 0 && records < 200, "{}", allowed.describe());
}

#[test]
fn the_inspector_lists_describes_and_verifies_and_names_a_corrupt_block() {
    let s = Scratch::new("inspect");
    let (_, savepoint) = stop_midway(&s, "TERM");
    let list = s.run(
        "list",
        Command::new(WEIR)
            .args(["checkpoints", "list", "--json"])
            .arg(s.path("sp")),
    );
    list.assert_exit(0, "list a savepoints directory");
    let all: Value = serde_json::from_str(list.stdout.trim()).unwrap();
    let one = &all[0];
    assert_eq!(one["kind"], "savepoint", "{all}");
    assert_eq!(one["verified"], true);
    assert_eq!(one["job_name"], "w1-keyed-count");
    assert_eq!(one["parallelism"], 1);
    assert_eq!(one["max_parallelism"], 128);
    let uids: Vec<&str> = one["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["uid"].as_str().unwrap())
        .collect();
    assert!(uids.contains(&"w1-keyed-count"), "{uids:?}");

    let table = s.run(
        "list-ck",
        Command::new(WEIR)
            .args(["checkpoints", "list"])
            .arg(s.path("ck")),
    );
    table.assert_exit(0, "list a checkpoint directory");
    assert!(table.stdout.contains("checkpoint") && table.stdout.contains("verified"));

    let text = s.run(
        "describe",
        Command::new(WEIR)
            .args(["checkpoints", "describe"])
            .arg(&savepoint),
    );
    text.assert_exit(0, "describe a savepoint");
    assert!(
        text.stdout.contains("key groups [0, 128)"),
        "{}",
        text.describe()
    );

    // A flipped byte in a block: verify exits 2 naming the segment.
    let segment = savepoint.join("w000.seg");
    let mut bytes = fs::read(&segment).unwrap();
    bytes[100] ^= 1;
    fs::write(&segment, bytes).unwrap();
    let bad = s.run(
        "verify",
        Command::new(WEIR)
            .args(["checkpoints", "verify"])
            .arg(&savepoint),
    );
    bad.assert_exit(2, "a corrupt savepoint fails verification");
    assert!(bad.stderr.contains("w000.seg"), "{}", bad.describe());
    // Restoring it is refused before anything changes, naming the file.
    let out_before = tree(&s.path("out"));
    let refused = s.run(
        "restore-corrupt",
        s.w1(200, None, true, 1).arg("--restore").arg(&savepoint),
    );
    refused.assert_exit(2, "a corrupt savepoint is not restored");
    assert!(
        refused.stderr.contains("w000.seg"),
        "{}",
        refused.describe()
    );
    assert_eq!(out_before, tree(&s.path("out")), "the output is untouched");
    let nowhere = s.run(
        "restore-missing",
        s.w1(200, None, true, 1)
            .arg("--restore")
            .arg(s.path("sp").join("savepoint-nothing-9")),
    );
    nowhere.assert_exit(2, "a missing savepoint is an error");
    assert!(
        nowhere.stderr.contains("savepoint-nothing-9"),
        "{}",
        nowhere.describe()
    );

    let missing = s.run(
        "missing",
        Command::new(WEIR)
            .args(["checkpoints", "list"])
            .arg(s.path("nothing-here")),
    );
    missing.assert_exit(2, "a missing directory is an error naming it");
    assert!(missing.stderr.contains("nothing-here"));
}

/// Probe 16: a stopped bench reported `records: 0` in its JSON line (its
/// sinks published their counts only when their input ended, which a stop
/// never does): it reports the records processed before the stop, here
/// one committed line each.
#[test]
fn a_stopped_bench_reports_the_records_processed_before_the_stop() {
    let s = Scratch::new("stopped-records");
    let (first, _) = stop_midway(&s, "TERM");
    let report = first.report();
    let lines = committed_lines(&s.path("out")).len() as u64;
    assert_eq!(
        report["records"].as_u64(),
        Some(lines),
        "records: one per committed line\n{}",
        first.describe()
    );
    assert!(
        report["records_per_s"].as_f64().is_some_and(|r| r > 0.0),
        "{}",
        first.describe()
    );
}

/// Probe 16: a stop aborted by a second signal (or a crash) between the
/// savepoint's segments and its manifest leaves `savepoint-*` without
/// `_metadata` (as Flink leaves its directory). `weir checkpoints list`
/// shows it incomplete, `verify` fails naming it, and `--restore` of it is
/// refused (exit 2) as a savepoint that never completed, naming the path,
/// with the output and checkpoints unchanged.
#[test]
fn a_savepoint_without_its_manifest_is_never_taken_for_a_good_one() {
    let s = Scratch::new("no-manifest");
    let (_, savepoint) = stop_midway(&s, "TERM");
    fs::remove_file(savepoint.join("_metadata")).unwrap();

    let list = s.run(
        "list",
        Command::new(WEIR)
            .args(["checkpoints", "list", "--json"])
            .arg(s.path("sp")),
    );
    list.assert_exit(0, "list a savepoints directory");
    let all: Value = serde_json::from_str(list.stdout.trim()).unwrap();
    assert_eq!(all[0]["kind"], "savepoint", "{all}");
    assert_eq!(all[0]["complete"], false, "{all}");
    assert_eq!(all[0]["verified"], false, "{all}");
    let verify = s.run(
        "verify",
        Command::new(WEIR)
            .args(["checkpoints", "verify"])
            .arg(&savepoint),
    );
    verify.assert_exit(2, "an incomplete savepoint fails verification");
    assert!(
        verify.stderr.contains(&savepoint.display().to_string()),
        "{}",
        verify.describe()
    );

    let out_before = tree(&s.path("out"));
    let ck_before = tree(&s.path("ck"));
    let refused = s.run(
        "restore-incomplete",
        s.w1(200, None, true, 1).arg("--restore").arg(&savepoint),
    );
    refused.assert_exit(2, "an incomplete savepoint is not restored");
    for text in [
        savepoint.display().to_string(),
        "the savepoint is incomplete".to_owned(),
    ] {
        assert!(
            refused.stderr.contains(&text),
            "{text}\n{}",
            refused.describe()
        );
    }
    assert_eq!(out_before, tree(&s.path("out")), "the output is untouched");
    assert_eq!(
        ck_before,
        tree(&s.path("ck")),
        "the checkpoints are untouched"
    );
}

/// Restores `savepoint` into `weir bench w1` with the arguments of the
/// run [`stop_midway`] stopped (200 records, with output) as `edit` leaves
/// them.
fn restore_w1(
    s: &Scratch,
    label: &str,
    savepoint: &Path,
    edit: impl FnOnce(&mut Vec<String>),
) -> Finished {
    let cmd = s.w1(200, None, true, 1);
    let mut args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    drop(cmd);
    edit(&mut args);
    s.run(
        label,
        Command::new(WEIR)
            .args(&args)
            .env_remove("WEIR_FAILPOINTS")
            .stdin(Stdio::null())
            .arg("--restore")
            .arg(savepoint),
    )
}

/// A savepoint of a run at one worker restores at two: sources, keyed
/// state and the file sink redistribute, and the output is exactly once.
#[test]
fn a_savepoint_restores_at_another_parallelism_exactly_once() {
    let s = Scratch::new("rescale");
    let (_, savepoint) = stop_midway(&s, "TERM");
    let restored = restore_w1(&s, "restore-2-workers", &savepoint, |args| {
        let at = args.iter().position(|a| a == "--workers").unwrap() + 1;
        args[at] = "2".into();
    });
    restored.assert_exit(0, "the savepoint restores at 2 workers");
    assert_eq!(restored.report()["output"]["exactly_once"], true);
}

/// A savepoint restored by a run without checkpointing: the end of its
/// input is the sink's one commit, under an id above the savepoint's (it
/// was 0, which the file sink refused: the run failed with exit 2 and
/// committed nothing after the savepoint).
#[test]
fn a_savepoint_restores_into_a_run_without_checkpointing() {
    let s = Scratch::new("unchecked");
    let (_, savepoint) = stop_midway(&s, "TERM");
    let restored = restore_w1(&s, "restore-unchecked", &savepoint, |args| {
        let at = args
            .iter()
            .position(|a| a.starts_with("execution.checkpointing.interval="))
            .unwrap();
        args.drain(at - 1..=at);
    });
    restored.assert_exit(0, "the savepoint restores without checkpointing");
    assert_eq!(restored.report()["output"]["exactly_once"], true);
}

/// The savepoint this version wrote and the repository keeps
/// (`state/tests/fixtures/savepoint-v4-w1`, see its README) restores, from
/// a copy (weir would not change it anyway), and the run ends with the
/// totals of all 300 records: later versions must keep reading it.
#[test]
fn the_kept_v4_savepoint_restores_and_completes_the_job() {
    let s = Scratch::new("fixture");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../state/tests/fixtures/savepoint-v4-w1");
    let copy = s.path("savepoint-v4-w1");
    fs::create_dir_all(&copy).unwrap();
    for name in ["_metadata", "w000.seg"] {
        fs::copy(fixture.join(name), copy.join(name)).unwrap();
    }
    let mut cmd = Command::new(WEIR);
    cmd.args([
        "bench",
        "w1",
        "--quiet",
        "--workers",
        "1",
        "--n",
        "300",
        "--k",
        "50",
    ])
    .arg("--set")
    .arg(format!("state.checkpoints.dir={}", s.path("ck").display()))
    .args(["--set", "execution.checkpointing.interval=500ms"])
    .args(["--set", "weir.worker.pin-cores=false"])
    .arg("--restore")
    .arg(&copy)
    .env_remove("RUST_LOG")
    .env_remove("WEIR_FAILPOINTS")
    .stdin(Stdio::null());
    let restored = s.run("restore-fixture", &mut cmd);
    restored.assert_exit(0, "the kept savepoint restores and the job verifies");
    let report = restored.report();
    assert_eq!(
        report["restored"]["checkpoint"],
        4,
        "{}",
        restored.describe()
    );
    assert_eq!(report["verified"], true);
    assert_eq!(report["records"], 300, "the totals of every record");
}

/// `weir run` (the quickstart job) stops on SIGTERM with a savepoint too,
/// and the run restored from it verifies every user's totals.
#[test]
fn weir_run_stops_with_a_savepoint_and_its_restore_verifies() {
    let s = Scratch::new("run");
    let run = |restore: Option<&Path>| {
        let mut c = Command::new(WEIR);
        c.args(["run", "--workers", "1"]);
        for set in [
            "job.records=12000000".to_owned(),
            "job.keys=100".into(),
            "execution.checkpointing.interval=200ms".into(),
            format!("state.checkpoints.dir={}", s.path("ck").display()),
            format!("state.savepoints.dir={}", s.path("sp").display()),
            "weir.progress.interval=0ms".into(),
            "weir.worker.pin-cores=false".into(),
        ] {
            c.arg("--set").arg(set);
        }
        if let Some(p) = restore {
            c.arg("--restore").arg(p);
        }
        c.env_remove("RUST_LOG")
            .env_remove("WEIR_FAILPOINTS")
            .stdin(Stdio::null());
        c
    };
    let mut first = s.spawn("run", &mut run(None));
    let ck = s.path("ck");
    first.wait_until("a complete checkpoint", || {
        !complete_checkpoints(&ck).is_empty()
    });
    first.signal("TERM");
    let stopped = first.wait();
    stopped.assert_exit(0, "weir run stops gracefully on SIGTERM");
    let savepoint = stopped.savepoint();
    assert!(
        !stopped.stdout.contains("verified:"),
        "{}",
        stopped.describe()
    );
    let restored = s.run("restore", &mut run(Some(&savepoint)));
    restored.assert_exit(0, "the restored quickstart completes");
    assert!(
        restored.stdout.contains("verified: all 100 users' totals"),
        "{}",
        restored.describe()
    );
}
