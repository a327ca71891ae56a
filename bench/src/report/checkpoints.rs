//! The checkpoint sections of a report: W4 (checkpoints under
//! backpressure, every mode) and W5 (recovery: snapshot and restore rates
//! against the disk's, restore time against state size).

use serde_json::Value;

use super::child::RunRecord;
use super::doc::{Block, Table};
use super::latency::interval;
use super::plan::{Point, Sizes, W4_MODES};
use super::plot::{plain, si, Axis, Chart, Kind, Series};
use super::throughput::{checkpoint_counts, code, num, verdict};
use super::Section;

/// Mean bytes in flight summed over the sources' output channels, and the
/// largest any one channel held: W4's `subtasks` of the sources.
pub fn source_in_flight(json: &Value) -> Option<(f64, f64)> {
    let subtasks = json["subtasks"].as_array()?;
    let mut mean = 0.0;
    let mut max = 0.0f64;
    let mut any = false;
    for t in subtasks {
        if !t["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("w4-source"))
        {
            continue;
        }
        for c in t["in_flight_bytes"].as_array()? {
            mean += c["mean"].as_f64()?;
            max = max.max(c["max"].as_f64()?);
            any = true;
        }
    }
    any.then_some((mean, max))
}

/// Each checkpoint of a W4 run that is not the final one: seconds since
/// the first trigger, and its end-to-end duration in ms.
pub fn checkpoint_durations(json: &Value) -> Vec<(f64, f64)> {
    let list: Vec<&Value> = json["checkpoint_list"]
        .as_array()
        .map(|l| l.iter().filter(|c| c["is_final"] != true).collect())
        .unwrap_or_default();
    let first = list
        .iter()
        .filter_map(|c| c["trigger_ms"].as_f64())
        .fold(f64::INFINITY, f64::min);
    list.iter()
        .filter_map(|c| {
            Some((
                (c["trigger_ms"].as_f64()? - first) / 1e3,
                c["duration_ms"].as_f64()?,
            ))
        })
        .collect()
}

fn kib(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.0} KiB", v / 1024.0))
}

fn mib(v: Option<f64>) -> String {
    v.map_or_else(
        || "-".into(),
        |v| format!("{:.1} MiB", v / (1u64 << 20) as f64),
    )
}

fn gbs(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.2} GB/s", v / 1e9))
}

