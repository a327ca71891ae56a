//! Which physical columns of each table a job reads: Flink's projection
//! push-down into sources. A generator asked for fewer columns leaves the
//! others NULL instead of making them (a Nexmark query that reads a bid's
//! auction and time makes neither its URL nor its padding string), and
//! every operator after it moves smaller rows.
//!
//! The analysis walks each plan from its root (every output column read)
//! down to the scans, passing on which input columns a node reads for the
//! output columns asked of it. Calc and aggregation nodes say exactly; any
//! other node reads all of its inputs' columns, so a node kind added later
//! can only make the analysis keep more, never drop a column in use. A
//! table scanned several times reads the union.

use std::collections::HashMap;

use crate::catalog::Table;
use crate::plan::{AggCall, Node, Plan};

/// For each scanned table (by lower-case name), which of its physical
/// columns the job reads.
#[derive(Clone, Debug, Default)]
pub struct ReadColumns {
    tables: HashMap<String, Vec<bool>>,
}

impl ReadColumns {
    /// The columns read by `plans` (one job's statements, every output
    /// column of each read).
    pub fn of<'p>(plans: impl IntoIterator<Item = &'p Plan>) -> Self {
        let mut read = ReadColumns::default();
        for p in plans {
            read.require(p, &vec![true; p.schema.len()]);
        }
        read
    }

    /// Which physical columns of `t` are read (`None`: the job does not
    /// scan it).
    pub fn physical(&self, t: &Table) -> Option<&[bool]> {
        self.of_table(&t.name)
    }

    /// Which physical columns of the table named `name` are read.
    pub fn of_table(&self, name: &str) -> Option<&[bool]> {
        self.tables
            .get(&name.to_ascii_lowercase())
            .map(Vec::as_slice)
    }

    /// Marks what `plan` reads when its output columns `out` are read.
    fn require(&mut self, plan: &Plan, out: &[bool]) {
        match &plan.node {
            Node::Scan(t) => self.scan(t, out),
            Node::Calc {
                input,
                filter,
                project,
            } => {
                let mut need = vec![false; input.schema.len()];
                let mut mark = |i: usize| need[i] = true;
                if let Some(f) = filter {
                    f.for_each_column(&mut mark);
                }
                for (e, _) in project.iter().zip(out).filter(|(_, &o)| o) {
                    e.for_each_column(&mut mark);
                }
                self.require(input, &need);
            }
            Node::WindowAgg {
                input,
                time,
                keys,
                aggs,
                ..
            } => {
                let mut need = grouping(input.schema.len(), *keys, aggs);
                need[*time] = true;
                self.require(input, &need);
            }
            Node::GroupAgg { input, keys, aggs } => {
                let need = grouping(input.schema.len(), *keys, aggs);
                self.require(input, &need);
            }
            // Every other node reads all its inputs' columns.
            _ => {
                for input in crate::reuse::inputs(&plan.node) {
                    self.require(input, &vec![true; input.schema.len()]);
                }
            }
        }
    }

    /// Marks the physical columns of `t` that its scan's output columns
    /// `out` come from, and those its watermark is computed from.
    fn scan(&mut self, t: &Table, out: &[bool]) {
        let read = self
            .tables
            .entry(t.name.to_ascii_lowercase())
            .or_insert_with(|| vec![false; t.physical.len()]);
        let mut mark = |i: usize| read[i] = true;
        for (i, c) in t.columns.iter().enumerate() {
            let watermarked = t.watermark.is_some_and(|(w, _)| w == i);
            if out.get(i).copied().unwrap_or(true) || watermarked {
                c.for_each_column(&mut mark);
            }
        }
        // The primary key names the rows (an upsert source's key).
        for &k in t.primary_key.iter().flatten() {
            if let Some(c) = t.columns.get(k) {
                c.for_each_column(&mut mark);
            }
        }
    }
}

/// The input columns a grouping reads: its keys (the first `keys`), each
/// aggregate's argument and FILTER column.
fn grouping(width: usize, keys: usize, aggs: &[AggCall]) -> Vec<bool> {
    let mut need = vec![false; width];
    need[..keys].iter_mut().for_each(|n| *n = true);
    for a in aggs {
        for i in a.arg.into_iter().chain(a.filter) {
            need[i] = true;
        }
    }
    need
}

#[cfg(test)]
mod tests;
