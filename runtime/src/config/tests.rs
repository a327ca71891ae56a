//! Tests of the config module: defaults, every unit form, each error kind,
//! the checkpointing and restart keys. The job parameters' keys, the README
//! table and the example files are tested beside the jobs (weir-bench).
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::core::units::{format_duration, format_memory_size, parse_duration, parse_memory_size};
use crate::exec::restart::{ExponentialDelay, FailureRate, FixedDelay, RestartStrategyType};
use crate::exec::restart::{RestartStrategy, RestartStrategyConfig};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn toml(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str(text, "test.toml")
}

fn sets(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Every default, checked through `get` against the table in [`KEYS`]
/// (which the README test ties to the documentation).
#[test]
fn defaults_match_the_table() {
    let c = Config::default();
    let mut set_back = c.clone();
    for (i, key) in KEYS.iter().enumerate() {
        assert!(KEYS[..i].iter().all(|k| k.name != key.name), "{}", key.name);
        let default = key.default_value();
        assert_eq!(
            c.get(key.name).as_deref(),
            Some(default.as_str()),
            "{}",
            key.name
        );
        set_back.set(key.name, &default).unwrap();
    }
    assert_eq!(set_back, c);
    assert_eq!(c.get("no.such.key"), None);
    assert_eq!(toml("").unwrap(), c);
    assert_eq!(Config::load(None, &[]).unwrap(), c);
    assert_eq!(c.segment_size, 32768);
    assert_eq!(c.spin_before_park, Duration::from_micros(50));
}

#[test]
#[rustfmt::skip]
fn duration_and_size_forms() {
    let (us, ns) = (Duration::from_micros, Duration::from_nanos);
    let durations = [
        ("0", ms(0)), ("250", ms(250)), ("7ns", ns(7)), ("5us", us(5)), ("5µs", us(5)),
        ("5 micros", us(5)), ("10ms", ms(10)), ("10 milli", ms(10)), ("10millis", ms(10)),
        ("10 millisecond", ms(10)), ("10 milliseconds", ms(10)), ("10MS", ms(10)),
        ("3s", ms(3000)), ("3 sec", ms(3000)), ("3secs", ms(3000)), ("3 second", ms(3000)),
        ("3 Seconds", ms(3000)), ("2min", ms(120_000)), ("2m", ms(120_000)),
        ("2 minute", ms(120_000)), ("2 minutes", ms(120_000)), ("1h", ms(3_600_000)),
        ("1 hour", ms(3_600_000)), ("2 hours", ms(7_200_000)), ("1d", ms(86_400_000)),
        ("1 day", ms(86_400_000)), ("2 DAYS", ms(172_800_000)), ("  4 s  ", ms(4000)),
    ];
    for (text, expected) in durations {
        assert_eq!(parse_duration(text), Some(expected), "{text}");
    }
    for bad in ["", "ms", "-5ms", "1.5s", "10 parsecs", "5 s s", "1_000ms", "+3s",
                "18446744073709551615d", "99999999999999999999ms"] {
        assert_eq!(parse_duration(bad), None, "{bad}");
    }
    let sizes = [
        ("0", 0), ("100", 100), ("100b", 100), ("100 bytes", 100), ("2k", 2048), ("2kb", 2048),
        ("2 KB", 2048), ("2 kibibytes", 2048), ("1m", 1 << 20), ("1mb", 1 << 20),
        ("1 mebibytes", 1 << 20), ("1g", 1 << 30), ("1GB", 1 << 30), ("1 gibibytes", 1 << 30),
    ];
    for (text, expected) in sizes {
        assert_eq!(parse_memory_size(text), Some(expected), "{text}");
    }
    for bad in ["", "kb", "-1kb", "1.5mb", "3 parsecs", "99999999999 gb"] {
        assert_eq!(parse_memory_size(bad), None, "{bad}");
    }
    let formatted = [(ms(0), "0ms"), (ms(100), "100ms"), (ms(1000), "1s"), (ms(1500), "1500ms"),
        (us(50), "50us"), (ns(3), "3ns"), (ms(120_000), "2min"), (ms(90_000), "90s"),
        (ms(7_200_000), "2h"), (ms(86_400_000), "1d")];
    for (d, text) in formatted {
        assert_eq!((format_duration(d).as_str(), parse_duration(text)), (text, Some(d)));
    }
    for (n, text) in [(0, "0b"), (64, "64b"), (32 * 1024, "32kb"), (1536, "1536b"), (16 << 20, "16mb")] {
        assert_eq!((format_memory_size(n).as_str(), parse_memory_size(text)), (text, Some(n)));
    }
}

#[test]
fn unknown_keys_suggest_the_closest_known_key() {
    let err = toml("execution.bufer-timeout = \"10ms\"").unwrap_err();
    let expected = "unknown config key `execution.bufer-timeout` in test.toml; \
        did you mean `execution.buffer-timeout`? All keys are listed in configs/README.md";
    assert_eq!(err.to_string(), expected);
    let mut c = Config::default();
    let err = c.set("buffer-timeout", "1ms").unwrap_err().to_string();
    assert!(err.contains("in --set; did you mean `execution.buffer-timeout`?"));
    let err = c.set("completely.different", "1").unwrap_err();
    let err = err.to_string();
    assert!(err.contains("configs/README.md") && !err.contains("did you mean"));
    // A table where a value belongs leaves an unknown key below it.
    let err = toml("[job.name]\nx = 1").unwrap_err();
    assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
}

#[test]
fn parse_io_and_override_errors() {
    let err = toml("job.name = ").unwrap_err();
    assert!(matches!(err, ConfigError::Parse { .. }), "{err:?}");
    assert!(err.to_string().starts_with("invalid TOML in test.toml: "));
    let err = Config::load(Some(Path::new("/nonexistent/weir.toml")), &[]).unwrap_err();
    let err = err.to_string();
    assert!(err.starts_with("cannot read config file /nonexistent/weir.toml: "));
    for text in ["job.name", "=w1", ""] {
        let err = Config::load(None, &sets(&[text])).unwrap_err();
        assert!(
            matches!(err, ConfigError::MalformedOverride { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("expected key=value"), "{err}");
    }
}

#[test]
#[rustfmt::skip]
fn to_toml_round_trips() {
    let custom = Config {
        parallelism: Some(2), max_parallelism: 4096, buffer_timeout: ms(0),
        buffer_timeout_enabled: false, buffer_timeout_auto: false,
        buffer_timeout_latency_target: Duration::from_micros(500),
        buffer_timeout_operators: crate::exchange::flush::OperatorTimeouts::parse("w3-source=0ms, w3-keyed-count=-1").expect("parses"),
        auto_watermark_interval: ms(50),
        segment_size: 1 << 20, buffers_per_channel: 16, floating_buffers_per_gate: 0,
        pin_cores: false, spin_before_park: Duration::from_nanos(500), progress_interval: ms(250),
        latency_interval: ms(250), latency_history_size: 64,
        latency_granularity: crate::metrics::LatencyGranularity::Subtask,
        rest_port: Some(0), rest_bind_address: "0.0.0.0".into(),
        rest_auth_token: Some("0123456789012345678".into()),
        prom_port: Some(PortRange { first: 9250, last: 9260 }),
        log_level: "warn,weir::checkpoint=debug".parse().unwrap(), log_format: LogFormat::Json,
        state_ttl: ms(3_600_000), source_idle_timeout: ms(5_000),
        checkpoint_interval: Some(ms(30_000)), checkpointing_mode: CheckpointingMode::AtLeastOnce,
        checkpoint_min_pause: ms(500), checkpoint_timeout: ms(90_000), max_concurrent_checkpoints: 3,
        tolerable_failed_checkpoints: 2, unaligned_checkpoints: false, incremental_checkpoints: false, aligned_checkpoint_timeout: ms(100),
        min_segment_size: 4096, debloat_enabled: true, debloat_target: ms(1500), debloat_period: ms(7),
        debloat_samples: 3, debloat_threshold_percentages: 0,
        // Quotes and backslashes must survive the TOML string.
        checkpoints_dir: Some(PathBuf::from("/tmp/weir \"ckpt\"\\x")), checkpoints_num_retained: 4,
        savepoints_dir: Some(PathBuf::from("/tmp/weir-savepoints")),
        restart_strategy: RestartStrategyConfig {
            kind: Some(RestartStrategyType::FailureRate),
            fixed_delay: FixedDelay { attempts: 0, delay: ms(0) },
            failure_rate: FailureRate { max_failures_per_interval: 9, failure_rate_interval: ms(1), delay: ms(1500) },
            exponential_delay: ExponentialDelay {
                initial_backoff: ms(250), max_backoff: ms(250), backoff_multiplier: 2.0,
                reset_backoff_threshold: ms(7_200_000), jitter_factor: 0.0, attempts_before_reset_backoff: Some(5),
            },
        },
    };
    // A directory named like a number stays a string.
    let numeric_dir = Config { checkpoints_dir: Some(PathBuf::from("0042")), ..Config::default() };
    let unaligned = Config { unaligned_checkpoints: true, ..Config::default() };
    // A single port is written as a bare integer and read back as one.
    let prom = Config { prom_port: Some(PortRange::single(0)), log_level: "debug".parse().unwrap(), ..Config::default() };
    for config in [Config::default(), custom, numeric_dir, unaligned, prom] {
        let text = config.to_toml();
        assert_eq!(toml(&text).unwrap(), config, "{text}");
        assert!(KEYS.iter().all(|key| text.contains(key.name)), "{text}");
    }
}

/// The checkpointing keys and the default of every restart option are
/// Flink's (checked against Flink's `CheckpointingOptions` and
/// `RestartStrategyOptions`), and parsed into the right fields.
#[test]
#[rustfmt::skip]
fn checkpointing_keys_parse() {
    let c = Config::default();
    assert_eq!((c.checkpoint_interval, c.checkpointing_mode), (None, CheckpointingMode::ExactlyOnce));
    assert_eq!((c.checkpoint_min_pause, c.checkpoint_timeout), (ms(0), ms(600_000)));
    assert_eq!((c.max_concurrent_checkpoints, c.tolerable_failed_checkpoints), (1, 0));
    assert_eq!((c.checkpoints_dir.clone(), c.checkpoints_num_retained), (None, 1));
    assert!(!c.checkpointing_enabled());

    let c = toml("execution.checkpointing.interval = \"10s\"\nexecution.checkpointing.mode = \"AT_LEAST_ONCE\"\n\
                  execution.checkpointing.min-pause = 500\nexecution.checkpointing.timeout = \"1 min\"\n\
                  execution.checkpointing.max-concurrent-checkpoints = 2\n\
                  execution.checkpointing.tolerable-failed-checkpoints = \"3\"\n\
                  state.checkpoints.dir = \"/tmp/weir-ckpt\"\nstate.checkpoints.num-retained = 5\n").unwrap();
    assert_eq!((c.checkpoint_interval, c.checkpointing_mode), (Some(ms(10_000)), CheckpointingMode::AtLeastOnce));
    assert_eq!((c.checkpoint_min_pause, c.checkpoint_timeout), (ms(500), ms(60_000)));
    assert_eq!((c.max_concurrent_checkpoints, c.tolerable_failed_checkpoints), (2, 3));
    assert_eq!((c.checkpoints_dir.as_deref(), c.checkpoints_num_retained), (Some(Path::new("/tmp/weir-ckpt")), 5));
    assert!(c.checkpointing_enabled());

    // Flink's spellings of the mode in any case; Flink's least interval and timeout.
    for (text, mode) in [("EXACTLY_ONCE", CheckpointingMode::ExactlyOnce), ("exactly_once", CheckpointingMode::ExactlyOnce),
                         ("at_least_once", CheckpointingMode::AtLeastOnce), ("At_Least_Once", CheckpointingMode::AtLeastOnce)] {
        let mut c = Config::default();
        c.set("execution.checkpointing.mode", text).unwrap();
        assert_eq!(c.checkpointing_mode, mode, "{text}");
        assert_eq!(mode.to_string().parse::<CheckpointingMode>(), Ok(mode));
    }
    let dir = ["state.checkpoints.dir=/tmp/c"];
    let c = Config::load(None, &sets(&[&dir[..], &["execution.checkpointing.interval=10ms", "execution.checkpointing.timeout=10ms"]].concat())).unwrap();
    assert_eq!((c.checkpoint_interval, c.checkpoint_timeout), (Some(ms(10)), ms(10)));
    let c = Config::load(None, &sets(&[&dir[..], &["execution.checkpointing.interval=1s", "execution.checkpointing.interval=unset"]].concat())).unwrap();
    assert_eq!(c.checkpoint_interval, None);

    // Directories: paths, Flink's file:// URIs (long and short), unset.
    for (text, path) in [("/var/ckpt", "/var/ckpt"), ("relative/dir", "relative/dir"), ("file:///var/ckpt", "/var/ckpt"),
                         ("file:/var/ckpt", "/var/ckpt"), ("FILE:///x", "/x"), ("/a:b/c", "/a:b/c")] {
        let mut c = Config::default();
        c.set("state.checkpoints.dir", text).unwrap();
        assert_eq!(c.checkpoints_dir.as_deref(), Some(Path::new(path)), "{text}");
        c.set("state.checkpoints.dir", "unset").unwrap();
        assert_eq!(c.checkpoints_dir, None);
    }
}

#[test]
#[rustfmt::skip]
fn restart_keys_parse() {
    let c = toml("[restart-strategy]\ntype = \"fixed-delay\"\nfixed-delay.attempts = 3\nfixed-delay.delay = \"5s\"\n\
                  failure-rate.max-failures-per-interval = 4\nfailure-rate.failure-rate-interval = \"5 min\"\n\
                  failure-rate.delay = \"2s\"\n\
                  [restart-strategy.exponential-delay]\ninitial-backoff = \"100ms\"\nmax-backoff = \"30s\"\n\
                  backoff-multiplier = 2\nreset-backoff-threshold = \"10min\"\njitter-factor = 0.5\n\
                  attempts-before-reset-backoff = 7\n").unwrap();
    let rs = c.restart_strategy;
    assert_eq!(rs.kind, Some(RestartStrategyType::FixedDelay));
    assert_eq!(rs.fixed_delay, FixedDelay { attempts: 3, delay: ms(5000) });
    assert_eq!(rs.failure_rate, FailureRate { max_failures_per_interval: 4, failure_rate_interval: ms(300_000), delay: ms(2000) });
    assert_eq!(rs.exponential_delay, ExponentialDelay {
        initial_backoff: ms(100), max_backoff: ms(30_000), backoff_multiplier: 2.0,
        reset_backoff_threshold: ms(600_000), jitter_factor: 0.5, attempts_before_reset_backoff: Some(7),
    });
    assert_eq!(c.effective_restart_strategy(), RestartStrategy::FixedDelay(rs.fixed_delay));

    // Every alias of the type, in any case.
    for (text, kind) in [("none", RestartStrategyType::None), ("off", RestartStrategyType::None), ("DISABLE", RestartStrategyType::None),
                         ("fixeddelay", RestartStrategyType::FixedDelay), ("failure-rate", RestartStrategyType::FailureRate),
                         ("failurerate", RestartStrategyType::FailureRate), ("exponentialdelay", RestartStrategyType::ExponentialDelay),
                         ("Exponential-Delay", RestartStrategyType::ExponentialDelay)] {
        let mut c = Config::default();
        c.set("restart-strategy.type", text).unwrap();
        assert_eq!(c.restart_strategy.kind, Some(kind), "{text}");
        assert_eq!(c.get("restart-strategy.type").as_deref(), Some(kind.as_str()));
        c.set("restart-strategy.type", "unset").unwrap();
        assert_eq!(c.restart_strategy.kind, None);
    }
    // Numbers as strings, floats as integers, the boundaries, `infinite`.
    let c = Config::load(None, &sets(&["restart-strategy.exponential-delay.backoff-multiplier=1.0001",
        "restart-strategy.exponential-delay.jitter-factor=1", "restart-strategy.exponential-delay.attempts-before-reset-backoff=2_147_483_647",
        "restart-strategy.fixed-delay.attempts=0", "restart-strategy.failure-rate.failure-rate-interval=1ms",
        "restart-strategy.exponential-delay.initial-backoff=1ms", "restart-strategy.exponential-delay.max-backoff=1ms"])).unwrap();
    let ed = c.restart_strategy.exponential_delay;
    assert_eq!((ed.backoff_multiplier, ed.jitter_factor, ed.attempts_before_reset_backoff), (1.0001, 1.0, Some(i32::MAX as u32)));
    assert_eq!((ed.initial_backoff, ed.max_backoff), (ms(1), ms(1)));
    assert_eq!((c.restart_strategy.fixed_delay.attempts, c.restart_strategy.failure_rate.failure_rate_interval), (0, ms(1)));
    let c = toml("restart-strategy.exponential-delay.jitter-factor = 0\nrestart-strategy.exponential-delay.attempts-before-reset-backoff = \"Infinite\"").unwrap();
    assert_eq!(c.restart_strategy.exponential_delay.jitter_factor, 0.0);
    assert_eq!(c.restart_strategy.exponential_delay.attempts_before_reset_backoff, None);
}

/// Flink's rule for an unset `restart-strategy.type`.
#[test]
fn unset_restart_type_depends_on_checkpointing() {
    let c = Config::default();
    assert_eq!(c.effective_restart_strategy(), RestartStrategy::None);
    let on = sets(&[
        "execution.checkpointing.interval=1s",
        "state.checkpoints.dir=/tmp/c",
        "restart-strategy.exponential-delay.max-backoff=2min",
    ]);
    let c = Config::load(None, &on).unwrap();
    let expected = ExponentialDelay {
        max_backoff: Duration::from_secs(120),
        ..ExponentialDelay::default()
    };
    assert_eq!(
        c.effective_restart_strategy(),
        RestartStrategy::ExponentialDelay(expected)
    );
    let c = Config::load(None, &[on, sets(&["restart-strategy.type=none"])].concat()).unwrap();
    assert_eq!(c.effective_restart_strategy(), RestartStrategy::None);
}

#[test]
#[rustfmt::skip]
fn bad_checkpointing_and_restart_values_name_the_key() {
    let duration = "a duration such as 100ms";
    let cases = [
        ("execution.checkpointing.interval = \"9ms\"", "execution.checkpointing.interval", "of at least 10ms"),
        ("execution.checkpointing.interval = 0", "execution.checkpointing.interval", "of at least 10ms"),
        ("execution.checkpointing.interval = \"often\"", "execution.checkpointing.interval", duration),
        ("execution.checkpointing.mode = \"EXACTLY-ONCE\"", "execution.checkpointing.mode", "EXACTLY_ONCE or AT_LEAST_ONCE"),
        ("execution.checkpointing.mode = 1", "execution.checkpointing.mode", "EXACTLY_ONCE or AT_LEAST_ONCE"),
        ("execution.checkpointing.min-pause = -1", "execution.checkpointing.min-pause", duration),
        ("execution.checkpointing.timeout = \"5ms\"", "execution.checkpointing.timeout", "of at least 10ms"),
        ("execution.checkpointing.max-concurrent-checkpoints = 0", "execution.checkpointing.max-concurrent-checkpoints", "an integer from 1 to 2147483647"),
        ("execution.checkpointing.tolerable-failed-checkpoints = -1", "execution.checkpointing.tolerable-failed-checkpoints", "an integer from 0 to 2147483647"),
        ("execution.checkpointing.tolerable-failed-checkpoints = 2147483648", "execution.checkpointing.tolerable-failed-checkpoints", "an integer from 0 to 2147483647"),
        ("state.checkpoints.dir = \"\"", "state.checkpoints.dir", "a local directory"),
        ("state.checkpoints.dir = \"hdfs://nn/ckpt\"", "state.checkpoints.dir", "a local directory"),
        ("state.checkpoints.dir = \"s3://bucket/ckpt\"", "state.checkpoints.dir", "a local directory"),
        ("state.checkpoints.dir = \"file://relative\"", "state.checkpoints.dir", "a local directory"),
        ("state.checkpoints.dir = 5", "state.checkpoints.dir", "a local directory"),
        ("state.checkpoints.num-retained = 0", "state.checkpoints.num-retained", "an integer from 1 to 2147483647"),
        ("restart-strategy.type = \"fixed_delay\"", "restart-strategy.type", "one of none (also off, disable), fixed-delay"),
        ("restart-strategy.type = true", "restart-strategy.type", "one of none"),
        ("restart-strategy.fixed-delay.attempts = -1", "restart-strategy.fixed-delay.attempts", "an integer from 0 to 2147483647"),
        ("restart-strategy.fixed-delay.delay = \"soon\"", "restart-strategy.fixed-delay.delay", duration),
        ("restart-strategy.failure-rate.max-failures-per-interval = 0", "restart-strategy.failure-rate.max-failures-per-interval", "an integer from 1 to 2147483647"),
        ("restart-strategy.failure-rate.failure-rate-interval = 0", "restart-strategy.failure-rate.failure-rate-interval", "of at least 1ms"),
        ("restart-strategy.failure-rate.failure-rate-interval = \"999us\"", "restart-strategy.failure-rate.failure-rate-interval", "of at least 1ms"),
        ("restart-strategy.failure-rate.delay = 1.5", "restart-strategy.failure-rate.delay", duration),
        ("restart-strategy.exponential-delay.initial-backoff = 0", "restart-strategy.exponential-delay.initial-backoff", "of at least 1ms"),
        ("restart-strategy.exponential-delay.max-backoff = \"0ms\"", "restart-strategy.exponential-delay.max-backoff", "of at least 1ms"),
        ("restart-strategy.exponential-delay.reset-backoff-threshold = 0", "restart-strategy.exponential-delay.reset-backoff-threshold", "of at least 1ms"),
        ("restart-strategy.exponential-delay.backoff-multiplier = 1", "restart-strategy.exponential-delay.backoff-multiplier", "a number above 1"),
        ("restart-strategy.exponential-delay.backoff-multiplier = 0.5", "restart-strategy.exponential-delay.backoff-multiplier", "a number above 1"),
        ("restart-strategy.exponential-delay.backoff-multiplier = \"inf\"", "restart-strategy.exponential-delay.backoff-multiplier", "a number above 1"),
        ("restart-strategy.exponential-delay.backoff-multiplier = nan", "restart-strategy.exponential-delay.backoff-multiplier", "a number above 1"),
        ("restart-strategy.exponential-delay.backoff-multiplier = \"double\"", "restart-strategy.exponential-delay.backoff-multiplier", "a number above 1"),
        ("restart-strategy.exponential-delay.jitter-factor = 1.01", "restart-strategy.exponential-delay.jitter-factor", "a number from 0 to 1"),
        ("restart-strategy.exponential-delay.jitter-factor = -0.1", "restart-strategy.exponential-delay.jitter-factor", "a number from 0 to 1"),
        ("restart-strategy.exponential-delay.jitter-factor = true", "restart-strategy.exponential-delay.jitter-factor", "a number from 0 to 1"),
        ("restart-strategy.exponential-delay.attempts-before-reset-backoff = 0", "restart-strategy.exponential-delay.attempts-before-reset-backoff", "an integer from 1 to 2147483647, or infinite"),
        ("restart-strategy.exponential-delay.attempts-before-reset-backoff = \"unset\"", "restart-strategy.exponential-delay.attempts-before-reset-backoff", "or infinite"),
    ];
    for (text, key, expected) in cases {
        let err = toml(text).unwrap_err();
        assert!(matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key), "{text}: {err:?}");
        let named = format!("for key {key} in test.toml: expected ");
        let err = err.to_string();
        assert!(err.contains(&named) && err.contains(expected), "{text}: {err}");
    }
    // The old un-suffixed Flink key is not silently taken.
    let err = toml("restart-strategy = \"none\"").unwrap_err();
    assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
}

#[test]
fn checks_across_checkpointing_and_restart_keys() {
    let err = Config::load(None, &sets(&["execution.checkpointing.interval=30s"])).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Conflict { keys, .. }
            if keys == &["execution.checkpointing.interval", "state.checkpoints.dir"]),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "inconsistent configuration: execution.checkpointing.interval is set (30s) but \
         state.checkpoints.dir is not: checkpoints need a directory, so set \
         state.checkpoints.dir or unset execution.checkpointing.interval"
    );
    // The order of overrides does not matter; a later override may fix it.
    let fixed = [
        "execution.checkpointing.interval=30s",
        "state.checkpoints.dir=/tmp/c",
    ];
    assert!(Config::load(None, &sets(&fixed)).is_ok());
    let fixed = [
        "execution.checkpointing.interval=30s",
        "execution.checkpointing.interval=unset",
    ];
    assert!(Config::load(None, &sets(&fixed)).is_ok());
    // A directory without checkpointing is fine (and unused).
    assert!(toml("state.checkpoints.dir = \"/tmp/c\"").is_ok());

    let backoff = [
        "restart-strategy.exponential-delay.initial-backoff=2min",
        "restart-strategy.exponential-delay.max-backoff=1min",
    ];
    let err = Config::load(None, &sets(&backoff)).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Conflict { keys, .. } if keys.len() == 2),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains(
            "restart-strategy.exponential-delay.initial-backoff (2min) is above \
             restart-strategy.exponential-delay.max-backoff (1min)"
        ),
        "{err}"
    );
    // Checked whatever the type, so a file is valid or not as a whole.
    let err = toml("restart-strategy.type = \"none\"\nrestart-strategy.exponential-delay.initial-backoff = \"2min\"");
    assert!(matches!(err, Err(ConfigError::Conflict { .. })), "{err:?}");
    // Equal is allowed.
    let equal = ["restart-strategy.exponential-delay.initial-backoff=1min"];
    assert!(Config::load(None, &sets(&equal)).is_ok());
}

