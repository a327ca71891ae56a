//! The exposition of a hand-made view, in both formats, and the endpoint
//! as a scraper meets it (token, paths, ports). The end-to-end test with
//! a real parser is tools/tests/prometheus.rs.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::path::PathBuf;

use prometheus_client::registry::Registry;
use weir_runtime::checkpoint::stats::{CheckpointRecord, CheckpointStatus};
use weir_runtime::exec::handle::{
    ExceptionRecord, RestoredView, SubtaskView, VertexInput, VertexView,
};
use weir_runtime::metrics::{SubtaskId, SubtaskSnapshot};
use weir_runtime::{IoRates, JobHandle, JobState, JobView, TimeShares};

use super::families::{encode_view, FAMILIES};
use super::*;

const JOB: &str = "0123456789abcdef0123456789abcdef";
const SOURCE: &str = "00000000000000000000000000000001";
const COUNT: &str = "00000000000000000000000000000002";

fn subtask(stage: &str, index: usize, records: u64, watermark: Option<i64>) -> SubtaskView {
    SubtaskView {
        index,
        worker: index,
        now: SubtaskSnapshot {
            id: SubtaskId {
                stage: stage.into(),
                index,
                parallelism: 2,
                worker: index,
            },
            at_ns: 3_000_000_000,
            started_ns: Some(1_000_000_000),
            ended_ns: None,
            busy_ns: 500_000_000,
            backpressured_ns: 1_000_000_000,
            idle_ns: 500_000_000,
            records_in: records,
            records_out: records,
            source_records: 0,
            bytes_in: records * 16,
            bytes_out: records * 16,
            in_flight_bytes: Vec::new(),
            input_watermark: watermark,
        },
        recent: Some(TimeShares {
            busy: 250.0,
            backpressured: 500.0,
            idle: 250.0,
        }),
        rates: Some(IoRates {
            records_in: 1500.0,
            records_out: 1500.0,
            bytes_in: 24000.0,
            bytes_out: 24000.0,
        }),
        latency: Vec::new(),
    }
}

fn checkpoint(id: u64, status: CheckpointStatus, duration_ms: f64, bytes: u64) -> CheckpointRecord {
    CheckpointRecord {
        id,
        status,
        is_final: false,
        is_savepoint: false,
        trigger_ms: 1_796_217_358_000 + id * 1000,
        duration_ms,
        alignment_ms: 0.5,
        sync_ms: 0.1,
        async_ms: 3.0,
        bytes,
        inflight_bytes: 0,
        failure: (status == CheckpointStatus::Failed).then(|| "declined".into()),
        tasks: Vec::new(),
    }
}

/// [`base_view`] with latency markers on: the keyed stage's subtask 0
/// has a histogram from the source.
fn view() -> JobView {
    let mut v = base_view();
    v.vertices[1].subtasks[0].latency = vec![weir_runtime::exec::handle::LatencyView {
        source_vertex: Some(SOURCE.into()),
        source_subtask: None,
        stats: weir_runtime::metrics::LatencyStats {
            count: 40,
            samples: 40,
            min: 0.01,
            max: 2.0,
            mean: 0.5,
            stddev: 0.2,
            p50: 0.4,
            p75: 0.6,
            p90: 0.9,
            p95: 1.1,
            p98: 1.5,
            p99: 1.8,
            p999: 2.0,
        },
    }];
    v
}

