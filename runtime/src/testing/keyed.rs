//! The keyed operator test harness: Flink's
//! `KeyedOneInputStreamOperatorTestHarness`, on weir's keyed process
//! operator.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use weir_state::{key_group_for_hash, KeyHash};

use crate::chain::control::{ChainControl, Collector};
use crate::chain::testing::VecTail;
use crate::core::duration::millis;
use crate::core::subtask::SubtaskInfo;
use crate::operators::keyed::base::make_keyed_function;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::keyed::op::{hooks, KeyedProcessOp};
use crate::operators::side_output::{CollectedSides, OutputTag, SideOutputs, WithSides};
use crate::state::key_context::KeyContext;
use crate::state::key_selector::KeySelector;
use crate::state::timers::TimeDomain;
use crate::testing::error::HarnessError;
use crate::testing::setup::HarnessSetup;
use crate::testing::snapshot::OperatorSnapshot;

/// Runs one subtask of a keyed process operator by hand: the real
/// operator (key context, keyed state, timers, TTL, end of input,
/// snapshots) around the function under test, fed records, watermarks
/// and processing time by the test, writing into a list the test reads.
///
/// - `process_element` hands the function a record with its key's
///   context, as after a `key_by`; the key must belong to the harness's
///   subtask (always, at parallelism 1).
/// - `process_watermark` advances event time: due event-time timers
///   fire in timestamp order, the function's `on_watermark` runs, and the
///   watermark is passed on ([`emitted_watermarks`](Self::emitted_watermarks)).
/// - `set_processing_time` moves the manual clock, which replaces the
///   clock of the function's timer service: due processing-time timers
///   fire (what a worker's poll does when the wall clock reaches them).
/// - `end_input` is the end of a bounded input: every event-time timer
///   fires, then `on_end_of_input`.
/// - what the function emits to its side outputs (the handles its
///   `side_outputs` lists) is kept per tag:
///   [`take_side_output`](Self::take_side_output);
/// - `snapshot` takes a checkpoint of the operator ([`OperatorSnapshot`]);
///   [`restore`](Self::restore) (or [`HarnessSetup::restore`]) makes a
///   new instance from it.
///
/// Window operators are keyed process functions: a harness runs one made
/// with [`Windowing::incremental`](crate::Windowing::incremental), e.g.
/// `TumblingEventTimeWindows::of(Duration::from_millis(10), ts).incremental::<u64, _>(AggregateFold(agg), lateness, None)`
/// (or [`WindowOperator::new`](crate::WindowOperator::new),
/// [`GeneralWindowOperator::new`](crate::GeneralWindowOperator::new)).
///
/// State with TTL keeps its own clock, not the harness's: build such
/// states with a [`ManualClock`](crate::ManualClock)
/// (`with_ttl_clock`) and move it along with the harness's time.
///
/// The function's states are its fields: read them through
/// [`function`](Self::function) with a [`key_context`](Self::key_context),
/// e.g. `harness.function().count.value(&harness.key_context(7))`. Its
/// state names are checked when it is made, as in a job with
/// checkpointing on: a state not listed by `visit_state` fails
/// [`new`](Self::new).
pub struct KeyedOperatorHarness<F: KeyedProcessFunction, KF> {
    op: KeyedProcessOp<F, KF, WithSides<VecTail<F::Out>>>,
    setup: HarnessSetup,
    /// The lists the function's side outputs write into.
    sides: CollectedSides,
    clock: Rc<Cell<i64>>,
    /// The id of the last snapshot taken (or restored).
    checkpoint_id: u64,
}

