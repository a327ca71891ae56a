//! Recovery as an operator lives it (issue 17): each scenario of the issue
//! is reproduced with the real `weir` binary — killed with SIGKILL at a
//! chosen moment, restored from a checkpoint the operator names, run twice
//! at once, given corrupt, foreign or misplaced checkpoints — and judged by
//! what a user would notice: the exit code, the message (its stable parts:
//! the path, the pid, the reason), what happened to the files, and above
//! all the committed output (`part-*` files of the output directory), which
//! must hold every line of an uninterrupted run exactly once.
//!
//! The tests are written against the ownership and restore rules of issue
//! 17 (locks on the checkpoint and output directories, lineage and
//! fingerprints in manifests, `D/_timeline` and `D/abandoned/`, rollbacks
//! moved to `OUT/.abandoned/`, exit 2 for errors a retry cannot fix, no
//! panics for expected errors), not against the behaviour before them.
//!
//! The W1 runs here use one worker: its single source emits records in
//! order, so the line of every record (`key,count,sum`) is known in closed
//! form ([`w1_expected`]) and the committed output is compared with it line
//! by line, as a sorted multiset. Every `weir` run gets `RUST_BACKTRACE=1`,
//! and every run whose failures are expected is checked to print no panic.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
/// The longest a run that should finish may take (it is then killed and
/// the test fails: a hang, or a failure retried forever).
const FINISH: Duration = Duration::from_secs(30);
/// The longest a run that should fail at start may take.
const FAIL_FAST: Duration = Duration::from_secs(15);
/// The longest to wait for a condition while a run is in progress.
const CONDITION: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------
// The W1 job and its expected output.

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A W1 run's parameters (the job's own: its fingerprint).
#[derive(Clone, Debug)]
struct W1 {
    n: u64,
    k: u64,
    rate: Option<u64>,
    workers: usize,
    output: Option<PathBuf>,
}

impl W1 {
    /// Slow enough to kill at a chosen checkpoint: 60 records at 15/s, four
    /// seconds (the issue's `--n 60 --k 100 --rate 2`, faster).
    fn slow(output: &Path) -> Self {
        Self {
            n: 60,
            k: 100,
            rate: Some(15),
            workers: 1,
            output: Some(output.to_path_buf()),
        }
    }

    /// Done in a moment: 4000 records, unpaced, one final checkpoint at
    /// least.
    fn quick(output: &Path) -> Self {
        Self {
            n: 4000,
            k: 97,
            rate: None,
            workers: 1,
            output: Some(output.to_path_buf()),
        }
    }

    fn with_rate(mut self, rate: u64) -> Self {
        self.rate = Some(rate);
        self
    }

    /// `weir bench w1` with these parameters and checkpoints in `d`; the
    /// caller adds the checkpoint settings and `--restore`.
    fn cmd(&self, d: &Path) -> Command {
        let mut c = Command::new(WEIR);
        c.args(["bench", "w1", "--quiet"])
            .args(["--workers", &self.workers.to_string()])
            .args(["--n", &self.n.to_string(), "--k", &self.k.to_string()]);
        if let Some(r) = self.rate {
            c.args(["--rate", &r.to_string()]);
        }
        if let Some(out) = &self.output {
            c.arg("--output").arg(out);
        }
        c.arg("--set")
            .arg(format!("state.checkpoints.dir={}", d.display()))
            .args(["--set", "weir.worker.pin-cores=false"])
            // A panic must show, with its backtrace, if there is one.
            .env("RUST_BACKTRACE", "1")
            .env_remove("RUST_LOG")
            .env_remove("WEIR_TRACE_CHECKPOINTS")
            .env_remove("WEIR_FAILPOINTS")
            .stdin(Stdio::null());
        c
    }

    /// The lines of an uninterrupted run (one worker: in this order per
    /// key), sorted.
    fn expected(&self) -> Vec<String> {
        assert_eq!(
            self.workers, 1,
            "the lines are known in closed form for one worker"
        );
        w1_expected(self.n, self.k)
    }
}

/// W1's committed output in closed form: record `i` has key
/// `splitmix64(i) % k` and value `i`; every record yields the line
/// `key,count,sum` of its key's totals so far. Sorted.
fn w1_expected(n: u64, k: u64) -> Vec<String> {
    let mut totals: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut lines = Vec::with_capacity(n as usize);
    for i in 0..n {
        let key = splitmix64(i) % k;
        let t = totals.entry(key).or_default();
        t.0 += 1;
        t.1 = t.1.wrapping_add(i);
        lines.push(format!("{key},{},{}", t.0, t.1));
    }
    lines.sort();
    lines
}

/// `execution.checkpointing.interval` and `state.checkpoints.num-retained`.
fn checkpointing(interval: &str, retained: u32) -> [String; 4] {
    [
        "--set".into(),
        format!("execution.checkpointing.interval={interval}"),
        "--set".into(),
        format!("state.checkpoints.num-retained={retained}"),
    ]
}

// ---------------------------------------------------------------------------
// Scratch directories and processes.

/// A unique directory for one test, removed at the end unless the test
/// failed (then it is kept, with the runs' stdout and stderr, to look at).
struct Scratch {
    root: PathBuf,
    runs: AtomicU64,
}

