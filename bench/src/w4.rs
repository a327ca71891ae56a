//! W4 checkpoints under backpressure (WORKLOADS.md): the W1 pipeline with
//! an unpaced source and a sink that spins 10 us per record, so every
//! buffer upstream of the sink fills; checkpoints every second, in one of
//! the modes WORKLOADS.md compares (aligned, unaligned, aligned with buffer
//! debloating, aligned with an alignment timeout), or none at all for the
//! baseline sink rate.
//!
//! A mode is a set of configuration keys applied before the user's own
//! `--set` overrides (so they can be tuned, and the report shows what was
//! in effect). The source runs for `job.duration` (60 s by default, set by
//! the CLI) and then ends its input like a bounded job: the buffered
//! records drain, the final checkpoint completes and the run is verified
//! against the reference for the records each source subtask emitted.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use weir_runtime::checkpoint::stats::{human_bytes, CheckpointStatus};
use weir_runtime::core::units::format_duration;
use weir_runtime::exec::progress::human_rate;
use weir_runtime::{
    execute_with_progress, CheckpointRecord, CheckpointSummary, Config, ConfigError,
    ExecutionOptions, JobError, JobHandle, Progress,
};

use crate::harness::DEFAULT_KEYS;
use crate::params::JobParams;
use crate::workload::{SinkResults, SourceCounts};
use crate::{jobs, reference};

/// How long W4's source runs unless configured (WORKLOADS.md).
pub const W4_DEFAULT_DURATION: Duration = Duration::from_secs(60);
/// W4's checkpoint interval unless configured (WORKLOADS.md).
pub const W4_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// What the sink spends on each record (WORKLOADS.md).
pub const W4_SINK_SPIN: Duration = Duration::from_micros(10);
/// The alignment timeout of the `timeout` mode (WORKLOADS.md).
pub const W4_ALIGNMENT_TIMEOUT: &str = "100ms";

/// How W4 takes checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum W4Mode {
    /// No checkpoints: the baseline sink rate.
    None,
    /// Aligned exactly-once checkpoints (the defaults).
    Aligned,
    /// Unaligned checkpoints from the start.
    Unaligned,
    /// Aligned checkpoints with buffer debloating.
    Debloat,
    /// Aligned checkpoints that switch to unaligned after 100 ms of
    /// alignment.
    Timeout,
}

impl W4Mode {
    /// Every mode, in the order error messages list them.
    pub const ALL: [W4Mode; 5] = [
        W4Mode::None,
        W4Mode::Aligned,
        W4Mode::Unaligned,
        W4Mode::Debloat,
        W4Mode::Timeout,
    ];

    /// The mode's name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            W4Mode::None => "none",
            W4Mode::Aligned => "aligned",
            W4Mode::Unaligned => "unaligned",
            W4Mode::Debloat => "debloat",
            W4Mode::Timeout => "timeout",
        }
    }

    /// Whether the mode takes checkpoints.
    pub fn checkpoints(self) -> bool {
        self != W4Mode::None
    }

    /// The configuration the mode stands for, as `key=value` overrides to
    /// apply before the user's own. Every mode sets all three keys, so a
    /// config file cannot leave another mode's setting behind.
    pub fn overrides(self) -> Vec<String> {
        let (unaligned, timeout, debloat) = match self {
            W4Mode::None | W4Mode::Aligned => (false, "0ms", false),
            W4Mode::Unaligned => (true, "0ms", false),
            W4Mode::Debloat => (false, "0ms", true),
            W4Mode::Timeout => (true, W4_ALIGNMENT_TIMEOUT, false),
        };
        vec![
            format!("execution.checkpointing.unaligned.enabled={unaligned}"),
            format!("execution.checkpointing.aligned-checkpoint-timeout={timeout}"),
            format!("taskmanager.network.memory.buffer-debloat.enabled={debloat}"),
        ]
    }
}

/// The error of parsing a [`W4Mode`] from text that names none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownW4Mode(pub String);

impl std::fmt::Display for UnknownW4Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown W4 mode {:?}: expected one of none, aligned, unaligned, debloat, timeout",
            self.0
        )
    }
}

impl std::error::Error for UnknownW4Mode {}

impl FromStr for W4Mode {
    type Err = UnknownW4Mode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        W4Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownW4Mode(s.to_string()))
    }
}