impl<F, KF> KeyedOperatorHarness<F, KF>
where
    F: KeyedProcessFunction,
    KF: KeySelector<F::In, Key = F::Key>,
{
    /// A harness of subtask 0 of 1 running the function `factory` makes,
    /// keyed by `key_fn` (see [`HarnessSetup`] for other setups).
    pub fn new(factory: impl FnOnce(&SubtaskInfo) -> F, key_fn: KF) -> Result<Self, HarnessError> {
        Self::with_setup(HarnessSetup::new(), factory, key_fn)
    }

    /// A harness of subtask 0 of 1 whose function `factory` makes and
    /// then restores from `snapshot` (its keyed states and timers, those
    /// of the key groups the subtask owns).
    pub fn restore(
        factory: impl FnOnce(&SubtaskInfo) -> F,
        key_fn: KF,
        snapshot: &OperatorSnapshot,
    ) -> Result<Self, HarnessError> {
        Self::with_setup(HarnessSetup::new().restore(snapshot), factory, key_fn)
    }

    /// A harness set up as `setup` says.
    pub fn with_setup(
        setup: HarnessSetup,
        factory: impl FnOnce(&SubtaskInfo) -> F,
        key_fn: KF,
    ) -> Result<Self, HarnessError> {
        let built =
            make_keyed_function(&setup.site("keyed operator"), factory, hooks::<F>(), |_| {
                Ok(())
            })?;
        let mut func = built.func;
        let clock = Rc::new(Cell::new(setup.processing_time));
        if let Some(timers) = func.timer_service() {
            let c = clock.clone();
            timers.set_processing_time_clock(Box::new(move || c.get()));
        }
        let mut sides = CollectedSides::default();
        let mut outputs = SideOutputs::collecting(&mut sides);
        func.side_outputs(&mut outputs);
        let out = WithSides::new(VecTail::default(), outputs.finish()?);
        let op = KeyedProcessOp::new(
            func,
            key_fn,
            out,
            &setup.uid,
            &setup.info,
            built.input_ended,
        );
        let checkpoint_id = setup.restore.as_ref().map_or(0, |s| s.checkpoint_id());
        Ok(Self {
            op,
            setup,
            sides,
            clock,
            checkpoint_id,
        })
    }

    /// Processes one record (Flink's `processElement`).
    ///
    /// # Panics
    ///
    /// If the record's key belongs to another subtask (a `key_by` would
    /// never send it here; see [`owns_key`](Self::owns_key)).
    pub fn process_element(&mut self, record: F::In) {
        let key = self.op.key_fn().key(&record);
        assert!(
            self.owns_key(&key),
            "the record's key belongs to key group {} which subtask {} of {} does not own",
            key_group_for_hash(key.key_hash(), self.setup.info.max_parallelism),
            self.setup.info.index,
            self.setup.info.parallelism
        );
        self.op.collect(record);
    }

    /// Processes `records` in order.
    pub fn process_elements(&mut self, records: impl IntoIterator<Item = F::In>) {
        for record in records {
            self.process_element(record);
        }
    }

    /// Whether `key` belongs to a key group of this subtask.
    pub fn owns_key(&self, key: &F::Key) -> bool {
        let (range, max_parallelism) = self.op.key_groups();
        range.contains(key_group_for_hash(key.key_hash(), max_parallelism))
    }

    /// Event time advances to `watermark` (Flink's `processWatermark`):
    /// the event-time timers at or before it fire, then the function's
    /// `on_watermark`, then the watermark is passed on. A watermark that
    /// does not advance does nothing.
    pub fn process_watermark(&mut self, watermark: i64) {
        self.op.on_watermark(watermark);
    }

    /// The operator's current watermark (`i64::MIN` before the first).
    pub fn current_watermark(&self) -> i64 {
        self.op.current_watermark()
    }

    /// Sets the processing time (ms) and fires the processing-time timers
    /// it reached, in time order (Flink's `setProcessingTime`).
    pub fn set_processing_time(&mut self, ms: i64) {
        self.clock.set(ms);
        self.op.flush(Instant::now());
    }

    /// Moves the processing time forward by `by` (see
    /// [`set_processing_time`](Self::set_processing_time)).
    ///
    /// # Panics
    ///
    /// If `by` is not a whole number of milliseconds.
    pub fn advance_processing_time(&mut self, by: Duration) {
        let by = millis("KeyedOperatorHarness: processing time step", by);
        self.set_processing_time(self.clock.get().saturating_add(by));
    }

    /// The current processing time (ms) of the manual clock.
    pub fn processing_time(&self) -> i64 {
        self.clock.get()
    }

    /// The input ended: every event-time timer fires, then the function's
    /// `on_end_of_input` (once: also not after a restore of a snapshot
    /// taken after it). Processing-time timers no longer fire.
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

    /// Takes what the operator emitted so far, in order (Flink's
    /// `extractOutputValues`, clearing the output).
    pub fn take_output(&mut self) -> Vec<F::Out> {
        std::mem::take(&mut self.op.output_mut().out.items)
    }

    /// The watermarks the operator passed on, in order.
    pub fn emitted_watermarks(&self) -> &[i64] {
        &self.op.output().out.watermarks
    }

    /// The function's registered event-time timers as `(timestamp, key)`,
    /// in the order they fire.
    pub fn event_time_timers(&mut self) -> Vec<(i64, F::Key)> {
        self.timers(TimeDomain::EventTime)
    }

    /// The function's registered processing-time timers as
    /// `(timestamp, key)`, in the order they fire.
    pub fn processing_time_timers(&mut self) -> Vec<(i64, F::Key)> {
        self.timers(TimeDomain::ProcessingTime)
    }

    fn timers(&mut self, domain: TimeDomain) -> Vec<(i64, F::Key)> {
        self.op
            .function_mut()
            .timer_service()
            .map_or_else(Vec::new, |t| t.registered(domain))
    }

    /// The context of `key` at the operator's watermark: what the
    /// function's states are read and written with.
    pub fn key_context(&self, key: F::Key) -> KeyContext<F::Key> {
        KeyContext::with_watermark(key, self.op.current_watermark())
    }

    /// The function under test (its states are its fields).
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

    /// Takes a snapshot of the operator, as checkpoint barrier
    /// `n + 1` after the last snapshot `n` would (Flink's `snapshot`):
    /// its keyed states, timers and end-of-input flag, written and read
    /// back as a checkpoint.
    pub fn snapshot(&mut self) -> Result<OperatorSnapshot, HarnessError> {
        self.checkpoint_id += 1;
        let (uid, info) = (self.setup.uid.clone(), self.setup.info);
        OperatorSnapshot::take(&mut self.op, &uid, &info, self.checkpoint_id)
    }

    /// Checkpoint `id` is complete (Flink's `notifyOfCompletedCheckpoint`).
    pub fn notify_checkpoint_complete(&mut self, id: u64) {
        self.op.notify_checkpoint_complete(id);
    }
}
