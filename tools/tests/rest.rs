//! The REST endpoint and the control commands as a user meets them
//! (issue 22, docs/REST.md): a real `weir bench w1` with `rest.port = 0`
//! serves every endpoint in its documented shape; a savepoint taken through
//! REST or `weir savepoint` while the job runs, and the one `weir stop`
//! leaves, restore to W1's output exactly once; `weir cancel` ends the job;
//! a bind beyond loopback without a token is refused at start; a token,
//! once set, is required; malformed and hostile requests get a 4xx and the
//! job still finishes with exactly-once output.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::{assert_w1_exactly_once, Proc, Scratch, CONDITION, FINISH, WEIR};

/// `weir bench w1` on `workers` workers: `n` records over 50 keys at
/// `rate`/s, exactly-once output into `out`, checkpoints every `interval`
/// into `ck`, savepoints into `sp`, the REST endpoint on a free port.
fn w1(s: &Scratch, workers: usize, n: u64, rate: u64, interval: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(WEIR);
    c.args(["bench", "w1", "--quiet", "--workers", &workers.to_string()])
        .args([
            "--n",
            &n.to_string(),
            "--k",
            "50",
            "--rate",
            &rate.to_string(),
        ])
        .arg("--output")
        .arg(s.join("out"));
    for set in [
        format!("state.checkpoints.dir={}", s.join("ck").display()),
        format!("state.savepoints.dir={}", s.join("sp").display()),
        format!("execution.checkpointing.interval={interval}"),
        "weir.worker.pin-cores=false".into(),
        "rest.port=0".into(),
    ] {
        c.arg("--set").arg(set);
    }
    for set in extra {
        c.arg("--set").arg(set);
    }
    c.env_remove("RUST_LOG").env_remove("WEIR_FAILPOINTS");
    c
}

/// The endpoint's address once the run printed it.
fn endpoint(p: &mut Proc) -> String {
    p.printed("REST endpoint: ")
}

/// A client of one endpoint.
struct Rest {
    base: String,
    agent: ureq::Agent,
    token: Option<String>,
}