/// The keys of checkpointing under backpressure: Flink's names; Flink's
/// defaults where weir keeps them, weir's own where it does not.
#[test]
#[rustfmt::skip]
fn unaligned_and_debloat_keys_parse() {
    let c = Config::default();
    assert_eq!((c.unaligned_checkpoints, c.aligned_checkpoint_timeout), (false, ms(0)));
    assert_eq!((c.debloat_enabled, c.debloat_target, c.debloat_period), (false, ms(20), ms(50)));
    assert_eq!((c.debloat_samples, c.debloat_threshold_percentages, c.min_segment_size), (20, 25, 256));

    let c = toml("execution.checkpointing.unaligned.enabled = true\n\
                  execution.checkpointing.aligned-checkpoint-timeout = \"100ms\"\n\
                  [taskmanager.network.memory.buffer-debloat]\nenabled = \"TRUE\"\ntarget = \"1s\"\n\
                  period = 200\nsamples = \"1\"\nthreshold-percentages = 100\n\
                  [taskmanager.memory]\nmin-segment-size = \"1kb\"\n").unwrap();
    assert_eq!((c.unaligned_checkpoints, c.aligned_checkpoint_timeout), (true, ms(100)));
    assert_eq!((c.debloat_enabled, c.debloat_target, c.debloat_period), (true, ms(1000), ms(200)));
    assert_eq!((c.debloat_samples, c.debloat_threshold_percentages, c.min_segment_size), (1, 100, 1024));
    for (key, value) in [("execution.checkpointing.unaligned.enabled", "true"),
                         ("execution.checkpointing.aligned-checkpoint-timeout", "100ms"),
                         ("taskmanager.network.memory.buffer-debloat.enabled", "true"),
                         ("taskmanager.network.memory.buffer-debloat.target", "1s"),
                         ("taskmanager.network.memory.buffer-debloat.period", "200ms"),
                         ("taskmanager.network.memory.buffer-debloat.samples", "1"),
                         ("taskmanager.network.memory.buffer-debloat.threshold-percentages", "100"),
                         ("taskmanager.memory.min-segment-size", "1kb")] {
        assert_eq!(c.get(key).as_deref(), Some(value), "{key}");
    }
    // Boundaries are inclusive; the least segment may equal the segment.
    let c = Config::load(None, &sets(&["taskmanager.network.memory.buffer-debloat.threshold-percentages=0",
        "taskmanager.network.memory.buffer-debloat.target=1ms", "taskmanager.network.memory.buffer-debloat.period=1ms",
        "taskmanager.memory.min-segment-size=64b", "taskmanager.network.memory.buffer-debloat.enabled=true",
        "taskmanager.memory.segment-size=64b"])).unwrap();
    assert_eq!((c.debloat_threshold_percentages, c.debloat_target, c.debloat_period), (0, ms(1), ms(1)));
    assert_eq!((c.min_segment_size, c.segment_size), (64, 64));

    let cases = [
        ("execution.checkpointing.unaligned.enabled = \"yes\"", "execution.checkpointing.unaligned.enabled", "true or false"),
        ("execution.checkpointing.aligned-checkpoint-timeout = -1", "execution.checkpointing.aligned-checkpoint-timeout", "a duration such as"),
        ("taskmanager.network.memory.buffer-debloat.enabled = 1", "taskmanager.network.memory.buffer-debloat.enabled", "true or false"),
        ("taskmanager.network.memory.buffer-debloat.target = 0", "taskmanager.network.memory.buffer-debloat.target", "of at least 1ms"),
        ("taskmanager.network.memory.buffer-debloat.period = \"500us\"", "taskmanager.network.memory.buffer-debloat.period", "of at least 1ms"),
        ("taskmanager.network.memory.buffer-debloat.samples = 0", "taskmanager.network.memory.buffer-debloat.samples", "an integer from 1 to 2147483647"),
        ("taskmanager.network.memory.buffer-debloat.threshold-percentages = 101", "taskmanager.network.memory.buffer-debloat.threshold-percentages", "an integer from 0 to 100"),
        ("taskmanager.network.memory.buffer-debloat.threshold-percentages = \"25%\"", "taskmanager.network.memory.buffer-debloat.threshold-percentages", "an integer from 0 to 100"),
        ("taskmanager.memory.min-segment-size = \"32b\"", "taskmanager.memory.min-segment-size", "a memory size from 64b to 16mb"),
    ];
    for (text, key, expected) in cases {
        let err = toml(text).unwrap_err();
        assert!(matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key), "{text}: {err:?}");
        let err = err.to_string();
        assert!(err.contains(&format!("for key {key} in test.toml: expected ")) && err.contains(expected), "{text}: {err}");
    }
}

