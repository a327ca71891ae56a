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
//! per selected bid, or one change per bid of its group; `null` where
//! there is no such reference).

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
    // As every bench: only when rest.port is set.
    let served = match crate::rest::serve(&config, None) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut options = ExecutionOptions::from_config(&config);
    options.restore = common.restore_from();
    options.stop = stop;
    options.handle = served.handle();
    let workers = options.workers;
    let mut progress = |p: &Progress| {
        if !quiet {
            eprintln!("{}", p.lines())
        }
    };
    let result = execute_with_progress(job.job, &options, &mut progress);
    served.finish();
    let result = match result {
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

/// The result row count of `query` over `events` events, computed here
/// from the generator directly (no SQL, no engine): for q0, q1, q2, q10,
/// q21 and q22 (one row per bid or per selected bid), for the joins q3, q7,
/// q8 and q20 (their inputs are append-only, so the row count does not
/// depend on arrival order), for q5 (a window join of two window
/// aggregations: append-only, each window's hottest auctions once) and for
/// q15, q16 and q17 (one change per bid of its group, an upsert without its
/// update-before). `None` for the rest: q4's, q9's, q18's and q19's
/// changelogs depend on the order bids of several subtasks arrive in (an
/// updating maximum averaged, rows retracted and replaced), and q11's
/// sessions have no reference yet.
fn reference(query: &str, events: u64) -> Option<u64> {
    use std::collections::{HashMap, HashSet};
    let gen = Generator::new(GeneratorConfig {
        num_events: events,
        ..GeneratorConfig::default()
    })
    .ok()?;
    let all = || (0..events).map(|n| gen.event(n));
    let bids = || {
        all().filter_map(|e| match e {
            Event::Bid(b) => Some(b),
            _ => None,
        })
    };
    let auctions = || {
        all().filter_map(|e| match e {
            Event::Auction(a) => Some(a),
            _ => None,
        })
    };
    let persons = || {
        all().filter_map(|e| match e {
            Event::Person(p) => Some(p),
            _ => None,
        })
    };
    const W: i64 = 10_000;
    let count = |it: &mut dyn Iterator<Item = bool>| it.filter(|b| *b).count() as u64;
    match query {
        "q0" | "q1" | "q10" | "q22" => Some(
            (0..events)
                .filter(|&n| gen.config().kind(n) == EventKind::Bid)
                .count() as u64,
        ),
        "q2" => Some(count(&mut bids().map(|b| b.auction % 123 == 0))),
        // The four big channels, and the others whose URL has a
        // `channel_id` parameter (`(&|^)channel_id=` in the query's regex).
        "q21" => Some(count(&mut bids().map(|b| {
            ["apple", "google", "facebook", "baidu"].contains(&b.channel.to_lowercase().as_str())
                || b.url.contains("&channel_id=")
                || b.url.starts_with("channel_id=")
        }))),
        "q3" => {
            let local: HashMap<i64, usize> = persons()
                .filter(|p| ["OR", "ID", "CA"].contains(&p.state.as_str()))
                .fold(HashMap::new(), |mut m, p| {
                    *m.entry(p.id).or_default() += 1;
                    m
                });
            Some(
                auctions()
                    .filter(|a| a.category == 10)
                    .map(|a| local.get(&a.seller).copied().unwrap_or(0) as u64)
                    .sum(),
            )
        }
        "q20" => {
            let mut per_auction: HashMap<i64, u64> = HashMap::new();
            for a in auctions().filter(|a| a.category == 10) {
                *per_auction.entry(a.id).or_default() += 1;
            }
            Some(
                bids()
                    .map(|b| per_auction.get(&b.auction).copied().unwrap_or(0))
                    .sum(),
            )
        }
        "q7" => {
            // The highest price per 10 s window, then every bid at that
            // price within [end - 10 s, end] of a window's end.
            let mut max: HashMap<i64, i64> = HashMap::new();
            for b in bids() {
                let end = b.date_time.div_euclid(W) * W + W;
                let m = max.entry(end).or_insert(i64::MIN);
                *m = (*m).max(b.price);
            }
            Some(
                bids()
                    .map(|b| {
                        let end = b.date_time.div_euclid(W) * W + W;
                        // This window's end, and the previous window's when
                        // the bid sits exactly on it.
                        [end, end - W]
                            .into_iter()
                            .filter(|e| b.date_time >= e - W && b.date_time <= *e)
                            .filter(|e| max.get(e) == Some(&b.price))
                            .count() as u64
                    })
                    .sum(),
            )
        }
        "q8" => {
            let sellers: HashSet<(i64, i64)> = auctions()
                .map(|a| (a.seller, a.date_time.div_euclid(W)))
                .collect();
            let people: HashSet<(i64, String, i64)> = persons()
                .map(|p| (p.id, p.name.clone(), p.date_time.div_euclid(W)))
                .collect();
            Some(
                people
                    .iter()
                    .filter(|(id, _, w)| sellers.contains(&(*id, *w)))
                    .count() as u64,
            )
        }
        "q5" => {
            // HOP 10 s every 2 s: bids per auction per window, the maximum
            // per window, then the (auction, window) pairs at it.
            const SLIDE: i64 = 2_000;
            let mut counts: HashMap<(i64, i64), u64> = HashMap::new();
            for b in bids() {
                let last = b.date_time.div_euclid(SLIDE) * SLIDE;
                let mut start = last;
                while start > b.date_time - W {
                    *counts.entry((b.auction, start)).or_default() += 1;
                    start -= SLIDE;
                }
            }
            let mut max: HashMap<i64, u64> = HashMap::new();
            for (&(_, w), &n) in &counts {
                let m = max.entry(w).or_default();
                *m = (*m).max(n);
            }
            Some(counts.iter().filter(|((_, w), n)| **n >= max[w]).count() as u64)
        }
        // Every bid changes its group's COUNT(*): `+I` for a group's first
        // bid, `+U` for each later one (the blackhole sink takes no
        // update-before rows, so none are made: `crate::changelog`'s
        // inference, as Flink's planner does). One row per bid.
        "q15" | "q16" | "q17" => Some(bids().count() as u64),
        _ => None,
    }
}
