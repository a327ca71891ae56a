//! Scripts run in-process on two workers over generated rows: DISTINCT
//! and FILTER aggregates, Top-N, deduplication and SELECT DISTINCT give
//! the final tables computed here in plain Rust.

use std::collections::{BTreeMap, BTreeSet};

use weir_runtime::testing::{run_ok, test_options};

use crate::value::Value;

use super::*;

/// 1000 rows: `id` 0..999, `k = id % 5`, `v = id * 7 % 11` (ties), one
/// second apart in event time.
const GEN: &str = "
CREATE TABLE g (
  id BIGINT,
  k AS id % 5,
  v AS id * 7 % 11,
  ts AS TO_TIMESTAMP_LTZ(id * 1000, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'rows-per-second' = '0',
        'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '999');
";

fn ids() -> impl Iterator<Item = (i64, i64, i64)> {
    (0..1000i64).map(|id| (id, id % 5, id * 7 % 11))
}

/// The final table of the script's SELECT: its rows as text, sorted.
fn run(select: &str) -> Vec<String> {
    let script = Script::parse(&format!("{GEN}{select};")).unwrap_or_else(|e| panic!("{e}"));
    let SqlJob { job, selects, .. } = script.job("test").unwrap();
    run_ok(job, &test_options(2));
    final_table(&selects[0])
}

/// A bare SELECT's collected changelog applied: its final rows as text,
/// sorted.
fn final_table((schema, rows): &(Schema, crate::collect::Collected)) -> Vec<String> {
    let rows = rows.rows();
    let mut live: Vec<Row> = Vec::new();
    for r in rows.iter() {
        let mut plain = r.clone();
        plain.kind = RowKind::Insert;
        if r.kind.is_accumulate() {
            live.push(plain);
        } else {
            let i = live
                .iter()
                .position(|l| *l == plain)
                .unwrap_or_else(|| panic!("{r:?} retracts a row never emitted"));
            live.remove(i);
        }
    }
    let mut out: Vec<String> = live.iter().map(|r| r.display(&schema.types())).collect();
    out.sort();
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn count_distinct_and_filter_per_key() {
    let got = run(
        "SELECT k, COUNT(DISTINCT v), COUNT(DISTINCT v) FILTER (WHERE id < 500),
                          COUNT(*) FILTER (WHERE v > 5), SUM(DISTINCT v)
                   FROM g GROUP BY k",
    );
    let mut want = Vec::new();
    for key in 0..5 {
        let rows: Vec<_> = ids().filter(|r| r.1 == key).collect();
        let all: BTreeSet<i64> = rows.iter().map(|r| r.2).collect();
        let early: BTreeSet<i64> = rows.iter().filter(|r| r.0 < 500).map(|r| r.2).collect();
        let big = rows.iter().filter(|r| r.2 > 5).count();
        want.push(format!(
            "+I[{key}, {}, {}, {big}, {}]",
            all.len(),
            early.len(),
            all.iter().sum::<i64>()
        ));
    }
    assert_eq!(got, sorted(want));
}

#[test]
fn count_distinct_per_window() {
    let got = run("SELECT k, window_start, COUNT(DISTINCT v) AS vs,
                          COUNT(*) FILTER (WHERE v = 0) AS zeros
                   FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '40' SECOND))
                   GROUP BY k, window_start, window_end");
    let mut per: BTreeMap<(i64, i64), (BTreeSet<i64>, usize)> = BTreeMap::new();
    for (id, k, v) in ids() {
        let e = per.entry((k, id / 40)).or_default();
        e.0.insert(v);
        e.1 += usize::from(v == 0);
    }
    let want = per
        .iter()
        .map(|(&(k, w), (vs, zeros))| {
            format!(
                "+I[{k}, {}, {}, {zeros}]",
                crate::time::format_timestamp(w * 40_000),
                vs.len()
            )
        })
        .collect();
    assert_eq!(got, sorted(want));
}

/// A SELECT or HAVING expression is the GROUP BY key it resolves to, not
/// only the one written the same: a qualified or bare column, a function
/// named in another case, a key in parentheses.
#[test]
fn group_by_keys_match_however_they_are_written() {
    let want: Vec<String> = (0..5).map(|k| format!("+I[{}, 200]", k + 1)).collect();
    for select in [
        "SELECT g.k + 1, COUNT(*) FROM g GROUP BY k + 1",
        "SELECT k + 1, COUNT(*) FROM g GROUP BY (k + 1)",
        "SELECT x.k + 1, COUNT(*) FROM g AS x GROUP BY x.k + 1",
        "SELECT k + 1, COUNT(*) FROM g AS x GROUP BY x.k + 1 HAVING (x.k + 1) >= 1",
    ] {
        assert_eq!(run(select), want, "{select}");
    }
    let want: Vec<String> = (0..5).map(|k| format!("+I[K{k}, 200]")).collect();
    assert_eq!(
        run(
            "SELECT UPPER(CONCAT('k', CAST(k AS STRING))), COUNT(*) FROM g
             GROUP BY upper(concat('k', cast(k AS STRING)))"
        ),
        want
    );
    let want: Vec<String> = (0..5).map(|k| format!("+I[{k}, 200]")).collect();
    assert_eq!(run("SELECT g.k, COUNT(*) FROM g GROUP BY k"), want);
    assert_eq!(run("SELECT k, COUNT(*) FROM g GROUP BY g.k"), want);
}

/// Flink's legacy group windows (`GROUP BY TUMBLE(ts, ..)` with
/// `TUMBLE_START` and the like) give what the windowing TVFs give.
#[test]
fn legacy_group_windows_are_the_table_functions_windows() {
    for (legacy, tvf) in [
        (
            "SELECT k, TUMBLE_START(ts, INTERVAL '40' SECOND), TUMBLE_END(ts, INTERVAL '40' SECOND),
                    COUNT(*), SUM(v)
             FROM g WHERE v > 2 GROUP BY TUMBLE(ts, INTERVAL '40' SECOND), k",
            "SELECT k, window_start, window_end, COUNT(*), SUM(v)
             FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '40' SECOND))
             WHERE v > 2 GROUP BY k, window_start, window_end",
        ),
        (
            "SELECT HOP_END(ts, INTERVAL '10' SECOND, INTERVAL '30' SECOND) AS e, MAX(v)
             FROM g GROUP BY HOP(ts, INTERVAL '10' SECOND, INTERVAL '30' SECOND)",
            "SELECT window_end AS e, MAX(v)
             FROM TABLE(HOP(TABLE g, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '30' SECOND))
             GROUP BY window_start, window_end",
        ),
    ] {
        let (got, want) = (run(legacy), run(tvf));
        assert!(!want.is_empty());
        assert_eq!(got, want, "{legacy}");
    }
    // 1000 rows a second apart: 25 windows of 40 s, each key 8 rows a window.
    let got = run("SELECT k, TUMBLE_START(ts, INTERVAL '40' SECOND), COUNT(*)
                   FROM g GROUP BY k, TUMBLE(ts, INTERVAL '40' SECOND)");
    assert_eq!(got.len(), 125);
    assert!(got.iter().all(|r| r.ends_with(", 8]")), "{got:?}");
}

/// MIN and MAX over an updating input (counts that grow, and groups a
/// HAVING deletes) retract: when the extreme leaves, the next value
/// still there takes its place, as Flink's MIN/MAX with retraction.
#[test]
fn min_and_max_over_an_updating_input_retract() {
    // Groups of k and v % (k + 2): 18 to 91 rows each.
    let mut counts: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for (_, k, v) in ids() {
        *counts.entry((k, v % (k + 2))).or_default() += 1;
    }
    for limit in [1000, 80, 60, 40] {
        let got = run(&format!(
            "SELECT k, MIN(n), MAX(n), COUNT(DISTINCT n) FROM
               (SELECT k, v % (k + 2) AS b, COUNT(*) AS n FROM g
                GROUP BY k, v % (k + 2) HAVING COUNT(*) < {limit})
             GROUP BY k"
        ));
        let mut per: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
        for (&(k, _), &n) in &counts {
            if n < limit {
                per.entry(k).or_default().insert(n);
            }
        }
        let want: Vec<String> = per
            .iter()
            .map(|(k, ns)| {
                let (min, max) = (ns.first().unwrap(), ns.last().unwrap());
                format!("+I[{k}, {min}, {max}, {}]", ns.len())
            })
            .collect();
        assert!(want.len() >= 2, "{want:?}");
        assert_eq!(got, sorted(want), "HAVING COUNT(*) < {limit}");
    }
}

/// ORDER BY a column or an expression the SELECT does not show: a hidden
/// column orders the printed table (and is not printed), and a Top-N in
/// a stream, as SQL and Flink allow.
#[test]
fn order_by_what_is_not_selected() {
    let script = Script::parse(&format!(
        "{GEN}SELECT id FROM g WHERE id < 10 ORDER BY v DESC, id LIMIT 4;"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let SqlJob {
        job,
        selects,
        presentations,
        ..
    } = script.job("test").unwrap();
    run_ok(job, &test_options(2));
    let (schema, rows) = &selects[0];
    let table = format_table(schema, &rows.rows(), &presentations[0]);
    // v = id * 7 % 11 of ids 0..9: 0 7 3 10 6 2 9 5 1 8.
    let ids: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches(|c| c == '|' || c == ' '))
        .collect();
    assert_eq!(ids, ["id", "3", "6", "9", "1"], "{table}");
    // A Top-N of a subquery, ordered by an expression it does not select.
    let got = run("SELECT * FROM (SELECT id FROM g ORDER BY v * 2 DESC, id DESC LIMIT 3)");
    let mut all: Vec<(i64, i64)> = ids_vs();
    all.sort_by(|a, b| b.cmp(a));
    let want: Vec<String> = all[..3].iter().map(|(_, id)| format!("+I[{id}]")).collect();
    assert_eq!(got, sorted(want));
    // NULLS FIRST/LAST carry over to the Top-N: of ids 0..9, the v below
    // 3 (ids 0, 5, 8) are NULL.
    let top2 = |order: &str| {
        run(&format!(
            "SELECT * FROM (SELECT id FROM g WHERE id < 10
             ORDER BY CASE WHEN v < 3 THEN NULL ELSE v END {order}, id LIMIT 2)"
        ))
    };
    assert_eq!(top2("ASC NULLS LAST"), ["+I[2]", "+I[7]"]);
    assert_eq!(top2("ASC"), ["+I[0]", "+I[5]"]);
    assert_eq!(top2("DESC NULLS FIRST"), ["+I[0]", "+I[5]"]);
    assert_eq!(top2("DESC"), ["+I[3]", "+I[6]"]);
}

/// `(v, id)` of every row of `g`.
fn ids_vs() -> Vec<(i64, i64)> {
    ids().map(|(id, _, v)| (v, id)).collect()
}

/// FIRST_VALUE, LAST_VALUE (NULLs skipped) and LISTAGG in arrival order,
/// in a window and in a group aggregation; one worker, so that arrival
/// order is the source's.
#[test]
fn first_value_last_value_and_listagg_in_arrival_order() {
    let script = Script::parse(&format!(
        "{GEN}SELECT k, window_start,
                FIRST_VALUE(CASE WHEN id % 3 = 0 THEN NULL ELSE id END) AS f,
                LAST_VALUE(CASE WHEN id % 7 = 6 THEN NULL ELSE id END) AS l,
                LISTAGG(CAST(v AS STRING)) AS vs, LISTAGG(CAST(id AS STRING), '-') AS ids
         FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '20' SECOND))
         WHERE id < 40 GROUP BY k, window_start, window_end;
         SELECT k, FIRST_VALUE(id), LAST_VALUE(id), LISTAGG(CAST(id AS STRING), ';')
         FROM g WHERE id < 23 GROUP BY k;"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let SqlJob { job, selects, .. } = script.job("test").unwrap();
    run_ok(job, &test_options(1));
    let mut want = Vec::new();
    for k in 0..5 {
        for w in 0..2 {
            let ids: Vec<i64> = (w * 20..w * 20 + 20).filter(|id| id % 5 == k).collect();
            let f = ids.iter().find(|id| *id % 3 != 0).unwrap();
            let l = ids.iter().rev().find(|id| *id % 7 != 6).unwrap();
            let vs: Vec<String> = ids.iter().map(|id| (id * 7 % 11).to_string()).collect();
            let joined: Vec<String> = ids.iter().map(ToString::to_string).collect();
            want.push(format!(
                "+I[{k}, {}, {f}, {l}, {}, {}]",
                crate::time::format_timestamp(w * 20_000),
                vs.join(","),
                joined.join("-")
            ));
        }
    }
    assert_eq!(final_table(&selects[0]), sorted(want));
    let want: Vec<String> = (0..5)
        .map(|k| {
            let ids: Vec<String> = (0..23)
                .filter(|id| id % 5 == k)
                .map(|i: i64| i.to_string())
                .collect();
            format!(
                "+I[{k}, {}, {}, {}]",
                ids[0],
                ids[ids.len() - 1],
                ids.join(";")
            )
        })
        .collect();
    assert_eq!(final_table(&selects[1]), sorted(want));
}

/// An OVER aggregation in a subquery (or a view) is planned where it
/// stands, and the query reading it filters its rows: the same rows as
/// filtering the aggregation at the top.
#[test]
fn an_over_aggregation_in_a_subquery_is_filtered_by_the_query_reading_it() {
    let got = run("SELECT id, s FROM (
                     SELECT id, SUM(v) OVER (PARTITION BY k ORDER BY ts
                                             ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s
                     FROM g) WHERE s > 20");
    let mut want = Vec::new();
    for k in 0..5 {
        let rows: Vec<(i64, i64, i64)> = ids().filter(|r| r.1 == k).collect();
        for (i, r) in rows.iter().enumerate() {
            let s: i64 = rows[i.saturating_sub(2)..=i].iter().map(|r| r.2).sum();
            if s > 20 {
                want.push(format!("+I[{}, {s}]", r.0));
            }
        }
    }
    assert!(!want.is_empty());
    assert_eq!(got, sorted(want));
}

/// LEAD reads the rows after in the partition: each row waits for them,
/// and the last ones get the default when the input ends.
#[test]
fn lead_reads_the_later_rows_and_the_last_get_the_default() {
    let got = run(
        "SELECT id, LEAD(v) OVER w AS n1, LEAD(id, 3, -1) OVER w AS n3,
                          LAG(v) OVER w AS p1
                   FROM g WINDOW w AS (PARTITION BY k ORDER BY ts)",
    );
    let mut want = Vec::new();
    for k in 0..5 {
        let rows: Vec<(i64, i64, i64)> = ids().filter(|r| r.1 == k).collect();
        for (i, r) in rows.iter().enumerate() {
            let n1 = rows.get(i + 1).map_or("NULL".into(), |r| r.2.to_string());
            let n3 = rows.get(i + 3).map_or(-1, |r| r.0);
            let p1 = i
                .checked_sub(1)
                .map_or("NULL".into(), |j| rows[j].2.to_string());
            want.push(format!("+I[{}, {n1}, {n3}, {p1}]", r.0));
        }
    }
    assert_eq!(got, sorted(want));
}

/// `INTERVAL '1:30' MINUTE TO SECOND` is 90 seconds (it was once read as
/// 1 hour 30 minutes), as a window size and in time arithmetic.
#[test]
fn minute_to_second_intervals_are_minutes_and_seconds() {
    let got = run(
        "SELECT window_start, COUNT(*) AS n, MAX(ts + INTERVAL '10:30' MINUTE TO SECOND)
                   FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '1:30' MINUTE TO SECOND))
                   GROUP BY window_start, window_end",
    );
    let mut want = Vec::new();
    for w in 0..=999 / 90 {
        let last = (w * 90 + 89).min(999);
        want.push(format!(
            "+I[{}, {}, {}]",
            crate::time::format_timestamp(w * 90_000),
            last - w * 90 + 1,
            crate::time::format_timestamp(last * 1000 + 630_000)
        ));
    }
    assert_eq!(got, sorted(want));
}

