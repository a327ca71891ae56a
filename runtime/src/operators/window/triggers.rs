//! Flink's built-in triggers: [`EventTimeTrigger`] and
//! [`ProcessingTimeTrigger`] (the defaults of event-time and
//! processing-time windows), [`CountTrigger`],
//! [`ContinuousEventTimeTrigger`], [`ContinuousProcessingTimeTrigger`],
//! [`PurgingTrigger`] and [`NeverTrigger`], each as Flink's class of the
//! same name behaves (see [`trigger`](super::trigger) for the contract).
//!
//! Java's `%` truncates towards zero, as Rust's does: the continuous
//! triggers align their first firing to the interval as Flink does, also
//! for negative times.

use std::time::Duration;

use crate::core::duration::positive_millis;
use crate::operators::window::spec::TimeWindow;
use crate::operators::window::trigger::{
    NoState, OnMergeContext, Trigger, TriggerContext, TriggerResult,
};

/// Fires a window once the watermark passes its end (at its
/// `max_timestamp`), and at once for an element added after that (a late
/// firing within the allowed lateness). The default trigger of event-time
/// windows (Flink's `EventTimeTrigger`).
#[derive(Clone, Copy, Debug, Default)]
pub struct EventTimeTrigger;

impl EventTimeTrigger {
    /// The trigger (Flink's `EventTimeTrigger.create()`).
    pub fn create() -> Self {
        Self
    }
}

impl<T> Trigger<T> for EventTimeTrigger {
    type State = NoState;

    #[inline]
    fn on_element(
        &self,
        _: &T,
        _: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        if window.max_timestamp() <= ctx.current_watermark() {
            // The watermark passed the window: fire at once.
            TriggerResult::Fire
        } else {
            ctx.register_event_time_timer(window.max_timestamp());
            TriggerResult::Continue
        }
    }

    #[inline]
    fn on_event_time(
        &self,
        time: i64,
        window: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        if time == window.max_timestamp() {
            TriggerResult::Fire
        } else {
            TriggerResult::Continue
        }
    }

    fn on_processing_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&self, window: &TimeWindow, ctx: &mut OnMergeContext<'_, NoState>) {
        // Only if the watermark has not passed the merged window: else
        // `on_element` fires it, and a timer would fire it twice.
        if window.max_timestamp() > ctx.current_watermark() {
            ctx.register_event_time_timer(window.max_timestamp());
        }
    }

    #[inline]
    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_, NoState>) {
        ctx.delete_event_time_timer(window.max_timestamp());
    }
}

/// Fires a window once the processing-time clock passes its end. The
/// default trigger of processing-time windows (Flink's
/// `ProcessingTimeTrigger`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessingTimeTrigger;

impl ProcessingTimeTrigger {
    /// The trigger (Flink's `ProcessingTimeTrigger.create()`).
    pub fn create() -> Self {
        Self
    }
}

impl<T> Trigger<T> for ProcessingTimeTrigger {
    type State = NoState;

    #[inline]
    fn on_element(
        &self,
        _: &T,
        _: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        ctx.register_processing_time_timer(window.max_timestamp());
        TriggerResult::Continue
    }

    fn on_event_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    #[inline]
    fn on_processing_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        TriggerResult::Fire
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&self, window: &TimeWindow, ctx: &mut OnMergeContext<'_, NoState>) {
        if window.max_timestamp() > ctx.current_processing_time() {
            ctx.register_processing_time_timer(window.max_timestamp());
        }
    }

    #[inline]
    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_, NoState>) {
        ctx.delete_processing_time_timer(window.max_timestamp());
    }
}

/// Fires a window every `n` elements (Flink's `CountTrigger`): its state
/// is the count since the last firing, summed when sessions merge (a
/// merged session fires at its next element once the sum reached `n`).
#[derive(Clone, Copy, Debug)]
pub struct CountTrigger {
    max: u64,
}

impl CountTrigger {
    /// Fires once a window holds `n` elements more than at its last firing
    /// (Flink's `CountTrigger.of(n)`).
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    pub fn of(n: u64) -> Self {
        assert!(n > 0, "CountTrigger: the count must be positive");
        Self { max: n }
    }
}

