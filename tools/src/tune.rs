//! `weir tune buffer-timeout`: sweeps the buffer timeout on the job a
//! config file describes (W3 without one) at a given rate, prints what each
//! timeout gives (latency percentiles and the rate reached), and picks the
//! largest timeout whose p99 meets the target: the fewest flushes, so the
//! most throughput headroom, that still meets it. With `--write FILE` the
//! choice goes into a config file, which is read back to prove it says so.
//!
//! Each point is a real run of `weir bench <job>` (this binary, as a child
//! process, so runs do not share a heap or threads), verified as the job
//! verifies itself; a run that fails or does not verify stops the sweep
//! with its command and error. The jobs are those the binary can pace to
//! a rate (`job.rate`): the built-in ones, and a SQL job (`job.sql-file`)
//! whose generated sources (`datagen`, `nexmark` tables) `job.rate` and
//! `job.records` size and pace in place of their tables' options (run by
//! `weir bench sql`; it has no reference to verify against, so a run that
//! ends without error counts). W3 measures every record's latency at its
//! sink; the others are measured as Flink measures any job, by latency
//! markers (`metrics.latency.interval` = 1 ms, the window kept at each sink
//! sized to the recorded time, so the warm-up's markers have left it), and
//! run `rate x (warm-up + duration)` records (each generated source's rows
//! for SQL). `auto` (the adaptive deadline, with the
//! target as its `latency-target`) is measured beside the fixed timeouts
//! for comparison; it is never the one written (a fixed timeout is what
//! Flink's users carry over).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Args, Subcommand};
use serde_json::Value;
use weir_bench::params::{JobName, JobParams};
use weir_runtime::core::units::{format_duration, parse_duration};
use weir_runtime::exchange::flush::BufferTimeout;
use weir_runtime::Config;

/// The least `execution.buffer-timeout.latency-target`.
const MIN_LATENCY_TARGET: std::time::Duration = std::time::Duration::from_micros(10);

/// What `weir tune` tunes.
#[derive(Subcommand)]
pub enum Tune {
    /// Sweep execution.buffer-timeout.interval on the config's job (W3
    /// without one) at --rate and pick the largest timeout whose p99
    /// latency is at most --p99.
    BufferTimeout(BufferTimeoutArgs),
}

/// `weir tune buffer-timeout`'s options.
#[derive(Args)]
pub struct BufferTimeoutArgs {
    /// A config file whose job is tuned (job.name = "quickstart", "w1",
    /// "w2" or "w3", or job.sql-file = a SQL script whose datagen or nexmark
    /// tables are paced to --rate); its other keys (workers, checkpointing,
    /// buffers) apply to every run.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Source rate in records/s.
    #[arg(long)]
    rate: u64,
    /// The p99 latency to meet, e.g. 1ms or 500us.
    #[arg(long, value_name = "DURATION")]
    p99: String,
    /// Write the chosen timeout into this config file (created, or updated
    /// in place: other keys are kept).
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
    /// The timeouts to try, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0ms,100us,250us,500us,1ms,2ms,5ms,10ms,20ms,50ms,100ms"
    )]
    timeouts: Vec<String>,
    /// Recorded time of each run.
    #[arg(long, default_value = "5s")]
    duration: String,
    /// Warm-up of each run.
    #[arg(long, default_value = "2s")]
    warmup: String,
    /// Workers (parallelism.default).
    #[arg(long)]
    workers: Option<usize>,
    /// Overrides a config key for every run: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The job a sweep runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tuned {
    /// A built-in job (`job.name`).
    Builtin(JobName),
    /// The config's SQL script (`job.sql-file`).
    Sql,
}

impl Tuned {
    /// The `weir bench` workload that runs it.
    fn bench(self) -> &'static str {
        match self {
            Tuned::Builtin(job) => job.as_str(),
            Tuned::Sql => "sql",
        }
    }
}

impl std::fmt::Display for Tuned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tuned::Builtin(job) => write!(f, "{job}"),
            Tuned::Sql => f.write_str("the SQL job"),
        }
    }
}

