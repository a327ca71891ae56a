//! Which columns the analysis finds read, on scripts whose answer is known.

use crate::session::Script;

const BID: &str = "CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  date_time TIMESTAMP(3), extra STRING,
  WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'nexmark.table.type' = 'bid', 'events.num' = '1000');
CREATE TABLE out3 (a BIGINT, b BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
";

/// The names of the bid columns `script` (after the DDL above) reads.
fn read(script: &str) -> Vec<&'static str> {
    let names = weir_nexmark::EventKind::Bid.columns();
    let s = Script::parse(&format!("{BID}{script}")).unwrap_or_else(|e| panic!("{e}"));
    let read = s.read_columns();
    let flags = read.of_table("bid").expect("bid is scanned");
    names
        .iter()
        .zip(flags)
        .filter(|(_, &r)| r)
        .map(|(n, _)| *n)
        .collect()
}

#[test]
fn a_window_count_reads_its_key_and_time_only() {
    let q = "INSERT INTO out3 SELECT auction, COUNT(*), 0 FROM TABLE(HOP(TABLE bid, \
             DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) \
             GROUP BY auction, window_start, window_end;";
    assert_eq!(read(q), ["auction", "date_time"]);
}

#[test]
fn projections_filters_and_aggregate_arguments_are_read() {
    let q = "INSERT INTO out3 SELECT bidder, SUM(price), COUNT(*) FILTER (WHERE url LIKE '%x%') \
             FROM bid WHERE channel <> 'Apple' GROUP BY bidder;";
    assert_eq!(
        read(q),
        ["bidder", "price", "channel", "url", "date_time"],
        "the watermark's column is always read"
    );
}

#[test]
fn a_star_or_a_join_reads_everything() {
    let all = weir_nexmark::EventKind::Bid.columns();
    let star = "CREATE TABLE o7 (a BIGINT, b BIGINT, c BIGINT, d STRING, e STRING, \
                f TIMESTAMP(3), g STRING) WITH ('connector' = 'blackhole');
                INSERT INTO o7 SELECT * FROM bid;";
    assert_eq!(read(star), all);
    // A regular join keeps whole rows: every column of both sides.
    let join = "INSERT INTO out3 SELECT b1.auction, b2.price, 0 FROM bid b1 \
                JOIN bid b2 ON b1.auction = b2.bidder;";
    assert_eq!(read(join), all);
}

#[test]
fn two_queries_over_one_table_read_the_union() {
    let q = "INSERT INTO out3 SELECT auction, 0, 0 FROM bid;
             INSERT INTO out3 SELECT price, 0, 0 FROM bid WHERE CHAR_LENGTH(extra) > 3;";
    assert_eq!(read(q), ["auction", "price", "date_time", "extra"]);
}

#[test]
fn a_computed_column_reads_what_it_is_computed_from() {
    let ddl = "CREATE TABLE g (a BIGINT, b BIGINT, c STRING, d AS a + 1) \
               WITH ('connector' = 'datagen', 'number-of-rows' = '10');
               CREATE TABLE o1 (x BIGINT) WITH ('connector' = 'blackhole');";
    let read_of = |q: &str| {
        let s = Script::parse(&format!("{ddl}{q}")).unwrap_or_else(|e| panic!("{e}"));
        s.read_columns().of_table("g").expect("g").to_vec()
    };
    assert_eq!(
        read_of("INSERT INTO o1 SELECT d FROM g;"),
        [true, false, false]
    );
    assert_eq!(
        read_of("INSERT INTO o1 SELECT b FROM g;"),
        [false, true, false]
    );
}

