//! `weir sql` end to end for what comes after GROUP BY: COUNT(DISTINCT)
//! and FILTER in window and group aggregation, Top-N, deduplication and
//! SELECT DISTINCT, run by the real binary over CSV files on two workers;
//! the committed files of a filesystem sink (append-only results) and the
//! printed final tables (updating results) equal results computed here in
//! plain Rust. Bad uses of ROW_NUMBER exit 2 with an error naming them.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{committed_rows, splitmix64, Scratch, WEIR};

fn weir_sql(script: &Path) -> Output {
    Command::new(WEIR)
        .arg("sql")
        .arg(script)
        .args(["--workers", "2", "--set", "weir.worker.pin-cores=false"])
        .stdin(Stdio::null())
        .output()
        .expect("run weir sql")
}

const JAN_1: i64 = 1_704_067_200_000;

/// `yyyy-MM-dd HH:mm:ss.SSS` of epoch milliseconds in January 2024 (UTC).
fn ts(ms: i64) -> String {
    let d = (ms - JAN_1).div_euclid(86_400_000) + 1;
    let rem = ms.rem_euclid(86_400_000);
    assert!((1..=31).contains(&d), "tests stay in January 2024");
    format!(
        "2024-01-{d:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// One bid of the test data.
#[derive(Clone, Debug)]
struct Bid {
    user: u64,
    item: &'static str,
    price: u64,
    t: i64,
}

/// Bids of users 1..=20 on four items, prices 0..199 (many ties), in three
/// files of four hours each, out of order by up to 3 s within a file (the
/// watermark allows 5 s) and no two at the same millisecond.
fn write_bids(dir: &Path) -> Vec<Bid> {
    fs::create_dir_all(dir).unwrap();
    let mut bids = Vec::new();
    for f in 0..3u64 {
        let mut text = String::from("user_id,item,price,ts\n");
        for i in 0..3000u64 {
            let h = splitmix64(f * 100_000 + i);
            let b = Bid {
                user: 1 + h % 20,
                item: ["apple", "pear", "plum", "fig"][(h >> 8) as usize % 4],
                price: (h >> 16) % 200,
                // odd and even milliseconds alternate: never equal
                t: JAN_1 + 3_600_000 + f as i64 * 14_400_000 + i as i64 * 2_000
                    - ((h >> 24) % 1_500 * 2 + i % 2) as i64,
            };
            text.push_str(&format!("{},{},{},{}\n", b.user, b.item, b.price, ts(b.t)));
            bids.push(b);
        }
        fs::write(dir.join(format!("bids-{f}.csv")), text).unwrap();
    }
    bids
}

fn bids_table(s: &Scratch) -> String {
    format!(
        "CREATE TABLE bids (
           user_id BIGINT, item STRING, price BIGINT, ts TIMESTAMP(3),
           WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
         ) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.ignore-first-line' = 'true');\n",
        s.join("bids").display()
    )
}

/// The tables a run printed for its bare SELECTs, in order: each its rows
/// (sorted), each row its cells.
fn printed_tables(stdout: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables = Vec::new();
    let mut lines = stdout.lines().peekable();
    while let Some(l) = lines.next() {
        // rule, header, rule, rows, rule
        if !l.starts_with("+-") || !lines.peek().is_some_and(|h| h.starts_with('|')) {
            continue;
        }
        lines.next();
        lines.next();
        let mut rows = Vec::new();
        for row in lines.by_ref() {
            if !row.starts_with('|') {
                break;
            }
            rows.push(
                row.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_owned())
                    .collect::<Vec<_>>(),
            );
        }
        rows.sort();
        tables.push(rows);
    }
    tables
}