#[test]
fn top_3_per_key_with_ties_by_the_other_columns() {
    let got = run("SELECT * FROM (
                     SELECT k, v, id, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM g
                   ) WHERE rn <= 3");
    let mut want = Vec::new();
    for key in 0..5 {
        let mut rows: Vec<_> = ids().filter(|r| r.1 == key).collect();
        // v descending; ties: k (equal), v (equal), then id ascending
        rows.sort_by_key(|r| (-r.2, r.0));
        for (i, (id, k, v)) in rows.into_iter().take(3).enumerate() {
            want.push(format!("+I[{k}, {v}, {id}, {}]", i + 1));
        }
    }
    assert_eq!(got, sorted(want));
}

#[test]
fn deduplication_keeps_the_first_and_the_last_row_per_key() {
    let first = run("SELECT id, k FROM (
                       SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM g
                     ) WHERE rn = 1");
    assert_eq!(
        first,
        sorted((0..5).map(|id| format!("+I[{id}, {id}]")).collect())
    );
    let last = run("SELECT k, id FROM (
                      SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM g
                    ) WHERE rn = 1");
    assert_eq!(
        last,
        sorted(
            (995..1000)
                .map(|id| format!("+I[{}, {id}]", id % 5))
                .collect()
        )
    );
}

#[test]
fn select_distinct_keeps_one_row_of_each() {
    let got = run("SELECT DISTINCT k, v FROM g WHERE v < 3");
    let want: BTreeSet<String> = ids()
        .filter(|r| r.2 < 3)
        .map(|(_, k, v)| format!("+I[{k}, {v}]"))
        .collect();
    assert_eq!(got, want.into_iter().collect::<Vec<_>>());
}

