//! Planning of DISTINCT and FILTER aggregates, Top-N, deduplication,
//! SELECT DISTINCT and window properties (cascaded window aggregations,
//! window joins on renamed bounds): the operators chosen (as EXPLAIN shows
//! them), the output's columns and changelog kind, and the errors for what
//! weir does not run.

use crate::session::Script;
use crate::types::DataType;

const DDL: &str = "
CREATE TABLE t (a BIGINT, b STRING, c INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE TABLE files (a BIGINT, b STRING, c INT, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '/nonexistent/weir-plan-tests', 'format' = 'csv');
CREATE TABLE changes (a BIGINT, b STRING, c INT, ts TIMESTAMP(3))
WITH ('connector' = 'print');
CREATE TABLE wide (a BIGINT, d DECIMAL(12, 2), x DOUBLE)
WITH ('connector' = 'blackhole');
";

fn explain(q: &str) -> String {
    let s = Script::parse(&format!("{DDL} EXPLAIN {q};")).unwrap_or_else(|e| panic!("{q}: {e}"));
    s.explained[0].clone()
}

fn error(sql: &str) -> String {
    match Script::parse(&format!("{DDL} {sql};")) {
        Ok(_) => panic!("{sql}: planned, an error was expected"),
        Err(e) => e.to_string(),
    }
}

fn planned(sql: &str) {
    if let Err(e) = Script::parse(&format!("{DDL} {sql};")) {
        panic!("{sql}: {e}");
    }
}

/// The first line of the plan holding `what`.
fn line<'a>(plan: &'a str, what: &str) -> &'a str {
    plan.lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no `{what}` in\n{plan}"))
}

#[test]
fn distinct_and_filtered_aggregates_share_their_input_columns() {
    let plan = explain(
        "SELECT a, COUNT(DISTINCT b), COUNT(DISTINCT b) FILTER (WHERE c > 1),
                COUNT(*) FILTER (WHERE c > 1), SUM(DISTINCT c)
         FROM t GROUP BY a",
    );
    let agg = line(&plan, "GroupAggregate");
    assert!(
        agg.contains("COUNT(DISTINCT b) FILTER (WHERE c > 1)"),
        "{agg}"
    );
    assert!(agg.contains("SUM(DISTINCT c)"), "{agg}");
    // keys, b, the filter, c: four columns into the aggregation
    let pre = line(&plan, "Calc(");
    assert_eq!(pre.matches(", ").count(), 3, "{pre}");
    assert!(
        plan.contains("group-accumulators"),
        "the physical plan names the state: {plan}"
    );
}

#[test]
fn window_aggregates_take_distinct_and_filter() {
    let plan = explain(
        "SELECT a, window_start, COUNT(DISTINCT b) AS users,
                COUNT(*) FILTER (WHERE c < 10) AS cheap
         FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
         GROUP BY a, window_start, window_end",
    );
    assert!(
        line(&plan, "WindowAggregate").contains("COUNT(DISTINCT b)"),
        "{plan}"
    );
    // a window aggregation stays append-only: a file sink takes it
    planned(
        "INSERT INTO files SELECT a, MAX(b), CAST(COUNT(DISTINCT b) AS INT), window_start
         FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
         GROUP BY a, window_start, window_end",
    );
}

#[test]
fn bad_distinct_and_filter_calls_are_errors() {
    assert!(error("SELECT COUNT(DISTINCT *) FROM t").contains("COUNT(DISTINCT *)"));
    assert!(error("SELECT COUNT(DISTINCT a, b) FROM t").contains("several columns"));
    let e = error("SELECT COUNT(*) FILTER (WHERE c) FROM t");
    assert!(e.contains("FILTER (WHERE ..) needs a BOOLEAN"), "{e}");
    let e = error("SELECT SUM(DISTINCT b) FROM t");
    assert!(e.contains("needs a number"), "{e}");
}

#[test]
fn row_number_bounded_by_n_is_a_top_n() {
    let plan = explain(
        "SELECT * FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c DESC) AS rn FROM t
         ) WHERE rn <= 3",
    );
    let rank = line(&plan, "Rank(");
    assert!(
        rank.contains("rankRange=[rankStart=1, rankEnd=3], partitionBy=[a], orderBy=[c DESC]"),
        "{rank}"
    );
    assert!(rank.contains("outputRankNumber=[true]"), "{rank}");
    assert!(rank.contains("changelog=[I,UB,UA,D]"), "{rank}");
    assert!(plan.contains("Exchange: HASH[a]"), "{plan}");

    // the row number not selected: not computed; `rn < 4` is `rn <= 3`
    let plan = explain(
        "SELECT a, b FROM (
           SELECT a, b, c, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c, b DESC NULLS FIRST) AS rn FROM t
         ) WHERE rn < 4",
    );
    let rank = line(&plan, "Rank(");
    assert!(rank.contains("rankEnd=3"), "{rank}");
    assert!(
        rank.contains("orderBy=[c ASC, b DESC NULLS FIRST]"),
        "{rank}"
    );
    assert!(rank.contains("outputRankNumber=[false]"), "{rank}");
}

#[test]
fn top_n_output_keeps_the_subquery_columns_in_order() {
    let s = Script::parse(&format!(
        "{DDL}
         CREATE VIEW ranked AS
           SELECT b, ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC) AS pos, c FROM t;
         SELECT * FROM ranked WHERE 2 >= pos AND c > 0;"
    ))
    .unwrap();
    let plan = &s.planned_selects()[0];
    let cols: Vec<(&str, DataType)> = plan
        .schema
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.ty))
        .collect();
    assert_eq!(
        cols,
        [
            ("b", DataType::String),
            ("pos", DataType::BigInt),
            ("c", DataType::Int)
        ]
    );
    assert!(plan.updating);
    let text = plan.explain();
    assert!(
        text.contains("partitionBy=[a], orderBy=[ts DESC]"),
        "{text}"
    );
    assert!(
        text.contains("where=[..]"),
        "the rest of WHERE stays: {text}"
    );
}