/// A configuration made ready for W4 by [`prepare`].
#[derive(Clone, Debug)]
pub struct W4Setup {
    /// The mode.
    pub mode: W4Mode,
    /// The configuration the run uses.
    pub config: Config,
    /// The job's parameters (`job.*`).
    pub params: JobParams,
    /// The checkpoint directory W4 made up because none was configured; it
    /// is deleted after the run.
    pub temporary_dir: Option<PathBuf>,
}

/// Completes `config` for `mode`: checkpoints every second unless
/// `execution.checkpointing.interval` is set (none at all in mode `none`),
/// into a fresh directory under the system's temporary directory when
/// `state.checkpoints.dir` is not set (said on stderr). Fails when the
/// result is not a valid configuration (e.g. an unaligned mode with
/// `AT_LEAST_ONCE`).
pub fn prepare(config: &Config, params: &JobParams, mode: W4Mode) -> Result<W4Setup, ConfigError> {
    let mut config = config.clone();
    let mut temporary_dir = None;
    if mode.checkpoints() {
        config
            .checkpoint_interval
            .get_or_insert(W4_CHECKPOINT_INTERVAL);
        if config.checkpoints_dir.is_none() {
            let stamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let dir = std::env::temp_dir().join(format!(
                "weir-w4-checkpoints-{}-{stamp}",
                std::process::id()
            ));
            eprintln!(
                "w4: state.checkpoints.dir is not set; checkpoints go to {} (deleted after the run)",
                dir.display()
            );
            config.checkpoints_dir = Some(dir.clone());
            temporary_dir = Some(dir);
        }
    } else {
        config.checkpoint_interval = None;
    }
    config.validate()?;
    Ok(W4Setup {
        mode,
        config,
        params: params.clone(),
        temporary_dir,
    })
}

/// The outcome of one W4 run.
#[derive(Clone, Debug)]
pub struct W4Report {
    /// The mode.
    pub mode: W4Mode,
    /// Workers (and sink subtasks).
    pub workers: usize,
    /// Keys (K).
    pub keys: u64,
    /// How long the source ran (`job.duration`).
    pub duration: Duration,
    /// Records that reached the sinks.
    pub records: u64,
    /// The sinks' combined checksum.
    pub checksum: u64,
    /// The reference's checksum for the records the sources emitted.
    pub expected_checksum: u64,
    /// Records the sources emitted.
    pub expected_records: u64,
    /// First record in to last record out, including the drain after the
    /// source ended and the final checkpoint.
    pub elapsed: Duration,
    /// Records the sinks finished while the source ran.
    pub sink_records_in_window: u64,
    /// The checkpoint interval, if checkpointing.
    pub checkpoint_interval: Option<Duration>,
    /// `execution.checkpointing.unaligned.enabled` in effect.
    pub unaligned: bool,
    /// `execution.checkpointing.aligned-checkpoint-timeout` in effect.
    pub aligned_checkpoint_timeout: Duration,
    /// `taskmanager.network.memory.buffer-debloat.enabled` in effect.
    pub debloat: bool,
    /// The summary of the checkpoints, if checkpointing.
    pub checkpoints: Option<CheckpointSummary>,
    /// Every checkpoint.
    pub checkpoint_list: Vec<CheckpointRecord>,
    /// In-process restarts.
    pub restarts: u32,
    /// Busy, backpressured and idle time, records and bytes per subtask.
    pub subtasks: Vec<weir_runtime::SubtaskSummary>,
}

impl W4Report {
    /// True if the sinks saw exactly the records the sources emitted.
    pub fn verified(&self) -> bool {
        self.records == self.expected_records && self.checksum == self.expected_checksum
    }

    /// The sinks' rate while the source ran: what the target compares
    /// across modes (within 5% of mode `none`).
    pub fn sink_records_per_s(&self) -> f64 {
        self.sink_records_in_window as f64 / self.duration.as_secs_f64().max(1e-9)
    }

    /// The most the sinks can take: one record per spin per subtask.
    pub fn sink_capacity_per_s(&self) -> f64 {
        self.workers as f64 / W4_SINK_SPIN.as_secs_f64()
    }