/// Unaligned checkpoints need EXACTLY_ONCE and one checkpoint at a time;
/// a debloated buffer's least size must fit in a buffer. The order of
/// overrides does not matter.
#[test]
fn checks_across_unaligned_and_debloat_keys() {
    let unaligned = "execution.checkpointing.unaligned.enabled=true";
    let err = Config::load(
        None,
        &sets(&[unaligned, "execution.checkpointing.mode=at_least_once"]),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::Conflict { keys, .. }
            if keys == &["execution.checkpointing.unaligned.enabled", "execution.checkpointing.mode"]),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("execution.checkpointing.unaligned.enabled is true but execution.checkpointing.mode is AT_LEAST_ONCE")
            && text.contains("only in EXACTLY_ONCE mode"),
        "{text}"
    );
    // Fixed by a later override, in either direction.
    for fix in [
        "execution.checkpointing.mode=EXACTLY_ONCE",
        "execution.checkpointing.unaligned.enabled=false",
    ] {
        let list = [unaligned, "execution.checkpointing.mode=AT_LEAST_ONCE", fix];
        assert!(Config::load(None, &sets(&list)).is_ok(), "{fix}");
    }
    // At-least-once alone, or a timeout without unaligned, is fine.
    assert!(toml("execution.checkpointing.mode = \"AT_LEAST_ONCE\"").is_ok());
    let c = toml("execution.checkpointing.aligned-checkpoint-timeout = \"5s\"").unwrap();
    assert!(!c.unaligned_checkpoints);

    let err = Config::load(
        None,
        &sets(&[
            unaligned,
            "execution.checkpointing.max-concurrent-checkpoints=2",
        ]),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::Conflict { keys, .. }
            if keys == &["execution.checkpointing.unaligned.enabled", "execution.checkpointing.max-concurrent-checkpoints"]),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("execution.checkpointing.max-concurrent-checkpoints is 2"),
        "{err}"
    );

    let small = [
        "taskmanager.memory.segment-size=128b",
        "taskmanager.network.memory.buffer-debloat.enabled=true",
    ];
    let err = Config::load(None, &sets(&small)).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Conflict { keys, .. } if keys.len() == 3),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(
            "taskmanager.memory.min-segment-size (256b) is above taskmanager.memory.segment-size (128b)"
        ),
        "{err}"
    );
    // Without debloating the least size is unused, so a small segment is fine.
    assert!(Config::load(None, &sets(&small[..1])).is_ok());
    let fixed = [&small[..], &["taskmanager.memory.min-segment-size=128b"]].concat();
    assert!(Config::load(None, &sets(&fixed)).is_ok());
}