/// A running job of two stages at parallelism 2, three checkpoints (the
/// newest failed), restored once and restarted once.
fn base_view() -> JobView {
    JobView {
        job_id: JOB.into(),
        name: "w1".into(),
        state: JobState::Running,
        start_ms: 1_796_217_358_000,
        end_ms: None,
        now_ms: 1_796_217_368_000,
        workers: 2,
        max_parallelism: 128,
        vertices: vec![
            VertexView {
                id: SOURCE.into(),
                name: "w1-source".into(),
                parallelism: 2,
                inputs: Vec::new(),
                subtasks: vec![
                    subtask("w1-source", 0, 0, None),
                    subtask("w1-source", 1, 0, None),
                ],
            },
            VertexView {
                id: COUNT.into(),
                name: "w1-keyed-count -> w1-sink".into(),
                parallelism: 2,
                inputs: vec![VertexInput {
                    vertex: SOURCE.into(),
                    ship_strategy: "HASH",
                }],
                subtasks: vec![
                    subtask(
                        "w1-keyed-count -> w1-sink",
                        0,
                        3000,
                        Some(1_796_217_367_000),
                    ),
                    subtask("w1-keyed-count -> w1-sink", 1, 4000, None),
                ],
            },
        ],
        checkpoints: vec![
            checkpoint(1, CheckpointStatus::Completed, 12.5, 4096),
            checkpoint(2, CheckpointStatus::Completed, 20.0, 8192),
            checkpoint(3, CheckpointStatus::Failed, 600.0, 0),
        ],
        checkpoints_completed: 2,
        checkpoints_failed: 1,
        checkpoints_in_progress: 1,
        checkpoints_pending: vec![checkpoint(4, CheckpointStatus::InProgress, 50.0, 0)],
        restored: Some(RestoredView {
            id: 7,
            path: PathBuf::from("/ck/chk-7"),
            restore_ms: 1_796_217_358_500,
        }),
        checkpointing: None,
        restart_strategy: "fixed-delay".into(),
        restarts: 1,
        exceptions: vec![ExceptionRecord {
            timestamp_ms: 1_796_217_365_000,
            message: "boom".into(),
            task: None,
            restarted: true,
        }],
        config: Vec::new(),
    }
}

/// `view`'s exposition as OpenMetrics (`true`) or Prometheus text.
fn exposed(view: &JobView, openmetrics: bool) -> String {
    #[derive(Debug)]
    struct Fixed(JobView);
    impl prometheus_client::collector::Collector for Fixed {
        fn encode(
            &self,
            encoder: prometheus_client::encoding::DescriptorEncoder,
        ) -> std::fmt::Result {
            encode_view(&self.0, encoder)
        }
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Fixed(view.clone())));
    exposition(&registry, openmetrics).unwrap().0
}

fn labels(task: &str, name: &str, index: usize) -> String {
    format!(
        "job_id=\"{JOB}\",job_name=\"w1\",task_id=\"{task}\",task_name=\"{name}\",\
         subtask_index=\"{index}\",tm_id=\"worker-{index}\""
    )
}

#[test]
fn openmetrics_names_types_labels_and_values() {
    let text = exposed(&view(), true);
    let lines: Vec<&str> = text.lines().collect();
    let has = |l: &str| assert!(lines.contains(&l), "no line {l}\n{text}");
    has("# TYPE weir_taskmanager_job_task_numRecordsIn counter");
    has(&format!(
        "weir_taskmanager_job_task_numRecordsIn_total{{{}}} 4000",
        labels(COUNT, "w1-keyed-count -> w1-sink", 1)
    ));
    has("# TYPE weir_taskmanager_job_task_numRecordsInPerSecond gauge");
    has(&format!(
        "weir_taskmanager_job_task_numRecordsInPerSecond{{{}}} 1500.0",
        labels(SOURCE, "w1-source", 0)
    ));
    has(&format!(
        "weir_taskmanager_job_task_backPressuredTimeMsPerSecond{{{}}} 500.0",
        labels(SOURCE, "w1-source", 1)
    ));
    has(&format!(
        "weir_taskmanager_job_task_numBytesOut_total{{{}}} 48000",
        labels(COUNT, "w1-keyed-count -> w1-sink", 0)
    ));
    let job = format!("{{job_id=\"{JOB}\",job_name=\"w1\"}}");
    has(&format!("weir_jobmanager_job_uptime{job} 3000"));
    has(&format!("weir_jobmanager_job_numRestarts_total{job} 1"));
    has(&format!(
        "weir_jobmanager_job_numberOfCompletedCheckpoints_total{job} 2"
    ));
    has(&format!(
        "weir_jobmanager_job_numberOfFailedCheckpoints_total{job} 1"
    ));
    has(&format!(
        "weir_jobmanager_job_numberOfInProgressCheckpoints{job} 1"
    ));
    has(&format!(
        "weir_jobmanager_job_totalNumberOfCheckpoints_total{job} 4"
    ));
    // The newest completed one, not the newest (failed) one.
    has(&format!(
        "weir_jobmanager_job_lastCheckpointDuration{job} 20.0"
    ));
    has(&format!("weir_jobmanager_job_lastCheckpointSize{job} 8192"));
    has(&format!(
        "weir_jobmanager_job_lastCheckpointRestoreTimestamp{job} 1796217358500"
    ));
    // Only the subtask with a watermark has a sample.
    let watermarks: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("weir_taskmanager_job_task_currentInputWatermark{"))
        .collect();
    assert_eq!(
        watermarks,
        [&format!(
            "weir_taskmanager_job_task_currentInputWatermark{{{}}} 1796217367000",
            labels(COUNT, "w1-keyed-count -> w1-sink", 0)
        )
        .as_str()]
    );
    assert_eq!(lines.last(), Some(&"# EOF"));
}

