//! weir's configuration: the keys, their defaults, and how a TOML file and
//! `--set key=value` overrides become one validated [`Config`].
//!
//! This module owns the key names (Flink's where Flink has the concept), the
//! value formats (Flink's durations and memory sizes), the error messages a
//! user sees for a bad file, and [`KEYS`], the one list of keys from which
//! `configs/README.md` is checked so the documentation cannot drift.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// Documentation of one configuration key: its name, its default rendered in
/// config syntax (what [`Config::get`] returns for a default config), and
/// what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// The key's full dotted name, e.g. `execution.buffer-timeout`.
    pub key: &'static str,
    /// The default value, exactly as [`Config::get`] renders it.
    pub default: &'static str,
    /// One line saying what the key controls.
    pub description: &'static str,
}

/// Every configuration key, in documentation order. This is the single source
/// of truth: `configs/README.md` is tested against it, and [`Config::to_toml`]
/// writes keys in this order.
#[rustfmt::skip] // one key per entry, like the table in configs/README.md
pub const KEYS: &[KeyDoc] = &[
    KeyDoc { key: "job.name", default: "quickstart",
        description: "which built-in job `weir run` runs: quickstart, w1, w2 or w3" },
    KeyDoc { key: "job.records", default: "unset",
        description: "N: records the bounded sources emit in total (at least 1); unset = the job's default" },
    KeyDoc { key: "job.keys", default: "unset",
        description: "K: distinct keys (at least 1); unset = the job's default" },
    KeyDoc { key: "job.rate", default: "unset",
        description: "source pacing in records/s in total over all source subtasks (at least 1); unset = unpaced" },
    KeyDoc { key: "job.warmup", default: "5s",
        description: "W3: warm-up time that is run but not recorded" },
    KeyDoc { key: "job.duration", default: "20s",
        description: "W3: recorded run time; W4: how long the source runs (`weir bench w4` runs 60s unless `--duration` or `--set job.duration` says otherwise)" },
    KeyDoc { key: "parallelism.default", default: "unset",
        description: "number of workers (one pinned per core) and every operator's default parallelism (at least 1); unset = every core the process may use" },
    KeyDoc { key: "pipeline.max-parallelism", default: "128",
        description: "number of key groups, 1 to 32768; must not be below `parallelism.default`" },
    KeyDoc { key: "execution.buffer-timeout", default: "100ms",
        description: "a partly filled output buffer is sent at most this long after its first record; `0ms` sends after every record" },
    KeyDoc { key: "pipeline.auto-watermark-interval", default: "200ms",
        description: "how often sources with a watermark strategy emit a watermark (and check idleness); `0ms` emits none but the final one; otherwise at least 1ms" },
    KeyDoc { key: "execution.checkpointing.interval", default: "unset",
        description: "time between the starts of two checkpoints, at least 10ms; unset = checkpointing off. Needs `state.checkpoints.dir`" },
    KeyDoc { key: "execution.checkpointing.mode", default: "EXACTLY_ONCE",
        description: "`EXACTLY_ONCE` (barriers are aligned) or `AT_LEAST_ONCE` (they are not), in any case" },
    KeyDoc { key: "execution.checkpointing.min-pause", default: "0ms",
        description: "least time from the end of one checkpoint to the start of the next" },
    KeyDoc { key: "execution.checkpointing.timeout", default: "10min",
        description: "a checkpoint not complete after this long is aborted and counts as failed; at least 10ms" },
    KeyDoc { key: "execution.checkpointing.max-concurrent-checkpoints", default: "1",
        description: "checkpoints that may be in progress at once, at least 1" },
    KeyDoc { key: "execution.checkpointing.tolerable-failed-checkpoints", default: "0",
        description: "consecutive failed checkpoints tolerated; one more fails the job (which then restarts as `restart-strategy.type` says)" },
    KeyDoc { key: "execution.checkpointing.unaligned.enabled", default: "false",
        description: "unaligned checkpoints: a barrier overtakes the buffered records, which are persisted with the checkpoint; only with `EXACTLY_ONCE` and `max-concurrent-checkpoints` 1" },
    KeyDoc { key: "execution.checkpointing.aligned-checkpoint-timeout", default: "0ms",
        description: "with unaligned checkpoints on: `0ms` = every checkpoint is unaligned from the start; more = start aligned and switch to unaligned when alignment takes longer. No effect while `unaligned.enabled` is false" },
    KeyDoc { key: "state.checkpoints.dir", default: "unset",
        description: "local directory (a path or a `file://` URI) that checkpoints are written to; required when checkpointing is on" },
    KeyDoc { key: "state.checkpoints.num-retained", default: "1",
        description: "completed checkpoints kept, at least 1" },
    KeyDoc { key: "restart-strategy.type", default: "unset",
        description: "`none` (also `off`, `disable`), `fixed-delay`, `failure-rate` or `exponential-delay` (also without the dash); unset = `none` without checkpointing, `exponential-delay` with it" },
    KeyDoc { key: "restart-strategy.fixed-delay.attempts", default: "1",
        description: "fixed-delay: restarts in the job's lifetime, 0 to 2147483647; the failure after the last one fails the job" },
    KeyDoc { key: "restart-strategy.fixed-delay.delay", default: "1s",
        description: "fixed-delay: wait before each restart" },
    KeyDoc { key: "restart-strategy.failure-rate.max-failures-per-interval", default: "1",
        description: "failure-rate: failures tolerated within one interval, at least 1; one more fails the job" },
    KeyDoc { key: "restart-strategy.failure-rate.failure-rate-interval", default: "1min",
        description: "failure-rate: the sliding interval failures are counted in, at least 1ms" },
    KeyDoc { key: "restart-strategy.failure-rate.delay", default: "1s",
        description: "failure-rate: wait before each restart" },
    KeyDoc { key: "restart-strategy.exponential-delay.initial-backoff", default: "1s",
        description: "exponential-delay: wait before the first restart after a reset, at least 1ms and at most `max-backoff`" },
    KeyDoc { key: "restart-strategy.exponential-delay.max-backoff", default: "1min",
        description: "exponential-delay: the longest wait, at least 1ms" },
    KeyDoc { key: "restart-strategy.exponential-delay.backoff-multiplier", default: "1.5",
        description: "exponential-delay: the wait grows by this factor per restart; above 1" },
    KeyDoc { key: "restart-strategy.exponential-delay.reset-backoff-threshold", default: "1h",
        description: "exponential-delay: a run this long before its failure resets the wait and the attempt count; at least 1ms" },
    KeyDoc { key: "restart-strategy.exponential-delay.jitter-factor", default: "0.1",
        description: "exponential-delay: each wait moves by a random amount of up to this fraction of itself, either way; 0 to 1" },
    KeyDoc { key: "restart-strategy.exponential-delay.attempts-before-reset-backoff", default: "infinite",
        description: "exponential-delay: restarts allowed between resets, at least 1, or `infinite`" },
    KeyDoc { key: "taskmanager.memory.segment-size", default: "32kb",
        description: "capacity of one network buffer, 64b to 16mb" },
    KeyDoc { key: "taskmanager.memory.min-segment-size", default: "256b",
        description: "least size buffer debloating may shrink a buffer to, 64b to 16mb and at most `segment-size`" },
    KeyDoc { key: "taskmanager.network.memory.buffers-per-channel", default: "4",
        description: "buffers that may be in flight on one channel (the ring's credit), 1 to 1024" },
    KeyDoc { key: "taskmanager.network.memory.floating-buffers-per-gate", default: "8",
        description: "extra buffers in each worker's pool beyond those per channel, 0 to 65536" },
    KeyDoc { key: "taskmanager.network.memory.buffer-debloat.enabled", default: "false",
        description: "buffer debloating: each input gate sizes its in-flight data (buffer size and credit) to its measured throughput times `buffer-debloat.target`" },
    KeyDoc { key: "taskmanager.network.memory.buffer-debloat.target", default: "20ms",
        description: "time in which a gate should be able to consume its in-flight data, at least 1ms (Flink: 1s; see configs/README.md)" },
    KeyDoc { key: "taskmanager.network.memory.buffer-debloat.period", default: "50ms",
        description: "how often a gate measures its throughput and recalculates, at least 1ms (Flink: 200ms)" },
    KeyDoc { key: "taskmanager.network.memory.buffer-debloat.samples", default: "20",
        description: "periods the throughput is averaged over (an exponential moving average), 1 to 2147483647" },
    KeyDoc { key: "taskmanager.network.memory.buffer-debloat.threshold-percentages", default: "25",
        description: "a new buffer size is announced only when it differs from the last announced one by more than this percentage (or reaches a bound), 0 to 100" },
    KeyDoc { key: "weir.worker.pin-cores", default: "true",
        description: "pin each worker thread to its own core" },
    KeyDoc { key: "weir.worker.spin-before-park", default: "50us",
        description: "how long an idle worker spins before it parks" },
    KeyDoc { key: "weir.progress.interval", default: "1s",
        description: "interval of progress lines on stderr; `0ms` turns them off" },
];

