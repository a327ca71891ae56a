//! The `weir` command line: run a job from a config file, or run one of the
//! WORKLOADS.md benchmarks.
//!
//! Exit codes: 0 success; 1 the job failed at run time (a failure a restart
//! may cure, after the restart strategy gave up or with none), produced
//! a wrong result, or was cancelled; 2 bad usage, config key or value, a
//! REST or Prometheus endpoint that cannot start ([`rest`]), and every failure a
//! restart cannot cure (`JobError::retryable`: a checkpoint that does not
//! fit the job, a refused rescale, a state-name error, permission denied,
//! a directory that is a regular file, ...). Errors print as one
//! `error: ...` line on stderr.
//!
//! The library logs through `tracing`; [`logging`] prints its events on
//! stderr, as `log.level` and `log.format` say once the config is loaded.
//! Progress lines and reports are the command's own output and printed
//! here (and by weir-bench's harness) directly, plain in any log format.
//!
//! SIGTERM and SIGINT stop `weir run`, `weir sql` and `weir bench
//! w1|w2|w3|quickstart|sql|nexmark` with a
//! savepoint ([`signals`]): the command prints `stopped with a savepoint:
//! PATH` (or `a checkpoint`, without `state.savepoints.dir`) and exits 0;
//! a second signal aborts (exit 128 + the signal). `weir checkpoints`
//! lists, verifies and describes checkpoints and savepoints ([`inspect`]).
//! `weir nexmark generate` writes the Nexmark benchmark's events as CSV
//! tables ([`nexmark`]).
//!
//! Every job serves its REST endpoint ([`rest`], docs/REST.md); `weir
//! list|savepoint|stop|cancel` are its clients ([`control`]).
//!
//! `weir tune buffer-timeout` measures W3 (or the quickstart, W1, W2 or a
//! SQL job) at a rate over a sweep of buffer timeouts and writes the
//! largest that meets a p99 into a config ([`tune`]). `weir bench
//! quickstart` and `weir bench sql` run those jobs as the workloads run,
//! with a JSON line ([`sql`]).

mod alloc;
mod control;
mod inspect;
mod logging;
mod nexmark;
mod nexmark_bench;
mod rest;
mod signals;
mod sql;
mod tune;

