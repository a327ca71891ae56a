//! The Prometheus endpoint and the log's formats as a user meets them
//! (issue 22, docs/METRICS.md): a real `weir bench w1` with
//! `metrics.reporter.prom.port = 0`, scraped twice while it runs, parses
//! with the Prometheus project's own Python parsers (prometheus_client,
//! both the OpenMetrics and the 0.0.4 text format) into the documented
//! families and labels, whose counters grow and agree with REST's; bad
//! values and a taken port stop the command at start; `log.format = json`
//! turns every log line into a JSON object, from `--set` and from a SQL
//! script's `SET`.
//!
//! The parser runs in a venv that `tools/prometheus/setup.sh` makes: the
//! test takes its python from `WEIR_PROM_PYTHON` (as `.ci/run` sets it)
//! or runs the script itself, and fails saying how to run it if it cannot.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{repo, Proc, Scratch, CONDITION, FINISH, WEIR};

/// The venv python with `prometheus_client`: `WEIR_PROM_PYTHON`, or what
/// `tools/prometheus/setup.sh` prints. Panics saying how to set it up.
fn parser_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        support::venv_python(
            "WEIR_PROM_PYTHON",
            "tools/prometheus/setup.sh",
            "import prometheus_client.openmetrics.parser",
            "the Prometheus output is checked with the Prometheus project's Python \
             parser: run `tools/prometheus/setup.sh` (it makes a venv with \
             prometheus_client from PyPI under ~/.cache/weir and prints its python) and \
             set WEIR_PROM_PYTHON to what it prints, as .ci/run does",
        )
    })
}

/// One parsed family: its type and samples (sample name, labels, value).
#[derive(Debug)]
struct Family {
    kind: String,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

/// `text` parsed by prometheus_client's `format` parser
/// (`openmetrics` or `prometheus`), by family name.
fn parse(s: &Scratch, format: &str, text: &str) -> BTreeMap<String, Family> {
    let file = s.join(&format!("scrape-{format}-{}.txt", text.len()));
    fs::write(&file, text).unwrap();
    let out = Command::new(parser_python())
        .arg("-I")
        .arg(repo().join("tools/prometheus/parse.py"))
        .arg(format)
        .arg(&file)
        .output()
        .expect("run the parser");
    assert!(
        out.status.success(),
        "the {format} parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let families: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the parser's JSON");
    families
        .into_iter()
        .map(|f| {
            let samples = f["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let labels = s["labels"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                        .collect();
                    let value = s["value"].as_f64().unwrap_or_else(|| panic!("{s}"));
                    (s["name"].as_str().unwrap().to_owned(), labels, value)
                })
                .collect();
            let name = f["name"].as_str().unwrap().to_owned();
            let kind = f["type"].as_str().unwrap().to_owned();
            (name, Family { kind, samples })
        })
        .collect()
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build()
}

/// A scrape of `url`: OpenMetrics (as Prometheus asks) or the text format.
fn scrape(url: &str, openmetrics: bool) -> String {
    let mut r = agent().get(url);
    if openmetrics {
        r = r.set(
            "Accept",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
        );
    }
    let r = r.call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let content_type = r.header("Content-Type").unwrap_or_default().to_owned();
    let expected = if openmetrics {
        "application/openmetrics-text"
    } else {
        "text/plain; version=0.0.4"
    };
    assert!(content_type.starts_with(expected), "{content_type}");
    r.into_string().unwrap()
}

fn rest(base: &str, path: &str) -> Value {
    agent()
        .get(&format!("{base}{path}"))
        .call()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
        .into_json()
        .unwrap()
}

/// Sum of the samples of `family` whose `task_name` is `task` (all if None).
fn sum(f: &BTreeMap<String, Family>, family: &str, task: Option<&str>) -> f64 {
    f.get(family)
        .unwrap_or_else(|| panic!("no family {family}"))
        .samples
        .iter()
        .filter(|(_, l, _)| task.is_none_or(|t| l["task_name"] == t))
        .map(|(_, _, v)| v)
        .sum()
}

fn job_value(f: &BTreeMap<String, Family>, family: &str) -> f64 {
    let s = &f
        .get(family)
        .unwrap_or_else(|| panic!("no family {family}"))
        .samples;
    assert_eq!(s.len(), 1, "{family}: {s:?}");
    s[0].2
}

