//! Checkpoint statistics: per checkpoint, per task, kept as a JSON history
//! in the checkpoint directory and summarised for progress lines and the
//! benchmark report.

use serde::Serialize;

/// One task's part of one checkpoint.
#[derive(Clone, Debug, Serialize)]
pub struct TaskCheckpointStats {
    /// The task ("stage (i/P)").
    pub task: String,
    /// The worker it runs on.
    pub worker: usize,
    /// Wall-clock ms (since the epoch) when its first barrier arrived.
    pub first_barrier_ms: f64,
    /// Time from its first to its last input's barrier.
    pub alignment_ms: f64,
    /// The synchronous part (freezing state, pre-committing).
    pub sync_ms: f64,
    /// The asynchronous part (serializing, writing, syncing), until the
    /// acknowledgement: also waits for the worker's other tasks and for
    /// the sinks' pre-committed files to be synced.
    pub async_ms: f64,
    /// From the start of the asynchronous part until the worker's segment,
    /// with this task's state, was durable (before the sinks' files were
    /// synced): how long persisting the state took.
    pub persist_ms: f64,
    /// Bytes written (blocks including padding, plus inline state).
    pub bytes: u64,
    /// Of those, in-flight data persisted as channel state (unaligned
    /// checkpoints).
    pub inflight_bytes: u64,
    /// Keyed-state entries written.
    pub entries: u64,
    /// The segment was written with O_DIRECT.
    pub direct_io: bool,
}

/// How a checkpoint ended, or that it has not yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Every task acknowledged and the manifest is durable.
    Completed,
    /// Declined, timed out or subsumed.
    Failed,
    /// Triggered, not yet acknowledged by every task: a pending
    /// checkpoint as the REST endpoint shows it, with the acknowledgements
    /// so far (never in the history file, which lists ended ones).
    InProgress,
}

/// One checkpoint's statistics.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointRecord {
    /// Its id.
    pub id: u64,
    /// How it ended.
    pub status: CheckpointStatus,
    /// The final checkpoint of a bounded job.
    pub is_final: bool,
    /// A savepoint (a stop's, or one the job ran on after).
    pub is_savepoint: bool,
    /// Wall-clock ms (since the epoch) of the trigger.
    pub trigger_ms: u64,
    /// Trigger to completion (or failure).
    pub duration_ms: f64,
    /// Largest alignment of any task.
    pub alignment_ms: f64,
    /// Largest synchronous part of any task.
    pub sync_ms: f64,
    /// Largest asynchronous part of any task.
    pub async_ms: f64,
    /// Bytes written by all tasks.
    pub bytes: u64,
    /// Of `bytes`, the in-flight data (channel state) that unaligned
    /// checkpoints persist with the barrier; 0 for aligned ones.
    pub inflight_bytes: u64,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Per task, with each task's barrier arrival relative to the trigger.
    pub tasks: Vec<TaskCheckpointStats>,
}

impl CheckpointRecord {
    /// A one-line description for progress output.
    pub fn line(&self) -> String {
        match self.status {
            CheckpointStatus::Completed => format!(
                "checkpoint {}{} completed in {:.0} ms (align {:.1} ms, sync {:.1} ms, async {:.0} ms, {}{})",
                self.id,
                if self.is_final { " (final)" } else { "" },
                self.duration_ms,
                self.alignment_ms,
                self.sync_ms,
                self.async_ms,
                human_bytes(self.bytes),
                if self.inflight_bytes > 0 {
                    format!(", {} of it in flight", human_bytes(self.inflight_bytes))
                } else {
                    String::new()
                }
            ),
            CheckpointStatus::Failed => format!(
                "checkpoint {} failed after {:.0} ms: {}",
                self.id,
                self.duration_ms,
                self.failure.as_deref().unwrap_or("unknown")
            ),
            CheckpointStatus::InProgress => format!(
                "checkpoint {} in progress for {:.0} ms ({} tasks acknowledged)",
                self.id,
                self.duration_ms,
                self.tasks.len()
            ),
        }
    }
}