impl Scratch {
    fn new(test: &str) -> Self {
        // Canonical, so that the paths weir prints are the paths given.
        let base = fs::canonicalize(std::env::temp_dir()).expect("the temporary directory");
        let root = base.join(format!("weir-recovery-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).expect("create a scratch directory");
        Self {
            root,
            runs: AtomicU64::new(0),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Starts `cmd`, its stdout and stderr going to files in the scratch
    /// directory (so that they survive a SIGKILL).
    fn spawn(&self, label: &str, cmd: &mut Command) -> Proc {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let stdout = self.path(&format!("run-{n:02}-{label}.stdout"));
        let stderr = self.path(&format!("run-{n:02}-{label}.stderr"));
        let child = cmd
            .stdout(File::create(&stdout).unwrap())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("start the weir binary");
        Proc {
            label: label.to_owned(),
            child,
            stdout,
            stderr,
            started: Instant::now(),
            status: None,
        }
    }

    /// Runs `cmd` to its end (at most `timeout`).
    fn run(&self, label: &str, cmd: &mut Command, timeout: Duration) -> Finished {
        self.spawn(label, cmd).wait(timeout)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "kept {} (runs' stdout and stderr inside)",
                self.root.display()
            );
        } else {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// A running `weir`; killed when dropped (also when stopped with SIGSTOP),
/// so that a failing test leaves no process behind.
struct Proc {
    label: String,
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
    started: Instant,
    status: Option<ExitStatus>,
}

impl Proc {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn poll(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().expect("poll the weir child");
        }
        self.status
    }

    fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits until `cond` holds; fails the test if the run ends first or
    /// it takes longer than [`CONDITION`].
    fn wait_until(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let since = Instant::now();
        loop {
            if cond() {
                return;
            }
            if let Some(status) = self.poll() {
                // One last look: the condition may have come with the end.
                assert!(
                    cond(),
                    "`{}` ended ({status}) before {what}: the run must be long enough\n{}",
                    self.label,
                    tail(&self.stderr())
                );
                return;
            }
            assert!(
                since.elapsed() < CONDITION,
                "`{}`: no {what} within {CONDITION:?}\n{}",
                self.label,
                tail(&self.stderr())
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL (the process must still be running: it is killed, not
    /// finished).
    fn kill(&mut self) {
        assert!(
            self.poll().is_none(),
            "`{}` ended before it could be killed: the run must be long enough\n{}",
            self.label,
            tail(&self.stderr())
        );
        self.child.kill().expect("SIGKILL");
        self.status = Some(self.child.wait().expect("reap the killed child"));
    }

    fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{signal} {}", self.pid());
    }

    /// Waits for the end (at most `timeout`, else kills it and fails).
    fn wait(mut self, timeout: Duration) -> Finished {
        let status = loop {
            if let Some(s) = self.poll() {
                break s;
            }
            if self.started.elapsed() > timeout {
                let _ = self.child.kill();
                let _ = self.child.wait();
                self.status = Some(ExitStatus::default());
                panic!(
                    "`{}` did not exit within {timeout:?} (a hang, or a failure retried forever)\n{}",
                    self.label,
                    tail(&self.stderr())
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Finished {
            label: self.label.clone(),
            status,
            elapsed: self.started.elapsed(),
            stdout: fs::read_to_string(&self.stdout).unwrap_or_default(),
            stderr: self.stderr(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The last lines of a log, without backtrace frames (which would push
/// the messages out of sight).
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            let frame = t
                .split_once(": ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            !(frame || t.starts_with("at "))
        })
        .collect();
    let shown = &lines[lines.len().saturating_sub(40)..];
    format!(
        "--- stderr (last {} of {} lines, backtrace frames left out) ---\n{}",
        shown.len(),
        lines.len(),
        shown.join("\n")
    )
}

/// A run that ended.
struct Finished {
    label: String,
    status: ExitStatus,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn describe(&self) -> String {
        format!(
            "`{}`: {} after {:.1} s\n--- stdout ---\n{}\n{}",
            self.label,
            self.status,
            self.elapsed.as_secs_f64(),
            self.stdout.lines().take(20).collect::<Vec<_>>().join("\n"),
            tail(&self.stderr)
        )
    }

    fn assert_exit(&self, code: i32, why: &str) {
        assert_eq!(
            self.status.code(),
            Some(code),
            "{why}: expected exit {code}\n{}",
            self.describe()
        );
    }

    /// Exit 2 with an `error: ` line, no panic, within [`FAIL_FAST`].
    fn assert_refused(&self, why: &str) {
        self.assert_exit(2, why);
        assert!(
            self.stderr.contains("error: "),
            "{why}: an `error: ` line\n{}",
            self.describe()
        );
        self.assert_no_panic();
    }

    /// Contract 11: expected failures are typed errors, never panics.
    fn assert_no_panic(&self) {
        for mark in ["panicked at", "stack backtrace"] {
            assert!(
                !self.stderr.contains(mark),
                "`{mark}` on stderr: expected failures must not panic\n{}",
                self.describe()
            );
        }
    }

    fn assert_stderr_names(&self, what: &str, text: &str) {
        assert!(
            self.stderr.contains(text),
            "stderr names {what} (`{text}`)\n{}",
            self.describe()
        );
    }

    /// The JSON report (the last line of stdout).
    fn report(&self) -> Value {
        let last = self
            .stdout
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_else(|| panic!("no report\n{}", self.describe()));
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("the last line is not JSON ({e})\n{}", self.describe()))
    }

    /// The id of the checkpoint the (last attempt of the) run restored,
    /// `None` for a fresh start.
    fn restored(&self) -> Option<u64> {
        self.report()["restored"]["checkpoint"].as_u64()
    }
}

// ---------------------------------------------------------------------------
// Files: checkpoints, committed output, snapshots of directories.

/// Ids of the complete checkpoints directly in `d` (a `chk-<id>`
/// directory with its `_metadata`), ascending.
fn complete_checkpoints(d: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = fs::read_dir(d)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let id = e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok()?;
            e.path().join("_metadata").is_file().then_some(id)
        })
        .collect();
    ids.sort_unstable();
    ids
}

fn chk(d: &Path, id: u64) -> PathBuf {
    d.join(format!("chk-{id}"))
}

/// The transaction (checkpoint) id of a committed file `part-SSSS-NNNN`.
fn part_id(name: &str) -> Option<u64> {
    name.strip_prefix("part-")?.rsplit('-').next()?.parse().ok()
}

/// The committed files of `out` (`part-*` directly in it), by name.
fn committed_parts(out: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(out)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_str()?.to_owned();
            name.starts_with("part-")
                .then(|| (name, fs::read(e.path()).expect("read a part file")))
        })
        .collect()
}

/// The names of the committed files of `out`, read while a process may
/// be moving them (no contents).
fn committed_names(out: &Path) -> Vec<String> {
    fs::read_dir(out)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_owned))
        .filter(|n| n.starts_with("part-"))
        .collect()
}

/// Every committed line of `out`, sorted.
fn committed_lines(out: &Path) -> Vec<String> {
    let mut lines: Vec<String> = committed_parts(out)
        .values()
        .flat_map(|bytes| {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines
}

/// The committed output of `out` is `expected` (sorted) exactly: no line
/// missing, none duplicated, none extra.
fn assert_output(out: &Path, expected: &[String], context: &str) {
    let actual = committed_lines(out);
    if actual == expected {
        return;
    }
    let mut balance: BTreeMap<&str, i64> = BTreeMap::new();
    for l in &actual {
        *balance.entry(l).or_default() += 1;
    }
    for l in expected {
        *balance.entry(l).or_default() -= 1;
    }
    let missing: Vec<String> = balance
        .iter()
        .filter(|(_, &b)| b < 0)
        .map(|(l, b)| format!("{l} (x{})", -b))
        .collect();
    let extra: Vec<String> = balance
        .iter()
        .filter(|(_, &b)| b > 0)
        .map(|(l, b)| format!("{l} (x{b} too many)"))
        .collect();
    panic!(
        "{context}: the committed output of {} differs from an uninterrupted run's: {} lines \
         instead of {}; {} missing {:?}; {} duplicated or extra {:?}; part files {:?}",
        out.display(),
        actual.len(),
        expected.len(),
        missing.len(),
        &missing[..missing.len().min(10)],
        extra.len(),
        &extra[..extra.len().min(10)],
        committed_parts(out).keys().collect::<Vec<_>>()
    );
}

/// Every file and directory under `dir`, by relative path, with the files'
/// contents; lock files (`.weir-lock`, rewritten by every process that
/// takes the lock) are left out.
fn tree(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<String, Option<Vec<u8>>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if e.file_name() == ".weir-lock" {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                into.insert(format!("{rel}/"), None);
                walk(root, &path, into);
            } else {
                into.insert(rel, Some(fs::read(&path).unwrap_or_default()));
            }
        }
    }
    let mut all = BTreeMap::new();
    walk(dir, dir, &mut all);
    all
}

fn assert_unchanged(
    what: &str,
    before: &BTreeMap<String, Option<Vec<u8>>>,
    after: &BTreeMap<String, Option<Vec<u8>>>,
    run: &Finished,
) {
    if before == after {
        return;
    }
    let removed: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    let added: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let changed: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k).is_some_and(|a| a != *v))
        .map(|(k, _)| k)
        .collect();
    panic!(
        "{what} changed: removed {removed:?}, added {added:?}, changed {changed:?}\n{}",
        run.describe()
    );
}

/// Every file under `dir` (recursively), by file name, with its contents.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter_map(|(rel, content)| {
            let name = Path::new(&rel).file_name()?.to_str()?.to_owned();
            Some((name, content?))
        })
        .collect()
}

fn flip_byte(file: &Path, at: usize) {
    let mut bytes = fs::read(file).unwrap();
    assert!(
        at < bytes.len(),
        "{} has {} bytes",
        file.display(),
        bytes.len()
    );
    bytes[at] ^= 0x01;
    fs::write(file, bytes).unwrap();
}

fn truncate(file: &Path, len: u64) {
    File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// True if `text` names checkpoint `id`: `chk-<id>` or `checkpoint <id>`,
/// not followed by another digit.
fn names_checkpoint(text: &str, id: u64) -> bool {
    [format!("chk-{id}"), format!("checkpoint {id}")]
        .iter()
        .any(|needle| {
            text.match_indices(needle.as_str()).any(|(at, m)| {
                !text[at + m.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
        })
}

/// Runs `job` fresh into `d` until checkpoint `id` is complete and some
/// transaction after `committed_above` is committed, then kills it.
fn run_until_checkpoint(
    s: &Scratch,
    job: &W1,
    d: &Path,
    settings: &[String],
    id: u64,
    committed_above: u64,
) {
    let out = job.output.clone().unwrap();
    let mut first = s.spawn("first", job.cmd(d).args(settings));
    first.wait_until(
        &format!("complete checkpoint {id} and a part file above {committed_above}"),
        || {
            complete_checkpoints(d).contains(&id)
                && committed_names(&out)
                    .iter()
                    .any(|n| part_id(n).is_some_and(|p| p > committed_above))
        },
    );
    first.kill();
}

// ---------------------------------------------------------------------------
// Scenario 1: an abandoned timeline is never restored.

/// Issue 17, scenario 1. A run is killed after checkpoint 6; the operator
/// restores checkpoint 3, which rolls back the output committed after it,
/// and that run dies before its first new checkpoint; `--restore latest`
/// must then continue the timeline of checkpoint 3, not the abandoned
/// checkpoints 4..6, whose state counts records whose output was just
/// rolled back. Contract 4 and 9: checkpoints 4..6 are moved to
/// `D/abandoned/`, the rolled-back part files to `OUT/.abandoned/`.
#[test]
fn scenario1_an_abandoned_timeline_is_never_restored() {
    let s = Scratch::new("s1");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out);
    let settings = checkpointing("300ms", 100);

    run_until_checkpoint(&s, &job, &d, &settings, 6, 3);
    let rolled_back: BTreeMap<String, Vec<u8>> = committed_parts(&out)
        .into_iter()
        .filter(|(n, _)| part_id(n).is_some_and(|id| id > 3))
        .collect();
    assert!(
        !rolled_back.is_empty(),
        "output committed after checkpoint 3"
    );

    // Restore checkpoint 3 and die before its first new checkpoint, as soon
    // as its rollback removed the parts committed after checkpoint 3.
    let mut second = s.spawn(
        "restore-chk-3",
        job.cmd(&d).args(&settings).arg("--restore").arg(chk(&d, 3)),
    );
    // Names only: the running process moves files while this polls.
    second.wait_until("rollback of the output after checkpoint 3", || {
        !committed_names(&out)
            .iter()
            .any(|n| part_id(n).is_some_and(|id| id > 3))
    });
    second.kill();
    let second_stderr = second.stderr();
    assert!(
        !second_stderr.contains("panicked at"),
        "no panic in the restore of checkpoint 3\n{}",
        tail(&second_stderr)
    );

    let last = s.run(
        "restore-latest",
        job.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FINISH,
    );
    last.assert_exit(0, "the run restoring the latest checkpoint completes");
    last.assert_no_panic();
    let restored = last.restored();
    assert!(
        restored == Some(3) || restored.is_some_and(|id| id > 6),
        "`latest` is checkpoint 3 or a later one of its timeline, never the abandoned 4..6 nor \
         a fresh start: restored {restored:?}\n{}",
        last.describe()
    );
    assert_output(&out, &job.expected(), "after the abandoned timeline");

    // Contract 4: the abandoned checkpoints are moved aside, not deleted.
    for id in 4..=6 {
        assert!(
            !chk(&d, id).exists(),
            "abandoned checkpoint {id} is no longer in {}",
            d.display()
        );
        let moved = d.join("abandoned").join(format!("chk-{id}"));
        assert!(
            moved.join("_metadata").is_file(),
            "abandoned checkpoint {id} is kept as {}",
            moved.display()
        );
    }
    assert!(
        d.join("_timeline").is_file(),
        "D/_timeline records the timeline"
    );
    // Contract 9: the rolled-back parts are under OUT/.abandoned/.
    let kept = files_under(&out.join(".abandoned"));
    for (name, content) in &rolled_back {
        assert!(
            kept.iter().any(|(n, c)| n == name && c == content),
            "{name}, rolled back by the restore of checkpoint 3, is kept under {}/.abandoned/ \
             (found there: {:?})",
            out.display(),
            kept.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
    }
}

/// Probe 13: restoring an abandoned checkpoint explicitly, after a run that
/// restored an older one moved its committed output aside and wrote its
/// own, kept the parts up to its id that the directory held and replayed
/// the rest: the output the abandoned checkpoint had committed was lost
/// (or, where the later run had reused the ids, duplicated), or a sink
/// failed to find a pending file after the timeline had already been
/// switched. Refused before anything changes (exit 2), naming the part
/// that was moved aside; `--restore latest` still continues the current
/// timeline exactly once.
#[test]
fn scenario1_an_abandoned_checkpoint_whose_output_was_rolled_back_is_refused() {
    let s = Scratch::new("s1-rolled-back");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out);
    let settings = checkpointing("300ms", 100);

    run_until_checkpoint(&s, &job, &d, &settings, 6, 3);
    let second = s.run(
        "restore-chk-3",
        job.cmd(&d).args(&settings).arg("--restore").arg(chk(&d, 3)),
        FINISH,
    );
    second.assert_exit(0, "the run restoring checkpoint 3");
    assert_output(&out, &job.expected(), "the run restoring checkpoint 3");

    let abandoned = d.join("abandoned").join("chk-6");
    let (d_before, out_before) = (tree(&d), tree(&out));
    let run = s.run(
        "restore-abandoned-chk-6",
        job.cmd(&d).args(&settings).arg("--restore").arg(&abandoned),
        FAIL_FAST,
    );
    run.assert_refused("an abandoned checkpoint whose output was rolled back");
    run.assert_stderr_names("the output directory", &out.display().to_string());
    run.assert_stderr_names("where the rolled-back part is", ".abandoned/");
    assert_unchanged("the checkpoint directory", &d_before, &tree(&d), &run);
    assert_unchanged("the output directory", &out_before, &tree(&out), &run);
    assert_output(&out, &job.expected(), "after the refused restore");
}

// ---------------------------------------------------------------------------
// Scenario 2: two processes never share a directory.

/// Issue 17, scenario 2a: a second run into the same output directory
/// (with its own checkpoint directory) fails at start, exit 2, naming the
/// directory and the first run's pid, and changes nothing in it (contract
/// 1; the first run is stopped meanwhile); the first run's output is then
/// exactly once.
#[test]
fn scenario2a_a_second_process_on_the_same_output_dir_is_refused() {
    let s = Scratch::new("s2a");
    let out = s.path("out");
    let (d1, d2) = (s.path("ck1"), s.path("ck2"));
    let job = W1::slow(&out).with_rate(20);
    let settings = checkpointing("200ms", 3);

    let mut first = s.spawn("first", job.cmd(&d1).args(&settings));
    first.wait_until("a first complete checkpoint", || {
        !complete_checkpoints(&d1).is_empty()
    });
    let pid = first.pid();
    // Stopped, the first run holds its locks however slow the second is to
    // start, and changes nothing in the output directory meanwhile.
    first.signal("STOP");
    std::thread::sleep(Duration::from_millis(200));
    let before = tree(&out);

    let second = s.run("second", job.cmd(&d2).args(&settings), FAIL_FAST);
    let after = tree(&out);
    first.signal("CONT");
    second.assert_refused("a second process on the same output directory");
    second.assert_stderr_names("the lock holder", &format!("in use by process {pid}"));
    second.assert_stderr_names("the output directory", &out.display().to_string());
    assert_unchanged("the output directory", &before, &after, &second);
    assert!(
        complete_checkpoints(&d2).is_empty(),
        "the refused run took no checkpoint"
    );

    let first = first.wait(FINISH);
    first.assert_exit(0, "the first run is undisturbed");
    first.assert_no_panic();
    assert_output(&out, &job.expected(), "the first run's output");
}

/// Issue 17, scenario 2b: a second run on the same checkpoint directory
/// (with its own output directory) fails at start, exit 2, naming the
/// directory and the first run's pid, and changes nothing in it (the first
/// run is stopped meanwhile, so that nothing else changes it either).
#[test]
fn scenario2b_a_second_process_on_the_same_checkpoint_dir_is_refused() {
    let s = Scratch::new("s2b");
    let d = s.path("ck");
    let (out1, out2) = (s.path("out1"), s.path("out2"));
    let job = W1::slow(&out1).with_rate(20);
    let other = W1 {
        output: Some(out2.clone()),
        ..job.clone()
    };
    let settings = checkpointing("200ms", 3);

    let mut first = s.spawn("first", job.cmd(&d).args(&settings));
    first.wait_until("a first complete checkpoint", || {
        !complete_checkpoints(&d).is_empty()
    });
    let pid = first.pid();
    first.signal("STOP");
    // Writes already handed to the kernel land.
    std::thread::sleep(Duration::from_millis(200));
    let before = tree(&d);
    let lock_before = fs::read(d.join(".weir-lock")).ok();

    let second = s.run(
        "second",
        other.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FAIL_FAST,
    );
    let after = tree(&d);
    let lock_after = fs::read(d.join(".weir-lock")).ok();
    first.signal("CONT");

    second.assert_refused("a second process on the same checkpoint directory");
    second.assert_stderr_names("the lock holder", &format!("in use by process {pid}"));
    second.assert_stderr_names("the checkpoint directory", &d.display().to_string());
    assert_unchanged("the checkpoint directory", &before, &after, &second);
    assert_eq!(
        lock_before, lock_after,
        "the lock file still names the first process"
    );
    assert!(
        committed_parts(&out2).is_empty(),
        "the refused run committed nothing"
    );

    let first = first.wait(FINISH);
    first.assert_exit(0, "the first run is undisturbed");
    first.assert_no_panic();
    assert_output(&out1, &job.expected(), "the first run's output");
}

// ---------------------------------------------------------------------------
// Scenario 3: an explicit --restore PATH is never replaced.

/// Issue 17, scenario 3. Checkpoints 1..6 exist; the operator restores
/// checkpoint 3 explicitly, and a task fails right after the restore. The
/// restart strategy restarts from checkpoint 3 (or a checkpoint this run
/// took after it: contract 6), never the newer, abandoned checkpoints
/// 4..6, never a fresh start; the output is exactly once.
#[test]
fn scenario3_an_explicit_restore_is_never_replaced() {
    let s = Scratch::new("s3");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out);
    let settings = checkpointing("300ms", 100);
    run_until_checkpoint(&s, &job, &d, &settings, 6, 3);

    let run = s.run(
        "restore-chk-3-then-fail",
        job.cmd(&d)
            .args(&settings)
            .args(["--set", "restart-strategy.type=fixed-delay"])
            .args(["--set", "restart-strategy.fixed-delay.attempts=3"])
            .args(["--set", "restart-strategy.fixed-delay.delay=50ms"])
            .arg("--restore")
            .arg(chk(&d, 3))
            // The source fails at its first record after the restore.
            .env("WEIR_FAILPOINTS", "source-panic=0"),
        FINISH,
    );
    run.assert_exit(0, "the run restarts and completes");
    assert_eq!(
        run.report()["restarts"],
        1,
        "one in-process restart\n{}",
        run.describe()
    );
    let restored = run.restored();
    assert!(
        restored == Some(3) || restored.is_some_and(|id| id > 6),
        "the restart restores checkpoint 3 or one taken after it in this run, never the \
         abandoned 4..6 nor a fresh start: restored {restored:?}\n{}",
        run.describe()
    );
    assert_output(&out, &job.expected(), "after the restart");
}

// ---------------------------------------------------------------------------
// Scenario 4: every checkpoint corrupt is a failure, not a fresh start.

/// Issue 17, scenario 4. Three complete checkpoints, all corrupt (a
/// flipped byte in a segment's block, a truncated segment): `--restore
/// latest` exits 2 naming every checkpoint with its reason (contract 5),
/// and touches neither the committed output nor the checkpoints.
#[test]
fn scenario4_every_checkpoint_corrupt_is_a_failure_not_a_fresh_start() {
    let s = Scratch::new("s4");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out).with_rate(30);
    let settings = checkpointing("200ms", 3);
    let first = s.run("first", job.cmd(&d).args(&settings), FINISH);
    first.assert_exit(0, "the first run");
    assert_output(&out, &job.expected(), "the first run");

    let ids = complete_checkpoints(&d);
    assert_eq!(ids.len(), 3, "three retained checkpoints: {ids:?}");
    // Offset 200 is inside the first block's payload (a segment's blocks
    // start after its 128-byte header).
    flip_byte(&chk(&d, ids[2]).join("w000.seg"), 200);
    truncate(&chk(&d, ids[1]).join("w000.seg"), 100);
    flip_byte(&chk(&d, ids[0]).join("w000.seg"), 200);
    let out_before = tree(&out);
    let checkpoints_before: BTreeMap<_, _> = tree(&d)
        .into_iter()
        .filter(|(k, _)| k.starts_with("chk-"))
        .collect();

    let run = s.run(
        "restore-latest",
        job.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FAIL_FAST,
    );
    run.assert_refused("no checkpoint is usable");
    for id in &ids {
        assert!(
            names_checkpoint(&run.stderr, *id),
            "checkpoint {id} is named\n{}",
            run.describe()
        );
        assert!(
            run.stderr.contains(&format!("chk-{id}/w000.seg")),
            "the reason of checkpoint {id} names its damaged file\n{}",
            run.describe()
        );
    }
    assert_unchanged("the output directory", &out_before, &tree(&out), &run);
    let checkpoints_after: BTreeMap<_, _> = tree(&d)
        .into_iter()
        .filter(|(k, _)| k.starts_with("chk-"))
        .collect();
    assert_unchanged(
        "the checkpoints (none chosen: none abandoned)",
        &checkpoints_before,
        &checkpoints_after,
        &run,
    );
}

// ---------------------------------------------------------------------------
// Scenario 5: a foreign checkpoint is refused before any side effect.

/// Issue 17, scenario 5. Checkpoints of runs with another K, another N,
/// and without `--output` are restored into the current job (whose output
/// directory holds its committed output), by path and as `latest`: exit 2
/// naming what differs, before anything is touched (contract 7): the
/// output directory and the foreign checkpoint directory are unchanged.
#[test]
fn scenario5_a_foreign_checkpoint_is_refused_before_any_side_effect() {
    let s = Scratch::new("s5");
    let out = s.path("out");
    let job = W1::quick(&out);
    let settings = checkpointing("100ms", 3);
    let own = s.run("own", job.cmd(&s.path("ck-own")).args(&settings), FINISH);
    own.assert_exit(0, "the job's own run");
    own.assert_no_panic();
    assert_output(&out, &job.expected(), "the job's own run");

    // What differs, as the message may name it: the value or the key.
    let foreign: [(&str, W1, &[&str]); 3] = [
        (
            "other-k",
            W1 {
                k: 53,
                output: Some(s.path("out-other-k")),
                ..job.clone()
            },
            &["53", "job.keys", "keys", "K ", "K=", "K:"],
        ),
        (
            "other-n",
            W1 {
                n: 3000,
                output: Some(s.path("out-other-n")),
                ..job.clone()
            },
            &["3000", "job.records", "N ", "N=", "N:"],
        ),
        // W1 without --output (the name of its checkpoint directory must
        // not say "output": the message is searched for that word).
        (
            "checksum-only",
            W1 {
                output: None,
                ..job.clone()
            },
            &["output", "Output"],
        ),
    ];
    for (name, other, differs) in foreign {
        let d = s.path(&format!("ck-{name}"));
        let theirs = s.run(name, other.cmd(&d).args(&settings), FINISH);
        theirs.assert_exit(0, "the foreign run");
        theirs.assert_no_panic();
        let newest = *complete_checkpoints(&d)
            .last()
            .unwrap_or_else(|| panic!("{name}: a complete checkpoint"));

        for restore in [chk(&d, newest).display().to_string(), "latest".to_owned()] {
            let out_before = tree(&out);
            let d_before = tree(&d);
            let run = s.run(
                &format!("restore-{name}"),
                job.cmd(&d).args(&settings).args(["--restore", &restore]),
                FAIL_FAST,
            );
            let why = format!("a checkpoint of a run with {name} (--restore {restore})");
            run.assert_refused(&why);
            assert!(
                differs.iter().any(|d| run.stderr.contains(d)),
                "{why}: the message names what differs (one of {differs:?})\n{}",
                run.describe()
            );
            assert_unchanged(
                &format!("{why}: the output directory"),
                &out_before,
                &tree(&out),
                &run,
            );
            assert_unchanged(
                &format!("{why}: the foreign checkpoint directory"),
                &d_before,
                &tree(&d),
                &run,
            );
        }
    }
    assert_output(&out, &job.expected(), "after the refused restores");
}

// ---------------------------------------------------------------------------
// Scenario 6: an error a retry cannot fix is not retried.

/// Issue 17, scenario 6, after issue 18 made the rescale itself succeed.
/// A checkpoint of a run with 2 workers restored with 1 and another max
/// parallelism (key groups cannot be remapped: a restore that cannot
/// succeed) under the default restart strategy (exponential delay, with
/// checkpointing on): exit 2 within seconds, no restart (contract 10),
/// the committed output kept. Restored with 1 worker and the max
/// parallelism it was taken with, it rescales and completes exactly once.
#[test]
fn scenario6_a_restore_that_cannot_succeed_is_not_retried() {
    let s = Scratch::new("s6");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1 {
        n: 200_000,
        k: 100,
        rate: None,
        workers: 2,
        output: Some(out.clone()),
    };
    let settings = checkpointing("50ms", 3);
    let first = s.run("two-workers", job.cmd(&d).args(&settings), FINISH);
    first.assert_exit(0, "the run with two workers");
    assert_eq!(
        first.report()["output"]["exactly_once"],
        true,
        "{}",
        first.describe()
    );
    let out_before = tree(&out);

    let one = W1 {
        workers: 1,
        ..job.clone()
    };
    let run = s.run(
        "one-worker-64-key-groups",
        one.cmd(&d)
            .args(&settings)
            .args(["--restore", "latest"])
            .args(["--set", "pipeline.max-parallelism=64"]),
        FAIL_FAST,
    );
    run.assert_refused("a changed max parallelism");
    assert!(
        run.elapsed < Duration::from_secs(10),
        "a refused restore fails fast, not after retries: {:.1} s\n{}",
        run.elapsed.as_secs_f64(),
        run.describe()
    );
    assert!(
        !run.stderr.contains("restarting"),
        "a refused restore is not retried\n{}",
        run.describe()
    );
    run.assert_stderr_names("the setting", "max-parallelism");
    assert_unchanged("the output directory", &out_before, &tree(&out), &run);

    let rescaled = s.run(
        "one-worker",
        one.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FINISH,
    );
    rescaled.assert_exit(0, "the rescale to one worker");
    assert_eq!(
        rescaled.report()["output"]["exactly_once"],
        true,
        "{}",
        rescaled.describe()
    );
}

// ---------------------------------------------------------------------------
// Scenario 7: expected errors are not panics.

/// Issue 17, scenario 7. Recoverable and unrecoverable problems with a
/// checkpoint print no panic and no backtrace (`RUST_BACKTRACE=1`): a
/// corrupt checkpoint named explicitly is refused (exit 2, naming the
/// damaged file, contract 6); as `latest`, the run falls back to the
/// older checkpoint and completes exactly once. (The other scenarios'
/// expected failures are checked for panics too.)
#[test]
fn scenario7_expected_errors_are_not_panics() {
    let s = Scratch::new("s7");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out).with_rate(30);
    let settings = checkpointing("200ms", 3);
    let first = s.run("first", job.cmd(&d).args(&settings), FINISH);
    first.assert_exit(0, "the first run");
    first.assert_no_panic();

    let ids = complete_checkpoints(&d);
    assert!(ids.len() >= 2, "two checkpoints at least: {ids:?}");
    let (newest, older) = (ids[ids.len() - 1], ids[ids.len() - 2]);
    let damaged = chk(&d, newest).join("w000.seg");
    flip_byte(&damaged, 200);

    let explicit = s.run(
        "restore-corrupt-explicitly",
        job.cmd(&d)
            .args(&settings)
            .arg("--restore")
            .arg(chk(&d, newest)),
        FAIL_FAST,
    );
    explicit.assert_refused("a corrupt checkpoint named explicitly");
    explicit.assert_stderr_names("the damaged file", &damaged.display().to_string());

    let latest = s.run(
        "restore-latest-falls-back",
        job.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FINISH,
    );
    latest.assert_exit(0, "`latest` falls back to the older checkpoint");
    latest.assert_no_panic();
    assert_eq!(
        latest.restored(),
        Some(older),
        "the newest verified checkpoint\n{}",
        latest.describe()
    );
    assert_output(&out, &job.expected(), "after the fallback");
}

// ---------------------------------------------------------------------------
// Scenario 8: the smaller items.

/// A directory `ck` with the checkpoints of a completed quick run whose
/// output is in `out`.
fn completed_quick_run(s: &Scratch) -> (W1, PathBuf, [String; 4]) {
    let d = s.path("ck");
    let job = W1::quick(&s.path("out"));
    let settings = checkpointing("100ms", 100);
    let run = s.run("completed", job.cmd(&d).args(&settings), FINISH);
    run.assert_exit(0, "the completed run");
    assert!(
        !complete_checkpoints(&d).is_empty(),
        "a complete checkpoint\n{}",
        run.describe()
    );
    (job, d, settings)
}

/// Issue 17, scenario 8: `--restore` naming a regular file other than
/// `_metadata`, a missing path, or the checkpoint root itself gets its own
/// message naming the path (not "_metadata is missing"), exit 2, and
/// changes nothing; a checkpoint's `_metadata` named directly is accepted.
#[test]
fn scenario8_bad_restore_paths_get_their_own_messages() {
    let s = Scratch::new("s8-paths");
    let (job, d, settings) = completed_quick_run(&s);
    let newest = *complete_checkpoints(&d).last().unwrap();
    let out = job.output.clone().unwrap();
    let d_before = tree(&d);
    let out_before = tree(&out);

    let cases = [
        ("a regular file", chk(&d, newest).join("w000.seg")),
        ("a missing path", s.path("no-such-dir").join("chk-7")),
        ("the checkpoint root", d.clone()),
    ];
    let mut messages = Vec::new();
    for (what, path) in &cases {
        let shown = path.display().to_string();
        let run = s.run(
            "bad-path",
            job.cmd(&d).args(&settings).args(["--restore", &shown]),
            FAIL_FAST,
        );
        let why = format!("--restore naming {what}");
        run.assert_refused(&why);
        run.assert_stderr_names("the path", &shown);
        assert!(
            !run.stderr.contains("_metadata is missing"),
            "{why}: its own message, not that of an incomplete checkpoint\n{}",
            run.describe()
        );
        if *what == "the checkpoint root" {
            run.assert_stderr_names("what to do instead", "--restore latest");
        }
        assert_unchanged(
            &format!("{why}: the checkpoint directory"),
            &d_before,
            &tree(&d),
            &run,
        );
        assert_unchanged(
            &format!("{why}: the output directory"),
            &out_before,
            &tree(&out),
            &run,
        );
        messages.push((what, run.stderr.replace(&shown, "<PATH>")));
    }
    for (i, (a, ma)) in messages.iter().enumerate() {
        for (b, mb) in &messages[i + 1..] {
            assert_ne!(ma, mb, "{a} and {b} get different messages");
        }
    }

    let metadata = chk(&d, newest).join("_metadata");
    let run = s.run(
        "restore-metadata",
        job.cmd(&d).args(&settings).arg("--restore").arg(&metadata),
        FINISH,
    );
    run.assert_exit(0, "a checkpoint's _metadata names the checkpoint");
    run.assert_no_panic();
    assert_eq!(run.restored(), Some(newest), "{}", run.describe());
    assert_output(
        &out,
        &job.expected(),
        "after restoring the final checkpoint",
    );
}

/// Issue 17, scenario 8: `state.checkpoints.dir` or `--output` being a
/// regular file is an error naming it (not "File exists"), exit 2, and the
/// file is left as it was.
#[test]
fn scenario8_a_regular_file_as_checkpoint_or_output_dir_is_named() {
    let s = Scratch::new("s8-files");
    let file = s.path("a-file");
    fs::write(&file, b"not a directory\n").unwrap();
    let settings = checkpointing("100ms", 3);

    let as_d = s.run(
        "checkpoint-dir-is-a-file",
        W1::quick(&s.path("out")).cmd(&file).args(&settings),
        FAIL_FAST,
    );
    let as_out = s.run(
        "output-is-a-file",
        W1::quick(&file).cmd(&s.path("ck")).args(&settings),
        FAIL_FAST,
    );
    for (what, run) in [("state.checkpoints.dir", &as_d), ("--output", &as_out)] {
        let why = format!("{what} naming a regular file");
        run.assert_refused(&why);
        run.assert_stderr_names("the file", &file.display().to_string());
        assert!(
            !run.stderr.contains("File exists"),
            "{why}: says what is wrong, not \"File exists\"\n{}",
            run.describe()
        );
    }
    assert_eq!(fs::read(&file).unwrap(), b"not a directory\n");
}

/// Issue 17, scenario 8: `--restore D/chk-<id>` where the checkpoint has no
/// `_metadata` (incomplete) is refused, exit 2, and the directory the user
/// named is still there afterwards, as it was (contract 6).
#[test]
fn scenario8_an_incomplete_checkpoint_named_explicitly_is_kept() {
    let s = Scratch::new("s8-incomplete");
    let (job, d, settings) = completed_quick_run(&s);
    let newest = *complete_checkpoints(&d).last().unwrap();
    let named = chk(&d, newest);
    fs::remove_file(named.join("_metadata")).unwrap();
    let before = tree(&named);
    assert!(
        !before.is_empty(),
        "the incomplete checkpoint has its segments"
    );

    let run = s.run(
        "restore-incomplete",
        job.cmd(&d).args(&settings).arg("--restore").arg(&named),
        FAIL_FAST,
    );
    assert!(
        named.is_dir(),
        "{} is still there after the refused restore\n{}",
        named.display(),
        run.describe()
    );
    assert_unchanged("the incomplete checkpoint", &before, &tree(&named), &run);
    run.assert_refused("an incomplete checkpoint named explicitly");
    run.assert_stderr_names("the checkpoint", &named.display().to_string());
}

/// Issue 17, scenario 8: a manifest whose checkpoint id does not match its
/// directory's name (a `chk-<n>` copied to another id) is refused, exit 2,
/// before any checkpoint is moved or output touched (contract 7).
#[test]
fn scenario8_a_manifest_whose_id_does_not_match_its_directory_is_refused() {
    let s = Scratch::new("s8-id");
    let (job, d, settings) = completed_quick_run(&s);
    let newest = *complete_checkpoints(&d).last().unwrap();
    let copy = chk(&d, newest + 7);
    copy_dir(&chk(&d, newest), &copy);
    let out = job.output.clone().unwrap();
    let d_before = tree(&d);
    let out_before = tree(&out);

    let run = s.run(
        "restore-renamed",
        job.cmd(&d).args(&settings).arg("--restore").arg(&copy),
        FAIL_FAST,
    );
    run.assert_refused("a manifest whose id does not match its directory");
    assert!(
        names_checkpoint(&run.stderr, newest + 7),
        "the copy is named\n{}",
        run.describe()
    );
    assert_unchanged("the checkpoint directory", &d_before, &tree(&d), &run);
    assert_unchanged("the output directory", &out_before, &tree(&out), &run);
}

/// Issue 17, scenario 8: a plain file named like a checkpoint (`chk-5`) in
/// the checkpoint directory does not make a checkpoint fail: new ids are
/// above every id used in it, stray files too (contract 4).
#[test]
fn scenario8_a_stray_file_named_like_a_checkpoint_is_harmless() {
    let s = Scratch::new("s8-stray");
    let (d, out) = (s.path("ck"), s.path("out"));
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("chk-5"), b"not a checkpoint\n").unwrap();
    // About 1.5 s at 100 ms: far more than five checkpoints.
    let job = W1::slow(&out).with_rate(40);
    let run = s.run(
        "with-a-stray-file",
        job.cmd(&d).args(checkpointing("100ms", 100)),
        FINISH,
    );
    run.assert_exit(0, "the run completes");
    run.assert_no_panic();
    let report = run.report();
    assert_eq!(
        report["checkpoints"]["failed"],
        0,
        "no checkpoint failed\n{}",
        run.describe()
    );
    let ids = complete_checkpoints(&d);
    assert!(
        !ids.is_empty(),
        "checkpoints were taken\n{}",
        run.describe()
    );
    assert!(
        ids.iter().all(|&id| id > 5),
        "new checkpoint ids are above the stray chk-5: {ids:?}"
    );
    assert_output(&out, &job.expected(), "with a stray file");
}

