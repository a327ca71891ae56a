//! weir's own configuration keys, each named once with what it means,
//! how its value is read and how it is rendered. `configs/README.md`
//! documents them all with their defaults (a test ties the two), Flink's
//! names where Flink has the concept.

use std::time::Duration;

use crate::config::key::{Key, KeySet};
use crate::config::observe::{
    PortRange, LOG_FORMAT_EXPECTED, LOG_LEVEL_EXPECTED, PORT_RANGE_EXPECTED,
};
use crate::config::settings::Config;
use crate::config::value::{
    BOOL_EXPECTED, DURATION_EXPECTED, FLINK_INT_MAX, MIN_CHECKPOINT_TIME, MODE_EXPECTED, ONE_MS,
    POSITIVE_OR_UNSET, SIZE_EXPECTED,
};
use crate::core::units::{format_duration, format_memory_size, parse_memory_size, parse_uint};
use crate::exchange::flush::OperatorTimeouts;
use crate::exec::restart::{format_attempts, RESTART_STRATEGY_TYPE_EXPECTED};

/// A duration in config syntax.
fn dur(d: Duration) -> String {
    format_duration(d)
}

/// `execution.buffer-timeout.interval` and its older name: a duration,
/// `-1` (Flink's: only full buffers ship) or `auto` (weir's).
fn set_buffer_timeout(
    c: &mut Config,
    s: &crate::config::value::Setting<'_>,
) -> Result<(), crate::config::error::ConfigError> {
    let minus_one = matches!(s.value, toml::Value::Integer(-1))
        || matches!(s.text(), Some("-1") | Some("-1ms"));
    if minus_one {
        c.buffer_timeout_enabled = false;
    } else if s.text().is_some_and(|t| t.eq_ignore_ascii_case("auto")) {
        c.buffer_timeout_auto = true;
    } else {
        c.buffer_timeout = s.duration()?;
        c.buffer_timeout_auto = false;
    }
    Ok(())
}

/// `auto`, or the interval.
fn get_buffer_timeout(c: &Config) -> String {
    if c.buffer_timeout_auto {
        "auto".to_owned()
    } else {
        dur(c.buffer_timeout)
    }
}

/// A directory setting, or `unset`.
fn opt_dir(dir: &Option<std::path::PathBuf>) -> String {
    dir.as_ref()
        .map_or_else(|| "unset".to_string(), |p| p.display().to_string())
}

type SetResult = Result<(), crate::config::error::ConfigError>;
type SettingRef<'a, 'b> = &'a crate::config::value::Setting<'b>;

// `state.checkpoints.dir`, `state.savepoints.dir` and
// `state.checkpoints.num-retained`, each under Flink 1's and Flink 2's name.
fn get_checkpoints_dir(c: &Config) -> String {
    opt_dir(&c.checkpoints_dir)
}
fn set_checkpoints_dir(c: &mut Config, s: SettingRef<'_, '_>) -> SetResult {
    c.checkpoints_dir = s.directory()?;
    Ok(())
}
fn get_savepoints_dir(c: &Config) -> String {
    opt_dir(&c.savepoints_dir)
}
fn set_savepoints_dir(c: &mut Config, s: SettingRef<'_, '_>) -> SetResult {
    c.savepoints_dir = s.directory()?;
    Ok(())
}
fn set_num_retained(c: &mut Config, s: SettingRef<'_, '_>) -> SetResult {
    c.checkpoints_num_retained = s.int_in(1, FLINK_INT_MAX)? as u32;
    Ok(())
}

/// `execution.checkpointing.unaligned.enabled` (and its older name).
fn get_unaligned(c: &Config) -> String {
    c.unaligned_checkpoints.to_string()
}

/// Sets `execution.checkpointing.unaligned.enabled` (or its older name).
fn set_unaligned(
    c: &mut Config,
    s: &crate::config::value::Setting<'_>,
) -> Result<(), crate::config::error::ConfigError> {
    c.unaligned_checkpoints = s.check(s.boolean(), BOOL_EXPECTED)?;
    Ok(())
}

