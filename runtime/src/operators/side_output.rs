//! Side outputs (Flink's `OutputTag` and `Context.output`): an operator
//! emits records of another type, beside its main output, to streams a job
//! takes with [`Stream::get_side_output`](crate::api::stream::Stream::get_side_output).
//!
//! A function declares the side outputs it emits to as [`SideOutput`]
//! handles, made from [`OutputTag`]s, and lists them in its
//! `side_outputs` hook (as it lists its states in `visit_state`). When a
//! subtask is built, each listed handle is connected to the chains of the
//! streams the job took for its tag (a [`Tee`] if several; nothing if none,
//! and then what it emits is dropped, as Flink drops a side output nobody
//! reads). The side chains run in the operator's task: they see its
//! watermarks after the records it emitted before them, its barriers, its
//! end of input, in order with its main output ([`WithSides`]).
//!
//! An operator without side outputs is built as before: no handle, no
//! wrapper, nothing per record.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Instant;

use crate::build::branch::{build_branches, BranchList};
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::branch::{BoxedCollector, Tee};
use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::core::snapshot::TaskSnapshot;
use crate::core::time::earliest;

/// Names a side output of records of type `X` (Flink's `OutputTag`).
///
/// ```
/// use weir_runtime::OutputTag;
///
/// let late: OutputTag<(u64, i64)> = OutputTag::new("late-events");
/// assert_eq!(late.name(), "late-events");
/// ```
pub struct OutputTag<X> {
    name: String,
    _record: PhantomData<fn(X)>,
}

impl<X> OutputTag<X> {
    /// A tag named `name`: unique among one operator's side outputs.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            _record: PhantomData,
        }
    }

    /// The tag's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<X> Clone for OutputTag<X> {
    fn clone(&self) -> Self {
        Self::new(self.name.clone())
    }
}

impl<X> std::fmt::Debug for OutputTag<X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutputTag({})", self.name)
    }
}

/// The chains a side output feeds, once connected.
type Slot<X> = Rc<RefCell<Option<BoxedCollector<X>>>>;

/// A function's handle to emit to a side output (Flink's
/// `ctx.output(tag, value)`): make it with [`SideOutput::new`], list it in
/// the function's `side_outputs` hook, and call [`emit`](Self::emit).
/// Clones share the connection.
pub struct SideOutput<X> {
    tag: String,
    slot: Slot<X>,
}

impl<X> Clone for SideOutput<X> {
    fn clone(&self) -> Self {
        Self {
            tag: self.tag.clone(),
            slot: self.slot.clone(),
        }
    }
}

impl<X> SideOutput<X> {
    /// A handle for `tag`'s side output, connected when the subtask is
    /// built.
    pub fn new(tag: &OutputTag<X>) -> Self {
        Self {
            tag: tag.name.clone(),
            slot: Rc::new(RefCell::new(None)),
        }
    }

    /// Emits `record` to the side output: dropped if no stream reads it.
    #[inline]
    pub fn emit(&self, record: X) {
        if let Some(chain) = self.slot.borrow_mut().as_mut() {
            chain.collect(record);
        }
    }

    /// Whether a stream reads this side output.
    pub fn is_connected(&self) -> bool {
        self.slot.borrow().is_some()
    }
}

/// What a function's `side_outputs` hook is handed: connects its handles.
pub struct SideOutputs<'a, 'b> {
    target: Target<'a, 'b>,
    /// The connected side outputs, for their control calls.
    connected: Vec<Rc<dyn SideControl>>,
    error: Option<BuildError>,
}

/// What [`SideOutputs`] connects handles to.
enum Target<'a, 'b> {
    /// The streams the job took from the operator's side outputs.
    Job {
        ctx: &'a mut BuildContext<'b>,
        list: &'a BranchList,
    },
    /// Lists an operator test harness reads (feature `testing`).
    #[cfg(feature = "testing")]
    Collect(&'a mut CollectedSides),
}

impl<'a, 'b> SideOutputs<'a, 'b> {
    pub(crate) fn new(ctx: &'a mut BuildContext<'b>, list: &'a BranchList) -> Self {
        Self {
            target: Target::Job { ctx, list },
            connected: Vec::new(),
            error: None,
        }
    }