/// The built-in jobs `weir run` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JobName {
    /// A small job that shows weir working end to end.
    #[default]
    Quickstart,
    /// Workload W1.
    W1,
    /// Workload W2 (event-time tumbling window).
    W2,
    /// Workload W3 (timed: warm-up, then a recorded run).
    W3,
}

impl JobName {
    /// Every job, in the order error messages list them.
    pub const ALL: [JobName; 4] = [JobName::Quickstart, JobName::W1, JobName::W2, JobName::W3];

    /// The job's name as written in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            JobName::Quickstart => "quickstart",
            JobName::W1 => "w1",
            JobName::W2 => "w2",
            JobName::W3 => "w3",
        }
    }
}

impl fmt::Display for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`JobName`] from text that names no job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job {0:?}: expected {JOB_EXPECTED}")]
pub struct UnknownJobName(pub String);

impl FromStr for JobName {
    type Err = UnknownJobName;

    /// Exact lowercase names only, so a file means the same on every system.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobName::ALL
            .into_iter()
            .find(|job| job.as_str() == s)
            .ok_or_else(|| UnknownJobName(s.to_string()))
    }
}

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

/// Why a configuration could not be loaded. Every variant names what the user
/// has to fix; the CLI maps all of them to exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", .path.display())]
    Io {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not valid TOML (or defines one key twice).
    #[error("invalid TOML in {origin}: {message}")]
    Parse {
        /// The file name.
        origin: String,
        /// The TOML parser's message, with line and column.
        message: String,
    },
    /// A key that weir does not know.
    #[error(
        "unknown config key `{key}` in {origin}; {}",
        did_you_mean(.suggestion)
    )]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The file name, or `--set`.
        origin: String,
        /// The closest known key, when one is close enough to be a typo.
        suggestion: Option<&'static str>,
    },
    /// A known key with a value that is not of its form or out of its range.
    #[error("invalid value {value:?} for key {key} in {origin}: expected {expected}")]
    InvalidValue {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// The accepted form, e.g. "a duration such as 100ms, 1s or 2min".
        expected: String,
        /// The file name, or `--set`.
        origin: String,
    },
    /// Keys whose values are each valid but do not fit together. The
    /// message names every key involved and their values.
    #[error("inconsistent configuration: {message}")]
    Conflict {
        /// The keys involved.
        keys: Vec<&'static str>,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A `--set` argument without `=`.
    #[error(
        "malformed override {text:?}: expected key=value, e.g. --set execution.buffer-timeout=10ms"
    )]
    MalformedOverride {
        /// The argument as given.
        text: String,
    },
}

