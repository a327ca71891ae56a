//! Running a benchmark: build the workload's job from a [`Config`], run it,
//! verify the result against the independent reference and report it as a
//! readable summary plus one JSON object.

use std::time::Duration;

use serde_json::{json, Value};
use weir_runtime::execute::human_rate;
use weir_runtime::{execute_with_progress, Config, ExecutionOptions, JobError, Progress};

use crate::jobs;
use crate::reference;
use crate::workload::{SinkResults, SourceCounts};

/// A workload of WORKLOADS.md that `weir bench` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// W1 keyed-count (throughput).
    W1,
    /// W3 end-to-end latency at a fixed rate.
    W3,
}

impl Workload {
    /// The workload's name as WORKLOADS.md writes it, lowercase.
    pub fn name(self) -> &'static str {
        match self {
            Workload::W1 => "w1",
            Workload::W3 => "w3",
        }
    }
}

/// W1's default N (WORKLOADS.md).
pub const W1_DEFAULT_RECORDS: u64 = 50_000_000;
/// The default K of W1 and W3 (WORKLOADS.md).
pub const DEFAULT_KEYS: u64 = 100_000;
/// W3's default rate: the heaviest point of its sweep.
pub const W3_DEFAULT_RATE: u64 = 1_000_000;

/// Latency percentiles in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
}

/// The outcome of one benchmark run.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// Which workload.
    pub workload: Workload,
    /// Workers used.
    pub workers: usize,
    /// Records that reached the sinks.
    pub records: u64,
    /// The sinks' combined checksum.
    pub checksum: u64,
    /// The independent reference's checksum for the same records.
    pub expected_checksum: u64,
    /// Records the reference expects.
    pub expected_records: u64,
    /// Whole job, first record in to last record out.
    pub elapsed: Duration,
    /// Keys (K).
    pub keys: u64,
    /// Requested rate, if paced.
    pub rate: Option<u64>,
    /// `execution.buffer-timeout`.
    pub buffer_timeout: Duration,
    /// W3: records per second inside the recorded window.
    pub achieved_rate: Option<f64>,
    /// W3: latency of the recorded records.
    pub latency: Option<Latency>,
    /// Per worker: times it ran out of work and parked.
    pub parks: Vec<u64>,
}

impl BenchReport {
    /// True if the engine's answer matches the reference exactly.
    pub fn verified(&self) -> bool {
        self.records == self.expected_records && self.checksum == self.expected_checksum
    }

    /// Records per second over the whole job.
    pub fn records_per_s(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The JSON object printed as the last line of `weir bench`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "workload": self.workload.name(),
            "workers": self.workers,
            "records": self.records,
            "checksum": self.checksum.to_string(),
            "expected_checksum": self.expected_checksum.to_string(),
            "verified": self.verified(),
            "elapsed_s": self.elapsed.as_secs_f64(),
            "records_per_s": self.records_per_s(),
            "keys": self.keys,
            "rate": self.rate,
            "buffer_timeout_ms": self.buffer_timeout.as_secs_f64() * 1e3,
            "parks": self.parks,
        });
        if let Some(rate) = self.achieved_rate {
            v["achieved_rate"] = json!(rate);
        }
        if let Some(l) = self.latency {
            v["latency_us"] = json!({"p50": l.p50, "p99": l.p99, "p999": l.p999, "max": l.max});
        }
        v
    }

    /// A few readable lines.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "weir bench {}: {} records through {} workers in {:.3} s = {} records/s\n",
            self.workload.name(),
            self.records,
            self.workers,
            self.elapsed.as_secs_f64(),
            human_rate(self.records_per_s()),
        );
        s += &format!(
            "checksum {} (reference {}): {}\n",
            self.checksum,
            self.expected_checksum,
            if self.verified() {
                "verified"
            } else {
                "MISMATCH"
            }
        );
        if let (Some(rate), Some(l)) = (self.achieved_rate, self.latency) {
            s += &format!(
                "latency at {} records/s (buffer timeout {}): p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us, max {:.0} us\n",
                human_rate(rate),
                weir_runtime::config::format_duration(self.buffer_timeout),
                l.p50,
                l.p99,
                l.p999,
                l.max
            );
        }
        s
    }
}

/// Runs `workload` as configured by `config` (`job.records`, `job.keys`,
/// `job.rate`, `job.warmup`, `job.duration` and the engine keys).
pub fn run(workload: Workload, config: &Config, quiet: bool) -> Result<BenchReport, JobError> {
    let mut options = ExecutionOptions::from_config(config);
    if quiet {
        options.progress_interval = Duration::ZERO;
    }
    let workers = options.workers;
    let keys = config.keys.unwrap_or(DEFAULT_KEYS);
    let results = SinkResults::new(workers);
    let mut progress = |p: &Progress| eprintln!("{}", p.line());
    match workload {
        Workload::W1 => {
            let records = config.records.unwrap_or(W1_DEFAULT_RECORDS);
            let job = jobs::w1(records, keys, config.rate, results.clone());
            let result = execute_with_progress(job, &options, &mut progress)?;
            let sinks = results.collected();
            Ok(BenchReport {
                workload,
                workers,
                records: sinks.iter().map(|r| r.records).sum(),
                checksum: sinks.iter().fold(0u64, |a, r| a.wrapping_add(r.checksum)),
                expected_checksum: reference::w1_checksum(records, keys),
                expected_records: records,
                elapsed: result.elapsed,
                keys,
                rate: config.rate,
                buffer_timeout: options.buffer_timeout,
                achieved_rate: None,
                latency: None,
                parks: result.metrics.parks.clone(),
            })
        }
        Workload::W3 => {
            let rate = config.rate.unwrap_or(W3_DEFAULT_RATE);
            let counts = SourceCounts::new(workers);
            let job = jobs::w3(
                keys,
                rate,
                config.warmup,
                config.duration,
                results.clone(),
                counts.clone(),
            );
            let result = execute_with_progress(job, &options, &mut progress)?;
            let sinks = results.collected();
            let (expected_checksum, expected_records) =
                reference::checksum_of_partitions(&counts.get(), keys);
            let mut histogram =
                hdrhistogram::Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 3)
                    .expect("valid histogram bounds");
            let mut recorded = 0;
            for r in &sinks {
                if let Some(h) = &r.latency_ns {
                    histogram.add(h).expect("same bounds");
                }
                recorded += r.recorded;
            }
            let us = |q: f64| histogram.value_at_quantile(q) as f64 / 1e3;
            Ok(BenchReport {
                workload,
                workers,
                records: sinks.iter().map(|r| r.records).sum(),
                checksum: sinks.iter().fold(0u64, |a, r| a.wrapping_add(r.checksum)),
                expected_checksum,
                expected_records,
                elapsed: result.elapsed,
                keys,
                rate: Some(rate),
                buffer_timeout: options.buffer_timeout,
                achieved_rate: Some(recorded as f64 / config.duration.as_secs_f64().max(1e-9)),
                latency: Some(Latency {
                    p50: us(0.5),
                    p99: us(0.99),
                    p999: us(0.999),
                    max: histogram.max() as f64 / 1e3,
                }),
                parks: result.metrics.parks.clone(),
            })
        }
    }
}