    /// Connects every handle to a list of its own in `sides`, which the
    /// operator test harness reads.
    #[cfg(feature = "testing")]
    pub(crate) fn collecting(sides: &'a mut CollectedSides) -> Self {
        Self {
            target: Target::Collect(sides),
            connected: Vec::new(),
            error: None,
        }
    }

    /// Connects `output` to the streams the job took for its tag.
    pub fn connect<X: Clone + 'static>(&mut self, output: &SideOutput<X>) {
        if self.error.is_some() {
            return;
        }
        let (ctx, list) = match &mut self.target {
            Target::Job { ctx, list } => (&mut **ctx, *list),
            #[cfg(feature = "testing")]
            Target::Collect(sides) => {
                let chain = sides.list_for::<X>(&output.tag);
                *output.slot.borrow_mut() = Some(chain);
                self.connected
                    .push(Rc::new(output.slot.clone()) as Rc<dyn SideControl>);
                return;
            }
        };
        let mut chains = match build_branches::<X>(ctx, list, &output.tag) {
            Ok(chains) => chains,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        let chain = match chains.len() {
            0 => return,
            1 => chains.pop().expect("one"),
            _ => BoxedCollector::new(Tee::new(chains)),
        };
        *output.slot.borrow_mut() = Some(chain);
        self.connected
            .push(Rc::new(output.slot.clone()) as Rc<dyn SideControl>);
    }

    /// The connected side outputs, or the error building one failed with.
    pub(crate) fn finish(self) -> Result<Vec<Rc<dyn SideControl>>, BuildError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.connected),
        }
    }
}

/// The side outputs of an operator under test (feature `testing`): one
/// list per tag, which the function's handles write into.
#[cfg(feature = "testing")]
#[derive(Default)]
pub struct CollectedSides {
    /// Per tag: its `Rc<RefCell<VecTail<X>>>`.
    lists: Vec<(String, Box<dyn std::any::Any>)>,
}

#[cfg(feature = "testing")]
impl CollectedSides {
    /// The chain of tag `tag`'s list, which is made on first use.
    fn list_for<X: 'static>(&mut self, tag: &str) -> BoxedCollector<X> {
        use crate::chain::testing::{SharedTail, VecTail};
        type List<X> = Rc<RefCell<VecTail<X>>>;
        let list: List<X> = match self.lists.iter().find(|(t, _)| t == tag) {
            Some((_, any)) => any
                .downcast_ref::<List<X>>()
                .unwrap_or_else(|| panic!("side output `{tag}` is listed with two record types"))
                .clone(),
            None => {
                let list: List<X> = Rc::new(RefCell::new(VecTail::default()));
                self.lists.push((tag.to_owned(), Box::new(list.clone())));
                list
            }
        };
        BoxedCollector::new(SharedTail(list))
    }

    /// Takes what was emitted to `tag`'s side output, in order; `None` if
    /// the function lists no side output of that tag and type.
    pub fn take<X: 'static>(&self, tag: &OutputTag<X>) -> Option<Vec<X>> {
        let (_, any) = self.lists.iter().find(|(t, _)| t == tag.name())?;
        let list = any.downcast_ref::<Rc<RefCell<crate::chain::testing::VecTail<X>>>>()?;
        Some(std::mem::take(&mut list.borrow_mut().items))
    }
}

/// The control calls of a connected side output (see [`ChainControl`]).
pub(crate) trait SideControl {
    fn with(&self, f: &mut dyn FnMut(&mut dyn ChainControl));
    fn available(&self) -> bool;
    fn pending(&self) -> bool;
    fn failed(&self) -> Option<TaskError>;
}