fn did_you_mean(suggestion: &Option<&'static str>) -> String {
    match suggestion {
        Some(key) => format!("did you mean `{key}`? All keys are listed in configs/README.md"),
        None => "all keys are listed in configs/README.md".to_string(),
    }
}

/// Origin of values given with `--set`.
const OVERRIDE_ORIGIN: &str = "--set";
const JOB_EXPECTED: &str = "one of quickstart, w1, w2, w3";
const DURATION_EXPECTED: &str = "a duration such as 100ms, 1s or 2min (a non-negative integer \
     and a unit: ns, us, ms, s, min, h or d; a bare integer means milliseconds)";
const SIZE_EXPECTED: &str = "a memory size from 64b to 16mb such as 32kb (an integer and a \
     unit: b, kb, mb or gb; a bare integer means bytes)";
const BOOL_EXPECTED: &str = "true or false";
const POSITIVE_OR_UNSET: &str = "an integer of at least 1, or unset";
const MODE_EXPECTED: &str = "EXACTLY_ONCE or AT_LEAST_ONCE (in any case)";
const DIR_EXPECTED: &str = "a local directory: a path such as /var/lib/weir/checkpoints or a \
     file:// URI (weir writes checkpoints to the local file system), or unset";
/// Flink's upper bound of its integer options (a Java `int`).
const FLINK_INT_MAX: u64 = i32::MAX as u64;
/// Flink's least checkpoint interval and timeout (`MINIMAL_CHECKPOINT_TIME`).
const MIN_CHECKPOINT_TIME: Duration = Duration::from_millis(10);
/// The least value of durations that must be positive: Flink keeps restart
/// durations in whole milliseconds and requires these to be at least 1; the
/// buffer debloater's target and period are held to the same.
const ONE_MS: Duration = Duration::from_millis(1);
/// Origin of checks that involve several keys: no single source is to blame.
const FINAL_ORIGIN: &str = "the final configuration";