/// Nexmark q5's shape: a window aggregate under both sides of a join is
/// one sub-plan, run once and fanned out (Flink's sub-plan reuse); the
/// result is that of running it twice.
#[test]
fn a_repeated_sub_plan_runs_once_with_the_same_result() {
    let counts = "SELECT k, COUNT(*) AS n, window_start AS s
                  FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '40' SECOND))
                  WHERE v <> 0 GROUP BY k, window_start, window_end";
    let select = format!(
        "SELECT c.k, c.n FROM ({counts}) AS c
         JOIN (SELECT MAX(m.n) AS top, m.s FROM ({counts}) AS m GROUP BY m.s) AS t
         ON c.s = t.s AND c.n >= t.top"
    );
    let got = run(&select);
    let mut per: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for (id, k, _) in ids().filter(|&(_, _, v)| v != 0) {
        *per.entry((id / 40, k)).or_default() += 1;
    }
    let mut want = Vec::new();
    for w in 0..25 {
        let top = (0..5).filter_map(|k| per.get(&(w, k))).max().copied();
        for k in 0..5 {
            if let (Some(&n), Some(top)) = (per.get(&(w, k)), top) {
                if n >= top {
                    want.push(format!("+I[{k}, {n}]"));
                }
            }
        }
    }
    assert!(!want.is_empty());
    assert_eq!(got, sorted(want));

    let script = Script::parse(&format!("{GEN}{select};")).expect("the script");
    // One source and one window aggregate in the job itself.
    let uids = script.job("reuse").expect("the job").job.uids();
    for kind in ["source-g-", "window-aggregate-"] {
        let n = uids
            .iter()
            .filter(|u| {
                // `<kind><n>`, and a stateful operator's `-<layout digest>`
                u.strip_prefix(kind).is_some_and(|n| {
                    let (n, digest) = n.split_once('-').unwrap_or((n, "00000000"));
                    n.parse::<u32>().is_ok() && u32::from_str_radix(digest, 16).is_ok()
                })
            })
            .count();
        assert_eq!(n, 1, "{kind}: {uids:?}");
    }
    let plan = &script.selects[0];
    assert!(crate::reuse::Reuse::of([plan]).any());
    let text = explain(plan, None);
    let sources = text.matches("Source: g [datagen]").count();
    assert_eq!(sources, 1, "{text}");
    assert!(
        text.contains("Reuse: the rows of Stage 2 (the same sub-plan, run once and fanned out)"),
        "{text}"
    );
}

