//! The job parameters' keys beside weir's own: both key styles, values and
//! their errors, overrides, the README table of every key and the example
//! files (which name built-in jobs).

use std::path::Path;
use std::time::Duration;

use weir_runtime::config::{Config, ConfigError, KEYS};

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn toml(text: &str) -> Result<(Config, JobParams), ConfigError> {
    Config::from_toml_str_with::<JobParams>(text, "test.toml")
}

fn sets(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
#[rustfmt::skip]
fn flat_dotted_and_table_keys_mean_the_same() {
    let expected = (Config { buffer_timeout: ms(10), buffers_per_channel: 2, ..Config::default() },
                    JobParams { job: JobName::W3, ..JobParams::default() });
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
fn bare_integers_strings_and_separators() {
    let (c, p) = toml("job.warmup = 250\njob.duration = \"1500\"\ntaskmanager.memory.segment-size = 4096\n\
                  job.records = \"20_000_000\"\njob.keys = 1_000\njob.rate = \"7\"\n\
                  parallelism.default = 2\nweir.worker.pin-cores = \"FALSE\"\n").unwrap();
    assert_eq!((p.warmup, p.duration, c.segment_size), (ms(250), ms(1500), 4096));
    assert_eq!((p.records, p.keys, p.rate), (Some(20_000_000), Some(1000), Some(7)));
    assert_eq!((c.parallelism, c.pin_cores), (Some(2), false));
    for bad in ["\"_1\"", "\"1_\"", "\"1__0\"", "\"0x10\"", "\"-1\"", "-1", "0", "\"\""] {
        assert!(toml(&format!("job.records = {bad}")).is_err(), "{bad}");
    }
    // Range boundaries are inclusive.
    let (c, _) = toml("taskmanager.memory.segment-size = 64\npipeline.max-parallelism = 32768\n\
                  taskmanager.network.memory.floating-buffers-per-gate = 0\n").unwrap();
    assert_eq!((c.segment_size, c.max_parallelism, c.floating_buffers_per_gate), (64, 32768, 0));
    // The watermark interval: Flink's 200ms by default; 0ms turns it off.
    assert_eq!(Config::default().auto_watermark_interval, ms(200));
    let (c, _) = toml("pipeline.auto-watermark-interval = \"0ms\"").unwrap();
    assert_eq!(c.auto_watermark_interval, Duration::ZERO);
    let (c, _) = toml("pipeline.auto-watermark-interval = \"1ms\"").unwrap();
    assert_eq!(c.auto_watermark_interval, ms(1));
    let err = toml("pipeline.auto-watermark-interval = \"500us\"").unwrap_err();
    assert!(err.to_string().ends_with("0ms (off) or at least 1ms"), "{err}");
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
        ("job.name = \"W1\"", "job.name", "one of quickstart, w1, w2, w3"),
        ("job.name = 1", "job.name", "one of quickstart, w1, w2, w3"),
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
        ("pipeline.auto-watermark-interval = \"500us\"", "pipeline.auto-watermark-interval",
         "a duration such as 100ms, 1s or 2min"),
    ];
    for (text, key, expected) in cases {
        let err = toml(text).unwrap_err();
        assert!(matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key), "{err:?}");
        let named = format!("for key {key} in test.toml: expected {expected}");
        assert!(err.to_string().contains(&named), "{err}");
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
    let ok = Config::load_with::<JobParams>(Some(&path), &sets(&later));
    let bad = Config::load_with::<JobParams>(Some(&path), &sets(&["job.rate=fast"]));
    std::fs::remove_file(&path).ok();
    let (c, p) = ok.unwrap();
    assert_eq!(p.job, JobName::W3);
    assert_eq!(c.buffer_timeout, ms(7));
    assert_eq!(p.records, None);
    let err = bad.unwrap_err().to_string();
    assert!(err.contains("for key job.rate in --set"), "{err}");
    let last = ["job.warmup=1s", "job.warmup = \"2s\""];
    assert_eq!(
        Config::load_with::<JobParams>(None, &sets(&last))
            .unwrap()
            .1
            .warmup,
        ms(2000)
    );
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
fn readme_documents_every_key_with_its_default() {
    let readme = include_str!("../../../configs/README.md");
    let keys = KEYS.iter().map(|k| (k.name, k.default_value()));
    let keys: Vec<_> = keys
        .chain(JOB_KEYS.iter().map(|k| (k.name, k.default_value())))
        .collect();
    for (key, default) in &keys {
        let row = format!("| `{key}` | `{default}` |");
        assert!(readme.lines().any(|l| l.starts_with(&row)), "no {row}");
    }
    let rows = readme.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(
        rows,
        keys.len(),
        "README's table has keys that KEYS and JOB_KEYS lack"
    );
}

#[test]
fn job_names_parse_and_display() {
    for job in JobName::ALL {
        assert_eq!(job.to_string().parse::<JobName>(), Ok(job));
    }
    let err = "Quickstart".parse::<JobName>().unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown job \"Quickstart\": expected one of quickstart, w1, w2, w3"
    );
}

/// Every example in configs/ loads, so the examples cannot rot.
#[test]
fn example_configs_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).expect("read configs/") {
        let path = entry.expect("configs/ entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            if let Err(err) = Config::load_with::<JobParams>(Some(&path), &[]) {
                panic!("{}: {err}", path.display());
            }
            loaded += 1;
        }
    }
    assert!(
        loaded >= 4,
        "only {loaded} example configs in {}",
        dir.display()
    );
    let (checkpointing, _) =
        Config::load_with::<JobParams>(Some(&dir.join("checkpointing.toml")), &[]).unwrap();
    assert!(checkpointing.checkpointing_enabled());
}