/// mimalloc, not glibc's malloc: a record that owns memory (a `String`
/// key) is allocated on one core and freed on another, and glibc's free
/// of a small block costs several times mimalloc's (measured: RESULTS.md,
/// "Variable-size state"). Integer jobs allocate nothing per record.
/// Entered by its plain path where it can be (see [`alloc`]).
#[global_allocator]
static ALLOCATOR: alloc::WeirAlloc = alloc::WeirAlloc;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use weir_bench::harness::Paced;
use weir_bench::params::{JobName, JobParams, KeyType};
use weir_bench::w4::{W4Mode, W4_DEFAULT_DURATION};
use weir_bench::{quickstart, BenchOptions, Workload};
use weir_runtime::{
    execute_with_progress, Config, ExecutionOptions, JobError, Progress, RestoreFrom, StopRequest,
    Stopped,
};

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "A thread-per-core stream processor with Flink's semantics"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the job a config file names (job.name); without --config, the
    /// quickstart job on its embedded defaults.
    Run {
        #[command(flatten)]
        common: Common,
    },
    /// Run a benchmark workload of WORKLOADS.md; the last line of stdout is
    /// one JSON object with the figures.
    Bench {
        /// Which workload.
        workload: BenchName,
        /// Records N (job.records).
        #[arg(long)]
        n: Option<u64>,
        /// Keys K (job.keys).
        #[arg(long)]
        k: Option<u64>,
        /// Total source rate in records/s (job.rate); unpaced when absent
        /// (W1, W4).
        #[arg(long)]
        rate: Option<u64>,
        /// W3 warm-up in seconds or with a unit (job.warmup).
        #[arg(long)]
        warmup: Option<String>,
        /// W3 recorded run time, W4 source run time, in seconds or with a
        /// unit (job.duration).
        #[arg(long)]
        duration: Option<String>,
        /// No progress lines on stderr.
        #[arg(long)]
        quiet: bool,
        /// W1: write every sink record as a line `key,count,sum` into DIR
        /// through the exactly-once transactional file sink, and verify the
        /// committed files at the end.
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// W5: working directory for checkpoints, output and logs (default
        /// `w5-work` in the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// W4: how checkpoints are taken: `none` (the baseline sink rate),
        /// `aligned`, `unaligned`, `debloat` (aligned with buffer
        /// debloating) or `timeout` (aligned, unaligned after 100 ms of
        /// alignment). W4 runs 60 s unless --duration says otherwise, with
        /// checkpoints every 1 s unless execution.checkpointing.interval is
        /// set, into a temporary directory unless state.checkpoints.dir is.
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        /// Nexmark: the query, `q0` .. `q22` (bench/nexmark/qN.sql).
        #[arg(long)]
        query: Option<String>,
        /// Nexmark: events of all three kinds to generate.
        #[arg(long)]
        events: Option<u64>,
        /// Report: the same sweeps with smaller N and shorter runs (under
        /// three minutes on two cores).
        #[arg(long)]
        quick: bool,
        /// Report: a few seconds per workload, for the tests.
        #[arg(long, hide = true)]
        tiny: bool,
        /// Report: where report.md, report.html and the plots go (default
        /// target/report).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Run a Flink SQL script (CREATE TABLE, CREATE VIEW, INSERT INTO,
    /// SELECT, EXPLAIN, SET) as one job; see docs/SQL.md.
    Sql {
        /// The script.
        file: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Inspect checkpoints and savepoints: list those of a directory,
    /// verify every block's checksum, describe one.
    Checkpoints {
        #[command(subcommand)]
        action: inspect::Action,
    },
    /// The Nexmark benchmark's events: generate persons, auctions and bids
    /// as CSV tables.
    Nexmark {
        #[command(subcommand)]
        action: nexmark::Action,
    },
    /// Tune a setting by measuring: `weir tune buffer-timeout --rate R
    /// --p99 D [--config job.toml] [--write FILE]` sweeps the buffer
    /// timeout on the config's job (W3 without one) and picks the largest
    /// one that meets the p99.
    Tune {
        #[command(subcommand)]
        what: tune::Tune,
    },
    #[command(flatten)]
    Control(control::Control),
}

#[derive(Args)]
pub(crate) struct Common {
    /// A TOML config file (see configs/README.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Overrides a config key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Workers, one pinned per core (parallelism.default).
    #[arg(long)]
    workers: Option<usize>,
    /// Resume from a checkpoint or savepoint: `latest` (the newest
    /// complete and verified checkpoint in state.checkpoints.dir; a fresh
    /// start if there is none, refused if the output already holds
    /// committed output of the job) or the path of a `chk-<id>` or
    /// `savepoint-<job>-<id>` directory (a savepoint is only read, never
    /// changed).
    #[arg(long, value_name = "latest|PATH")]
    restore: Option<String>,
    /// With --restore: skip the state of operators (uids) this job does
    /// not have, instead of refusing the snapshot (without --restore it
    /// is a usage error: there is no snapshot to skip state of).
    #[arg(long, requires = "restore")]
    allow_non_restored_state: bool,
}

impl Common {
    fn restore_from(&self) -> RestoreFrom {
        match self.restore.as_deref() {
            None => RestoreFrom::Nothing,
            Some("latest") => RestoreFrom::Latest,
            Some(path) => RestoreFrom::Path(PathBuf::from(path)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchName {
    W1,
    W2,
    W3,
    W4,
    W5,
    /// A Nexmark query of bench/nexmark as weir SQL (--query qN --events N).
    Nexmark,
    /// Keys written once each into TTL state: is the memory given back?
    /// (--k keys, --set job.ttl=10s, --set job.wait=60s)
    Ttl,
    /// Run, verify and plot every workload: DIR/report.md and
    /// DIR/report.html (--quick, --out DIR).
    Report,
    /// The quickstart job (--n events, --k users, --rate events/s).
    Quickstart,
    /// The SQL script of job.sql-file (--config or --set), its generated
    /// sources (datagen, nexmark) of --n rows each at --rate rows/s.
    Sql,
}

/// W4's modes on the command line.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    None,
    Aligned,
    Unaligned,
    Debloat,
    Timeout,
}

impl From<ModeArg> for W4Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::None => W4Mode::None,
            ModeArg::Aligned => W4Mode::Aligned,
            ModeArg::Unaligned => W4Mode::Unaligned,
            ModeArg::Debloat => W4Mode::Debloat,
            ModeArg::Timeout => W4Mode::Timeout,
        }
    }
}

fn main() -> ExitCode {
    alloc::keep_freed_pages();
    let cli = Cli::parse();
    logging::install();
    match cli.command {
        Command::Checkpoints { action } => inspect::run(&action),
        Command::Nexmark { action } => nexmark::run(&action),
        Command::Control(c) => control::run(&c),
        Command::Tune { what } => tune::run(&what),
        Command::Sql { file, common } => match stop_on_signals() {
            Ok(stop) => sql::run(&file, &common, stop),
            Err(code) => code,
        },
        Command::Run { common } => {
            // Before the config is read: a SIGTERM from the first
            // milliseconds on stops the job as any other (it is stopped
            // as soon as it runs), not killing the process unannounced.
            let stop = match stop_on_signals() {
                Ok(s) => s,
                Err(code) => return code,
            };
            let (config, params) = match load(&common, Vec::new(), Vec::new()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            if let Some(file) = &params.sql_file {
                return sql::run(file, &common, stop);
            }
            // Every job serves its REST endpoint, as Flink's do.
            let served = match rest::serve(&config, Some(weir_rest::DEFAULT_PORT)) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let bench = BenchOptions {
                quiet: false,
                restore: common.restore_from(),
                output: None,
                allow_non_restored_state: common.allow_non_restored_state,
                stop: stop.clone(),
                handle: served.handle(),
            };
            let code = match params.job {
                JobName::Quickstart => {
                    run_quickstart(&config, &params, &common, stop, served.handle(), None)
                }
                JobName::W1 => run_bench(Workload::W1, &config, &params, &bench, false),
                JobName::W2 => run_bench(Workload::W2, &config, &params, &bench, false),
                JobName::W3 => run_bench(Workload::W3, &config, &params, &bench, false),
            };
            served.finish();
            code
        }
        Command::Bench {
            workload,
            n,
            k,
            rate,
            warmup,
            duration,
            quiet,
            output,
            dir,
            mode,
            query,
            events,
            quick,
            tiny,
            out,
            common,
        } => {
            if workload == BenchName::Report {
                let other = n.is_some()
                    || k.is_some()
                    || rate.is_some()
                    || warmup.is_some()
                    || duration.is_some()
                    || output.is_some()
                    || dir.is_some()
                    || mode.is_some()
                    || query.is_some()
                    || events.is_some()
                    || common.config.is_some()
                    || !common.set.is_empty()
                    || common.workers.is_some()
                    || common.restore.is_some();
                if other || quiet {
                    eprintln!("error: weir bench report takes only --quick and --out DIR");
                    return ExitCode::from(2);
                }
                return run_report(quick, tiny, out);
            }
            if quick || tiny || out.is_some() {
                eprintln!("error: --quick and --out are for report only");
                return ExitCode::from(2);
            }
            if (query.is_some() || events.is_some()) && workload != BenchName::Nexmark {
                eprintln!("error: --query and --events are for nexmark only");
                return ExitCode::from(2);
            }
            if workload == BenchName::Nexmark {
                let (Some(query), Some(events)) = (query, events) else {
                    eprintln!("error: weir bench nexmark needs --query qN and --events N");
                    return ExitCode::from(2);
                };
                return match stop_on_signals() {
                    Ok(stop) => nexmark_bench::run(&query, events, quiet, &common, stop),
                    Err(code) => code,
                };
            }
            if mode.is_some() && workload != BenchName::W4 {
                eprintln!("error: --mode is for w4 only");
                return ExitCode::from(2);
            }
            // Only W3 runs for a time (W4's source too); the other
            // workloads run their records to the end, so a time would be
            // silently ignored.
            if warmup.is_some() && workload != BenchName::W3 {
                eprintln!("error: --warmup is for w3 only (the other workloads run --n records)");
                return ExitCode::from(2);
            }
            if duration.is_some() && !matches!(workload, BenchName::W3 | BenchName::W4) {
                eprintln!(
                    "error: --duration is for w3 and w4 only (the other workloads run --n records)"
                );
                return ExitCode::from(2);
            }
            if output.is_some()
                && matches!(
                    workload,
                    BenchName::W4 | BenchName::Quickstart | BenchName::Sql
                )
            {
                eprintln!("error: --output is supported by w1 only");
                return ExitCode::from(2);
            }
            if workload == BenchName::W5 {
                return run_w5(n, k, dir, &common);
            }
            let mut extra = Vec::new();
            if let Some(n) = n {
                extra.push(format!("job.records={n}"));
            }
            if let Some(k) = k {
                extra.push(format!("job.keys={k}"));
            }
            if let Some(r) = rate {
                extra.push(format!("job.rate={r}"));
            }
            if let Some(w) = warmup {
                extra.push(format!("job.warmup={}", seconds_by_default(&w)));
            }
            // W4's mode and default duration come before the user's own
            // --set, which may tune them.
            let mut before = Vec::new();
            if workload == BenchName::W4 {
                let mode = W4Mode::from(mode.unwrap_or(ModeArg::Aligned));
                before.extend(mode.overrides());
                if duration.is_none() {
                    before.push(format!(
                        "job.duration={}",
                        weir_runtime::core::units::format_duration(W4_DEFAULT_DURATION)
                    ));
                }
            }
            if let Some(d) = duration {
                extra.push(format!("job.duration={}", seconds_by_default(&d)));
            }
            if workload == BenchName::Sql && k.is_some() {
                eprintln!("error: --k is the built-in jobs' key count; a SQL job's keys are its tables' options");
                return ExitCode::from(2);
            }
            let sql = sql::SqlBench {
                quiet,
                extra: extra.clone(),
            };
            let (config, params) = match load(&common, before, extra) {
                Ok(c) => c,
                Err(code) => return code,
            };
            if workload == BenchName::Ttl {
                return run_ttl(&config, &params, quiet);
            }
            if workload == BenchName::Sql {
                let Some(file) = &params.sql_file else {
                    eprintln!("error: weir bench sql runs the script that job.sql-file names: set it in --config or with --set job.sql-file=FILE.sql");
                    return ExitCode::from(2);
                };
                return match stop_on_signals() {
                    Ok(stop) => sql::run_with(file, &common, stop, Some(&sql)),
                    Err(code) => code,
                };
            }
            // A workload of the harness, or (None) the quickstart job.
            let workload = match workload {
                BenchName::W1 => Some(Workload::W1),
                BenchName::W2 => Some(Workload::W2),
                BenchName::W3 => Some(Workload::W3),
                BenchName::Quickstart => None,
                BenchName::W4 => {
                    let mode = W4Mode::from(mode.unwrap_or(ModeArg::Aligned));
                    // As the other workloads: an endpoint only when
                    // rest.port is set (the dashboard shows W4's
                    // backpressure and checkpoints).
                    let served = match rest::serve(&config, None) {
                        Ok(s) => s,
                        Err(code) => return code,
                    };
                    let code = run_w4(&config, &params, mode, quiet, served.handle());
                    served.finish();
                    return code;
                }
                BenchName::W5
                | BenchName::Ttl
                | BenchName::Nexmark
                | BenchName::Report
                | BenchName::Sql => {
                    unreachable!("handled above")
                }
            };
            let stop = match stop_on_signals() {
                Ok(s) => s,
                Err(code) => return code,
            };
            // Only when rest.port is set: benchmark runs side by side
            // must not collide on a port.
            let served = match rest::serve(&config, None) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let code = match workload {
                Some(workload) => {
                    let bench = BenchOptions {
                        quiet,
                        restore: common.restore_from(),
                        output,
                        allow_non_restored_state: common.allow_non_restored_state,
                        stop,
                        handle: served.handle(),
                    };
                    run_bench(workload, &config, &params, &bench, true)
                }
                None => run_quickstart(
                    &config,
                    &params,
                    &common,
                    stop,
                    served.handle(),
                    Some(Quiet(quiet)),
                ),
            };
            served.finish();
            code
        }
    }
}

/// A stop request that SIGTERM and SIGINT make.
fn stop_on_signals() -> Result<StopRequest, ExitCode> {
    let stop = StopRequest::new();
    signals::install(stop.clone()).map_err(|e| {
        eprintln!("error: cannot handle SIGTERM and SIGINT: {e}");
        ExitCode::from(1)
    })?;
    Ok(stop)
}

/// The line saying where a stop's snapshot is (what `--restore` takes).
pub(crate) fn print_stopped(stopped: &Stopped) {
    println!(
        "stopped with a {}: {}",
        stopped.kind,
        absolute(&stopped.dir).display()
    );
}

/// `path` made absolute (so the printed path works from anywhere).
pub(crate) fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `--warmup 5` means five seconds; `--warmup 500ms` is passed through.
fn seconds_by_default(text: &str) -> String {
    let t = text.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        format!("{t}s")
    } else {
        t.to_owned()
    }
}

/// The config file, then the command's defaults (`before`), then `--set`
/// overrides, then the command's own flags (`extra`); applies its
/// `log.level` and `log.format` to the log ([`logging`]).
pub(crate) fn load(
    common: &Common,
    before: Vec<String>,
    extra: Vec<String>,
) -> Result<(Config, JobParams), ExitCode> {
    let mut overrides = before;
    overrides.extend(common.set.iter().cloned());
    if let Some(w) = common.workers {
        overrides.push(format!("parallelism.default={w}"));
    }
    overrides.extend(extra);
    let (config, params) = Config::load_with::<JobParams>(common.config.as_deref(), &overrides)
        .map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        })?;
    // From here on, log events follow log.level and log.format.
    logging::configure(&config).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
    Ok((config, params))
}