#[test]
fn row_number_one_by_time_is_a_deduplication() {
    let first = "SELECT a, b, c, ts FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY ts ASC) AS rn FROM t
         ) WHERE rn = 1";
    let plan = explain(first);
    assert!(
        line(&plan, "Deduplicate(").contains("keep=[FirstRow], key=[a, b], order=[ROWTIME ts]"),
        "{plan}"
    );
    assert!(plan.contains("append-only"), "{plan}");
    // keeping the first row is append-only: a file sink takes it
    planned(&format!("INSERT INTO files {first}"));

    let last = "SELECT a, b, c, ts FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC) AS rn FROM t
         ) WHERE rn <= 1";
    let plan = explain(last);
    assert!(
        line(&plan, "Deduplicate(").contains("keep=[LastRow]"),
        "{plan}"
    );
    assert!(
        error(&format!("INSERT INTO files {last}")).contains("append-only"),
        "keeping the last row updates"
    );
    planned(&format!("INSERT INTO changes {last}"));

    // ordered by a column that is no time attribute: a Top-1
    let plan = explain(
        "SELECT a FROM (SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c) AS rn FROM t) WHERE rn = 1",
    );
    assert!(line(&plan, "Rank(").contains("rankEnd=1"), "{plan}");
}

/// Ordered by a processing-time attribute, `rn = 1` is Flink's
/// processing-time deduplication: the first row to arrive (append-only,
/// so a file sink takes it) or the last. It was a Top-1 by the column's
/// value, its ties (rows of one millisecond) broken by the other columns,
/// and keeping the first row was refused by the file sink as updating.
#[test]
fn row_number_one_by_processing_time_is_a_deduplication() {
    let first = "SELECT a, b, c, ts FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY pt) AS rn
           FROM (SELECT *, PROCTIME() AS pt FROM t)
         ) WHERE rn = 1";
    let plan = explain(first);
    assert!(
        line(&plan, "Deduplicate(").contains("keep=[FirstRow], key=[a], order=[PROCTIME]"),
        "{plan}"
    );
    assert!(plan.contains("append-only"), "{plan}");
    planned(&format!("INSERT INTO files {first}"));
    let last = first.replace("ORDER BY pt", "ORDER BY pt DESC");
    let plan = explain(&last);
    assert!(
        line(&plan, "Deduplicate(").contains("keep=[LastRow], key=[a], order=[PROCTIME]"),
        "{plan}"
    );
    assert!(
        error(&format!("INSERT INTO files {last}")).contains("append-only"),
        "keeping the last row updates"
    );
}

#[test]
fn rank_and_dense_rank_bounded_are_a_top_n_of_ranks() {
    let plan = explain(
        "SELECT * FROM (
           SELECT a, c, RANK() OVER (PARTITION BY a ORDER BY c DESC) AS rk FROM t
         ) WHERE rk <= 3",
    );
    assert!(
        line(&plan, "Rank(").contains("rankType=[RANK], rankRange=[rankStart=1, rankEnd=3]"),
        "{plan}"
    );
    let plan = explain(
        "SELECT a FROM (
           SELECT a, c, DENSE_RANK() OVER (ORDER BY c) AS rk FROM t
         ) WHERE rk BETWEEN 2 AND 3",
    );
    assert!(
        line(&plan, "Rank(").contains("rankType=[DENSE_RANK], rankRange=[rankStart=2, rankEnd=3]"),
        "{plan}"
    );
}

#[test]
fn unsupported_row_numbers_are_named() {
    let sub = |over: &str, bound: &str| {
        format!("SELECT * FROM (SELECT a, c, {over} AS rn FROM t) WHERE {bound}")
    };
    let row_number = "ROW_NUMBER() OVER (PARTITION BY a ORDER BY c)";
    let cases = [
        (
            sub("RANK() OVER (PARTITION BY a ORDER BY c)", "c > 1"),
            "RANK() OVER without `WHERE rn <= N`",
        ),
        (
            "SELECT a, DENSE_RANK() OVER (PARTITION BY a ORDER BY c) FROM t".into(),
            "`DENSE_RANK() OVER` here",
        ),
        (
            sub("SUM(c) OVER (PARTITION BY a ORDER BY c)", "rn <= 3"),
            "`c` is not a time attribute",
        ),
        (sub(row_number, "c > 1"), "without `WHERE rn <= N`"),
        (
            "SELECT * FROM (SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c) AS rn FROM t)"
                .into(),
            "without `WHERE rn <= N`",
        ),
        (sub(row_number, "rn > 2"), "without `WHERE rn <= N`"),
        (sub(row_number, "rn <= 3 OR c > 1"), "weir bounds the row number"),
        (sub(row_number, "rn <= c"), "weir bounds the row number"),
        (sub(row_number, "rn < 1"), "keeps no row"),
        (sub(row_number, "rn > 3 AND rn <= 3"), "keeps no row"),
        (
            sub("ROW_NUMBER() OVER (PARTITION BY a)", "rn <= 3"),
            "needs an ORDER BY",
        ),
        (
            "SELECT * FROM (SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c) FROM t)"
                .into(),
            "needs a name",
        ),
        (
            "SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c) + 1 FROM t".into(),
            "ROW_NUMBER() OVER` here",
        ),
        (
            sub("ROW_NUMBER() OVER (PARTITION BY a ORDER BY c ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)", "rn <= 3"),
            "frame",
        ),
        (
            sub("ROW_NUMBER() OVER (PARTITION BY nope ORDER BY c)", "rn <= 3"),
            "unknown column `nope`",
        ),
    ];
    for (sql, want) in cases {
        let e = error(&sql);
        assert!(e.contains(want), "{sql}: expected `{want}` in: {e}");
    }
}

#[test]
fn select_distinct_is_a_group_aggregation_without_aggregates() {
    let plan = explain("SELECT DISTINCT a, c % 2 AS odd FROM t");
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[a, odd], select=[]"),
        "{plan}"
    );
    assert!(error("INSERT INTO files SELECT DISTINCT a, b, c, ts FROM t").contains("append-only"));
    assert!(error("SELECT DISTINCT ON (a) a, b FROM t").contains("DISTINCT ON"));
    // SELECT ALL is every row
    assert!(!explain("SELECT ALL a FROM t").contains("GroupAggregate"));
}