/// weir's whole configuration. Build it with [`Config::load`]; `Default` is
/// the documented defaults of [`KEYS`].
///
/// Not `Eq`: two restart options are floating-point numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `job.name`: which built-in job `weir run` runs.
    pub job: JobName,
    /// `job.records`: records the bounded sources emit in total; `None` = the job's default.
    pub records: Option<u64>,
    /// `job.keys`: distinct keys; `None` = the job's default.
    pub keys: Option<u64>,
    /// `job.rate`: records/s over all source subtasks; `None` = unpaced.
    pub rate: Option<u64>,
    /// `job.warmup`: W3's warm-up, not recorded.
    pub warmup: Duration,
    /// `job.duration`: W3's recorded run time; W4's source run time.
    pub duration: Duration,
    /// `parallelism.default`: workers and default operator parallelism; `None` = every usable core.
    pub parallelism: Option<usize>,
    /// `pipeline.max-parallelism`: number of key groups.
    pub max_parallelism: u32,
    /// `execution.buffer-timeout`: longest time a partly filled buffer waits; zero = flush every record.
    pub buffer_timeout: Duration,
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
    /// `execution.checkpointing.aligned-checkpoint-timeout`: with unaligned checkpoints, how long
    /// a checkpoint stays aligned before it switches; zero = unaligned from the start.
    pub aligned_checkpoint_timeout: Duration,
    /// `state.checkpoints.dir`: where checkpoints are written; `None` = not configured.
    pub checkpoints_dir: Option<PathBuf>,
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            job: JobName::Quickstart,
            records: None,
            keys: None,
            rate: None,
            warmup: Duration::from_secs(5),
            duration: Duration::from_secs(20),
            parallelism: None,
            max_parallelism: 128,
            buffer_timeout: Duration::from_millis(100),
            auto_watermark_interval: crate::operators::timestamps::DEFAULT_AUTO_WATERMARK_INTERVAL,
            checkpoint_interval: None,
            checkpointing_mode: CheckpointingMode::ExactlyOnce,
            checkpoint_min_pause: Duration::ZERO,
            checkpoint_timeout: Duration::from_secs(600),
            max_concurrent_checkpoints: 1,
            tolerable_failed_checkpoints: 0,
            unaligned_checkpoints: false,
            aligned_checkpoint_timeout: Duration::ZERO,
            checkpoints_dir: None,
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
        }
    }
}

/// One value being applied to one key. Values are TOML values because TOML
/// keeps integers and booleans typed; `--set` text arrives as a TOML string.
struct Setting<'a> {
    key: &'a str,
    value: &'a toml::Value,
    origin: &'a str,
}

