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

/// Whether `plan`'s rows are a windowing TVF's or a window aggregation's,
/// through projections (of any window kind, bounds kept or not): where
/// `window_start` and `window_end` by name still make a window join or a
/// window Top-N (CUMULATE's windows, of several lengths, have no
/// [`WindowProps`]).
pub(super) fn windowed(plan: &Plan) -> bool {
    match &plan.node {
        Node::WindowAssign { .. } | Node::WindowAgg { .. } => true,
        Node::Calc { input, .. } => windowed(input),
        _ => false,
    }
}
