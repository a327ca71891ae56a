//! Kafka end to end against a real broker (`tools/kafka/broker.sh`: Apache
//! Kafka in KRaft mode from Maven Central on Debian's JRE), as a user runs
//! it: `weir sql` scripts reading and writing topics, checked with a
//! `read_committed` consumer.
//!
//! The tests share one broker, so they take a lock and run one at a time
//! (one of them restarts the broker). A broker that cannot start fails
//! every test with the script's message. The tests that need the broker
//! are `#[ignore]`d so that the plain test command passes on a machine
//! that cannot install it (it comes from Maven Central); `.ci/run` runs
//! them with `--ignored` after `tools/kafka/broker.sh install` succeeds.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use support::{complete_checkpoints, splitmix64, Proc, Scratch, FINISH, WEIR};
use weir_kafka::admin;

fn broker_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/kafka/broker.sh")
}

/// The broker's address (started on first use) and the lock every test
/// holds.
fn broker() -> (String, MutexGuard<'static, ()>) {
    static LOCK: Mutex<()> = Mutex::new(());
    static ADDRESS: OnceLock<String> = OnceLock::new();
    let guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let address = ADDRESS
        .get_or_init(|| {
            let out = Command::new(broker_script())
                .arg("start")
                .stderr(Stdio::inherit())
                .output()
                .expect("run tools/kafka/broker.sh");
            assert!(
                out.status.success(),
                "the Kafka broker did not start (tools/kafka/broker.sh start exited {}): see its \
                 messages above",
                out.status
            );
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        })
        .clone();
    (address, guard)
}

/// A name no other run of the tests used.
fn unique(name: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros();
    format!("{name}-{}-{t}", std::process::id())
}

fn sql(script: &Path, workers: usize) -> Command {
    let mut c = Command::new(WEIR);
    c.arg("sql").arg(script).args([
        "--workers",
        &workers.to_string(),
        "--set",
        "weir.worker.pin-cores=false",
    ]);
    c
}

/// Per user, the `(count, total)` updates a read_committed reader saw, in
/// offset order per partition.
fn updates(address: &str, topic: &str) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut by_user: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    let mut records = admin::read_all(address, topic, true).expect("read the output topic");
    records.sort_by_key(|r| (r.partition, r.offset));
    for r in records {
        let v: serde_json::Value =
            serde_json::from_slice(r.value.as_deref().expect("a value")).expect("JSON value");
        let user = v["user_id"].as_str().expect("user_id").to_owned();
        let key: serde_json::Value =
            serde_json::from_slice(r.key.as_deref().expect("a key")).unwrap();
        assert_eq!(
            key["user_id"].as_str(),
            Some(user.as_str()),
            "the key is the primary key"
        );
        by_user
            .entry(user)
            .or_default()
            .push((v["cnt"].as_u64().unwrap(), v["total"].as_u64().unwrap()));
    }
    by_user
}

const USERS: u64 = 37;

fn record(i: u64) -> (String, String) {
    let user = format!("u{}", splitmix64(i) % USERS);
    let value = format!("{{\"user_id\":\"{user}\",\"amount\":{i}}}");
    (user, value)
}

fn produce_range(address: &str, topic: &str, range: std::ops::Range<u64>) {
    let recs: Vec<(String, String)> = range.map(record).collect();
    admin::produce(
        address,
        topic,
        recs.iter().map(|(k, v)| (Some(k.as_bytes()), v.as_bytes())),
    )
    .expect("produce input records");
}

/// Per user, the updates an exactly-once run must write: counts 1..c with
/// the running totals, once each.
fn expected(n: u64) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut running: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for i in 0..n {
        let (user, _) = record(i);
        let e = running.entry(user.clone()).or_default();
        e.0 += 1;
        e.1 += i;
        out.entry(user).or_default().push(*e);
    }
    out
}

