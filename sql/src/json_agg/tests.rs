//! JSON_ARRAYAGG and JSON_OBJECTAGG run on one worker over literal rows
//! (arrival order is theirs): their JSON text, NULL clauses, FILTER, a
//! nested constructor, and an empty group.

use weir_runtime::testing::{run_ok, test_options};

use crate::session::{Script, SqlJob};
use crate::value::RowKind;

/// The final rows (changelog applied) of the script's one SELECT, as
/// text in arrival order of their last change.
fn run(select: &str) -> Vec<String> {
    let script = Script::parse(&format!(
        "CREATE VIEW x AS SELECT * FROM (VALUES
           (1, 'a', 10), (1, 'b', CAST(NULL AS INT)), (2, 'c\"', 30), (1, 'd', 40),
           (3, 'e', CAST(NULL AS INT))) AS x(k, s, v);
         {select};"
    ))
    .unwrap_or_else(|e| panic!("{select}: {e}"));
    let SqlJob { job, selects, .. } = script.job("test").unwrap();
    run_ok(job, &test_options(1));
    let (schema, rows) = &selects[0];
    let mut live: Vec<String> = Vec::new();
    for r in rows.rows().iter() {
        let mut plain = r.clone();
        plain.kind = RowKind::Insert;
        let text = plain.display(&schema.types());
        if r.kind.is_accumulate() {
            live.push(text);
        } else {
            let i = live.iter().position(|l| *l == text).expect("retracted");
            live.remove(i);
        }
    }
    live.sort();
    live
}

#[test]
fn json_arrayagg_skips_nulls_by_default_and_writes_them_when_asked() {
    assert_eq!(
        run("SELECT k, JSON_ARRAYAGG(v), JSON_ARRAYAGG(s), JSON_ARRAYAGG(v NULL ON NULL) FROM x GROUP BY k"),
        [
            r#"+I[1, [10,40], ["a","b","d"], [10,null,40]]"#,
            r#"+I[2, [30], ["c\""], [30]]"#,
            "+I[3, [], [\"e\"], [null]]",
        ]
    );
}

#[test]
fn json_objectagg_writes_nulls_by_default_and_skips_them_when_asked() {
    assert_eq!(
        run("SELECT k, JSON_OBJECTAGG(KEY s VALUE v), JSON_OBJECTAGG(s VALUE v ABSENT ON NULL) FROM x GROUP BY k"),
        [
            r#"+I[1, {"a":10,"b":null,"d":40}, {"a":10,"d":40}]"#,
            r#"+I[2, {"c\"":30}, {"c\"":30}]"#,
            r#"+I[3, {"e":null}, {}]"#,
        ]
    );
}

#[test]
fn json_aggregates_take_filter_and_nested_constructors_as_json() {
    assert_eq!(
        run(
            "SELECT JSON_ARRAYAGG(JSON_OBJECT('s' VALUE s)) FILTER (WHERE k = 1),
                    JSON_OBJECTAGG(KEY s VALUE JSON_ARRAY(k, v)) FILTER (WHERE v > 20),
                    JSON_ARRAYAGG(k) FILTER (WHERE k > 5)
             FROM x"
        ),
        [r#"+I[[{"s":"a"},{"s":"b"},{"s":"d"}], {"c\"":[2,30],"d":[1,40]}, []]"#]
    );
}

#[test]
fn json_objectagg_needs_value() {
    let e = Script::parse("SELECT JSON_OBJECTAGG(KEY 'a' 1) FROM (VALUES (1)) AS x(a);")
        .map(|_| ())
        .expect_err("a syntax error")
        .to_string();
    assert!(e.contains("VALUE after the JSON_OBJECTAGG key"), "{e}");
}

/// In an OVER window they are refused, as Flink refuses them, naming them.
#[test]
fn json_aggregates_over_a_window_are_refused_naming_them() {
    let e = Script::parse("SELECT JSON_ARRAYAGG(a) OVER (ORDER BY a) FROM (VALUES (1)) AS x(a);")
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("JSON_ARRAYAGG .. OVER is not supported"), "{e}");
}

/// Over an updating input they are refused, as LISTAGG is, naming them.
#[test]
fn json_aggregates_over_an_updating_input_are_refused_naming_them() {
    let e = Script::parse(
        "SELECT n, JSON_ARRAYAGG(a) FROM (SELECT a, COUNT(*) AS n FROM (VALUES (1)) AS x(a) GROUP BY a) GROUP BY n;",
    )
    .map(|_| ())
    .expect_err("refused")
    .to_string();
    assert!(
        e.contains("JSON_ARRAYAGG, JSON_OBJECTAGG) over an updating input"),
        "{e}"
    );
}