fn run_ok(s: &Scratch, name: &str, script: &str) -> String {
    let path = s.join(name);
    fs::write(&path, script).unwrap();
    let out = weir_sql(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cells(rows: impl IntoIterator<Item = Vec<String>>) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<String>> = rows.into_iter().collect();
    v.sort();
    v
}

/// COUNT(DISTINCT) and FILTER per item (an updating group aggregation,
/// printed) and per item and half hour (a window aggregation into
/// committed files).
#[test]
fn distinct_and_filtered_counts_per_key_and_per_window_equal_a_reference() {
    let s = Scratch::new("sql-topn", "distinct");
    let bids = write_bids(&s.join("bids"));
    let stdout = run_ok(
        &s,
        "distinct.sql",
        &format!(
            "{}
             CREATE TABLE per_window (item STRING, window_start TIMESTAMP(3), users BIGINT, cheap BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO per_window
             SELECT item, window_start, COUNT(DISTINCT user_id), COUNT(*) FILTER (WHERE price < 50)
             FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '30' MINUTES))
             GROUP BY item, window_start, window_end;
             SELECT item, COUNT(DISTINCT user_id) AS users,
                    COUNT(DISTINCT user_id) FILTER (WHERE price >= 150) AS big_spenders,
                    COUNT(*) FILTER (WHERE price < 50) AS cheap,
                    SUM(DISTINCT price) AS prices
             FROM bids GROUP BY item;",
            bids_table(&s),
            s.join("per_window").display()
        ),
    );
    // per item
    /// Users, users of bids >= 150, bids < 50, prices.
    type Item = (BTreeSet<u64>, BTreeSet<u64>, u64, BTreeSet<u64>);
    let mut per_item: BTreeMap<&str, Item> = BTreeMap::new();
    for b in &bids {
        let e = per_item.entry(b.item).or_default();
        e.0.insert(b.user);
        if b.price >= 150 {
            e.1.insert(b.user);
        }
        e.2 += u64::from(b.price < 50);
        e.3.insert(b.price);
    }
    let want = cells(per_item.iter().map(|(item, (users, big, cheap, prices))| {
        vec![
            item.to_string(),
            users.len().to_string(),
            big.len().to_string(),
            cheap.to_string(),
            prices.iter().sum::<u64>().to_string(),
        ]
    }));
    assert_eq!(printed_tables(&stdout), [want], "{stdout}");
    // per item and window
    let mut per_window: BTreeMap<(&str, i64), (BTreeSet<u64>, u64)> = BTreeMap::new();
    for b in &bids {
        let e = per_window
            .entry((b.item, b.t.div_euclid(1_800_000) * 1_800_000))
            .or_default();
        e.0.insert(b.user);
        e.1 += u64::from(b.price < 50);
    }
    let want: Vec<String> = per_window
        .iter()
        .map(|(&(item, w), (users, cheap))| format!("{item},{},{},{cheap}", ts(w), users.len()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(committed_rows(&s.join("per_window")), want);
}

/// Top-3 bids per user by price (an updating result, printed: ties in
/// price rank by the subquery's other columns, item then time), each
/// user's first bid (deduplication, append-only: committed files), each
/// user's last bid (printed) and the distinct (user, item) pairs of cheap
/// bids (SELECT DISTINCT, printed).
#[test]
fn top_3_per_user_first_and_last_bids_and_distinct_pairs_equal_a_reference() {
    let s = Scratch::new("sql-topn", "rank");
    let bids = write_bids(&s.join("bids"));
    let stdout = run_ok(
        &s,
        "rank.sql",
        &format!(
            "{}
             CREATE TABLE first_bids (user_id BIGINT, item STRING, price BIGINT, ts TIMESTAMP(3))
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO first_bids
             SELECT user_id, item, price, ts FROM (
               SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts ASC) AS rn FROM bids
             ) WHERE rn = 1;
             SELECT * FROM (
               SELECT user_id, price, item, ts,
                      ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY price DESC) AS rn
               FROM bids
             ) WHERE rn <= 3;
             SELECT user_id, item, price FROM (
               SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) AS rn FROM bids
             ) WHERE rn = 1;
             SELECT DISTINCT user_id, item FROM bids WHERE price < 5;",
            bids_table(&s),
            s.join("first_bids").display()
        ),
    );
    let mut per_user: BTreeMap<u64, Vec<&Bid>> = BTreeMap::new();
    for b in &bids {
        per_user.entry(b.user).or_default().push(b);
    }
    // first bids, committed
    let want: Vec<String> = per_user
        .values()
        .map(|v| {
            let b = v.iter().min_by_key(|b| b.t).unwrap();
            format!("{},{},{},{}", b.user, b.item, b.price, ts(b.t))
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(committed_rows(&s.join("first_bids")), want);

    let tables = printed_tables(&stdout);
    assert_eq!(tables.len(), 3, "{stdout}");
    // top 3 by price; ties by item, then time
    let want = cells(per_user.values().flat_map(|v| {
        let mut v = v.clone();
        v.sort_by(|a, b| {
            b.price
                .cmp(&a.price)
                .then(a.item.cmp(b.item))
                .then(a.t.cmp(&b.t))
        });
        v.into_iter().take(3).enumerate().map(|(i, b)| {
            vec![
                b.user.to_string(),
                b.price.to_string(),
                b.item.to_string(),
                ts(b.t),
                (i + 1).to_string(),
            ]
        })
    }));
    assert_eq!(tables[0], want, "top 3");
    // last bids
    let want = cells(per_user.values().map(|v| {
        let b = v.iter().max_by_key(|b| b.t).unwrap();
        vec![b.user.to_string(), b.item.to_string(), b.price.to_string()]
    }));
    assert_eq!(tables[1], want, "last bids");
    // distinct pairs
    let want = cells(
        bids.iter()
            .filter(|b| b.price < 5)
            .map(|b| (b.user, b.item))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|(u, i)| vec![u.to_string(), i.to_string()]),
    );
    assert_eq!(tables[2], want, "distinct pairs");
}

