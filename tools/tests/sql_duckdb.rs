//! weir SQL checked against an independent engine: each case's query runs
//! on the real `weir sql` binary (two workers) and its DuckDB equivalent
//! runs in DuckDB (a Python venv from `tools/duckdb/setup.sh`) over the
//! same generated CSV files, and the final result sets must be equal as
//! sorted rows: DECIMALs as exact text at the column's scale, DOUBLEs to
//! nine significant digits, TIMESTAMPs as `yyyy-MM-dd HH:mm:ss.SSS`, NULL.
//! A window aggregation and an OVER aggregation SIGKILLed after their
//! first complete checkpoint and resumed with `--restore latest` must
//! commit DuckDB's result exactly once.
//!
//! Each case writes the two queries side by side; where Flink's semantics
//! differ from DuckDB's (AVG of an integer truncates and keeps its type,
//! CONCAT of a NULL is NULL, CAST to an integer truncates), the DuckDB
//! query says Flink's meaning explicitly. DuckDB must be set up: the test
//! takes its python from `WEIR_DUCKDB_PYTHON` (as `.ci/run` sets it) or
//! runs the setup script itself, and fails saying how to run it if it
//! cannot.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::duckdb::{duckdb, duckdb_python, same_rows, weir_sql};
use support::{complete_checkpoints, splitmix64, Proc, Scratch, FINISH, WEIR};

#[path = "sql_duckdb/cases.rs"]
mod cases;

use cases::{Case, CASES};

const JAN_1: i64 = 1_704_067_200_000;

/// `yyyy-MM-dd HH:mm:ss.SSS` of epoch milliseconds in January 2024 (UTC).
fn ts(ms: i64) -> String {
    let d = (ms - JAN_1).div_euclid(86_400_000) + 1;
    let rem = ms.rem_euclid(86_400_000);
    assert!((1..=31).contains(&d), "the data stays in January 2024");
    format!(
        "2024-01-{d:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// The one table a run printed for its bare SELECT: its rows' cells.
fn printed_table(name: &str, stdout: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = stdout.lines().collect();
    // rule, header, rule, rows, rule, `N rows in set`
    let start = lines
        .iter()
        .position(|l| l.starts_with("+-"))
        .unwrap_or_else(|| panic!("{name}: no table printed:\n{stdout}"));
    let rows: Vec<Vec<String>> = lines[start + 3..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            row[1..row.len() - 1]
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect();
    let count = format!("{} row", rows.len());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&count) && l.ends_with("in set")),
        "{name}: cannot read the printed table:\n{stdout}"
    );
    rows
}

/// The test data: orders (three files, out of order by up to 3 s within
/// a file, a 5 s watermark, no two at one millisecond), users and
/// shipments, as CSV with a header line and `NULL` for NULL.
struct Data {
    orders: PathBuf,
    users: PathBuf,
    shipments: PathBuf,
}

