//! The general window operator: every window kind (fixed and session, on
//! event or processing time) with every window function (incremental
//! aggregation, with or without a window function, and full-window process
//! functions), Flink's `WindowOperator` with its default triggers.
//!
//! **Window set.** Per key, the open windows in a [`KeyedMapState`] named
//! [`WINDOWS_STATE`]: window start `->` `(end, state id, contents)`. The
//! *state id* names where the window's contents live (Flink's "state
//! window" of `MergingWindowSet`): a fixed window's is its start; a
//! session's is the start of one of the sessions it merged, which always
//! lies inside it, so the ids of a key's (disjoint) sessions differ. The
//! contents are the accumulator (incremental aggregation,
//! [`Accumulated`](super::Accumulated)) or the element count (full-window
//! functions, [`Buffered`](super::Buffered), whose elements are in a
//! second map state keyed by `(state id, index)`; see
//! [`contents`](super::contents)). All of it is arena-backed keyed state, written per
//! key group by checkpoints, so windows survive failover and rescaling.
//!
//! **Assigning.** A record goes to the windows of its time: its timestamp
//! (event time) or the operator's clock (processing time). For fixed
//! windows those of the assigner's size and slide holding it; a session
//! record opens `[t, t + gap)`, which merges with every session of its key
//! it intersects (overlaps or touches, as Flink's `TimeWindow::intersects`)
//! into their cover: the contents of the merged sessions are merged into
//! the largest one's ([`WindowContents::merge`]: `AggregateFunction::merge`,
//! the reduce function, or appending the elements), their timers deleted
//! and the merged session's registered.
//!
//! **Firing (Flink's `EventTimeTrigger` / `ProcessingTimeTrigger`).** A
//! window fires at a timer of its time domain: on event time when the
//! watermark reaches its `end - 1`, on processing time when the clock
//! reaches its `end` (Flink fires processing-time timers 1 ms after their
//! time, `end - 1`, so no record of the last millisecond is left out). On event
//! time a window is kept for the allowed lateness `L` more (its cleanup
//! timer is at `end - 1 + L`), and a record for a window that already
//! fired but is within its lateness fires it again at once (a late
//! firing). A record whose every window is past its lateness (a session
//! record: whose own window is, and merges with none) is late: counted,
//! and handed to the late-data output if any. Processing-time windows are
//! never late and have no lateness (Flink ignores it there). At the end of
//! the input, event-time windows fire by the final `i64::MAX` watermark
//! and the remaining processing-time windows fire too, in the order of
//! their ends (as Flink's bounded jobs end them).
//!
//! Timers are per `(key, timestamp)`, so a timer firing scans the key's
//! open windows for those ending (or cleaned up) then: a key has few.

use crate::core::timestamp::set_record_timestamp;
use weir_net::Wire;
use weir_state::StateKey;