/// Probe 13: a stray `chk-<u64::MAX>` (here in `abandoned/`) made the next
/// run panic with "attempt to add with overflow" (exit 101) when it
/// numbered its checkpoints above it. Refused at once, naming the directory
/// and the id (exit 2), with no checkpoint written.
#[test]
fn scenario8_a_checkpoint_id_too_large_to_count_past_is_refused() {
    let s = Scratch::new("s8-max-id");
    let (d, out) = (s.path("ck"), s.path("out"));
    let huge = d.join("abandoned").join(format!("chk-{}", u64::MAX));
    fs::create_dir_all(&huge).unwrap();
    let job = W1::quick(&out);
    let run = s.run(
        "max-id",
        job.cmd(&d).args(checkpointing("100ms", 3)),
        FAIL_FAST,
    );
    run.assert_refused("an id no checkpoint can be numbered above");
    run.assert_stderr_names("the checkpoint directory", &d.display().to_string());
    run.assert_stderr_names("the id", &u64::MAX.to_string());
    assert!(
        complete_checkpoints(&d).is_empty(),
        "no checkpoint written\n{}",
        run.describe()
    );
    assert!(huge.is_dir(), "the stray directory is left as it was");
}

/// Contract 8 and 9: a fresh start refuses an output directory holding
/// committed output of another job (another K) or of no job weir knows,
/// exit 2 naming it, with nothing changed; a fresh start of the same job
/// moves the earlier parts aside (kept, unchanged) and writes its output
/// again, exactly once.
#[test]
fn a_fresh_start_guards_committed_output() {
    let s = Scratch::new("fresh-guard");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::quick(&out);
    let settings = checkpointing("100ms", 3);
    let first = s.run("first", job.cmd(&d).args(&settings), FINISH);
    first.assert_exit(0, "the first run");
    assert_output(&out, &job.expected(), "the first run");
    let parts = committed_parts(&out);

    // Another K, fresh, into the same directory (its own checkpoints).
    let other = W1 {
        k: 13,
        ..job.clone()
    };
    let before = tree(&out);
    let run = s.run(
        "other-k",
        other.cmd(&s.path("ck-other")).args(&settings),
        FAIL_FAST,
    );
    run.assert_refused("a fresh start into another job's output");
    run.assert_stderr_names("the output directory", &out.display().to_string());
    assert_unchanged("the output directory", &before, &tree(&out), &run);

    // Committed output nobody claims: refused too.
    let unmarked = s.path("unmarked");
    fs::create_dir_all(&unmarked).unwrap();
    fs::write(unmarked.join("part-0000-0000000003"), b"1,1,1\n").unwrap();
    let before = tree(&unmarked);
    let run = s.run(
        "unmarked",
        W1::quick(&unmarked)
            .cmd(&s.path("ck-unmarked"))
            .args(&settings),
        FAIL_FAST,
    );
    run.assert_refused("a fresh start into unclaimed committed output");
    run.assert_stderr_names("the output directory", &unmarked.display().to_string());
    assert_unchanged("the unclaimed directory", &before, &tree(&unmarked), &run);

    // The same job, fresh: the old parts are moved aside, not deleted.
    let again = s.run("same-job-fresh", job.cmd(&d).args(&settings), FINISH);
    again.assert_exit(0, "a fresh start of the same job");
    assert_output(&out, &job.expected(), "the same job, fresh");
    let aside: BTreeMap<String, Vec<u8>> =
        files_under(&out.join(".abandoned")).into_iter().collect();
    assert_eq!(aside, parts, "every earlier part kept, unchanged");
}

