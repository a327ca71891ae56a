//! Joins as the planner sees them: the joined scope and its types, the
//! split of a condition into keys, time bounds and the rest, and the
//! errors of joins weir does not run.

use crate::catalog::Catalog;
use crate::error::SqlError;
use crate::join::{JoinKind, TimeBounds};
use crate::plan::{Node, Plan, Planner};
use crate::script::{parse_script, Statement};
use crate::types::DataType;

const TABLES: &str = "
    CREATE TABLE orders (
        id BIGINT, product STRING, amount INT, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
    ) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/orders', 'format' = 'csv');
    CREATE TABLE shipments (
        id BIGINT, order_id INT, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts
    ) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/shipments', 'format' = 'csv');
    CREATE TABLE products (
        name STRING, price DECIMAL(10, 2), ts TIMESTAMP(3)
    ) WITH ('connector' = 'filesystem', 'path' = '/nonexistent/products', 'format' = 'csv');
    CREATE VIEW totals AS SELECT product, SUM(amount) AS total FROM orders GROUP BY product;
";

/// The plan of the last query of `TABLES` and `sql`.
fn plan(sql: &str) -> Result<Plan, SqlError> {
    let mut catalog = Catalog::default();
    let mut query = None;
    for s in parse_script(&format!("{TABLES};\n{sql}"))? {
        match s {
            Statement::CreateTable(t) => catalog.create_table(&t)?,
            Statement::CreateView {
                name,
                query,
                if_not_exists,
            } => catalog.create_view(&name, query, if_not_exists)?,
            Statement::Query(q) => query = Some(q),
            _ => {}
        }
    }
    Planner::new(&catalog).query(&query.expect("a query"))
}

fn error(sql: &str) -> String {
    plan(sql).expect_err(sql).to_string()
}

/// The join under the plan's calcs.
fn join_of(p: &Plan) -> &Plan {
    match &p.node {
        Node::Calc { input, .. } => join_of(input),
        _ => p,
    }
}

fn names(p: &Plan) -> Vec<&str> {
    p.schema.fields.iter().map(|f| f.name.as_str()).collect()
}

#[test]
fn a_join_reads_both_sides_columns_qualified() {
    let p =
        plan("SELECT * FROM orders o JOIN shipments s ON o.id = s.order_id AND s.id > 10").unwrap();
    assert_eq!(
        names(&p),
        ["id", "product", "amount", "ts", "id0", "order_id", "ts0"]
    );
    assert!(!p.updating, "an inner join of append-only inputs inserts");
    let Node::Join { kind, on, left, .. } = &join_of(&p).node else {
        panic!("a regular join: {}", p.explain())
    };
    assert_eq!(*kind, JoinKind::Inner);
    assert_eq!(left.schema.len(), 4);
    // order_id is INT, id BIGINT: both keyed as BIGINT.
    assert_eq!(on.left_keys[0].ty(), DataType::BigInt);
    assert_eq!(on.right_keys[0].ty(), DataType::BigInt);
    assert!(on.residual.is_some(), "s.id > 10 is checked per pair");
    // Time attributes are plain timestamps after a regular join (Flink).
    assert!(p.schema.fields.iter().all(|f| !f.rowtime));

    let p = plan("SELECT o.id, s.id, amount FROM orders AS o, shipments AS s WHERE o.id = s.order_id AND amount > 3").unwrap();
    assert_eq!(names(&p), ["id", "id0", "amount"]);
    assert!(matches!(join_of(&p).node, Node::Join { .. }));
}

#[test]
fn outer_joins_make_the_other_side_nullable_and_update() {
    let p =
        plan("SELECT * FROM orders LEFT JOIN products ON orders.product = products.name").unwrap();
    assert!(p.updating, "a LEFT JOIN retracts its NULL-padded rows");
    let nullable: Vec<bool> = p.schema.fields.iter().map(|f| f.nullable).collect();
    assert_eq!(nullable, [true; 7]);
    let p =
        plan("SELECT * FROM orders RIGHT OUTER JOIN products ON orders.product = products.name")
            .unwrap();
    assert!(matches!(
        join_of(&p).node,
        Node::Join {
            kind: JoinKind::Right,
            ..
        }
    ));
    let p = plan("SELECT * FROM orders FULL OUTER JOIN products ON orders.product = products.name")
        .unwrap();
    assert!(matches!(
        join_of(&p).node,
        Node::Join {
            kind: JoinKind::Full,
            ..
        }
    ));
    // An updating input makes an inner join update too.
    let p = plan("SELECT * FROM orders JOIN totals ON orders.product = totals.product").unwrap();
    assert!(p.updating);
}

