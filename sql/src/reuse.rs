//! Sub-plan reuse, as Flink's planner does by default
//! (`table.optimizer.reuse-sub-plan-enabled` and
//! `table.optimizer.reuse-source-enabled`): a sub-plan that occurs more
//! than once in a job (the same table scanned twice, Nexmark q5's window
//! aggregate under both sides of its join) is run once and its rows fanned
//! out to every consumer, instead of being generated, exchanged and kept
//! in state twice.
//!
//! Two sub-plans are the same when their structure is: every node below
//! them with every field ([`digest`]). Only the largest repeated sub-plans
//! are marked, not the nodes inside them, which run once anyway.

use std::collections::HashMap;

use crate::plan::{Node, Plan};

/// A sub-plan's identity: its nodes, printed with every field.
pub fn digest(plan: &Plan) -> String {
    format!("{:?}", plan.node)
}

/// The sub-plans of a job that occur more than once.
#[derive(Debug, Default)]
pub struct Reuse {
    /// Occurrences by digest: a repeated sub-plan's second occurrence is
    /// not walked, so the nodes inside it keep their own count.
    counts: HashMap<String, usize>,
}

impl Reuse {
    /// The repeated sub-plans of `plans` (one job's statements).
    pub fn of<'p>(plans: impl IntoIterator<Item = &'p Plan>) -> Self {
        let mut reuse = Reuse::default();
        for p in plans {
            reuse.count(p);
        }
        reuse
    }

    fn count(&mut self, plan: &Plan) {
        let n = self.counts.entry(digest(plan)).or_insert(0);
        *n += 1;
        if *n > 1 {
            return;
        }
        for input in inputs(&plan.node) {
            self.count(input);
        }
    }

    /// Whether the sub-plan of `digest` occurs more than once.
    fn is_repeated(&self, digest: &str) -> bool {
        self.counts.get(digest).is_some_and(|&n| n > 1)
    }

    /// Whether any sub-plan occurs more than once.
    pub fn any(&self) -> bool {
        self.counts.values().any(|&n| n > 1)
    }
}

/// A job's repeated sub-plans and what was made of each the first time
/// (the lowering's shared stream, EXPLAIN's stage number).
#[derive(Debug)]
pub struct Memo<T> {
    reuse: Reuse,
    /// Whether any sub-plan repeats (if not, no digest is ever taken).
    any: bool,
    made: HashMap<String, T>,
}

/// What [`Memo::lookup`] says of a sub-plan.
pub enum Lookup<'m, T> {
    /// It occurs once: make it as usual.
    Once,
    /// It repeats and is met the first time: make it, then
    /// [`Memo::remember`] what was made under this digest.
    First(String),
    /// It repeats and was made before: this.
    Again(&'m T),
}

impl<T> Memo<T> {
    /// Nothing made yet of `reuse`'s repeated sub-plans.
    pub fn new(reuse: Reuse) -> Self {
        let any = reuse.any();
        Self {
            reuse,
            any,
            made: HashMap::new(),
        }
    }

    /// Whether `plan` occurs once, or repeats and is met the first time or
    /// again.
    pub fn lookup(&self, plan: &Plan) -> Lookup<'_, T> {
        if !self.any {
            return Lookup::Once;
        }
        let d = digest(plan);
        if !self.reuse.is_repeated(&d) {
            return Lookup::Once;
        }
        match self.made.get(&d) {
            Some(made) => Lookup::Again(made),
            None => Lookup::First(d),
        }
    }

    /// What was made of the repeated sub-plan of `digest`.
    pub fn remember(&mut self, digest: String, made: T) {
        self.made.insert(digest, made);
    }
}

impl<T> Default for Memo<T> {
    /// No repeated sub-plan.
    fn default() -> Self {
        Self::new(Reuse::default())
    }
}

/// The inputs of a node.
pub(crate) fn inputs(node: &Node) -> Vec<&Plan> {
    match node {
        Node::Scan(_) | Node::Values(_) => Vec::new(),
        Node::Calc { input, .. }
        | Node::WindowAgg { input, .. }
        | Node::GroupAgg { input, .. }
        | Node::OverAgg { input, .. }
        | Node::WindowAssign { input, .. }
        | Node::Replicate { input }
        | Node::Rank { input, .. } => vec![input],
        Node::Union(inputs) => inputs.iter().collect(),
        Node::Join { left, right, .. }
        | Node::IntervalJoin { left, right, .. }
        | Node::WindowJoin { left, right, .. }
        | Node::TemporalJoin { left, right, .. } => vec![left, right],
    }
}