// ---------------------------------------------------------------------------
// Probe 16: an operator's ordinary mistakes.

/// The largest id of a `chk-<id>` directory directly in `d`, complete or
/// not.
fn newest_checkpoint_dir(d: &Path) -> u64 {
    fs::read_dir(d)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let id: u64 = e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok()?;
            e.path().is_dir().then_some(id)
        })
        .max()
        .expect("a checkpoint directory")
}

/// Probe 16: a run was killed, and the operator deleted its newest
/// `chk-<n>` by hand (incomplete, or thought bad); the next run restored an
/// older checkpoint and numbered its checkpoints from `n` again, although
/// ids are never to be reused (an incremental checkpoint of an abandoned
/// timeline finds its references by id). `_timeline` now records every id
/// triggered, so the next run's ids are above `n`, and the output is still
/// committed exactly once.
#[test]
fn an_id_whose_directory_was_deleted_by_hand_is_not_used_again() {
    let s = Scratch::new("p16-id-reuse");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out);
    let settings = checkpointing("100ms", 100);
    run_until_checkpoint(&s, &job, &d, &settings, 4, 2);
    let deleted = newest_checkpoint_dir(&d);
    fs::remove_dir_all(chk(&d, deleted)).unwrap();

    let run = s.run(
        "after-deleting-the-newest",
        job.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FINISH,
    );
    run.assert_exit(0, "the run after the deletion completes");
    run.assert_no_panic();
    let restored = run.restored().expect("a checkpoint was restored");
    assert!(restored < deleted, "{}", run.describe());
    let reused: Vec<u64> = complete_checkpoints(&d)
        .into_iter()
        .filter(|&id| id > restored && id <= deleted)
        .collect();
    assert!(
        reused.is_empty(),
        "checkpoint ids up to the deleted chk-{deleted} are used again: {reused:?}\n{}",
        run.describe()
    );
    assert!(
        complete_checkpoints(&d).iter().any(|&id| id > deleted),
        "the run took checkpoints\n{}",
        run.describe()
    );
    assert_output(&out, &job.expected(), "after the deleted checkpoint");
}

