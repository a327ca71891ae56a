//! Which group aggregations emit update-before rows: Flink's update-kind
//! inference (its planner's `ONLY_UPDATE_AFTER` against
//! `BEFORE_AND_AFTER`).
//!
//! A non-windowed GROUP BY changes a key's result row with each input row.
//! It says so with a `-U` of the old row and a `+U` of the new one only
//! when some consumer needs the old row:
//!
//! - an operator that keeps state of its input (an aggregate over the
//!   aggregate, a join, a rank) retracts what it saw, so it needs `-U`;
//! - a sink that writes the changelog (`print`, a bare SELECT's table)
//!   writes `-U` rows too;
//! - a `blackhole` sink and an `upsert-kafka` sink drop them (Flink's
//!   leave UPDATE_BEFORE out of their changelog mode), so they ask for
//!   none;
//! - a per-row operator between (a calc, UNION ALL) passes a `-U` on or
//!   drops it on its own, whatever the rows around it: it asks for what
//!   its consumers ask for.
//!
//! A sub-plan that runs once for several consumers ([`crate::reuse`])
//! emits `-U` when any of them needs it.

use std::collections::HashSet;

use crate::plan::{Node, Plan};
use crate::reuse::digest;

/// The group aggregations of a job whose consumers need update-before
/// rows, by sub-plan digest.
#[derive(Debug)]
pub struct UpdateBefore {
    /// Every one emits them (nothing is known of the consumers).
    all: bool,
    needed: HashSet<String>,
}

impl Default for UpdateBefore {
    /// Every group aggregation emits `-U`.
    fn default() -> Self {
        Self {
            all: true,
            needed: HashSet::new(),
        }
    }
}

impl UpdateBefore {
    /// The needs of one job's statements: each plan with whether what
    /// consumes its rows (its sink) takes update-before rows.
    pub fn of<'p>(statements: impl IntoIterator<Item = (&'p Plan, bool)>) -> Self {
        let mut ub = Self {
            all: false,
            needed: HashSet::new(),
        };
        for (plan, needed) in statements {
            ub.walk(plan, needed);
        }
        ub
    }

    fn walk(&mut self, plan: &Plan, needed: bool) {
        match &plan.node {
            Node::Scan(_) | Node::Values(_) => {}
            // Per row: a -U passes or is dropped alone.
            Node::Calc { input, .. }
            | Node::WindowAssign { input, .. }
            | Node::Replicate { input } => self.walk(input, needed),
            Node::Union(inputs) => {
                for p in inputs {
                    self.walk(p, needed);
                }
            }
            Node::GroupAgg { input, .. } => {
                if needed {
                    self.needed.insert(digest(plan));
                }
                self.walk(input, true);
            }
            Node::WindowAgg { input, .. }
            | Node::OverAgg { input, .. }
            | Node::Rank { input, .. } => self.walk(input, true),
            Node::Join { left, right, .. }
            | Node::IntervalJoin { left, right, .. }
            | Node::WindowJoin { left, right, .. }
            | Node::TemporalJoin { left, right, .. } => {
                self.walk(left, true);
                self.walk(right, true);
            }
        }
    }

    /// Whether the group aggregation `plan` emits update-before rows.
    pub fn emits(&self, plan: &Plan) -> bool {
        self.all || self.needed.contains(&digest(plan))
    }
}