fn run_bench(
    workload: Workload,
    config: &Config,
    params: &JobParams,
    bench: &BenchOptions,
    json: bool,
) -> ExitCode {
    if let Err(code) = integer_keys_only(params, workload.name()) {
        return code;
    }
    match weir_bench::run(workload, config, params, bench) {
        Ok(report) => {
            let mut summary = report.summary();
            if let Some(stopped) = &report.stopped {
                summary += &format!(
                    "stopped with a {}: {}\n",
                    stopped.kind,
                    absolute(&stopped.dir).display()
                );
            }
            print_report(
                &summary,
                json.then(|| report.to_json().to_string()),
                report.verified(),
            )
        }
        Err(e) => job_failed(&e),
    }
}

/// The workloads are defined over integer keys (WORKLOADS.md): exit 2 if
/// `job.key-type` asks for another.
fn integer_keys_only(params: &JobParams, workload: &str) -> Result<(), ExitCode> {
    if params.key_type == KeyType::Integer {
        return Ok(());
    }
    eprintln!(
        "error: job.key-type = {}: {workload} is defined over integer keys; only the quickstart job takes string ids",
        params.key_type
    );
    Err(ExitCode::from(2))
}

/// Prints a job's error; its exit code is 1 if running the job again may
/// succeed (the restart strategy gave up, or there was none), 2 if
/// something must change first.
pub(crate) fn job_failed(e: &JobError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(if e.retryable() { 1 } else { 2 })
}