/// Probe 16: a path weir keeps of the wrong kind — `OUT/.weir-lineage` a
/// directory, `OUT/.abandoned` a file, `D/abandoned` a file, `D/_timeline` a
/// directory, either `.weir-lock` a directory — was found late (a sink failing to roll back, `abandoned`
/// after `_timeline` had recorded the abandonment) or under the name of the
/// directory holding it. Each is refused before anything changes, naming
/// the path and what it should be, exit 2.
#[test]
fn a_path_weir_keeps_of_the_wrong_kind_is_refused_before_anything_changes() {
    let s = Scratch::new("p16-kinds");
    let (job, d, settings) = completed_quick_run(&s);
    let out = job.output.clone().unwrap();
    let cases = [
        (out.join(".weir-lineage"), "a file"),
        (out.join(".abandoned"), "a directory"),
        (d.join("abandoned"), "a directory"),
        (d.join("_timeline"), "a file"),
        (out.join(".weir-lock"), "a file"),
        (d.join(".weir-lock"), "a file"),
    ];
    for (path, should_be) in &cases {
        // Put the real one, if any, aside, and the wrong kind in its place.
        let kept = s.path("kept");
        if path.exists() {
            fs::rename(path, &kept).unwrap();
        }
        if *should_be == "a file" {
            fs::create_dir_all(path.join("inside")).unwrap();
        } else {
            fs::write(path, b"not a directory\n").unwrap();
        }
        let d_before = tree(&d);
        let out_before = tree(&out);
        for restore in [None, Some("latest")] {
            let mut cmd = job.cmd(&d);
            cmd.args(&settings);
            if let Some(r) = restore {
                cmd.args(["--restore", r]);
            }
            let run = s.run("wrong-kind", &mut cmd, FAIL_FAST);
            let why = format!("{} not {should_be} (--restore {restore:?})", path.display());
            run.assert_refused(&why);
            run.assert_stderr_names("the path", &path.display().to_string());
            run.assert_stderr_names("what it should be", &format!("should be {should_be}"));
            assert_unchanged(
                &format!("{why}: the checkpoint directory"),
                &d_before,
                &tree(&d),
                &run,
            );
            assert_unchanged(
                &format!("{why}: the output directory"),
                &out_before,
                &tree(&out),
                &run,
            );
        }
        if path.is_dir() {
            fs::remove_dir_all(path).unwrap();
        } else {
            fs::remove_file(path).unwrap();
        }
        if kept.exists() {
            fs::rename(&kept, path).unwrap();
        }
    }
    assert_output(&out, &job.expected(), "after the refused runs");
}