/// Random datagen values fit their column's type: a DECIMAL(6, 2)'s stay
/// within ±9999.99 and carry fractions, an INT's within `min..max`, a
/// DATE's in the `max-past` before now; a range the type cannot hold is
/// refused naming the column.
#[test]
fn datagen_values_fit_their_types() {
    let script = Script::parse(
        "CREATE TABLE r (d DECIMAL(6, 2), i INT, day DATE)
         WITH ('connector' = 'datagen', 'rows-per-second' = '0', 'number-of-rows' = '2000',
               'fields.i.min' = '-5', 'fields.i.max' = '5', 'fields.day.max-past' = '10 d');
         SELECT d, i, day FROM r;",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let SqlJob { job, selects, .. } = script.job("test").unwrap();
    run_ok(job, &test_options(2));
    let rows = selects[0].1.rows();
    assert_eq!(rows.len(), 2000);
    let today = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        / crate::time::DAY_MS;
    let mut fractions = 0;
    for r in rows.iter() {
        let Value::Decimal(d) = &r.values[0] else {
            panic!("{r:?}")
        };
        assert!(d.get().abs() <= 999_999, "{r:?}");
        fractions += usize::from(d.get() % 100 != 0);
        let Value::Int(i) = r.values[1] else {
            panic!("{r:?}")
        };
        assert!((-5..=5).contains(&i), "{r:?}");
        let Value::Date(day) = r.values[2] else {
            panic!("{r:?}")
        };
        assert!((today - 11..=today).contains(&i64::from(day)), "{r:?}");
    }
    assert!(fractions > 1000, "{fractions} of 2000 with a fraction");

    // DOUBLE and DECIMAL bounds with fractions, as Flink reads them.
    let script = Script::parse(
        "CREATE TABLE f (x DOUBLE, d DECIMAL(6, 2))
         WITH ('connector' = 'datagen', 'rows-per-second' = '0', 'number-of-rows' = '2000',
               'fields.x.min' = '0.5', 'fields.x.max' = '0.75',
               'fields.d.min' = '-1.5', 'fields.d.max' = '2.25');
         SELECT x, d FROM f;",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let SqlJob { job, selects, .. } = script.job("test").unwrap();
    run_ok(job, &test_options(2));
    let rows = selects[0].1.rows();
    assert_eq!(rows.len(), 2000);
    let (mut lowest, mut highest) = (i128::MAX, i128::MIN);
    for r in rows.iter() {
        let (Value::Double(x), Value::Decimal(d)) = (&r.values[0], &r.values[1]) else {
            panic!("{r:?}")
        };
        assert!((0.5..=0.75).contains(x), "{r:?}");
        assert!((-150..=225).contains(&d.get()), "{r:?}");
        (lowest, highest) = (lowest.min(d.get()), highest.max(d.get()));
    }
    assert!(lowest < -140 && highest > 215, "{lowest}..{highest}");

    for (options, want) in [
        (
            "'fields.a.kind' = 'sequence', 'fields.a.start' = '1', 'fields.a.end' = '3000000000'",
            "column `a`: the sequence 1..3000000000 does not fit INT",
        ),
        (
            "'fields.b.max' = '1000'",
            "the option 'fields.b.max' = '1000' is not a DECIMAL(4, 1)",
        ),
    ] {
        let err = Script::parse(&format!(
            "CREATE TABLE x (a INT, b DECIMAL(4, 1)) WITH ('connector' = 'datagen', {options});"
        ))
        .and_then(|s| s.job("test").map(|_| ()))
        .expect_err(options)
        .to_string();
        assert!(err.contains(want), "{options}: {err}");
    }
}

/// `CREATE TABLE IF NOT EXISTS` and `CREATE VIEW IF NOT EXISTS` keep the
/// table or view already there (Flink's catalog does the same); without
/// it a second one of the same name is an error.
#[test]
fn if_not_exists_keeps_what_is_there() {
    let base = "CREATE TABLE t (a BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3',
                  'fields.a.kind' = 'sequence', 'fields.a.start' = '1', 'fields.a.end' = '3');
                CREATE VIEW v AS SELECT a FROM t;";
    let script = Script::parse(&format!(
        "{base}
         CREATE TABLE IF NOT EXISTS t (b STRING) WITH ('connector' = 'blackhole');
         CREATE VIEW IF NOT EXISTS v AS SELECT a * 10 AS a FROM t;
         SELECT a FROM v;"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let SqlJob { job, selects, .. } = script.job("test").unwrap();
    run_ok(job, &test_options(1));
    let (schema, rows) = &selects[0];
    let got: Vec<String> = rows
        .rows()
        .iter()
        .map(|r| r.display(&schema.types()))
        .collect();
    assert_eq!(sorted(got), ["+I[1]", "+I[2]", "+I[3]"]);
    for again in [
        "CREATE TABLE t (b STRING) WITH ('connector' = 'blackhole');",
        "CREATE VIEW v AS SELECT a FROM t;",
    ] {
        let e = Script::parse(&format!("{base}\n{again}"))
            .map(|_| ())
            .unwrap_err();
        assert!(e.to_string().contains("already exists"), "{again}: {e}");
    }
}

/// Flink's keys a Flink SQL script commonly sets (and a table's own
/// parallelism): Flink 1's names of
/// weir's keys become those keys, the state backend and checkpoint
/// retention are taken with a note, a retention that is none of Flink's
/// values is an error naming it.
#[test]
fn flink_state_and_parallelism_keys_are_taken() {
    let script = Script::parse(
        "SET 'state.backend.type' = 'rocksdb';
         SET 'state.backend.incremental' = 'true';
         SET 'table.exec.resource.default-parallelism' = '-1';
         SET 'table.exec.resource.default-parallelism' = '3';
         SET 'execution.checkpointing.externalized-checkpoint-retention' = 'RETAIN_ON_CANCELLATION';
         SET 'table.exec.sink.upsert-materialize' = 'NONE';",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        script.settings,
        [
            (
                "execution.checkpointing.incremental".to_string(),
                "true".to_string()
            ),
            ("parallelism.default".to_string(), "3".to_string()),
        ]
    );
    let notes = script.warnings.join("\n");
    for key in [
        "state.backend.type",
        "externalized-checkpoint-retention",
        "upsert-materialize",
    ] {
        assert!(notes.contains(key), "{key}: {notes}");
    }
    // A table's own parallelism is taken with a note; zero is refused.
    let script = Script::parse(
        "CREATE TABLE p (a INT) WITH ('connector' = 'print', 'sink.parallelism' = '1');
         CREATE TABLE g (a INT) WITH ('connector' = 'datagen', 'scan.parallelism' = '2');",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let notes = script.warnings.join("\n");
    assert!(notes.contains("table `p`: 'sink.parallelism'"), "{notes}");
    assert!(notes.contains("table `g`: 'scan.parallelism'"), "{notes}");
    let Err(err) = Script::parse(
        "CREATE TABLE p (a INT) WITH ('connector' = 'print', 'sink.parallelism' = '0');",
    ) else {
        panic!("a parallelism of 0 is refused")
    };
    let err = err.to_string();
    assert!(
        err.contains("'sink.parallelism' = '0' is not a positive integer"),
        "{err}"
    );
    let Err(err) =
        Script::parse("SET 'execution.checkpointing.externalized-checkpoint-retention' = 'KEEP';")
    else {
        panic!("a retention that is none of Flink's is refused")
    };
    let err = err.to_string();
    assert!(
        err.contains("'KEEP'") && err.contains("RETAIN_ON_CANCELLATION"),
        "{err}"
    );
}

/// `RESET 'key'` drops the script's earlier SETs of that key, `RESET;`
/// all of them (the SQL client's statements); later SETs count again.
#[test]
fn reset_drops_earlier_sets() {
    let script = Script::parse(
        "SET 'pipeline.name' = 'clicks';
         SET 'parallelism.default' = '3';
         SET 'execution.buffer-timeout' = '5 ms';
         RESET 'parallelism.default';",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        script.settings,
        [("execution.buffer-timeout".to_string(), "5 ms".to_string())]
    );
    assert_eq!(script.job_name.as_deref(), Some("clicks"));
    let script = Script::parse(
        "SET 'pipeline.name' = 'clicks';
         SET 'parallelism.default' = '3';
         RESET;
         SET 'execution.buffer-timeout' = '1 ms';",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        script.settings,
        [("execution.buffer-timeout".to_string(), "1 ms".to_string())]
    );
    assert_eq!(script.job_name, None);
}

/// The group aggregations of `plan`, outermost first.
fn group_aggs(plan: &Plan) -> Vec<&Plan> {
    let mut found = Vec::new();
    let mut todo = vec![plan];
    while let Some(p) = todo.pop() {
        if matches!(p.node, Node::GroupAgg { .. }) {
            found.push(p);
        }
        match &p.node {
            Node::Calc { input, .. } | Node::GroupAgg { input, .. } => todo.push(input),
            Node::Union(inputs) => todo.extend(inputs.iter()),
            _ => {}
        }
    }
    found
}

#[test]
fn update_before_rows_are_made_only_where_a_consumer_takes_them() {
    let script = Script::parse(&format!(
        "{GEN}
         CREATE TABLE hole (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
         CREATE TABLE shown (k BIGINT, n BIGINT) WITH ('connector' = 'print');
         CREATE TABLE counts (n BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
         CREATE VIEW per_k AS SELECT k, COUNT(*) AS n FROM g GROUP BY k;
         -- 1: a blackhole drops -U, through a filter of the keys too
         INSERT INTO hole SELECT k, n + 1 FROM per_k WHERE k > 3;
         -- 2: print writes them
         INSERT INTO shown SELECT k, SUM(v) FROM g GROUP BY k;
         -- 3: an aggregate over an aggregate retracts the inner's old rows
         INSERT INTO counts SELECT n, COUNT(*) FROM (SELECT k, MAX(v) AS n FROM g GROUP BY k) GROUP BY n;"
    ))
    .unwrap();
    let ub = script.update_before();
    let plans: Vec<&Plan> = script.inserts.iter().map(|(_, p)| p).collect();
    let [hole] = group_aggs(plans[0])[..] else {
        panic!()
    };
    assert!(!ub.emits(hole));
    let [shown] = group_aggs(plans[1])[..] else {
        panic!()
    };
    assert!(ub.emits(shown));
    let [outer, inner] = group_aggs(plans[2])[..] else {
        panic!()
    };
    assert!(!ub.emits(outer));
    assert!(ub.emits(inner));

    // A filter of an aggregate needs them whatever its sink (Flink's
    // FLINK-9528): the -U of a key whose new row fails it.
    let script = Script::parse(&format!(
        "{GEN}
         CREATE TABLE hole (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
         INSERT INTO hole SELECT k, n + 1 FROM (SELECT k, COUNT(*) AS n FROM g GROUP BY k)
         WHERE n > 3;"
    ))
    .unwrap();
    let [filtered] = group_aggs(&script.inserts[0].1)[..] else {
        panic!()
    };
    assert!(script.update_before().emits(filtered));

    // The same aggregate feeding a blackhole and a bare SELECT runs once
    // (sub-plan reuse) and makes them for the SELECT.
    let script = Script::parse(&format!(
        "{GEN}
         CREATE TABLE hole (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
         INSERT INTO hole SELECT k, COUNT(*) FROM g GROUP BY k;
         SELECT k, COUNT(*) FROM g GROUP BY k;"
    ))
    .unwrap();
    let [shared] = group_aggs(&script.inserts[0].1)[..] else {
        panic!()
    };
    assert!(script.update_before().emits(shared));
}

/// A stateful operator's uid carries a digest of its state's layout: a
/// script whose aggregation now keeps other accumulator slots (SUM turned
/// into AVG) does not map its old state onto them, while one that only
/// reads another column or is written otherwise keeps the same uid.
#[test]
fn a_stateful_operators_uid_follows_its_state_layout() {
    let uid_of = |select: &str, kind: &str| -> String {
        let script = Script::parse(&format!("{GEN}{select};")).unwrap_or_else(|e| panic!("{e}"));
        let uids = script.job("layout").expect("the job").job.uids();
        uids.into_iter()
            .find(|u| u.starts_with(kind))
            .unwrap_or_else(|| panic!("no {kind} uid"))
    };
    let window = |aggs: &str| {
        uid_of(
            &format!(
                "SELECT k, {aggs} FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '10' SECOND)) \
                 GROUP BY k, window_start, window_end"
            ),
            "window-aggregate-",
        )
    };
    let sum = window("SUM(id), COUNT(*)");
    assert_ne!(sum, window("AVG(id), COUNT(*)"));
    assert_ne!(sum, window("SUM(id), COUNT(*), MAX(v)"));
    assert_eq!(sum, window("SUM(v), count(*)"));
    let group = |aggs: &str| {
        uid_of(
            &format!("SELECT k, {aggs} FROM g GROUP BY k"),
            "group-aggregate-",
        )
    };
    assert_ne!(group("SUM(id)"), group("MIN(id)"));
    assert_eq!(group("SUM(id)"), group("sum(v)"));
}

#[test]
fn drop_table_and_view_remove_them_from_the_catalog() {
    // A script written for Flink's SQL client starting over: dropped if
    // there, created, dropped and created again.
    let script = Script::parse(&format!(
        "DROP TABLE IF EXISTS g; DROP VIEW IF EXISTS v; {GEN}
         CREATE VIEW v AS SELECT id FROM g;
         DROP VIEW v;
         CREATE VIEW v AS SELECT k FROM g;
         SELECT k FROM v;"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(script.catalog.view("v").is_some());
    let Err(e) = Script::parse(&format!("{GEN} DROP TABLE g; SELECT id FROM g;")) else {
        panic!("g dropped")
    };
    let e = e.to_string();
    assert!(e.contains("unknown table `g`"), "{e}");
    for (sql, what) in [
        ("DROP TABLE nope;", "table `nope` does not exist"),
        ("DROP VIEW g;", "view `g` does not exist"),
    ] {
        let Err(e) = Script::parse(&format!("{GEN} {sql}")) else {
            panic!("{sql}: planned")
        };
        let e = e.to_string();
        assert!(e.contains(what), "{sql}: {e}");
    }
}

/// A scalar subquery that selects a value without aggregating gives its
/// one row's value, NULL without a row, and fails the job on a second
/// row, as Flink's SINGLE_VALUE.
#[test]
fn a_scalar_subquery_of_rows_is_their_single_value() {
    assert_eq!(
        run("SELECT id, (SELECT v FROM g AS i WHERE i.id = 13) AS one,
                    (SELECT v FROM g AS i WHERE i.id = -1) AS none,
                    (SELECT i.v FROM g AS i WHERE i.id = o.id + 1) AS next
             FROM g AS o WHERE id < 3"),
        [
            "+I[0, 3, NULL, 7]",
            "+I[1, 3, NULL, 3]",
            "+I[2, 3, NULL, 10]"
        ]
    );
    let script = Script::parse(&format!(
        "{GEN}SELECT id, (SELECT v FROM g AS i WHERE i.id < 2) FROM g WHERE id < 3;"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let SqlJob { job, .. } = script.job("test").unwrap();
    let e = weir_runtime::testing::run_job(job, &test_options(2))
        .map(|_| ())
        .expect_err("a second row fails the job");
    assert!(
        e.to_string()
            .contains("a scalar subquery gave more than one row"),
        "{e}"
    );
}

/// A printed table pads its cells by hand: a column name (or value) past
/// `format!`'s width limit of 65535 panicked.
#[test]
fn a_very_long_column_name_prints() {
    let name = "a".repeat(70_000);
    let script =
        Script::parse(&format!("SELECT 1 AS {name}, 'xy' AS b;")).unwrap_or_else(|e| panic!("{e}"));
    let SqlJob {
        job,
        selects,
        presentations,
        ..
    } = script.job("test").unwrap();
    run_ok(job, &test_options(1));
    let (schema, rows) = &selects[0];
    let table = format_table(schema, &rows.rows(), &presentations[0]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[1], format!("| {name} |  b |"));
    assert_eq!(lines[3], format!("| {}1 | xy |", " ".repeat(69_999)));
}

/// `f` on a thread with the stack `weir sql` plans on (512 MiB): a test
/// thread's 2 MiB holds far fewer levels of a debug build's recursion.
fn on_a_planners_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn_scoped(s, f)
            .unwrap()
            .join()
            .unwrap()
    })
}

/// Expressions nested past `MAX_DEPTH` are refused naming the limit (a
/// sum of 5000 terms overflowed the stack, aborting the process), and a
/// CASE nested 60 deep, which sqlparser's default recursion limit cut
/// off with a misleading error, plans and runs.
#[test]
fn deep_expressions_plan_or_are_refused_naming_the_limit() {
    let terms = |n: usize| vec!["a"; n].join(" + ");
    let refused = |sql: String| {
        on_a_planners_stack(move || match Script::parse(&sql) {
            Ok(_) => panic!("planned"),
            Err(e) => e.to_string(),
        })
    };
    let e = refused(format!("SELECT {} FROM (VALUES (1)) AS t(a);", terms(5000)));
    assert!(e.contains("nested more than 256 levels deep"), "{e}");
    let cases = |n: usize| {
        format!(
            "SELECT {}a{} FROM (VALUES (1)) AS t(a);",
            "CASE WHEN a > 0 THEN ".repeat(n),
            " ELSE 0 END".repeat(n)
        )
    };
    let e = refused(cases(300));
    assert!(
        e.contains("nested more than 256 levels deep at Line: 1"),
        "{e}"
    );
    let e = refused(format!("SELECT {}1{};", "(".repeat(3000), ")".repeat(3000)));
    assert!(e.contains("nested more than 256 levels deep"), "{e}");
    for sql in [
        cases(60),
        format!("SELECT {} FROM (VALUES (1)) AS t(a);", terms(200)),
    ] {
        let rows = on_a_planners_stack(move || {
            let SqlJob { job, selects, .. } = Script::parse(&sql)
                .unwrap_or_else(|e| panic!("{e}"))
                .job("test")
                .unwrap();
            run_ok(job, &test_options(1));
            selects[0].1.rows()
        });
        assert_eq!(rows.len(), 1);
        assert!(
            matches!(rows[0].values[0], Value::Int(1) | Value::Int(200)),
            "{rows:?}"
        );
    }
}