#[test]
fn a_time_bounded_inner_join_is_an_interval_join() {
    let between = "o.ts BETWEEN s.ts - INTERVAL '4' HOUR AND s.ts";
    for sql in [
        format!("SELECT * FROM orders o JOIN shipments s ON o.id = s.order_id AND {between}"),
        format!("SELECT * FROM orders o, shipments s WHERE o.id = s.order_id AND {between}"),
    ] {
        let p = plan(&sql).unwrap();
        let Node::IntervalJoin { bounds, on, .. } = &join_of(&p).node else {
            panic!("{sql}: {}", p.explain())
        };
        // s.ts - 4h <= o.ts <= s.ts: 0 <= s.ts - o.ts <= 4h.
        assert_eq!(
            *bounds,
            TimeBounds {
                left_time: 3,
                right_time: 2,
                lower: 0,
                upper: 4 * 3_600_000
            }
        );
        assert!(on.residual.is_none());
        assert!(!p.updating);
        // Both time attributes stay event-time attributes (Flink).
        let rowtime: Vec<&str> = p
            .schema
            .fields
            .iter()
            .filter(|f| f.rowtime)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(rowtime, ["ts", "ts0"]);
    }
    // Strict bounds and the other order.
    let p = plan("SELECT * FROM orders o JOIN shipments s ON o.id = s.order_id AND s.ts > o.ts AND s.ts < o.ts + INTERVAL '10' SECOND AND o.amount > 1").unwrap();
    let Node::IntervalJoin { bounds, on, .. } = &join_of(&p).node else {
        panic!("{}", p.explain())
    };
    assert_eq!((bounds.lower, bounds.upper), (1, 9_999));
    assert!(on.residual.is_some());
    // Without an event-time attribute on one side: a regular join.
    let p = plan("SELECT * FROM orders o JOIN products p ON o.product = p.name AND o.ts BETWEEN p.ts - INTERVAL '1' HOUR AND p.ts").unwrap();
    assert!(matches!(join_of(&p).node, Node::Join { .. }));
    assert!(!p.updating);
    // One bound only: a regular join with a predicate.
    let p = plan("SELECT * FROM orders o JOIN shipments s ON o.id = s.order_id AND o.ts <= s.ts")
        .unwrap();
    assert!(matches!(join_of(&p).node, Node::Join { .. }));
}

#[test]
fn joins_chain_and_nest() {
    let p = plan(
        "SELECT o.id, s.id, p.price FROM orders o
           JOIN shipments s ON o.id = s.order_id
           LEFT JOIN products p ON o.product = p.name",
    )
    .unwrap();
    let Node::Join { left, kind, on, .. } = &join_of(&p).node else {
        panic!("{}", p.explain())
    };
    assert_eq!(*kind, JoinKind::Left);
    assert!(matches!(join_of(left).node, Node::Join { .. }));
    // The outer join's left key is a column of the inner join's output.
    assert_eq!(on.left_keys[0].as_column(), Some(1));
    assert!(p.updating);
    let p = plan(
        "SELECT x.id, p.price FROM (orders o JOIN shipments s ON o.id = s.order_id) AS x
           JOIN products p ON x.product = p.name AND x.amount + 1 > 2",
    );
    // `x.id` is in both joined tables: ambiguous.
    assert!(p.unwrap_err().to_string().contains("ambiguous"));
    let p = plan(
        "SELECT x.order_id, p.price FROM (orders o JOIN shipments s ON o.id = s.order_id) AS x
           JOIN products p ON x.product = p.name",
    )
    .unwrap();
    assert_eq!(names(&p), ["order_id", "price"]);
}