    /// The JSON object printed as the last line of `weir bench w4`.
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let checkpoints = self
            .checkpoints
            .as_ref()
            .map(crate::harness::checkpoints_json);
        let each: Vec<Value> = self
            .checkpoint_list
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "trigger_ms": r.trigger_ms,
                    "status": match r.status {
                        CheckpointStatus::Completed => "completed",
                        CheckpointStatus::Failed => "failed",
                        CheckpointStatus::InProgress => "in_progress",
                    },
                    "is_final": r.is_final,
                    "duration_ms": r.duration_ms,
                    "alignment_ms": r.alignment_ms,
                    "bytes": r.bytes,
                    "inflight_bytes": r.inflight_bytes,
                    "failure": r.failure,
                })
            })
            .collect();
        json!({
            "workload": "w4",
            "mode": self.mode.name(),
            "workers": self.workers,
            "keys": self.keys,
            "duration_s": self.duration.as_secs_f64(),
            "records": self.records,
            "checksum": self.checksum.to_string(),
            "expected_checksum": self.expected_checksum.to_string(),
            "verified": self.verified(),
            "elapsed_s": self.elapsed.as_secs_f64(),
            "sink_records_per_s": self.sink_records_per_s(),
            "sink_capacity_per_s": self.sink_capacity_per_s(),
            "checkpoint_interval_ms": self.checkpoint_interval.map(ms),
            "unaligned": self.unaligned,
            "aligned_checkpoint_timeout_ms": ms(self.aligned_checkpoint_timeout),
            "debloat": self.debloat,
            "checkpoints": checkpoints,
            "checkpoint_list": each,
            "restarts": self.restarts,
            "subtasks": self
                .subtasks
                .iter()
                .map(crate::harness::subtask_json)
                .collect::<Vec<_>>(),
        })
    }

    /// A few readable lines.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "weir bench w4 --mode {}: {} records/s into the sinks while the source ran {} \
             ({:.0}% of their {} records/s), {} workers\n",
            self.mode.name(),
            human_rate(self.sink_records_per_s()),
            format_duration(self.duration),
            100.0 * self.sink_records_per_s() / self.sink_capacity_per_s(),
            human_rate(self.sink_capacity_per_s()),
            self.workers,
        );
        s += &format!(
            "{} records, checksum {} (reference {}): {}\n",
            self.records,
            self.checksum,
            self.expected_checksum,
            if self.verified() {
                "verified"
            } else {
                "MISMATCH"
            }
        );
        if let Some(c) = &self.checkpoints {
            s += &format!(
                "checkpoints: {} completed, {} failed; duration p50 {:.0} ms max {:.0} ms; \
                 alignment p50 {:.1} ms max {:.1} ms; {} written, {} of it in flight\n",
                c.completed,
                c.failed,
                c.duration_ms.p50,
                c.duration_ms.max,
                c.alignment_ms.p50,
                c.alignment_ms.max,
                human_bytes(c.bytes),
                human_bytes(c.inflight_bytes)
            );
        }
        s
    }
}