use crate::chain::control::Collector;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::late_data::LateOutput;
use crate::operators::window::contents::WindowContents;
use crate::operators::window::event_time::start_with_offset;
use crate::operators::window::spec::{TimeWindow, WindowKind, WindowSpec};
use crate::state::key_context::KeyContext;
use crate::state::map::KeyedMapState;
use crate::state::timers::{KeyedTimerService, TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// State name of the general window operator's window set in checkpoints.
pub const WINDOWS_STATE: &str = "_windows";

/// A window of the window set: its start, and its end, state id and
/// contents.
type Slot<M> = (i64, (i64, i64, M));

/// Flink's `WindowOperator` for every window kind and function (see the
/// [module docs](self)).
pub struct GeneralWindowOperator<K, T, C>
where
    K: StateKey,
    C: WindowContents<K, T>,
{
    spec: WindowSpec<T>,
    domain: TimeDomain,
    lateness: i64,
    contents: C,
    windows: KeyedMapState<K, i64, (i64, i64, C::Meta)>,
    timers: KeyedTimerService<K>,
    late: u64,
    late_output: Option<LateOutput<T>>,
    scratch: Vec<Slot<C::Meta>>,
}

impl<K, T, C> GeneralWindowOperator<K, T, C>
where
    K: StateKey + Wire + 'static,
    T: 'static,
    C: WindowContents<K, T>,
{
    /// The operator of windows `spec` with `contents`, keeping event-time
    /// windows `lateness_ms` after they fire (ignored on processing time,
    /// as in Flink) and handing late records to `late`.
    ///
    /// # Panics
    ///
    /// If `lateness_ms` is negative.
    pub fn new(
        spec: WindowSpec<T>,
        contents: C,
        lateness_ms: i64,
        late: Option<LateOutput<T>>,
    ) -> Self {
        assert!(
            lateness_ms >= 0,
            "window allowed lateness must not be negative, got {lateness_ms} ms"
        );
        let domain = spec.domain();
        let timers = match &spec.clock {
            Some(clock) => {
                let clock = clock.clone();
                KeyedTimerService::with_clock(move || clock())
            }
            None => KeyedTimerService::new(),
        };
        Self {
            domain,
            lateness: if domain == TimeDomain::EventTime {
                lateness_ms
            } else {
                0
            },
            spec,
            contents,
            windows: KeyedMapState::new(WINDOWS_STATE),
            timers,
            late: 0,
            late_output: late,
            scratch: Vec::new(),
        }
    }

    /// Records dropped as late (all their windows past their lateness).
    pub fn late_records(&self) -> u64 {
        self.late
    }

    /// Windows kept (not cleaned up yet) on this subtask, over all keys.
    pub fn open_windows(&self) -> usize {
        self.windows.total_len()
    }

    /// Registered timers (both domains) on this subtask.
    pub fn timers(&self) -> usize {
        self.timers.event_time_timers() + self.timers.processing_time_timers()
    }

    /// The window contents (e.g. to inspect what is buffered).
    pub fn contents(&self) -> &C {
        &self.contents
    }

    /// When window `w` is cleaned up.
    #[inline]
    fn cleanup_time(&self, w: &TimeWindow) -> i64 {
        match self.domain {
            TimeDomain::EventTime => w.max_timestamp().saturating_add(self.lateness),
            TimeDomain::ProcessingTime => w.end,
        }
    }

    /// When window `w` fires: on event time once the watermark reaches its
    /// end - 1; on processing time once the clock reaches its end, i.e.
    /// 1 ms after its end - 1, as Flink fires processing-time timers (so
    /// that no record of the window's last millisecond comes after it
    /// fired).
    #[inline]
    fn fire_time(&self, w: &TimeWindow) -> i64 {
        match self.domain {
            TimeDomain::EventTime => w.max_timestamp(),
            TimeDomain::ProcessingTime => w.end,
        }
    }

    /// Flink's `isWindowLate`: an event-time window past its lateness.
    #[inline]
    fn is_late(&self, w: &TimeWindow, watermark: i64) -> bool {
        self.domain == TimeDomain::EventTime && self.cleanup_time(w) <= watermark
    }

    fn register(&mut self, ctx: &KeyContext<K>, ts: i64) {
        match self.domain {
            TimeDomain::EventTime => self.timers.register_event_time_timer(ctx, ts),
            TimeDomain::ProcessingTime => self.timers.register_processing_time_timer(ctx, ts),
        }
    }

    fn delete(&mut self, ctx: &KeyContext<K>, ts: i64) {
        match self.domain {
            TimeDomain::EventTime => self.timers.delete_event_time_timer(ctx, ts),
            TimeDomain::ProcessingTime => self.timers.delete_processing_time_timer(ctx, ts),
        }
    }

    /// The trigger's `onElement` after a record went into `w` (contents
    /// `id`, `meta`), and the cleanup timer: on event time a window the
    /// watermark passed fires at once (a late firing), another gets its
    /// timer; on processing time the timer.
    fn on_element<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        w: TimeWindow,
        id: i64,
        meta: C::Meta,
        time: i64,
        out: &mut O,
    ) {
        let fire = self.fire_time(&w);
        if self.domain == TimeDomain::EventTime && fire <= time {
            set_record_timestamp(w.max_timestamp());
            self.contents.emit(ctx, &w, id, &meta, out);
        } else {
            self.register(ctx, fire);
        }
        let cleanup = self.cleanup_time(&w);
        if cleanup != fire {
            self.register(ctx, cleanup);
        }
    }

    /// Adds `value` to the fixed window `w`.
    fn add_fixed<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        w: TimeWindow,
        value: T,
        time: i64,
        out: &mut O,
    ) {
        let contents = &mut self.contents;
        let ((_, _, meta), _) = self.windows.upsert(ctx, w.start, |slot| {
            (
                w.end,
                w.start,
                contents.add(ctx, w.start, slot.map(|(_, _, m)| m), value),
            )
        });
        self.on_element(ctx, w, w.start, meta, time, out);
    }

    /// Adds `value`, which opens session `new`, merging the sessions it
    /// intersects (Flink's `MergingWindowSet::addWindow`).
    fn add_session<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        new: TimeWindow,
        value: T,
        time: i64,
        out: &mut O,
    ) {
        let mut sessions = std::mem::take(&mut self.scratch);
        sessions.clear();
        sessions.extend(self.windows.entries(ctx));
        // The sessions merging with `new`: those intersecting the growing
        // cover (the key's sessions are disjoint and do not touch, so only
        // `new` can join them).
        let mut merged = new;
        let mut members = 0;
        loop {
            let mut grew = false;
            let mut i = members;
            while i < sessions.len() {
                let (start, (end, _, _)) = &sessions[i];
                let w = TimeWindow::new(*start, *end);
                if merged.intersects(&w) {
                    merged = merged.cover(&w);
                    sessions.swap(members, i);
                    members += 1;
                    grew = true;
                }
                i += 1;
            }
            if !grew {
                break;
            }
        }
        if members == 0 {
            if self.is_late(&new, time) {
                self.scratch = sessions;
                self.drop_late(value);
                return;
            }
            let meta = self.contents.add(ctx, new.start, None, value);
            self.windows
                .put(ctx, new.start, (new.end, new.start, meta.clone()));
            self.on_element(ctx, new, new.start, meta, time, out);
            self.scratch = sessions;
            return;
        }
        let (id, mut meta) =
            if members == 1 && sessions[0].0 == merged.start && sessions[0].1 .0 == merged.end {
                // Inside one session, which does not grow: no merge.
                let (_, (_, id, meta)) = sessions[0].clone();
                (id, meta)
            } else {
                // The largest part keeps its contents; the others merge in.
                let target = (0..members)
                    .max_by_key(|&i| C::weight(&sessions[i].1 .2))
                    .expect("a merge has members");
                let (_, (_, id, mut meta)) = sessions[target].clone();
                for (i, (start, (end, from_id, from))) in sessions[..members].iter().enumerate() {
                    let (start, end) = (*start, *end);
                    if i != target {
                        meta = self.contents.merge(ctx, id, meta, *from_id, from.clone());
                    }
                    self.windows.remove(ctx, &start);
                    // The merged session's timers go, unless another window of
                    // the key (or the merged one) uses the same time.
                    let w = TimeWindow::new(start, end);
                    for ts in [self.fire_time(&w), self.cleanup_time(&w)] {
                        let used = [self.fire_time(&merged), self.cleanup_time(&merged)]
                            .contains(&ts)
                            || sessions[members..].iter().any(|(s, (e, _, _))| {
                                let other = TimeWindow::new(*s, *e);
                                self.fire_time(&other) == ts || self.cleanup_time(&other) == ts
                            });
                        if !used {
                            self.delete(ctx, ts);
                        }
                    }
                }
                (id, meta)
            };
        meta = self.contents.add(ctx, id, Some(meta), value);
        self.windows
            .put(ctx, merged.start, (merged.end, id, meta.clone()));
        self.on_element(ctx, merged, id, meta, time, out);
        self.scratch = sessions;
    }

    fn drop_late(&mut self, value: T) {
        self.late += 1;
        if let Some(late) = &mut self.late_output {
            late(value);
        }
    }

    /// Fires and cleans up the current key's windows due at timer `ts`.
    fn on_due<O: Collector<C::Out>>(&mut self, ts: i64, ctx: &KeyContext<K>, out: &mut O) {
        let mut windows = std::mem::take(&mut self.scratch);
        windows.clear();
        windows.extend(self.windows.entries(ctx));
        for (start, (end, id, meta)) in &windows {
            let (start, id) = (*start, *id);
            let w = TimeWindow::new(start, *end);
            if self.fire_time(&w) == ts {
                set_record_timestamp(w.max_timestamp());
                self.contents.emit(ctx, &w, id, meta, out);
            }
            if self.cleanup_time(&w) == ts {
                self.contents.clear(ctx, id, meta);
                self.windows.remove(ctx, &start);
            }
        }
        self.scratch = windows;
    }
}