/// Probe 16: `--restore latest` that found no checkpoint at all started
/// fresh, rolling back every committed part of the job (moved to
/// `OUT/.abandoned/`) and writing it all again: after a mistyped
/// `state.checkpoints.dir` or deleted checkpoints (a run restored from a
/// savepoint that died before its first checkpoint now resumes from it:
/// the test after this one). A request to resume
/// that finds nothing to resume from while the output holds committed
/// output is refused (exit 2), naming both directories, with nothing
/// changed; with no committed output it still starts fresh.
#[test]
fn restore_latest_finding_no_checkpoint_never_rolls_back_committed_output() {
    let s = Scratch::new("p16-latest-nothing");
    let (job, d, settings) = completed_quick_run(&s);
    let out = job.output.clone().unwrap();
    let mistyped = s.path("ck-mistyped");
    let out_before = tree(&out);
    let run = s.run(
        "latest-in-another-dir",
        job.cmd(&mistyped)
            .args(&settings)
            .args(["--restore", "latest"]),
        FAIL_FAST,
    );
    run.assert_refused("--restore latest with no checkpoint and committed output");
    run.assert_stderr_names("the checkpoint directory", &mistyped.display().to_string());
    run.assert_stderr_names("the output directory", &out.display().to_string());
    run.assert_stderr_names("what to do", "--restore PATH");
    assert_unchanged("the output directory", &out_before, &tree(&out), &run);
    assert!(
        complete_checkpoints(&mistyped).is_empty(),
        "{}",
        run.describe()
    );

    // The right directory still resumes.
    let resumed = s.run(
        "latest",
        job.cmd(&d).args(&settings).args(["--restore", "latest"]),
        FINISH,
    );
    resumed.assert_exit(0, "--restore latest of the right directory");
    assert!(resumed.restored().is_some(), "{}", resumed.describe());
    assert_output(&out, &job.expected(), "after the resumed run");

    // Nothing committed yet: `latest` with no checkpoint is a fresh start.
    let new = W1::quick(&s.path("out-new"));
    let fresh = s.run(
        "latest-first-run",
        new.cmd(&s.path("ck-new"))
            .args(&settings)
            .args(["--restore", "latest"]),
        FINISH,
    );
    fresh.assert_exit(0, "--restore latest of a first run");
    assert_eq!(fresh.restored(), None, "{}", fresh.describe());
    assert_output(&s.path("out-new"), &new.expected(), "a first run");
}