impl Data {
    /// `per_file` orders in each of three files, file `f` covering hour
    /// `1 + f` of January 1st (more orders: closer together).
    fn write(s: &Scratch, per_file: u64) -> Self {
        let d = Data {
            orders: s.join("orders"),
            users: s.join("users"),
            shipments: s.join("shipments"),
        };
        for dir in [&d.orders, &d.users, &d.shipments] {
            fs::create_dir_all(dir).unwrap();
        }
        let step = 3_600_000 / per_file as i64;
        assert!(step >= 2, "at most 1.8M orders per file");
        let mut shipments = Vec::new();
        for f in 0..3u64 {
            let mut text = String::from("order_id,user_id,amount,qty,category,note,ts\n");
            for i in 0..per_file {
                let id = f * per_file + i + 1;
                let h = splitmix64(id);
                let qty = match (h >> 20) % 10 {
                    0 => "NULL".to_owned(),
                    _ => ((h >> 24) % 20).to_string(),
                };
                let category = ["books", "games", "tools", "food", "NULL"][(h >> 32) as usize % 5];
                let note = [
                    "gift wrap",
                    "Express",
                    "leave at door",
                    "fragile ITEM",
                    "call first",
                ][(h >> 36) as usize % 5];
                // Disorder of up to 3 s (or half the step): even and odd
                // milliseconds alternate with `i`, so no two are equal.
                let jitter = (h >> 40) as i64 % (3_000.min(step) / 2) * 2 + (i % 2) as i64;
                let t = JAN_1 + (1 + f as i64) * 3_600_000 + i as i64 * step + step - jitter;
                text.push_str(&format!(
                    "{id},u{:02},{}.{:02},{qty},{category},{note},{}\n",
                    1 + h % 14,
                    (h >> 8) % 1000,
                    (h >> 48) % 100,
                    ts(t)
                ));
                if !(h >> 44).is_multiple_of(3) {
                    shipments.push((t + (h >> 30) as i64 % 600_000, id));
                }
            }
            fs::write(d.orders.join(format!("orders-{f}.csv")), text).unwrap();
        }
        // One file in time order: a delay of up to 10 min is more disorder
        // than any watermark here allows.
        shipments.sort_unstable();
        let mut text = String::from("ship_id,order_id,ts\n");
        for (t, id) in shipments {
            text.push_str(&format!("{},{id},{}\n", id * 10, ts(t)));
        }
        fs::write(d.shipments.join("shipments.csv"), text).unwrap();
        // Users u01..u12 (orders also name u13 and u14), tier NULL for u05.
        let mut text = String::from("user_id,name,tier\n");
        let names = [
            "ann", "bob", "cy", "dee", "ed", "flo", "gus", "hal", "ida", "jo", "kim", "lu",
        ];
        for (i, name) in names.iter().enumerate() {
            let tier = if i == 4 {
                "NULL".into()
            } else {
                (1 + i % 3).to_string()
            };
            text.push_str(&format!("u{:02},{name},{tier}\n", i + 1));
        }
        fs::write(d.users.join("users.csv"), text).unwrap();
        d
    }

    /// A few rows made by hand for the edges: negative amounts and
    /// quantities (CAST rounding, truncating division and AVG, a division
    /// by zero), the largest DECIMAL(10, 2), NULL keys and a user id no
    /// user has, non-ASCII text, equal amounts of one user (Top-N's tie
    /// rule), rows on window boundaries, a user's rows exactly the session
    /// gap apart, shipments exactly on the interval join's bounds and 1 ms
    /// past them.
    fn hand_made(s: &Scratch) -> Self {
        let d = Data {
            orders: s.join("hand-orders"),
            users: s.join("hand-users"),
            shipments: s.join("hand-shipments"),
        };
        let files = [
            (
                &d.orders,
                "order_id,user_id,amount,qty,category,note,ts
1,u01,10.05,3,books,gift wrap,2024-01-01 01:00:00.000
2,u01,-2.55,-7,books,café au lait,2024-01-01 01:00:02.500
3,u02,0.00,0,NULL,Express,2024-01-01 01:00:01.000
4,NULL,7.33,NULL,games,leave at door,2024-01-01 01:00:40.000
5,u01,99999999.99,19,tools,fragile ITEM,2024-01-01 01:00:40.000
6,u01,-0.05,-1,food,call first,2024-01-01 01:01:20.000
7,u02,12.50,4,food,NULL,2024-01-01 01:09:59.999
8,u02,12.50,4,food,Express,2024-01-01 01:10:00.000
9,u13,3.10,2,games,gift wrap,2024-01-01 01:10:00.001
10,u03,5.55,10,books,call first,2024-01-01 01:14:59.999
11,u03,-5.55,11,books,Éclair ß,2024-01-01 01:15:00.000
12,u05,1.00,1,NULL,leave at door,2024-01-01 01:20:00.000
13,u04,2.00,20,tools,fragile ITEM,2024-01-01 01:30:00.000
",
            ),
            (
                &d.users,
                "user_id,name,tier
u01,ann,1
u02,bob,2
u03,cy,3
u04,dee,2
u05,ed,NULL
NULL,nobody,3
",
            ),
            (
                &d.shipments,
                "ship_id,order_id,ts
20,2,2024-01-01 01:00:55.000
10,1,2024-01-01 01:01:00.000
50,5,2024-01-01 01:05:40.000
60,6,2024-01-01 01:06:20.001
80,8,2024-01-01 01:13:00.000
81,8,2024-01-01 01:14:00.000
110,11,2024-01-01 01:19:00.000
990,99,2024-01-01 01:20:00.000
",
            ),
        ];
        for (dir, text) in files {
            fs::create_dir_all(dir).unwrap();
            fs::write(dir.join("hand-made.csv"), text).unwrap();
        }
        d
    }