/// Each family once, with a help and a type, named as the text formats
/// allow; the 0.0.4 text names a counter's family with its `_total`.
#[test]
fn every_family_is_described_once_in_both_formats() {
    for openmetrics in [true, false] {
        let text = exposed(&view(), openmetrics);
        let types: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| l.split_once(' ').unwrap())
            .collect();
        let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
        assert_eq!(
            (types.len(), helps),
            (FAMILIES.len(), FAMILIES.len()),
            "{text}"
        );
        for (name, kind) in &types {
            assert!(
                name.starts_with("weir_jobmanager_job_")
                    || name.starts_with("weir_taskmanager_job_task_")
                    || name.starts_with("weir_taskmanager_job_latency_"),
                "{name}"
            );
            assert!(
                name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "{name}"
            );
            assert!(["counter", "gauge"].contains(kind), "{name} {kind}");
            assert_eq!(
                name.ends_with("_total"),
                *kind == "counter" && !openmetrics,
                "{name} {kind}"
            );
            let samples = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter(|l| {
                    l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name}_total{{"))
                })
                .count();
            let expected = match (name.contains("_task_"), name.contains("Watermark")) {
                // One histogram (keyed subtask 0, from the source), six
                // quantiles.
                _ if name.contains("_latency_") => 6,
                (true, true) => 1,
                (true, false) => 4,
                (false, _) => 1,
            };
            assert_eq!(samples, expected, "{name}\n{text}");
        }
        assert_eq!(text.ends_with("# EOF\n"), openmetrics);
    }
}

#[test]
fn label_values_are_escaped() {
    let mut v = view();
    v.name = "say \"hi\"\\now\nthen".into();
    let text = exposed(&v, true);
    assert!(
        text.contains("job_name=\"say \\\"hi\\\"\\\\now\\nthen\""),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("job_name=\"say"))
            .count(),
        text.lines().filter(|l| l.starts_with("weir_")).count()
    );
}

#[test]
fn uptime_and_checkpoint_gauges_before_and_after() {
    let job = format!("{{job_id=\"{JOB}\",job_name=\"w1\"}}");
    let mut v = view();
    v.checkpoints.clear();
    v.restored = None;
    v.exceptions.clear();
    let text = exposed(&v, true);
    // Since the start without a restart; -1 for what has not happened.
    assert!(
        text.contains(&format!("weir_jobmanager_job_uptime{job} 10000\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "weir_jobmanager_job_lastCheckpointDuration{job} -1.0\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("weir_jobmanager_job_lastCheckpointSize{job} -1\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "weir_jobmanager_job_lastCheckpointRestoreTimestamp{job} -1\n"
        )),
        "{text}"
    );
    v.state = JobState::Finished;
    v.end_ms = Some(v.now_ms);
    assert!(exposed(&v, true).contains(&format!("weir_jobmanager_job_uptime{job} -1\n")));
    v.state = JobState::Restarting;
    assert!(exposed(&v, true).contains(&format!("weir_jobmanager_job_uptime{job} 0\n")));
}

#[test]
fn nothing_is_exposed_before_the_job_starts() {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(JobCollector::new(JobHandle::new())));
    assert_eq!(exposition(&registry, true).unwrap().0, "# EOF\n");
    assert_eq!(exposition(&registry, false).unwrap().0, "");
}

/// `(status line, headers and body)` of a GET of `path`.
fn get(addr: SocketAddr, path: &str, headers: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (status, rest) = out.split_once("\r\n").unwrap();
    (status.to_owned(), rest.to_owned())
}

fn settings(address: [u8; 4], ports: &str, token: Option<&str>) -> PrometheusSettings {
    PrometheusSettings {
        address: IpAddr::from(address),
        ports: ports.parse().unwrap(),
        token: token.map(str::to_owned),
    }
}