fn counting_script(s: &Scratch, address: &str, input: &str, output: &str, prefix: &str) -> PathBuf {
    let script = s.join("counts.sql");
    fs::write(
        &script,
        format!(
            "SET 'execution.checkpointing.interval' = '300ms';
             SET 'state.checkpoints.dir' = '{chk}';
             CREATE TABLE purchases (user_id STRING, amount BIGINT) WITH (
               'connector' = 'kafka', 'topic' = '{input}',
               'properties.bootstrap.servers' = '{address}',
               'properties.group.id' = '{prefix}-group',
               'scan.startup.mode' = 'earliest-offset',
               'format' = 'json');
             CREATE TABLE totals (user_id STRING, cnt BIGINT, total BIGINT,
                                  PRIMARY KEY (user_id) NOT ENFORCED) WITH (
               'connector' = 'upsert-kafka', 'topic' = '{output}',
               'properties.bootstrap.servers' = '{address}',
               'key.format' = 'json', 'value.format' = 'json',
               'sink.delivery-guarantee' = 'exactly-once',
               'sink.transactional-id-prefix' = '{prefix}');
             INSERT INTO totals SELECT user_id, COUNT(*), SUM(amount) FROM purchases GROUP BY user_id;",
            chk = s.join("chk").display(),
        ),
    )
    .unwrap();
    script
}