const TASK_COUNTERS: [&str; 4] = ["numRecordsIn", "numRecordsOut", "numBytesIn", "numBytesOut"];
const TASK_GAUGES: [&str; 7] = [
    "numRecordsInPerSecond",
    "numRecordsOutPerSecond",
    "numBytesInPerSecond",
    "numBytesOutPerSecond",
    "busyTimeMsPerSecond",
    "backPressuredTimeMsPerSecond",
    "idleTimeMsPerSecond",
];
const JOB_COUNTERS: [&str; 4] = [
    "numRestarts",
    "numberOfCompletedCheckpoints",
    "numberOfFailedCheckpoints",
    "totalNumberOfCheckpoints",
];
const JOB_GAUGES: [&str; 6] = [
    "uptime",
    "numberOfInProgressCheckpoints",
    "lastCheckpointDuration",
    "lastCheckpointSize",
    "lastCheckpointPersistedData",
    "lastCheckpointRestoreTimestamp",
];

#[test]
fn a_running_job_scrapes_into_flinks_families_that_agree_with_rest() {
    let s = Scratch::new("prometheus", "scrape");
    let rate = 100_000u64;
    let mut c = Command::new(WEIR);
    c.args(["bench", "w1", "--quiet", "--workers", "2"]).args([
        "--n",
        "800000",
        "--k",
        "50",
        "--rate",
        &rate.to_string(),
    ]);
    for set in [
        format!("state.checkpoints.dir={}", s.join("ck").display()),
        "execution.checkpointing.interval=200ms".into(),
        "weir.worker.pin-cores=false".into(),
        "rest.port=0".into(),
        "metrics.reporter.prom.port=0".into(),
    ] {
        c.arg("--set").arg(set);
    }
    c.env_remove("RUST_LOG").env_remove("WEIR_FAILPOINTS");
    let mut p = Proc::spawn(&s, "w1", c);
    let url = p.printed("Prometheus endpoint: ");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/metrics"),
        "{url}"
    );
    let base = p.printed("REST endpoint: ");

    // The job's identity and stages as REST has them.
    let mut job = String::new();
    p.wait_until("RUNNING", || {
        let jobs = rest(&base, "/jobs");
        job = jobs["jobs"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        jobs["jobs"][0]["status"] == "RUNNING"
    });
    let details = rest(&base, &format!("/jobs/{job}"));
    let vertices: BTreeMap<String, String> = details["vertices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().into(),
                v["id"].as_str().unwrap().into(),
            )
        })
        .collect();
    let keyed = vertices
        .keys()
        .find(|n| n.contains("w1-keyed-count"))
        .expect("the keyed stage")
        .clone();
    let rest_records = |base: &str| -> u64 {
        rest(base, &format!("/jobs/{job}"))["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == keyed.as_str())
            .map(|v| v["metrics"]["read-records"].as_u64().unwrap())
            .unwrap()
    };
    let rest_completed = |base: &str| {
        rest(base, &format!("/jobs/{job}/checkpoints"))["counts"]["completed"]
            .as_u64()
            .unwrap()
    };

    // First scrape once records flow, second once a checkpoint completed
    // and more records went by; each bracketed by REST's counts.
    p.wait_until("records", || rest_records(&base) > 0);
    let before = rest_records(&base);
    let first_text = scrape(&url, true);
    let after = rest_records(&base);
    let first = parse(&s, "openmetrics", &first_text);
    let scraped = sum(
        &first,
        "weir_taskmanager_job_task_numRecordsIn",
        Some(&keyed),
    ) as u64;
    assert!(
        before <= scraped && scraped <= after,
        "REST {before}..{after}, scraped {scraped}"
    );

    p.wait_until("a completed checkpoint and more records", || {
        rest_completed(&base) >= 1 && rest_records(&base) > after + rate / 2
    });
    let (records_before, completed_before) = (rest_records(&base), rest_completed(&base));
    let second_text = scrape(&url, true);
    let plain_text = scrape(&url, false);
    let (records_after, completed_after) = (rest_records(&base), rest_completed(&base));
    let second = parse(&s, "openmetrics", &second_text);
    let plain = parse(&s, "prometheus", &plain_text);
    assert!(p.wait(FINISH).success(), "{}", p.stderr());

    // Every documented family, of its type, in both formats.
    for (names, kind, scope) in [
        (&TASK_COUNTERS[..], "counter", "taskmanager_job_task"),
        (&TASK_GAUGES[..], "gauge", "taskmanager_job_task"),
        (
            &["currentInputWatermark"][..],
            "gauge",
            "taskmanager_job_task",
        ),
        (&JOB_COUNTERS[..], "counter", "jobmanager_job"),
        (&JOB_GAUGES[..], "gauge", "jobmanager_job"),
    ] {
        for name in names {
            let family = format!("weir_{scope}_{name}");
            for (format, parsed) in [("openmetrics", &second), ("prometheus", &plain)] {
                let f = parsed
                    .get(&family)
                    .unwrap_or_else(|| panic!("{format}: no {family}\n{second_text}"));
                assert_eq!(f.kind, kind, "{format}: {family}");
                for (sample, _, _) in &f.samples {
                    let expected = if kind == "counter" {
                        format!("{family}_total")
                    } else {
                        family.clone()
                    };
                    assert_eq!(sample, &expected, "{format}");
                }
            }
        }
    }
    assert_eq!(
        second.len(),
        4 + 7 + 1 + 4 + 6,
        "no other families: {:?}",
        second.keys()
    );

    // Labels: one sample per subtask of each stage, named as REST names
    // them; job samples carry the job's id and name.
    let name = details["name"].as_str().unwrap();
    for counter in TASK_COUNTERS.iter().chain(&TASK_GAUGES) {
        let f = &second[&format!("weir_taskmanager_job_task_{counter}")];
        assert_eq!(
            f.samples.len(),
            2 * vertices.len(),
            "{counter}: {:?}",
            f.samples
        );
        for (_, l, v) in &f.samples {
            assert_eq!(
                l.keys().map(String::as_str).collect::<Vec<_>>(),
                [
                    "job_id",
                    "job_name",
                    "subtask_index",
                    "task_id",
                    "task_name",
                    "tm_id"
                ]
            );
            assert_eq!(
                (l["job_id"].as_str(), l["job_name"].as_str()),
                (job.as_str(), name)
            );
            assert_eq!(vertices.get(&l["task_name"]), Some(&l["task_id"]), "{l:?}");
            assert!(["0", "1"].contains(&l["subtask_index"].as_str()), "{l:?}");
            assert!(
                ["worker-0", "worker-1"].contains(&l["tm_id"].as_str()),
                "{l:?}"
            );
            assert!(v.is_finite() && *v >= 0.0, "{counter} {l:?} {v}");
        }
    }
    for family in JOB_COUNTERS.iter().chain(&JOB_GAUGES) {
        let f = &second[&format!("weir_jobmanager_job_{family}")];
        let l = &f.samples[0].1;
        assert_eq!(l.len(), 2, "{family}: {l:?}");
        assert_eq!(
            (l["job_id"].as_str(), l["job_name"].as_str()),
            (job.as_str(), name)
        );
    }

    // Counters grow between the scrapes and agree with REST.
    let records = |f: &BTreeMap<String, Family>| {
        sum(f, "weir_taskmanager_job_task_numRecordsIn", Some(&keyed)) as u64
    };
    assert!(
        records(&second) > records(&first),
        "{} then {}",
        records(&first),
        records(&second)
    );
    assert!(
        records_before <= records(&second) && records(&second) <= records_after,
        "REST {records_before}..{records_after}, scraped {}",
        records(&second)
    );
    for family in TASK_COUNTERS {
        let family = format!("weir_taskmanager_job_task_{family}");
        assert!(
            sum(&second, &family, None) >= sum(&first, &family, None),
            "{family}"
        );
    }
    assert!(
        job_value(&second, "weir_jobmanager_job_uptime")
            > job_value(&first, "weir_jobmanager_job_uptime")
    );
    let completed = job_value(&second, "weir_jobmanager_job_numberOfCompletedCheckpoints") as u64;
    assert!(
        completed >= 1 && completed_before <= completed && completed <= completed_after,
        "REST {completed_before}..{completed_after}, scraped {completed}"
    );
    assert!(job_value(&second, "weir_jobmanager_job_lastCheckpointDuration") > 0.0);
    assert!(job_value(&second, "weir_jobmanager_job_lastCheckpointSize") > 0.0);
    assert_eq!(job_value(&second, "weir_jobmanager_job_numRestarts"), 0.0);
    assert_eq!(
        job_value(
            &second,
            "weir_jobmanager_job_lastCheckpointRestoreTimestamp"
        ),
        -1.0
    );

    // Time shares of each subtask add up to a second; the keyed stage
    // reads about what the sources send.
    let shares = |index: &str, task: &str| -> f64 {
        [
            "busyTimeMsPerSecond",
            "backPressuredTimeMsPerSecond",
            "idleTimeMsPerSecond",
        ]
        .iter()
        .map(|g| {
            second[&format!("weir_taskmanager_job_task_{g}")]
                .samples
                .iter()
                .find(|(_, l, _)| l["subtask_index"] == index && l["task_name"] == task)
                .unwrap()
                .2
        })
        .sum()
    };
    for task in vertices.keys() {
        for index in ["0", "1"] {
            let total = shares(index, task);
            assert!((total - 1000.0).abs() < 1.0, "{task} #{index}: {total}");
        }
    }
    let per_second = sum(
        &second,
        "weir_taskmanager_job_task_numRecordsInPerSecond",
        Some(&keyed),
    );
    assert!(
        per_second > 0.0 && per_second < 10.0 * rate as f64,
        "{per_second} records/s at {rate}/s"
    );
}