impl<T> Trigger<T> for CountTrigger {
    type State = u64;

    #[inline]
    fn on_element(
        &self,
        _: &T,
        _: i64,
        _: &TimeWindow,
        ctx: &mut TriggerContext<'_, u64>,
    ) -> TriggerResult {
        let count = ctx.state();
        *count += 1;
        if *count >= self.max {
            *count = 0;
            TriggerResult::Fire
        } else {
            TriggerResult::Continue
        }
    }

    fn on_event_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, u64>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_processing_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, u64>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&self, _: &TimeWindow, ctx: &mut OnMergeContext<'_, u64>) {
        let sum = ctx.merged_states().iter().sum();
        *ctx.state() = sum;
    }

    fn clear(&self, _: &TimeWindow, ctx: &mut TriggerContext<'_, u64>) {
        *ctx.state() = 0;
    }
}

/// Fires a window every `interval` of event time while it is open, and
/// when the watermark passes its end (Flink's `ContinuousEventTimeTrigger`):
/// early results. Its state is the next early firing (the earliest one
/// when sessions merge).
#[derive(Clone, Copy, Debug)]
pub struct ContinuousEventTimeTrigger {
    interval: i64,
}

impl ContinuousEventTimeTrigger {
    /// Fires every `interval` of event time (Flink's
    /// `ContinuousEventTimeTrigger.of(interval)`).
    ///
    /// # Panics
    ///
    /// If the interval is zero or not a whole number of milliseconds.
    pub fn of(interval: Duration) -> Self {
        Self {
            interval: positive_millis("ContinuousEventTimeTrigger: interval", interval),
        }
    }

    /// Sets and registers the firing after `time`, at the latest at the
    /// window's end.
    fn register_next(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Option<i64>>,
    ) {
        let next = time
            .saturating_add(self.interval)
            .min(window.max_timestamp());
        *ctx.state() = Some(next);
        ctx.register_event_time_timer(next);
    }
}

impl<T> Trigger<T> for ContinuousEventTimeTrigger {
    type State = Option<i64>;

    fn on_element(
        &self,
        _: &T,
        timestamp: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Option<i64>>,
    ) -> TriggerResult {
        if window.max_timestamp() <= ctx.current_watermark() {
            return TriggerResult::Fire;
        }
        ctx.register_event_time_timer(window.max_timestamp());
        if ctx.state().is_none() {
            self.register_next(timestamp - timestamp % self.interval, window, ctx);
        }
        TriggerResult::Continue
    }

    fn on_event_time(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Option<i64>>,
    ) -> TriggerResult {
        if time == window.max_timestamp() {
            return TriggerResult::Fire;
        }
        if *ctx.state() == Some(time) {
            self.register_next(time, window, ctx);
            return TriggerResult::Fire;
        }
        TriggerResult::Continue
    }

    fn on_processing_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, Option<i64>>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&self, _: &TimeWindow, ctx: &mut OnMergeContext<'_, Option<i64>>) {
        let next = ctx.merged_states().iter().flatten().copied().min();
        *ctx.state() = next;
        if let Some(next) = next {
            ctx.register_event_time_timer(next);
        }
    }

    fn clear(&self, _: &TimeWindow, ctx: &mut TriggerContext<'_, Option<i64>>) {
        if let Some(next) = ctx.state().take() {
            ctx.delete_event_time_timer(next);
        }
    }
}

/// Fires a window every `interval` of processing time, from the first
/// element on, the last time at its end (Flink's
/// `ContinuousProcessingTimeTrigger`).
#[derive(Clone, Copy, Debug)]
pub struct ContinuousProcessingTimeTrigger {
    interval: i64,
}

impl ContinuousProcessingTimeTrigger {
    /// Fires every `interval` of processing time (Flink's
    /// `ContinuousProcessingTimeTrigger.of(interval)`).
    ///
    /// # Panics
    ///
    /// If the interval is zero or not a whole number of milliseconds.
    pub fn of(interval: Duration) -> Self {
        Self {
            interval: positive_millis("ContinuousProcessingTimeTrigger: interval", interval),
        }
    }

