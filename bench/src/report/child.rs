//! Running one `weir bench ...` as a child process of the same binary and
//! reading the JSON object it prints as its last line: each run has a
//! process of its own, as a reader rerunning its command would.
//!
//! A run passes when it exits 0, prints its JSON line, says
//! `"verified": true` (W5: also `"exactly_once": true`) and completed the
//! checkpoints its spec asks for. Anything else is a failure with the
//! reason, the command and the tail of its stderr, which the report shows.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::plan::{Point, RunSpec};

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// What it measures.
    pub point: Point,
    /// The command line, as a reader would type it (`weir bench ...`).
    pub command: String,
    /// Wall-clock seconds of the child process.
    pub seconds: f64,
    /// The JSON object of its last stdout line, if it printed one.
    pub json: Option<Value>,
    /// Why the run does not count (`None`: it passed).
    pub failure: Option<String>,
    /// The last lines of its stderr, kept for failures.
    pub stderr_tail: String,
    /// CPU time the hypervisor gave to others while the run went on
    /// (`steal` of `/proc/stat`, all CPUs), in ms: the host's hiccups,
    /// which a latency tail shows and no setting of weir's removes.
    /// `None` where the kernel does not say.
    pub steal_ms: Option<f64>,
}

impl RunRecord {
    /// The run exited 0 with a verified result.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }

    /// A number of the JSON line by its path (`["latency_us", "p99"]`).
    pub fn number(&self, path: &[&str]) -> Option<f64> {
        let mut v = self.json.as_ref()?;
        for key in path {
            v = v.get(*key)?;
        }
        v.as_f64()
    }
}

/// The JSON object on the last non-empty line of `stdout`, if it is one.
pub fn last_json_line(stdout: &str) -> Option<Value> {
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty())?;
    match serde_json::from_str::<Value>(line.trim()) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `args` as one shell line after `weir`, quoting what the shell would
/// split.
pub fn command_line(args: &[String]) -> String {
    let mut s = String::from("weir");
    for a in args {
        s.push(' ');
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c));
        if plain {
            s.push_str(a);
        } else {
            s.push('\'');
            s.push_str(&a.replace('\'', r"'\''"));
            s.push('\'');
        }
    }
    s
}

/// Why a finished run does not count, judged from its exit and JSON.
pub fn judge(spec: &RunSpec, success: bool, status: &str, json: Option<&Value>) -> Option<String> {
    let Some(json) = json else {
        return Some(format!("{status}, and it printed no JSON line"));
    };
    if !success {
        return Some(status.to_owned());
    }
    if json["verified"] != Value::Bool(true) {
        return Some(format!(
            "the result was not verified (\"verified\": {})",
            json["verified"]
        ));
    }
    if matches!(spec.point, Point::W5 { .. }) && json["exactly_once"] != Value::Bool(true) {
        return Some("the output across the crash is not exactly once".into());
    }
    if let Some(min) = spec.min_checkpoints {
        let completed = json["checkpoints"]["completed"].as_u64().unwrap_or(0);
        if completed < min {
            return Some(format!(
                "{completed} checkpoints completed, expected at least {min}: the run did not \
                 checkpoint as configured"
            ));
        }
    }
    None
}

/// The CPU time stolen from this machine by its hypervisor so far, in
/// ms: the `steal` field of `/proc/stat`'s `cpu` line (in clock ticks).
fn steal_ms() -> Option<f64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    steal_of(&stat, USER_HZ)
}

/// The unit of `/proc/stat`'s times, ticks per second: Linux's `USER_HZ`,
/// 100 on every architecture it runs on (part of its user ABI, whatever
/// the kernel's own tick rate).
const USER_HZ: f64 = 100.0;

/// [`steal_ms`] of the text of `/proc/stat` at `ticks` per second.
fn steal_of(stat: &str, ticks: f64) -> Option<f64> {
    let cpu = stat.lines().find(|l| l.starts_with("cpu "))?;
    // cpu user nice system idle iowait irq softirq steal ...
    let steal: f64 = cpu.split_whitespace().nth(8)?.parse().ok()?;
    Some(steal * 1000.0 / ticks)
}