/// Prints a bench report (its readable lines, then its JSON line if asked
/// for); exits 1 if the result does not match the reference.
fn print_report(summary: &str, json: Option<String>, verified: bool) -> ExitCode {
    print!("{summary}");
    if let Some(json) = json {
        println!("{json}");
    }
    if verified {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: the result does not match the reference computation");
        ExitCode::from(1)
    }
}

/// `weir bench w4`: checkpoints under backpressure (see weir_bench::w4).
fn run_w4(
    config: &Config,
    params: &JobParams,
    mode: W4Mode,
    quiet: bool,
    handle: weir_runtime::JobHandle,
) -> ExitCode {
    if let Err(code) = integer_keys_only(params, "w4") {
        return code;
    }
    let setup = match weir_bench::w4::prepare(config, params, mode) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match weir_bench::w4::run(&setup, quiet, handle) {
        Ok(report) => print_report(
            &report.summary(),
            Some(report.to_json().to_string()),
            report.verified(),
        ),
        Err(e) => job_failed(&e),
    }
}

/// `weir bench ttl`: TTL state's memory after its keys expired (see
/// weir_bench::ttl).
fn run_ttl(config: &Config, params: &JobParams, quiet: bool) -> ExitCode {
    match weir_bench::ttl::run(config, params, quiet) {
        Ok(report) => print_report(
            &report.summary(),
            Some(report.to_json().to_string()),
            report.verified(),
        ),
        Err(e) => job_failed(&e),
    }
}