impl<X> SideControl for Slot<X> {
    fn with(&self, f: &mut dyn FnMut(&mut dyn ChainControl)) {
        if let Some(chain) = self.borrow_mut().as_mut() {
            f(chain);
        }
    }
    fn available(&self) -> bool {
        self.borrow().as_ref().is_none_or(|c| c.is_available())
    }
    fn pending(&self) -> bool {
        self.borrow().as_ref().is_some_and(|c| c.output_pending())
    }
    fn failed(&self) -> Option<TaskError> {
        self.borrow().as_ref().and_then(|c| c.failure().cloned())
    }
}

/// An operator's main output with its connected side outputs: records go
/// to the main output (the side outputs get theirs through their
/// handles), control calls to all, the main output first.
pub struct WithSides<C> {
    pub(crate) out: C,
    pub(crate) sides: Vec<Rc<dyn SideControl>>,
    /// Which outputs' `finish` returned true: the main one, then the sides.
    finished: Vec<bool>,
    /// A side output's failure, kept to be returned by reference.
    failure: Option<TaskError>,
}

impl<C> WithSides<C> {
    pub(crate) fn new(out: C, sides: Vec<Rc<dyn SideControl>>) -> Self {
        let finished = vec![false; sides.len() + 1];
        Self {
            out,
            sides,
            finished,
            failure: None,
        }
    }

    fn each(&self, mut f: impl FnMut(&mut dyn ChainControl)) {
        for s in &self.sides {
            s.with(&mut f);
        }
    }
}

impl<T, C: Collector<T>> Collector<T> for WithSides<C> {
    #[inline]
    fn collect(&mut self, record: T) {
        self.out.collect(record)
    }
}

impl<C: ChainControl> ChainControl for WithSides<C> {
    fn is_available(&self) -> bool {
        self.out.is_available() && self.sides.iter().all(|s| s.available())
    }
    fn flush(&mut self, now: Instant) -> FlushOutcome {
        let mut outcome = self.out.flush(now);
        self.each(|c| {
            let o = c.flush(now);
            outcome.progressed |= o.progressed;
            outcome.next_deadline = earliest(outcome.next_deadline, o.next_deadline);
        });
        self.note_side_failure();
        outcome
    }
    fn end_input(&mut self) {
        self.out.end_input();
        self.each(|c| c.end_input());
        self.note_side_failure();
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        self.out.snapshot(snapshot);
        self.each(|c| c.snapshot(snapshot));
        self.note_side_failure();
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id);
        self.each(|c| c.notify_checkpoint_complete(checkpoint_id));
        self.note_side_failure();
    }
    fn finish(&mut self) -> bool {
        if !self.finished[0] {
            self.finished[0] = self.out.finish();
        }
        for (s, done) in self.sides.iter().zip(&mut self.finished[1..]) {
            if !*done {
                let mut d = true;
                s.with(&mut |c| d = c.finish());
                *done = d;
            }
        }
        self.note_side_failure();
        self.finished.iter().all(|&d| d)
    }
    fn publish_metrics(&mut self) {
        self.out.publish_metrics();
        self.each(|c| c.publish_metrics());
    }
    fn output_pending(&self) -> bool {
        self.out.output_pending() || self.sides.iter().any(|s| s.pending())
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.out.on_watermark(watermark);
        self.each(|c| c.on_watermark(watermark));
    }
    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.out.on_watermark_status(status);
        self.each(|c| c.on_watermark_status(status));
    }
    /// Down the main output only: a marker exists once in the job.
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.out.on_latency_marker(marker);
    }
    fn failure(&self) -> Option<&TaskError> {
        if let Some(e) = self.out.failure() {
            return Some(e);
        }
        self.failure.as_ref()
    }
}

impl<C> WithSides<C> {
    /// Keeps the first failure of a side output, so that
    /// [`ChainControl::failure`] can return it by reference; called after
    /// every control call that may fail a side chain (its flush, snapshot,
    /// notification and finish).
    pub(crate) fn note_side_failure(&mut self) {
        if self.failure.is_none() {
            self.failure = self.sides.iter().find_map(|s| s.failed());
        }
    }
}