/// Runs `spec` with the `weir` binary `exe`, stdout and stderr into files
/// under `logs` named by `index`; kills it after `spec.limit`.
pub fn run(exe: &Path, spec: &RunSpec, logs: &Path, index: usize) -> RunRecord {
    let command = command_line(&spec.args);
    let steal_at_start = steal_ms();
    let record = |seconds, json, failure: Option<String>, stderr_tail| RunRecord {
        point: spec.point.clone(),
        command: command.clone(),
        seconds,
        json,
        failure,
        stderr_tail,
        steal_ms: steal_at_start
            .zip(steal_ms())
            .map(|(start, end)| (end - start).max(0.0)),
    };
    let stem = format!(
        "{index:02}-{}",
        spec.args.get(1).map_or("run", |s| s.as_str())
    );
    let (out_path, err_path): (PathBuf, PathBuf) = (
        logs.join(format!("{stem}.stdout")),
        logs.join(format!("{stem}.stderr")),
    );
    let files = File::create(&out_path).and_then(|o| Ok((o, File::create(&err_path)?)));
    let (out, err) = match files {
        Ok(f) => f,
        Err(e) => {
            return record(
                0.0,
                None,
                Some(format!(
                    "cannot create its log files in {}: {e}",
                    logs.display()
                )),
                String::new(),
            )
        }
    };
    if let Some(dir) = &spec.scratch {
        let _ = fs::remove_dir_all(dir);
    }
    let started = Instant::now();
    let child = Command::new(exe)
        .args(&spec.args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return record(
                0.0,
                None,
                Some(format!("cannot start {}: {e}", exe.display())),
                String::new(),
            )
        }
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > spec.limit => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "killed after {} s, the longest a run of this report may take",
                    spec.limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(format!("cannot wait for it: {e}")),
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let stdout = fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    let json = last_json_line(&stdout);
    let failure = match &status {
        Ok(s) => judge(
            spec,
            s.success(),
            &format!("it exited with {s}"),
            json.as_ref(),
        ),
        Err(why) => Some(why.clone()),
    };
    if failure.is_none() {
        if let Some(dir) = &spec.scratch {
            let _ = fs::remove_dir_all(dir);
        }
    }
    record(seconds, json, failure, tail(&stderr, 15))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(point: Point, min_checkpoints: Option<u64>) -> RunSpec {
        RunSpec {
            point,
            args: vec!["bench".into(), "w3".into()],
            scratch: None,
            min_checkpoints,
            limit: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_json_line_is_the_last_non_empty_line() {
        let out = "weir bench w1: 10 records\n{\"verified\":true,\"records_per_s\":5.5}\n\n";
        let v = last_json_line(out).unwrap();
        assert_eq!(v["records_per_s"], 5.5);
        // A summary line last, or a JSON value that is not an object, is
        // no report.
        assert!(last_json_line("{\"a\":1}\nerror: late\n").is_none());
        assert!(last_json_line("[1,2]\n").is_none());
        assert!(last_json_line("").is_none());
    }

    #[test]
    fn command_lines_quote_what_the_shell_would_split() {
        let args: Vec<String> = ["bench", "w1", "--set", "a.b=1 s", "--dir", "x/it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            command_line(&args),
            r"weir bench w1 --set 'a.b=1 s' --dir 'x/it'\''s'"
        );
    }

    #[test]
    fn unverified_failed_and_checkpointless_runs_are_failures() {
        let w3 = Point::W3 {
            rate: 1,
            timeout_ms: 0.0,
            auto: false,
            checkpoints: true,
        };
        let good = json!({"verified": true, "checkpoints": {"completed": 3}});
        assert_eq!(
            judge(&spec(w3.clone(), Some(3)), true, "", Some(&good)),
            None
        );
        let why = judge(&spec(w3.clone(), Some(4)), true, "", Some(&good)).unwrap();
        assert!(
            why.contains("3 checkpoints completed, expected at least 4"),
            "{why}"
        );
        let bad = json!({"verified": false});
        assert!(judge(&spec(w3.clone(), None), true, "", Some(&bad))
            .unwrap()
            .contains("not verified"));
        let why = judge(
            &spec(w3.clone(), None),
            false,
            "it exited with exit status: 1",
            None,
        );
        assert_eq!(
            why.as_deref(),
            Some("it exited with exit status: 1, and it printed no JSON line")
        );
        assert!(judge(&spec(w3, None), false, "exit 2", Some(&good)).is_some());
        let w5 = json!({"verified": true, "exactly_once": false});
        assert!(judge(&spec(Point::W5 { keys: 1 }, None), true, "", Some(&w5)).is_some());
    }

    #[test]
    fn steal_is_the_eighth_time_of_the_cpu_line() {
        let stat = "cpu  100 2 30 4000 5 0 6 250 0 0\ncpu0 50 1 15 2000 2 0 3 125 0 0\nctxt 9\n";
        assert_eq!(steal_of(stat, 100.0), Some(2500.0));
        assert_eq!(steal_of("cpu  1 2 3\n", 100.0), None);
        assert_eq!(steal_of("intr 5\n", 100.0), None);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }

    #[test]
    fn numbers_are_found_by_path() {
        let r = RunRecord {
            point: Point::W2,
            command: String::new(),
            seconds: 0.0,
            json: Some(json!({"latency_us": {"p99": 7.5}})),
            failure: None,
            stderr_tail: String::new(),
            steal_ms: None,
        };
        assert_eq!(r.number(&["latency_us", "p99"]), Some(7.5));
        assert_eq!(r.number(&["latency_us", "p50"]), None);
    }
}