/// `weir bench w1` of `n` records with `args` (`--set` and others), to
/// its end.
fn bench_n(n: u64, args: &[&str]) -> Output {
    let mut c = Command::new(WEIR);
    c.args(["bench", "w1", "--quiet", "--k", "10", "--workers", "1"])
        .args(["--n", &n.to_string()]);
    for a in args {
        if a.starts_with("--") {
            c.arg(a);
        } else {
            c.arg("--set").arg(a);
        }
    }
    c.env_remove("RUST_LOG").output().expect("run weir")
}

/// A short `weir bench w1` with `sets`.
fn bench(sets: &[&str]) -> Output {
    bench_n(1000, sets)
}

#[test]
fn bad_values_and_unusable_ports_stop_the_command_at_start() {
    for (set, want) in [
        (
            "metrics.reporter.prom.port=abc",
            "error: invalid value \"abc\" for key metrics.reporter.prom.port in --set: \
             expected a port from 0 to 65535 (0 picks a free one), a range of ports such as \
             9250-9260",
        ),
        (
            "metrics.reporter.prom.port=9260-9250",
            "error: invalid value \"9260-9250\" for key metrics.reporter.prom.port in --set",
        ),
        (
            "log.level=loud",
            "error: invalid value \"loud\" for key log.level in --set: expected a level (off, \
             error, warn, info, debug or trace)",
        ),
        (
            "log.format=xml",
            "error: invalid value \"xml\" for key log.format in --set: expected plain or json",
        ),
    ] {
        let out = bench(&[set]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.starts_with(want), "{set}: expected `{want}` in:\n{err}");
        assert_eq!(err.lines().count(), 1, "{set}: one line: {err}");
    }

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = bench(&[&format!("metrics.reporter.prom.port={port}")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: cannot serve the Prometheus endpoint on 127.0.0.1 port {port}: "
        )) && err.contains("set metrics.reporter.prom.port to another port"),
        "{err}"
    );

    let out = bench(&["metrics.reporter.prom.port=0", "rest.bind-address=0.0.0.0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(
            "error: metrics.reporter.prom.port is set and rest.bind-address = 0.0.0.0 is \
             reachable from other hosts: set rest.auth-token"
        ),
        "{err}"
    );
}