impl Rest {
    fn new(base: &str) -> Self {
        Self {
            base: base.to_owned(),
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(10))
                .build(),
            token: None,
        }
    }

    /// `(status, body)` of a request.
    fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> (u16, Value) {
        let mut r = self.agent.request(method, &format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            r = r.set("Authorization", &format!("Bearer {t}"));
        }
        let response = match body {
            Some(b) => r.set("Content-Type", "application/json").send_bytes(b),
            None => r.call(),
        };
        match response {
            Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
            Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap_or(Value::Null)),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    fn get(&self, path: &str) -> Value {
        let (code, v) = self.call("GET", path, None);
        assert_eq!(code, 200, "GET {path}: {v}");
        v
    }

    /// The job's id, once it runs.
    fn job_id(&self) -> String {
        let since = Instant::now();
        loop {
            let jobs = self.get("/jobs");
            if jobs["jobs"][0]["status"] == "RUNNING" {
                return jobs["jobs"][0]["id"].as_str().expect("a job id").to_owned();
            }
            assert!(since.elapsed() < CONDITION, "not RUNNING: {jobs}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Polls savepoint `trigger` to its end; returns its location.
    fn savepoint_location(&self, job: &str, trigger: &str) -> String {
        let since = Instant::now();
        loop {
            let s = self.get(&format!("/jobs/{job}/savepoints/{trigger}"));
            if s["status"]["id"] == "COMPLETED" {
                return s["operation"]["location"]
                    .as_str()
                    .unwrap_or_else(|| panic!("the savepoint failed: {s}"))
                    .to_owned();
            }
            assert_eq!(s["status"]["id"], "IN_PROGRESS", "{s}");
            assert!(since.elapsed() < CONDITION, "no savepoint in {CONDITION:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `weir ARGS` to its end.
fn weir(args: &[&str]) -> Output {
    Command::new(WEIR)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run weir")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The run restoring `savepoint` into the same output, to its end:
/// exactly once.
fn restore_to_the_end(s: &Scratch, label: &str, savepoint: &str, n: u64) {
    let mut c = w1(s, 2, n, 2_000_000, "1h", &[]);
    c.args(["--restore", savepoint]);
    let mut p = Proc::spawn(s, label, c);
    let status = p.wait(FINISH);
    assert!(status.success(), "{label}: {status}\n{}", p.stderr());
    assert_w1_exactly_once(&s.join("out"), n, 50, label);
}

#[test]
fn every_endpoint_answers_in_its_documented_shape() {
    let s = Scratch::new("rest", "shapes");
    let n = 400_000;
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, n, 100_000, "200ms", &[]));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    assert_eq!(job.len(), 32, "a Flink job id: {job}");
    assert!(job.bytes().all(|b| b.is_ascii_hexdigit()));

    let jobs = rest.get("/jobs");
    assert_eq!(jobs["jobs"][0]["status"], "RUNNING", "{jobs}");
    let overview = rest.get("/overview");
    assert_eq!(
        (
            overview["jobs-running"].as_u64(),
            overview["taskmanagers"].as_u64()
        ),
        (Some(1), Some(2)),
        "{overview}"
    );
    let jo = rest.get("/jobs/overview");
    let j = &jo["jobs"][0];
    assert_eq!(
        (j["jid"].as_str(), j["state"].as_str()),
        (Some(job.as_str()), Some("RUNNING"))
    );
    assert_eq!(j["end-time"], -1);
    assert!(j["tasks"]["total"].as_u64() >= Some(4), "{jo}");

    // Vertices: names, parallelism, counts that grow.
    let details = |rest: &Rest| rest.get(&format!("/jobs/{job}"));
    let d = details(&rest);
    assert_eq!(
        (d["jid"].as_str(), d["state"].as_str()),
        (Some(job.as_str()), Some("RUNNING"))
    );
    assert_eq!(d["maxParallelism"], 128);
    let vertices = d["vertices"].as_array().expect("vertices").clone();
    assert!(vertices.len() >= 2, "{d}");
    for v in &vertices {
        assert_eq!(v["parallelism"], 2, "{v}");
        assert_eq!(v["id"].as_str().map(str::len), Some(32), "{v}");
        for key in [
            "read-records",
            "write-records",
            "read-bytes",
            "write-bytes",
            "accumulated-busy-time",
        ] {
            assert!(v["metrics"][key].is_u64(), "{key}: {v}");
        }
    }
    assert!(
        vertices.iter().any(|v| v["name"]
            .as_str()
            .is_some_and(|n| n.contains("w1-keyed-count"))),
        "{d}"
    );
    let records = |d: &Value| -> u64 {
        d["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["metrics"]["read-records"].as_u64().unwrap())
            .sum()
    };
    let first = records(&d);
    p.wait_until("records to grow", || records(&details(&rest)) > first);

    // Per vertex: subtasks and backpressure.
    for v in &vertices {
        let id = v["id"].as_str().unwrap();
        let bp = rest.get(&format!("/jobs/{job}/vertices/{id}/backpressure"));
        assert_eq!(bp["status"], "ok");
        let subtasks = bp["subtasks"].as_array().expect("subtasks");
        assert_eq!(subtasks.len(), 2, "{bp}");
        for (i, st) in subtasks.iter().enumerate() {
            assert_eq!(st["subtask"], i as u64);
            assert!(
                ["ok", "low", "high"].contains(&st["backpressure-level"].as_str().unwrap()),
                "{st}"
            );
            let sum = st["ratio"].as_f64().unwrap()
                + st["busyRatio"].as_f64().unwrap()
                + st["idleRatio"].as_f64().unwrap();
            assert!((sum - 1.0).abs() < 0.05, "ratios add up to 1: {st}");
        }
        let vd = rest.get(&format!("/jobs/{job}/vertices/{id}"));
        assert_eq!(vd["subtasks"].as_array().map(Vec::len), Some(2), "{vd}");
    }

    // Checkpoints: counts after some completed, history with per-subtask
    // figures.
    let cps = |rest: &Rest| rest.get(&format!("/jobs/{job}/checkpoints"));
    p.wait_until("two complete checkpoints", || {
        cps(&rest)["counts"]["completed"].as_u64() >= Some(2)
    });
    let c = cps(&rest);
    let latest = &c["latest"]["completed"];
    assert_eq!(latest["status"], "COMPLETED", "{c}");
    assert_eq!(latest["checkpoint_type"], "CHECKPOINT");
    assert!(latest["checkpointed_size"].as_u64() > Some(0), "{latest}");
    assert_eq!(
        latest["num_acknowledged_subtasks"], latest["num_subtasks"],
        "{latest}"
    );
    assert!(c["history"].as_array().is_some_and(|h| !h.is_empty()));
    let cid = latest["id"].as_u64().unwrap();
    let vid = vertices[0]["id"].as_str().unwrap();
    let sub = rest.get(&format!(
        "/jobs/{job}/checkpoints/details/{cid}/subtasks/{vid}"
    ));
    let subs = sub["subtasks"].as_array().expect("subtasks");
    assert_eq!(subs.len(), 2, "{sub}");
    for st in subs {
        for key in ["start_delay", "state_size"] {
            assert!(st[key].is_u64(), "{key}: {st}");
        }
        assert!(
            st["checkpoint"]["sync"].is_u64() && st["checkpoint"]["async"].is_u64(),
            "{st}"
        );
        assert!(
            st["alignment"]["duration"].is_u64() && st["alignment"]["persisted"].is_u64(),
            "{st}"
        );
    }
    let cc = rest.get(&format!("/jobs/{job}/checkpoints/config"));
    assert_eq!(
        (cc["mode"].as_str(), cc["interval"].as_u64()),
        (Some("exactly_once"), Some(200)),
        "{cc}"
    );
    let config = rest.get(&format!("/jobs/{job}/config"));
    assert_eq!(config["jid"], job.as_str());
    assert_eq!(config["execution-config"]["job-parallelism"], 2);
    assert_eq!(
        config["execution-config"]["user-config"]["execution.checkpointing.interval"],
        "200ms"
    );
    let ex = rest.get(&format!("/jobs/{job}/exceptions"));
    assert_eq!(ex["exceptionHistory"]["entries"], json!([]), "{ex}");

    // Every GET of docs/REST.md is served (a savepoint gives a trigger id).
    let (code, reply) = rest.call("POST", &format!("/jobs/{job}/savepoints"), None);
    assert_eq!(code, 202, "{reply}");
    let trigger = reply["request-id"].as_str().unwrap().to_owned();
    rest.savepoint_location(&job, &trigger);
    let mut documented = 0;
    for line in include_str!("../../docs/REST.md").lines() {
        let Some(path) = line.strip_prefix("### `GET ") else {
            continue;
        };
        let path = path
            .trim_end_matches('`')
            .replace(":jobid", &job)
            .replace(":vertexid", vid)
            .replace(":checkpointid", &cid.to_string())
            .replace(":triggerid", &trigger);
        rest.get(&path);
        documented += 1;
    }
    assert!(documented >= 15, "{documented} GET endpoints documented");

    // weir list shows it.
    let base = rest.base.clone();
    let list = weir(&["list", "--address", &base]);
    assert!(list.status.success(), "{}", text(&list));
    assert!(
        text(&list).contains(&format!("{job} : w1")) && text(&list).contains("(RUNNING)"),
        "{}",
        text(&list)
    );

    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    assert_w1_exactly_once(&s.join("out"), n, 50, "with the endpoint queried");
}

#[test]
fn savepoints_through_rest_and_weir_savepoint_restore_exactly_once() {
    let s = Scratch::new("rest", "savepoint");
    let n = 600_000;
    // No periodic checkpoint: the savepoints are the only snapshots.
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, n, 60_000, "1h", &[]));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();

    let (code, reply) = rest.call("POST", &format!("/jobs/{job}/savepoints"), Some(b"{}"));
    assert_eq!(code, 202, "{reply}");
    let trigger = reply["request-id"]
        .as_str()
        .expect("a request-id")
        .to_owned();
    let first = rest.savepoint_location(&job, &trigger);
    assert!(Path::new(&first).join("_metadata").is_file(), "{first}");
    assert!(
        first.starts_with(&s.join("sp").display().to_string()),
        "{first}"
    );

    // Through the CLI, into another directory, given relative to where
    // the command runs (not where the job does); the job runs on.
    let dir = s.join("sp2");
    let base = rest.base.clone();
    let out = Command::new(WEIR)
        .args(["savepoint", &job, "--dir", "sp2", "--address", &base])
        .current_dir(&s.0)
        .env_remove("RUST_LOG")
        .output()
        .expect("run weir savepoint");
    assert!(out.status.success(), "{}", text(&out));
    let second = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("Savepoint completed. Path: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no path: {}", text(&out)));
    assert!(second.starts_with(&dir.display().to_string()), "{second}");
    assert!(Path::new(&second).join("_metadata").is_file());
    assert!(p.exited().is_none(), "the job runs on after its savepoints");
    let c = rest.get(&format!("/jobs/{job}/checkpoints"));
    assert_eq!(
        c["latest"]["savepoint"]["checkpoint_type"], "SAVEPOINT",
        "{c}"
    );
    assert_eq!(c["latest"]["savepoint"]["is_savepoint"], true);

    // Cancel: the output stands as of the second savepoint.
    let out = weir(&["cancel", &job, "--address", &base]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("Cancelled job {job}.")),
        "{}",
        text(&out)
    );
    let status = p.wait(FINISH);
    assert_eq!(
        status.code(),
        Some(1),
        "a cancelled job exits 1\n{}",
        p.stderr()
    );
    assert!(
        p.stderr().contains("the job was cancelled"),
        "{}",
        p.stderr()
    );

    restore_to_the_end(&s, "restored", &second, n);
}

#[test]
fn weir_stop_leaves_a_savepoint_that_restores_exactly_once() {
    let s = Scratch::new("rest", "stop");
    let n = 600_000;
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, n, 60_000, "300ms", &[]));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    let base = rest.base.clone();
    p.wait_until("a complete checkpoint", || {
        rest.get(&format!("/jobs/{job}/checkpoints"))["counts"]["completed"].as_u64() >= Some(1)
    });
    let out = weir(&["stop", &job, "--address", &base]);
    assert!(out.status.success(), "{}", text(&out));
    let path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("Savepoint completed. Path: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no path: {}", text(&out)));
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    let stdout = std::fs::read_to_string(s.join("w1.stdout")).unwrap();
    assert!(
        stdout.contains(&format!("stopped with a savepoint: {path}")),
        "{stdout}"
    );
    // Once stopped, nothing answers.
    let gone = weir(&["list", "--address", &base]);
    assert_eq!(gone.status.code(), Some(1), "{}", text(&gone));
    assert!(
        text(&gone).contains("cannot reach the REST endpoint"),
        "{}",
        text(&gone)
    );

    restore_to_the_end(&s, "restored", &path, n);
}