/// What one run gave.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    /// The setting, as passed (`2ms`, `auto`).
    setting: String,
    /// Latency in µs.
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
    /// Records per second inside the recorded window.
    achieved: f64,
}

/// Runs the command.
pub fn run(tune: &Tune) -> ExitCode {
    match tune {
        Tune::BufferTimeout(args) => match buffer_timeout(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err((code, message)) => {
                eprintln!("error: {message}");
                ExitCode::from(code)
            }
        },
    }
}

fn buffer_timeout(args: &BufferTimeoutArgs) -> Result<(), (u8, String)> {
    let usage = |m: String| (2, m);
    let target = parse_duration(&args.p99)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| usage(format!("--p99 {}: not a positive duration", args.p99)))?;
    let mut timeouts = Vec::new();
    for t in &args.timeouts {
        match BufferTimeout::parse(t) {
            Some(BufferTimeout::Interval(d)) => timeouts.push(d),
            _ => return Err(usage(format!("--timeouts: `{t}` is not a duration"))),
        }
    }
    timeouts.sort();
    timeouts.dedup();
    let job = match &args.config {
        Some(path) => {
            // The file loads as any config does (its errors name the key)
            // and names a job the binary can pace.
            let (_, params) = Config::load_with::<JobParams>(Some(path), &[])
                .map_err(|e| usage(e.to_string()))?;
            job_of(&params)
        }
        None => Tuned::Builtin(JobName::W3),
    };
    println!(
        "weir tune buffer-timeout: {} at {} records/s, p99 target {}, {} recorded per run{}",
        job,
        args.rate,
        format_duration(target),
        args.duration,
        if job == Tuned::Builtin(JobName::W3) {
            ""
        } else {
            " (latency markers every 1ms)"
        }
    );
    println!();
    println!("| buffer timeout | p50 | p99 | p99.9 | max | records/s | meets p99 |");
    println!("|---|---|---|---|---|---|---|");
    let mut points = Vec::new();
    // `auto` beside them, when the target is one it takes (10us or more).
    let auto = (target >= MIN_LATENCY_TARGET).then(|| "auto".to_owned());
    let settings = timeouts.iter().map(|d| format_duration(*d)).chain(auto);
    for setting in settings {
        let p = run_job(args, job, &setting, target)?;
        let label = if setting == "auto" {
            format!("auto (target {})", format_duration(target))
        } else {
            setting.clone()
        };
        println!(
            "| {label} | {} | {} | {} | {} | {:.0} | {} |",
            us(p.p50),
            us(p.p99),
            us(p.p999),
            us(p.max),
            p.achieved,
            if meets(&p, target, args.rate) {
                "yes"
            } else {
                "no"
            }
        );
        points.push(p);
    }
    println!();
    let fixed: Vec<&Point> = points.iter().filter(|p| p.setting != "auto").collect();
    let Some(best) = choose(&fixed, target, args.rate) else {
        let lowest = fixed
            .iter()
            .min_by(|a, b| a.p99.total_cmp(&b.p99))
            .map(|p| format!("; the lowest p99 was {} at {}", us(p.p99), p.setting))
            .unwrap_or_default();
        return Err((
            1,
            format!(
                "no buffer timeout met p99 <= {} at {} records/s{lowest}",
                format_duration(target),
                args.rate
            ),
        ));
    };
    println!(
        "chosen: execution.buffer-timeout.interval = {} (p99 {} at {:.0} records/s)",
        best.setting,
        us(best.p99),
        best.achieved
    );
    if let Some(file) = &args.write {
        let base = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match &args.config {
                Some(c) => std::fs::read_to_string(c).unwrap_or_default(),
                None => String::new(),
            },
            Err(e) => return Err((1, format!("cannot read {}: {e}", file.display()))),
        };
        let comment = format!(
            "# weir tune buffer-timeout: p99 {} at {} records/s on {} (target {})",
            us(best.p99),
            args.rate,
            job,
            format_duration(target)
        );
        let text = with_timeout(&base, &best.setting, &comment);
        std::fs::write(file, &text)
            .map_err(|e| (1, format!("cannot write {}: {e}", file.display())))?;
        check_written(file, &best.setting)?;
        println!("written to {}", file.display());
    }
    Ok(())
}