#[test]
fn a_top_n_ranks_a_window_aggregation_s_rows() {
    // append-only rows of windows, ranked per window (the rank's state is
    // not cleaned up when a window is done, unlike Flink's window Top-N)
    let plan = explain(
        "SELECT * FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY n DESC) AS rn
           FROM (SELECT a, window_start, window_end, COUNT(*) AS n
                 FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
                 GROUP BY a, window_start, window_end)
         ) WHERE rn <= 3",
    );
    assert!(
        line(&plan, "Rank(").contains("partitionBy=[window_start, window_end], orderBy=[n DESC]"),
        "{plan}"
    );
    assert!(plan.contains("WindowAggregate"), "{plan}");
    let e = error(
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c) AS rn,
                               ROW_NUMBER() OVER (ORDER BY c) AS r2 FROM t) WHERE rn <= 3",
    );
    assert!(e.contains("several OVER functions"), "{e}");
}

#[test]
fn a_qualified_wildcard_selects_its_table_s_columns() {
    let s = Script::parse(&format!("{DDL} SELECT x.*, x.a + 1 AS b1 FROM t AS x;")).unwrap();
    let names: Vec<&str> = s.planned_selects()[0]
        .schema
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "c", "ts", "b1"]);
    assert!(error("SELECT y.* FROM t AS x").contains("unknown table `y`"));
}

/// A subquery's aggregate is the subquery's own: a scalar subquery in
/// SELECT is a LEFT JOIN of its one row, not an aggregate of the query
/// around it; an aggregate over a subquery in WHERE still plans.
#[test]
fn a_scalar_subquerys_aggregate_is_not_the_outer_querys() {
    let plan = explain("SELECT a, (SELECT MAX(c) FROM t) AS m FROM t");
    assert!(line(&plan, "Join(").contains("LeftOuterJoin"), "{plan}");
    assert_eq!(plan.matches("GroupAggregate(").count(), 1, "{plan}");
    planned("SELECT a, COUNT(*) FROM t WHERE a IN (SELECT MAX(a) FROM t GROUP BY c) GROUP BY a");
}

/// Scalar subqueries weir does not lower are refused naming them: a
/// correlated one, one that may give several rows.
#[test]
fn scalar_subqueries_not_lowered_are_named() {
    planned("SELECT a FROM t AS o WHERE c > (SELECT MAX(c) FROM t WHERE t.a = o.a)");
    let e = error("SELECT a FROM t AS o WHERE c > (SELECT MAX(c) FROM t WHERE t.a > o.a)");
    assert!(
        e.contains("only equalities of a subquery column and an outer column"),
        "{e}"
    );
    let e = error("SELECT a FROM t AS o WHERE c > (SELECT COUNT(*) * 2 FROM t WHERE t.a = o.a)");
    assert!(e.contains("a COUNT inside an expression"), "{e}");
    // One that selects a value without aggregating is Flink's
    // SINGLE_VALUE (the job fails on a second row); with GROUP BY or
    // DISTINCT it is refused.
    let plan = explain("SELECT a FROM t WHERE c > (SELECT c FROM t WHERE a = 1)");
    assert!(
        line(&plan, "GroupAggregate").contains("select=[COUNT(*), MAX(c)]"),
        "{plan}"
    );
    planned("SELECT a, (SELECT b FROM t AS i WHERE i.a = o.a) FROM t AS o");
    let e = error("SELECT a FROM t WHERE c > (SELECT c FROM t GROUP BY c)");
    assert!(e.contains("selects a value of at most one row"), "{e}");
    let e = error("SELECT a FROM t WHERE c > (SELECT DISTINCT c FROM t)");
    assert!(e.contains("selects a value of at most one row"), "{e}");
    planned("SELECT a FROM t WHERE a NOT IN (SELECT a FROM t WHERE c > 1)");
}

#[test]
fn a_column_neither_grouped_nor_aggregated_is_named_and_an_unknown_aggregate_too() {
    let e = error("SELECT a, c, COUNT(*) FROM t GROUP BY a");
    assert!(
        e.contains("column `c` is neither in GROUP BY nor in an aggregate"),
        "{e}"
    );
    // Written otherwise, a key is still that key; another column is not.
    planned(
        "INSERT INTO changes SELECT t.a, b, CAST(COUNT(*) AS INT), ts FROM t GROUP BY a, t.b, ts",
    );
    let e = error("SELECT t.c, COUNT(*) FROM t GROUP BY a");
    assert!(e.contains("`t.c` is neither in GROUP BY"), "{e}");
    // A function weir does not have is what is reported, not its argument.
    let e = error("SELECT a, FROB(b) FROM t GROUP BY a");
    assert!(e.contains("unknown function `FROB`"), "{e}");
    let e = error("SELECT a, LISTAGG(c) FROM t GROUP BY a");
    assert!(e.contains("LISTAGG of INT: it joins STRINGs"), "{e}");
    let e = error("SELECT a, LISTAGG(b, c) FROM t GROUP BY a");
    assert!(
        e.contains("LISTAGG's separator `c`: a string literal"),
        "{e}"
    );
    let e = error(
        "SELECT b, FIRST_VALUE(n) FROM (SELECT a, b, COUNT(*) AS n FROM t GROUP BY a, b) GROUP BY b",
    );
    assert!(e.contains("FIRST_VALUE over an updating input"), "{e}");
}

#[test]
fn legacy_group_windows_are_checked_as_the_table_functions_are() {
    planned("INSERT INTO changes SELECT a, b, CAST(COUNT(*) AS INT), TUMBLE_ROWTIME(ts, INTERVAL '1' MINUTE) FROM t GROUP BY a, b, TUMBLE(ts, INTERVAL '1' MINUTE)");
    let e = error("SELECT HOP_START(ts, INTERVAL '1' MINUTE), COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE)");
    assert!(
        e.contains("HOP_START(..) in a query grouped by a TUMBLE window"),
        "{e}"
    );
    let e = error("SELECT COUNT(*) FROM t GROUP BY TUMBLE(c, INTERVAL '1' MINUTE)");
    assert!(e.contains("`c` is not a time attribute"), "{e}");
    let e =
        error("SELECT COUNT(*) FROM t GROUP BY HOP(ts, INTERVAL '2' SECOND, INTERVAL '3' SECOND)");
    assert!(e.contains("whole multiple of the slide"), "{e}");
    let e = error("SELECT COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), SESSION(ts, INTERVAL '1' MINUTE)");
    assert!(e.contains("one group window per GROUP BY"), "{e}");
}