#[test]
fn a_bind_beyond_loopback_needs_a_token_and_a_token_once_set_is_required() {
    let s = Scratch::new("rest", "token");
    let out = weir(&[
        "run",
        "--set",
        "rest.bind-address=0.0.0.0",
        "--set",
        "rest.port=0",
        "--set",
        "weir.worker.pin-cores=false",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "rest.bind-address = 0.0.0.0 is reachable from other hosts: set rest.auth-token"
        ),
        "{}",
        text(&out)
    );
    assert!(
        !text(&out).contains("weir quickstart"),
        "refused before the job starts"
    );

    let token = "s3cret-token-0123456789";
    let t = format!("rest.auth-token={token}");
    let mut p = Proc::spawn(&s, "w1", w1(&s, 1, 2_000_000, 200_000, "1h", &[&t]));
    let mut rest = Rest::new(&endpoint(&mut p));
    let (code, body) = rest.call("GET", "/jobs", None);
    assert_eq!(code, 401, "{body}");
    assert!(
        body["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("bearer token")),
        "{body}"
    );
    rest.token = Some("wrong-token-0123456789".into());
    assert_eq!(rest.call("GET", "/jobs", None).0, 401);
    rest.token = Some(token.into());
    let job = rest.job_id();
    let config = rest.get(&format!("/jobs/{job}/config"));
    assert_eq!(
        config["execution-config"]["user-config"]["rest.auth-token"],
        "<hidden>"
    );
    let base = rest.base.clone();
    let refused = weir(&["cancel", &job, "--address", &base]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("401"), "{}", text(&refused));
    let out = weir(&["cancel", &job, "--address", &base, "--token", token]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(p.wait(FINISH).code(), Some(1));
}

/// Raw bytes to the endpoint; the status code of the answer (0: none).
fn raw(addr: &str, request: &[u8]) -> u16 {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = c.write_all(request);
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn hostile_requests_get_4xx_and_the_job_finishes_exactly_once() {
    let s = Scratch::new("rest", "hostile");
    let n = 600_000;
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, n, 100_000, "200ms", &[]));
    let base = endpoint(&mut p);
    let rest = Rest::new(&base);
    let job = rest.job_id();
    let v = rest.get(&format!("/jobs/{job}"))["vertices"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    for (method, path, body, expected) in [
        ("GET", "/nope".to_owned(), None, 404),
        (
            "GET",
            "/jobs/00000000000000000000000000000000".to_owned(),
            None,
            404,
        ),
        (
            "GET",
            format!("/jobs/{job}/vertices/ffff/backpressure"),
            None,
            404,
        ),
        (
            "GET",
            format!("/jobs/{job}/checkpoints/details/x"),
            None,
            400,
        ),
        (
            "GET",
            format!("/jobs/{job}/checkpoints/details/999999"),
            None,
            404,
        ),
        ("GET", format!("/jobs/{job}/savepoints/unknown"), None, 404),
        ("DELETE", format!("/jobs/{job}"), None, 405),
        ("POST", "/jobs".to_owned(), None, 405),
        (
            "PUT",
            format!("/jobs/{job}/vertices/{v}/backpressure"),
            None,
            405,
        ),
        (
            "POST",
            format!("/jobs/{job}/savepoints"),
            Some(b"{not json".to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/savepoints"),
            Some(b"[1,2]".to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/savepoints"),
            Some(br#"{"target-directory": 7}"#.to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/savepoints"),
            Some(br#"{"target-directory": "s3://b/x"}"#.to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/stop"),
            Some(br#"{"drain": "yes"}"#.to_vec()),
            400,
        ),
        ("PATCH", format!("/jobs/{job}?mode=stop"), None, 400),
        // A stop's field on a savepoint, a savepoint's on a stop: named,
        // not ignored (the savepoint would go where nobody asked).
        (
            "POST",
            format!("/jobs/{job}/savepoints"),
            Some(br#"{"targetDirectory": "/tmp/elsewhere"}"#.to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/stop"),
            Some(br#"{"target-directory": "/tmp/elsewhere"}"#.to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/stop"),
            Some(br#"{"targetDirectory": "s3://bucket/sp"}"#.to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/savepoints"),
            Some(br#"{"formatType": "NATIVE"}"#.to_vec()),
            400,
        ),
        (
            "POST",
            format!("/jobs/{job}/stop"),
            Some(br#"{"triggerId": "../../x"}"#.to_vec()),
            400,
        ),
        // Segments that are not UTF-8 once decoded: axum refuses them
        // itself, in plain text until its errors were rewritten as JSON.
        ("GET", "/jobs/%FF".to_owned(), None, 400),
        ("POST", "/jobs/%FF/stop".to_owned(), None, 400),
        (
            "GET",
            format!("/jobs/{job}/checkpoints/details/%C0"),
            None,
            400,
        ),
        ("GET", "/web/%FF".to_owned(), None, 400),
    ] {
        let (code, reply) = rest.call(method, &path, body.as_deref());
        assert_eq!(code, expected, "{method} {path}: {reply}");
        assert!(reply["errors"][0].is_string(), "{method} {path}: {reply}");
    }
    // A chunked body (no declared length) found too long while read. A
    // few KiB past the limit, so that the whole request sits in the
    // loopback socket's buffers before the server answers: with four
    // times the limit the client was still writing when the server had
    // answered 413 and closed, and its write failed (EPIPE) before it
    // read the answer (once in CI).
    let chunked = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build()
        .post(&format!("{base}/jobs/{job}/savepoints"))
        .set("Content-Type", "application/json")
        .send(std::io::Cursor::new(vec![b' '; 64 * 1024 + 4096]));
    match chunked {
        Err(ureq::Error::Status(413, r)) => {
            let reply: Value = r.into_json().expect("a JSON error body");
            assert!(reply["errors"][0].is_string(), "{reply}");
        }
        other => panic!("a chunked body beyond the limit: {other:?}"),
    }
    for (path, body, named) in [
        (
            "savepoints",
            r#"{"targetDirectory": "/x"}"#,
            "unknown field targetDirectory",
        ),
        (
            "stop",
            r#"{"target-directory": "/x"}"#,
            "unknown field target-directory",
        ),
        (
            "savepoints",
            r#"{"formatType": "NATIVE"}"#,
            "formatType NATIVE",
        ),
        ("stop", r#"{"triggerId": "x"}"#, "triggerId x"),
        (
            "savepoints",
            r#"{"target-directory": "/x", "target-directory": "/y"}"#,
            "field target-directory given twice",
        ),
    ] {
        let (_, reply) = rest.call(
            "POST",
            &format!("/jobs/{job}/{path}"),
            Some(body.as_bytes()),
        );
        assert!(
            reply["errors"][0]
                .as_str()
                .is_some_and(|e| e.contains(named)),
            "{path} {body}: {reply}"
        );
    }
    // Flink's rescaling is not served, and says how weir rescales.
    for (method, path) in [
        ("PATCH", format!("/jobs/{job}/rescaling?parallelism=4")),
        ("PUT", format!("/jobs/{job}/resource-requirements")),
    ] {
        let (code, reply) = rest.call(method, &path, Some(b"{}"));
        assert_eq!(code, 404, "{method} {path}: {reply}");
        assert!(
            reply["errors"][0]
                .as_str()
                .is_some_and(|e| e.contains("--workers")),
            "{method} {path}: {reply}"
        );
    }
    // Ids in capitals are the same ids (Flink reads hex either way).
    let upper = job.to_ascii_uppercase();
    assert_eq!(rest.get(&format!("/jobs/{upper}"))["jid"], job.as_str());
    rest.get(&format!(
        "/jobs/{upper}/vertices/{}",
        v.to_ascii_uppercase()
    ));
    // A target that reaches the output directory through a directory
    // that does not exist yet, or through a link, is refused as the
    // output directory itself is: nothing is written there. So is one in
    // a checkpoint's directory, which retention deletes (a savepoint
    // reported complete there was gone a few checkpoints later), or one
    // a later checkpoint would make.
    std::os::unix::fs::symlink(s.join("out"), s.join("link-to-out")).unwrap();
    let first_checkpoint = s.join("ck").read_dir().unwrap().flatten().find_map(|e| {
        let name = e.file_name().into_string().ok()?;
        name.starts_with("chk-").then_some(name)
    });
    let in_checkpoint = format!("ck/{}/sp", first_checkpoint.as_deref().unwrap_or("chk-1"));
    for (target, why) in [
        ("missing/../out/sp", "inside the job's output directory"),
        ("link-to-out/sp", "inside the job's output directory"),
        (in_checkpoint.as_str(), "which weir deletes or moves"),
        ("ck/chk-999999/sp", "which weir deletes or moves"),
        ("ck/abandoned/sp", "which weir deletes or moves"),
    ] {
        let body = json!({ "target-directory": s.join(target) }).to_string();
        let (code, reply) = rest.call(
            "POST",
            &format!("/jobs/{job}/savepoints"),
            Some(body.as_bytes()),
        );
        assert_eq!(code, 202, "{target}: {reply}");
        let trigger = reply["request-id"].as_str().unwrap();
        let since = Instant::now();
        let status = loop {
            let status = rest.get(&format!("/jobs/{job}/savepoints/{trigger}"));
            if status["status"]["id"] == "COMPLETED" {
                break status;
            }
            assert!(since.elapsed() < CONDITION, "{target}: {status}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let failure = status["operation"]["failure-cause"]["stack-trace"]
            .as_str()
            .unwrap_or_else(|| panic!("{target}: taken: {status}"));
        assert!(failure.contains(why), "{target}: {failure}");
        assert!(!s.join(target).exists(), "{target}: written");
    }
    assert!(!s.join("missing").exists(), "nothing made on the way");
    let addr = base.trim_start_matches("http://");
    for garbage in [
        &b"\x00\x01\x02 garbage\r\n\r\n"[..],
        b"GET /jobs HTTP/9.9\r\n\r\n",
        b"GET /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    ] {
        let code = raw(addr, garbage);
        assert!(
            code == 0 || (400..500).contains(&code),
            "{garbage:?}: {code}"
        );
    }
    // A body beyond the limit is refused from its length alone.
    let huge = format!(
        "POST /jobs/{job}/savepoints HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{{",
        64 << 20
    );
    assert_eq!(raw(addr, huge.as_bytes()), 413);
    // Fuzzed requests: random methods, paths and bodies, never a 5xx
    // (control actions only on paths that are not the job's).
    let mut seed = 22u64;
    let mut next = || {
        seed = support::splitmix64(seed);
        seed
    };
    let segments = [
        "jobs",
        "overview",
        "vertices",
        "checkpoints",
        "details",
        "subtasks",
        "config",
        "backpressure",
        "watermarks",
        "savepoints",
        "exceptions",
        "metrics",
        "web",
        "dashboard.js",
        "index.html",
        "?get=0.numRecordsIn,%2C%2C,latency.x&agg=sum,avg",
        "?agg=median",
        "..",
        "%00",
        "%2e%2e",
        "%C3%A9",
        "-1",
        "18446744073709551616",
        "{id}",
        "",
        "%20",
    ];
    for _ in 0..300 {
        let mut path = String::new();
        for _ in 0..(next() % 6) {
            path.push('/');
            match next() % 5 {
                0 => path.push_str(&job),
                1 => path.push_str(&v),
                2 => path.push_str(&"x".repeat((next() % 3000) as usize)),
                _ => path.push_str(segments[(next() % segments.len() as u64) as usize]),
            }
        }
        if path.is_empty() {
            path.push('/');
        }
        if next() % 4 == 0 {
            path.push_str("?mode=cancel&x=%ZZ");
        }
        let ours = path.starts_with(&format!("/jobs/{job}"));
        let method = match next() % 7 {
            0 if !ours => "POST",
            1 if !ours => "PATCH",
            2 => "PUT",
            3 => "DELETE",
            4 => "OPTIONS",
            _ => "GET",
        };
        let body: Option<Vec<u8>> =
            (next() % 2 == 0).then(|| (0..(next() % 512)).map(|_| next() as u8).collect());
        // A connection of its own each: the server may close one whose
        // body it did not read (a 404 or 405), which a pooled one would
        // only find out on its next request.
        let r = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(10))
            .build()
            .request(method, &format!("{base}{path}"))
            .set("Content-Type", "application/json");
        let answer = match &body {
            Some(b) => r.send_bytes(b),
            None => r.call(),
        };
        let code = match answer {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(code, _)) => code,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        assert!(code < 500, "{method} {path}: {code}");
    }
    // Idle connections (a slow client) hold nothing up.
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = TcpStream::connect(base.trim_start_matches("http://")).unwrap();
            let _ = c.write_all(b"GET /jobs HTTP/1.1\r\nHost: x\r\n");
            c
        })
        .collect();
    assert_eq!(rest.call("GET", "/jobs", None).0, 200);
    drop(idle);
    // Many concurrent readers for a while (loopback only).
    let until = Instant::now() + Duration::from_secs(2);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let base = base.clone();
            let job = job.clone();
            std::thread::spawn(move || {
                let rest = Rest::new(&base);
                let mut n = 0;
                while Instant::now() < until {
                    let (code, _) = rest.call("GET", &format!("/jobs/{job}"), None);
                    assert_eq!(code, 200);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let served: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(served > 16, "{served} requests served");
    assert!(p.exited().is_none(), "the job runs on");
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    assert_w1_exactly_once(&s.join("out"), n, 50, "after hostile requests");
}

#[test]
fn without_checkpointing_a_stop_or_savepoint_is_refused_and_the_job_runs_on() {
    // weir stop once cancelled such a job: its output, committed only
    // at the end of its input, was lost, and the command exited 2.
    let s = Scratch::new("rest", "no-checkpoints");
    let n = 400_000;
    let mut c = Command::new(WEIR);
    c.args(["bench", "w1", "--quiet", "--workers", "2"])
        .args(["--n", &n.to_string(), "--k", "50", "--rate", "100000"])
        .arg("--output")
        .arg(s.join("out"))
        .args([
            "--set",
            "weir.worker.pin-cores=false",
            "--set",
            "rest.port=0",
        ])
        .env_remove("RUST_LOG")
        .env_remove("WEIR_FAILPOINTS");
    let mut p = Proc::spawn(&s, "w1", c);
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    for path in ["stop", "savepoints"] {
        let (code, reply) = rest.call("POST", &format!("/jobs/{job}/{path}"), Some(b"{}"));
        assert_eq!(code, 409, "{path}: {reply}");
        assert!(
            reply["errors"][0]
                .as_str()
                .is_some_and(|e| e.contains("checkpointing is off")),
            "{path}: {reply}"
        );
    }
    let base = rest.base.clone();
    let out = weir(&["stop", &job, "--address", &base]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("409") && text(&out).contains("checkpointing is off"),
        "{}",
        text(&out)
    );
    assert_eq!(rest.get("/jobs")["jobs"][0]["status"], "RUNNING");
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    assert_w1_exactly_once(&s.join("out"), n, 50, "after a refused stop");
}

#[test]
fn one_savepoint_at_a_time_and_a_repeated_trigger_id_is_the_same_savepoint() {
    let s = Scratch::new("rest", "one-at-a-time");
    let n = 600_000;
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, n, 100_000, "1h", &[]));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    // Flink's triggerId: a client that sends its request again (its
    // answer lost) gets the same savepoint, not a second one.
    let id = "0123456789abcdef0123456789ABCDEF";
    let body = json!({ "triggerId": id }).to_string();
    let post = || {
        rest.call(
            "POST",
            &format!("/jobs/{job}/savepoints"),
            Some(body.as_bytes()),
        )
    };
    let (code, first) = post();
    assert_eq!(code, 202, "{first}");
    assert_eq!(first["request-id"], id.to_ascii_lowercase());
    let (code, again) = post();
    assert_eq!((code, &again), (202, &first));
    // Another one while it is under way is refused, naming it.
    let (code, other) = rest.call("POST", &format!("/jobs/{job}/savepoints"), Some(b"{}"));
    let refused = code == 409;
    if refused {
        assert!(
            other["errors"][0]
                .as_str()
                .is_some_and(|e| e.contains("in progress")),
            "{other}"
        );
    } else {
        // It completed in between: then the second one is taken.
        assert_eq!(code, 202, "{other}");
        let t = other["request-id"].as_str().unwrap();
        rest.savepoint_location(&job, t);
    }
    let location = rest.savepoint_location(&job, id);
    let (code, after) = post();
    assert_eq!((code, &after), (202, &first), "still the same one");
    assert_eq!(rest.savepoint_location(&job, id), location);
    let savepoints = std::fs::read_dir(s.join("sp")).unwrap().count();
    assert_eq!(savepoints, 1 + usize::from(!refused), "{location}");
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    assert_w1_exactly_once(&s.join("out"), n, 50, "after the savepoints");
}

#[test]
fn a_cancel_while_the_job_waits_to_restart_ends_it_at_once() {
    // The cancel used to wait out the restart delay (here 10 minutes),
    // then start and restore another attempt, and only then cancel it.
    let s = Scratch::new("rest", "cancel-restarting");
    let n = 600_000;
    let restart = [
        "restart-strategy.type=fixed-delay",
        "restart-strategy.fixed-delay.attempts=3",
        "restart-strategy.fixed-delay.delay=10min",
    ];
    let mut c = w1(&s, 2, n, 100_000, "200ms", &restart);
    c.env("WEIR_FAILPOINTS", "source-panic=100000");
    let mut p = Proc::spawn(&s, "w1", c);
    let rest = Rest::new(&endpoint(&mut p));
    let mut job = String::new();
    p.wait_until("RESTARTING", || {
        let jobs = rest.get("/jobs");
        job = jobs["jobs"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        jobs["jobs"][0]["status"] == "RESTARTING"
    });
    let (code, reply) = rest.call("POST", &format!("/jobs/{job}/stop"), None);
    assert_eq!(code, 409, "{reply}");
    assert_eq!(
        reply["errors"][0], "the job is RESTARTING, not RUNNING",
        "{reply}"
    );
    let (code, reply) = rest.call("PATCH", &format!("/jobs/{job}?mode=cancel"), None);
    assert_eq!(code, 202, "{reply}");
    let asked = Instant::now();
    let status = p.wait(FINISH);
    assert!(
        asked.elapsed() < Duration::from_secs(30),
        "cancelled after {:?}",
        asked.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{}", p.stderr());
    assert!(
        p.stderr().contains("the job was cancelled"),
        "{}",
        p.stderr()
    );
    let mut c = w1(&s, 2, n, 2_000_000, "1h", &[]);
    c.args(["--restore", "latest"]);
    let mut restored = Proc::spawn(&s, "restored", c);
    let status = restored.wait(FINISH);
    assert!(status.success(), "{status}\n{}", restored.stderr());
    assert_w1_exactly_once(&s.join("out"), n, 50, "restored after the cancel");
}

#[test]
fn sigterm_while_the_job_waits_to_restart_stops_it_without_waiting_the_delay() {
    // SIGTERM used to wait out the restart delay (here 10 minutes) before
    // the next attempt took the stop's savepoint.
    let s = Scratch::new("rest", "sigterm-restarting");
    let n = 600_000;
    let restart = [
        "restart-strategy.type=fixed-delay",
        "restart-strategy.fixed-delay.attempts=3",
        "restart-strategy.fixed-delay.delay=10min",
    ];
    let mut c = w1(&s, 2, n, 100_000, "200ms", &restart);
    c.env("WEIR_FAILPOINTS", "source-panic=100000");
    let mut p = Proc::spawn(&s, "w1", c);
    let rest = Rest::new(&endpoint(&mut p));
    p.wait_until("RESTARTING", || {
        rest.get("/jobs")["jobs"][0]["status"] == "RESTARTING"
    });
    let asked = Instant::now();
    let term = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(term.success());
    let status = p.wait(FINISH);
    assert!(
        asked.elapsed() < Duration::from_secs(60),
        "stopped after {:?}",
        asked.elapsed()
    );
    assert!(status.success(), "{status}\n{}", p.stderr());
    let stdout = std::fs::read_to_string(s.join("w1.stdout")).unwrap();
    let savepoint = stdout
        .lines()
        .find_map(|l| l.strip_prefix("stopped with a savepoint: "))
        .unwrap_or_else(|| panic!("no savepoint: {stdout}\n{}", p.stderr()))
        .trim()
        .to_owned();
    restore_to_the_end(&s, "restored", &savepoint, n);
}

#[test]
fn a_savepoint_into_a_file_sources_input_is_refused() {
    // A watching filesystem source lists its directory again and again,
    // subdirectories too: a savepoint written under it had its segments
    // read as CSV lines. Refused when triggered, and as
    // state.savepoints.dir at start.
    let s = Scratch::new("rest", "sql-input");
    let (input, out) = (s.join("in"), s.join("out"));
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("a.csv"), "1,a\n2,b\n").unwrap();
    let script = s.join("watch.sql");
    std::fs::write(
        &script,
        support::csv_copy_script(
            &input.display().to_string(),
            &out.display().to_string(),
            ", 'source.monitor-interval' = '20 ms'",
        ),
    )
    .unwrap();
    let sql = |savepoints: &Path| {
        let mut c = Command::new(WEIR);
        c.arg("sql")
            .arg(&script)
            .args(["--workers", "2"])
            .args(["--set", "weir.worker.pin-cores=false"])
            .args(["--set", "rest.port=0"])
            .args(["--set", "execution.checkpointing.interval=100ms"])
            .arg("--set")
            .arg(format!("state.checkpoints.dir={}", s.join("ck").display()))
            .arg("--set")
            .arg(format!("state.savepoints.dir={}", savepoints.display()))
            .env_remove("RUST_LOG");
        c
    };
    // (The planner refuses it first, naming the table and the setting.)
    let refused = sql(&input.join("sp")).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("state.savepoints.dir")
            && text(&refused).contains("lies inside the directory this table reads"),
        "{}",
        text(&refused)
    );

    let mut p = Proc::spawn(&s, "sql", sql(&s.join("sp")));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    for target in [input.join("sp"), input.clone()] {
        let body = json!({ "target-directory": target }).to_string();
        let (code, reply) = rest.call(
            "POST",
            &format!("/jobs/{job}/savepoints"),
            Some(body.as_bytes()),
        );
        assert_eq!(code, 202, "{reply}");
        let trigger = reply["request-id"].as_str().unwrap();
        let since = Instant::now();
        let status = loop {
            let status = rest.get(&format!("/jobs/{job}/savepoints/{trigger}"));
            if status["status"]["id"] == "COMPLETED" {
                break status;
            }
            assert!(since.elapsed() < CONDITION, "{status}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let failure = status["operation"]["failure-cause"]["stack-trace"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: taken: {status}", target.display()));
        assert!(failure.contains("the job's input"), "{failure}");
    }
    let entries: Vec<_> = std::fs::read_dir(&input)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(entries, vec!["a.csv"], "nothing written into the input");
    assert!(p.wait_until("both rows", || support::committed_rows(&out).len() >= 2));
    // A stop into the input is refused the same way, and the job goes on;
    // a stop into a directory of its own (Flink's `targetDirectory`, `weir
    // stop --dir`) leaves its savepoint there.
    let input_dir = input.display().to_string();
    let refused = weir(&["stop", &job, "--dir", &input_dir, "--address", &rest.base]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("the job's input"),
        "{}",
        text(&refused)
    );
    let target = s.join("stopped-here");
    let target_dir = target.display().to_string();
    let stopped = weir(&["stop", &job, "--dir", &target_dir, "--address", &rest.base]);
    assert!(stopped.status.success(), "{}", text(&stopped));
    let path = String::from_utf8_lossy(&stopped.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("Savepoint completed. Path: ")
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| panic!("no path: {}", text(&stopped)));
    assert!(path.starts_with(&target), "{}", path.display());
    assert!(p.wait(FINISH).success(), "{}", p.stderr());
    assert!(path.join("_metadata").is_file(), "{}", path.display());
    let stdout = std::fs::read_to_string(s.join("sql.stdout")).unwrap();
    assert!(
        stdout.contains(&format!("stopped with a savepoint: {}", path.display())),
        "{stdout}"
    );
}

#[test]
fn a_signal_during_a_rest_stop_lets_the_stop_finish() {
    // The first SIGTERM after `weir stop` was taken for a second one: it
    // aborted the stop at once (exit 143) and threw its savepoint away.
    let s = Scratch::new("rest", "stop-then-sigterm");
    let n = 600_000;
    let mut c = w1(&s, 2, n, 60_000, "300ms", &[]);
    // The stop's manifest waits 3 s: the signal comes while it is under way.
    c.env("WEIR_FAILPOINTS", "stop-complete-delay=3000");
    let mut p = Proc::spawn(&s, "w1", c);
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    let (code, reply) = rest.call("POST", &format!("/jobs/{job}/stop"), None);
    assert_eq!(code, 202, "{reply}");
    let trigger = reply["request-id"].as_str().unwrap().to_owned();
    p.wait_until("the stop's savepoint to begin", || {
        std::fs::read_dir(s.join("sp")).is_ok_and(|mut d| d.next().is_some())
    });
    let term = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(term.success());
    let location = rest.savepoint_location(&job, &trigger);
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    assert!(p.stderr().contains("already under way"), "{}", p.stderr());
    restore_to_the_end(&s, "restored", &location, n);
}

#[test]
fn a_checkpoint_in_progress_is_listed_and_detailed_as_flinks() {
    // A pending checkpoint was only counted: the history left it out and
    // its details answered 404 "not found (the newest 100 are kept)".
    let s = Scratch::new("rest", "in-progress");
    let n = 600_000;
    let mut c = w1(&s, 2, n, 60_000, "1h", &[]);
    // The stop's savepoint stays in progress for 4 s before its manifest.
    c.env("WEIR_FAILPOINTS", "stop-complete-delay=4000");
    let mut p = Proc::spawn(&s, "w1", c);
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    let (code, reply) = rest.call("POST", &format!("/jobs/{job}/stop"), None);
    assert_eq!(code, 202, "{reply}");
    let since = Instant::now();
    let pending = loop {
        let c = rest.get(&format!("/jobs/{job}/checkpoints"));
        if c["history"][0]["status"] == "IN_PROGRESS" {
            break c;
        }
        assert!(since.elapsed() < CONDITION, "never in progress: {c}");
        std::thread::sleep(Duration::from_millis(5));
    };
    let entry = &pending["history"][0];
    assert_eq!(entry["className"], "in_progress", "{entry}");
    assert_eq!(entry["is_savepoint"], true, "the stop's savepoint: {entry}");
    assert!(
        pending["counts"]["in_progress"].as_u64() >= Some(1),
        "{pending}"
    );
    let id = entry["id"].as_u64().expect("an id");
    let details = rest.get(&format!("/jobs/{job}/checkpoints/details/{id}"));
    assert_eq!(details["status"], "IN_PROGRESS", "{details}");
    let (acked, all) = (
        details["num_acknowledged_subtasks"].as_u64().unwrap(),
        details["num_subtasks"].as_u64().unwrap(),
    );
    assert!(acked <= all && all == 4, "{details}");
    // Every subtask of a stage, acknowledged or not yet.
    let vertex = rest.get(&format!("/jobs/{job}"))["vertices"][1]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let subtasks = rest.get(&format!(
        "/jobs/{job}/checkpoints/details/{id}/subtasks/{vertex}"
    ));
    let listed: Vec<(u64, String)> = subtasks["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["index"].as_u64().unwrap(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(listed.len(), 2, "{subtasks}");
    for (i, (index, status)) in listed.iter().enumerate() {
        assert_eq!(*index, i as u64, "{subtasks}");
        assert!(
            ["completed", "pending_or_failed"].contains(&status.as_str()),
            "{subtasks}"
        );
    }
    let (code, missing) = rest.call(
        "GET",
        &format!("/jobs/{job}/checkpoints/details/{}", id + 5),
        None,
    );
    assert_eq!(code, 404, "{missing}");
    assert!(
        missing["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("not triggered yet")),
        "{missing}"
    );
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
}

#[test]
fn control_commands_take_only_job_ids() {
    // The id is part of the request's path: `weir savepoint 'ID/stop?'`
    // would POST /jobs/ID/stop. Refused as bad usage before any request
    // (nothing listens on the address: a request would exit 1).
    let job = "0123456789abcdef0123456789abcdef";
    for (command, id) in [
        ("savepoint", format!("{job}/stop?")),
        ("stop", format!("{job}/savepoints?")),
        ("cancel", format!("{job}/../{job}")),
        ("stop", String::new()),
        ("savepoint", format!("{job} ")),
    ] {
        let out = weir(&[command, &id, "--address", "http://127.0.0.1:9"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command} {id:?}: {}",
            text(&out)
        );
        assert!(
            text(&out).contains("not a job id: a job id is 32 hex digits"),
            "{command} {id:?}: {}",
            text(&out)
        );
    }
    // Capitals are the same id (as Flink's CLI reads them): the request
    // is sent, and finds nothing listening.
    let out = weir(&[
        "cancel",
        &job.to_ascii_uppercase(),
        "--address",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("cannot reach the REST endpoint"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_port_set_in_use_is_refused_and_the_default_one_falls_back_to_a_free_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let quick = [
        "--set",
        "weir.worker.pin-cores=false",
        "--set",
        "job.records=100000",
        "--workers",
        "1",
    ];
    let mut args = vec!["run", "--set"];
    let set = format!("rest.port={port}");
    args.push(&set);
    args.extend(quick);
    let out = weir(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "cannot serve the REST endpoint on 127.0.0.1:{port}"
        )),
        "{}",
        text(&out)
    );
    // 8081 held (by this test, or by another job): a warning and a free port.
    let _default = std::net::TcpListener::bind("127.0.0.1:8081");
    let mut args = vec!["run"];
    args.extend(quick);
    let out = weir(&args);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    if _default.is_ok() {
        assert!(t.contains("warning: 127.0.0.1:8081 is in use"), "{t}");
        assert!(!t.contains("REST endpoint: http://127.0.0.1:8081\n"), "{t}");
    }
    assert!(t.contains("REST endpoint: http://127.0.0.1:"), "{t}");
}

#[test]
fn watermarks_of_a_stage_fed_by_an_exchange_advance() {
    let s = Scratch::new("rest", "watermarks");
    let mut c = Command::new(WEIR);
    c.args(["bench", "w2", "--quiet", "--workers", "2"])
        .args(["--n", "2000000", "--k", "100", "--rate", "400000"])
        .args([
            "--set",
            "rest.port=0",
            "--set",
            "weir.worker.pin-cores=false",
        ])
        .env_remove("RUST_LOG");
    let mut p = Proc::spawn(&s, "w2", c);
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    let window = |rest: &Rest| -> Value {
        let d = rest.get(&format!("/jobs/{job}"));
        d["vertices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"].as_str().is_some_and(|n| n.contains("w2-window")))
            .unwrap_or_else(|| panic!("no window stage: {d}"))
            .clone()
    };
    let mut first = None;
    p.wait_until("a low watermark", || {
        first = window(&rest)["low-watermark"].as_i64();
        first.is_some()
    });
    let first = first.unwrap();
    p.wait_until("the low watermark to advance", || {
        window(&rest)["low-watermark"].as_i64() > Some(first)
    });
    let vid = window(&rest)["id"].as_str().unwrap().to_owned();
    let w = rest.get(&format!("/jobs/{job}/vertices/{vid}/watermarks"));
    let list = w.as_array().expect("a list");
    assert_eq!(list.len(), 2, "{w}");
    for (i, m) in list.iter().enumerate() {
        assert_eq!(m["id"], format!("{i}.currentInputWatermark"));
        let v: i64 = m["value"].as_str().unwrap().parse().unwrap();
        assert!(v >= first, "{w}");
    }
    assert!(p.wait(FINISH).success(), "{}", p.stderr());
}

/// The latency histograms of `/jobs/:id/metrics` from the source stage to
/// each subtask of the keyed stage, once each has `at_least` markers:
/// (subtask, median ms, max ms).
fn latencies(rest: &Rest, job: &str, at_least: f64) -> Vec<(usize, f64, f64)> {
    let since = Instant::now();
    loop {
        let vertices = rest.get(&format!("/jobs/{job}"))["vertices"].clone();
        let source = vertices[0]["id"]
            .as_str()
            .expect("a source vertex")
            .to_owned();
        let keyed = vertices[1]["id"]
            .as_str()
            .expect("a keyed vertex")
            .to_owned();
        let ids = rest.get(&format!("/jobs/{job}/metrics"));
        let ids: Vec<&str> = ids
            .as_array()
            .expect("a list")
            .iter()
            .filter_map(|m| m["id"].as_str())
            .collect();
        // Sources record nothing: every histogram is of the keyed stage.
        for id in ids.iter().filter(|i| i.starts_with("latency.")) {
            assert!(
                id.starts_with(&format!("latency.source_id.{source}.operator_id.{keyed}.")),
                "{id}"
            );
        }
        let name = |i: usize, s: &str| {
            format!(
                "latency.source_id.{source}.operator_id.{keyed}.operator_subtask_index.{i}.latency_{s}"
            )
        };
        let wanted: Vec<String> = (0..2)
            .flat_map(|i| ["count", "median", "max"].map(|s| name(i, s)))
            .collect();
        let got = rest.get(&format!("/jobs/{job}/metrics?get={}", wanted.join(",")));
        let value = |id: &str| {
            got.as_array()
                .expect("a list")
                .iter()
                .find(|m| m["id"] == id)
                .and_then(|m| m["value"].as_str()?.parse::<f64>().ok())
        };
        let found: Vec<(usize, f64, f64, f64)> = (0..2)
            .filter_map(|i| {
                Some((
                    i,
                    value(&name(i, "count"))?,
                    value(&name(i, "median"))?,
                    value(&name(i, "max"))?,
                ))
            })
            .collect();
        if found.len() == 2 && found.iter().all(|f| f.1 >= at_least) {
            return found.into_iter().map(|(i, _, m, x)| (i, m, x)).collect();
        }
        assert!(since.elapsed() < CONDITION, "too few markers: {got}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn latency_markers_wait_in_buffers_as_records_do() {
    // A trickle (1,000 records/s) never fills a buffer: with a 100 ms
    // buffer timeout every record waits up to 100 ms for its buffer to
    // ship, and so does a marker behind it; with a timeout of 0 each
    // record ships at once, and so does the marker.
    for (timeout, median_ms, max_ms) in [
        ("100ms", 15.0..90.0, 90.0..1000.0),
        ("0ms", 0.0..10.0, 0.0..200.0),
    ] {
        let s = Scratch::new("rest", &format!("latency-{timeout}"));
        let extra = [
            "metrics.latency.interval=10ms".to_owned(),
            format!("execution.buffer-timeout={timeout}"),
        ];
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut p = Proc::spawn(&s, "w1", w1(&s, 2, 20_000, 1_000, "1h", &extra));
        let rest = Rest::new(&endpoint(&mut p));
        let job = rest.job_id();
        for (subtask, median, max) in latencies(&rest, &job, 100.0) {
            assert!(
                median_ms.contains(&median) && max_ms.contains(&max),
                "buffer timeout {timeout}, subtask {subtask}: median {median} ms, max {max} ms"
            );
        }
        let (code, v) = rest.call("GET", &format!("/jobs/{job}/metrics?bogus=1"), None);
        assert_eq!(code, 400, "{v}");
        assert!(p.kill());
    }
}

#[test]
fn without_latency_tracking_no_markers_are_sent() {
    let s = Scratch::new("rest", "latency-off");
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, 200_000, 100_000, "1h", &[]));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    std::thread::sleep(Duration::from_millis(500));
    let ids = rest.get(&format!("/jobs/{job}/metrics"));
    let names: Vec<&str> = ids
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(names.contains(&"uptime"), "{ids}");
    assert!(!names.iter().any(|n| n.starts_with("latency.")), "{ids}");
    let status = p.wait(FINISH);
    assert!(status.success(), "{status}\n{}", p.stderr());
    assert_w1_exactly_once(&s.join("out"), 200_000, 50, "latency-off");
}

#[test]
fn vertex_and_aggregated_subtask_metrics_answer_in_flinks_shapes() {
    let s = Scratch::new("rest", "vertex-metrics");
    let mut p = Proc::spawn(&s, "w1", w1(&s, 2, 2_000_000, 200_000, "1h", &[]));
    let rest = Rest::new(&endpoint(&mut p));
    let job = rest.job_id();
    let details = rest.get(&format!("/jobs/{job}"));
    let vertices = details["vertices"].clone();
    let keyed = vertices[1]["id"].as_str().expect("a vertex id").to_owned();
    // The plan's edges, as Flink gives them: the key_by into the keyed
    // stage, nothing into the source's.
    let nodes = &details["plan"]["nodes"];
    assert!(nodes[0].get("inputs").is_none(), "{nodes}");
    assert_eq!(
        nodes[1]["inputs"],
        json!([{"num": 0, "id": vertices[0]["id"], "ship_strategy": "HASH", "exchange": "pipelined_bounded"}]),
        "{nodes}"
    );
    // Wait until both keyed subtasks read records.
    let since = Instant::now();
    let per_subtask = loop {
        let v = rest.get(&format!(
            "/jobs/{job}/vertices/{keyed}/metrics?get=0.numRecordsIn,1.numRecordsIn,0.busyTimeMsPerSecond,7.numRecordsIn"
        ));
        let values: Vec<(String, f64)> = v
            .as_array()
            .expect("a list")
            .iter()
            .map(|m| {
                let value = m["value"].as_str().expect("a string value");
                (
                    m["id"].as_str().expect("an id").to_owned(),
                    value.parse().expect("a number"),
                )
            })
            .collect();
        // There is no subtask 7: it is left out, not an error.
        assert!(values.iter().all(|(id, _)| !id.starts_with("7.")), "{v}");
        if values.len() == 3 && values[..2].iter().all(|(_, n)| *n > 0.0) {
            break values;
        }
        assert!(since.elapsed() < CONDITION, "no records in: {v}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let busy = per_subtask[2].1;
    assert!((0.0..=1000.0).contains(&busy), "{per_subtask:?}");

    let names = rest.get(&format!("/jobs/{job}/vertices/{keyed}/subtasks/metrics"));
    let names: Vec<&str> = names
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    for n in [
        "numRecordsIn",
        "numRecordsOut",
        "numBytesIn",
        "idleTimeMsPerSecond",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let agg = rest.get(&format!(
        "/jobs/{job}/vertices/{keyed}/subtasks/metrics?get=numBytesIn&agg=min,max,sum"
    ));
    let a = &agg[0];
    assert_eq!(a["id"], "numBytesIn", "{agg}");
    let (min, max, sum) = (
        a["min"].as_f64().expect("min"),
        a["max"].as_f64().expect("max"),
        a["sum"].as_f64().expect("sum"),
    );
    assert!(
        0.0 < min && min <= max && max <= sum && sum <= 2.0 * max,
        "{agg}"
    );
    assert!(a.get("avg").is_none(), "only what was asked: {agg}");
    for bad in ["agg=median", "since=1", "get=a&x"] {
        let (code, v) = rest.call(
            "GET",
            &format!("/jobs/{job}/vertices/{keyed}/subtasks/metrics?{bad}"),
            None,
        );
        assert_eq!(code, 400, "{bad}: {v}");
    }
    let (code, _) = rest.call("GET", &format!("/jobs/{job}/vertices/nope/metrics"), None);
    assert_eq!(code, 404);
    assert!(p.kill());
}