impl<K, T, C> KeyedProcessFunction for GeneralWindowOperator<K, T, C>
where
    K: StateKey + Wire + 'static,
    T: Clone + 'static,
    C: WindowContents<K, T>,
    C::Meta: Wire,
{
    type Key = K;
    type In = T;
    type Out = C::Out;

    fn process<O: Collector<C::Out>>(&mut self, ctx: &KeyContext<K>, value: T, out: &mut O) {
        let (ts, time) = match &self.spec.timestamp {
            Some(timestamp) => (timestamp(&value), ctx.current_watermark()),
            None => {
                let now = self.timers.current_processing_time();
                (now, now)
            }
        };
        match &self.spec.kind {
            WindowKind::Fixed {
                size,
                slide,
                offset,
            } => {
                let (size, slide) = (*size, *slide);
                let mut start = start_with_offset(ts, *offset, slide);
                let mut taken = false;
                while start > ts.saturating_sub(size) {
                    let w = TimeWindow::new(start, start.saturating_add(size));
                    if !self.is_late(&w, time) {
                        taken = true;
                        self.add_fixed(ctx, w, value.clone(), time, out);
                    }
                    start = start.saturating_sub(slide);
                }
                if !taken {
                    self.drop_late(value);
                }
            }
            WindowKind::Session(gap) => {
                let gap = gap.of(&value);
                let w = TimeWindow::new(ts, ts.saturating_add(gap));
                self.add_session(ctx, w, value, time, out);
            }
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.windows);
        self.contents.visit_state(states);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<K>> {
        Some(&mut self.timers)
    }

    fn on_timer<O: Collector<C::Out>>(
        &mut self,
        ts: i64,
        ctx: &KeyContext<K>,
        domain: TimeDomain,
        out: &mut O,
    ) {
        if domain == self.domain {
            self.on_due(ts, ctx, out);
        }
    }

    fn on_end_of_input<O: Collector<C::Out>>(&mut self, out: &mut O) {
        // Event-time windows fired by the final watermark; processing-time
        // ones fire now, in the order of their ends.
        while let Some((ts, key)) = self.timers.pop_due(TimeDomain::ProcessingTime, i64::MAX) {
            let ctx = KeyContext::with_watermark(key, i64::MAX);
            if self.domain == TimeDomain::ProcessingTime {
                self.on_due(ts, &ctx, out);
            }
        }
    }
}

#[cfg(test)]
mod tests;
