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
//! - a per-row operator between (a projection, UNION ALL) passes a `-U`
//!   on, whatever the rows around it: it asks for what its consumers ask
//!   for;
//! - a filter (`HAVING cnt < 10`, a WHERE over the aggregation) asks for
//!   them whatever its consumers ask for, as Flink's planner has it
//!   (FLINK-9528): when a key's new row fails the filter and its `+U` is
//!   dropped, only the `-U` of the old row, which passed, says the key's
//!   row is gone; an upsert sink writes it as a tombstone. A filter of
//!   the aggregation's keys alone asks for nothing (the `+U` passes
//!   wherever the `-U` did: Flink's `isNonUpsertKeyCondition`).
//!
//! A sub-plan that runs once for several consumers ([`crate::reuse`])
//! emits `-U` when any of them needs it.

use std::collections::HashSet;

use crate::expr::Scalar;
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
            Node::Calc {
                input,
                filter: Some(f),
                ..
            } => self.walk(input, needed || filter_needs_update_before(input, f)),
            // Per row: a -U passes alone.
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

/// Whether `filter` over `input`'s rows needs `input`'s update-before
/// rows: over an updating input, unless it reads only the keys of the
/// group aggregation it filters.
fn filter_needs_update_before(input: &Plan, filter: &Scalar) -> bool {
    if !input.updating {
        return false;
    }
    let Some(keys) = upsert_key(input) else {
        return true;
    };
    let mut beyond_keys = false;
    filter.for_each_column(&mut |c| beyond_keys |= !keys.get(c).copied().unwrap_or(false));
    beyond_keys
}

/// Which of `plan`'s columns are the group aggregation's keys its rows
/// update by (Flink's upsert key), followed through projections that
/// select them as they are; `None` for another node.
fn upsert_key(plan: &Plan) -> Option<Vec<bool>> {
    match &plan.node {
        Node::GroupAgg { keys, .. } => Some((0..plan.schema.len()).map(|c| c < *keys).collect()),
        Node::Calc { input, project, .. } => {
            let below = upsert_key(input)?;
            Some(
                project
                    .iter()
                    .map(|e| e.as_column().is_some_and(|c| below[c]))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Whether an upsert sink of `plan`'s rows writes its update-before rows
/// (as tombstones, as Flink's `upsert-kafka` does): when a filter on the
/// way asked for them ([`filter_needs_update_before`]), since then a `-U`
/// may come without its `+U`. Elsewhere every `-U` is followed by the `+U`
/// of its key, which overwrites the key anyway, so they are left out, as
/// Flink's planner leaves them out when the sink does not ask for them.
pub fn upsert_writes_update_before(plan: &Plan) -> bool {
    match &plan.node {
        Node::Calc {
            input,
            filter: Some(f),
            ..
        } => filter_needs_update_before(input, f) || upsert_writes_update_before(input),
        Node::Calc { input, .. } => upsert_writes_update_before(input),
        Node::Union(inputs) => inputs.iter().any(upsert_writes_update_before),
        _ => false,
    }
}
