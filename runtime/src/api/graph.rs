//! A job's logical dataflow: its stages (chains between exchanges) with
//! their wiring, and the uids of its operators.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::build::stage::StageSpec;
use crate::chain::task::Task;
use crate::exchange::flush::{BufferTimeout, OperatorTimeouts};

/// The spec of a reserved stage whose stream never ended (in a sink or an
/// exchange): the job does not start.
struct Unfinished(String);

impl StageSpec for Unfinished {
    fn build(&self, _ctx: &mut BuildContext<'_>) -> Result<Box<dyn Task>, BuildError> {
        unreachable!("validation refuses unfinished stage `{}`", self.0)
    }
    fn unfinished(&self) -> Option<&str> {
        Some(&self.0)
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
    /// Exchanges this stage feeds (none if it ends at sinks only; more
    /// than one when the stream fans out).
    pub outputs: Vec<usize>,
}

/// The stages and exchanges of a job being built. Streams add to it
/// through a shared reference to their [`JobGraph`], so that several
/// streams of one job can be open at once (fan-out, union).
#[derive(Default)]
pub(crate) struct Dataflow {
    pub(crate) stages: Vec<StageNode>,
    pub(crate) exchanges: usize,
    /// How each exchange partitions (Flink's ship strategy: `HASH`,
    /// `REBALANCE`, `FORWARD`, `BROADCAST`, ...), by exchange number.
    pub(crate) ship_strategies: Vec<&'static str>,
    pub(crate) uids: Vec<String>,
    pub(crate) errors: Vec<String>,
    /// Further inputs of stages reading more than one exchange (two-input
    /// stages, unions): (exchange, the exchange the receiving stage names
    /// as its `input`).
    pub(crate) co_inputs: Vec<(usize, usize)>,
    /// Exchanges the user asked to be forward edges: their two stages
    /// must have the same parallelism.
    pub(crate) forward: Vec<usize>,
    /// Buffer timeouts set on operators ([`Stream::buffer_timeout`]).
    ///
    /// [`Stream::buffer_timeout`]: crate::api::stream::Stream::buffer_timeout
    pub(crate) buffer_timeouts: OperatorTimeouts,
    /// Those set on operators of a branch: (the stage running it, uid,
    /// timeout).
    pub(crate) branch_buffer_timeouts: Vec<(usize, String, BufferTimeout)>,
}

/// A job's logical dataflow.
///
/// Streams built from it borrow it shared: a job may have several open
/// streams at once (two sources to union, one stream feeding several
/// operators). [`execute`](crate::execute) takes it whole.
pub struct JobGraph {
    name: String,
    pub(crate) flow: RefCell<Dataflow>,
    /// Declared parameters: `(name, value)`, in declaration order.
    parameters: Vec<(String, String)>,
    /// Declared output directories.
    outputs: Vec<PathBuf>,
    /// Declared input directories.
    inputs: Vec<PathBuf>,
}

/// A built job as execution sees it: its dataflow, no longer growing.
pub(crate) struct JobPlan {
    name: String,
    pub(crate) stages: Vec<StageNode>,
    pub(crate) exchanges: usize,
    ship_strategies: Vec<&'static str>,
    uids: Vec<String>,
    pub(crate) errors: Vec<String>,
    pub(crate) co_inputs: Vec<(usize, usize)>,
    pub(crate) forward: Vec<usize>,
    pub(crate) buffer_timeouts: OperatorTimeouts,
    pub(crate) branch_buffer_timeouts: Vec<(usize, String, BufferTimeout)>,
    parameters: Vec<(String, String)>,
    outputs: Vec<PathBuf>,
    inputs: Vec<PathBuf>,
}

impl JobGraph {
    /// An empty job.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            flow: RefCell::new(Dataflow::default()),
            parameters: Vec::new(),
            outputs: Vec::new(),
            inputs: Vec::new(),
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

    /// Declares a directory (or file) the job reads files from (a file
    /// source's): a savepoint is refused inside it, where a source that
    /// lists it again, or the next run's, would read weir's segments as
    /// input.
    pub fn input_directory(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        let dir = dir.into();
        if !self.inputs.contains(&dir) {
            self.inputs.push(dir);
        }
        self
    }

