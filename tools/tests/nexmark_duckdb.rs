//! The Nexmark queries that `weir bench nexmark` has no reference for
//! (q4, q5, q9, q11, q18, q19) checked against DuckDB end to end: the
//! stream of `weir nexmark generate` (20,000 events, 2 ms of event time
//! apart: 40 s) as CSV, each query's own SQL from `bench/nexmark` run by
//! the real `weir sql` binary (two workers) over `filesystem` tables
//! declared as `bench/nexmark/ddl.sql` declares its `nexmark` ones, its
//! sink made a `print` sink whose changelog is folded into the final
//! table, and that table compared with what DuckDB computes as Flink's
//! final result over the same files (as `sql_duckdb.rs` compares: sorted
//! rows of text). Each query also runs over the `nexmark` connector's
//! tables as `weir bench nexmark` runs it (ddl.sql itself, generating the
//! same stream: two source subtasks making every other event each, their
//! rows interleaving in any order), and must give the same table.
//!
//! q12 is left out: its windows are of processing time (`PROCTIME()`), so
//! which bids share a window depends on how fast the run reads them, and no
//! other engine can compute its result.
//!
//! The generated stream is in event-time order (event `n` happens at
//! `base + n / rate`), and every source subtask emits its rows in that
//! order: each table is one file, which one subtask reads front to back
//! (a file is split only past 64 MiB), and each `nexmark` subtask makes
//! its events in order. A row is thus never behind its own subtask's
//! watermark, let alone the least of all subtasks' that the operators
//! go by, so none is late; at the end of the input the final watermark
//! fires every window. The DuckDB queries therefore drop nothing. At 500
//! events per second no two events share a millisecond, so the time
//! orders of q9 and q18 have no ties; the price order of q19 has some,
//! handled as [`Query::ties`] says.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use support::duckdb::{duckdb, duckdb_python, same_rows, weir_sql, ResultSet};
use support::{repo, Scratch, WEIR};

/// Events generated: persons, auctions and bids, 1/3/46 in 50.
const EVENTS: u64 = 20_000;
/// Events per second of event time: 40 s in all, enough for q5's 10 s
/// windows sliding by 2 s to fire twenty times and q11's bidders to have
/// several 10 s sessions each.
const RATE: u64 = 500;

/// The queries `weir bench nexmark` verifies against a reference of its
/// own (`tools/src/nexmark_bench.rs`).
const VERIFIED_BY_BENCH: &[&str] = &[
    "q0", "q1", "q2", "q3", "q7", "q8", "q10", "q15", "q16", "q17", "q20", "q21", "q22",
];
/// The queries no other engine can check (see the module doc).
const NOT_CHECKABLE: &[&str] = &["q12"];

/// Rows of a Top-N that equal others on the ORDER BY columns: Flink
/// numbers them by arrival and weir by their other columns (the
/// `weir_sql::rank` module doc), and `ROW_NUMBER()` itself leaves their
/// order open. So the row number of such a row is compared as the lowest
/// of its group's (its `RANK()`), on both sides, once each side's numbers
/// are checked to be `1..=n` per partition, each once. Which rows are in
/// the result at all differs only when a group straddles the limit:
/// `straddling`, a DuckDB query, must find no such group in the data.
struct Ties {
    /// The PARTITION BY columns of the result.
    partition: &'static [usize],
    /// The ORDER BY columns of the result.
    order: &'static [usize],
    /// The row number's column.
    rank: usize,
    /// Rows of the groups of equal rows that are cut by the limit.
    straddling: &'static str,
}

/// One Nexmark query: its file in `bench/nexmark` and Flink's final result
/// in DuckDB's SQL.
struct Query {
    name: &'static str,
    duckdb: &'static str,
    ties: Option<Ties>,
}