/// A run restored from a snapshot kept elsewhere (here a copy of another
/// directory's checkpoint; a savepoint is such a snapshot) dies before its
/// first checkpoint: `--restore latest` of its checkpoint directory
/// resumes from that snapshot, as Flink resumes a job from the savepoint it
/// was started from. (It found no checkpoint and, the output holding
/// committed parts, refused to resume.)
#[test]
fn restore_latest_resumes_from_the_snapshot_elsewhere_its_run_started_from() {
    let s = Scratch::new("latest-from-elsewhere");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::slow(&out);
    let settings = checkpointing("300ms", 100);
    run_until_checkpoint(&s, &job, &d, &settings, 3, 3);
    let saved = s.path("saved").join("chk-3");
    copy_dir(&chk(&d, 3), &saved);

    // A new checkpoint directory, no checkpoint for an hour: killed once
    // its restore rolled back the output committed after checkpoint 3.
    let d2 = s.path("ck2");
    let mut second = s.spawn(
        "restore-elsewhere",
        job.cmd(&d2)
            .args(checkpointing("1h", 100))
            .arg("--restore")
            .arg(&saved),
    );
    second.wait_until("the rollback of the output after checkpoint 3", || {
        d2.join("_timeline").is_file()
            && !committed_names(&out)
                .iter()
                .any(|n| part_id(n).is_some_and(|id| id > 3))
    });
    second.kill();
    assert!(
        complete_checkpoints(&d2).is_empty(),
        "no checkpoint of its own"
    );

    let last = s.run(
        "restore-latest",
        job.cmd(&d2).args(&settings).args(["--restore", "latest"]),
        FINISH,
    );
    last.assert_exit(0, "--restore latest after a restore from elsewhere");
    last.assert_no_panic();
    assert_eq!(last.restored(), Some(3), "{}", last.describe());
    assert_output(&out, &job.expected(), "resumed from the snapshot elsewhere");
}

