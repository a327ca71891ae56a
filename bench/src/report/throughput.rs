//! The throughput sections of a report: W1 against workers, keys and
//! buffer timeout, W1 with and without checkpoints, W2 and Nexmark.

use super::child::RunRecord;
use super::doc::{Block, Table};
use super::latency::interval;
use super::plan::{Point, Sizes, TIMEOUTS_MS, W1_KEYS, W2_KEYS};
use super::plot::{plain, si, Axis, Chart, Kind, Series};
use super::Section;

/// `yes`, or `FAILED` for a run that does not count.
pub(super) fn verdict(r: &RunRecord) -> String {
    if r.passed() {
        "yes".into()
    } else {
        "**FAILED** (see Failures)".into()
    }
}

/// The command as a code span.
pub(super) fn code(r: &RunRecord) -> String {
    format!("`{}`", r.command)
}

/// Records/s as millions, one decimal.
pub(super) fn mega(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.1} M", v / 1e6))
}

/// A number with `digits` decimals, `-` if absent.
pub(super) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// A checkpointing run's checkpoints as `completed / failed`; `-` for a
/// run without checkpoints.
pub(super) fn checkpoint_counts(r: &RunRecord, checkpoints: bool) -> String {
    if !checkpoints {
        return "-".into();
    }
    format!(
        "{} / {}",
        num(r.number(&["checkpoints", "completed"]), 0),
        num(r.number(&["checkpoints", "failed"]), 0)
    )
}

/// The x axis of the timeout sweeps: log, with 0 (flush every record)
/// drawn at 0.1 ms.
pub(super) fn timeout_axis() -> Axis {
    let ticks = TIMEOUTS_MS
        .iter()
        .map(|&t| (timeout_x(t as f64), t.to_string()))
        .collect();
    Axis::log(
        "execution.buffer-timeout (ms, log scale; 0 drawn at 0.1)",
        plain,
    )
    .with_ticks(ticks)
}

/// Where a timeout sits on [`timeout_axis`].
pub(super) fn timeout_x(ms: f64) -> f64 {
    ms.max(0.1)
}

fn rate_of(r: &RunRecord) -> Option<f64> {
    r.passed().then(|| r.number(&["records_per_s"])).flatten()
}

/// W1 against the number of workers.
pub(super) fn w1_workers(runs: &[RunRecord], cores: usize) -> Section {
    let mut t = Table::new(&["workers", "records/s", "elapsed s", "verified", "command"]);
    let mut points = Vec::new();
    for r in runs {
        let Point::W1Workers(p) = r.point else {
            continue;
        };
        t.row(vec![
            p.to_string(),
            mega(r.number(&["records_per_s"])),
            num(r.number(&["elapsed_s"]), 3),
            verdict(r),
            code(r),
        ]);
        if let Some(v) = rate_of(r) {
            points.push((p as f64, v / 1e6));
        }
    }
    let ticks = (1..=cores).map(|p| (p as f64, p.to_string())).collect();
    Section {
        blocks: vec![
            Block::Heading(2, "W1 keyed count: throughput against workers".into()),
            Block::Para(format!(
                "W1 (WORKLOADS.md) with K = {}, one worker pinned per core, 1 to {cores} \
                 workers. Records/s over the whole job, first record in to last out; every \
                 run's sink count and checksum are checked against the reference.",
                si(W1_KEYS as f64)
            )),
            Block::Table(t),
        ],
        charts: vec![Chart {
            name: "w1-workers".into(),
            title: "W1 throughput against workers".into(),
            x: Axis::linear("workers (one pinned per core)", plain).with_ticks(ticks),
            y: Axis::linear("throughput (million records/s)", plain),
            series: vec![Series {
                name: format!("W1, K = {}", si(W1_KEYS as f64)),
                points,
            }],
            kind: Kind::Lines,
        }],
    }
}

/// W1 against the number of keys.
pub(super) fn w1_keys(runs: &[RunRecord], cores: usize) -> Section {
    let mut t = Table::new(&["keys K", "records/s", "elapsed s", "verified", "command"]);
    let mut points = Vec::new();
    for r in runs {
        let Point::W1Keys(k) = r.point else {
            continue;
        };
        t.row(vec![
            si(k as f64),
            mega(r.number(&["records_per_s"])),
            num(r.number(&["elapsed_s"]), 3),
            verdict(r),
            code(r),
        ]);
        if let Some(v) = rate_of(r) {
            points.push((k as f64, v / 1e6));
        }
    }
    Section {
        blocks: vec![
            Block::Heading(2, "W1 keyed count: throughput against keys".into()),
            Block::Para(format!(
                "W1 with {cores} workers and K from {} up: the keyed state grows from \
                 cache-sized to far beyond the caches.",
                si(runs
                    .iter()
                    .find_map(|r| match r.point {
                        Point::W1Keys(k) => Some(k as f64),
                        _ => None,
                    })
                    .unwrap_or(0.0))
            )),
            Block::Table(t),
        ],
        charts: vec![Chart {
            name: "w1-keys".into(),
            title: "W1 throughput against keys".into(),
            x: Axis::log("keys K (log scale)", si),
            y: Axis::linear("throughput (million records/s)", plain),
            series: vec![Series {
                name: format!("W1, {cores} workers"),
                points,
            }],
            kind: Kind::Lines,
        }],
    }
}

