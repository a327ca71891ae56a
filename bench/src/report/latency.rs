//! The latency section of a report: W3's sweep of buffer timeouts at two
//! rates with aligned checkpoints, and a control run without them.

use super::child::RunRecord;
use super::doc::{Block, Table};
use super::plan::{Point, Sizes, CONTROL_RATE, TIMEOUTS_MS, W3_RATES};
use super::plot::{plain, si, Axis, Chart, Kind, Series};
use super::throughput::{checkpoint_counts, code, num, timeout_axis, timeout_x, verdict};
use super::Section;

/// The W3 sweep: a table and one latency plot per rate.
pub(super) fn w3(runs: &[RunRecord], sizes: &Sizes, cores: usize) -> Section {
    let mut t = Table::new(&[
        "rate/s",
        "buffer timeout",
        "achieved/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "p99.99 µs",
        "max µs",
        "checkpoints completed / failed",
        "host steal ms",
        "verified",
        "command",
    ]);
    let mut charts = Vec::new();
    for rate in W3_RATES {
        let mut series: Vec<Series> = ["p50", "p99", "p99.9", "p99.99", "max"]
            .iter()
            .map(|name| Series {
                name: (*name).into(),
                points: Vec::new(),
            })
            .collect();
        // The adaptive timeout's p99 and its target, as flat lines across
        // the sweep (it has no fixed timeout to stand at).
        let mut auto = Vec::new();
        for r in runs {
            let Point::W3 {
                rate: run_rate,
                timeout_ms,
                auto: adaptive,
                checkpoints,
            } = r.point
            else {
                continue;
            };
            if run_rate != rate {
                continue;
            }
            let l = |q: &str| r.number(&["latency_us", q]);
            t.row(vec![
                si(rate as f64),
                match (adaptive, checkpoints) {
                    (true, _) => format!("auto (target {timeout_ms} ms)"),
                    (false, true) => format!("{timeout_ms} ms"),
                    (false, false) => format!("{timeout_ms} ms, no checkpoints (control)"),
                },
                num(r.number(&["achieved_rate"]), 0),
                num(l("p50"), 1),
                num(l("p99"), 1),
                num(l("p999"), 1),
                num(l("p9999"), 1),
                num(l("max"), 0),
                checkpoint_counts(r, checkpoints),
                num(r.steal_ms, 0),
                verdict(r),
                code(r),
            ]);
            if !checkpoints {
                // The control is a row to compare with, not a point of
                // the sweep.
                continue;
            }
            if adaptive {
                if let (true, Some(p99)) = (r.passed(), l("p99")) {
                    auto.push((timeout_ms, p99));
                }
                continue;
            }
            if r.passed() {
                for (s, q) in series
                    .iter_mut()
                    .zip(["p50", "p99", "p999", "p9999", "max"])
                {
                    if let Some(v) = l(q) {
                        s.points.push((timeout_x(timeout_ms), v));
                    }
                }
            }
        }
        let (lo, hi) = (
            timeout_x(TIMEOUTS_MS[0] as f64),
            timeout_x(TIMEOUTS_MS[3] as f64),
        );
        for (target_ms, p99) in auto {
            series.push(Series {
                name: format!("auto p99 (target {target_ms} ms)"),
                points: vec![(lo, p99), (hi, p99)],
            });
            series.push(Series {
                name: format!("target {target_ms} ms"),
                points: vec![(lo, target_ms * 1000.0), (hi, target_ms * 1000.0)],
            });
        }
        charts.push(Chart {
            name: format!("w3-latency-{}", si(rate as f64).to_lowercase()),
            title: format!(
                "W3 latency at {} records/s, aligned checkpoints every {}",
                si(rate as f64),
                interval(sizes.checkpoint_ms)
            ),
            x: timeout_axis(),
            y: Axis::log("end-to-end latency (µs, log scale)", plain),
            series,
            kind: Kind::Lines,
        });
    }
    Section {
        blocks: vec![
            Block::Heading(2, "W3 latency against buffer timeout".into()),
            Block::Para(format!(
                "W3 (WORKLOADS.md) with {cores} workers: sources paced to the rate, \
                 {} warm-up then {} recorded, latency from the source's clock to the sink \
                 in an HDR histogram; aligned checkpoints every {} as WORKLOADS.md \
                 specifies (each run must complete a checkpoint per interval, less two, \
                 to count). Timeout 0 flushes every record. `auto` is weir's adaptive \
                 timeout (`execution.buffer-timeout.interval = auto`, docs/ARCHITECTURE.md), \
                 drawn as a flat line of its p99 beside its target. The control row runs                  {} records/s at timeout 0 without checkpoints: the tail the host gives                  any process (its `host steal ms` is CPU time the hypervisor gave to                  others during the run, from /proc/stat), beside what checkpoints add.",
                interval(sizes.w3_warmup_ms),
                interval(sizes.w3_duration_ms),
                interval(sizes.checkpoint_ms),
                si(CONTROL_RATE as f64),
            )),
            Block::Table(t),
        ],
        charts,
    }
}

/// `ms` as `1 s` or `300 ms`.
pub(super) fn interval(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}