/// Waits until `topic` holds `n` committed records (or panics naming the
/// run's stderr).
fn wait_for_output(p: &mut Proc, address: &str, topic: &str, n: usize) {
    let since = Instant::now();
    loop {
        let got = admin::read_all(address, topic, true)
            .map(|r| r.len())
            .unwrap_or(0);
        if got >= n {
            return;
        }
        assert!(p.exited().is_none(), "the run ended early:\n{}", p.stderr());
        assert!(
            since.elapsed() < FINISH,
            "only {got} of {n} results committed:\n{}",
            p.stderr()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// SIGTERM: a graceful stop (stop-with-savepoint); the run must exit 0.
fn stop(p: &mut Proc) {
    let pid = p.child.id() as i32;
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = p.wait(FINISH);
    assert!(status.success(), "the stopped run failed:\n{}", p.stderr());
}

/// Kafka -> keyed aggregation -> Kafka, exactly once: records arrive while
/// the job runs, which is SIGKILLed three times at random moments after a
/// checkpoint and restored (`--restore latest`, once at another
/// parallelism); a read_committed reader then sees, per user, every count
/// from 1 to the user's total exactly once, with the right running sums.
#[test]
#[ignore = "needs a real Apache Kafka broker: tools/kafka/broker.sh installs it from Maven Central; .ci/run runs these with --ignored when it can"]
fn kafka_to_aggregation_to_kafka_is_exactly_once_through_sigkills_and_rescaling() {
    let (address, _lock) = broker();
    let s = Scratch::new("kafka", "exactly-once");
    let input = unique("purchases");
    let output = unique("totals");
    admin::create_topic(&address, &input, 4).unwrap();
    admin::create_topic(&address, &output, 3).unwrap();
    let script = counting_script(&s, &address, &input, &output, &unique("eo"));
    const BATCH: u64 = 20_000;
    const BATCHES: u64 = 12;
    let mut produced = 0;
    let mut seed = 0x5eed_u64;
    for (round, workers) in [2usize, 1, 2].into_iter().enumerate() {
        let mut c = sql(&script, workers);
        if round > 0 {
            c.args(["--restore", "latest"]);
        }
        let mut run = Proc::spawn(&s, &format!("run-{round}"), c);
        let before = complete_checkpoints(&s.join("chk"))
            .last()
            .copied()
            .unwrap_or(0);
        // Records keep arriving while it runs.
        for _ in 0..BATCHES / 4 {
            produce_range(&address, &input, produced..produced + BATCH);
            produced += BATCH;
        }
        assert!(
            run.wait_until("a new checkpoint", || complete_checkpoints(&s.join("chk"))
                .last()
                .is_some_and(|&id| id > before)),
            "run {round} ended before it was killed:\n{}",
            run.stderr()
        );
        seed = splitmix64(seed);
        std::thread::sleep(Duration::from_millis(seed % 700));
        assert!(
            run.kill(),
            "run {round} ended before the kill:\n{}",
            run.stderr()
        );
    }
    let mut last = sql(&script, 2);
    last.args(["--restore", "latest"]);
    let mut last = Proc::spawn(&s, "last", last);
    wait_for_output(&mut last, &address, &output, produced as usize);
    stop(&mut last);
    let got = updates(&address, &output);
    let want = expected(produced);
    assert_eq!(got.len(), want.len(), "users");
    for (user, w) in &want {
        let g = &got[user];
        assert_eq!(
            g.len(),
            w.len(),
            "user {user}: {} updates, expected {}",
            g.len(),
            w.len()
        );
        assert_eq!(g, w, "user {user}: updates differ");
    }
}

/// The same pipeline with the broker restarted while the job runs: the
/// job fails over (its restart strategy) and the result is still exactly
/// once.
#[test]
#[ignore = "needs a real Apache Kafka broker: tools/kafka/broker.sh installs it from Maven Central; .ci/run runs these with --ignored when it can"]
fn a_broker_restart_mid_run_loses_and_duplicates_nothing() {
    let (address, _lock) = broker();
    let s = Scratch::new("kafka", "broker-restart");
    let input = unique("purchases");
    let output = unique("totals");
    admin::create_topic(&address, &input, 2).unwrap();
    admin::create_topic(&address, &output, 2).unwrap();
    let script = counting_script(&s, &address, &input, &output, &unique("restart"));
    let mut run = Proc::spawn(&s, "run", sql(&script, 2));
    produce_range(&address, &input, 0..30_000);
    assert!(
        run.wait_until("a checkpoint", || !complete_checkpoints(&s.join("chk"))
            .is_empty())
    );
    let restarted = Command::new(broker_script())
        .arg("restart")
        .stderr(Stdio::inherit())
        .output()
        .expect("restart the broker");
    assert!(restarted.status.success(), "the broker did not restart");
    assert_eq!(String::from_utf8_lossy(&restarted.stdout).trim(), address);
    produce_range(&address, &input, 30_000..60_000);
    wait_for_output(&mut run, &address, &output, 60_000);
    stop(&mut run);
    assert_eq!(updates(&address, &output), expected(60_000));
}

/// Formats, keys and startup modes, read in bounded mode by a bare SELECT
/// and written with `at-least-once` and `none`.
#[test]
#[ignore = "needs a real Apache Kafka broker: tools/kafka/broker.sh installs it from Maven Central; .ci/run runs these with --ignored when it can"]
fn bounded_reads_formats_keys_and_delivery_modes() {
    let (address, _lock) = broker();
    let s = Scratch::new("kafka", "formats");
    let csv = unique("csv");
    admin::create_topic(&address, &csv, 3).unwrap();
    let rows: Vec<(String, String)> = (0..300)
        .map(|i| (format!("k{}", i % 10), format!("{i},name {i},{}.5", i % 7)))
        .collect();
    admin::produce(
        &address,
        &csv,
        rows.iter().map(|(k, v)| (Some(k.as_bytes()), v.as_bytes())),
    )
    .unwrap();
    let copy = unique("copy");
    let raw = unique("raw");
    admin::create_topic(&address, &copy, 2).unwrap();
    admin::create_topic(&address, &raw, 1).unwrap();
    let script = s.join("formats.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE src (k STRING, id INT, name STRING, score DOUBLE) WITH (
               'connector' = 'kafka', 'topic' = '{csv}',
               'properties.bootstrap.servers' = '{address}',
               'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
               'key.format' = 'raw', 'key.fields' = 'k', 'value.fields-include' = 'EXCEPT_KEY',
               'format' = 'csv');
             CREATE TABLE copy_json (id INT, k STRING, score DOUBLE) WITH (
               'connector' = 'kafka', 'topic' = '{copy}',
               'properties.bootstrap.servers' = '{address}',
               'sink.delivery-guarantee' = 'at-least-once', 'sink.partitioner' = 'round-robin',
               'format' = 'json');
             CREATE TABLE names (name STRING) WITH (
               'connector' = 'kafka', 'topic' = '{raw}',
               'properties.bootstrap.servers' = '{address}',
               'sink.delivery-guarantee' = 'none', 'format' = 'raw');
             INSERT INTO copy_json SELECT id, k, score FROM src WHERE id % 2 = 0;
             INSERT INTO names SELECT UPPER(name) FROM src WHERE id < 10;"
        ),
    )
    .unwrap();
    let out = sql(&script, 2).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = admin::read_all(&address, &copy, false).unwrap();
    let mut ids: Vec<i64> = copied
        .iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_slice(r.value.as_deref().unwrap()).unwrap();
            let id = v["id"].as_i64().unwrap();
            assert_eq!(v["k"].as_str(), Some(format!("k{}", id % 10).as_str()));
            assert_eq!(v["score"].as_f64(), Some((id % 7) as f64 + 0.5));
            id
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..300).filter(|i| i % 2 == 0).collect::<Vec<_>>());
    assert_eq!(
        copied.iter().filter(|r| r.partition == 0).count(),
        75,
        "round-robin"
    );
    let mut names: Vec<String> = admin::read_all(&address, &raw, false)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.value.unwrap()).unwrap())
        .collect();
    names.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("NAME {i}")).collect();
    want.sort();
    assert_eq!(names, want);

    // A bare SELECT over a bounded topic prints its rows.
    let select = s.join("select.sql");
    fs::write(
        &select,
        format!(
            "CREATE TABLE src (k STRING, id INT, name STRING, score DOUBLE) WITH (
               'connector' = 'kafka', 'topic' = '{csv}',
               'properties.bootstrap.servers' = '{address}',
               'scan.startup.mode' = 'specific-offsets',
               'scan.startup.specific-offsets' = 'partition:0,offset:0;partition:1,offset:0;partition:2,offset:0',
               'scan.bounded.mode' = 'latest-offset',
               'key.format' = 'raw', 'key.fields' = 'k', 'value.fields-include' = 'EXCEPT_KEY',
               'format' = 'csv');
             SELECT k, COUNT(*) AS n FROM src GROUP BY k;"
        ),
    )
    .unwrap();
    let out = sql(&select, 2).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("10 rows in set"), "{stdout}");
    assert!(
        stdout.contains("| k3 ") && stdout.contains("| 30 "),
        "{stdout}"
    );
}