#[test]
fn row_numbers_weir_does_not_run_exit_2_naming_the_problem() {
    let s = Scratch::new("sql-topn", "errors");
    fs::create_dir_all(s.join("bids")).unwrap();
    let sub = |over: &str, bound: &str| {
        format!("SELECT * FROM (SELECT user_id, price, {over} AS rn FROM bids) WHERE {bound};")
    };
    let cases = [
        (
            sub(
                "RANK() OVER (PARTITION BY user_id ORDER BY price)",
                "price > 3",
            ),
            "RANK() OVER without `WHERE rn <= N`",
        ),
        (
            sub(
                "ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY price)",
                "rn <= price",
            ),
            "`rn <= price`: weir bounds the row number",
        ),
        (
            sub(
                "ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY price)",
                "rn > 3",
            ),
            "without `WHERE rn <= N`",
        ),
        (
            sub(
                "ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY price ROWS 2 PRECEDING)",
                "rn <= 3",
            ),
            "a window name or frame",
        ),
        (
            sub(
                "ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY price)",
                "price > 3",
            ),
            "without `WHERE rn <= N`",
        ),
        (
            "SELECT user_id, SUM(price) OVER (PARTITION BY user_id ORDER BY price) FROM bids;"
                .into(),
            "is not a time attribute",
        ),
        (
            "SELECT COUNT(DISTINCT *) FROM bids;".into(),
            "COUNT(DISTINCT *)",
        ),
    ];
    for (i, (sql, want)) in cases.iter().enumerate() {
        let script = s.join(&format!("bad-{i}.sql"));
        fs::write(&script, format!("{}{sql}", bids_table(&s))).unwrap();
        let out = weir_sql(&script);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sql}: {err}");
        assert!(err.contains(want), "{sql}: expected `{want}` in: {err}");
        assert!(err.starts_with("error: "), "{sql}: one error line: {err}");
    }
}

/// ROW_NUMBER() ordered by a PROCTIME() column, `rn = 1`: the first row
/// of each key to arrive (append-only: committed files) and the last
/// (printed), as Flink's processing-time deduplication. One file, so
/// each key's rows arrive in the file's order; most arrive in the same
/// millisecond, where a Top-1 by the column's value (what ran before)
/// kept the row smallest in its other columns instead.
#[test]
fn first_and_last_rows_by_processing_time_are_the_first_and_last_to_arrive() {
    let s = Scratch::new("sql-topn", "proctime-dedup");
    fs::create_dir_all(s.join("rows")).unwrap();
    // Per key, the price falls row by row: the first row has the largest.
    let rows: Vec<(u64, u64)> = (0..3000u64).map(|i| (i % 20, 3000 - i)).collect();
    let text: String = rows.iter().map(|(k, p)| format!("{k},{p}\n")).collect();
    fs::write(s.join("rows").join("rows.csv"), text).unwrap();
    let stdout = run_ok(
        &s,
        "proctime.sql",
        &format!(
            "CREATE TABLE r (k BIGINT, price BIGINT, pt AS PROCTIME())
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE firsts (k BIGINT, price BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO firsts SELECT k, price FROM (
               SELECT k, price, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt) AS rn FROM r
             ) WHERE rn = 1;
             SELECT k, price FROM (
               SELECT k, price, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt DESC) AS rn FROM r
             ) WHERE rn = 1;",
            s.join("rows").display(),
            s.join("firsts").display()
        ),
    );
    let first: BTreeMap<u64, u64> = rows.iter().rev().copied().collect();
    let last: BTreeMap<u64, u64> = rows.iter().copied().collect();
    let want: BTreeSet<String> = first.iter().map(|(k, p)| format!("{k},{p}")).collect();
    assert_eq!(
        committed_rows(&s.join("firsts")),
        want.into_iter().collect::<Vec<_>>()
    );
    let tables = printed_tables(&stdout);
    assert_eq!(tables.len(), 1, "{stdout}");
    let want = cells(last.iter().map(|(k, p)| vec![k.to_string(), p.to_string()]));
    assert_eq!(tables[0], want, "last rows");
}