/// A HOP or CUMULATE window of more slides (steps) than a row can be
/// folded into in any time is refused at planning, naming the count: a
/// 99,999,999-day HOP of 1 ms slides ran forever and could not be stopped.
#[test]
fn windows_of_too_many_slides_are_refused() {
    for (sql, unit) in [
        ("SELECT window_start, COUNT(*) FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '0.001' SECOND, INTERVAL '99999999' DAY)) GROUP BY window_start, window_end", "slide"),
        ("SELECT window_start, COUNT(*) FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '0.001' SECOND, INTERVAL '1' DAY)) GROUP BY window_start, window_end", "step"),
        ("SELECT COUNT(*) FROM t GROUP BY HOP(ts, INTERVAL '0.001' SECOND, INTERVAL '1' DAY)", "slide"),
    ] {
        let e = error(sql);
        assert!(
            e.contains(&format!("times the {unit}: at most 1000000 windows per row")),
            "{e}"
        );
    }
    // A day of one-second slides (86,400 windows per row) is within it.
    planned("INSERT INTO changes SELECT a, b, CAST(COUNT(*) AS INT), window_start FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '1' DAY)) GROUP BY a, b, window_start, window_end");
}

/// INSERT casts a column whose type Flink casts implicitly to the
/// table's, and names the column and both types when it would narrow an
/// integer or needs a CAST from text; the casts show in EXPLAIN.
#[test]
fn insert_widens_to_the_tables_types_and_refuses_to_narrow() {
    let plan = explain("INSERT INTO wide SELECT c, CAST(c AS DECIMAL(10, 2)), c FROM t");
    let calc = line(&plan, "Calc(");
    assert!(calc.contains("CAST(c AS BIGINT) AS c,"), "{calc}");
    assert!(
        calc.contains("CAST(.. AS DECIMAL(12, 2)) AS EXPR$1"),
        "{calc}"
    );
    assert!(calc.contains("CAST(c AS DOUBLE) AS c0"), "{calc}");
    assert!(
        line(&plan, "Sink(table=[wide]").contains("fields=[c, EXPR$1, c0]"),
        "{plan}"
    );
    // SUM of an INT is an INT: into a BIGINT column.
    planned("INSERT INTO changes SELECT a, b, SUM(c), MAX(ts) FROM t GROUP BY a, b");
    planned("INSERT INTO wide SELECT SUM(c), SUM(c), SUM(c) FROM t GROUP BY b");
    planned("INSERT INTO wide VALUES (1, 1.5, 2), (2, NULL, 2.5)");
    planned("INSERT INTO wide VALUES (1, NULL, NULL)");
    planned("INSERT INTO wide SELECT a, NULL, NULL FROM t");
    planned("INSERT INTO wide (x, a) SELECT c, c FROM t");
    // any number into a DECIMAL, as Flink's (a value too wide is NULL)
    planned("INSERT INTO wide SELECT a, a, a FROM t");
    planned("INSERT INTO wide SELECT a, CAST(a AS DOUBLE), a FROM t");
    planned("INSERT INTO wide SELECT SUM(a), SUM(CAST(a AS DECIMAL(12, 2))), 1 FROM t GROUP BY b");
    for (sql, column, table, query) in [
        (
            "INSERT INTO files SELECT a, b, a, ts FROM t",
            "c",
            "INT",
            "BIGINT",
        ),
        (
            "INSERT INTO files SELECT a, b, CAST(a AS DOUBLE), ts FROM t",
            "c",
            "INT",
            "DOUBLE",
        ),
        (
            "INSERT INTO files SELECT a, b, b, ts FROM t",
            "c",
            "INT",
            "STRING",
        ),
        (
            "INSERT INTO wide SELECT CAST(a AS DECIMAL(10, 0)), 1.5, a FROM t",
            "a",
            "BIGINT",
            "DECIMAL(10, 0)",
        ),
        (
            "INSERT INTO wide SELECT a, b, a FROM t",
            "d",
            "DECIMAL(12, 2)",
            "STRING",
        ),
        (
            "INSERT INTO wide SELECT a, 1.5, CAST(a AS STRING) FROM t",
            "x",
            "DOUBLE",
            "STRING",
        ),
        // with a column list too
        (
            "INSERT INTO files (c) SELECT a FROM t",
            "c",
            "INT",
            "BIGINT",
        ),
    ] {
        let e = error(sql);
        assert!(
            e.contains(&format!(
                "column `{column}` is {table}, the query gives {query}"
            )),
            "{sql}: {e}"
        );
    }
}

/// UNION ALL (and UNION, INTERSECT, EXCEPT) widen each column to the
/// least common type of both sides; a bare NULL takes the other side's.
#[test]
fn set_operations_widen_each_column() {
    let plan = explain("SELECT c, b FROM t UNION ALL SELECT a, b FROM t");
    assert!(line(&plan, "Union").contains("fields=[c, b]"), "{plan}");
    assert!(
        line(&plan, "Calc(").contains("CAST(c AS BIGINT) AS c"),
        "{plan}"
    );
    planned("INSERT INTO changes SELECT a, b, c, ts FROM t UNION ALL SELECT a, b, NULL, ts FROM t");
    planned("INSERT INTO changes SELECT a, b, c, ts FROM t UNION ALL SELECT c, b, c, ts FROM t");
    planned("SELECT c, CAST(c AS DECIMAL(10, 2)) FROM t UNION SELECT a, CAST(c AS DECIMAL(5, 1)) FROM t");
    planned("SELECT c FROM t INTERSECT SELECT a FROM t");
    planned("SELECT c FROM t EXCEPT SELECT NULL FROM t");
    // Flink's UNION of INT and BIGINT is BIGINT: a BIGINT column takes it.
    let plan = explain("INSERT INTO files SELECT a, b, c, ts FROM (SELECT c AS a, b, c, ts FROM t UNION ALL SELECT a, b, c, ts FROM t)");
    assert!(plan.contains("Union"), "{plan}");
    let e = error("SELECT c, b FROM t UNION ALL SELECT b, b FROM t");
    assert!(
        e.contains("column 1 (`c` INT, `b` STRING) has no common type"),
        "{e}"
    );
    let e = error("SELECT b FROM t UNION SELECT ts FROM t");
    assert!(e.contains("UNION of"), "{e}");
    assert!(
        e.contains("(`b` STRING, `ts` TIMESTAMP(3)) has no common type"),
        "{e}"
    );
}