impl Setting<'_> {
    fn check<T>(&self, parsed: Option<T>, expected: &str) -> Result<T, ConfigError> {
        parsed.ok_or_else(|| ConfigError::InvalidValue {
            key: self.key.to_string(),
            value: match self.value {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            expected: expected.to_string(),
            origin: self.origin.to_string(),
        })
    }

    fn text(&self) -> Option<&str> {
        self.value.as_str().map(str::trim)
    }

    /// A number: a non-negative TOML integer through `from_int`, or text
    /// through `parse`; floats, booleans and arrays are never numbers.
    fn number<T>(&self, from_int: fn(u64) -> T, parse: fn(&str) -> Option<T>) -> Option<T> {
        match self.value {
            toml::Value::Integer(i) => u64::try_from(*i).ok().map(from_int),
            toml::Value::String(s) => parse(s),
            _ => None,
        }
    }

    fn boolean(&self) -> Option<bool> {
        match (self.value, self.text()) {
            (toml::Value::Boolean(b), _) => Some(*b),
            (_, Some(t)) if t.eq_ignore_ascii_case("true") => Some(true),
            (_, Some(t)) if t.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }

    fn int_in(&self, min: u64, max: u64) -> Result<u64, ConfigError> {
        let parsed = self.number(|n| n, parse_uint);
        let parsed = parsed.filter(|n| (min..=max).contains(n));
        self.check(parsed, &format!("an integer from {min} to {max}"))
    }

    /// An optional count: "unset" clears it, otherwise an integer of at least 1.
    fn positive_or_unset(&self) -> Result<Option<u64>, ConfigError> {
        if self.is_unset() {
            return Ok(None);
        }
        let parsed = self.number(|n| n, parse_uint).filter(|n| *n >= 1);
        self.check(parsed, POSITIVE_OR_UNSET).map(Some)
    }

    fn duration(&self) -> Result<Duration, ConfigError> {
        // A bare TOML integer means milliseconds, as in Flink.
        let parsed = self.number(Duration::from_millis, parse_duration);
        self.check(parsed, DURATION_EXPECTED)
    }

    fn duration_at_least(&self, min: Duration) -> Result<Duration, ConfigError> {
        let parsed = self.number(Duration::from_millis, parse_duration);
        let expected = format!("{DURATION_EXPECTED}, of at least {}", format_duration(min));
        self.check(parsed.filter(|d| *d >= min), &expected)
    }

    fn is_unset(&self) -> bool {
        self.text().is_some_and(|t| t.eq_ignore_ascii_case("unset"))
    }

    /// A finite number (TOML float or integer, or text) that `ok` accepts.
    fn float(&self, ok: fn(f64) -> bool, expected: &str) -> Result<f64, ConfigError> {
        let parsed = match self.value {
            toml::Value::Float(f) => Some(*f),
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        self.check(parsed.filter(|f| f.is_finite() && ok(*f)), expected)
    }

    /// `unset`, a path, or a `file:` URI of a local path.
    fn directory(&self) -> Result<Option<PathBuf>, ConfigError> {
        if self.is_unset() {
            return Ok(None);
        }
        let path = self.text().and_then(|t| {
            let local = match t.split_once(':') {
                // `file:///tmp/x` and Flink's short `file:/tmp/x`.
                Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => {
                    let rest = rest.strip_prefix("//").unwrap_or(rest);
                    rest.starts_with('/').then_some(rest)?
                }
                // Any other URI scheme names storage weir cannot write to.
                Some((scheme, rest))
                    if rest.starts_with("//")
                        && scheme
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
                {
                    return None
                }
                _ => t,
            };
            (!local.is_empty()).then(|| PathBuf::from(local))
        });
        self.check(path, DIR_EXPECTED).map(Some)
    }
}

impl Config {
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

    /// Parses a whole TOML config over the defaults and validates the result.
    /// `origin` names the text's source (usually the file path) in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        config.apply_toml(text, origin)?;
        config.validate()?;
        Ok(config)
    }

    /// Builds the configuration weir runs with: the defaults, then the file at
    /// `path` (if any), then each `key=value` override in order, so later
    /// overrides win. Checks across keys run once, at the end, so the order of
    /// overrides never matters for them.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(path) = path {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            config.apply_toml(&text, &path.display().to_string())?;
        }
        for text in overrides {
            let (key, value) = text
                .split_once('=')
                .filter(|(key, _)| !key.trim().is_empty())
                .ok_or_else(|| ConfigError::MalformedOverride { text: text.clone() })?;
            config.set(key.trim(), value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Applies one `--set` override. `value` is the raw text after `=`;
    /// surrounding whitespace and one pair of double quotes are dropped, so a
    /// value copied from a TOML file works too. Optional keys accept `unset`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        let value = toml::Value::String(value.to_string());
        self.apply(key, &value, OVERRIDE_ORIGIN)
    }

    /// The current value of `key` in config syntax (what [`Config::set`]
    /// accepts), `"unset"` for an unset optional, `None` for an unknown key.
    pub fn get(&self, key: &str) -> Option<String> {
        let dur = format_duration;
        let opt = |n: Option<u64>| n.map_or_else(|| "unset".to_string(), |n| n.to_string());
        let rs = &self.restart_strategy;
        let ed = &rs.exponential_delay;
        Some(match key {
            "job.name" => self.job.to_string(),
            "job.records" => opt(self.records),
            "job.keys" => opt(self.keys),
            "job.rate" => opt(self.rate),
            "job.warmup" => dur(self.warmup),
            "job.duration" => dur(self.duration),
            "parallelism.default" => opt(self.parallelism.map(|p| p as u64)),
            "pipeline.max-parallelism" => self.max_parallelism.to_string(),
            "execution.buffer-timeout" => dur(self.buffer_timeout),
            "pipeline.auto-watermark-interval" => dur(self.auto_watermark_interval),
            "execution.checkpointing.interval" => self
                .checkpoint_interval
                .map_or_else(|| "unset".to_string(), dur),
            "execution.checkpointing.mode" => self.checkpointing_mode.to_string(),
            "execution.checkpointing.min-pause" => dur(self.checkpoint_min_pause),
            "execution.checkpointing.timeout" => dur(self.checkpoint_timeout),
            "execution.checkpointing.max-concurrent-checkpoints" => {
                self.max_concurrent_checkpoints.to_string()
            }
            "execution.checkpointing.tolerable-failed-checkpoints" => {
                self.tolerable_failed_checkpoints.to_string()
            }
            "execution.checkpointing.unaligned.enabled" => self.unaligned_checkpoints.to_string(),
            "execution.checkpointing.aligned-checkpoint-timeout" => {
                dur(self.aligned_checkpoint_timeout)
            }
            "state.checkpoints.dir" => self
                .checkpoints_dir
                .as_ref()
                .map_or_else(|| "unset".to_string(), |p| p.display().to_string()),
            "state.checkpoints.num-retained" => self.checkpoints_num_retained.to_string(),
            "restart-strategy.type" => rs
                .kind
                .map_or_else(|| "unset".to_string(), |t| t.to_string()),
            "restart-strategy.fixed-delay.attempts" => rs.fixed_delay.attempts.to_string(),
            "restart-strategy.fixed-delay.delay" => dur(rs.fixed_delay.delay),
            "restart-strategy.failure-rate.max-failures-per-interval" => {
                rs.failure_rate.max_failures_per_interval.to_string()
            }
            "restart-strategy.failure-rate.failure-rate-interval" => {
                dur(rs.failure_rate.failure_rate_interval)
            }
            "restart-strategy.failure-rate.delay" => dur(rs.failure_rate.delay),
            "restart-strategy.exponential-delay.initial-backoff" => dur(ed.initial_backoff),
            "restart-strategy.exponential-delay.max-backoff" => dur(ed.max_backoff),
            "restart-strategy.exponential-delay.backoff-multiplier" => {
                ed.backoff_multiplier.to_string()
            }
            "restart-strategy.exponential-delay.reset-backoff-threshold" => {
                dur(ed.reset_backoff_threshold)
            }
            "restart-strategy.exponential-delay.jitter-factor" => ed.jitter_factor.to_string(),
            "restart-strategy.exponential-delay.attempts-before-reset-backoff" => {
                format_attempts(ed.attempts_before_reset_backoff)
            }
            "taskmanager.memory.segment-size" => format_memory_size(self.segment_size as u64),
            "taskmanager.memory.min-segment-size" => {
                format_memory_size(self.min_segment_size as u64)
            }
            "taskmanager.network.memory.buffers-per-channel" => {
                self.buffers_per_channel.to_string()
            }
            "taskmanager.network.memory.floating-buffers-per-gate" => {
                self.floating_buffers_per_gate.to_string()
            }
            "taskmanager.network.memory.buffer-debloat.enabled" => self.debloat_enabled.to_string(),
            "taskmanager.network.memory.buffer-debloat.target" => dur(self.debloat_target),
            "taskmanager.network.memory.buffer-debloat.period" => dur(self.debloat_period),
            "taskmanager.network.memory.buffer-debloat.samples" => self.debloat_samples.to_string(),
            "taskmanager.network.memory.buffer-debloat.threshold-percentages" => {
                self.debloat_threshold_percentages.to_string()
            }
            "weir.worker.pin-cores" => self.pin_cores.to_string(),
            "weir.worker.spin-before-park" => dur(self.spin_before_park),
            "weir.progress.interval" => dur(self.progress_interval),
            _ => return None,
        })
    }

    /// Every key with its current value as a TOML file that
    /// [`Config::from_toml_str`] reads back to an equal `Config`. Unset
    /// optional keys are written as comments.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# weir configuration: every key with its value. Keys and defaults: configs/README.md\n",
        );
        for doc in KEYS {
            out.push_str(&format!(
                "\n# {} (default: {})\n",
                doc.description, doc.default
            ));
            let value = self.get(doc.key).unwrap_or_default();
            // Numbers and booleans stay bare so the file reads like a hand-written
            // one; durations, sizes, names and paths are TOML strings (escaped,
            // as a path may hold quotes or backslashes).
            let number = value.bytes().any(|b| b.is_ascii_digit())
                && value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            // A path is text even when it looks like a number.
            let text_only = doc.key == "state.checkpoints.dir";
            let bare = !text_only && (value == "true" || value == "false" || number);
            out.push_str(&match value.as_str() {
                "unset" => format!("# {} is unset\n", doc.key),
                _ if bare => format!("{} = {value}\n", doc.key),
                _ => format!("{} = {}\n", doc.key, toml::Value::String(value)),
            });
        }
        out
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

    /// Parses TOML and applies each leaf, without the checks across keys.
    fn apply_toml(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                origin: origin.to_string(),
                message: e.to_string().trim_end().to_string(),
            })?;
        let mut leaves = Vec::new();
        flatten("", &table, &mut leaves);
        // `"job.name" = ..` and `job.name = ..` are different TOML keys, so TOML
        // itself cannot see that both set the same weir key.
        let mut seen = BTreeSet::new();
        for (key, _) in &leaves {
            if !seen.insert(key.as_str()) {
                return Err(ConfigError::Parse {
                    origin: origin.to_string(),
                    message: format!("key {key} is defined more than once"),
                });
            }
        }
        for (key, value) in &leaves {
            self.apply(key, value, origin)?;
        }
        Ok(())
    }

    /// Sets one key from one value. The key list here must match [`KEYS`];
    /// a test checks that it does.
    fn apply(&mut self, key: &str, value: &toml::Value, origin: &str) -> Result<(), ConfigError> {
        let s = Setting { key, value, origin };
        match key {
            "job.name" => {
                let job = s.text().and_then(|t| t.parse().ok());
                self.job = s.check(job, JOB_EXPECTED)?;
            }
            "job.records" => self.records = s.positive_or_unset()?,
            "job.keys" => self.keys = s.positive_or_unset()?,
            "job.rate" => self.rate = s.positive_or_unset()?,
            "job.warmup" => self.warmup = s.duration()?,
            "job.duration" => self.duration = s.duration()?,
            "parallelism.default" => {
                let p = s.positive_or_unset()?.map(usize::try_from).transpose();
                self.parallelism = s.check(p.ok(), POSITIVE_OR_UNSET)?;
            }
            "pipeline.max-parallelism" => self.max_parallelism = s.int_in(1, 32768)? as u32,
            "execution.buffer-timeout" => self.buffer_timeout = s.duration()?,
            "pipeline.auto-watermark-interval" => {
                let d = s.duration()?;
                let ok = d.is_zero() || d >= ONE_MS;
                let expected = format!("{DURATION_EXPECTED}: 0ms (off) or at least 1ms");
                self.auto_watermark_interval = s.check(ok.then_some(d), &expected)?;
            }
            "execution.checkpointing.interval" => {
                self.checkpoint_interval = if s.is_unset() {
                    None
                } else {
                    Some(s.duration_at_least(MIN_CHECKPOINT_TIME)?)
                };
            }
            "execution.checkpointing.mode" => {
                let mode = s.text().and_then(|t| t.parse().ok());
                self.checkpointing_mode = s.check(mode, MODE_EXPECTED)?;
            }
            "execution.checkpointing.min-pause" => self.checkpoint_min_pause = s.duration()?,
            "execution.checkpointing.timeout" => {
                self.checkpoint_timeout = s.duration_at_least(MIN_CHECKPOINT_TIME)?;
            }
            "execution.checkpointing.max-concurrent-checkpoints" => {
                self.max_concurrent_checkpoints = s.int_in(1, FLINK_INT_MAX)? as u32;
            }
            "execution.checkpointing.tolerable-failed-checkpoints" => {
                self.tolerable_failed_checkpoints = s.int_in(0, FLINK_INT_MAX)? as u32;
            }
            "execution.checkpointing.unaligned.enabled" => {
                self.unaligned_checkpoints = s.check(s.boolean(), BOOL_EXPECTED)?;
            }
            "execution.checkpointing.aligned-checkpoint-timeout" => {
                self.aligned_checkpoint_timeout = s.duration()?;
            }
            "state.checkpoints.dir" => self.checkpoints_dir = s.directory()?,
            "state.checkpoints.num-retained" => {
                self.checkpoints_num_retained = s.int_in(1, FLINK_INT_MAX)? as u32;
            }
            "restart-strategy.type" => {
                let rs = &mut self.restart_strategy;
                rs.kind = if s.is_unset() {
                    None
                } else {
                    let kind = s.text().and_then(|t| t.parse().ok());
                    Some(s.check(kind, RESTART_STRATEGY_TYPE_EXPECTED)?)
                };
            }
            "restart-strategy.fixed-delay.attempts" => {
                self.restart_strategy.fixed_delay.attempts = s.int_in(0, FLINK_INT_MAX)? as u32;
            }
            "restart-strategy.fixed-delay.delay" => {
                self.restart_strategy.fixed_delay.delay = s.duration()?;
            }
            "restart-strategy.failure-rate.max-failures-per-interval" => {
                let max = s.int_in(1, FLINK_INT_MAX)? as u32;
                self.restart_strategy.failure_rate.max_failures_per_interval = max;
            }
            "restart-strategy.failure-rate.failure-rate-interval" => {
                let interval = s.duration_at_least(ONE_MS)?;
                self.restart_strategy.failure_rate.failure_rate_interval = interval;
            }
            "restart-strategy.failure-rate.delay" => {
                self.restart_strategy.failure_rate.delay = s.duration()?;
            }
            "restart-strategy.exponential-delay.initial-backoff" => {
                self.restart_strategy.exponential_delay.initial_backoff =
                    s.duration_at_least(ONE_MS)?;
            }
            "restart-strategy.exponential-delay.max-backoff" => {
                self.restart_strategy.exponential_delay.max_backoff =
                    s.duration_at_least(ONE_MS)?;
            }
            "restart-strategy.exponential-delay.backoff-multiplier" => {
                let expected = "a number above 1 such as 1.5 or 2";
                let multiplier = s.float(|f| f > 1.0, expected)?;
                self.restart_strategy.exponential_delay.backoff_multiplier = multiplier;
            }
            "restart-strategy.exponential-delay.reset-backoff-threshold" => {
                self.restart_strategy
                    .exponential_delay
                    .reset_backoff_threshold = s.duration_at_least(ONE_MS)?;
            }
            "restart-strategy.exponential-delay.jitter-factor" => {
                let expected = "a number from 0 to 1 such as 0.1";
                let jitter = s.float(|f| (0.0..=1.0).contains(&f), expected)?;
                self.restart_strategy.exponential_delay.jitter_factor = jitter;
            }
            "restart-strategy.exponential-delay.attempts-before-reset-backoff" => {
                let attempts = match s.text() {
                    Some(t) if t.eq_ignore_ascii_case("infinite") => None,
                    _ => {
                        let n = s.number(|n| n, parse_uint);
                        let n = n.filter(|n| (1..=FLINK_INT_MAX).contains(n));
                        let expected = format!("an integer from 1 to {FLINK_INT_MAX}, or infinite");
                        Some(s.check(n, &expected)? as u32)
                    }
                };
                self.restart_strategy
                    .exponential_delay
                    .attempts_before_reset_backoff = attempts;
            }
            "taskmanager.memory.segment-size" => {
                let size = s
                    .number(|n| n, parse_memory_size)
                    .filter(|n| (64..=16 << 20).contains(n));
                self.segment_size = s.check(size, SIZE_EXPECTED)? as usize;
            }
            "taskmanager.memory.min-segment-size" => {
                let size = s
                    .number(|n| n, parse_memory_size)
                    .filter(|n| (64..=16 << 20).contains(n));
                self.min_segment_size = s.check(size, SIZE_EXPECTED)? as usize;
            }
            "taskmanager.network.memory.buffers-per-channel" => {
                self.buffers_per_channel = s.int_in(1, 1024)? as u32;
            }
            "taskmanager.network.memory.floating-buffers-per-gate" => {
                self.floating_buffers_per_gate = s.int_in(0, 65536)? as u32;
            }
            "taskmanager.network.memory.buffer-debloat.enabled" => {
                self.debloat_enabled = s.check(s.boolean(), BOOL_EXPECTED)?;
            }
            "taskmanager.network.memory.buffer-debloat.target" => {
                self.debloat_target = s.duration_at_least(ONE_MS)?;
            }
            "taskmanager.network.memory.buffer-debloat.period" => {
                self.debloat_period = s.duration_at_least(ONE_MS)?;
            }
            "taskmanager.network.memory.buffer-debloat.samples" => {
                self.debloat_samples = s.int_in(1, FLINK_INT_MAX)? as u32;
            }
            "taskmanager.network.memory.buffer-debloat.threshold-percentages" => {
                self.debloat_threshold_percentages = s.int_in(0, 100)? as u32;
            }
            "weir.worker.pin-cores" => self.pin_cores = s.check(s.boolean(), BOOL_EXPECTED)?,
            "weir.worker.spin-before-park" => self.spin_before_park = s.duration()?,
            "weir.progress.interval" => self.progress_interval = s.duration()?,
            _ => {
                return Err(ConfigError::UnknownKey {
                    key: key.to_string(),
                    origin: origin.to_string(),
                    suggestion: suggest(key),
                })
            }
        }
        Ok(())
    }
}