    /// The operator uids, in the order they were added.
    pub fn uids(&self) -> Vec<String> {
        self.flow.borrow().uids.clone()
    }

    /// The declared parameters, `(name, value)`.
    pub fn parameters(&self) -> &[(String, String)] {
        &self.parameters
    }

    /// The declared output directories.
    pub fn output_directories(&self) -> &[PathBuf] {
        &self.outputs
    }

    /// The declared input directories.
    pub fn input_directories(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of stages (chains between exchanges).
    pub fn stage_count(&self) -> usize {
        self.flow.borrow().stages.len()
    }

    pub(crate) fn register_uid(&self, uid: &str) {
        let mut flow = self.flow.borrow_mut();
        if uid.is_empty() {
            flow.errors.push("an operator has an empty uid".into());
        } else if flow.uids.iter().any(|u| u == uid) {
            flow.errors.push(format!(
                "operator uid `{uid}` is used twice; uids must be unique"
            ));
        } else {
            flow.uids.push(uid.to_owned());
        }
    }

    /// A new exchange's number.
    pub(crate) fn new_exchange(&self, ship_strategy: &'static str) -> usize {
        let mut flow = self.flow.borrow_mut();
        flow.exchanges += 1;
        flow.ship_strategies.push(ship_strategy);
        flow.exchanges - 1
    }

    /// Adds a stage; returns its number.
    pub(crate) fn add_stage(&self, node: StageNode) -> usize {
        let mut flow = self.flow.borrow_mut();
        flow.stages.push(node);
        flow.stages.len() - 1
    }

    /// Reserves the number of a stage that is still being built (its
    /// stream has branches that must know where they run); the stream's
    /// end fills it in ([`JobGraph::add_stage`] with `reserved`).
    pub(crate) fn reserve_stage(&self, name: &str) -> usize {
        self.add_stage(StageNode {
            name: name.to_owned(),
            spec: Box::new(Unfinished(name.to_owned())),
            parallelism: None,
            input: None,
            outputs: Vec::new(),
        })
    }

    /// Fills in reserved stage `stage`, keeping the outputs its branches
    /// added meanwhile.
    pub(crate) fn fill_stage(&self, stage: usize, node: StageNode) {
        let mut flow = self.flow.borrow_mut();
        let slot = &mut flow.stages[stage];
        let mut outputs = std::mem::take(&mut slot.outputs);
        outputs.extend(node.outputs);
        *slot = StageNode { outputs, ..node };
    }

    /// Adds exchange `exchange` to the outputs of stage `stage` (a branch
    /// of a fork in its chain feeds it).
    pub(crate) fn add_stage_output(&self, stage: usize, exchange: usize) {
        self.flow.borrow_mut().stages[stage].outputs.push(exchange);
    }

    /// Sets the parallelism of stage `stage` from one of its branches
    /// (`name`): an error if another branch set another.
    pub(crate) fn set_stage_parallelism(&self, stage: usize, parallelism: usize, name: &str) {
        let mut flow = self.flow.borrow_mut();
        match flow.stages[stage].parallelism {
            Some(p) if p != parallelism => {
                let stage_name = flow.stages[stage].name.clone();
                flow.errors.push(format!(
                    "`{name}` asks for parallelism {parallelism}, but it is chained in stage \
                     `{stage_name}` of parallelism {p}: a stream's branches run in its tasks"
                ));
            }
            _ => flow.stages[stage].parallelism = Some(parallelism),
        }
    }

    /// Requires exchange `exchange` to join stages of one parallelism.
    pub(crate) fn require_forward(&self, exchange: usize) {
        self.flow.borrow_mut().forward.push(exchange);
    }

    /// Records a mistake in the job's construction: the job fails to start
    /// with it.
    pub(crate) fn error(&self, message: String) {
        self.flow.borrow_mut().errors.push(message);
    }

    /// The dataflow as built, for execution.
    pub(crate) fn into_plan(self) -> JobPlan {
        let flow = self.flow.into_inner();
        JobPlan {
            name: self.name,
            stages: flow.stages,
            exchanges: flow.exchanges,
            ship_strategies: flow.ship_strategies,
            uids: flow.uids,
            errors: flow.errors,
            co_inputs: flow.co_inputs,
            forward: flow.forward,
            buffer_timeouts: flow.buffer_timeouts,
            branch_buffer_timeouts: flow.branch_buffer_timeouts,
            parameters: self.parameters,
            outputs: self.outputs,
            inputs: self.inputs,
        }
    }
}

impl JobPlan {
    /// The buffer timeout of each exchange that has its own: those set on
    /// operators in the Rust API, overridden by `configured`
    /// (`execution.buffer-timeout.operators`), each applied to the
    /// exchanges its operator's stage sends into. An error names an uid
    /// that is no operator of the job, or two operators of one stage
    /// asking for different timeouts.
    pub(crate) fn exchange_buffer_timeouts(
        &self,
        configured: &OperatorTimeouts,
    ) -> Result<HashMap<usize, BufferTimeout>, String> {
        let mut by_stage: BTreeMap<usize, (String, BufferTimeout)> = BTreeMap::new();
        let mut set = |stage: usize, uid: &str, t: BufferTimeout| {
            if let Some((other, was)) = by_stage.get(&stage) {
                if *was != t && other != uid {
                    return Err(format!(
                        "operators `{other}` and `{uid}` run chained in stage `{}` and share its \
                         output buffers, but ask for buffer timeouts {was} and {t}",
                        self.stages[stage].name
                    ));
                }
            }
            by_stage.insert(stage, (uid.to_owned(), t));
            Ok(())
        };
        let stage_of = |uid: &str| {
            self.stages
                .iter()
                .position(|s| s.name.split(" -> ").any(|u| u == uid))
        };
        for (stage, uid, t) in &self.branch_buffer_timeouts {
            if !configured.0.contains_key(uid) {
                set(*stage, uid, *t)?;
            }
        }
        for (uid, t) in &self.buffer_timeouts.0 {
            if configured.0.contains_key(uid) {
                continue;
            }
            if let Some(stage) = stage_of(uid) {
                set(stage, uid, *t)?;
            }
        }
        for (uid, t) in &configured.0 {
            let branch = self
                .branch_buffer_timeouts
                .iter()
                .find(|(_, u, _)| u == uid)
                .map(|(s, _, _)| *s);
            match stage_of(uid).or(branch) {
                Some(stage) => set(stage, uid, *t)?,
                None => {
                    return Err(format!(
                        "execution.buffer-timeout.operators names `{uid}`, which is not an \
                         operator of job `{}` (its operators: {})",
                        self.name,
                        self.uids.join(", ")
                    ))
                }
            }
        }
        Ok(by_stage
            .into_iter()
            .flat_map(|(stage, (_, t))| self.stages[stage].outputs.iter().map(move |&e| (e, t)))
            .collect())
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

    /// The declared input directories.
    pub fn input_directories(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stages feeding stage `stage`, each with the ship strategy of its
    /// edge, in exchange order.
    pub(crate) fn stage_inputs(&self, stage: usize) -> Vec<(usize, &'static str)> {
        let mut inputs = Vec::new();
        for (from, node) in self.stages.iter().enumerate() {
            for &e in &node.outputs {
                if self.stage_receives(stage, e) {
                    let strategy = self.ship_strategies.get(e).copied().unwrap_or("UNKNOWN");
                    inputs.push((e, from, strategy));
                }
            }
        }
        inputs.sort();
        inputs.into_iter().map(|(_, from, s)| (from, s)).collect()
    }

    /// Whether stage `stage` reads exchange `exchange` (as its input or as
    /// a further input of a stage reading several).
    pub(crate) fn stage_receives(&self, stage: usize, exchange: usize) -> bool {
        let input = self.stages[stage].input;
        input == Some(exchange)
            || self
                .co_inputs
                .iter()
                .any(|&(second, first)| second == exchange && input == Some(first))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::operators::sink::Sink;
    use crate::operators::source::sequence::SequenceSource;

    /// A sink that drops what it gets (the plan is never run).
    struct Discard;

    impl Sink for Discard {
        type In = u64;
        fn invoke(&mut self, _record: u64) {}
    }

    /// src -> a =(exchange 0)=> b -> c =(exchange 1)=> sink, each
    /// operator's timeout as `timeouts` sets it through the Rust API.
    fn plan(timeouts: &[(&str, BufferTimeout)]) -> JobPlan {
        let job = JobGraph::new("timeouts");
        let set = |uid: &str| timeouts.iter().find(|(u, _)| *u == uid).map(|(_, t)| *t);
        let mut s = job
            .source("src", |info| SequenceSource::new(info, 10, |i| i))
            .map("a", |x: u64| x);
        if let Some(t) = set("a") {
            s = s.buffer_timeout(t);
        }
        let mut s = s.rebalance().map("b", |x: u64| x);
        if let Some(t) = set("b") {
            s = s.buffer_timeout(t);
        }
        let mut s = s.map("c", |x: u64| x);
        if let Some(t) = set("c") {
            s = s.buffer_timeout(t);
        }
        s.rebalance().sink("sink", |_| Discard);
        job.into_plan()
    }

    fn ms(n: u64) -> BufferTimeout {
        BufferTimeout::Interval(Duration::from_millis(n))
    }

    #[test]
    fn an_operators_timeout_applies_to_the_exchanges_its_stage_sends_into() {
        let p = plan(&[("a", ms(0)), ("c", BufferTimeout::Disabled)]);
        let t = p
            .exchange_buffer_timeouts(&OperatorTimeouts::default())
            .expect("resolves");
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[&0], ms(0));
        assert_eq!(t[&1], BufferTimeout::Disabled);
        // The configuration names `a` too: it wins.
        let configured = OperatorTimeouts::parse("a=7ms").expect("parses");
        let t = p.exchange_buffer_timeouts(&configured).expect("resolves");
        assert_eq!(t[&0], ms(7));
        // An operator of the sink's stage: no exchange after it.
        let configured = OperatorTimeouts::parse("sink=7ms").expect("parses");
        let t = plan(&[])
            .exchange_buffer_timeouts(&configured)
            .expect("resolves");
        assert!(t.is_empty(), "{t:?}");
    }

    #[test]
    fn unknown_uids_and_conflicts_in_one_stage_are_errors() {
        let e = plan(&[])
            .exchange_buffer_timeouts(&OperatorTimeouts::parse("nope=1ms").expect("parses"))
            .unwrap_err();
        assert!(
            e.contains("names `nope`, which is not an operator of job `timeouts`")
                && e.contains("src, a, b, c, sink"),
            "{e}"
        );
        let e = plan(&[("b", ms(1)), ("c", ms(2))])
            .exchange_buffer_timeouts(&OperatorTimeouts::default())
            .unwrap_err();
        assert!(
            e.contains("run chained in stage") && e.contains("1ms") && e.contains("2ms"),
            "{e}"
        );
        // The same timeout twice in one stage is no conflict.
        assert!(plan(&[("b", ms(1)), ("c", ms(1))])
            .exchange_buffer_timeouts(&OperatorTimeouts::default())
            .is_ok());
    }

    #[test]
    fn a_stage_knows_the_stages_feeding_it_and_how() {
        // a ==REBALANCE==> b; c and e ==union (FORWARD)==> the union's
        // stage ==BROADCAST==> sink.
        let job = JobGraph::new("edges");
        job.source("a", |info| SequenceSource::new(info, 10, |i| i))
            .rebalance()
            .map("b", |x: u64| x)
            .sink("b-sink", |_| Discard);
        let c = job.source("c", |info| SequenceSource::new(info, 10, |i| i));
        let e = job.source("e", |info| SequenceSource::new(info, 10, |i| i));
        c.union(e)
            .map("u", |x: u64| x)
            .broadcast_all()
            .sink("sink", |_| Discard);
        let plan = job.into_plan();
        let names: Vec<&str> = plan.stages.iter().map(|s| s.name.as_str()).collect();
        let stage = |uid: &str| {
            names
                .iter()
                .position(|s| s.split(" -> ").any(|u| u == uid))
                .unwrap_or_else(|| panic!("no stage runs {uid}: {names:?}"))
        };
        let inputs = |uid: &str| plan.stage_inputs(stage(uid));
        assert_eq!(inputs("a"), [], "{names:?}");
        assert_eq!(inputs("b"), [(stage("a"), "REBALANCE")], "{names:?}");
        assert_eq!(
            inputs("u"),
            [(stage("c"), "FORWARD"), (stage("e"), "FORWARD")],
            "{names:?}"
        );
        assert_eq!(inputs("sink"), [(stage("u"), "BROADCAST")], "{names:?}");
    }
}