/// The Prometheus port and the log keys: every form they take, from a
/// file, `--set` and back; a bad value names the key and the forms.
#[test]
#[rustfmt::skip]
fn prometheus_port_and_log_keys() {
    let c = Config::default();
    assert_eq!((c.prom_port, c.log_level.directives(), c.log_format), (None, "warn,weir=info".to_string(), LogFormat::Plain));
    let c = toml("metrics.reporter.prom.port = 9249\nlog.level = \"DEBUG\"\nlog.format = \"json\"").unwrap();
    assert_eq!((c.prom_port, c.log_level, c.log_format), (Some(PortRange::single(9249)), LogLevel::Level(LevelName::Debug), LogFormat::Json));
    let c = toml("[metrics.reporter.prom]\nport = \"9250-9260\"\n[log]\nlevel = \"warn,weir::checkpoint=trace\"").unwrap();
    assert_eq!(c.prom_port, Some(PortRange { first: 9250, last: 9260 }));
    assert_eq!(c.get("log.level").as_deref(), Some("warn,weir::checkpoint=trace"));
    let c = Config::load(None, &sets(&["metrics.reporter.prom.port=0", "metrics.reporter.prom.port=unset", "log.format=PLAIN"])).unwrap();
    assert_eq!((c.prom_port, c.log_format), (None, LogFormat::Plain));
    let cases = [
        ("metrics.reporter.prom.port = \"abc\"", "metrics.reporter.prom.port", "a range of ports such as 9250-9260"),
        ("metrics.reporter.prom.port = 65536", "metrics.reporter.prom.port", "a port from 0 to 65535"),
        ("metrics.reporter.prom.port = -1", "metrics.reporter.prom.port", "a port from 0 to 65535"),
        ("metrics.reporter.prom.port = \"9260-9250\"", "metrics.reporter.prom.port", "9250-9260"),
        ("metrics.reporter.prom.port = true", "metrics.reporter.prom.port", "or unset"),
        ("log.level = \"verbose\"", "log.level", "a level (off, error, warn, info, debug or trace)"),
        ("log.level = \"weir=loud\"", "log.level", "warn,weir::checkpoint=debug"),
        ("log.level = 3", "log.level", "a level"),
        ("log.format = \"text\"", "log.format", "plain or json"),
    ];
    for (text, key, expected) in cases {
        let err = toml(text).unwrap_err();
        assert!(matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key), "{text}: {err:?}");
        let err = err.to_string();
        assert!(err.contains(&format!("for key {key} in test.toml: expected ")) && err.contains(expected), "{text}: {err}");
    }
    let err = Config::load(None, &sets(&["metrics.reporter.prom.port=abc"])).unwrap_err().to_string();
    assert!(err.starts_with("invalid value \"abc\" for key metrics.reporter.prom.port in --set: expected a port"), "{err}");
}