#[test]
fn pruned_nexmark_columns_leave_the_query_result_as_it_was() {
    use weir_runtime::testing::{run_ok, test_options};
    // The same SELECT with the job's own pruning and over a table that
    // reads every column (a view selecting all of them keeps them).
    let q = "SELECT auction, COUNT(*) AS n, MAX(price) AS p, window_start FROM TABLE(TUMBLE(TABLE {t}, \
             DESCRIPTOR(date_time), INTERVAL '1' SECOND)) GROUP BY auction, window_start, window_end";
    let rows = |t: &str, all: bool| {
        let keep_all = if all {
            "INSERT INTO o7 SELECT * FROM bid;"
        } else {
            ""
        };
        let text = format!(
            "{BID}CREATE TABLE o7 (a BIGINT, b BIGINT, c BIGINT, d STRING, e STRING, \
             f TIMESTAMP(3), g STRING) WITH ('connector' = 'blackhole');{keep_all}{};",
            q.replace("{t}", t)
        );
        let s = Script::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let read = s.read_columns().of_table("bid").expect("bid").to_vec();
        let job = s.job("prune").expect("the job");
        run_ok(job.job, &test_options(2));
        let mut got: Vec<String> = job.selects[0]
            .1
            .rows()
            .iter()
            .map(|r| format!("{:?}", r.values))
            .collect();
        got.sort();
        (read, got)
    };
    let (pruned_read, pruned) = rows("bid", false);
    let (all_read, all) = rows("bid", true);
    assert_eq!(
        pruned_read,
        [true, false, true, false, false, true, false],
        "auction, price, date_time"
    );
    assert!(all_read.iter().all(|&r| r));
    assert!(!pruned.is_empty());
    assert_eq!(pruned, all);
}

#[test]
fn explain_names_the_columns_a_nexmark_scan_makes() {
    let s = Script::parse(&format!(
        "{BID}SELECT auction, COUNT(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), \
         INTERVAL '1' SECOND)) GROUP BY auction, window_start, window_end"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let text = crate::session::explain(&s.planned_selects()[0], None);
    assert!(
        text.contains("Source: bid [nexmark]") && text.contains("project=[auction, date_time]"),
        "{text}"
    );
}

#[test]
fn pruned_datagen_columns_leave_the_query_result_as_it_was() {
    use weir_runtime::testing::{run_ok, test_options};
    let ddl = "CREATE TABLE g (id BIGINT, k INT, name STRING, score DOUBLE) WITH (
                 'connector' = 'datagen', 'number-of-rows' = '3000',
                 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000',
                 'fields.k.min' = '0', 'fields.k.max' = '9', 'fields.name.length' = '12',
                 'fields.score.min' = '0', 'fields.score.max' = '1');
               CREATE TABLE o4 (a BIGINT, b INT, c STRING, d DOUBLE) WITH ('connector' = 'blackhole');";
    let q = "SELECT k, COUNT(*) AS n, SUM(id) AS s FROM g GROUP BY k";
    let rows = |all: bool| {
        let keep_all = if all {
            "INSERT INTO o4 SELECT * FROM g;"
        } else {
            ""
        };
        let s = Script::parse(&format!("{ddl}{keep_all}{q};")).unwrap_or_else(|e| panic!("{e}"));
        let read = s.read_columns().of_table("g").expect("g").to_vec();
        let text = crate::session::explain(&s.planned_selects()[0], None);
        let job = s.job("prune").expect("the job");
        run_ok(job.job, &test_options(2));
        let mut table = std::collections::BTreeMap::new();
        for r in job.selects[0].1.rows().iter() {
            match r.kind {
                crate::value::RowKind::Insert | crate::value::RowKind::UpdateAfter => {
                    table.insert(format!("{:?}", r.values[0]), format!("{:?}", r.values));
                }
                _ => {}
            }
        }
        (read, text, table)
    };
    let (pruned_read, text, pruned) = rows(false);
    let (all_read, _, all) = rows(true);
    assert_eq!(pruned_read, [true, true, false, false]);
    assert!(text.contains("project=[id, k]"), "{text}");
    assert!(all_read.iter().all(|&r| r));
    assert_eq!(pruned.len(), 10);
    assert_eq!(pruned, all);
}