/// "12.3 MiB" style rendering.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

/// A p50/max pair.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct P50Max {
    /// Median.
    pub p50: f64,
    /// Maximum.
    pub max: f64,
}

impl P50Max {
    fn of(mut v: Vec<f64>) -> Self {
        if v.is_empty() {
            return Self::default();
        }
        v.sort_by(f64::total_cmp);
        Self {
            p50: v[(v.len() - 1) / 2],
            max: v[v.len() - 1],
        }
    }
}

/// What the benchmark report shows of the checkpoints of a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CheckpointSummary {
    /// Completed checkpoints.
    pub completed: u64,
    /// Failed checkpoints.
    pub failed: u64,
    /// End-to-end durations of the completed ones.
    pub duration_ms: P50Max,
    /// Largest alignment per completed checkpoint.
    pub alignment_ms: P50Max,
    /// Bytes written by the completed ones, in total.
    pub bytes: u64,
    /// Of `bytes`, the in-flight data persisted by unaligned checkpoints.
    pub inflight_bytes: u64,
}

impl CheckpointSummary {
    /// Summarises `records`.
    pub fn of(records: &[CheckpointRecord]) -> Self {
        let done: Vec<&CheckpointRecord> = records
            .iter()
            .filter(|r| r.status == CheckpointStatus::Completed)
            .collect();
        Self {
            completed: done.len() as u64,
            failed: (records.len() - done.len()) as u64,
            duration_ms: P50Max::of(done.iter().map(|r| r.duration_ms).collect()),
            alignment_ms: P50Max::of(done.iter().map(|r| r.alignment_ms).collect()),
            bytes: done.iter().map(|r| r.bytes).sum(),
            inflight_bytes: done.iter().map(|r| r.inflight_bytes).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        id: u64,
        status: CheckpointStatus,
        duration_ms: f64,
        alignment_ms: f64,
    ) -> CheckpointRecord {
        CheckpointRecord {
            id,
            status,
            is_final: false,
            is_savepoint: false,
            trigger_ms: 0,
            duration_ms,
            alignment_ms,
            sync_ms: 0.0,
            async_ms: 0.0,
            bytes: 10,
            inflight_bytes: id,
            failure: None,
            tasks: Vec::new(),
        }
    }

    #[test]
    fn summary_counts_and_percentiles() {
        let records = vec![
            record(1, CheckpointStatus::Completed, 30.0, 1.0),
            record(2, CheckpointStatus::Failed, 900.0, 50.0),
            record(3, CheckpointStatus::Completed, 10.0, 3.0),
            record(4, CheckpointStatus::Completed, 20.0, 2.0),
        ];
        let s = CheckpointSummary::of(&records);
        assert_eq!((s.completed, s.failed, s.bytes), (3, 1, 30));
        // Checkpoints 1, 3 and 4 completed.
        assert_eq!(s.inflight_bytes, 8);
        assert_eq!(
            s.duration_ms,
            P50Max {
                p50: 20.0,
                max: 30.0
            }
        );
        assert_eq!(s.alignment_ms, P50Max { p50: 2.0, max: 3.0 });
        assert_eq!(CheckpointSummary::of(&[]), CheckpointSummary::default());
    }

    #[test]
    fn lines_mention_in_flight_data_only_when_there_is_some() {
        let mut r = record(7, CheckpointStatus::Completed, 12.0, 1.0);
        r.bytes = 3 << 20;
        r.inflight_bytes = 0;
        let aligned = r.line();
        assert!(
            aligned.starts_with("checkpoint 7 completed in 12 ms"),
            "{aligned}"
        );
        assert!(aligned.ends_with("3.0 MiB)"), "{aligned}");
        r.inflight_bytes = 1 << 20;
        let unaligned = r.line();
        assert!(
            unaligned.ends_with("3.0 MiB, 1.0 MiB of it in flight)"),
            "{unaligned}"
        );
    }
}
