//! The progress report the control thread hands out every interval, and
//! its rendering as the lines `weir run` and `weir bench` print.

use std::time::Duration;

use crate::checkpoint::stats::CheckpointRecord;
use crate::metrics::report::{MetricsSnapshot, TimeShares};
use crate::metrics::subtask::SubtaskId;

/// A progress report, handed to the progress callback every interval.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Time since the workers started.
    pub elapsed: Duration,
    /// Length of the interval this report covers.
    pub interval: Duration,
    /// Counters now.
    pub now: MetricsSnapshot,
    /// Counters at the previous report.
    pub before: MetricsSnapshot,
    /// Checkpoints that ended during the interval.
    pub checkpoints: Vec<CheckpointRecord>,
}

impl Progress {
    /// Per worker: sink records per second over the interval.
    pub fn sink_rates(&self) -> Vec<f64> {
        let secs = self.interval.as_secs_f64().max(1e-9);
        self.now
            .sink_records
            .iter()
            .zip(&self.before.sink_records)
            .map(|(n, b)| (n - b) as f64 / secs)
            .collect()
    }

    /// Per subtask that ran during the interval: busy, backpressured and
    /// idle milliseconds per second over it (subtasks that had finished
    /// before it are left out).
    pub fn subtask_shares(&self) -> Vec<(SubtaskId, TimeShares)> {
        self.now
            .subtasks
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let before = self.before.subtasks.get(i).filter(|b| b.id == s.id);
                s.shares_since(before).map(|shares| (s.id.clone(), shares))
            })
            .collect()
    }

    /// The subtasks' line: each as `w1-keyed-count#0 busy 812 bp 0 idle
    /// 188 OK`. With more than [`Progress::MAX_SUBTASKS_SHOWN`] subtasks,
    /// the most backpressured and then busiest ones, and how many more.
    pub fn subtask_line(&self) -> Option<String> {
        let mut shares = self.subtask_shares();
        if shares.is_empty() {
            return None;
        }
        let hidden = shares.len().saturating_sub(Self::MAX_SUBTASKS_SHOWN);
        if hidden > 0 {
            shares.sort_by(|a, b| {
                b.1.backpressured
                    .total_cmp(&a.1.backpressured)
                    .then(b.1.busy.total_cmp(&a.1.busy))
            });
            shares.truncate(Self::MAX_SUBTASKS_SHOWN);
        }
        // Under the main line, past its "[   1.0s] " prefix.
        let mut line = String::from("          ");
        let parts: Vec<String> = shares
            .iter()
            .map(|(id, s)| format!("{} {}", id.short_name(), s.compact()))
            .collect();
        line.push_str(&parts.join(" | "));
        if hidden > 0 {
            line.push_str(&format!(" | {hidden} more"));
        }
        Some(line)
    }

    /// Most subtasks [`Progress::subtask_line`] shows.
    pub const MAX_SUBTASKS_SHOWN: usize = 8;

    /// What `weir run` and `weir bench` print: [`Progress::line`], then
    /// [`Progress::subtask_line`] on a line of its own.
    pub fn lines(&self) -> String {
        match self.subtask_line() {
            Some(subtasks) => format!("{}\n{subtasks}", self.line()),
            None => self.line(),
        }
    }

    /// A one-line summary: total and per-worker sink throughput.
    pub fn line(&self) -> String {
        let rates = self.sink_rates();
        let total: f64 = rates.iter().sum();
        let per_worker: Vec<String> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| format!("w{i} {}", human_rate(*r)))
            .collect();
        let mut line = format!(
            "[{:>6.1}s] {} records/s into sinks ({} total) | {}",
            self.elapsed.as_secs_f64(),
            human_rate(total),
            self.now.total_sink_records(),
            per_worker.join(", ")
        );
        for c in &self.checkpoints {
            line.push_str(" | ");
            line.push_str(&c.line());
        }
        line
    }
}

/// "12.3 M" style rendering of a rate.
pub fn human_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k", r / 1e3)
    } else {
        format!("{r:.0}")
    }
}