/// Joins without an equality between the sides (non-equi, comma and
/// CROSS JOINs) key both inputs by one constant: every pair meets.
#[test]
fn joins_without_keys_key_both_sides_by_a_constant() {
    for sql in [
        "SELECT * FROM orders o JOIN shipments s ON o.id < s.order_id",
        "SELECT * FROM orders o, shipments s",
        "SELECT * FROM orders CROSS JOIN shipments",
    ] {
        let p = plan(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let explained = format!("{:?}", p.node);
        assert!(
            explained.contains("Literal(Bool(true), Boolean)"),
            "{sql}: {explained}"
        );
    }
}

/// An equality in every disjunct of an OR is a join key (Calcite pulls
/// such factors out), not a join without keys.
#[test]
fn an_equality_in_every_disjunct_keys_the_join() {
    let p = plan(
        "SELECT * FROM orders o, shipments s
         WHERE (o.id = s.order_id AND o.id > 3) OR (s.order_id = o.id AND s.ts IS NULL)
            OR (o.id = s.order_id)",
    )
    .unwrap();
    let explained = format!("{:?}", p.node);
    assert!(
        !explained.contains("Literal(Bool(true), Boolean)"),
        "keyed by o.id = s.order_id: {explained}"
    );
}

#[test]
fn unsupported_joins_say_what_they_are() {
    // USING and NATURAL JOIN plan as Calcite expands them: the merged
    // key first in `*`, each side's own still qualified.
    let p = plan("SELECT * FROM orders JOIN shipments USING (id)").unwrap();
    assert_eq!(
        names(&p),
        ["id", "product", "amount", "ts", "order_id", "ts0"]
    );
    let p = plan("SELECT id, orders.id, s.id, s.* FROM orders FULL JOIN shipments s USING (id)")
        .unwrap();
    assert_eq!(names(&p), ["id", "id0", "id1", "id2", "order_id", "ts"]);
    let p = plan("SELECT * FROM orders NATURAL JOIN shipments").unwrap();
    assert_eq!(names(&p), ["id", "ts", "product", "amount", "order_id"]);
    let e = error("SELECT * FROM orders JOIN shipments USING (nope)");
    assert!(e.contains("unknown column `nope`"), "{e}");
    // An outer join bounding the time attributes is an outer interval
    // join (append-only, as Flink's), not refused; its rows carry no time
    // attribute.
    for (kind, want) in [
        ("LEFT", JoinKind::Left),
        ("RIGHT", JoinKind::Right),
        ("FULL", JoinKind::Full),
    ] {
        let sql = format!("SELECT * FROM orders o {kind} JOIN shipments s ON o.id = s.order_id AND o.ts BETWEEN s.ts - INTERVAL '1' HOUR AND s.ts");
        let p = plan(&sql).unwrap();
        assert!(!p.updating, "{sql}");
        assert!(p.schema.fields.iter().all(|f| !f.rowtime), "{sql}");
        match &join_of(&p).node {
            Node::IntervalJoin { kind, bounds, .. } => {
                assert_eq!(*kind, want, "{sql}");
                assert_eq!((bounds.lower, bounds.upper), (0, 3_600_000), "{sql}");
            }
            other => panic!("{sql}: an interval join, got {other:?}"),
        }
    }
    let e = error("SELECT * FROM orders o JOIN shipments s ON o.id = s.order_id AND o.ts BETWEEN s.ts AND s.ts - INTERVAL '1' HOUR");
    assert!(e.contains("no interval"), "{e}");
    // Window joins plan (both forms): a join of the TVFs' rows on their
    // keys and window bounds, the window columns on both sides.
    for sql in [
        "SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) l
         JOIN TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) r
         ON l.window_start = r.window_start AND l.window_end = r.window_end AND l.id = r.id",
        "SELECT * FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) l
         JOIN (SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) r
         ON l.window_start = r.window_start AND l.window_end = r.window_end AND l.id = r.id",
    ] {
        let p = plan(sql).expect(sql);
        let names: Vec<&str> = p.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert!(names.contains(&"window_start") && names.contains(&"window_start0"), "{names:?}");
    }
    let e = error(
        "SELECT * FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) l
         JOIN TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) r
         ON l.window_start = r.window_start AND l.id = r.id",
    );
    assert!(e.contains("SESSION without GROUP BY"), "{e}");
}

#[test]
fn names_in_a_join_resolve_or_say_why_not() {
    let e = error("SELECT id FROM orders JOIN shipments ON orders.id = shipments.order_id");
    assert!(e.contains("`id` is ambiguous"), "{e}");
    let e = plan("SELECT * FROM orders o JOIN shipments s ON o.id = s.nope").unwrap_err();
    let SqlError::UnknownColumn { column, in_scope } = &e else {
        panic!("{e}")
    };
    assert_eq!(column, "s.nope");
    assert!(
        in_scope.contains("o.product") && in_scope.contains("s.order_id"),
        "{e}"
    );
    let e = error("SELECT * FROM orders JOIN orders ON orders.id = orders.id");
    assert!(e.contains("give one an alias"), "{e}");
    // A self-join with aliases is fine.
    plan("SELECT a.id, b.amount FROM orders a JOIN orders b ON a.id = b.id").unwrap();
    let e = error("SELECT * FROM orders o JOIN shipments s ON o.product");
    assert!(e.contains("BOOLEAN"), "{e}");
}
