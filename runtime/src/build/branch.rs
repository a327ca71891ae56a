//! Building the branches of a fork: the downstream chains a stream used more
//! than once (or an operator's side output) feeds inside its own task.
//!
//! A branch is built like a stage: its tail first, then its links back to
//! its head. Its head is a [`BranchHead`], which does not make a task but
//! leaves the chain it was handed (boxed) in the [`BuildContext`]; the
//! fork that builds its branches (`build_branches`) takes it from there.
//! The branches of a fork are added to a [`BranchList`] while the job is
//! built, after the stage holding the fork was, and read when each
//! subtask is built.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::build::stage::StageSpec;
use crate::chain::branch::{BoxedCollector, Tee};
use crate::chain::control::Collector;
use crate::chain::task::{Task, TaskPoll};

/// The branches of a fork, each under a tag: a fan-out's all under `""`,
/// an operator's side outputs under their [`OutputTag`](crate::operators::side_output::OutputTag)s' names.
#[derive(Clone, Default)]
pub struct BranchList(Arc<Mutex<Vec<Tagged>>>);

/// A branch's tag and spec.
type Tagged = (String, Arc<dyn StageSpec>);

impl BranchList {
    /// Adds a branch under `tag`.
    pub(crate) fn push(&self, tag: &str, spec: Arc<dyn StageSpec>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((tag.to_owned(), spec));
    }

    /// The branches under `tag`, in the order they were added.
    fn tagged(&self, tag: &str) -> Vec<Arc<dyn StageSpec>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(t, _)| t == tag)
            .map(|(_, s)| s.clone())
            .collect()
    }
}

/// Builds the chains of the branches under `tag` of `list` for the subtask
/// `ctx` builds.
pub(crate) fn build_branches<T: 'static>(
    ctx: &mut BuildContext<'_>,
    list: &BranchList,
    tag: &str,
) -> Result<Vec<BoxedCollector<T>>, BuildError> {
    let mut chains = Vec::new();
    for spec in list.tagged(tag) {
        ctx.branch = None;
        // The head leaves the chain in `ctx.branch`; its task is a stand-in.
        let _stand_in = spec.build(ctx)?;
        let chain = ctx
            .branch
            .take()
            .and_then(|b| b.downcast::<BoxedCollector<T>>().ok())
            .expect("a branch's head is a BranchHead of the fork's record type");
        chains.push(*chain);
    }
    Ok(chains)
}

/// The head of a branch: hands its chain to the fork (see the module docs).
pub struct BranchHead<T>(PhantomData<fn(T)>);

impl<T> Default for BranchHead<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: 'static> ChainBuilder<T> for BranchHead<T> {
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        ctx.branch = Some(Box::new(BoxedCollector::<T>::new(out)) as Box<dyn Any>);
        Ok(Box::new(StandIn))
    }
}

/// What a [`BranchHead`] returns as its task: never run.
struct StandIn;

impl Task for StandIn {
    fn poll(&mut self, _now: std::time::Instant) -> TaskPoll {
        unreachable!("a branch runs in its fork's task")
    }
    fn failure(&self) -> Option<&crate::chain::error::TaskError> {
        None
    }
    fn describe(&self) -> String {
        "branch".into()
    }
}

/// The tail of a stage whose stream fans out: a [`Tee`] over its branches.
pub(crate) struct TeeTail<T> {
    pub(crate) branches: BranchList,
    pub(crate) _record: PhantomData<fn(T)>,
}

impl<T: Clone + 'static> TailBuilder<T> for TeeTail<T> {
    type Tail = Tee<T>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Result<Self::Tail, BuildError> {
        Ok(Tee::new(build_branches(ctx, &self.branches, "")?))
    }
}