#[test]
fn the_endpoint_serves_metrics_only_and_asks_for_the_token() {
    let server =
        PrometheusServer::start(&settings([127, 0, 0, 1], "0", None), JobHandle::new()).unwrap();
    let addr = server.local_addr();
    assert_eq!(
        server.endpoint_line(),
        format!("Prometheus endpoint: http://{addr}/metrics")
    );
    let (status, rest) = get(addr, "/metrics", "");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        rest.to_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{rest}"
    );
    let (status, rest) = get(
        addr,
        "/metrics",
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n",
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        rest.contains("application/openmetrics-text; version=1.0.0"),
        "{rest}"
    );
    assert!(rest.ends_with("# EOF\n"), "{rest}");
    assert!(get(addr, "/", "").0.starts_with("HTTP/1.1 404"));
    assert!(get(addr, "/metrics/../jobs", "")
        .0
        .starts_with("HTTP/1.1 404"));
    drop(server);
    assert!(TcpStream::connect(addr).is_err(), "stopped when dropped");

    let token = "0123456789abcdef";
    let server = PrometheusServer::start(
        &settings([127, 0, 0, 1], "0", Some(token)),
        JobHandle::new(),
    )
    .unwrap();
    let addr = server.local_addr();
    assert!(get(addr, "/metrics", "").0.starts_with("HTTP/1.1 401"));
    assert!(get(
        addr,
        "/metrics",
        "Authorization: Bearer 0123456789abcdeF\r\n"
    )
    .0
    .starts_with("HTTP/1.1 401"));
    let ok = get(
        addr,
        "/metrics",
        &format!("Authorization: Bearer {token}\r\n"),
    );
    assert_eq!(ok.0, "HTTP/1.1 200 OK");
}

#[test]
fn beyond_loopback_a_token_is_required() {
    let err = PrometheusServer::start(&settings([0, 0, 0, 0], "0", None), JobHandle::new())
        .err()
        .expect("refused");
    assert!(
        matches!(err, RestError::PrometheusTokenRequired { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("rest.bind-address = 0.0.0.0") && text.contains("set rest.auth-token"),
        "{text}"
    );
}

#[test]
fn a_range_takes_the_next_free_port_and_a_taken_port_is_an_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let err = PrometheusServer::start(
        &settings([127, 0, 0, 1], &port.to_string(), None),
        JobHandle::new(),
    )
    .err()
    .expect("the port is taken");
    assert!(
        matches!(&err, RestError::PrometheusBind { source, .. } if source.kind() == std::io::ErrorKind::AddrInUse),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot serve the Prometheus endpoint on 127.0.0.1 port {port}: "
        )),
        "{text}"
    );
    assert!(
        text.contains("set metrics.reporter.prom.port to another port"),
        "{text}"
    );
    // Ephemeral ports are high: the five after it exist.
    let range = format!(
        "{port}-{}",
        port.checked_add(5).expect("an ephemeral port below 65531")
    );
    let server =
        PrometheusServer::start(&settings([127, 0, 0, 1], &range, None), JobHandle::new()).unwrap();
    let took = server.local_addr().port();
    assert!(took > port && took <= port + 5, "{took} not after {port}");
}

/// A family with labels of its own beside a subtask's, in another scope
/// (as the latency histograms to come): one more function, and the
/// exposition stays well-formed.
#[test]
fn a_family_may_add_labels_and_take_another_scope() {
    use prometheus_client::encoding::DescriptorEncoder;
    use prometheus_client::metrics::MetricType;

    use super::families::Families;

    fn per_source(f: &mut Families<'_, '_>) -> std::fmt::Result {
        f.subtask_family(
            "taskmanager_job_latency",
            "marker_count",
            "Markers per source.",
            MetricType::Gauge,
            |v, s, labels, family| {
                if v.id != COUNT {
                    return Ok(());
                }
                for source in 0..2u64 {
                    let mut l = labels.clone();
                    l.push(("source_subtask_index", source.to_string().into()));
                    family
                        .encode_family(&l)?
                        .encode_gauge(&(s.index as u64 * 10 + source))?;
                }
                Ok(())
            },
        )
    }
    #[derive(Debug)]
    struct One(JobView);
    impl prometheus_client::collector::Collector for One {
        fn encode(&self, encoder: DescriptorEncoder) -> std::fmt::Result {
            families::with_families(&self.0, encoder, per_source)
        }
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(One(view())));
    let text = exposition(&registry, true).unwrap().0;
    assert!(
        text.contains("# TYPE weir_taskmanager_job_latency_marker_count gauge\n"),
        "{text}"
    );
    let line = format!(
        "weir_taskmanager_job_latency_marker_count{{{},source_subtask_index=\"1\"}} 11\n",
        labels(COUNT, "w1-keyed-count -> w1-sink", 1)
    );
    assert!(text.contains(&line), "no {line}\n{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("weir_")).count(), 4);
}