/// W1 (unpaced) against the buffer timeout: the throughput side of the
/// latency trade-off.
pub(super) fn w1_timeout(runs: &[RunRecord], cores: usize) -> Section {
    let rates: Vec<(f64, Option<f64>, &RunRecord)> = runs
        .iter()
        .filter_map(|r| match r.point {
            Point::W1Timeout(t) => Some((t, rate_of(r), r)),
            _ => None,
        })
        .collect();
    let best = rates.iter().filter_map(|r| r.1).fold(0.0f64, f64::max);
    let mut t = Table::new(&[
        "buffer timeout",
        "records/s",
        "of the best",
        "verified",
        "command",
    ]);
    let mut points = Vec::new();
    for &(ms, rate, r) in &rates {
        t.row(vec![
            format!("{ms} ms"),
            mega(r.number(&["records_per_s"])),
            rate.filter(|_| best > 0.0)
                .map_or_else(|| "-".into(), |v| format!("{:.0}%", 100.0 * v / best)),
            verdict(r),
            code(r),
        ]);
        if let Some(v) = rate {
            points.push((timeout_x(ms), v / 1e6));
        }
    }
    Section {
        blocks: vec![
            Block::Heading(2, "Throughput against buffer timeout".into()),
            Block::Para(format!(
                "W1 unpaced with {cores} workers at each buffer timeout of the W3 sweep: \
                 the throughput a timeout costs, beside the latency it buys (W3 below). \
                 Flink's documentation describes this trade-off (there, a 1 ms timeout keeps \
                 about 75% of the maximum throughput). Timeout 0 flushes every record."
            )),
            Block::Table(t),
        ],
        charts: vec![Chart {
            name: "w1-buffer-timeout".into(),
            title: "W1 throughput against buffer timeout".into(),
            x: timeout_axis(),
            y: Axis::linear("throughput (million records/s)", plain),
            series: vec![Series {
                name: format!("W1 unpaced, {cores} workers"),
                points,
            }],
            kind: Kind::Lines,
        }],
    }
}

/// W1 with and without aligned checkpoints.
pub(super) fn w1_checkpoints(runs: &[RunRecord], sizes: &Sizes) -> Section {
    let without = runs
        .iter()
        .find(|r| r.point == Point::W1Checkpoints(false))
        .and_then(rate_of);
    let mut t = Table::new(&[
        "checkpoints",
        "records/s",
        "vs without",
        "completed / failed",
        "duration p50 / max ms",
        "alignment p50 / max ms",
        "verified",
        "command",
    ]);
    for r in runs {
        let Point::W1Checkpoints(with) = r.point else {
            continue;
        };
        let ratio = match (rate_of(r), without) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        let c = |a: &str, b: &str| r.number(&["checkpoints", a, b]);
        t.row(vec![
            if with {
                format!("aligned, every {}", interval(sizes.checkpoint_ms))
            } else {
                "none".into()
            },
            mega(r.number(&["records_per_s"])),
            ratio,
            checkpoint_counts(r, with),
            format!(
                "{} / {}",
                num(c("duration_ms", "p50"), 0),
                num(c("duration_ms", "max"), 0)
            ),
            format!(
                "{} / {}",
                num(c("alignment_ms", "p50"), 2),
                num(c("alignment_ms", "max"), 2)
            ),
            verdict(r),
            code(r),
        ]);
    }
    Section {
        blocks: vec![
            Block::Heading(2, "W1 with aligned checkpoints".into()),
            Block::Para(
                "W1 without checkpoints and with aligned exactly-once checkpoints on local \
                 disk (WORKLOADS.md's two W1 variants), one after the other."
                    .into(),
            ),
            Block::Table(t),
        ],
        charts: Vec::new(),
    }
}

/// W2, the event-time tumbling window.
pub(super) fn w2(runs: &[RunRecord], cores: usize) -> Section {
    let mut t = Table::new(&[
        "records/s",
        "elapsed s",
        "windows fired (reference)",
        "verified",
        "command",
    ]);
    for r in runs.iter().filter(|r| r.point == Point::W2) {
        t.row(vec![
            mega(r.number(&["records_per_s"])),
            num(r.number(&["elapsed_s"]), 3),
            format!(
                "{} ({})",
                num(r.number(&["windows"]), 0),
                num(r.number(&["expected_windows"]), 0)
            ),
            verdict(r),
            code(r),
        ]);
    }
    Section {
        blocks: vec![
            Block::Heading(2, "W2 event-time tumbling window".into()),
            Block::Para(format!(
                "W2 with K = {} and {cores} workers: 1 s tumbling windows in event time, \
                 every window's count and sum checked against the reference.",
                si(W2_KEYS as f64)
            )),
            Block::Table(t),
        ],
        charts: Vec::new(),
    }
}

/// Nexmark queries as weir SQL.
pub(super) fn nexmark(runs: &[RunRecord]) -> Section {
    let mut t = Table::new(&[
        "query",
        "events",
        "events/s",
        "per core",
        "result rows",
        "verified",
        "command",
    ]);
    for r in runs {
        let Point::Nexmark(q) = r.point else {
            continue;
        };
        t.row(vec![
            q.into(),
            num(r.number(&["events"]), 0),
            mega(r.number(&["events_per_s"])),
            mega(r.number(&["events_per_s_per_core"])),
            num(r.number(&["results"]), 0),
            verdict(r),
            code(r),
        ]);
    }
    Section {
        blocks: vec![
            Block::Heading(2, "Nexmark".into()),
            Block::Para(
                "Nexmark queries of bench/nexmark as weir SQL over generated events: those \
                 whose result count has a reference computed from the generator (so each run \
                 is verified). Events/s counts events of all three kinds over the job's run \
                 time."
                    .into(),
            ),
            Block::Table(t),
        ],
        charts: Vec::new(),
    }
}
