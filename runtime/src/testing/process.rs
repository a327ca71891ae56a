//! The non-keyed operator test harness: Flink's
//! `OneInputStreamOperatorTestHarness`, on weir's process operator.

use crate::chain::control::{ChainControl, Collector};
use crate::chain::testing::VecTail;
use crate::core::subtask::SubtaskInfo;
use crate::operators::process::{make_process_function, ProcessFunction, ProcessOp};
use crate::operators::side_output::{CollectedSides, OutputTag, SideOutputs, WithSides};
use crate::testing::error::HarnessError;
use crate::testing::setup::HarnessSetup;
use crate::testing::snapshot::OperatorSnapshot;

/// Runs one subtask of a non-keyed process operator by hand: the real
/// operator around the [`ProcessFunction`] under test, with its operator
/// state, `initialize_state` after a restore, `snapshot_state` at a
/// snapshot and the end-of-input flag; what it emits to its side outputs
/// is kept per tag ([`take_side_output`](Self::take_side_output)).
/// Restoring a merged snapshot (see
/// [`OperatorSnapshot::merge`]) at another parallelism redistributes its
/// list states as a job does (even split or union).
pub struct ProcessOperatorHarness<F: ProcessFunction> {
    op: ProcessOp<F, WithSides<VecTail<F::Out>>>,
    setup: HarnessSetup,
    /// The lists the function's side outputs write into.
    sides: CollectedSides,
    checkpoint_id: u64,
}

impl<F: ProcessFunction> ProcessOperatorHarness<F> {
    /// A harness of subtask 0 of 1 running the function `factory` makes.
    pub fn new(factory: impl FnOnce(&SubtaskInfo) -> F) -> Result<Self, HarnessError> {
        Self::with_setup(HarnessSetup::new(), factory)
    }

    /// A harness of subtask 0 of 1 whose function `factory` makes and then
    /// restores from `snapshot` (all of its list states).
    pub fn restore(
        factory: impl FnOnce(&SubtaskInfo) -> F,
        snapshot: &OperatorSnapshot,
    ) -> Result<Self, HarnessError> {
        Self::with_setup(HarnessSetup::new().restore(snapshot), factory)
    }

    /// A harness set up as `setup` says.
    pub fn with_setup(
        setup: HarnessSetup,
        factory: impl FnOnce(&SubtaskInfo) -> F,
    ) -> Result<Self, HarnessError> {
        let (mut func, input_ended) =
            make_process_function(&setup.site("process operator"), factory)?;
        let mut sides = CollectedSides::default();
        let mut outputs = SideOutputs::collecting(&mut sides);
        func.side_outputs(&mut outputs);
        let out = WithSides::new(VecTail::default(), outputs.finish()?);
        let op = ProcessOp::new(func, out, &setup.uid, &setup.info, input_ended);
        let checkpoint_id = setup.restore.as_ref().map_or(0, |s| s.checkpoint_id());
        Ok(Self {
            op,
            setup,
            sides,
            checkpoint_id,
        })
    }

    /// Processes one record.
    pub fn process_element(&mut self, record: F::In) {
        self.op.collect(record);
    }

    /// Processes `records` in order.
    pub fn process_elements(&mut self, records: impl IntoIterator<Item = F::In>) {
        for record in records {
            self.op.collect(record);
        }
    }

    /// Event time advances to `watermark`; the operator passes it on.
    pub fn process_watermark(&mut self, watermark: i64) {
        self.op.on_watermark(watermark);
    }

    /// The operator's current watermark (`i64::MIN` before the first).
    pub fn current_watermark(&self) -> i64 {
        self.op.current_watermark()
    }

    /// The input ended: the function's `on_end_of_input` runs (once).
    pub fn end_input(&mut self) {
        self.op.end_input();
    }

    /// Whether the input ended (here, or before the restored snapshot).
    pub fn input_ended(&self) -> bool {
        self.op.input_ended()
    }

    /// What the operator emitted so far and not taken, in order.
    pub fn output(&self) -> &[F::Out] {
        &self.op.output().out.items
    }

    /// Takes what the operator emitted so far, in order.
    pub fn take_output(&mut self) -> Vec<F::Out> {
        std::mem::take(&mut self.op.output_mut().out.items)
    }

    /// The watermarks the operator passed on, in order.
    pub fn emitted_watermarks(&self) -> &[i64] {
        &self.op.output().out.watermarks
    }

    /// The function under test.
    pub fn function(&self) -> &F {
        self.op.function()
    }

    /// The function under test, to change.
    pub fn function_mut(&mut self) -> &mut F {
        self.op.function_mut()
    }

    /// The subtask the operator runs as.
    pub fn subtask(&self) -> SubtaskInfo {
        self.setup.info
    }

    /// Takes what the function emitted to side output `tag` so far, in
    /// order (Flink's `getSideOutput`).
    ///
    /// # Panics
    ///
    /// If the function's `side_outputs` lists no handle of that tag and
    /// record type.
    pub fn take_side_output<X: 'static>(&mut self, tag: &OutputTag<X>) -> Vec<X> {
        self.sides.take(tag).unwrap_or_else(|| {
            panic!(
                "the function lists no side output `{}` of this record type in `side_outputs`",
                tag.name()
            )
        })
    }

    /// Takes a snapshot of the operator as the next checkpoint: runs the
    /// function's `snapshot_state`, then writes its list states and
    /// end-of-input flag and reads them back as a checkpoint.
    pub fn snapshot(&mut self) -> Result<OperatorSnapshot, HarnessError> {
        self.checkpoint_id += 1;
        let (uid, info) = (self.setup.uid.clone(), self.setup.info);
        OperatorSnapshot::take(&mut self.op, &uid, &info, self.checkpoint_id)
    }

    /// Checkpoint `id` is complete: the function's
    /// `notify_checkpoint_complete` runs.
    pub fn notify_checkpoint_complete(&mut self, id: u64) {
        self.op.notify_checkpoint_complete(id);
    }
}
