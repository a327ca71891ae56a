//! A job's logical dataflow: its stages (chains between exchanges) with
//! their wiring, and the uids of its operators.

use std::marker::PhantomData;
use std::path::PathBuf;

use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::task::Task;

/// A finished stage, type-erased.
pub(crate) trait StageSpec: Send + Sync {
    fn build(&self, ctx: &mut BuildContext<'_>) -> Result<Box<dyn Task>, BuildError>;
}

pub(crate) struct Stage<T, B, TB> {
    pub(crate) chain: B,
    pub(crate) tail: TB,
    pub(crate) _record: PhantomData<fn(T)>,
}

impl<T: 'static, B: ChainBuilder<T>, TB: TailBuilder<T>> StageSpec for Stage<T, B, TB> {
    fn build(&self, ctx: &mut BuildContext<'_>) -> Result<Box<dyn Task>, BuildError> {
        let tail = self.tail.make(ctx)?;
        self.chain.build(ctx, tail)
    }
}

/// A stage of the graph with its wiring.
pub(crate) struct StageNode {
    /// Uids of the stage's operators joined by " -> ".
    pub name: String,
    pub spec: Box<dyn StageSpec>,
    pub parallelism: Option<usize>,
    /// Exchange feeding this stage, if it does not start at a source.
    pub input: Option<usize>,
    /// Exchange this stage feeds, if it does not end at a sink.
    pub output: Option<usize>,
}

/// A job's logical dataflow.
pub struct JobGraph {
    name: String,
    pub(crate) stages: Vec<StageNode>,
    pub(crate) exchanges: usize,
    uids: Vec<String>,
    pub(crate) errors: Vec<String>,
    /// Second inputs of two-input stages: (exchange, the exchange the
    /// receiving stage names as its `input`).
    pub(crate) co_inputs: Vec<(usize, usize)>,
    /// Declared parameters: `(name, value)`, in declaration order.
    parameters: Vec<(String, String)>,
    /// Declared output directories.
    outputs: Vec<PathBuf>,
}

impl JobGraph {
    /// An empty job.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            stages: Vec::new(),
            exchanges: 0,
            uids: Vec::new(),
            errors: Vec::new(),
            co_inputs: Vec::new(),
            parameters: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Declares a parameter of the job, such as a source's input or a
    /// constant its logic depends on: it is part of what the job's state
    /// means (its fingerprint), so a checkpoint taken with another value is
    /// refused instead of restored into the wrong job. Declaring a name
    /// again replaces its value.
    pub fn parameter(&mut self, name: &str, value: impl ToString) -> &mut Self {
        let value = value.to_string();
        match self.parameters.iter_mut().find(|(n, _)| n == name) {
            Some(p) => p.1 = value,
            None => self.parameters.push((name.to_owned(), value)),
        }
        self
    }

    /// Declares a directory the job writes its output to (an exactly-once
    /// file sink's): while the job runs, no other weir process may use it;
    /// it is part of the job's fingerprint; and a fresh start refuses it if
    /// it holds committed output of another job.
    pub fn output_directory(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        let dir = dir.into();
        if !self.outputs.contains(&dir) {
            self.outputs.push(dir);
        }
        self
    }

    /// The operator uids, in the order they were added.
    pub fn uids(&self) -> &[String] {
        &self.uids
    }

    /// The declared parameters, `(name, value)`.
    pub fn parameters(&self) -> &[(String, String)] {
        &self.parameters
    }

    /// The declared output directories.
    pub fn output_directories(&self) -> &[PathBuf] {
        &self.outputs
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of stages (chains between exchanges).
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    pub(crate) fn register_uid(&mut self, uid: &str) {
        if uid.is_empty() {
            self.errors.push("an operator has an empty uid".into());
        } else if self.uids.iter().any(|u| u == uid) {
            self.errors.push(format!(
                "operator uid `{uid}` is used twice; uids must be unique"
            ));
        } else {
            self.uids.push(uid.to_owned());
        }
    }
}
