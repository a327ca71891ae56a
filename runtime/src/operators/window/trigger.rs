//! Flink's `Trigger`: decides when a window fires and when its contents
//! are purged, from the elements added to it and from timers it registers.
//!
//! The general window operator ([`GeneralWindowOperator`](super::GeneralWindowOperator))
//! calls a trigger for one `(key, window)` at a time, as Flink's
//! `WindowOperator` does:
//!
//! - [`on_element`](Trigger::on_element) for every element added to the
//!   window (after a merge, to the merged window);
//! - [`on_event_time`](Trigger::on_event_time) /
//!   [`on_processing_time`](Trigger::on_processing_time) when a timer the
//!   trigger (or the operator's cleanup) registered for the window fires;
//! - [`on_merge`](Trigger::on_merge) when session windows merge, for the
//!   merged window, with the trigger states of the windows it replaces;
//! - [`clear`](Trigger::clear) when a window goes: at its cleanup time
//!   (the end of the window plus the allowed lateness) and for each window
//!   merged away. It must delete the timers the trigger registered.
//!
//! Each call returns a [`TriggerResult`]: `Continue`, `Fire` (emit the
//! window's contents through the window function), `Purge` (drop them),
//! or `FireAndPurge`. A window that fires with no contents (purged
//! before) emits nothing.
//!
//! **State and timers.** A trigger keeps nothing in itself (it is shared by
//! every key and window of a subtask): what it remembers per `(key,
//! window)` is its [`State`](Trigger::State), one value the operator
//! stores with the window ([`TriggerContext::state`], Flink's
//! `getPartitionedState`), and its timers, which are namespaced by the
//! window like Flink's (`(key, window, time)`, deduplicated). Both are in
//! the operator's keyed state: checkpointed, restored and rescaled with
//! their key groups like the window contents.
//!
//! **Cost.** A trigger is a type parameter of the operator: its calls are
//! monomorphised and inlined. Timer requests go into a small buffer the
//! operator applies after the call (no dynamic call per record).

use std::ops::{Deref, DerefMut};

use weir_net::{DecodeError, Wire};
use weir_state::StateValue;

use crate::operators::window::spec::TimeWindow;
use crate::operators::window::timers::TimerOp;
use crate::state::timers::TimeDomain;

/// What a trigger tells the window operator to do with a window (Flink's
/// `TriggerResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TriggerResult {
    /// Nothing.
    Continue,
    /// Emit the window's contents (they stay).
    Fire,
    /// Drop the window's contents without emitting them (the window, its
    /// trigger state and timers stay until its cleanup).
    Purge,
    /// Emit the window's contents, then drop them.
    FireAndPurge,
}

impl TriggerResult {
    /// Whether the window fires.
    #[inline]
    pub fn is_fire(self) -> bool {
        matches!(self, TriggerResult::Fire | TriggerResult::FireAndPurge)
    }

    /// Whether the window's contents are purged.
    #[inline]
    pub fn is_purge(self) -> bool {
        matches!(self, TriggerResult::Purge | TriggerResult::FireAndPurge)
    }
}

/// The state of a trigger that keeps none: zero bytes in checkpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoState;

impl Wire for NoState {
    const FIXED_LEN: Option<usize> = Some(0);

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        0
    }

    #[inline(always)]
    fn write(&self, _: &mut [u8]) {}

    #[inline(always)]
    fn read(_: &[u8]) -> Result<(Self, usize), DecodeError> {
        Ok((NoState, 0))
    }
}

/// What a trigger sees of the operator during a call (Flink's
/// `Trigger.TriggerContext`), for the current key and window: the time,
/// its state for the window, and the window's timers.
pub struct TriggerContext<'a, S> {
    watermark: i64,
    clock: &'a dyn Fn() -> i64,
    state: &'a mut S,
    timers: &'a mut Vec<TimerOp>,
}

impl<'a, S> TriggerContext<'a, S> {
    /// The context of a call at watermark `watermark`, with processing
    /// time `clock`, the window's trigger state `state`, and `timers`
    /// collecting the timer requests.
    pub(crate) fn new(
        watermark: i64,
        clock: &'a dyn Fn() -> i64,
        state: &'a mut S,
        timers: &'a mut Vec<TimerOp>,
    ) -> Self {
        Self {
            watermark,
            clock,
            state,
            timers,
        }
    }