/// INTERSECT ALL and EXCEPT ALL count each row's copies per side and
/// replicate the row (Flink's ReplicateRows): an updating result, which
/// an append-only file sink refuses.
#[test]
fn intersect_all_and_except_all_replicate_counted_rows() {
    let plan = explain("SELECT b, c FROM t INTERSECT ALL SELECT b, a FROM t");
    assert!(
        line(&plan, "Correlate").contains("ReplicateRows(__weir_copies)], select=[b, c]"),
        "{plan}"
    );
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[b, c]"),
        "{plan}"
    );
    let plan = explain("SELECT b FROM t EXCEPT ALL SELECT 'x'");
    assert!(line(&plan, "Correlate").contains("select=[b]"), "{plan}");
    planned("INSERT INTO changes SELECT a, b, c, ts FROM t EXCEPT ALL SELECT a, b, c, ts FROM t");
    let e = error(
        "INSERT INTO files SELECT a, b, c, ts FROM t INTERSECT ALL SELECT a, b, c, ts FROM t",
    );
    assert!(
        e.contains("is append-only and cannot take the updates"),
        "{e}"
    );
}

/// An append-only sink refuses an updating query naming what makes the
/// updates, as Flink's planner names the node; it said "GROUP BY without
/// a window" whatever made them (a LEFT JOIN, a Top-N).
#[test]
fn an_append_only_sink_names_what_makes_the_updates() {
    let kafka = "CREATE TABLE k (a BIGINT, b STRING, c INT, ts TIMESTAMP(3))
        WITH ('connector' = 'kafka', 'topic' = 'o', 'format' = 'json',
              'properties.bootstrap.servers' = 'localhost:9092');";
    for (query, made_by) in [
        (
            "SELECT a, b, CAST(COUNT(*) AS INT), MAX(ts) FROM t GROUP BY a, b",
            "made by a group aggregation without a window (GROUP BY,",
        ),
        (
            "SELECT DISTINCT a, b, c, ts FROM t",
            "made by a group aggregation without a window (GROUP BY, SELECT DISTINCT",
        ),
        (
            "SELECT x.a, y.b, x.c, x.ts FROM t AS x LEFT JOIN t AS y ON x.a = y.a",
            "made by a regular LEFT JOIN, which retracts the rows it padded",
        ),
        (
            "SELECT x.a, y.b, y.c, x.ts FROM t AS x JOIN
               (SELECT a, b, CAST(COUNT(*) AS INT) AS c FROM t GROUP BY a, b) AS y ON x.a = y.a",
            "made by a regular JOIN of a group aggregation without a window",
        ),
        (
            "SELECT a, b, c, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY c) AS rn
               FROM t) WHERE rn <= 2",
            "made by a Top-N (ROW_NUMBER()",
        ),
        (
            "SELECT a, b, c, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC)
               AS rn FROM t) WHERE rn = 1",
            "made by a deduplication keeping the last row",
        ),
        (
            "SELECT a, b, c, ts FROM t UNION ALL
             SELECT x.a, y.b, x.c, x.ts FROM t AS x FULL JOIN t AS y ON x.a = y.a",
            "made by a regular FULL JOIN",
        ),
    ] {
        for sink in ["files", "k"] {
            for explain in ["", "EXPLAIN "] {
                let e = error(&format!("{kafka} {explain}INSERT INTO {sink} {query}"));
                assert!(
                    e.contains("is append-only and cannot take the updates this query produces")
                        && e.contains(made_by),
                    "{explain}{query} into {sink}: {e}"
                );
            }
        }
    }
    planned(&format!(
        "{kafka} INSERT INTO k SELECT x.a, y.b, x.c, x.ts FROM t AS x JOIN t AS y ON x.a = y.a"
    ));
}

/// A filter over a group aggregation into an upsert sink asks for its
/// update-before rows, as Flink's planner does (FLINK-9528): a key whose
/// new row fails `HAVING COUNT(*) < 3` is gone only by its `-U`, which
/// the sink writes as a tombstone. Without them the key's old row stayed
/// in the topic. A filter of the keys alone, or none, asks for nothing.
#[test]
fn a_filter_over_an_aggregation_into_an_upsert_sink_takes_update_befores() {
    let upsert = "CREATE TABLE up (a BIGINT, n BIGINT, PRIMARY KEY (a) NOT ENFORCED)
        WITH ('connector' = 'upsert-kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'localhost:9092',
              'key.format' = 'json', 'value.format' = 'json');";
    let plan = |q: &str| {
        let s = Script::parse(&format!("{DDL} {upsert} EXPLAIN INSERT INTO up {q};"))
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        s.explained[0].clone()
    };
    let with = "emits changelog (+I, -U, +U, -D)";
    let without = "emits changelog (+I, +U, -D; no -U";
    for (q, emits) in [
        (
            "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) < 3",
            with,
        ),
        (
            "SELECT a, n FROM (SELECT a, COUNT(*) AS n FROM t GROUP BY a) WHERE n > 1 AND a > 0",
            with,
        ),
        ("SELECT a, COUNT(*) FROM t GROUP BY a HAVING a > 5", without),
        (
            "SELECT x, n FROM (SELECT n, a AS x FROM (SELECT a, COUNT(*) AS n FROM t GROUP BY a))
             WHERE x > 5",
            without,
        ),
        ("SELECT a, COUNT(*) FROM t GROUP BY a", without),
    ] {
        let p = plan(q);
        assert!(line(&p, "GroupAggregate,").contains(emits), "{q}:\n{p}");
    }
    let q = "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) < 3";
    let s = Script::parse(&format!("{DDL} {upsert} INSERT INTO up {q};")).unwrap();
    assert!(crate::changelog::upsert_writes_update_before(
        &s.inserts[0].1
    ));
    let q = "SELECT a, COUNT(*) FROM t GROUP BY a HAVING a > 5";
    let s = Script::parse(&format!("{DDL} {upsert} INSERT INTO up {q};")).unwrap();
    assert!(!crate::changelog::upsert_writes_update_before(
        &s.inserts[0].1
    ));
}

#[test]
fn a_select_without_from_reads_one_row() {
    let plan = explain("SELECT 1 + 1 AS two, UPPER('a') AS u");
    assert!(plan.contains("Values"), "{plan}");
    assert!(
        !plan.contains("__weir_dual AS"),
        "the hidden column is not selected: {plan}"
    );
}

