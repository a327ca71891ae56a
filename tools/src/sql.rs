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

use std::path::Path;
use std::process::ExitCode;

use weir_runtime::{execute_with_progress, ExecutionOptions, Progress, StopRequest};
use weir_sql::session::format_table;
use weir_sql::Script;

use crate::{absolute, job_failed, load, print_stopped, Common};

/// Runs the script in `file` with the command's config.
pub fn run(file: &Path, common: &Common, stop: StopRequest) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read SQL file {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let script = match Script::parse(&text) {
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
    let (config, _) = match load(common, settings, Vec::new()) {
        Ok(c) => c,
        Err(code) => return code,
    };
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
    let mut options = ExecutionOptions::from_config(&config);
    options.restore = common.restore_from();
    options.allow_non_restored_state = common.allow_non_restored_state;
    options.stop = stop;
    eprintln!(
        "weir sql: {} on {} workers",
        absolute(file).display(),
        options.workers
    );
    let mut progress = |p: &Progress| eprintln!("{}", p.lines());
    let result = match execute_with_progress(sql_job.job, &options, &mut progress) {
        Ok(r) => r,
        Err(e) => return job_failed(&e),
    };
    if let Some(stopped) = &result.stopped {
        print_stopped(stopped);
        return ExitCode::SUCCESS;
    }
    for ((schema, rows), shown) in sql_job.selects.iter().zip(&sql_job.presentations) {
        let rows = rows.lock().expect("collected rows");
        print!("{}", format_table(schema, &rows, shown));
    }
    eprintln!(
        "done: {} rows written in {:.2} s",
        result.metrics.total_sink_records(),
        result.elapsed.as_secs_f64()
    );
    ExitCode::SUCCESS
}
