//! weir's settings: the [`Config`] a job runs with, every field with its
//! default, and the checks that involve more than one key.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::config::error::ConfigError;
use crate::config::observe::{LogFormat, LogLevel, PortRange};
use crate::config::value::{FINAL_ORIGIN, MODE_EXPECTED};
use crate::core::units::{format_duration, format_memory_size};
use crate::exchange::flush::{BufferTimeout, OperatorTimeouts};
use crate::exec::restart::{RestartStrategy, RestartStrategyConfig};
use crate::metrics::latency::{LatencyGranularity, DEFAULT_HISTORY_SIZE};
use crate::operators::timestamps::DEFAULT_AUTO_WATERMARK_INTERVAL;

/// The value of `execution.checkpointing.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CheckpointingMode {
    /// `EXACTLY_ONCE`: an operator with several inputs aligns barriers, so
    /// each record affects the state of exactly one checkpoint.
    #[default]
    ExactlyOnce,
    /// `AT_LEAST_ONCE`: barriers are not aligned; after a restore some
    /// records may be processed again.
    AtLeastOnce,
}

impl CheckpointingMode {
    /// Both modes.
    pub const ALL: [CheckpointingMode; 2] = [
        CheckpointingMode::ExactlyOnce,
        CheckpointingMode::AtLeastOnce,
    ];

    /// Flink's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointingMode::ExactlyOnce => "EXACTLY_ONCE",
            CheckpointingMode::AtLeastOnce => "AT_LEAST_ONCE",
        }
    }
}

impl fmt::Display for CheckpointingMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`CheckpointingMode`] from text that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown checkpointing mode {0:?}: expected {MODE_EXPECTED}")]
pub struct UnknownCheckpointingMode(pub String);

impl FromStr for CheckpointingMode {
    type Err = UnknownCheckpointingMode;

    /// Flink's names in any case, as Flink reads enum options.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CheckpointingMode::ALL
            .into_iter()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownCheckpointingMode(s.to_string()))
    }
}