/// Bad options and an unreachable broker: a clear error, exit code 2 for
/// what no retry can fix.
#[test]
fn bad_kafka_tables_are_refused_naming_the_option() {
    let s = Scratch::new("kafka", "bad");
    let cases = [
        ("'connector' = 'kafka', 'topic' = 't', 'format' = 'json'", "properties.bootstrap.servers"),
        (
            "'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'avro'",
            "'format' = 'avro'",
        ),
        (
            "'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json', 'sink.delivery-guarantee' = 'exactly-once'",
            "sink.transactional-id-prefix",
        ),
        (
            "'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json', 'scan.startup.mode' = 'soon'",
            "'scan.startup.mode' = 'soon'",
        ),
    ];
    for (i, (with, needle)) in cases.iter().enumerate() {
        let script = s.join(&format!("bad{i}.sql"));
        fs::write(
            &script,
            format!(
                "CREATE TABLE t (a STRING) WITH ({with});
                 CREATE TABLE o (a STRING) WITH ('connector' = 'blackhole');
                 INSERT INTO o SELECT a FROM t;"
            ),
        )
        .unwrap();
        let out = sql(&script, 1).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "case {i}: {stderr}");
        assert!(
            stderr.contains(needle),
            "case {i}: `{needle}` not in {stderr}"
        );
    }
    // An updating query into an append-only kafka table.
    let script = s.join("updating.sql");
    fs::write(
        &script,
        "CREATE TABLE t (a STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '5');
         CREATE TABLE o (a STRING, n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'o',
           'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json');
         INSERT INTO o SELECT a, COUNT(*) FROM t GROUP BY a;",
    )
    .unwrap();
    let out = sql(&script, 1).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("upsert-kafka"), "{stderr}");
}
