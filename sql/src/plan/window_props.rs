//! Which columns of a plan hold the bounds of the window each row belongs
//! to (Flink's window properties): a windowing TVF's and a window
//! aggregation's `window_start`, `window_end` and `window_time`, followed
//! through projections that keep them, under whatever names. Grouping
//! such rows again by both bounds is a window aggregation (cascaded), and
//! joining two such inputs on both bounds is a window join, as Flink plans
//! them (Nexmark q5 does both).

use super::{Node, Plan, Window};
use crate::expr::Scalar;

/// The window bound columns of a plan's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WindowProps {
    /// The `window_start` column.
    pub start: usize,
    /// The `window_end` column.
    pub end: usize,
    /// The `window_time` column, if kept.
    pub time: Option<usize>,
    /// Every window's length (ms).
    pub size: i64,
}

/// The window bound columns of `plan`'s rows, when each row belongs to one
/// event-time window of a fixed size (TUMBLE and HOP; not SESSION or
/// CUMULATE, whose windows differ in length).
pub(super) fn window_props(plan: &Plan) -> Option<WindowProps> {
    let fixed = |w: &Window| match *w {
        Window::Tumble { size, .. } | Window::Hop { size, .. } | Window::Attached { size } => {
            Some(size)
        }
        Window::Session { .. } | Window::Cumulate { .. } => None,
    };
    // Columns `at..at + 3` are the bounds; event time only.
    let bounds = |at: usize, size: i64| {
        let time = plan.schema.fields.get(at + 2)?;
        time.rowtime.then_some(WindowProps {
            start: at,
            end: at + 1,
            time: Some(at + 2),
            size,
        })
    };
    match &plan.node {
        Node::WindowAgg { window, keys, .. } => bounds(*keys, fixed(window)?),
        Node::WindowAssign { input, window, .. } => bounds(input.schema.len(), fixed(window)?),
        Node::Calc { input, project, .. } => {
            let inner = window_props(input)?;
            let kept = |col: usize| {
                project
                    .iter()
                    .position(|p| matches!(p, Scalar::Column(c, _) if *c == col))
            };
            Some(WindowProps {
                start: kept(inner.start)?,
                end: kept(inner.end)?,
                time: inner.time.and_then(kept),
                size: inner.size,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::session::Script;

    const DDL: &str = "
    CREATE TABLE t (a BIGINT, b STRING, c INT, ts TIMESTAMP(3),
      WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
    WITH ('connector' = 'datagen', 'number-of-rows' = '10');
    CREATE TABLE files (a BIGINT, b STRING, c INT, ts TIMESTAMP(3))
    WITH ('connector' = 'filesystem', 'path' = '/nonexistent/weir-plan-tests', 'format' = 'csv');
    ";

    /// Per `a` and HOP window: the count, the window renamed `s`, `e`, `wt`.
    const COUNTS: &str = "(SELECT a, b, COUNT(*) AS n, window_start AS s, window_end AS e,
                                  window_time AS wt
                           FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND,
                                          INTERVAL '5' SECOND))
                           GROUP BY a, b, window_start, window_end, window_time)";

    fn explain(q: &str) -> String {
        let s =
            Script::parse(&format!("{DDL} EXPLAIN {q};")).unwrap_or_else(|e| panic!("{q}: {e}"));
        s.explained[0].clone()
    }

    #[test]
    fn rows_grouped_again_by_their_renamed_window_are_a_window_aggregation() {
        let q = format!("SELECT b, s, e, wt, MAX(n) FROM {COUNTS} GROUP BY b, s, e, wt");
        let plan = explain(&q);
        assert!(plan.contains("Attached { size: 5000 }"), "{plan}");
        assert!(!plan.contains("GroupAggregate"), "{plan}");
        // Append-only: a filesystem sink takes it, its bounds as selected.
        let insert = format!(
            "{DDL} INSERT INTO files SELECT MAX(n), b, CAST(COUNT(*) AS INT), wt
             FROM {COUNTS} GROUP BY b, s, e, wt;"
        );
        Script::parse(&insert).unwrap_or_else(|e| panic!("{insert}: {e}"));
    }

    #[test]
    fn grouping_by_one_bound_or_an_expression_of_it_is_a_group_aggregation() {
        for group in ["s", "e", "s, e + INTERVAL '1' SECOND"] {
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
}