/// W4 in every mode.
pub(super) fn w4(runs: &[RunRecord], sizes: &Sizes, cores: usize) -> Section {
    let baseline = runs
        .iter()
        .find(|r| r.point == Point::W4("none") && r.passed())
        .and_then(|r| r.number(&["sink_records_per_s"]));
    let mut t = Table::new(&[
        "mode",
        "sink records/s",
        "vs none",
        "checkpoints completed / failed",
        "duration p50 / max ms",
        "alignment p50 / max ms",
        "persisted (in flight)",
        "in flight from the sources: mean summed over channels / peak of one channel",
        "verified",
        "command",
    ]);
    let mut durations = Vec::new();
    let mut mean = Series {
        name: "mean, sum of channels".into(),
        points: Vec::new(),
    };
    let mut peak = Series {
        name: "peak of one channel".into(),
        points: Vec::new(),
    };
    for (i, mode) in W4_MODES.iter().enumerate() {
        for r in runs.iter().filter(|r| r.point == Point::W4(mode)) {
            let c = |a: &str, b: &str| r.number(&["checkpoints", a, b]);
            let rate = r.number(&["sink_records_per_s"]);
            let in_flight = r.json.as_ref().and_then(source_in_flight);
            let checkpoints = *mode != "none";
            t.row(vec![
                (*mode).into(),
                num(rate.map(|v| v / 1e3), 1) + " k",
                match (rate, baseline) {
                    (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                    _ => "-".into(),
                },
                checkpoint_counts(r, checkpoints),
                format!(
                    "{} / {}",
                    num(c("duration_ms", "p50"), 0),
                    num(c("duration_ms", "max"), 0)
                ),
                format!(
                    "{} / {}",
                    num(c("alignment_ms", "p50"), 1),
                    num(c("alignment_ms", "max"), 1)
                ),
                if checkpoints {
                    format!(
                        "{} ({})",
                        mib(r.number(&["checkpoints", "bytes"])),
                        mib(r.number(&["checkpoints", "inflight_bytes"]))
                    )
                } else {
                    "-".into()
                },
                format!(
                    "{} / {}",
                    kib(in_flight.map(|f| f.0)),
                    kib(in_flight.map(|f| f.1))
                ),
                verdict(r),
                code(r),
            ]);
            if !r.passed() {
                continue;
            }
            if let Some((m, p)) = in_flight {
                mean.points.push((i as f64, m / 1024.0));
                peak.points.push((i as f64, p / 1024.0));
            }
            if checkpoints {
                if let Some(json) = &r.json {
                    durations.push(Series {
                        name: (*mode).into(),
                        points: checkpoint_durations(json),
                    });
                }
            }
        }
    }
    let every = interval(sizes.checkpoint_ms);
    Section {
        blocks: vec![
            Block::Heading(2, "W4 checkpoints under backpressure".into()),
            Block::Para(format!(
                "W4 (WORKLOADS.md) with {cores} workers: unpaced sources for {} s into sinks \
                 that spin 10 µs per record, so every buffer upstream fills; checkpoints every \
                 {every} in each mode: aligned, unaligned, aligned with buffer debloating, \
                 aligned switching to unaligned after 100 ms of alignment, and none (the \
                 baseline sink rate). The sink rate is taken while the source runs; the run \
                 then drains, takes a final checkpoint and is verified. In flight: bytes \
                 queued in the sources' output channels, sampled over the run.",
                sizes.w4_duration_s
            )),
            Block::Table(t),
        ],
        charts: vec![
            Chart {
                name: "w4-checkpoint-duration".into(),
                title: format!("W4 checkpoint duration over time, every {every}"),
                x: Axis::linear("time since the first checkpoint's trigger (s)", plain),
                y: Axis::log("trigger to completion (ms, log scale)", plain),
                series: durations,
                kind: Kind::Lines,
            },
            Chart {
                name: "w4-in-flight".into(),
                title: "W4 bytes in flight from the sources to the slow sinks".into(),
                x: Axis::linear("checkpoint mode", plain),
                y: Axis::linear("bytes in flight (KiB)", plain),
                series: vec![mean, peak],
                kind: Kind::Bars(W4_MODES.iter().map(|m| (*m).to_owned()).collect()),
            },
        ],
    }
}

/// The disk's rates as W5 measured them (the faster of before and after
/// its runs), from the first W5 run that has them.
pub fn disk_rates(runs: &[RunRecord]) -> Option<(f64, f64, bool)> {
    runs.iter().find_map(|r| {
        Some((
            r.number(&["disk", "write_bytes_per_s"])?,
            r.number(&["disk", "read_bytes_per_s"])?,
            r.json.as_ref()?["disk"]["direct_read"] == true,
        ))
    })
}

/// W5 at each state size.
pub(super) fn w5(runs: &[RunRecord], sizes: &Sizes) -> Section {
    let mut t = Table::new(&[
        "K",
        "N",
        "interval",
        "state restored",
        "restore s (GB/s, of disk read)",
        "start to first record ms",
        "snapshot write p50 (of disk write)",
        "final snapshot write",
        "disk write / read",
        "exactly once",
        "command",
    ]);
    let mut restore = Series {
        name: "restore (verify + load)".into(),
        points: Vec::new(),
    };
    let mut first = Series {
        name: "start to first record".into(),
        points: Vec::new(),
    };
    let w5_runs: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| matches!(r.point, Point::W5 { .. }))
        .collect();
    for r in &w5_runs {
        let n = |path: &[&str]| r.number(path);
        let pct = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{:.0}%", v * 100.0));
        t.row(vec![
            n(&["keys"]).map_or_else(|| "-".into(), si),
            n(&["records"]).map_or_else(|| "-".into(), si),
            n(&["checkpoint_interval_ms"]).map_or_else(|| "-".into(), |v| interval(v as u64)),
            mib(n(&["restore", "state_bytes"])),
            format!(
                "{} ({}, {})",
                num(n(&["restore", "seconds"]), 3),
                gbs(n(&["restore", "bytes_per_s"])),
                pct(n(&["restore", "vs_disk_read"]))
            ),
            num(n(&["restore", "process_start_to_first_record_ms"]), 0),
            format!(
                "{} ({})",
                gbs(n(&["snapshot", "write_bytes_per_s_p50"])),
                pct(n(&["snapshot", "write_vs_disk"]))
            ),
            format!(
                "{} ({})",
                gbs(n(&["snapshot", "final_write_bytes_per_s"])),
                pct(n(&["snapshot", "final_write_vs_disk"]))
            ),
            format!(
                "{} / {}",
                gbs(n(&["disk", "write_bytes_per_s"])),
                gbs(n(&["disk", "read_bytes_per_s"]))
            ),
            verdict(r),
            code(r),
        ]);
        if !r.passed() {
            continue;
        }
        if let Some(bytes) = n(&["restore", "state_bytes"]) {
            let mb = bytes / 1e6;
            if let Some(s) = n(&["restore", "seconds"]) {
                restore.points.push((mb, s));
            }
            if let Some(ms) = n(&["restore", "process_start_to_first_record_ms"]) {
                first.points.push((mb, ms / 1e3));
            }
        }
    }
    let spec = sizes
        .w5
        .last()
        .map(|(n, k, i)| {
            format!(
                "N = {}, K = {}, every {}",
                si(*n as f64),
                si(*k as f64),
                interval(*i)
            )
        })
        .unwrap_or_default();
    Section {
        blocks: vec![
            Block::Heading(2, "W5 recovery".into()),
            Block::Para(format!(
                "W5 (WORKLOADS.md): W1 writing its output through the transactional file sink \
                 with checkpoints, killed with SIGKILL after the third completed checkpoint, \
                 restarted from it and run to the end; the committed output across the crash \
                 must be exactly once. Each run measures the disk's sequential O_DIRECT rates \
                 in its own directory before and after (the faster is shown) and puts the \
                 snapshot and restore rates beside them. Several state sizes give restore \
                 time against state size; the largest run here is {spec}."
            )),
            Block::Table(t),
        ],
        charts: vec![Chart {
            name: "w5-restore".into(),
            title: "W5 restore time against state size".into(),
            x: Axis::linear("state restored (MB)", plain),
            y: Axis::linear("time (s)", plain),
            series: vec![restore, first],
            kind: Kind::Lines,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn in_flight_bytes_add_up_over_the_source_channels() {
        let j = json!({"subtasks": [
            {"name": "w4-source (1/2)", "in_flight_bytes": [{"mean": 100.0, "max": 400}, {"mean": 50.0, "max": 900}]},
            {"name": "w4-keyed-count -> w4-slow-sink (1/2)", "in_flight_bytes": []},
            {"name": "w4-source (2/2)", "in_flight_bytes": [{"mean": 10.0, "max": 300}]},
        ]});
        assert_eq!(source_in_flight(&j), Some((160.0, 900.0)));
        assert_eq!(source_in_flight(&json!({"subtasks": []})), None);
    }

    #[test]
    fn checkpoint_times_count_from_the_first_trigger_without_the_final_one() {
        let j = json!({"checkpoint_list": [
            {"trigger_ms": 5000, "duration_ms": 700.0, "is_final": false},
            {"trigger_ms": 6000, "duration_ms": 60.5, "is_final": false},
            {"trigger_ms": 6500, "duration_ms": 40.0, "is_final": true},
        ]});
        assert_eq!(checkpoint_durations(&j), vec![(0.0, 700.0), (1.0, 60.5)]);
    }
}