/// PARTITION BY and ORDER BY of a Top-N may be expressions, aggregates of
/// the SELECT's GROUP BY included (computed as hidden columns).
#[test]
fn a_top_n_orders_and_partitions_by_expressions() {
    for sql in [
        "SELECT * FROM (SELECT a, c, ROW_NUMBER() OVER (PARTITION BY a % 2 ORDER BY c + 1) AS rn FROM t) WHERE rn <= 3",
        "SELECT * FROM (SELECT a, COUNT(*) AS n, ROW_NUMBER() OVER (PARTITION BY a ORDER BY COUNT(*)) AS rn FROM t GROUP BY a) WHERE rn <= 3",
    ] {
        let plan = explain(sql);
        assert!(line(&plan, "Rank(").contains("rankEnd=3"), "{plan}");
    }
}

/// LAG in an OVER window is planned beside its aggregates; a non-literal
/// offset or a default of another type is refused naming it.
#[test]
fn lag_over_a_time_attribute() {
    let plan = explain(
        "SELECT a, LAG(c) OVER w AS p, COUNT(*) OVER w AS n, LAG(c, 2, 0) OVER w AS p2
         FROM t WINDOW w AS (PARTITION BY a ORDER BY ts)",
    );
    assert!(line(&plan, "OverAggregate(").contains("LAG("), "{plan}");
    let e = error("SELECT LAG(c, c) OVER (PARTITION BY a ORDER BY ts) FROM t");
    assert!(e.contains("LAG's offset"), "{e}");
    let e = error("SELECT LAG(c, 1, 'x') OVER (PARTITION BY a ORDER BY ts) FROM t");
    assert!(e.contains("LAG's default"), "{e}");
}

/// LEAD is planned as LAG is, into the same OverAggregate, and its
/// arguments are checked by name.
#[test]
fn lead_over_a_time_attribute() {
    let plan = explain(
        "SELECT a, LEAD(c) OVER w AS nx, LAG(c) OVER w AS p, LEAD(c, 2, 0) OVER w AS n2
         FROM t WINDOW w AS (PARTITION BY a ORDER BY ts)",
    );
    let over = line(&plan, "OverAggregate(");
    assert!(
        over.contains("LEAD(") && over.contains("LAG(") && over.contains(", 2)"),
        "{plan}"
    );
    let e = error("SELECT LEAD(c, c) OVER (PARTITION BY a ORDER BY ts) FROM t");
    assert!(e.contains("LEAD's offset"), "{e}");
    let e = error("SELECT LEAD(c, 1, 'x') OVER (PARTITION BY a ORDER BY ts) FROM t");
    assert!(e.contains("LEAD's default"), "{e}");
}

/// Per `a` and HOP window: the count, the window renamed `s`, `e`, `wt`.
const COUNTS: &str = "(SELECT a, b, COUNT(*) AS n, window_start AS s, window_end AS e,
                              window_time AS wt
                       FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND,
                                      INTERVAL '5' SECOND))
                       GROUP BY a, b, window_start, window_end, window_time)";

#[test]
fn rows_grouped_again_by_their_renamed_window_are_a_window_aggregation() {
    let q = format!("SELECT b, s, e, wt, MAX(n) FROM {COUNTS} GROUP BY b, s, e, wt");
    let plan = explain(&q);
    assert!(plan.contains("Attached { size: 5000 }"), "{plan}");
    assert!(!plan.contains("GroupAggregate"), "{plan}");
    // Append-only: a filesystem sink takes it, its bounds as selected.
    planned(&format!(
        "INSERT INTO files SELECT MAX(n), b, CAST(COUNT(*) AS INT), wt
         FROM {COUNTS} GROUP BY b, s, e, wt"
    ));
}

#[test]
fn grouping_by_one_bound_or_an_expression_of_it_is_a_group_aggregation() {
    for group in [
        "s",
        "e",
        "s, e + INTERVAL '1' SECOND",
        "GROUPING SETS ((s, e), ())",
    ] {
        let plan = explain(&format!("SELECT COUNT(*) FROM {COUNTS} GROUP BY {group}"));
        assert!(plan.contains("GroupAggregate"), "GROUP BY {group}: {plan}");
        assert!(!plan.contains("Attached"), "GROUP BY {group}: {plan}");
    }
}

#[test]
fn cumulate_rows_grouped_again_stay_a_group_aggregation() {
    let plan = explain(
        "SELECT s, e, MAX(n) FROM (
           SELECT a, COUNT(*) AS n, window_start AS s, window_end AS e
           FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND,
                               INTERVAL '5' SECOND))
           GROUP BY a, window_start, window_end) GROUP BY s, e",
    );
    assert!(plan.contains("GroupAggregate"), "{plan}");
}

#[test]
fn window_aggregations_joined_on_renamed_bounds_are_a_window_join() {
    let plan = explain(&format!(
        "SELECT l.a, l.n FROM {COUNTS} l
         JOIN (SELECT MAX(n) AS top, s AS s2, e AS e2 FROM {COUNTS} GROUP BY s, e) r
         ON l.s = r.s2 AND l.e = r.e2 AND l.n >= r.top"
    ));
    let regular = |plan: &str| plan.lines().any(|l| l.trim_start().starts_with("Join("));
    assert!(plan.contains("WindowJoin"), "{plan}");
    assert!(!regular(&plan), "{plan}");
    // Joined on one bound only: a regular join.
    let plan = explain(&format!(
        "SELECT l.a FROM {COUNTS} l JOIN {COUNTS} r ON l.s = r.s AND l.a = r.a"
    ));
    assert!(regular(&plan), "{plan}");
}

#[test]
fn a_top_n_partitioned_by_renamed_window_bounds_is_a_window_top_n() {
    let plan = explain(&format!(
        "SELECT * FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY s, e ORDER BY n DESC) AS rn
           FROM {COUNTS}) WHERE rn <= 3"
    ));
    assert!(
        line(&plan, "WindowRank(").contains("partitionBy=[s, e]"),
        "{plan}"
    );
    // By one bound only: a regular (updating) Top-N.
    let plan = explain(&format!(
        "SELECT * FROM (
           SELECT *, ROW_NUMBER() OVER (PARTITION BY s ORDER BY n DESC) AS rn
           FROM {COUNTS}) WHERE rn <= 3"
    ));
    assert!(!plan.contains("WindowRank("), "{plan}");
}

