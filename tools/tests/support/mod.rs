//! What the tests that SIGKILL and restore the real `weir` binary share
//! (`rescale.rs`, `incremental.rs`): a scratch directory per test, a
//! running `weir` killed when dropped, the complete checkpoints of a
//! directory and the check that W1's committed output holds every result
//! exactly once; and, in [`duckdb`], what the tests that check weir SQL
//! against DuckDB share.

#![allow(dead_code)] // each test file uses its own part

pub mod duckdb;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const WEIR: &str = env!("CARGO_BIN_EXE_weir");
/// The longest a run that should finish may take.
pub const FINISH: Duration = Duration::from_secs(120);
/// The longest to wait for a run's next checkpoint.
pub const CONDITION: Duration = Duration::from_secs(60);

pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A directory for one test, removed at the end unless the test failed.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `suite` names the test file (`rescale`, `incremental`), `test` the test.
    pub fn new(suite: &str, test: &str) -> Self {
        let base = fs::canonicalize(std::env::temp_dir()).expect("the temporary directory");
        let root = base.join(format!("weir-{suite}-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).expect("create a scratch directory");
        Self(root)
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} (runs' stdout and stderr inside)", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// A running `weir`, killed when dropped.
pub struct Proc {
    pub child: Child,
    stderr: PathBuf,
    pub label: String,
}

impl Proc {
    pub fn spawn(s: &Scratch, label: &str, mut cmd: Command) -> Self {
        let stderr = s.join(&format!("{label}.stderr"));
        let child = cmd
            .stdout(File::create(s.join(&format!("{label}.stdout"))).unwrap())
            .stderr(File::create(&stderr).unwrap())
            .stdin(Stdio::null())
            .spawn()
            .expect("start the weir binary");
        Self {
            child,
            stderr,
            label: label.to_owned(),
        }
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Fails the test for a run that is still going but should not be:
    /// its stderr and what each of its threads was doing (read before the
    /// kill that dropping the run makes).
    fn stuck(&self, what: &str) -> ! {
        let stacks = weir_runtime::testing::thread_stacks(self.child.id(), "");
        panic!(
            "`{}`: {what}\n{}\nthread stacks:\n{stacks}",
            self.label,
            self.stderr()
        );
    }

    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("poll the weir child")
    }

    /// Waits until `cond` holds or the run ends; returns whether it still
    /// runs.
    pub fn wait_until(&mut self, what: &str, mut cond: impl FnMut() -> bool) -> bool {
        let since = Instant::now();
        while !cond() {
            if let Some(status) = self.exited() {
                assert!(
                    status.success(),
                    "`{}` failed ({status}) before {what}\n{}",
                    self.label,
                    self.stderr()
                );
                return false;
            }
            if since.elapsed() >= CONDITION {
                self.stuck(&format!("no {what} within {CONDITION:?}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// The rest of the stderr line that starts with `prefix`, once the run
    /// printed it (`REST endpoint: `, `Prometheus endpoint: `).
    pub fn printed(&mut self, prefix: &str) -> String {
        let since = Instant::now();
        loop {
            if let Some(rest) = self
                .stderr()
                .lines()
                .find_map(|l| l.strip_prefix(prefix).map(str::to_owned))
            {
                return rest;
            }
            assert!(
                self.exited().is_none(),
                "`{}` ended before printing `{prefix}`\n{}",
                self.label,
                self.stderr()
            );
            if since.elapsed() >= CONDITION {
                self.stuck(&format!("no `{prefix}` within {CONDITION:?}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL; returns whether it was still running.
    pub fn kill(&mut self) -> bool {
        let running = self.exited().is_none();
        let _ = self.child.kill();
        let _ = self.child.wait();
        running
    }

    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let since = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            if since.elapsed() >= timeout {
                self.stuck(&format!("did not end within {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `first` until `checkpoints` holds two complete checkpoints and
/// kills it (SIGKILL), then runs `again` with `--restore latest` to its
/// end within `finish`; returns that second run, which succeeded.
pub fn killed_then_restored(
    s: &Scratch,
    checkpoints: &Path,
    first: Command,
    mut again: Command,
    finish: Duration,
) -> Proc {
    let mut first = Proc::spawn(s, "first", first);
    assert!(
        first.wait_until("two complete checkpoints", || {
            complete_checkpoints(checkpoints).len() >= 2
        }),
        "no checkpoints: {}",
        first.stderr()
    );
    assert!(first.kill(), "the first run ended before the kill");
    again.args(["--restore", "latest"]);
    let mut second = Proc::spawn(s, "second", again);
    let status = second.wait(finish);
    assert!(status.success(), "{}", second.stderr());
    second
}

/// Ids of the complete checkpoints in `d`.
pub fn complete_checkpoints(d: &Path) -> Vec<u64> {
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

/// Every committed line of `out` (`part-*` files), with its file.
pub fn committed_lines(out: &Path) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for e in fs::read_dir(out).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("part-") {
            let text = fs::read_to_string(e.path()).expect("read a part file");
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{name} ends mid-line"
            );
            lines.extend(text.lines().map(|l| (l.to_owned(), name.clone())));
        }
    }
    lines
}

/// A SQL script that copies `(id, name)` rows from CSV files under `source`
/// to the exactly-once filesystem sink at `sink`; `source_options` are more
/// options of the source (each as `, 'key' = 'value'`).
pub fn csv_copy_script(source: &str, sink: &str, source_options: &str) -> String {
    format!(
        "CREATE TABLE src (id BIGINT, name STRING)
         WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv'{source_options});
         CREATE TABLE dst (id BIGINT, name STRING)
         WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv');
         INSERT INTO dst SELECT id, name FROM src;"
    )
}

/// Every committed line of `out` (`part-*` files), sorted, repeats kept.
pub fn committed_rows(out: &Path) -> Vec<String> {
    let mut lines: Vec<String> = committed_lines(out).into_iter().map(|(l, _)| l).collect();
    lines.sort();
    lines
}

/// W1's committed output holds every result exactly once: the line
/// `key,count,sum` of record `i`'s key with its count so far. With several
/// sources a key's records interleave in any order, so per key the counts
/// must be exactly `1..=c` (`c` the key's records), each once, and the
/// line of count `c` must carry the key's total.
pub fn assert_w1_exactly_once(out: &Path, n: u64, k: u64, context: &str) {
    let mut expected = vec![(0u64, 0u64); k as usize];
    for i in 0..n {
        let e = &mut expected[(splitmix64(i) % k) as usize];
        e.0 += 1;
        e.1 = e.1.wrapping_add(i);
    }
    let mut seen: BTreeMap<(u64, u64), Vec<(u64, String)>> = BTreeMap::new();
    let lines = committed_lines(out);
    for (line, file) in &lines {
        let f: Vec<u64> = line
            .split(',')
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{context}: bad line `{line}` in {file}"))
            })
            .collect();
        assert_eq!(f.len(), 3, "{context}: bad line `{line}` in {file}");
        seen.entry((f[0], f[1]))
            .or_default()
            .push((f[2], file.clone()));
    }
    let mut problems = Vec::new();
    for (key, &(c, total)) in expected.iter().enumerate() {
        for count in 1..=c {
            match seen.get(&(key as u64, count)).map(Vec::as_slice) {
                None => problems.push(format!("key {key} count {count}: missing")),
                Some([(sum, _)]) => {
                    if count == c && *sum != total {
                        problems.push(format!("key {key}: last sum {sum}, expected {total}"));
                    }
                }
                Some(more) => problems.push(format!("key {key} count {count}: {more:?}")),
            }
        }
    }
    let stray = seen
        .keys()
        .filter(|(key, count)| {
            expected
                .get(*key as usize)
                .is_none_or(|e| *count == 0 || *count > e.0)
        })
        .count();
    if stray > 0 {
        problems.push(format!("{stray} lines of keys or counts that do not exist"));
    }
    assert!(
        problems.is_empty() && lines.len() as u64 == n,
        "{context}: {} committed lines for {n} records; {} problems, first {:?}",
        lines.len(),
        problems.len(),
        &problems[..problems.len().min(12)]
    );
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A venv's python for an outside checker (DuckDB, prometheus_client):
/// the one environment variable `var` names, checked to `-c import_check`,
/// or else what `script` (a setup script under tools/) prints. Panics
/// with `how` (how to set it up) when neither works.
pub fn venv_python(var: &str, script: &str, import_check: &str, how: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        // `-I`: not a module of the working directory by the same name.
        let ok = Command::new(&p)
            .args(["-I", "-c", import_check])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "{var}={} cannot `{import_check}`. {how}", p.display());
        return p;
    }
    let out = Command::new("bash")
        .arg(repo().join(script))
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_owned())
        }
        Ok(o) => panic!(
            "{script} failed ({}): {}\n{how}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("cannot run {script}: {e}\n{how}"),
    }
}