    /// The tables in weir: CREATE TABLEs over the files.
    fn weir_tables(&self) -> String {
        let csv = "'format' = 'csv', 'csv.ignore-first-line' = 'true', 'csv.null-literal' = 'NULL'";
        format!(
            "CREATE TABLE orders (
               order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), qty INT,
               category STRING, note STRING, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
             ) WITH ('connector' = 'filesystem', 'path' = '{}', {csv});
             CREATE TABLE users (user_id STRING, name STRING, tier INT)
             WITH ('connector' = 'filesystem', 'path' = '{}', {csv});
             CREATE TABLE shipments (
               ship_id BIGINT, order_id BIGINT, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
               PRIMARY KEY (order_id) NOT ENFORCED
             ) WITH ('connector' = 'filesystem', 'path' = '{}', {csv});\n",
            self.orders.display(),
            self.users.display(),
            self.shipments.display()
        )
    }

    /// The same tables in DuckDB: views over the files, typed as in weir.
    fn duckdb_tables(&self) -> String {
        let read = |dir: &Path, cols: &str| {
            format!(
                "read_csv('{}/*.csv', header = true, auto_detect = false, nullstr = 'NULL', \
                 delim = ',', quote = '', columns = {{{cols}}})",
                dir.display()
            )
        };
        format!(
            "CREATE VIEW orders AS SELECT * FROM {};
             CREATE VIEW users AS SELECT * FROM {};
             CREATE VIEW shipments AS SELECT * FROM {};
             -- the start of the `ms`-long window (from the epoch) holding `t`
             CREATE MACRO win_floor(t, ms) AS epoch_ms(epoch_ms(t) // ms * ms);
             -- n / d / 10, rounded half away from zero, in integers
             CREATE MACRO div_half_up(n, d) AS (n // d + sign(n // d) * 5) // 10;
             -- the DECIMAL(38, 13) of `n` units of 10^-13
             CREATE MACRO at_scale_13(n) AS
               CAST(n AS DECIMAL(38, 0)) * CAST(0.0000000000001 AS DECIMAL(14, 13));\n",
            read(
                &self.orders,
                "'order_id': 'BIGINT', 'user_id': 'VARCHAR', 'amount': 'DECIMAL(10,2)', \
                 'qty': 'INTEGER', 'category': 'VARCHAR', 'note': 'VARCHAR', 'ts': 'TIMESTAMP'"
            ),
            read(
                &self.users,
                "'user_id': 'VARCHAR', 'name': 'VARCHAR', 'tier': 'INTEGER'"
            ),
            read(
                &self.shipments,
                "'ship_id': 'BIGINT', 'order_id': 'BIGINT', 'ts': 'TIMESTAMP'"
            ),
        )
    }
}

/// Runs `case` over `d`; `data` names the data (files and messages).
fn run_case(s: &Scratch, d: &Data, data: &str, case: &Case) {
    let name = format!("{data}-{}", case.name);
    let script = s.join(&format!("{name}.sql"));
    fs::write(&script, format!("{}{}", d.weir_tables(), case.weir)).unwrap();
    let out = weir_sql(&script, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name}: weir failed on\n{}\n{}",
        case.weir,
        String::from_utf8_lossy(&out.stderr)
    );
    let weir = printed_table(&name, &stdout);
    let duck = duckdb(s, &name, &d.duckdb_tables(), case.duckdb);
    // The few hand-made rows leave some HAVING empty; generated data must
    // not.
    assert!(
        !duck.rows.is_empty() || data == "hand-made",
        "{name}: DuckDB's result is empty: the case tests nothing"
    );
    same_rows(
        &name,
        weir,
        duck,
        &format!("weir:\n{}\nDuckDB:\n{}", case.weir, case.duckdb),
    );
}