    fn register_next(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Option<i64>>,
    ) {
        let next = time
            .saturating_add(self.interval)
            .min(window.max_timestamp());
        *ctx.state() = Some(next);
        ctx.register_processing_time_timer(next);
    }
}

impl<T> Trigger<T> for ContinuousProcessingTimeTrigger {
    type State = Option<i64>;

    fn on_element(
        &self,
        _: &T,
        _: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Option<i64>>,
    ) -> TriggerResult {
        if ctx.state().is_none() {
            let now = ctx.current_processing_time();
            self.register_next(now - now % self.interval, window, ctx);
        }
        TriggerResult::Continue
    }

    fn on_event_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, Option<i64>>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_processing_time(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Option<i64>>,
    ) -> TriggerResult {
        if *ctx.state() == Some(time) {
            self.register_next(time, window, ctx);
            return TriggerResult::Fire;
        }
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&self, _: &TimeWindow, ctx: &mut OnMergeContext<'_, Option<i64>>) {
        let next = ctx.merged_states().iter().flatten().copied().min();
        *ctx.state() = next;
        if let Some(next) = next {
            ctx.register_processing_time_timer(next);
        }
    }

    fn clear(&self, _: &TimeWindow, ctx: &mut TriggerContext<'_, Option<i64>>) {
        if let Some(next) = ctx.state().take() {
            ctx.delete_processing_time_timer(next);
        }
    }
}

/// Turns every firing of the trigger it wraps into a firing and purge
/// (Flink's `PurgingTrigger`): each firing emits only what came since the
/// last one.
#[derive(Clone, Copy, Debug)]
pub struct PurgingTrigger<Tr> {
    nested: Tr,
}

impl<Tr> PurgingTrigger<Tr> {
    /// `nested`, purging whenever it fires (Flink's `PurgingTrigger.of`).
    pub fn of(nested: Tr) -> Self {
        Self { nested }
    }
}

#[inline]
fn purging(result: TriggerResult) -> TriggerResult {
    if result.is_fire() {
        TriggerResult::FireAndPurge
    } else {
        result
    }
}

impl<T, Tr: Trigger<T>> Trigger<T> for PurgingTrigger<Tr> {
    type State = Tr::State;

    #[inline]
    fn on_element(
        &self,
        element: &T,
        timestamp: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Tr::State>,
    ) -> TriggerResult {
        purging(self.nested.on_element(element, timestamp, window, ctx))
    }

    fn on_event_time(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Tr::State>,
    ) -> TriggerResult {
        purging(self.nested.on_event_time(time, window, ctx))
    }

    fn on_processing_time(
        &self,
        time: i64,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_, Tr::State>,
    ) -> TriggerResult {
        purging(self.nested.on_processing_time(time, window, ctx))
    }

    fn can_merge(&self) -> bool {
        self.nested.can_merge()
    }

    fn on_merge(&self, window: &TimeWindow, ctx: &mut OnMergeContext<'_, Tr::State>) {
        self.nested.on_merge(window, ctx);
    }

    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_, Tr::State>) {
        self.nested.clear(window, ctx);
    }
}

/// Never fires (Flink's `GlobalWindows.NeverTrigger`): windows are only
/// cleaned up. Useful under a [`PurgingTrigger`] or as a placeholder.
#[derive(Clone, Copy, Debug, Default)]
pub struct NeverTrigger;

impl<T> Trigger<T> for NeverTrigger {
    type State = NoState;

    fn on_element(
        &self,
        _: &T,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_event_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_processing_time(
        &self,
        _: i64,
        _: &TimeWindow,
        _: &mut TriggerContext<'_, NoState>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&self, _: &TimeWindow, _: &mut OnMergeContext<'_, NoState>) {}

    fn clear(&self, _: &TimeWindow, _: &mut TriggerContext<'_, NoState>) {}
}
