//! `weir bench nexmark --query qN --events N [--workers P]`: one Nexmark
//! query of `bench/nexmark/` run as weir SQL over generated events.
//!
//! The query file is appended to `bench/nexmark/ddl.sql` (its `${EVENTS}`
//! replaced by N), planned and run as `weir sql` runs a script. The
//! summary and, as the last stdout line, a JSON object with `query`,
//! `events`, `events_per_s` (events of all kinds generated, over the job's
//! run time), `events_per_s_per_core`, `results` (rows the sink took) and
//! `verified` (the result count against a count made here from the
//! generator itself, for the queries whose result is one row per bid or
//! per selected bid; `null` where there is no such reference).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use weir_nexmark::{Event, EventKind, Generator, GeneratorConfig};
use weir_runtime::{execute_with_progress, ExecutionOptions, Progress, StopRequest};
use weir_sql::Script;

use crate::{job_failed, load, Common};

/// Where the query files are: `bench/nexmark` of the source tree, or
/// `WEIR_NEXMARK_DIR`.
fn queries_dir() -> PathBuf {
    std::env::var_os("WEIR_NEXMARK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/nexmark"))
}

/// Runs query `query` over `events` events.
pub fn run(query: &str, events: u64, quiet: bool, common: &Common, stop: StopRequest) -> ExitCode {
    let dir = queries_dir();
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| {
            eprintln!("error: cannot read {}: {e}", dir.join(name).display());
            ExitCode::from(2)
        })
    };
    if !query.starts_with('q') || query[1..].parse::<u32>().is_err() {
        eprintln!("error: --query {query}: a Nexmark query is q0 .. q22");
        return ExitCode::from(2);
    }
    let text = match (read("ddl.sql"), read(&format!("{query}.sql"))) {
        (Ok(ddl), Ok(q)) => format!("{}\n{q}", ddl.replace("${EVENTS}", &events.to_string())),
        (Err(code), _) => return code,
        (_, Err(_)) => {
            eprintln!(
                "error: --query {query}: no {query}.sql in {} (bench/nexmark/README.md lists the queries weir SQL runs and why the others do not)",
                dir.display()
            );
            return ExitCode::from(2);
        }
    };
    let script = match Script::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: nexmark {query}: {e}");
            return ExitCode::from(2);
        }
    };
    let (config, _) = match load(common, Vec::new(), Vec::new()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let job = match script.job(&format!("nexmark-{query}")) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("error: nexmark {query}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = ExecutionOptions::from_config(&config);
    options.restore = common.restore_from();
    options.stop = stop;
    let workers = options.workers;
    let mut progress = |p: &Progress| {
        if !quiet {
            eprintln!("{}", p.lines())
        }
    };
    let result = match execute_with_progress(job.job, &options, &mut progress) {
        Ok(r) => r,
        Err(e) => return job_failed(&e),
    };
    let secs = result.elapsed.as_secs_f64().max(1e-9);
    let results = result.metrics.total_sink_records();
    let expected = reference(query, events);
    let verified = expected.map(|e| e == results);
    let rate = events as f64 / secs;
    println!(
        "nexmark {query}: {events} events in {secs:.2} s on {workers} workers: {} events/s ({} per core), {results} result rows{}",
        weir_runtime::exec::progress::human_rate(rate),
        weir_runtime::exec::progress::human_rate(rate / workers as f64),
        match expected {
            Some(e) if e == results => " (the reference's count)".to_string(),
            Some(e) => format!(" but the reference has {e}"),
            None => " (no reference for this query)".to_string(),
        }
    );
    println!(
        "{}",
        serde_json::json!({
            "query": query,
            "events": events,
            "workers": workers,
            "seconds": secs,
            "events_per_s": rate,
            "events_per_s_per_core": rate / workers as f64,
            "results": results,
            "verified": verified,
        })
    );
    if verified == Some(false) {
        eprintln!("error: the result does not match the reference computation");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The result row count of `query` over `events` events, from the
/// generator directly (no SQL), where the result is one row per bid or per
/// selected bid.
fn reference(query: &str, events: u64) -> Option<u64> {
    let gen = Generator::new(GeneratorConfig {
        num_events: events,
        ..GeneratorConfig::default()
    })
    .ok()?;
    let bids = || (0..events).filter(|&n| gen.config().kind(n) == EventKind::Bid);
    match query {
        "q0" | "q1" | "q10" => Some(bids().count() as u64),
        "q2" => Some(
            bids()
                .filter(|&n| match gen.event(n) {
                    Event::Bid(b) => b.auction % 123 == 0,
                    _ => false,
                })
                .count() as u64,
        ),
        _ => None,
    }
}