/// Runs W4 as `setup` says (`job.keys`, `job.duration`, `job.rate` and
/// `job.records` if set, and the engine keys), publishing into `handle`
/// what the control plane (a REST endpoint and its dashboard) shows;
/// deletes the temporary checkpoint directory afterwards.
pub fn run(setup: &W4Setup, quiet: bool, handle: JobHandle) -> Result<W4Report, JobError> {
    let (config, params) = (&setup.config, &setup.params);
    let mut options = ExecutionOptions::from_config(config);
    if quiet {
        options.progress_interval = Duration::ZERO;
    }
    options.handle = handle;
    let workers = options.workers;
    let keys = params.keys.unwrap_or(DEFAULT_KEYS);
    let results = SinkResults::new(workers);
    let counts = SourceCounts::new(workers);
    let job = jobs::w4(
        params.records,
        keys,
        params.rate,
        params.duration,
        W4_SINK_SPIN,
        results.clone(),
        counts.clone(),
    );
    let mut progress = |p: &Progress| eprintln!("{}", p.line());
    let outcome = execute_with_progress(job, &options, &mut progress);
    if let Some(dir) = &setup.temporary_dir {
        if let Err(e) = std::fs::remove_dir_all(dir) {
            eprintln!("warning: cannot delete {}: {e}", dir.display());
        }
    }
    let result = outcome?;
    let sinks = results.collected();
    let (expected_checksum, expected_records) =
        reference::checksum_of_partitions(&counts.get(), keys);
    let checkpointing = options.checkpointing.as_ref();
    Ok(W4Report {
        mode: setup.mode,
        workers,
        keys,
        duration: params.duration,
        records: sinks.iter().map(|r| r.records).sum(),
        checksum: sinks.iter().fold(0u64, |a, r| a.wrapping_add(r.checksum)),
        expected_checksum,
        expected_records,
        elapsed: result.elapsed,
        sink_records_in_window: sinks.iter().map(|r| r.recorded).sum(),
        checkpoint_interval: checkpointing.map(|c| c.coordinator.interval),
        unaligned: checkpointing.is_some_and(|c| c.unaligned),
        aligned_checkpoint_timeout: config.aligned_checkpoint_timeout,
        debloat: options.debloat.is_some(),
        checkpoints: checkpointing.map(|_| CheckpointSummary::of(&result.checkpoints)),
        checkpoint_list: result.checkpoints,
        restarts: result.restarts,
        subtasks: result.subtasks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sets: &[String]) -> Config {
        Config::load(None, sets).expect("valid config")
    }

    #[test]
    fn modes_parse_and_set_their_keys() {
        for mode in W4Mode::ALL {
            assert_eq!(mode.name().parse::<W4Mode>(), Ok(mode));
        }
        let err = "Aligned".parse::<W4Mode>().unwrap_err().to_string();
        assert!(
            err.contains("\"Aligned\"") && err.contains("timeout"),
            "{err}"
        );
        let expect = [
            (W4Mode::None, false, Duration::ZERO, false),
            (W4Mode::Aligned, false, Duration::ZERO, false),
            (W4Mode::Unaligned, true, Duration::ZERO, false),
            (W4Mode::Debloat, false, Duration::ZERO, true),
            (W4Mode::Timeout, true, Duration::from_millis(100), false),
        ];
        for (mode, unaligned, timeout, debloat) in expect {
            let c = config(&mode.overrides());
            assert_eq!(
                (
                    c.unaligned_checkpoints,
                    c.aligned_checkpoint_timeout,
                    c.debloat_enabled
                ),
                (unaligned, timeout, debloat),
                "{}",
                mode.name()
            );
        }
        // A mode's keys come first: the user's --set tunes them.
        let mut sets = W4Mode::Timeout.overrides();
        sets.push("execution.checkpointing.aligned-checkpoint-timeout=50ms".into());
        assert_eq!(
            config(&sets).aligned_checkpoint_timeout,
            Duration::from_millis(50)
        );
    }

    #[test]
    fn prepare_turns_checkpoints_on_or_off() {
        let c = config(&W4Mode::Aligned.overrides());
        let setup = prepare(&c, &JobParams::default(), W4Mode::Aligned).unwrap();
        assert_eq!(
            setup.config.checkpoint_interval,
            Some(W4_CHECKPOINT_INTERVAL)
        );
        let dir = setup.temporary_dir.clone().expect("a temporary directory");
        assert!(dir.starts_with(std::env::temp_dir()), "{}", dir.display());
        assert_eq!(setup.config.checkpoints_dir.as_ref(), Some(&dir));

        // A configured interval and directory are kept.
        let c = config(&[
            "execution.checkpointing.interval=250ms".into(),
            "state.checkpoints.dir=/tmp/w4-test".into(),
        ]);
        let setup = prepare(&c, &JobParams::default(), W4Mode::Debloat).unwrap();
        assert_eq!(
            setup.config.checkpoint_interval,
            Some(Duration::from_millis(250))
        );
        assert_eq!(setup.temporary_dir, None);
        // Mode none turns them off whatever was configured.
        let setup = prepare(&c, &JobParams::default(), W4Mode::None).unwrap();
        assert_eq!(setup.config.checkpoint_interval, None);
        assert_eq!(setup.temporary_dir, None);

        // An unaligned mode with at-least-once is the user's conflict.
        let mut sets = W4Mode::Unaligned.overrides();
        sets.push("execution.checkpointing.mode=AT_LEAST_ONCE".into());
        let err = Config::load(None, &sets).unwrap_err();
        assert!(matches!(err, ConfigError::Conflict { .. }), "{err:?}");
    }
}