/// `weir bench`'s `--quiet`: no progress lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Quiet(bool);

fn run_quickstart(
    config: &Config,
    params: &JobParams,
    common: &Common,
    stop: StopRequest,
    handle: weir_runtime::JobHandle,
    bench: Option<Quiet>,
) -> ExitCode {
    let mut options = ExecutionOptions::from_config(config);
    options.restore = common.restore_from();
    options.allow_non_restored_state = common.allow_non_restored_state;
    options.stop = stop;
    options.handle = handle;
    let events = params.records.unwrap_or(quickstart::DEFAULT_EVENTS);
    let users = params.keys.unwrap_or(quickstart::DEFAULT_USERS);
    let rate = params.rate;
    println!(
        "weir quickstart: {events} generated events of {users} users ({} ids{}) -> \
         filter(drop runts) -> key_by(user) -> keyed totals (ValueState) -> sink",
        params.key_type,
        rate.map_or(String::new(), |r| format!(", {r} events/s"))
    );
    println!(
        "{} workers{}, buffer timeout {}, {} key groups",
        options.workers,
        if options.pin_cores {
            " pinned one per core"
        } else {
            ""
        },
        options.buffer_timeout,
        options.max_parallelism
    );
    let (job, results) = match params.key_type {
        KeyType::Integer => quickstart::job_with::<u64>(events, users, options.workers, rate),
        KeyType::String => quickstart::job_with::<String>(events, users, options.workers, rate),
        KeyType::CompactString => quickstart::job_with::<weir_runtime::CompactString>(
            events,
            users,
            options.workers,
            rate,
        ),
    };
    let options_timeout_ms = options
        .buffer_timeout
        .interval()
        .map_or(-1.0, |d| d.as_secs_f64() * 1e3);
    let started = Instant::now();
    // Printed, not logged: they are this command's report, like the
    // bench harness's, and stay whatever RUST_LOG says.
    let quiet = bench == Some(Quiet(true));
    let mut progress = |p: &Progress| {
        if !quiet {
            eprintln!("{}", p.lines())
        }
    };
    let result = match execute_with_progress(job, &options, &mut progress) {
        Ok(r) => r,
        Err(e) => return job_failed(&e),
    };
    // `weir bench quickstart`'s last stdout line, as every bench's: what
    // `weir tune` and scripts read.
    let json = |verified: bool| {
        let sources = [quickstart::SOURCE_UID.to_string()];
        let paced = rate.map(|rate| Paced {
            rate,
            sources: &sources,
        });
        let mut v = weir_bench::harness::job_json("quickstart", &result, paced);
        v["key_type"] = serde_json::json!(params.key_type.as_str());
        // -1 when only full buffers ship (Flink's -1).
        v["buffer_timeout_ms"] = serde_json::json!(options_timeout_ms);
        v["verified"] = serde_json::json!(verified);
        v
    };
    if let Some(stopped) = &result.stopped {
        // Stopped early: the totals are partial, nothing to verify.
        println!(
            "stopped: {} events kept and processed before the stop",
            result.metrics.total_sink_records()
        );
        print_stopped(stopped);
        if bench.is_some() {
            println!("{}", json(true));
        }
        return ExitCode::SUCCESS;
    }
    let totals = results.totals();
    let records = result.metrics.total_sink_records();
    println!(
        "done: {records} events kept and processed in {:.2} s ({} events/s end to end, {:.2} s with setup)",
        result.elapsed.as_secs_f64(),
        weir_runtime::exec::progress::human_rate(records as f64 / result.elapsed.as_secs_f64().max(1e-9)),
        started.elapsed().as_secs_f64()
    );
    let mut top = totals.clone();
    top.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    println!("heaviest users (user, events, bytes):");
    for (u, c, b) in top.iter().take(5) {
        println!("  user {u:>6}  {c:>8} events  {b:>12} bytes");
    }
    if let Some((markers, l)) = weir_bench::harness::marker_latency(&result.subtasks) {
        println!(
            "latency markers: {markers} at the sinks, p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            l.p50, l.p99, l.max
        );
    }
    let reference = quickstart::reference_totals(events, users);
    let verified = totals == reference;
    if verified {
        println!(
            "verified: all {} users' totals equal a single-threaded computation of the same events",
            reference.len()
        );
    } else {
        eprintln!("error: totals differ from the single-threaded reference");
    }
    if bench.is_some() {
        println!("{}", json(verified));
    }
    if verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `weir bench w5`: two child runs of `weir bench w1` with a SIGKILL in
/// between (see weir_bench::w5).
fn run_w5(n: Option<u64>, k: Option<u64>, dir: Option<PathBuf>, common: &Common) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the weir executable: {e}");
            return ExitCode::from(1);
        }
    };
    let mut passthrough = Vec::new();
    let mut interval = std::time::Duration::from_secs(5);
    if let Some(c) = &common.config {
        passthrough.extend(["--config".to_owned(), c.display().to_string()]);
    }
    for s in &common.set {
        if let Some(v) = s.strip_prefix("execution.checkpointing.interval=") {
            match weir_runtime::core::units::parse_duration(v) {
                Some(d) => interval = d,
                None => {
                    eprintln!(
                        "error: execution.checkpointing.interval: `{v}` is not a duration (e.g. 5s, 300ms)"
                    );
                    return ExitCode::from(2);
                }
            }
        }
        passthrough.extend(["--set".to_owned(), s.clone()]);
    }
    if let Some(w) = common.workers {
        passthrough.extend(["--workers".to_owned(), w.to_string()]);
    }
    passthrough.push("--quiet".to_owned());
    let args = weir_bench::w5::W5Args {
        records: n.unwrap_or(weir_bench::w5::W5_RECORDS),
        keys: k.unwrap_or(weir_bench::w5::W5_KEYS),
        interval,
        kill_after: 3,
        dir: dir.unwrap_or_else(|| PathBuf::from("w5-work")),
        passthrough,
    };
    match weir_bench::w5::run(&exe, &args) {
        Ok(report) => {
            let ok = report["exactly_once"] == true && report["verified"] == true;
            println!(
                "weir bench w5: restored {} bytes of state in {:.3} s ({:.2} GB/s, disk reads up to {:.2} GB/s); \
                 snapshots written at {:.2} GB/s while processing, {:.2} GB/s for the final checkpoint \
                 (disk writes up to {:.2} GB/s); first record {:.0} ms after process start; output {}",
                report["restore"]["state_bytes"],
                report["restore"]["seconds"].as_f64().unwrap_or(0.0),
                report["restore"]["bytes_per_s"].as_f64().unwrap_or(0.0) / 1e9,
                report["disk"]["read_bytes_per_s"].as_f64().unwrap_or(0.0) / 1e9,
                report["snapshot"]["write_bytes_per_s_p50"].as_f64().unwrap_or(0.0) / 1e9,
                report["snapshot"]["final_write_bytes_per_s"]
                    .as_f64()
                    .unwrap_or(0.0)
                    / 1e9,
                report["disk"]["write_bytes_per_s"].as_f64().unwrap_or(0.0) / 1e9,
                report["restore"]["process_start_to_first_record_ms"].as_f64().unwrap_or(0.0),
                if ok { "exactly once" } else { "WRONG" }
            );
            println!("{report}");
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `weir bench report`: every workload as a child run of this binary,
/// verified and plotted (see weir_bench::report).
fn run_report(quick: bool, tiny: bool, out: Option<PathBuf>) -> ExitCode {
    use weir_bench::report::{self, ReportOptions, Scale};
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the weir executable: {e}");
            return ExitCode::from(1);
        }
    };
    let scale = match (tiny, quick) {
        (true, _) => Scale::Tiny,
        (false, true) => Scale::Quick,
        (false, false) => Scale::Full,
    };
    let options = ReportOptions {
        exe,
        out: out.unwrap_or_else(|| PathBuf::from(report::DEFAULT_OUT)),
        scale,
    };
    match report::run(&options) {
        Ok(done) => {
            println!(
                "weir bench report: {} runs in {:.0} s, {}; wrote {} and {}",
                done.runs,
                done.seconds,
                if done.failed == 0 {
                    "all verified".to_owned()
                } else {
                    format!("{} FAILED", done.failed)
                },
                done.markdown.display(),
                done.html.display()
            );
            if done.failed == 0 {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "error: {} of {} runs failed (see the Failures section of {})",
                    done.failed,
                    done.runs,
                    done.markdown.display()
                );
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