/// weir's whole configuration. Build it with [`Config::load`]; `Default` is
/// the documented defaults of its keys ([`KEYS`](crate::config::keys::KEYS)).
///
/// Not `Eq`: two restart options are floating-point numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `parallelism.default`: workers and default operator parallelism; `None` = every usable core.
    pub parallelism: Option<usize>,
    /// `pipeline.max-parallelism`: number of key groups.
    pub max_parallelism: u32,
    /// `execution.buffer-timeout.interval` (and its older name
    /// `execution.buffer-timeout`): longest time a partly filled buffer
    /// waits; zero = flush every record. See
    /// [`Config::effective_buffer_timeout`].
    pub buffer_timeout: Duration,
    /// `execution.buffer-timeout.enabled`: false = only full buffers ship.
    pub buffer_timeout_enabled: bool,
    /// `execution.buffer-timeout.interval = auto`: each channel adapts its
    /// deadline to `buffer_timeout_latency_target`.
    pub buffer_timeout_auto: bool,
    /// `execution.buffer-timeout.latency-target`: what `auto` aims at.
    pub buffer_timeout_latency_target: Duration,
    /// `execution.buffer-timeout.operators`: per-operator timeouts.
    pub buffer_timeout_operators: OperatorTimeouts,
    /// `pipeline.auto-watermark-interval`: period of watermark emission; zero = only the final watermark.
    pub auto_watermark_interval: Duration,
    /// `execution.checkpointing.interval`: time between checkpoint starts; `None` = checkpointing off.
    pub checkpoint_interval: Option<Duration>,
    /// `execution.checkpointing.mode`: exactly-once (aligned barriers) or at-least-once.
    pub checkpointing_mode: CheckpointingMode,
    /// `execution.checkpointing.min-pause`: least time from one checkpoint's end to the next's start.
    pub checkpoint_min_pause: Duration,
    /// `execution.checkpointing.timeout`: a checkpoint still running after this is aborted.
    pub checkpoint_timeout: Duration,
    /// `execution.checkpointing.max-concurrent-checkpoints`: checkpoints in progress at once.
    pub max_concurrent_checkpoints: u32,
    /// `execution.checkpointing.tolerable-failed-checkpoints`: consecutive checkpoint failures tolerated.
    pub tolerable_failed_checkpoints: u32,
    /// `execution.checkpointing.unaligned.enabled`: barriers may overtake buffered records.
    pub unaligned_checkpoints: bool,
    /// `execution.checkpointing.incremental`: checkpoints write what changed.
    pub incremental_checkpoints: bool,
    /// `execution.checkpointing.aligned-checkpoint-timeout`: with unaligned checkpoints, how long
    /// a checkpoint stays aligned before it switches; zero = unaligned from the start.
    pub aligned_checkpoint_timeout: Duration,
    /// `state.checkpoints.dir`: where checkpoints are written; `None` = not configured.
    pub checkpoints_dir: Option<PathBuf>,
    /// `state.savepoints.dir`: where a stop (SIGTERM, SIGINT) writes its
    /// savepoint; `None` = the stop takes a checkpoint into
    /// `state.checkpoints.dir` instead.
    pub savepoints_dir: Option<PathBuf>,
    /// `state.checkpoints.num-retained`: completed checkpoints kept.
    pub checkpoints_num_retained: u32,
    /// `restart-strategy.*`: the chosen type and every type's options; see
    /// [`Config::effective_restart_strategy`] for the one in effect.
    pub restart_strategy: RestartStrategyConfig,
    /// `taskmanager.memory.segment-size`: bytes in one network buffer.
    pub segment_size: usize,
    /// `taskmanager.memory.min-segment-size`: the least size debloating shrinks a buffer to.
    pub min_segment_size: usize,
    /// `taskmanager.network.memory.buffers-per-channel`: in-flight buffers (credit) per channel.
    pub buffers_per_channel: u32,
    /// `taskmanager.network.memory.floating-buffers-per-gate`: extra buffers per worker pool.
    pub floating_buffers_per_gate: u32,
    /// `taskmanager.network.memory.buffer-debloat.enabled`: size in-flight data to throughput.
    pub debloat_enabled: bool,
    /// `taskmanager.network.memory.buffer-debloat.target`: time to consume the in-flight data.
    pub debloat_target: Duration,
    /// `taskmanager.network.memory.buffer-debloat.period`: time between recalculations.
    pub debloat_period: Duration,
    /// `taskmanager.network.memory.buffer-debloat.samples`: periods the throughput is averaged over.
    pub debloat_samples: u32,
    /// `taskmanager.network.memory.buffer-debloat.threshold-percentages`: least change announced.
    pub debloat_threshold_percentages: u32,
    /// `weir.worker.pin-cores`: pin each worker to a core.
    pub pin_cores: bool,
    /// `weir.worker.spin-before-park`: idle spin time before a worker parks.
    pub spin_before_park: Duration,
    /// `weir.progress.interval`: interval of stderr progress lines; zero = off.
    pub progress_interval: Duration,
    /// `table.exec.source.idle-timeout`: after how long without a row a
    /// SQL source subtask is idle for the watermark; zero = never.
    pub source_idle_timeout: Duration,
    /// `table.exec.state.ttl`: how long weir SQL's stateful operators (a
    /// regular join) keep a row after it was last written, in processing
    /// time; zero = forever.
    pub state_ttl: Duration,
    /// `metrics.latency.interval`: how often each source subtask emits a
    /// latency marker; zero = no latency tracking (Flink's default).
    pub latency_interval: Duration,
    /// `metrics.latency.history-size`: markers kept per latency histogram.
    pub latency_history_size: u32,
    /// `metrics.latency.granularity`: which markers share a histogram.
    pub latency_granularity: LatencyGranularity,
    /// `rest.port`: the REST endpoint's port; `None` = unset (`weir run`
    /// and `weir sql` then serve on 8081, `weir bench` not at all); `0`
    /// = a free port.
    pub rest_port: Option<u16>,
    /// `rest.bind-address`: the address the REST endpoint binds.
    pub rest_bind_address: String,
    /// `rest.auth-token`: the bearer token every REST request must carry;
    /// required when the endpoint binds beyond loopback.
    pub rest_auth_token: Option<String>,
    /// `metrics.reporter.prom.port`: the port(s) of the Prometheus
    /// endpoint, tried in order; `None` = no endpoint.
    pub prom_port: Option<PortRange>,
    /// `log.level`: which log events the `weir` command prints.
    pub log_level: LogLevel,
    /// `log.format`: how it prints them.
    pub log_format: LogFormat,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            parallelism: None,
            max_parallelism: 128,
            buffer_timeout: Duration::from_millis(100),
            buffer_timeout_enabled: true,
            buffer_timeout_auto: false,
            buffer_timeout_latency_target: Duration::from_millis(1),
            buffer_timeout_operators: OperatorTimeouts::default(),
            auto_watermark_interval: DEFAULT_AUTO_WATERMARK_INTERVAL,
            checkpoint_interval: None,
            checkpointing_mode: CheckpointingMode::ExactlyOnce,
            checkpoint_min_pause: Duration::ZERO,
            checkpoint_timeout: Duration::from_secs(600),
            max_concurrent_checkpoints: 1,
            tolerable_failed_checkpoints: 0,
            unaligned_checkpoints: false,
            incremental_checkpoints: false,
            aligned_checkpoint_timeout: Duration::ZERO,
            checkpoints_dir: None,
            savepoints_dir: None,
            checkpoints_num_retained: 1,
            restart_strategy: RestartStrategyConfig::default(),
            segment_size: 32 * 1024,
            min_segment_size: 256,
            buffers_per_channel: 4,
            floating_buffers_per_gate: 8,
            debloat_enabled: false,
            debloat_target: Duration::from_millis(20),
            debloat_period: Duration::from_millis(50),
            debloat_samples: 20,
            debloat_threshold_percentages: 25,
            pin_cores: true,
            spin_before_park: Duration::from_micros(50),
            progress_interval: Duration::from_secs(1),
            state_ttl: Duration::ZERO,
            latency_interval: Duration::ZERO,
            latency_history_size: DEFAULT_HISTORY_SIZE as u32,
            latency_granularity: LatencyGranularity::Operator,
            rest_port: None,
            rest_bind_address: "127.0.0.1".into(),
            rest_auth_token: None,
            prom_port: None,
            log_level: LogLevel::default(),
            log_format: LogFormat::Plain,
            source_idle_timeout: Duration::ZERO,
        }
    }
}