/// The job of `params`: its SQL script if it names one, else its
/// built-in job (each of which `job.rate` paces).
fn job_of(params: &JobParams) -> Tuned {
    if params.sql_file.is_some() {
        Tuned::Sql
    } else {
        Tuned::Builtin(params.job)
    }
}

/// One run of `job` with buffer timeout `setting`.
fn run_job(
    args: &BufferTimeoutArgs,
    job: Tuned,
    setting: &str,
    target: std::time::Duration,
) -> Result<Point, (u8, String)> {
    let exe = std::env::current_exe().map_err(|e| (1, format!("cannot find this binary: {e}")))?;
    let mut c = Command::new(exe);
    c.args(["bench", job.bench(), "--quiet"])
        .args(["--rate", &args.rate.to_string()]);
    if job == Tuned::Builtin(JobName::W3) {
        c.args(["--warmup", &args.warmup, "--duration", &args.duration]);
    } else {
        let secs = |what: &str, v: &str| {
            parse_duration(v)
                .map(|d| d.as_secs_f64())
                .ok_or_else(|| (2, format!("--{what} {v}: not a duration")))
        };
        let (warmup, duration) = (
            secs("warmup", &args.warmup)?,
            secs("duration", &args.duration)?,
        );
        let records = ((warmup + duration) * args.rate as f64).ceil().max(1.0) as u64;
        // A marker per ms from each source subtask; each sink subtask keeps
        // about the recorded time's worth (one marker per ms arrives at
        // each, whatever the parallelism).
        let history = ((duration * 1e3).ceil() as u64).max(1);
        c.args(["--set", &format!("job.records={records}")])
            .args(["--set", "metrics.latency.interval=1ms"])
            .args(["--set", &format!("metrics.latency.history-size={history}")]);
    }
    if let Some(config) = &args.config {
        c.arg("--config").arg(config);
    }
    if let Some(w) = args.workers {
        c.args(["--workers", &w.to_string()]);
    }
    for s in &args.set {
        c.args(["--set", s]);
    }
    c.args(["--set", "execution.buffer-timeout.enabled=true"])
        .args([
            "--set",
            &format!("execution.buffer-timeout.interval={setting}"),
        ]);
    if setting == "auto" {
        c.args([
            "--set",
            &format!(
                "execution.buffer-timeout.latency-target={}",
                format_duration(target)
            ),
        ]);
    }
    let shown = format!("{c:?}");
    let out = c
        .output()
        .map_err(|e| (1, format!("cannot run {shown}: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    tail.reverse();
    let tail = tail.join("\n");
    let failed = |code: u8, why: &str| {
        (
            code,
            format!("the run with buffer timeout {setting} {why}: {shown}\n{tail}"),
        )
    };
    if !out.status.success() {
        // Exit 2 is the job's config or script to fix: so is this.
        let code = if out.status.code() == Some(2) { 2 } else { 1 };
        return Err(failed(code, &format!("failed ({})", out.status)));
    }
    let json: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| failed(1, "printed no JSON line"))?;
    point(setting, &json, job).map_err(|why| failed(1, &why))
}

/// The figures of a run's JSON line: W3's latency of every recorded
/// record, or the latency markers' for other jobs; the rate its sources
/// reached.
fn point(setting: &str, j: &Value, job: Tuned) -> Result<Point, String> {
    // `verified` is null for a SQL job, which has nothing to compare with.
    let (got, expected) = (&j["checksum"], &j["expected_checksum"]);
    if !got.is_null() && got != expected {
        return Err(format!(
            "did not verify (checksum {got} where {expected} was expected)"
        ));
    }
    if j["verified"] == Value::Bool(false) {
        return Err("did not verify".to_owned());
    }
    let (l, achieved) = match job {
        Tuned::Builtin(JobName::W3) => (&j["latency_us"], &j["achieved_rate"]),
        // The rate of the generator, before the quickstart's filter and
        // whatever a SQL job keeps.
        Tuned::Builtin(JobName::Quickstart) | Tuned::Sql => {
            (&j["marker_latency_us"], &j["achieved_rate"])
        }
        Tuned::Builtin(JobName::W1 | JobName::W2) => (&j["marker_latency_us"], &j["records_per_s"]),
    };
    let get = |v: &Value, what: &str| v.as_f64().ok_or_else(|| format!("reported no {what}"));
    Ok(Point {
        setting: setting.to_owned(),
        p50: get(&l["p50"], "p50")?,
        p99: get(&l["p99"], "p99")?,
        p999: get(&l["p999"], "p99.9")?,
        max: get(&l["max"], "max")?,
        achieved: get(achieved, "achieved rate")?,
    })
}

/// A point meets the target: its p99 is at most the target and the source
/// kept (within 2%) the asked-for rate (a run that fell behind has no
/// meaningful latency).
fn meets(p: &Point, target: std::time::Duration, rate: u64) -> bool {
    p.p99 <= target.as_secs_f64() * 1e6 && p.achieved >= 0.98 * rate as f64
}

/// The largest timeout that meets the target (the points are in increasing
/// timeout order).
fn choose<'a>(points: &[&'a Point], target: std::time::Duration, rate: u64) -> Option<&'a Point> {
    points
        .iter()
        .rev()
        .find(|p| meets(p, target, rate))
        .copied()
}

