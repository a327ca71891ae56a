//! `weir sql FILE.sql` (and `weir run` with `job.sql-file`): a Flink SQL
//! script run as one job on weir's engine.
//!
//! The script is parsed and planned first: any error in it (syntax with
//! line and column, unknown table, column or function, a type mismatch,
//! something unsupported, a bad connector option) prints one `error:`
//! line and exits 2 before anything starts. `SET 'key' = 'value'`
//! statements apply to the config after the config file and before
//! `--set`. EXPLAIN statements print their plans. Every INSERT runs in one
//! job (with checkpoints, restarts, savepoints and `--restore` as `weir
//! run`); a bare SELECT's rows print as a table when the job ends.
//!
//! `weir bench sql` runs the script of `job.sql-file` as the workloads
//! run: quiet with `--quiet`, REST only on `rest.port`, `--rate` and `--n`
//! as `job.rate` and `job.records` (each generated source's rate and rows
//! in place of its table's), and a JSON line last (rows, rates, latency
//! markers' percentiles): what `weir tune` sweeps a SQL job with.

use std::path::Path;
use std::process::ExitCode;

use weir_bench::harness::Paced;
use weir_runtime::{execute_with_progress, ExecutionOptions, Progress, StopRequest};
use weir_sql::lower::GeneratedSources;
use weir_sql::session::format_table;
use weir_sql::Script;

use crate::{absolute, job_failed, load, print_stopped, Common};

/// How `weir bench sql` runs a script beyond what `weir sql` does.
#[derive(Clone, Debug, Default)]
pub struct SqlBench {
    /// No progress lines.
    pub quiet: bool,
    /// Config overrides of the bench's own flags (`--rate` as
    /// `job.rate=R`), after `--set`.
    pub extra: Vec<String>,
}

/// Runs the script in `file` with the command's config.
pub fn run(file: &Path, common: &Common, stop: StopRequest) -> ExitCode {
    run_with(file, common, stop, None)
}

/// Runs the script in `file` with the command's config; with `bench`, as
/// `weir bench sql`: the REST endpoint only when `rest.port` is set (as
/// every bench), and a JSON summary as the last stdout line.
pub fn run_with(
    file: &Path,
    common: &Common,
    stop: StopRequest,
    bench: Option<&SqlBench>,
) -> ExitCode {
    // Planning recurses through a query's expressions: on a thread of its
    // own with a large stack (reserved, touched only as deep as it goes),
    // an expression nested as deep as the planner takes (see
    // `weir_sql::expr::MAX_DEPTH`) plans instead of overflowing the main
    // thread's 8 MiB.
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("weir-sql".into())
            .stack_size(PLANNER_STACK)
            .spawn_scoped(s, || run_script(file, common, stop, bench))
            .map_or_else(
                |e| {
                    eprintln!("error: cannot start the SQL planner's thread: {e}");
                    ExitCode::FAILURE
                },
                |h| h.join().unwrap_or(ExitCode::FAILURE),
            )
    })
}

/// The stack of the thread `run_with` plans and waits on.
const PLANNER_STACK: usize = 512 << 20;

fn run_script(
    file: &Path,
    common: &Common,
    stop: StopRequest,
    bench: Option<&SqlBench>,
) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read SQL file {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let mut script = match Script::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let settings: Vec<String> = script
        .settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let extra = bench.map(|b| b.extra.clone()).unwrap_or_default();
    let (config, params) = match load(common, settings, extra) {
        Ok(c) => c,
        Err(code) => return code,
    };
    script.set_generated_sources(GeneratedSources {
        rows: params.records,
        rate: params.rate,
    });
    for w in &script.warnings {
        eprintln!("note: {w}");
    }
    // Every operator runs at the default parallelism: say which.
    let workers = ExecutionOptions::from_config(&config).workers;
    for plan in &script.explained {
        println!(
            "{}",
            plan.replace("parallelism=default", &format!("parallelism={workers}"))
        );
    }
    if !script.has_job() {
        return ExitCode::SUCCESS;
    }
    let name = script.job_name.clone().unwrap_or_else(|| {
        format!(
            "sql-{}",
            file.file_stem()
                .map_or("script".into(), |s| s.to_string_lossy())
        )
    });
    let sql_job = match script.job_with(&name, &config) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    // Every job serves its REST endpoint, as Flink's do; a bench only
    // when rest.port is set.
    let default_port = bench.is_none().then_some(weir_rest::DEFAULT_PORT);
    let served = match crate::rest::serve(&config, default_port) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut options = ExecutionOptions::from_config(&config);
    options.restore = common.restore_from();
    options.allow_non_restored_state = common.allow_non_restored_state;
    options.stop = stop;
    options.handle = served.handle();
    eprintln!(
        "weir sql: {} on {} workers",
        absolute(file).display(),
        options.workers
    );
    let quiet = bench.is_some_and(|b| b.quiet);
    let mut progress = |p: &Progress| {
        if !quiet {
            eprintln!("{}", p.lines())
        }
    };
    let result = execute_with_progress(sql_job.job, &options, &mut progress);
    served.finish();
    let result = match result {
        Ok(r) => r,
        Err(e) => return job_failed(&e),
    };
    if let Some(stopped) = &result.stopped {
        print_stopped(stopped);
    } else {
        for ((schema, rows), shown) in sql_job.selects.iter().zip(&sql_job.presentations) {
            match print_stdout(&format_table(schema, &rows.rows(), shown)) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    eprintln!("error: writing the result rows to stdout: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        eprintln!(
            "done: {} rows written in {:.2} s",
            result.metrics.total_sink_records(),
            result.elapsed.as_secs_f64()
        );
    }
    if bench.is_some() {
        let paced = params.rate.map(|rate| Paced {
            rate,
            sources: &sql_job.generated_sources,
        });
        println!("{}", summary_json(file, &result, paced));
    }
    ExitCode::SUCCESS
}

/// `weir bench sql`'s JSON line: [`weir_bench::harness::job_json`] with
/// `paced` (`job.rate` and the number of generated sources it paces) and
/// the script's path. A SQL job has no reference to compare with:
/// `verified` is null.
fn summary_json(
    file: &Path,
    result: &weir_runtime::JobResult,
    paced: Option<Paced<'_>>,
) -> serde_json::Value {
    let mut v = weir_bench::harness::job_json("sql", result, paced);
    v["file"] = serde_json::json!(absolute(file).display().to_string());
    v["verified"] = serde_json::Value::Null;
    v
}

/// Writes `text` to stdout: `Ok(false)` once stdout is closed (`weir sql
/// q.sql | head`), where `print!` panicked; the rows were computed, and a
/// reader that took only the first ones is not an error. Any other failure
/// (a full disk under a redirection) is.
fn print_stdout(text: &str) -> std::io::Result<bool> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}