    /// The operator's current watermark (`i64::MIN` before the first).
    #[inline]
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The current processing time (ms since the epoch, by the operator's
    /// clock).
    #[inline]
    pub fn current_processing_time(&self) -> i64 {
        (self.clock)()
    }

    /// The trigger's state for the current key and window (Flink's
    /// `getPartitionedState`): its type's `Default` until set; dropped
    /// with the window.
    #[inline]
    pub fn state(&mut self) -> &mut S {
        self.state
    }

    /// Registers an event-time timer at `time` for the window: the
    /// trigger's `on_event_time` runs once the watermark reaches it.
    #[inline]
    pub fn register_event_time_timer(&mut self, time: i64) {
        self.timers
            .push(TimerOp::Register(TimeDomain::EventTime, time));
    }

    /// Registers a processing-time timer at `time` for the window: the
    /// trigger's `on_processing_time` runs once the clock passes it (as
    /// Flink's timers, at `time + 1` ms).
    #[inline]
    pub fn register_processing_time_timer(&mut self, time: i64) {
        self.timers
            .push(TimerOp::Register(TimeDomain::ProcessingTime, time));
    }

    /// Deletes the window's event-time timer at `time`, if any.
    #[inline]
    pub fn delete_event_time_timer(&mut self, time: i64) {
        self.timers
            .push(TimerOp::Delete(TimeDomain::EventTime, time));
    }

    /// Deletes the window's processing-time timer at `time`, if any.
    #[inline]
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        self.timers
            .push(TimerOp::Delete(TimeDomain::ProcessingTime, time));
    }
}

/// What [`Trigger::on_merge`] sees (Flink's `OnMergeContext`): the
/// context of the merged window, whose [`state`](TriggerContext::state)
/// starts at its `Default`, and the states of the windows merged into it.
pub struct OnMergeContext<'a, S> {
    ctx: TriggerContext<'a, S>,
    merged: &'a [S],
}

impl<'a, S> OnMergeContext<'a, S> {
    pub(crate) fn new(ctx: TriggerContext<'a, S>, merged: &'a [S]) -> Self {
        Self { ctx, merged }
    }

    /// The trigger states of the windows merged into this one (Flink's
    /// `mergePartitionedState` combines them; here the trigger does, e.g.
    /// a count trigger sums them into [`state`](TriggerContext::state)).
    pub fn merged_states(&self) -> &'a [S] {
        self.merged
    }
}

impl<'a, S> Deref for OnMergeContext<'a, S> {
    type Target = TriggerContext<'a, S>;

    fn deref(&self) -> &Self::Target {
        &self.ctx
    }
}

impl<S> DerefMut for OnMergeContext<'_, S> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.ctx
    }
}

/// Decides when a window fires and purges (Flink's `Trigger`; see the
/// [module docs](self)). Set one with
/// [`WindowedStream::trigger`](crate::api::window::WindowedStream::trigger);
/// the default is the assigner's ([`EventTimeTrigger`](super::EventTimeTrigger)
/// for event-time windows, [`ProcessingTimeTrigger`](super::ProcessingTimeTrigger)
/// for processing-time ones).
///
/// `timestamp` is the element's event time; on processing-time windows
/// elements have none, and it is `i64::MIN` (Flink's value for a record
/// without a timestamp).
pub trait Trigger<T>: Clone + Send + Sync + 'static {
    /// What the trigger remembers per `(key, window)` (e.g. a count), kept
    /// with the window; [`NoState`] if nothing.
    type State: StateValue + Wire;

    /// An element was added to `window`.
    fn on_element(
        &self,
        element: &T,
        timestamp: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Self::State>,
    ) -> TriggerResult;

    /// An event-time timer at `time` the trigger (or the window's cleanup)
    /// registered for `window` fired.
    fn on_event_time(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Self::State>,
    ) -> TriggerResult;

    /// A processing-time timer at `time` registered for `window` fired.
    fn on_processing_time(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Self::State>,
    ) -> TriggerResult;

    /// Whether the trigger supports merging windows (sessions): a
    /// windowed stream of session windows refuses a trigger that does not.
    fn can_merge(&self) -> bool {
        false
    }

    /// Windows merged into `window`: set its state from
    /// [`merged_states`](OnMergeContext::merged_states) and register its
    /// timers. The merged windows are then [`clear`](Self::clear)ed.
    ///
    /// # Panics
    ///
    /// By default: a trigger that cannot merge is never asked to.
    fn on_merge(&self, window: &TimeWindow, ctx: &mut OnMergeContext<'_, Self::State>) {
        let _ = (window, ctx);
        panic!("this trigger does not support merging windows");
    }

    /// `window` goes (cleaned up, or merged into another): delete the
    /// timers the trigger registered for it. Its state is dropped after.
    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_, Self::State>);
}