/// µs, readably.
fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.1} us")
    }
}

/// `text` with the buffer timeout set to `setting`: lines of the document
/// root that set `execution.buffer-timeout` (any of its names, quoted or
/// dotted) are dropped, and the chosen value goes first, before any table
/// (a key after a `[table]` header would belong to that table).
fn with_timeout(text: &str, setting: &str, comment: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{comment}");
    let _ = writeln!(out, "\"execution.buffer-timeout.interval\" = \"{setting}\"");
    let _ = writeln!(out, "\"execution.buffer-timeout.enabled\" = true");
    let mut in_root = true;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_root = false;
        }
        let key = t.split('=').next().unwrap_or("").trim().trim_matches('"');
        let sets_timeout = key == "execution.buffer-timeout"
            || key == "execution.buffer-timeout.interval"
            || key == "execution.buffer-timeout.enabled";
        let old_comment = t.starts_with("# weir tune buffer-timeout:");
        if (in_root && sets_timeout) || old_comment {
            continue;
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Reads `file` back: it must set exactly the chosen timeout (another
/// setting of it, in a table say, is reported rather than left to win).
fn check_written(file: &Path, setting: &str) -> Result<(), (u8, String)> {
    let config = Config::load_with::<JobParams>(Some(file), &[])
        .map(|(c, _)| c)
        .map_err(|e| (1, format!("{} does not read back: {e}", file.display())))?;
    let want = BufferTimeout::parse(setting);
    if Some(config.effective_buffer_timeout()) != want {
        return Err((
            1,
            format!(
                "{} still sets the buffer timeout to {} elsewhere (an [execution] table?): \
                 remove that setting and run again",
                file.display(),
                config.effective_buffer_timeout()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn p(setting: &str, p99: f64, achieved: f64) -> Point {
        Point {
            setting: setting.into(),
            p50: p99 / 2.0,
            p99,
            p999: p99,
            max: p99,
            achieved,
        }
    }

    #[test]
    fn the_largest_timeout_that_meets_the_target_wins() {
        let ms = Duration::from_millis;
        let pts = [
            p("0ms", 3.0, 1e6),
            p("1ms", 900.0, 1e6),
            p("2ms", 1900.0, 1e6),
            p("5ms", 800.0, 0.5e6),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        assert_eq!(
            choose(&refs, ms(1), 1_000_000).map(|p| p.setting.as_str()),
            Some("1ms")
        );
        assert_eq!(
            choose(&refs, ms(2), 1_000_000).map(|p| p.setting.as_str()),
            Some("2ms")
        );
        // 5ms met the p99 only because its source fell behind.
        assert_eq!(
            choose(&refs, ms(10), 1_000_000).map(|p| p.setting.as_str()),
            Some("2ms")
        );
        assert_eq!(choose(&refs, Duration::from_micros(1), 1_000_000), None);
    }

    #[test]
    fn the_written_config_keeps_other_keys_and_replaces_old_timeouts() {
        let base = "# mine\n\"job.name\" = \"w3\"\nexecution.buffer-timeout = \"100ms\"\n\"execution.buffer-timeout.enabled\" = false\n[job]\nrate = 5\n";
        let text = with_timeout(base, "2ms", "# weir tune buffer-timeout: x");
        let again = with_timeout(&text, "5ms", "# weir tune buffer-timeout: y");
        assert_eq!(
            again,
            "# weir tune buffer-timeout: y\n\"execution.buffer-timeout.interval\" = \"5ms\"\n\
             \"execution.buffer-timeout.enabled\" = true\n# mine\n\"job.name\" = \"w3\"\n[job]\nrate = 5\n"
        );
        let table: toml::Table = again.parse().expect("valid TOML");
        assert_eq!(
            table["execution.buffer-timeout.interval"].as_str(),
            Some("5ms")
        );
    }

    #[test]
    fn w3_json_lines_become_points_and_bad_ones_are_named() {
        let j: Value = serde_json::from_str(
            r#"{"checksum":"1","expected_checksum":"1","achieved_rate":1000.0,
                "latency_us":{"p50":1.0,"p99":2.0,"p999":3.0,"max":4.0}}"#,
        )
        .expect("json");
        assert_eq!(
            point("1ms", &j, Tuned::Builtin(JobName::W3)),
            Ok(Point {
                setting: "1ms".into(),
                p50: 1.0,
                p99: 2.0,
                p999: 3.0,
                max: 4.0,
                achieved: 1000.0
            })
        );
        let bad: Value =
            serde_json::from_str(r#"{"checksum":"1","expected_checksum":"2"}"#).expect("json");
        assert!(point("1ms", &bad, Tuned::Builtin(JobName::W3))
            .unwrap_err()
            .contains("did not verify"));
        let missing: Value =
            serde_json::from_str(r#"{"checksum":"1","expected_checksum":"1","latency_us":{}}"#)
                .expect("json");
        assert!(point("1ms", &missing, Tuned::Builtin(JobName::W3))
            .unwrap_err()
            .contains("no p50"));
        // Other jobs are read from their latency markers and overall rate.
        let w1: Value = serde_json::from_str(
            r#"{"checksum":"1","expected_checksum":"1","records_per_s":990.0,
                "latency_us":{"p50":9.0,"p99":9.0,"p999":9.0,"max":9.0},
                "marker_latency_us":{"markers":7,"p50":1.0,"p99":2.0,"p999":3.0,"max":4.0}}"#,
        )
        .expect("json");
        let p = point("1ms", &w1, Tuned::Builtin(JobName::W1)).expect("a point");
        assert_eq!((p.p99, p.max, p.achieved), (2.0, 4.0, 990.0));
        let unmarked: Value = serde_json::from_str(
            r#"{"checksum":"1","expected_checksum":"1","records_per_s":990.0}"#,
        )
        .expect("json");
        assert!(point("1ms", &unmarked, Tuned::Builtin(JobName::W2))
            .unwrap_err()
            .contains("no p50"));
        // The quickstart and SQL jobs by their sources' rate (the
        // quickstart's filter drops events, a SQL job keeps what its
        // query keeps); a SQL job has nothing to verify against.
        let sql: Value = serde_json::from_str(
            r#"{"verified":null,"records_per_s":10.0,"achieved_rate":995.0,
                "marker_latency_us":{"markers":7,"p50":1.0,"p99":2.0,"p999":3.0,"max":4.0}}"#,
        )
        .expect("json");
        let p = point("1ms", &sql, Tuned::Sql).expect("a point");
        assert_eq!((p.p99, p.achieved), (2.0, 995.0));
        let quickstart = point("1ms", &sql, Tuned::Builtin(JobName::Quickstart));
        assert_eq!(quickstart.map(|p| p.achieved), Ok(995.0));
        let wrong: Value = serde_json::from_str(r#"{"verified":false}"#).expect("json");
        assert_eq!(
            point("1ms", &wrong, Tuned::Builtin(JobName::Quickstart)),
            Err("did not verify".to_owned())
        );
    }
}