/// Runs every case (or only `WEIR_DUCKDB_CASE`) over `d`; the failures
/// are named together at the end.
fn run_cases(s: &Scratch, d: &Data, data: &str) {
    duckdb_python(); // one clear failure if DuckDB is missing
    let only = std::env::var("WEIR_DUCKDB_CASE").ok();
    let mut failed = Vec::new();
    for case in CASES {
        if only.as_deref().is_none_or(|o| o == case.name) {
            let run = std::panic::catch_unwind(|| run_case(s, d, data, case));
            if run.is_err() {
                failed.push(case.name);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "cases that differ on {data} data (above): {failed:?}"
    );
}

#[test]
fn weir_sql_results_equal_duckdb_results_on_generated_data() {
    let s = Scratch::new("sql-duckdb", "generated");
    run_cases(&s, &Data::write(&s, 2_000), "generated");
}

#[test]
fn weir_sql_results_equal_duckdb_results_on_hand_made_data() {
    let s = Scratch::new("sql-duckdb", "hand-made");
    run_cases(&s, &Data::hand_made(&s), "hand-made");
}

/// `weir` (an INSERT's query) into the exactly-once file sink of columns
/// `sink`, over `3 * per_file` orders, checkpointing every 100 ms: SIGKILLed after
/// its first complete checkpoint and resumed with `--restore latest`, its
/// committed rows must be DuckDB's result of `duck`, each once.
fn killed_and_restored_commits_duckdbs_result(
    name: &str,
    per_file: u64,
    sink: &str,
    weir: &str,
    duck: &str,
) {
    killed_and_restored(name, per_file, sink, (weir, duck), None);
}

/// The checkpoints checkpoint `chk` refers to (its incremental chain),
/// from `weir checkpoints describe --json`; `None` if that failed.
fn references(chk: &Path) -> Option<Vec<u64>> {
    let out = Command::new(WEIR)
        .args(["checkpoints", "describe", "--json"])
        .arg(chk)
        .output()
        .expect("run weir checkpoints describe");
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(
        d["incremental"]["references"]
            .as_array()?
            .iter()
            .filter_map(serde_json::Value::as_u64)
            .collect(),
    )
}

/// As [`killed_and_restored_commits_duckdbs_result`]; with `incremental`
/// (the start of names of states the job keeps), incremental checkpoints,
/// the kill after the first complete checkpoint that refers to earlier
/// ones (it wrote deltas, of such a state among them), and the restore
/// from that chain.
fn killed_and_restored(
    name: &str,
    per_file: u64,
    sink: &str,
    (weir, duck): (&str, &str),
    incremental: Option<&str>,
) {
    let s = Scratch::new("sql-duckdb", name);
    let d = Data::write(&s, per_file);
    let script = s.join(&format!("{name}.sql"));
    fs::write(
        &script,
        format!(
            "SET 'execution.checkpointing.interval' = '100ms';
             SET 'execution.checkpointing.incremental' = '{}';
             SET 'state.checkpoints.num-retained' = '100';
             SET 'state.checkpoints.dir' = '{}';
             {}
             CREATE TABLE totals ({sink})
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO totals {weir};",
            incremental.is_some(),
            s.join("chk").display(),
            d.weir_tables(),
            s.join("totals").display()
        ),
    )
    .unwrap();
    let duck = duckdb(&s, name, &d.duckdb_tables(), duck);
    let cmd = || {
        let mut c = Command::new(WEIR);
        c.arg("sql")
            .arg(&script)
            .args(["--workers", "2", "--set", "weir.worker.pin-cores=false"]);
        if incremental.is_some() {
            // The writer says which states it wrote as deltas, the
            // restore which path it took.
            c.env("RUST_LOG", "info,weir::checkpoint=debug");
        }
        c
    };
    let chk = s.join("chk");
    let mut first = Proc::spawn(&s, "first", cmd());
    let ready = |chk: &Path| match complete_checkpoints(chk).last() {
        None => false,
        Some(_) if incremental.is_none() => true,
        Some(&id) => references(&chk.join(format!("chk-{id}"))).is_some_and(|r| !r.is_empty()),
    };
    assert!(
        first.wait_until("a complete checkpoint", || ready(&chk)),
        "{name}: the first run ended before its first checkpoint{}: give it more input\n{}",
        if incremental.is_some() {
            " with deltas"
        } else {
            ""
        },
        first.stderr()
    );
    assert!(
        first.kill(),
        "{name}: the first run ended before the kill: give it more input"
    );
    let mut c = cmd();
    c.args(["--restore", "latest"]);
    let mut second = Proc::spawn(&s, "second", c);
    let status = second.wait(FINISH);
    assert!(status.success(), "{}", second.stderr());
    assert!(
        second.stderr().contains("restoring checkpoint"),
        "{name}: the second run did not restore: {}",
        second.stderr()
    );
    if let Some(state) = incremental {
        let wrote = first.stderr();
        assert!(
            wrote.lines().any(|l| l.contains("writer: state written")
                && l.contains(&format!("state=\"{state}"))
                && l.contains("delta=true")),
            "{name}: no state `{state}…` was written as a delta:\n{wrote}"
        );
        assert!(
            second
                .stderr()
                .lines()
                .any(|l| l.contains("from incremental chains")
                    && l.contains(&format!("state=\"{state}"))),
            "{name}: no state `{state}…` was restored from a chain:\n{}",
            second.stderr()
        );
    }
    // The sink's CSV: NULL is an empty field.
    let mut committed = Vec::new();
    for (line, _) in support::committed_lines(&s.join("totals")) {
        committed.push(
            line.split(',')
                .map(|v| match v {
                    "" => "NULL".to_owned(),
                    v => v.to_owned(),
                })
                .collect(),
        );
    }
    same_rows(name, committed, duck, "committed rows against DuckDB's");
}

/// A window aggregation killed and restored commits DuckDB's result
/// exactly once.
#[test]
fn a_sigkill_and_restore_latest_commit_duckdbs_result_exactly_once() {
    killed_and_restored_commits_duckdbs_result(
        "crash",
        100_000,
        "user_id STRING, window_start TIMESTAMP(3), n BIGINT, amount DECIMAL(38, 2), qty INT",
        "SELECT user_id, window_start, COUNT(*), SUM(amount), MAX(qty)
         FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
         GROUP BY user_id, window_start, window_end",
        "SELECT user_id, win_floor(ts, 60000), COUNT(*), SUM(amount), MAX(qty)
         FROM orders GROUP BY ALL",
    );
}

/// An OVER aggregation (no LAG or LEAD) killed and restored: its first
/// checkpoint once failed the job, as the operator made LAG's and LEAD's
/// states without visiting them.
#[test]
fn an_over_aggregation_killed_and_restored_commits_duckdbs_result_exactly_once() {
    killed_and_restored_commits_duckdbs_result(
        "crash-over",
        // (an OVER aggregation runs at a few thousand rows a second in a
        // debug build)
        10_000,
        "order_id BIGINT, n BIGINT, amount DECIMAL(38, 2)",
        "SELECT order_id, COUNT(*) OVER w, SUM(amount) OVER w FROM orders
         WINDOW w AS (PARTITION BY user_id ORDER BY ts
                      RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW)",
        "SELECT order_id, COUNT(*) OVER w, SUM(amount) OVER w FROM orders
         WINDOW w AS (PARTITION BY user_id ORDER BY ts
                      RANGE BETWEEN INTERVAL 10 SECOND PRECEDING AND CURRENT ROW)",
    );
}

/// An outer interval join killed and restored: the rows it keeps, with
/// whether each matched, and its cleanup timers come back, so each
/// unmatched order is committed padded exactly once.
#[test]
fn an_outer_interval_join_killed_and_restored_commits_duckdbs_result_exactly_once() {
    killed_and_restored_commits_duckdbs_result(
        "crash-outer-interval",
        50_000,
        "order_id BIGINT, ship_id BIGINT",
        "SELECT o.order_id, s.ship_id FROM orders o
         LEFT JOIN shipments s ON o.order_id = s.order_id
           AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '3' MINUTE",
        "SELECT o.order_id, s.ship_id FROM orders o
         LEFT JOIN shipments s ON o.order_id = s.order_id
           AND s.ts BETWEEN o.ts AND o.ts + INTERVAL 3 MINUTE",
    );
}

/// A regular join (each side's rows in list state, one table per side)
/// with incremental checkpoints, killed once a checkpoint wrote its state
/// as deltas over earlier ones and restored from that chain: every
/// joined row committed exactly once.
#[test]
fn a_regular_join_restored_from_incremental_checkpoints_commits_duckdbs_result_exactly_once() {
    let query = "SELECT o.order_id, s.ship_id, o.amount FROM orders o
                 JOIN shipments s ON o.order_id = s.order_id";
    killed_and_restored(
        "crash-incremental-join",
        50_000,
        "order_id BIGINT, ship_id BIGINT, amount DECIMAL(38, 2)",
        (query, query),
        Some("join-"),
    );
}

/// Flink's window deduplication (each user's last order of every minute,
/// by event time) into the file sink, killed and restored: append-only,
/// each window's row committed once. It was planned as a deduplication
/// over all time keeping the last row, an updating result the file sink
/// refused.
#[test]
fn a_window_deduplication_killed_and_restored_commits_duckdbs_result_exactly_once() {
    killed_and_restored_commits_duckdbs_result(
        "crash-window-dedup",
        50_000,
        "user_id STRING, window_start TIMESTAMP(3), order_id BIGINT, ts TIMESTAMP(3)",
        "SELECT user_id, window_start, order_id, ts FROM (
           SELECT *, ROW_NUMBER() OVER (
             PARTITION BY window_start, window_end, user_id ORDER BY ts DESC) AS rn
           FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))
         WHERE rn = 1",
        "SELECT user_id, ws, order_id, ts FROM (
           SELECT *, win_floor(ts, 60000) AS ws, row_number() OVER (
             PARTITION BY win_floor(ts, 60000), user_id ORDER BY ts DESC) AS rn
           FROM orders)
         WHERE rn = 1",
    );
}

/// Flink's window semi join (the orders of a user who placed an order of
/// more than 15 items in the same minute) into the file sink, killed and
/// restored: a window join of the subquery's distinct keys per window,
/// append-only, each order committed once. The distinct keys were a
/// group aggregation, so the result was updating and the file sink
/// refused it.
#[test]
fn a_window_semi_join_killed_and_restored_commits_duckdbs_result_exactly_once() {
    killed_and_restored_commits_duckdbs_result(
        "crash-window-semi",
        50_000,
        "order_id BIGINT, window_start TIMESTAMP(3)",
        "SELECT L.order_id, L.window_start
         FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) L
         WHERE L.user_id IN (
           SELECT user_id FROM (
             SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) R
           WHERE R.qty > 15 AND L.window_start = R.window_start AND L.window_end = R.window_end)",
        "SELECT L.order_id, win_floor(L.ts, 60000) FROM orders L
         WHERE EXISTS (SELECT 1 FROM orders R
                       WHERE R.qty > 15 AND R.user_id = L.user_id
                         AND win_floor(R.ts, 60000) = win_floor(L.ts, 60000))",
    );
}