/// Probe 16: a truncated or zero-length `_metadata` was listed by `weir
/// checkpoints list` as `incomplete` (as if it had none) and `weir
/// checkpoints verify D` passed (exit 0) over it, while `--restore` refuses
/// it: the inspector said the directory was fine when its newest checkpoint
/// could not be restored. It is `CORRUPT`, `verify` fails naming the file,
/// and `--restore` of it is refused (exit 2) with nothing changed.
#[test]
fn a_truncated_manifest_is_corrupt_not_incomplete() {
    let s = Scratch::new("p16-truncated-metadata");
    let (job, d, settings) = completed_quick_run(&s);
    let out = job.output.clone().unwrap();
    let newest = *complete_checkpoints(&d).last().unwrap();
    let metadata = chk(&d, newest).join("_metadata");
    for len in [0, 7] {
        truncate(&metadata, len);
        let inspect = |action: &str, json: bool| {
            let mut c = Command::new(WEIR);
            c.args(["checkpoints", action]);
            if json {
                c.arg("--json");
            }
            s.run(&format!("{action}-{len}"), c.arg(&d), FAIL_FAST)
        };
        let verify = inspect("verify", false);
        verify.assert_exit(2, "verify of a directory holding a truncated manifest");
        verify.assert_stderr_names("the manifest", &metadata.display().to_string());
        let list = inspect("list", false);
        list.assert_exit(0, "list");
        let row = list
            .stdout
            .lines()
            .find(|l| l.contains(&chk(&d, newest).display().to_string()))
            .unwrap_or_else(|| panic!("a row for chk-{newest}\n{}", list.describe()));
        assert!(row.contains("CORRUPT"), "{}", list.describe());
        let json = inspect("list", true);
        let all: Value = serde_json::from_str(json.stdout.trim()).unwrap();
        let one = all
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == newest)
            .unwrap_or_else(|| panic!("chk-{newest} listed: {all}"));
        assert_eq!(
            (&one["complete"], &one["verified"]),
            (&Value::Bool(true), &Value::Bool(false)),
            "{one}"
        );

        let d_before = tree(&d);
        let out_before = tree(&out);
        let run = s.run(
            &format!("restore-truncated-{len}"),
            job.cmd(&d)
                .args(&settings)
                .arg("--restore")
                .arg(chk(&d, newest)),
            FAIL_FAST,
        );
        run.assert_refused("a truncated manifest");
        run.assert_stderr_names("the manifest", &metadata.display().to_string());
        assert_unchanged("the checkpoint directory", &d_before, &tree(&d), &run);
        assert_unchanged("the output directory", &out_before, &tree(&out), &run);
    }
}

/// Probe 16: `state.savepoints.dir` naming the output directory (or a
/// directory inside it) put a stop's `savepoint-*` among the committed
/// output, and `--allow-non-restored-state` without `--restore` was
/// silently ignored. Both are refused at once (exit 2) naming what is
/// wrong, with nothing written.
#[test]
fn savepoints_in_the_output_and_a_flag_without_restore_are_refused() {
    let s = Scratch::new("p16-misuse");
    let (d, out) = (s.path("ck"), s.path("out"));
    let job = W1::quick(&out);
    let settings = checkpointing("100ms", 3);
    for savepoints in [out.clone(), out.join("savepoints")] {
        let run = s.run(
            "savepoints-in-output",
            job.cmd(&d)
                .args(&settings)
                .arg("--set")
                .arg(format!("state.savepoints.dir={}", savepoints.display())),
            FAIL_FAST,
        );
        run.assert_refused("state.savepoints.dir in the output directory");
        run.assert_stderr_names(
            "the savepoints directory",
            &savepoints.display().to_string(),
        );
        run.assert_stderr_names("the output directory", &out.display().to_string());
        assert!(complete_checkpoints(&d).is_empty(), "{}", run.describe());
        assert!(committed_parts(&out).is_empty(), "{}", run.describe());
    }
    let run = s.run(
        "allow-without-restore",
        job.cmd(&d)
            .args(&settings)
            .arg("--allow-non-restored-state"),
        FAIL_FAST,
    );
    run.assert_exit(2, "--allow-non-restored-state without --restore");
    run.assert_stderr_names("the missing flag", "--restore");
    assert!(committed_parts(&out).is_empty(), "{}", run.describe());
}

// ---------------------------------------------------------------------------
// The harness itself.

/// The closed-form output this file compares with is that of an
/// uninterrupted run of the real binary (with checkpoints and without),
/// and the helpers read names as weir writes them.
#[test]
fn harness_closed_form_output_is_an_uninterrupted_runs() {
    let s = Scratch::new("harness");
    for (label, settings) in [
        ("with-checkpoints", checkpointing("20ms", 3).to_vec()),
        ("without", Vec::new()),
    ] {
        let out = s.path(&format!("out-{label}"));
        let job = W1::quick(&out);
        let run = s.run(label, job.cmd(&s.path("ck")).args(&settings), FINISH);
        run.assert_exit(0, "an uninterrupted run");
        run.assert_no_panic();
        assert_output(&out, &job.expected(), label);
    }
    assert_eq!(part_id("part-0001-0000000042"), Some(42));
    assert_eq!(part_id(".pending-0001-0000000042"), None);
    assert!(names_checkpoint("cannot read /x/chk-12/w000.seg", 12));
    assert!(names_checkpoint("checkpoint 12: corrupt", 12));
    assert!(!names_checkpoint("cannot read /x/chk-12/w000.seg", 1));
    assert!(!names_checkpoint("checkpoint 12: corrupt", 1));
}