/// An optional count in config syntax (`unset` when absent).
fn opt(n: Option<u64>) -> String {
    n.map_or_else(|| "unset".to_string(), |n| n.to_string())
}

impl KeySet for Config {
    fn keys() -> &'static [Key<Config>] {
        KEYS
    }

    fn validate(&self) -> Result<(), crate::config::error::ConfigError> {
        Config::validate(self)
    }
}

/// Older names of keys, kept as Flink keeps them: read, never written (a
/// rendered configuration sets the newer name).
pub const ALIASES: &[&str] = &[
    "execution.buffer-timeout",
    "execution.checkpointing.dir",
    "execution.checkpointing.savepoint-dir",
    "execution.checkpointing.num-retained",
    "execution.checkpointing.unaligned",
];

/// Every key of [`Config`], in documentation order.
pub const KEYS: &[Key<Config>] = &[
    Key {
        name: "parallelism.default",
        description: "number of workers (one pinned per core) and every operator's default parallelism (at least 1); unset = every core the process may use",
        get: |c| opt(c.parallelism.map(|p| p as u64)),
        set: |c, s| {
        let p = s.positive_or_unset()?.map(usize::try_from).transpose();
        c.parallelism = s.check(p.ok(), POSITIVE_OR_UNSET)?;
            Ok(())
        },
    },
    Key {
        name: "pipeline.max-parallelism",
        description: "number of key groups, 1 to 32768; must not be below `parallelism.default`",
        get: |c| c.max_parallelism.to_string(),
        set: |c, s| {
        c.max_parallelism = s.int_in(1, 32768)? as u32;
            Ok(())
        },
    },
    Key {
        name: "execution.buffer-timeout.enabled",
        description: "`false`: output buffers are sent only when full (and at barriers, watermarks and the end of the input), whatever the interval: throughput over latency (Flink's `setBufferTimeout(-1)`)",
        get: |c| c.buffer_timeout_enabled.to_string(),
        set: |c, s| {
        c.buffer_timeout_enabled = s.check(s.boolean(), BOOL_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "execution.buffer-timeout.interval",
        description: "a partly filled output buffer is sent at most this long after its first record; `0ms` sends after every record; `-1` = `execution.buffer-timeout.enabled = false`; `auto`: each output channel adapts its deadline to `execution.buffer-timeout.latency-target` (weir's, beyond Flink)",
        get: get_buffer_timeout,
        set: set_buffer_timeout,
    },
    Key {
        name: "execution.buffer-timeout",
        description: "the older name of `execution.buffer-timeout.interval`, kept as Flink keeps it",
        get: get_buffer_timeout,
        set: set_buffer_timeout,
    },
    Key {
        name: "execution.buffer-timeout.latency-target",
        description: "with `execution.buffer-timeout.interval = auto`: the latency (p99) a record's wait in its output buffer plus its queueing before the receiver should stay under; each channel's deadline is what is left of it after the queueing it measures (docs/ARCHITECTURE.md, \"Buffer timeout\"), at least 10us",
        get: |c| dur(c.buffer_timeout_latency_target),
        set: |c, s| {
        c.buffer_timeout_latency_target = s.duration_at_least(Duration::from_micros(10))?;
            Ok(())
        },
    },
    Key {
        name: "execution.buffer-timeout.operators",
        description: "per-operator buffer timeouts, `uid=5ms, other-uid=0ms` (`-1`: full buffers only): the exchanges an operator's stage sends into use its timeout instead of the job's (Flink's `setBufferTimeout` on an operator); an uid the job lacks is an error",
        get: |c| c.buffer_timeout_operators.to_string(),
        set: |c, s| {
        let text = s.text().unwrap_or("");
        let parsed = OperatorTimeouts::parse(text).map_err(|why| format!("`uid=timeout` entries separated by commas ({why})"));
        c.buffer_timeout_operators = match parsed {
        Ok(t) => t,
        Err(expected) => s.check(None, &expected)?,
        };
            Ok(())
        },
    },
    Key {
        name: "pipeline.auto-watermark-interval",
        description: "how often sources with a watermark strategy call their generator's periodic emission (bounded out-of-orderness watermarks, idleness checks), also inside long runs of records; `0ms` calls none (per-record watermarks and the final one still go out); otherwise at least 1ms",
        get: |c| dur(c.auto_watermark_interval),
        set: |c, s| {
        let d = s.duration()?;
        let ok = d.is_zero() || d >= ONE_MS;
        let expected = format!("{DURATION_EXPECTED}: 0ms (off) or at least 1ms");
        c.auto_watermark_interval = s.check(ok.then_some(d), &expected)?;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.interval",
        description: "time between the starts of two checkpoints, at least 10ms; unset = checkpointing off. Needs `state.checkpoints.dir`",
        get: |c| c
                .checkpoint_interval
                .map_or_else(|| "unset".to_string(), dur),
        set: |c, s| {
        c.checkpoint_interval = if s.is_unset() {
        None
        } else {
        Some(s.duration_at_least(MIN_CHECKPOINT_TIME)?)
        };
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.mode",
        description: "`EXACTLY_ONCE` (barriers are aligned) or `AT_LEAST_ONCE` (they are not), in any case",
        get: |c| c.checkpointing_mode.to_string(),
        set: |c, s| {
        let mode = s.text().and_then(|t| t.parse().ok());
        c.checkpointing_mode = s.check(mode, MODE_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.min-pause",
        description: "least time from the end of one checkpoint to the start of the next",
        get: |c| dur(c.checkpoint_min_pause),
        set: |c, s| {
        c.checkpoint_min_pause = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.timeout",
        description: "a checkpoint not complete after this long is aborted and counts as failed; at least 10ms",
        get: |c| dur(c.checkpoint_timeout),
        set: |c, s| {
        c.checkpoint_timeout = s.duration_at_least(MIN_CHECKPOINT_TIME)?;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.max-concurrent-checkpoints",
        description: "checkpoints that may be in progress at once, at least 1",
        get: |c| c.max_concurrent_checkpoints.to_string(),
        set: |c, s| {
        c.max_concurrent_checkpoints = s.int_in(1, FLINK_INT_MAX)? as u32;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.tolerable-failed-checkpoints",
        description: "consecutive failed checkpoints tolerated; one more fails the job (which then restarts as `restart-strategy.type` says)",
        get: |c| c.tolerable_failed_checkpoints.to_string(),
        set: |c, s| {
        c.tolerable_failed_checkpoints = s.int_in(0, FLINK_INT_MAX)? as u32;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.unaligned.enabled",
        description: "unaligned checkpoints: a barrier overtakes the buffered records, which are persisted with the checkpoint; only with `EXACTLY_ONCE` and `max-concurrent-checkpoints` 1",
        get: get_unaligned,
        set: set_unaligned,
    },
    Key {
        name: "execution.checkpointing.unaligned",
        description: "Flink 1's name of `execution.checkpointing.unaligned.enabled`, kept as Flink keeps it",
        get: get_unaligned,
        set: set_unaligned,
    },
    Key {
        name: "execution.checkpointing.incremental",
        description: "incremental checkpoints: a checkpoint writes the slots of each keyed state table (value, map, list, reducing, aggregating) changed since the previous one and refers to earlier checkpoints' segments for the rest (a full one after 10 increments or once the increments exceed half the full one's bytes); savepoints are always full",
        get: |c| c.incremental_checkpoints.to_string(),
        set: |c, s| {
        c.incremental_checkpoints = s.check(s.boolean(), BOOL_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "execution.checkpointing.aligned-checkpoint-timeout",
        description: "with unaligned checkpoints on: `0ms` = every checkpoint is unaligned from the start; more = start aligned and switch to unaligned when alignment takes longer. No effect while `unaligned.enabled` is false",
        get: |c| dur(c.aligned_checkpoint_timeout),
        set: |c, s| {
        c.aligned_checkpoint_timeout = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "state.checkpoints.dir",
        description: "local directory (a path or a `file://` URI) that checkpoints are written to; required when checkpointing is on",
        get: get_checkpoints_dir,
        set: set_checkpoints_dir,
    },
    Key {
        name: "state.savepoints.dir",
        description: "local directory (a path or a `file://` URI) that a stop (SIGTERM or SIGINT) writes its savepoint to, one `savepoint-<job id>-<id>` directory each; unset = the stop takes a checkpoint into `state.checkpoints.dir`",
        get: get_savepoints_dir,
        set: set_savepoints_dir,
    },
    Key {
        name: "state.checkpoints.num-retained",
        description: "completed checkpoints kept, at least 1",
        get: |c| c.checkpoints_num_retained.to_string(),
        set: set_num_retained,
    },
    // Flink 2's names of the three keys above (Flink 1 and 2 both read
    // the older ones, which a rendered configuration writes).
    Key {
        name: "execution.checkpointing.dir",
        description: "Flink 2's name of `state.checkpoints.dir`",
        get: get_checkpoints_dir,
        set: set_checkpoints_dir,
    },
    Key {
        name: "execution.checkpointing.savepoint-dir",
        description: "Flink 2's name of `state.savepoints.dir`",
        get: get_savepoints_dir,
        set: set_savepoints_dir,
    },
    Key {
        name: "execution.checkpointing.num-retained",
        description: "Flink 2's name of `state.checkpoints.num-retained`",
        get: |c| c.checkpoints_num_retained.to_string(),
        set: set_num_retained,
    },
    Key {
        name: "restart-strategy.type",
        description: "`none` (also `off`, `disable`), `fixed-delay`, `failure-rate` or `exponential-delay` (also without the dash); unset = `none` without checkpointing, `exponential-delay` with it",
        get: |c| c.restart_strategy
                .kind
                .map_or_else(|| "unset".to_string(), |t| t.to_string()),
        set: |c, s| {
        let rs = &mut c.restart_strategy;
        rs.kind = if s.is_unset() {
        None
        } else {
        let kind = s.text().and_then(|t| t.parse().ok());
        Some(s.check(kind, RESTART_STRATEGY_TYPE_EXPECTED)?)
        };
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.fixed-delay.attempts",
        description: "fixed-delay: restarts in the job's lifetime, 0 to 2147483647; the failure after the last one fails the job",
        get: |c| c.restart_strategy.fixed_delay.attempts.to_string(),
        set: |c, s| {
        c.restart_strategy.fixed_delay.attempts = s.int_in(0, FLINK_INT_MAX)? as u32;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.fixed-delay.delay",
        description: "fixed-delay: wait before each restart",
        get: |c| dur(c.restart_strategy.fixed_delay.delay),
        set: |c, s| {
        c.restart_strategy.fixed_delay.delay = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.failure-rate.max-failures-per-interval",
        description: "failure-rate: failures tolerated within one interval, at least 1; one more fails the job",
        get: |c| c.restart_strategy.failure_rate.max_failures_per_interval.to_string(),
        set: |c, s| {
        let max = s.int_in(1, FLINK_INT_MAX)? as u32;
        c.restart_strategy.failure_rate.max_failures_per_interval = max;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.failure-rate.failure-rate-interval",
        description: "failure-rate: the sliding interval failures are counted in, at least 1ms",
        get: |c| dur(c.restart_strategy.failure_rate.failure_rate_interval),
        set: |c, s| {
        let interval = s.duration_at_least(ONE_MS)?;
        c.restart_strategy.failure_rate.failure_rate_interval = interval;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.failure-rate.delay",
        description: "failure-rate: wait before each restart",
        get: |c| dur(c.restart_strategy.failure_rate.delay),
        set: |c, s| {
        c.restart_strategy.failure_rate.delay = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.exponential-delay.initial-backoff",
        description: "exponential-delay: wait before the first restart after a reset, at least 1ms and at most `max-backoff`",
        get: |c| dur(c.restart_strategy.exponential_delay.initial_backoff),
        set: |c, s| {
        c.restart_strategy.exponential_delay.initial_backoff =
        s.duration_at_least(ONE_MS)?;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.exponential-delay.max-backoff",
        description: "exponential-delay: the longest wait, at least 1ms",
        get: |c| dur(c.restart_strategy.exponential_delay.max_backoff),
        set: |c, s| {
        c.restart_strategy.exponential_delay.max_backoff =
        s.duration_at_least(ONE_MS)?;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.exponential-delay.backoff-multiplier",
        description: "exponential-delay: the wait grows by this factor per restart; above 1",
        get: |c| c.restart_strategy.exponential_delay.backoff_multiplier.to_string(),
        set: |c, s| {
        let expected = "a number above 1 such as 1.5 or 2";
        let multiplier = s.float(|f| f > 1.0, expected)?;
        c.restart_strategy.exponential_delay.backoff_multiplier = multiplier;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.exponential-delay.reset-backoff-threshold",
        description: "exponential-delay: a run this long before its failure resets the wait and the attempt count; at least 1ms",
        get: |c| dur(c.restart_strategy.exponential_delay.reset_backoff_threshold),
        set: |c, s| {
        c.restart_strategy
        .exponential_delay
        .reset_backoff_threshold = s.duration_at_least(ONE_MS)?;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.exponential-delay.jitter-factor",
        description: "exponential-delay: each wait moves by a random amount of up to this fraction of itself, either way; 0 to 1",
        get: |c| c.restart_strategy.exponential_delay.jitter_factor.to_string(),
        set: |c, s| {
        let expected = "a number from 0 to 1 such as 0.1";
        let jitter = s.float(|f| (0.0..=1.0).contains(&f), expected)?;
        c.restart_strategy.exponential_delay.jitter_factor = jitter;
            Ok(())
        },
    },
    Key {
        name: "restart-strategy.exponential-delay.attempts-before-reset-backoff",
        description: "exponential-delay: restarts allowed between resets, at least 1, or `infinite`",
        get: |c| format_attempts(c.restart_strategy.exponential_delay.attempts_before_reset_backoff),
        set: |c, s| {
        let attempts = match s.text() {
        Some(t) if t.eq_ignore_ascii_case("infinite") => None,
        _ => {
        let n = s.number(|n| n, parse_uint);
        let n = n.filter(|n| (1..=FLINK_INT_MAX).contains(n));
        let expected = format!("an integer from 1 to {FLINK_INT_MAX}, or infinite");
        Some(s.check(n, &expected)? as u32)
        }
        };
        c.restart_strategy
        .exponential_delay
        .attempts_before_reset_backoff = attempts;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.memory.segment-size",
        description: "capacity of one network buffer, 64b to 16mb",
        get: |c| format_memory_size(c.segment_size as u64),
        set: |c, s| {
        let size = s
        .number(|n| n, parse_memory_size)
        .filter(|n| (64..=16 << 20).contains(n));
        c.segment_size = s.check(size, SIZE_EXPECTED)? as usize;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.memory.min-segment-size",
        description: "least size buffer debloating may shrink a buffer to, 64b to 16mb and at most `segment-size`",
        get: |c| format_memory_size(c.min_segment_size as u64),
        set: |c, s| {
        let size = s
        .number(|n| n, parse_memory_size)
        .filter(|n| (64..=16 << 20).contains(n));
        c.min_segment_size = s.check(size, SIZE_EXPECTED)? as usize;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.buffers-per-channel",
        description: "buffers that may be in flight on one channel (the ring's credit), 1 to 1024",
        get: |c| c.buffers_per_channel.to_string(),
        set: |c, s| {
        c.buffers_per_channel = s.int_in(1, 1024)? as u32;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.floating-buffers-per-gate",
        description: "extra buffers in each worker's pool beyond those per channel, 0 to 65536",
        get: |c| c.floating_buffers_per_gate.to_string(),
        set: |c, s| {
        c.floating_buffers_per_gate = s.int_in(0, 65536)? as u32;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.buffer-debloat.enabled",
        description: "buffer debloating: each input gate sizes its in-flight data (buffer size and credit) to its measured throughput times `buffer-debloat.target`",
        get: |c| c.debloat_enabled.to_string(),
        set: |c, s| {
        c.debloat_enabled = s.check(s.boolean(), BOOL_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.buffer-debloat.target",
        description: "time in which a gate should be able to consume its in-flight data, at least 1ms (Flink: 1s; see configs/README.md)",
        get: |c| dur(c.debloat_target),
        set: |c, s| {
        c.debloat_target = s.duration_at_least(ONE_MS)?;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.buffer-debloat.period",
        description: "how often a gate measures its throughput and recalculates, at least 1ms (Flink: 200ms)",
        get: |c| dur(c.debloat_period),
        set: |c, s| {
        c.debloat_period = s.duration_at_least(ONE_MS)?;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.buffer-debloat.samples",
        description: "periods the throughput is averaged over (an exponential moving average), 1 to 2147483647",
        get: |c| c.debloat_samples.to_string(),
        set: |c, s| {
        c.debloat_samples = s.int_in(1, FLINK_INT_MAX)? as u32;
            Ok(())
        },
    },
    Key {
        name: "taskmanager.network.memory.buffer-debloat.threshold-percentages",
        description: "a new buffer size is announced only when it differs from the last announced one by more than this percentage (or reaches a bound), 0 to 100",
        get: |c| c.debloat_threshold_percentages.to_string(),
        set: |c, s| {
        c.debloat_threshold_percentages = s.int_in(0, 100)? as u32;
            Ok(())
        },
    },
    Key {
        name: "weir.worker.pin-cores",
        description: "pin each worker thread to its own core",
        get: |c| c.pin_cores.to_string(),
        set: |c, s| {
        c.pin_cores = s.check(s.boolean(), BOOL_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "weir.worker.spin-before-park",
        description: "how long an idle worker spins before it parks (its I/O reactor spins up to 20 µs of it); not while its core is shared (it waits for a CPU more than 10% of the time)",
        get: |c| dur(c.spin_before_park),
        set: |c, s| {
        c.spin_before_park = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "weir.progress.interval",
        description: "interval of progress lines on stderr; `0ms` turns them off",
        get: |c| dur(c.progress_interval),
        set: |c, s| {
        c.progress_interval = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "metrics.latency.interval",
        description: "how often each source subtask emits a latency marker (Flink's latency tracking); every task records how long markers took to reach it, per source, in REST and Prometheus; `0ms` = off (the default); otherwise at least 1ms",
        get: |c| dur(c.latency_interval),
        set: |c, s| {
        let d = s.duration()?;
        let ok = d.is_zero() || d >= ONE_MS;
        let expected = format!("{DURATION_EXPECTED}: 0ms (off) or at least 1ms");
        c.latency_interval = s.check(ok.then_some(d), &expected)?;
            Ok(())
        },
    },
    Key {
        name: "metrics.latency.history-size",
        description: "latency markers kept per histogram (the window its percentiles are of), 1 to 1000000",
        get: |c| c.latency_history_size.to_string(),
        set: |c, s| {
        c.latency_history_size = s.int_in(1, 1_000_000)? as u32;
            Ok(())
        },
    },
    Key {
        name: "metrics.latency.granularity",
        description: "which latency markers share a histogram: `single` (all sources together), `operator` (one per source stage, the default) or `subtask` (one per source subtask)",
        get: |c| c.latency_granularity.to_string(),
        set: |c, s| {
        let g = s.text().and_then(|t| t.parse().ok());
        c.latency_granularity = s.check(g, "`single`, `operator` or `subtask`")?;
            Ok(())
        },
    },
    Key {
        name: "rest.port",
        description: "port of the job's REST endpoint (docs/REST.md); `0` picks a free port and prints it; unset = 8081 for `weir run` and `weir sql`, no endpoint for `weir bench`",
        get: |c| opt(c.rest_port.map(u64::from)),
        set: |c, s| {
        if s.is_unset() {
            c.rest_port = None;
            return Ok(());
        }
        c.rest_port = Some(s.int_in(0, 65535)? as u16);
            Ok(())
        },
    },
    Key {
        name: "rest.bind-address",
        description: "address the REST endpoint binds; anything but a loopback address needs `rest.auth-token`",
        get: |c| c.rest_bind_address.clone(),
        set: |c, s| {
        let ip = s.text().and_then(|t| t.parse::<std::net::IpAddr>().ok());
        c.rest_bind_address = s.check(ip, "an IP address, e.g. 127.0.0.1 or 0.0.0.0")?.to_string();
            Ok(())
        },
    },
    Key {
        name: "rest.auth-token",
        description: "bearer token every REST request must carry (`Authorization: Bearer <token>`), at least 16 characters; unset = none (only allowed on a loopback address)",
        get: |c| c.rest_auth_token.clone().unwrap_or_else(|| "unset".to_string()),
        set: |c, s| {
        if s.is_unset() {
            c.rest_auth_token = None;
            return Ok(());
        }
        let t = s.text().filter(|t| t.len() >= 16 && t.bytes().all(|b| b.is_ascii_graphic()));
        c.rest_auth_token = Some(s.check(t, "at least 16 printable characters, no spaces")?.to_string());
            Ok(())
        },
    },
    Key {
        name: "metrics.reporter.prom.port",
        description: "port of the job's Prometheus endpoint (`/metrics`, docs/METRICS.md; Flink's key), on `rest.bind-address` with `rest.auth-token` as the REST endpoint; `0` picks a free port and prints it, a range such as `9250-9260` takes the first free one; unset = no endpoint",
        get: |c| c.prom_port.map_or_else(|| "unset".to_string(), |p| p.to_string()),
        set: |c, s| {
        if s.is_unset() {
            c.prom_port = None;
            return Ok(());
        }
        let range = match s.value {
            toml::Value::Integer(i) => u16::try_from(*i).ok().map(PortRange::single),
            _ => s.text().and_then(|t| t.parse().ok()),
        };
        c.prom_port = Some(s.check(range, PORT_RANGE_EXPECTED)?);
            Ok(())
        },
    },
    Key {
        name: "log.level",
        description: "which log events go to stderr: `off`, `error`, `warn`, `info` or `debug`/`trace` for weir's own events (other crates' stay at `warn` unless the level is stricter), or filter directives such as `warn,weir::checkpoint=debug`; `RUST_LOG`, when set, wins",
        get: |c| c.log_level.to_string(),
        set: |c, s| {
        let level = s.text().and_then(|t| t.parse().ok());
        c.log_level = s.check(level, LOG_LEVEL_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "log.format",
        description: "how log events are printed on stderr: `plain` (for a terminal) or `json` (one JSON object per line: timestamp, level, target, message and the event's fields); progress lines and the command's own report stay plain",
        get: |c| c.log_format.to_string(),
        set: |c, s| {
        let format = s.text().and_then(|t| t.parse().ok());
        c.log_format = s.check(format, LOG_FORMAT_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "table.exec.source.idle-timeout",
        description: "weir SQL: a source subtask that emits no row for this long is marked idle, so the watermark of the operators downstream goes on without it (Flink's key); `0ms` never marks a source idle",
        get: |c| dur(c.source_idle_timeout),
        set: |c, s| {
        c.source_idle_timeout = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "table.exec.state.ttl",
        description: "weir SQL: how long a regular join keeps a row in its state after the row was last written, in processing time (Flink's idle state retention); a row older than this no longer joins and its memory is freed. `0ms` keeps state forever",
        get: |c| dur(c.state_ttl),
        set: |c, s| {
        c.state_ttl = s.duration()?;
            Ok(())
        },
    },
];