impl Config {
    /// The job-wide buffer timeout: the interval (or `auto`), unless
    /// `execution.buffer-timeout.enabled` is false.
    pub fn effective_buffer_timeout(&self) -> BufferTimeout {
        if !self.buffer_timeout_enabled {
            BufferTimeout::Disabled
        } else if self.buffer_timeout_auto {
            BufferTimeout::Auto {
                target: self.buffer_timeout_latency_target,
            }
        } else {
            BufferTimeout::Interval(self.buffer_timeout)
        }
    }

    /// Whether checkpointing is on (`execution.checkpointing.interval` is set).
    pub fn checkpointing_enabled(&self) -> bool {
        self.checkpoint_interval.is_some()
    }

    /// The restart strategy in effect: `restart-strategy.type` with its
    /// options, or, when the type is unset, Flink's default for this
    /// configuration (`none` without checkpointing, `exponential-delay` with it).
    pub fn effective_restart_strategy(&self) -> RestartStrategy {
        self.restart_strategy.resolve(self.checkpointing_enabled())
    }

    /// Checks that involve more than one key. Called after every source is
    /// applied, because a single `--set` may be fixed by a later one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.parallelism {
            // Flink rejects this too: every subtask needs at least one key group.
            Some(p) if p > self.max_parallelism as usize => {
                return Err(ConfigError::InvalidValue {
                    key: "parallelism.default".to_string(),
                    value: p.to_string(),
                    expected: format!(
                        "an integer from 1 to pipeline.max-parallelism ({})",
                        self.max_parallelism
                    ),
                    // No single source is to blame when two keys disagree.
                    origin: FINAL_ORIGIN.to_string(),
                });
            }
            _ => {}
        }
        // Flink would fall back to keeping checkpoints in the JobManager's
        // memory; weir has no such place, so a directory is required.
        if let (Some(interval), None) = (self.checkpoint_interval, &self.checkpoints_dir) {
            return Err(ConfigError::Conflict {
                keys: vec!["execution.checkpointing.interval", "state.checkpoints.dir"],
                message: format!(
                    "execution.checkpointing.interval is set ({}) but state.checkpoints.dir is \
                     not: checkpoints need a directory, so set state.checkpoints.dir or unset \
                     execution.checkpointing.interval",
                    format_duration(interval)
                ),
            });
        }
        // Flink logs a warning and quietly takes aligned checkpoints instead;
        // weir refuses what it would not do.
        if self.unaligned_checkpoints && self.checkpointing_mode == CheckpointingMode::AtLeastOnce {
            return Err(ConfigError::Conflict {
                keys: vec![
                    "execution.checkpointing.unaligned.enabled",
                    "execution.checkpointing.mode",
                ],
                message: "execution.checkpointing.unaligned.enabled is true but \
                          execution.checkpointing.mode is AT_LEAST_ONCE: unaligned checkpoints \
                          exist only in EXACTLY_ONCE mode (AT_LEAST_ONCE never aligns barriers, \
                          so there is nothing to unalign); set the mode to EXACTLY_ONCE or \
                          unaligned.enabled to false"
                    .to_string(),
            });
        }
        // Flink's rule too: an unaligned barrier persists the records it
        // overtakes, which is defined for one checkpoint in flight at a time.
        if self.unaligned_checkpoints && self.max_concurrent_checkpoints > 1 {
            return Err(ConfigError::Conflict {
                keys: vec![
                    "execution.checkpointing.unaligned.enabled",
                    "execution.checkpointing.max-concurrent-checkpoints",
                ],
                message: format!(
                    "execution.checkpointing.unaligned.enabled is true but \
                     execution.checkpointing.max-concurrent-checkpoints is {}: unaligned \
                     checkpoints allow one checkpoint in progress at a time; set \
                     max-concurrent-checkpoints to 1 or unaligned.enabled to false",
                    self.max_concurrent_checkpoints
                ),
            });
        }
        // Only with debloating on: a small segment-size alone must not fail
        // because of a default the user never relied on.
        if self.debloat_enabled && self.min_segment_size > self.segment_size {
            return Err(ConfigError::Conflict {
                keys: vec![
                    "taskmanager.network.memory.buffer-debloat.enabled",
                    "taskmanager.memory.min-segment-size",
                    "taskmanager.memory.segment-size",
                ],
                message: format!(
                    "taskmanager.network.memory.buffer-debloat.enabled is true and \
                     taskmanager.memory.min-segment-size ({}) is above \
                     taskmanager.memory.segment-size ({}): the least size of a debloated buffer \
                     cannot exceed its capacity; lower min-segment-size or raise segment-size",
                    format_memory_size(self.min_segment_size as u64),
                    format_memory_size(self.segment_size as u64)
                ),
            });
        }
        // Flink checks this only when exponential-delay is in effect; weir
        // checks it always, so a file is valid or not whatever the type.
        let ed = &self.restart_strategy.exponential_delay;
        if ed.initial_backoff > ed.max_backoff {
            return Err(ConfigError::Conflict {
                keys: vec![
                    "restart-strategy.exponential-delay.initial-backoff",
                    "restart-strategy.exponential-delay.max-backoff",
                ],
                message: format!(
                    "restart-strategy.exponential-delay.initial-backoff ({}) is above \
                     restart-strategy.exponential-delay.max-backoff ({}); the first wait \
                     cannot be longer than the longest",
                    format_duration(ed.initial_backoff),
                    format_duration(ed.max_backoff)
                ),
            });
        }
        Ok(())
    }
}