#[test]
fn buffer_timeout_keys_as_flink_spells_them() {
    use crate::exchange::flush::BufferTimeout;
    let effective = |text: &str| toml(text).map(|c| c.effective_buffer_timeout()).ok();
    assert_eq!(effective(""), Some(BufferTimeout::Interval(ms(100))));
    // Flink 2's name, its older one, and Flink's -1 for "full buffers only".
    assert_eq!(
        effective("execution.buffer-timeout.interval = \"5ms\""),
        Some(BufferTimeout::Interval(ms(5)))
    );
    assert_eq!(
        effective("execution.buffer-timeout = 7"),
        Some(BufferTimeout::Interval(ms(7)))
    );
    assert_eq!(
        effective("execution.buffer-timeout = -1"),
        Some(BufferTimeout::Disabled)
    );
    assert_eq!(
        effective("\"execution.buffer-timeout.interval\" = \"-1\""),
        Some(BufferTimeout::Disabled)
    );
    // weir's adaptive deadline.
    assert_eq!(
        effective("execution.buffer-timeout.interval = \"auto\"\nexecution.buffer-timeout.latency-target = \"2ms\""),
        Some(BufferTimeout::Auto { target: ms(2) })
    );
    assert_eq!(
        effective("execution.buffer-timeout.latency-target = \"1us\""),
        None
    );
    // As a table; disabling keeps the interval for when it is enabled again.
    let c = toml("[execution.buffer-timeout]\nenabled = false\ninterval = \"3ms\"").unwrap();
    assert_eq!(c.effective_buffer_timeout(), BufferTimeout::Disabled);
    assert_eq!(c.buffer_timeout, ms(3));
    let c = toml("[execution.buffer-timeout]\noperators = \"src=0ms, keyed=-1\"").unwrap();
    assert_eq!(
        c.buffer_timeout_operators.to_string(),
        "keyed=disabled, src=0ms"
    );
    // A rendered configuration reads back (the older name stays a comment).
    assert_eq!(toml(&c.to_toml()).unwrap(), c);
    let err = toml("execution.buffer-timeout.operators = \"src\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("execution.buffer-timeout.operators")
            && err.contains("`src` is not `uid=timeout`"),
        "{err}"
    );
    let err = toml("execution.buffer-timeout.enabled = \"sometimes\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("execution.buffer-timeout.enabled"), "{err}");
}
