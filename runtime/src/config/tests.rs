//! Tests of the config module: defaults, both TOML key styles, every unit
//! form, each error kind and the README table.
use super::*;

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
    for (i, doc) in KEYS.iter().enumerate() {
        assert!(KEYS[..i].iter().all(|d| d.key != doc.key), "{}", doc.key);
        assert_eq!(c.get(doc.key).as_deref(), Some(doc.default), "{}", doc.key);
        set_back.set(doc.key, doc.default).unwrap();
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
fn flat_dotted_and_table_keys_mean_the_same() {
    let expected = Config { buffer_timeout: ms(10), job: JobName::W3, buffers_per_channel: 2, ..Config::default() };
    let styles = [
        "\"execution.buffer-timeout\" = \"10ms\"\n\"job.name\" = \"w3\"\n\"taskmanager.network.memory.buffers-per-channel\" = 2",
        "execution.buffer-timeout = \"10ms\"\njob.name = \"w3\"\ntaskmanager.network.memory.buffers-per-channel = 2",
        "[execution]\nbuffer-timeout = \"10ms\"\n[job]\nname = \"w3\"\n[taskmanager.network]\nmemory.buffers-per-channel = 2",
    ];
    for text in styles {
        assert_eq!(toml(text).unwrap(), expected, "{text}");
    }
    // Different TOML keys that name one weir key: TOML cannot see it, weir must.
    let err = toml("\"job.name\" = \"w1\"\n[job]\nname = \"w3\"\n").unwrap_err();
    assert!(matches!(err, ConfigError::Parse { .. }) && err.to_string().contains("job.name"), "{err}");
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
#[rustfmt::skip]
fn bare_integers_strings_and_separators() {
    let c = toml("job.warmup = 250\njob.duration = \"1500\"\ntaskmanager.memory.segment-size = 4096\n\
                  job.records = \"20_000_000\"\njob.keys = 1_000\njob.rate = \"7\"\n\
                  parallelism.default = 2\nweir.worker.pin-cores = \"FALSE\"\n").unwrap();
    assert_eq!((c.warmup, c.duration, c.segment_size), (ms(250), ms(1500), 4096));
    assert_eq!((c.records, c.keys, c.rate), (Some(20_000_000), Some(1000), Some(7)));
    assert_eq!((c.parallelism, c.pin_cores), (Some(2), false));
    for bad in ["\"_1\"", "\"1_\"", "\"1__0\"", "\"0x10\"", "\"-1\"", "-1", "0", "\"\""] {
        assert!(toml(&format!("job.records = {bad}")).is_err(), "{bad}");
    }
    // Range boundaries are inclusive.
    let c = toml("taskmanager.memory.segment-size = 64\npipeline.max-parallelism = 32768\n\
                  taskmanager.network.memory.floating-buffers-per-gate = 0\n").unwrap();
    assert_eq!((c.segment_size, c.max_parallelism, c.floating_buffers_per_gate), (64, 32768, 0));
}

#[test]
#[rustfmt::skip]
fn invalid_values_name_the_key_and_the_expected_form() {
    let err = toml("execution.buffer-timeout = \"10 parsecs\"").unwrap_err();
    let start = "invalid value \"10 parsecs\" for key execution.buffer-timeout in test.toml: \
                 expected a duration such as 100ms, 1s or 2min";
    assert!(err.to_string().starts_with(start), "{err}");
    let cases = [
        ("job.warmup = -5", "job.warmup", "a duration such as"),
        ("job.duration = 1.5", "job.duration", "a duration such as"),
        ("weir.progress.interval = [1]", "weir.progress.interval", "a duration such as"),
        ("weir.worker.spin-before-park = \"\"", "weir.worker.spin-before-park", "a duration"),
        ("job.name = \"W1\"", "job.name", "one of quickstart, w1, w3"),
        ("job.name = 1", "job.name", "one of quickstart, w1, w3"),
        ("pipeline.max-parallelism = 32769", "pipeline.max-parallelism", "an integer from 1 to 32768"),
        ("pipeline.max-parallelism = 0", "pipeline.max-parallelism", "an integer from 1 to 32768"),
        ("taskmanager.network.memory.buffers-per-channel = 1025",
         "taskmanager.network.memory.buffers-per-channel", "an integer from 1 to 1024"),
        ("taskmanager.network.memory.floating-buffers-per-gate = 65537",
         "taskmanager.network.memory.floating-buffers-per-gate", "an integer from 0 to 65536"),
        ("taskmanager.memory.segment-size = \"32b\"", "taskmanager.memory.segment-size", "a memory size from 64b to 16mb"),
        ("taskmanager.memory.segment-size = \"17mb\"", "taskmanager.memory.segment-size", "a memory size from 64b to 16mb"),
        ("weir.worker.pin-cores = \"yes\"", "weir.worker.pin-cores", "true or false"),
        ("weir.worker.pin-cores = 1", "weir.worker.pin-cores", "true or false"),
        ("job.records = 0", "job.records", "an integer of at least 1, or unset"),
        ("parallelism.default = true", "parallelism.default", "an integer of at least 1, or unset"),
    ];
    for (text, key, expected) in cases {
        let err = toml(text).unwrap_err();
        assert!(matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key), "{err:?}");
        let named = format!("for key {key} in test.toml: expected {expected}");
        assert!(err.to_string().contains(&named), "{err}");
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
fn overrides_win_over_the_file_in_order() {
    let name = format!("weir-config-test-{}.toml", std::process::id());
    let path = std::env::temp_dir().join(name);
    let file = "job.name = \"w1\"\nexecution.buffer-timeout = \"5ms\"\njob.records = 10\n";
    std::fs::write(&path, file).expect("write temp config");
    let later = [
        "execution.buffer-timeout=7ms",
        "job.name = w3",
        "job.records=unset",
    ];
    let ok = Config::load(Some(&path), &sets(&later));
    let bad = Config::load(Some(&path), &sets(&["job.rate=fast"]));
    std::fs::remove_file(&path).ok();
    let c = ok.unwrap();
    assert_eq!(c.job, JobName::W3);
    assert_eq!(c.buffer_timeout, ms(7));
    assert_eq!(c.records, None);
    let err = bad.unwrap_err().to_string();
    assert!(err.contains("for key job.rate in --set"), "{err}");
    let last = ["job.warmup=1s", "job.warmup = \"2s\""];
    assert_eq!(Config::load(None, &sets(&last)).unwrap().warmup, ms(2000));
    // Checks across keys wait for the last override.
    let err = Config::load(None, &sets(&["parallelism.default=200"])).unwrap_err();
    assert!(
        err.to_string().contains("pipeline.max-parallelism (128)"),
        "{err}"
    );
    let both = sets(&["parallelism.default=200", "pipeline.max-parallelism=256"]);
    assert_eq!(Config::load(None, &both).unwrap().parallelism, Some(200));
}

#[test]
#[rustfmt::skip]
fn to_toml_round_trips() {
    let custom = Config {
        job: JobName::W3, records: Some(1_000_000), keys: None, rate: Some(5), warmup: ms(1500),
        duration: ms(60_000), parallelism: Some(2), max_parallelism: 4096, buffer_timeout: ms(0),
        segment_size: 1 << 20, buffers_per_channel: 16, floating_buffers_per_gate: 0,
        pin_cores: false, spin_before_park: Duration::from_nanos(500), progress_interval: ms(250),
    };
    for config in [Config::default(), custom] {
        let text = config.to_toml();
        assert_eq!(toml(&text).unwrap(), config, "{text}");
        assert!(KEYS.iter().all(|doc| text.contains(doc.key)), "{text}");
    }
}

#[test]
fn readme_documents_every_key_with_its_default() {
    let readme = include_str!("../../../configs/README.md");
    for doc in KEYS {
        let row = format!("| `{}` | `{}` |", doc.key, doc.default);
        assert!(readme.lines().any(|l| l.starts_with(&row)), "no {row}");
    }
    let rows = readme.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(rows, KEYS.len(), "README's table has keys that KEYS lacks");
}

#[test]
fn job_names_parse_and_display() {
    for job in JobName::ALL {
        assert_eq!(job.to_string().parse::<JobName>(), Ok(job));
    }
    let err = "Quickstart".parse::<JobName>().unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown job \"Quickstart\": expected one of quickstart, w1, w3"
    );
}