/// Flink's window deduplication: `rn = 1` by the event time, partitioned
/// by the window's bounds, keeps each window's first or last row and
/// emits it when the window ends, append-only (a file sink takes it). It
/// was planned as a deduplication over all time, whose keeping the last
/// row updates, so a file sink refused it, and whose state outlived the
/// window.
#[test]
fn row_number_one_by_time_per_window_is_a_window_deduplication() {
    for dir in ["DESC", "ASC"] {
        let q = format!(
            "SELECT a, b, c, ts FROM (
               SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, a ORDER BY ts {dir}) AS rn
               FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
             ) WHERE rn = 1"
        );
        let plan = explain(&q);
        assert!(
            line(&plan, "WindowRank(").contains("rankEnd=1"),
            "{dir}: {plan}"
        );
        assert!(!plan.contains("Deduplicate("), "{dir}: {plan}");
        assert!(plan.contains("append-only"), "{dir}: {plan}");
        planned(&format!("INSERT INTO files {q}"));
    }
}

/// SELECT DISTINCT is Flink's GROUP BY of every column: over a windowing
/// TVF with both bounds selected it is a window aggregation, append-only,
/// and so is a window semi join (IN correlated on the bounds), planned
/// over the subquery's distinct keys: both went into a group aggregation,
/// an updating result a file sink refused.
#[test]
fn select_distinct_of_window_rows_with_their_bounds_is_a_window_aggregation() {
    const TVF: &str = "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))";
    let q = format!("SELECT DISTINCT a, window_start, window_end FROM {TVF}");
    let plan = explain(&q);
    assert!(plan.contains("WindowAggregate"), "{plan}");
    assert!(!plan.contains("GroupAggregate"), "{plan}");
    planned(&format!(
        "INSERT INTO files SELECT a, b, c, ws FROM (
           SELECT DISTINCT a, b, c, window_start AS ws, window_end FROM {TVF})"
    ));
    let semi = format!(
        "SELECT L.a, L.b, L.c, L.ts FROM (SELECT * FROM {TVF}) L
         WHERE L.a IN (SELECT a FROM (SELECT * FROM {TVF}) R
                       WHERE R.c > 3 AND L.window_start = R.window_start
                         AND L.window_end = R.window_end)"
    );
    let plan = explain(&semi);
    assert!(plan.contains("WindowJoin"), "{plan}");
    assert!(!plan.contains("GroupAggregate"), "{plan}");
    planned(&format!("INSERT INTO files {semi}"));
    // Without both bounds the rows are a table's: an updating DISTINCT.
    let plan = explain(&format!("SELECT DISTINCT a, window_start FROM {TVF}"));
    assert!(plan.contains("GroupAggregate"), "{plan}");
    let plan = explain("SELECT DISTINCT a, b FROM t");
    assert!(plan.contains("GroupAggregate"), "{plan}");
}

#[test]
fn grouping_sets_of_a_window_aggregation_are_window_aggregations() {
    // Flink's `GROUP BY window_start, window_end, GROUPING SETS (..)`: a
    // window aggregation per set (append-only), the keys a set leaves out
    // NULL, unioned.
    for group in [
        "GROUPING SETS ((b, c), (b), ())",
        "ROLLUP (b, c)",
        "CUBE (b, c)",
    ] {
        let q = format!(
            "SELECT window_start, window_end, b, c, COUNT(*), GROUPING(b, c)
             FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
             GROUP BY window_start, window_end, {group}"
        );
        let plan = explain(&q);
        assert!(plan.contains("WindowAggregate"), "{group}: {plan}");
        assert!(!plan.contains("GroupAggregate"), "{group}: {plan}");
        planned(&format!("INSERT INTO files SELECT CAST(COUNT(*) AS BIGINT), b, c, window_time FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '2' MINUTE)) GROUP BY window_start, window_end, window_time, {group}"));
    }
    let e = error("SELECT b, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY GROUPING SETS ((window_start, window_end, b), (b))");
    assert!(e.contains("without `window_start`"), "{e}");
    let e = error("SELECT b, COUNT(*) FROM TABLE(SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, ROLLUP (b)");
    assert!(e.contains("SESSION"), "{e}");
}

#[test]
fn a_windowing_tvf_in_a_subquery_of_where_plans() {
    // IN and EXISTS subqueries are printed and parsed again as joins:
    // `TABLE t` comes back as `__TABLE(t)`, a plain identifier.
    for sql in [
        "SELECT a FROM t WHERE c IN (SELECT c FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)))",
        "SELECT L.a FROM (SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) L
         WHERE L.c IN (SELECT c FROM (SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) R
                       WHERE L.window_start = R.window_start AND L.window_end = R.window_end)",
        "SELECT L.a FROM (SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) L
         WHERE NOT EXISTS (SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) R
                           WHERE L.c = R.c AND L.window_start = R.window_start AND L.window_end = R.window_end)",
    ] {
        planned(sql);
    }
}

/// EXISTS correlated by conditions other than equalities, as Flink plans
/// it: a semi (anti) join with the distinct values of the outer columns
/// the subquery reads that found a row.
#[test]
fn exists_correlated_by_other_conditions_is_a_semi_or_anti_join() {
    for sql in [
        "SELECT a FROM t AS o WHERE EXISTS (SELECT 1 FROM t WHERE t.b = o.b AND t.c > o.c)",
        "SELECT a FROM t AS o WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.c > o.c + 1)",
        "SELECT o.a FROM t AS o JOIN t AS p ON o.a = p.a
         WHERE EXISTS (SELECT 1 FROM t WHERE t.c > o.c OR t.b = p.b)",
    ] {
        let plan = explain(sql);
        assert!(plan.contains("Join("), "{sql}: {plan}");
    }
    // Over several FROM items (comma-joined) it is refused by name.
    let e = error(
        "SELECT o.a FROM t AS o, t AS p WHERE o.a = p.a AND EXISTS (SELECT 1 FROM t WHERE t.c > o.c)",
    );
    assert!(e.contains("several tables in FROM"), "{e}");
}

/// An ORDER BY position out of range is an error, as Calcite's "Ordinal
/// out of range" (it sorted by the constant 5 and printed the rows).
#[test]
fn an_order_by_position_out_of_range_is_an_error() {
    for sql in [
        "SELECT a FROM t ORDER BY 5",
        "SELECT a, b FROM t ORDER BY 0",
    ] {
        let e = error(sql);
        assert!(e.contains("the SELECT has"), "{sql}: {e}");
    }
    planned("SELECT a, b FROM t ORDER BY 2, a");
}