const QUERIES: &[Query] = &[
    Query {
        name: "q4",
        // AVG of a BIGINT is a BIGINT in Flink, the sum divided by the count
        // and truncated; prices are positive, so DuckDB's `//` (flooring)
        // divides alike.
        duckdb: "WITH winning_bids AS (
                   SELECT MAX(B.price) AS final, A.category
                   FROM auction A, bid B
                   WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
                   GROUP BY A.id, A.category)
                 SELECT category, SUM(final) // COUNT(final) FROM winning_bids GROUP BY category",
        ties: None,
    },
    Query {
        name: "q5",
        // A bid is in the five 10 s windows that start at its 2 s slot and
        // the four slots before (windows aligned to the epoch, as Flink's).
        duckdb: "WITH windowed AS (
                   SELECT auction,
                          epoch_ms(epoch_ms(date_time) // 2000 * 2000) - k * INTERVAL 2 SECOND
                            AS starttime
                   FROM bid, range(5) AS r(k)),
                 counts AS (
                   SELECT auction, starttime, COUNT(*) AS num FROM windowed GROUP BY ALL),
                 maxes AS (
                   SELECT starttime, MAX(num) AS maxn FROM counts GROUP BY starttime)
                 SELECT auction, num FROM counts JOIN maxes USING (starttime)
                 WHERE num >= maxn",
        ties: None,
    },
    Query {
        name: "q9",
        duckdb: "SELECT id, item_name, description, initial_bid, reserve, date_time, expires,
                        seller, category, extra, auction, bidder, price, bid_date_time, bid_extra
                 FROM (
                   SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
                          B.extra AS bid_extra,
                          ROW_NUMBER() OVER (PARTITION BY A.id
                                             ORDER BY B.price DESC, B.date_time ASC) AS rownum
                   FROM auction A, bid B
                   WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires)
                 WHERE rownum <= 1",
        ties: None,
    },
    Query {
        name: "q11",
        // Gaps and islands: a bid starts a new session of its bidder when
        // the bidder's previous bid is more than 10 s before it (Flink's
        // session windows `[t, t + gap)` merge when they touch:
        // `TimeWindow.intersects` is inclusive); a session ends 10 s after
        // its last bid.
        duckdb: "WITH starts AS (
                   SELECT *, CASE WHEN date_time - lag(date_time) OVER w <= INTERVAL 10 SECOND
                                  THEN 0 ELSE 1 END AS new_session
                   FROM bid WINDOW w AS (PARTITION BY bidder ORDER BY date_time)),
                 sessions AS (
                   SELECT *, SUM(new_session) OVER (PARTITION BY bidder ORDER BY date_time
                                                    ROWS UNBOUNDED PRECEDING) AS session
                   FROM starts)
                 SELECT bidder, COUNT(*), MIN(date_time), MAX(date_time) + INTERVAL 10 SECOND
                 FROM sessions GROUP BY bidder, session",
        ties: None,
    },
    Query {
        name: "q18",
        duckdb: "SELECT auction, bidder, price, channel, url, date_time, extra
                 FROM (
                   SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction
                                                ORDER BY date_time DESC) AS rank_number
                   FROM bid)
                 WHERE rank_number <= 1",
        ties: None,
    },
    Query {
        name: "q19",
        // Which of equal prices comes first is left to `Ties`.
        duckdb: "SELECT * FROM (
                   SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC)
                     AS rank_number
                   FROM bid)
                 WHERE rank_number <= 10",
        ties: Some(Ties {
            partition: &[0],
            order: &[2],
            rank: 7,
            straddling: "SELECT auction, price FROM (
                           SELECT auction, price,
                                  RANK() OVER w AS r, ROW_NUMBER() OVER w AS n
                           FROM bid WINDOW w AS (PARTITION BY auction ORDER BY price DESC))
                         GROUP BY auction, price
                         HAVING MIN(r) <= 10 AND MAX(n) > 10",
        }),
    },
];