/// Each line of `stderr` that is a log event parses as one JSON object
/// with a timestamp, level, target and message; the others are the
/// command's own report lines. Returns the events.
fn json_events(stderr: &str) -> Vec<Value> {
    let mut events = Vec::new();
    for line in stderr.lines() {
        if line.starts_with('{') {
            let v: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\n{stderr}"));
            for key in ["timestamp", "level", "target", "message"] {
                assert!(v[key].is_string(), "{key} in {line}");
            }
            assert!(
                ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&v["level"].as_str().unwrap()),
                "{line}"
            );
            events.push(v);
        } else {
            // Not a log line of the plain format, which json replaces.
            assert!(
                !line.starts_with("warning: ")
                    && !line.starts_with("error: ")
                    && !line.starts_with("[checkpoint "),
                "a plain log line in json mode: {line}\n{stderr}"
            );
        }
    }
    events
}

#[test]
fn json_logs_from_set_and_from_sql() {
    let s = Scratch::new("prometheus", "json-logs");
    // debug adds the checkpoints' trace summaries.
    let out = bench_n(
        300_000,
        &[
            "log.format=json",
            "log.level=debug",
            &format!("state.checkpoints.dir={}", s.join("ck").display()),
            "execution.checkpointing.interval=50ms",
            "rest.port=0",
            "metrics.reporter.prom.port=0",
            "job.rate=100000",
            "weir.worker.pin-cores=false",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let events = json_events(&stderr);
    assert!(
        events.iter().any(|e| e["level"] == "DEBUG"
            && e["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("weir::checkpoint"))),
        "no checkpoint debug event:\n{stderr}"
    );
    // The command's own lines stay plain.
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("REST endpoint: http://")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("Prometheus endpoint: http://")),
        "{stderr}"
    );

    // `--restore latest` in an empty directory logs that it starts fresh
    // (info).

    let out = bench(&[
        "--restore=latest",
        "log.format=json",
        &format!("state.checkpoints.dir={}", s.join("empty").display()),
        "execution.checkpointing.interval=1h",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let events = json_events(&stderr);
    let fresh = events
        .iter()
        .find(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("no complete checkpoint in "))
        })
        .unwrap_or_else(|| panic!("no restore event:\n{stderr}"));
    assert_eq!(
        (fresh["level"].as_str(), fresh["target"].as_str()),
        (Some("INFO"), Some("weir::restore"))
    );

    // A SQL script's SET is a config key like any other.
    let script = s.join("json.sql");
    fs::write(
        &script,
        format!(
            "SET 'log.format' = 'json';
             SET 'rest.port' = '0';
             SET 'state.checkpoints.dir' = '{}';
             SET 'execution.checkpointing.interval' = '1h';
             CREATE TABLE t (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '20',
                 'rows-per-second' = '0', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
                 'fields.id.end' = '20');
             SELECT COUNT(*) AS n FROM t;",
            s.join("sql-ck").display()
        ),
    )
    .unwrap();
    let out = Command::new(WEIR)
        .arg("sql")
        .arg(&script)
        .args(["--restore", "latest", "--workers", "1"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let events = json_events(&stderr);
    assert!(
        events.iter().any(|e| e["target"] == "weir::restore"),
        "no restore event from the script's run:\n{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("20"),
        "the query's result"
    );
}

#[test]
fn latency_markers_scrape_as_flinks_latency_quantiles() {
    let s = Scratch::new("prometheus", "latency");
    let mut c = Command::new(WEIR);
    c.args(["bench", "w1", "--quiet", "--workers", "2"])
        .args(["--n", "2000000", "--k", "50", "--rate", "50000"]);
    for set in [
        "weir.worker.pin-cores=false",
        "rest.port=0",
        "metrics.reporter.prom.port=0",
        "metrics.latency.interval=5ms",
    ] {
        c.arg("--set").arg(set);
    }
    c.env_remove("RUST_LOG").env_remove("WEIR_FAILPOINTS");
    let mut p = Proc::spawn(&s, "w1", c);
    let url = p.printed("Prometheus endpoint: ");
    let base = p.printed("REST endpoint: ");
    let mut job = String::new();
    p.wait_until("RUNNING", || {
        let jobs = rest(&base, "/jobs");
        job = jobs["jobs"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        jobs["jobs"][0]["status"] == "RUNNING"
    });
    let vertices = rest(&base, &format!("/jobs/{job}"))["vertices"].clone();
    let (source, keyed) = (
        vertices[0]["id"].as_str().unwrap().to_owned(),
        vertices[1]["id"].as_str().unwrap().to_owned(),
    );
    let name = "weir_taskmanager_job_latency_source_id_operator_id_operator_subtask_index_latency";
    let since = Instant::now();
    let family = loop {
        let mut families = parse(&s, "openmetrics", &scrape(&url, true));
        if let Some(f) = families.remove(name) {
            // Both keyed subtasks, every quantile.
            if f.samples.len() == 2 * 6 {
                break f;
            }
        }
        assert!(since.elapsed() < CONDITION, "no {name} for both subtasks");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(family.kind, "gauge");
    for subtask in ["0", "1"] {
        let mut by_quantile: Vec<(f64, f64)> = family
            .samples
            .iter()
            .filter(|(_, l, _)| l["operator_subtask_index"] == subtask)
            .map(|(_, l, v)| {
                assert_eq!(
                    (
                        l["source_id"].as_str(),
                        l["operator_id"].as_str(),
                        l["task_id"].as_str()
                    ),
                    (source.as_str(), keyed.as_str(), keyed.as_str()),
                    "{l:?}"
                );
                (l["quantile"].parse::<f64>().unwrap(), *v)
            })
            .collect();
        by_quantile.sort_by(|a, b| a.0.total_cmp(&b.0));
        let quantiles: Vec<f64> = by_quantile.iter().map(|q| q.0).collect();
        assert_eq!(quantiles, [0.5, 0.75, 0.95, 0.98, 0.99, 0.999]);
        // Milliseconds, never negative, rising with the quantile.
        assert!(by_quantile[0].1 >= 0.0, "{by_quantile:?}");
        assert!(
            by_quantile.windows(2).all(|w| w[0].1 <= w[1].1),
            "{by_quantile:?}"
        );
    }
    // The text format parses too.
    assert!(parse(&s, "prometheus", &scrape(&url, false)).contains_key(name));
    assert!(p.kill());
}