/// Calcite reads a parenthesized GROUP BY list as its expressions:
/// `GROUP BY (a, b)` is `GROUP BY a, b`, and `GROUP BY ()`, the empty
/// grouping set, is one group of all rows (also without aggregates).
#[test]
fn a_parenthesized_group_by_list_groups_by_its_expressions() {
    let plan = explain("SELECT a, b, COUNT(*) FROM t GROUP BY (a, b)");
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[a, b]"),
        "{plan}"
    );
    let plan = explain("SELECT COUNT(*), SUM(c) FROM t GROUP BY ()");
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[]"),
        "{plan}"
    );
    let plan = explain("SELECT 1 AS one FROM t GROUP BY ()");
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[]"),
        "one row, not one per input row: {plan}"
    );
    let plan = explain("SELECT a, COUNT(*) FROM t GROUP BY a, ()");
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[a]"),
        "{plan}"
    );
    let e = error("SELECT a, COUNT(*) FROM t GROUP BY ()");
    assert!(e.contains("column `a` is neither in GROUP BY"), "{e}");
}

/// An aggregate where none may be (WHERE, GROUP BY, inside another
/// aggregate) and DISTINCT in a call of a scalar function are refused
/// naming them, as Calcite's validator refuses them.
#[test]
fn misplaced_aggregates_and_distinct_scalar_calls_are_named() {
    for (sql, name) in [
        ("SELECT a FROM t WHERE COUNT(*) > 1", "COUNT"),
        ("SELECT SUM(COUNT(*)) FROM t GROUP BY a", "COUNT"),
        ("SELECT a FROM t WHERE LISTAGG(b) = 'x'", "LISTAGG"),
        ("SELECT MAX(FIRST_VALUE(c)) FROM t", "FIRST_VALUE"),
        ("SELECT a FROM t WHERE SUM(c) > 1", "SUM"),
    ] {
        let e = error(sql);
        assert!(
            e.contains(&format!("the aggregate {name} is not allowed here")),
            "{sql}: {e}"
        );
    }
    let e = error("SELECT UPPER(DISTINCT b) FROM t");
    assert!(
        e.contains("UPPER(DISTINCT ..): DISTINCT and ALL are for aggregates"),
        "{e}"
    );
    planned("SELECT a, COUNT(DISTINCT b), UPPER(MAX(b)) FROM t GROUP BY a");
}

/// An INSERT's ORDER BY without LIMIT is Flink's temporal sort when its
/// first key is the event-time attribute ascending (planned as an OVER
/// aggregation of one partition by that time) and refused otherwise, as
/// Flink refuses to sort a stream on anything else; in a view or a
/// subquery it is dropped, as Calcite drops it, and the query plans.
#[test]
fn an_inserts_order_by_time_is_a_sort_and_a_subquerys_order_by_is_dropped() {
    let plan = explain("INSERT INTO changes SELECT a, b, c, ts FROM t ORDER BY ts, a");
    assert!(plan.contains("OverAggregate"), "{plan}");
    assert!(
        !plan.contains("__weir_sort AS") && !plan.contains("Rank"),
        "{plan}"
    );
    for bad in [
        "INSERT INTO changes SELECT a, b, c, ts FROM t ORDER BY ts DESC",
        "INSERT INTO changes SELECT a, b, c, ts FROM t ORDER BY c",
        "INSERT INTO changes SELECT a, b, c, ts FROM t ORDER BY a, ts",
    ] {
        let e = error(bad);
        assert!(
            e.contains(
                "ORDER BY without LIMIT on a stream, other than by its event-time attribute"
            ),
            "{bad}: {e}"
        );
    }
    let e = error("INSERT INTO changes SELECT a, b, c, ts FROM t OFFSET 2");
    assert!(e.contains("OFFSET without LIMIT"), "{e}");
    planned("CREATE VIEW v AS SELECT a, b, c, ts FROM t ORDER BY c");
    let plan = explain(
        "INSERT INTO changes SELECT a, b, c, ts FROM (SELECT a, b, c, ts FROM t ORDER BY c DESC)",
    );
    assert!(
        !plan.contains("OverAggregate") && !plan.contains("Rank"),
        "a subquery's ORDER BY is dropped: {plan}"
    );
}

/// `*` in a grouped SELECT stands for the input's columns, which must then
/// be grouped, as Calcite expands the star before it validates the
/// grouping: the first ungrouped one is named (it was an unknown
/// `EXPR$0`), and a star over grouped columns plans.
#[test]
fn a_star_in_a_grouped_select_is_the_inputs_columns() {
    let e = error("SELECT *, COUNT(*) FROM t");
    assert!(
        e.contains("column `a` is neither in GROUP BY nor in an aggregate"),
        "{e}"
    );
    let e = error("SELECT t.*, COUNT(*) FROM t GROUP BY a");
    assert!(
        e.contains("column `t.b` is neither in GROUP BY nor in an aggregate"),
        "{e}"
    );
    let plan = explain("SELECT *, COUNT(*) AS n FROM t GROUP BY a, b, c, ts");
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=[a, b, c, ts]"),
        "{plan}"
    );
    let plan = explain(
        "SELECT *, COUNT(*) AS n FROM (SELECT a FROM t) x JOIN (SELECT a FROM t) y ON x.a = y.a
         GROUP BY x.a, y.a",
    );
    assert!(
        line(&plan, "GroupAggregate").contains("groupBy=["),
        "{plan}"
    );
    planned("SELECT * FROM (SELECT a, b FROM t) GROUP BY a, b");
}

/// A view's or WITH table's column list of another length than its
/// query's columns is named as written (it named the planner's own
/// `__weir_named` alias).
#[test]
fn a_column_list_of_another_length_is_named_as_written() {
    let e = error("CREATE VIEW v (x) AS SELECT a, b FROM t");
    assert!(
        e.contains("view `v`: the column list (x) names 1 columns, the query has 2"),
        "{e}"
    );
    let e = error("WITH w (x, y, z) AS (SELECT a, b FROM t) SELECT * FROM w");
    assert!(
        e.contains("the column list (x, y, z) names 3 columns, the query has 2"),
        "{e}"
    );
    let e = error("SELECT * FROM (SELECT a, b FROM t) AS d (x)");
    assert!(
        e.contains("`AS d (x)` names 1 columns, the query has 2"),
        "{e}"
    );
}