/// Writes the generated stream's three tables under `dir`.
fn generate(s: &Scratch, dir: &Path) {
    let out = Command::new(WEIR)
        .args(["nexmark", "generate", "--events", &EVENTS.to_string()])
        .args(["--rate", &RATE.to_string(), "--out"])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run weir nexmark generate");
    assert!(
        out.status.success(),
        "weir nexmark generate failed in {}: {}",
        s.0.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `bench/nexmark/ddl.sql` with each table's `nexmark` connector replaced
/// by a `filesystem` one over its CSV under `dir`: the same columns,
/// types and watermarks.
fn weir_tables(dir: &Path) -> String {
    let mut ddl = fs::read_to_string(repo().join("bench/nexmark/ddl.sql")).unwrap();
    for table in ["person", "auction", "bid"] {
        let nexmark = format!(
            "'connector' = 'nexmark', 'nexmark.table.type' = '{table}', \
             'events.num' = '${{EVENTS}}'"
        );
        assert_eq!(
            ddl.matches(&nexmark).count(),
            1,
            "ddl.sql declares table {table} otherwise than this test expects"
        );
        let csv = format!(
            "'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'",
            dir.join(table).display()
        );
        ddl = ddl.replace(&nexmark, &csv);
    }
    ddl
}

/// `bench/nexmark/ddl.sql` as `weir bench nexmark` runs it, the `nexmark`
/// connector making the stream `weir nexmark generate` wrote.
fn generated_tables() -> String {
    let ddl = fs::read_to_string(repo().join("bench/nexmark/ddl.sql")).unwrap();
    let events = "'events.num' = '${EVENTS}'";
    assert_eq!(
        ddl.matches(events).count(),
        3,
        "ddl.sql declares its tables otherwise than this test expects"
    );
    ddl.replace(
        events,
        &format!("'events.num' = '{EVENTS}', 'first-event.rate' = '{RATE}'"),
    )
}

/// The same tables in DuckDB, typed as in ddl.sql, the columns in the
/// CSV's order (`weir_nexmark::csv`).
fn duckdb_tables(dir: &Path) -> String {
    let read = |table: &str, cols: &str| {
        format!(
            "CREATE VIEW {table} AS SELECT * FROM read_csv('{}/*.csv', header = false, \
             auto_detect = false, delim = ',', quote = '', columns = {{{cols}}});\n",
            dir.join(table).display()
        )
    };
    [
        read(
            "person",
            "'id': 'BIGINT', 'name': 'VARCHAR', 'email_address': 'VARCHAR', \
             'credit_card': 'VARCHAR', 'city': 'VARCHAR', 'state': 'VARCHAR', \
             'date_time': 'TIMESTAMP', 'extra': 'VARCHAR'",
        ),
        read(
            "auction",
            "'id': 'BIGINT', 'item_name': 'VARCHAR', 'description': 'VARCHAR', \
             'initial_bid': 'BIGINT', 'reserve': 'BIGINT', 'date_time': 'TIMESTAMP', \
             'expires': 'TIMESTAMP', 'seller': 'BIGINT', 'category': 'BIGINT', \
             'extra': 'VARCHAR'",
        ),
        read(
            "bid",
            "'auction': 'BIGINT', 'bidder': 'BIGINT', 'price': 'BIGINT', \
             'channel': 'VARCHAR', 'url': 'VARCHAR', 'date_time': 'TIMESTAMP', \
             'extra': 'VARCHAR'",
        ),
    ]
    .concat()
}

/// The final table of a `print` sink's changelog (`+I[a, b]`, `-U[..]`,
/// `+U[..]`, `-D[..]`, each maybe after a subtask's `N> `): inserts and
/// update-afters add their row, update-befores and deletes take one of
/// their row away, which must be there. Each row has `columns` fields
/// (the generated strings hold no `, `).
fn fold_changelog(name: &str, stdout: &str, columns: usize) -> Vec<Vec<String>> {
    let mut table: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for line in stdout.lines() {
        let change = match line.split_once("> ") {
            Some((subtask, rest)) if subtask.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => line,
        };
        let (kind, fields) = change
            .split_at_checked(2)
            .and_then(|(kind, rest)| Some((kind, rest.strip_prefix('[')?.strip_suffix(']')?)))
            .unwrap_or_else(|| panic!("{name}: not a change: `{line}`"));
        let row: Vec<String> = fields.split(", ").map(str::to_owned).collect();
        assert_eq!(
            row.len(),
            columns,
            "{name}: `{line}` has not {columns} fields"
        );
        match kind {
            "+I" | "+U" => *table.entry(row).or_default() += 1,
            "-U" | "-D" => match table.get_mut(&row) {
                Some(n) if *n > 1 => *n -= 1,
                Some(_) => {
                    table.remove(&row);
                }
                None => panic!("{name}: `{line}` retracts a row that is not there"),
            },
            _ => panic!("{name}: unknown change `{line}`"),
        }
    }
    table
        .into_iter()
        .flat_map(|(row, n)| std::iter::repeat_n(row, n as usize))
        .collect()
}

/// `rows` with each row number of a group of rows equal on `ties`'s
/// partition and order columns replaced by the group's lowest, once the
/// numbers of each partition are checked to be `1..=n`, each once.
fn rank_ties_alike(
    name: &str,
    side: &str,
    ties: &Ties,
    mut rows: Vec<Vec<String>>,
) -> Vec<Vec<String>> {
    let cols = |row: &[String], cols: &[usize]| -> Vec<String> {
        cols.iter().map(|&c| row[c].clone()).collect()
    };
    let number = |row: &[String]| -> u64 {
        row[ties.rank]
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {side}'s row number in {row:?}"))
    };
    let mut numbers: BTreeMap<Vec<String>, Vec<u64>> = BTreeMap::new();
    let mut lowest: BTreeMap<(Vec<String>, Vec<String>), u64> = BTreeMap::new();
    for row in &rows {
        let (p, n) = (cols(row, ties.partition), number(row));
        numbers.entry(p.clone()).or_default().push(n);
        let low = lowest.entry((p, cols(row, ties.order))).or_insert(n);
        *low = (*low).min(n);
    }
    for (p, mut n) in numbers {
        n.sort_unstable();
        assert!(
            n.iter().copied().eq(1..=n.len() as u64),
            "{name}: {side}'s row numbers of partition {p:?} are {n:?}"
        );
    }
    for row in &mut rows {
        let key = (cols(row, ties.partition), cols(row, ties.order));
        row[ties.rank] = lowest[&key].to_string();
    }
    rows
}

/// Runs query `name` in DuckDB over a freshly generated stream, and in
/// weir over its files and over the `nexmark` connector's tables, and
/// compares the final tables.
fn check(name: &str) {
    let q = QUERIES
        .iter()
        .find(|q| q.name == name)
        .expect("a query of QUERIES");
    duckdb_python(); // one clear failure if DuckDB is missing
    let s = Scratch::new("nexmark-duckdb", name);
    let data = s.join("data");
    generate(&s, &data);
    let sql = fs::read_to_string(repo().join(format!("bench/nexmark/{name}.sql"))).unwrap();
    let blackhole = "'connector' = 'blackhole'";
    assert_eq!(
        sql.matches(blackhole).count(),
        1,
        "{name}.sql: not one blackhole sink"
    );
    let sql = sql.replace(blackhole, "'connector' = 'print'");
    let tables = duckdb_tables(&data);
    let duck = duckdb(&s, name, &tables, q.duckdb);
    assert!(
        !duck.rows.is_empty(),
        "{name}: DuckDB's result is empty: the query checks nothing"
    );
    let mut duck_rows = duck.rows;
    if let Some(ties) = &q.ties {
        let cut = duckdb(&s, &format!("{name}-straddling"), &tables, ties.straddling);
        assert!(
            cut.rows.is_empty(),
            "{name}: equal rows straddle the Top-N's limit ({:?}), so which are in the \
             result is open: pick a stream without",
            cut.rows
        );
        duck_rows = rank_ties_alike(name, "DuckDB", ties, duck_rows);
    }
    for (source, tables) in [
        ("files", weir_tables(&data)),
        ("nexmark", generated_tables()),
    ] {
        let run = format!("{name}-{source}");
        let script = s.join(&format!("{run}.sql"));
        fs::write(&script, format!("{tables}\n{sql}")).unwrap();
        let out = weir_sql(&script, &[]);
        assert!(
            out.status.success(),
            "{run}: weir failed on\n{sql}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut weir = fold_changelog(
            &run,
            &String::from_utf8_lossy(&out.stdout),
            duck.types.len(),
        );
        if let Some(ties) = &q.ties {
            weir = rank_ties_alike(&run, "weir", ties, weir);
        }
        same_rows(
            &run,
            weir,
            ResultSet {
                types: duck.types.clone(),
                rows: duck_rows.clone(),
            },
            &format!("weir:\n{sql}\nDuckDB:\n{}", q.duckdb),
        );
    }
}

#[test]
fn q4_average_price_per_category_equals_duckdb() {
    check("q4");
}

#[test]
fn q5_hot_items_equal_duckdb() {
    check("q5");
}

#[test]
fn q9_winning_bids_equal_duckdb() {
    check("q9");
}

#[test]
fn q11_user_sessions_equal_duckdb() {
    check("q11");
}

#[test]
fn q18_last_bids_equal_duckdb() {
    check("q18");
}

#[test]
fn q19_top_10_bids_equal_duckdb() {
    check("q19");
}

/// Every query in `bench/nexmark` is checked somewhere: by the bench's
/// reference, here, or named as not checkable; a query added to the
/// directory must be added to one of them.
#[test]
fn every_nexmark_query_is_checked() {
    let mut files: Vec<String> = fs::read_dir(repo().join("bench/nexmark"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let q = name.strip_suffix(".sql")?;
            q.starts_with('q').then(|| q.to_owned())
        })
        .collect();
    files.sort();
    let mut listed: Vec<String> = VERIFIED_BY_BENCH
        .iter()
        .chain(NOT_CHECKABLE)
        .copied()
        .chain(QUERIES.iter().map(|q| q.name))
        .map(str::to_owned)
        .collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "bench/nexmark's queries against those this test knows"
    );
}