/// Turns nested tables into dotted key paths, so `[execution]` tables, dotted
/// keys and quoted flat keys all name a setting the same way.
fn flatten<'a>(prefix: &str, table: &'a toml::Table, out: &mut Vec<(String, &'a toml::Value)>) {
    for (name, value) in table {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&path, inner, out),
            leaf => out.push((path, leaf)),
        }
    }
}

/// The known key a mistyped `key` most likely meant: one whose last part is
/// exactly `key`, else the nearest by edit distance if it is a plausible typo.
fn suggest(key: &str) -> Option<&'static str> {
    if let Some(doc) = KEYS.iter().find(|d| d.key.ends_with(&format!(".{key}"))) {
        return Some(doc.key);
    }
    let (distance, best) = KEYS
        .iter()
        .map(|d| (edit_distance(key, d.key), d.key))
        .min_by_key(|(distance, _)| *distance)?;
    // A third of the key's length allows a few typos in long keys without
    // suggesting something unrelated for short ones.
    (distance <= 3.max(key.chars().count() / 3) && distance < best.len()).then_some(best)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

use crate::core::units::parse_uint;
pub use crate::core::units::{
    format_duration, format_memory_size, parse_duration, parse_memory_size,
};
use crate::exec::restart::{
    format_attempts, RestartStrategy, RestartStrategyConfig, RESTART_STRATEGY_TYPE_EXPECTED,
};

pub mod options;

#[cfg(test)]
mod tests;
