//! The general window operator: every window kind (fixed and session, on
//! event or processing time) with every window function (incremental
//! aggregation, with or without a window function, full-window process
//! functions, evicting windows) and any [`Trigger`]: Flink's
//! `WindowOperator` (and, with [`Evicting`](super::Evicting) contents, its
//! `EvictingWindowOperator`).
//!
//! **Window set.** Per key, the open windows in a [`KeyedMapState`] named
//! [`WINDOWS_STATE`]: window start `->` `(end, state id, contents, trigger
//! state)`. The *state id* names where the window's contents live (Flink's
//! "state window" of `MergingWindowSet`): a fixed window's is its start; a
//! session's is the start of one of the sessions it merged, which always
//! lies inside it, so the ids of a key's (disjoint) sessions differ. The
//! contents are the accumulator (incremental aggregation,
//! [`Accumulated`](super::Accumulated)) or the element count (full-window
//! functions, [`Buffered`](super::Buffered), and evicting windows, whose
//! elements are in a second map state keyed by `(state id, index)`; see
//! [`contents`](super::contents)); none after a purge. The trigger state
//! is the trigger's [`State`](Trigger::State) for the window. All of it is
//! arena-backed keyed state, written per key group by checkpoints, as are
//! the window functions' states ([`context`](super::context)) and the
//! timers ([`timers`](super::timers)): windows survive failover and
//! rescaling with their triggers.
//!
//! **Per element** (Flink's `processElement`). A record goes to the
//! windows of its time: its timestamp (event time) or the operator's clock
//! (processing time). For fixed windows those of the assigner's size and
//! slide holding it, latest first; a session record opens `[t, t + gap)`,
//! which merges with every session of its key it intersects (overlaps or
//! touches, as Flink's `TimeWindow::intersects`) into their cover. A merge
//! calls the trigger's `on_merge` for the merged window with the merged
//! sessions' trigger states, then `clear` for each merged session (and
//! deletes its cleanup timer), and merges their contents into the largest
//! one's ([`WindowContents::merge`]). A window past its cleanup time (event
//! time: its end - 1 plus the allowed lateness `L` reached by the
//! watermark) does not take the record; for the others the element is
//! added, the trigger's `on_element` decides (fire: the window function
//! runs on the contents; purge: the contents are dropped), and the
//! window's cleanup timer is registered. A record no window takes is late:
//! counted, and handed to the late-data output if any.
//!
//! **Per timer** (`onEventTime` / `onProcessingTime`). Timers are
//! `(key, window, time)`. A timer of a window calls the trigger's
//! `on_event_time` / `on_processing_time` (for a session that no longer
//! exists, nothing), fires and purges as it says, and at the window's
//! cleanup time (in the assigner's domain: event time `end - 1 + L`,
//! processing time `end - 1`) clears everything: contents, trigger (which
//! deletes its timers), the window function's `clear` hook and its
//! per-window state, the window itself.
//!
//! **Default triggers.** With Flink's [`EventTimeTrigger`](super::EventTimeTrigger)
//! a window fires when the watermark reaches its end - 1, and an element
//! for a window the watermark passed (within the lateness) fires it again
//! at once (a late firing); with [`ProcessingTimeTrigger`](super::ProcessingTimeTrigger)
//! once the clock passes its end - 1. At the end of the input, event-time
//! windows fire by the final `i64::MAX` watermark and the remaining
//! processing-time timers of processing-time windows fire too, in time
//! order (so open windows fire, as Flink's bounded jobs end them).
//! Processing-time windows are never late and have no lateness (Flink
//! ignores it there).

use std::sync::Arc;
use std::time::Duration;

use weir_net::Wire;
use weir_state::StateKey;

use crate::chain::control::Collector;
use crate::core::duration::millis;
use crate::core::time::system_time_ms;
use crate::core::timestamp::set_record_timestamp;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::late_data::LateOutput;
use crate::operators::side_output::SideOutputs;
use crate::operators::window::contents::WindowContents;
use crate::operators::window::context::{FunctionStates, WindowContext};
use crate::operators::window::event_time::start_with_offset;
use crate::operators::window::spec::{
    gather_intersecting, ProcessingClock, TimeWindow, WindowKind, WindowSpec,
};
use crate::operators::window::timers::{TimerOp, WindowTimers};
use crate::operators::window::trigger::{OnMergeContext, Trigger, TriggerContext, TriggerResult};
use crate::state::key_context::KeyContext;
use crate::state::map::KeyedMapState;
use crate::state::timers::{TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

/// State name of the general window operator's window set in checkpoints.
pub const WINDOWS_STATE: &str = "_windows";

/// A window of the window set: its end, state id, contents (none once
/// purged) and trigger state.
type Slot<M, S> = (i64, i64, Option<M>, S);

/// A window of the window set with its start.
type Entry<M, S> = (i64, Slot<M, S>);

/// A session of the current key as a new record's merge looks at it: its
/// start, end, state id and contents' weight.
type Bounds = (i64, i64, i64, u64);

/// Flink's `WindowOperator` for every window kind, function and trigger
/// (see the [module docs](self)).
pub struct GeneralWindowOperator<K, T, Tr, C>
where
    K: StateKey,
    Tr: Trigger<T>,
    C: WindowContents<K, T>,
{
    spec: WindowSpec<T>,
    domain: TimeDomain,
    merging: bool,
    lateness: i64,
    trigger: Tr,
    contents: C,
    windows: KeyedMapState<K, i64, Slot<C::Meta, Tr::State>>,
    /// The timers, and the operator's processing-time clock.
    timers: WindowTimers<K>,
    functions: FunctionStates<K>,
    /// Timer requests of the trigger call under way.
    ops: Vec<TimerOp>,
    late: u64,
    late_output: Option<LateOutput<T>>,
    /// The current key's sessions while a record merges them.
    bounds: Vec<Bounds>,
    /// The sessions a record merges, taken out of the window set.
    merging_slots: Vec<Entry<C::Meta, Tr::State>>,
    merged_states: Vec<Tr::State>,
}

impl<K, T, Tr, C> GeneralWindowOperator<K, T, Tr, C>
where
    K: StateKey + Wire + 'static,
    T: 'static,
    Tr: Trigger<T>,
    C: WindowContents<K, T>,
{
    /// The operator of windows `spec` fired by `trigger` with `contents`,
    /// keeping event-time windows `lateness` after their end (ignored on
    /// processing time, as in Flink) and handing late records to `late`.
    ///
    /// # Panics
    ///
    /// If `lateness` is not a whole number of milliseconds, or the windows
    /// merge and the trigger cannot.
    pub fn new(
        spec: WindowSpec<T>,
        trigger: Tr,
        contents: C,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self {
        let lateness_ms = millis("window allowed lateness", lateness);
        assert!(
            !spec.is_merging() || trigger.can_merge(),
            "A merging window assigner cannot be used with a trigger that does not support merging."
        );
        let domain = spec.domain();
        let clock: ProcessingClock = spec
            .clock
            .clone()
            .unwrap_or_else(|| Arc::new(system_time_ms));
        Self {
            domain,
            merging: spec.is_merging(),
            lateness: if domain == TimeDomain::EventTime {
                lateness_ms
            } else {
                0
            },
            spec,
            trigger,
            contents,
            windows: KeyedMapState::new(WINDOWS_STATE),
            timers: WindowTimers::new(move || clock()),
            functions: FunctionStates::new(),
            ops: Vec::new(),
            late: 0,
            late_output: late,
            bounds: Vec::new(),
            merging_slots: Vec::new(),
            merged_states: Vec::new(),
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

    /// Registered timers (both domains, triggers' and cleanup) on this
    /// subtask.
    pub fn timers(&self) -> usize {
        self.timers.len()
    }

    /// Entries of the window functions' per-window and global states.
    pub fn function_states(&self) -> usize {
        self.functions.len()
    }

    /// The window contents (e.g. to inspect what is buffered).
    pub fn contents(&self) -> &C {
        &self.contents
    }

    /// When window `w` is cleaned up (Flink's `cleanupTime`).
    #[inline]
    fn cleanup_time(&self, w: &TimeWindow) -> i64 {
        match self.domain {
            TimeDomain::EventTime => w.max_timestamp().saturating_add(self.lateness),
            TimeDomain::ProcessingTime => w.max_timestamp(),
        }
    }

    /// Flink's `isWindowLate`: an event-time window past its cleanup time.
    #[inline]
    fn is_late(&self, w: &TimeWindow, watermark: i64) -> bool {
        self.domain == TimeDomain::EventTime && self.cleanup_time(w) <= watermark
    }

    /// Whether a firing caused at watermark `watermark` (an element, or a
    /// processing-time timer) is late: event time passed the window's end.
    #[inline]
    fn late_at(&self, w: &TimeWindow, watermark: i64) -> bool {
        self.domain == TimeDomain::EventTime && w.max_timestamp() <= watermark
    }

    fn register_cleanup(&mut self, ctx: &KeyContext<K>, w: &TimeWindow) {
        let t = self.cleanup_time(w);
        if t != i64::MAX {
            self.timers.register(ctx, w, self.domain, t);
        }
    }

    fn delete_cleanup(&mut self, ctx: &KeyContext<K>, w: &TimeWindow) {
        let t = self.cleanup_time(w);
        if t != i64::MAX {
            self.timers.delete(ctx, w, self.domain, t);
        }
    }

    /// Calls the trigger (`call`) for `ctx`'s window `w` with its state,
    /// then applies its timer requests.
    #[inline]
    fn call_trigger<R>(
        &mut self,
        ctx: &KeyContext<K>,
        w: &TimeWindow,
        state: &mut Tr::State,
        call: impl FnOnce(&Tr, &mut TriggerContext<'_, Tr::State>) -> R,
    ) -> R {
        let timers = &self.timers;
        let clock = || timers.current_processing_time();
        let mut tctx = TriggerContext::new(ctx.current_watermark(), &clock, state, &mut self.ops);
        let result = call(&self.trigger, &mut tctx);
        if !self.ops.is_empty() {
            self.timers.apply(ctx, w, &mut self.ops);
        }
        result
    }

    /// The context of a firing (or cleanup) of `ctx`'s window `w`.
    fn window_context<'a>(
        ctx: &'a KeyContext<K>,
        w: &TimeWindow,
        late: bool,
        merging: bool,
        clock: &'a dyn Fn() -> i64,
        functions: &'a mut FunctionStates<K>,
    ) -> WindowContext<'a, K> {
        WindowContext {
            key: ctx,
            window: *w,
            clock,
            late,
            merging,
            states: functions,
        }
    }

    /// Emits window `w` (contents `id`, `contents`) through the window
    /// function, if it has contents; returns whether the contents changed
    /// (an evictor removed elements).
    fn fire<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        w: &TimeWindow,
        id: i64,
        contents: &mut Option<C::Meta>,
        late: bool,
        out: &mut O,
    ) -> bool {
        if contents.is_none() {
            return false;
        }
        // What a window emits has its last millisecond as timestamp (Flink's
        // `setAbsoluteTimestamp(window.maxTimestamp())`), side outputs too.
        set_record_timestamp(w.max_timestamp());
        let timers = &self.timers;
        let clock = || timers.current_processing_time();
        let mut fire =
            Self::window_context(ctx, w, late, self.merging, &clock, &mut self.functions);
        self.contents.emit(&mut fire, id, contents, out)
    }

    /// `value` (event time `ts`) goes into the fixed window `w` of the
    /// current key: [`element`](Self::element) with the window's slot read
    /// and written by one lookup, unless the trigger purges or an evictor
    /// changes the contents.
    fn element_fixed<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        w: TimeWindow,
        value: T,
        ts: Option<i64>,
        out: &mut O,
    ) {
        let stamp = ts.unwrap_or(i64::MIN);
        let watermark = ctx.current_watermark();
        let key = self.slot_key(&w);
        let timers = &self.timers;
        let clock = || timers.current_processing_time();
        let (trigger, contents, ops) = (&self.trigger, &mut self.contents, &mut self.ops);
        let mut result = TriggerResult::Continue;
        // Only the contents' id is read back: the slot (an accumulator,
        // perhaps with a DISTINCT aggregate's values) is not copied per
        // record, only when the trigger fires or purges.
        let (id, _) = self.windows.upsert_then(
            ctx,
            key,
            |slot| {
                let (end, id, meta, mut state) =
                    slot.unwrap_or_else(|| (w.end, key, None, Default::default()));
                let mut tctx = TriggerContext::new(watermark, &clock, &mut state, ops);
                result = trigger.on_element(&value, stamp, &w, &mut tctx);
                let meta = contents.add(ctx, id, meta, value, ts);
                (end, id, Some(meta), state)
            },
            |&(_, id, _, _)| id,
        );
        if !self.ops.is_empty() {
            self.timers.apply(ctx, &w, &mut self.ops);
        }
        if result.is_fire() || result.is_purge() {
            let (_, _, mut meta, state) = self
                .windows
                .get(ctx, &key)
                .expect("the window's slot was just written");
            let mut changed = false;
            if result.is_fire() {
                let late = self.late_at(&w, watermark);
                changed = self.fire(ctx, &w, id, &mut meta, late, out);
            }
            if result.is_purge() {
                if let Some(m) = meta.take() {
                    self.contents.clear(ctx, id, &m);
                    changed = true;
                }
            }
            if changed {
                self.windows.put(ctx, key, (w.end, id, meta, state));
            }
        }
        self.register_cleanup(ctx, &w);
    }

    /// `value` (event time `ts`) goes into window `w` of the current key,
    /// whose contents are `id` and `contents` and trigger state `state`
    /// (the window is in the set or new): the trigger's `on_element`, the
    /// firing and purge it asks for, the window's cleanup timer.
    #[allow(clippy::too_many_arguments)]
    fn element<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        w: TimeWindow,
        id: i64,
        contents: Option<C::Meta>,
        mut state: Tr::State,
        value: T,
        ts: Option<i64>,
        out: &mut O,
    ) {
        let stamp = ts.unwrap_or(i64::MIN);
        let result = self.call_trigger(ctx, &w, &mut state, |t, c| {
            t.on_element(&value, stamp, &w, c)
        });
        let mut contents = Some(self.contents.add(ctx, id, contents, value, ts));
        if result.is_fire() {
            let late = self.late_at(&w, ctx.current_watermark());
            self.fire(ctx, &w, id, &mut contents, late, out);
        }
        if result.is_purge() {
            if let Some(m) = contents.take() {
                self.contents.clear(ctx, id, &m);
            }
        }
        self.windows.put(ctx, w.start, (w.end, id, contents, state));
        self.register_cleanup(ctx, &w);
    }

    /// Adds `value`, which opens session `new`, merging the sessions it
    /// intersects (Flink's `MergingWindowSet::addWindow` with the window
    /// operator's merge function).
    fn add_session<O: Collector<C::Out>>(
        &mut self,
        ctx: &KeyContext<K>,
        new: TimeWindow,
        value: T,
        ts: Option<i64>,
        time: i64,
        out: &mut O,
    ) {
        // The sessions' bounds, not their contents: a session's contents
        // (an accumulator with a DISTINCT aggregate's values, say) are
        // moved out of the window set, never copied per record.
        let mut sessions = std::mem::take(&mut self.bounds);
        sessions.clear();
        self.windows
            .for_each_entry(ctx, |&start, (end, id, contents, _)| {
                sessions.push((start, *end, *id, contents.as_ref().map_or(0, C::weight)));
            });
        let (merged, members) = gather_intersecting(new, &mut sessions, |&(start, end, ..)| {
            TimeWindow::new(start, end)
        });
        if members == 0 {
            self.bounds = sessions;
            if self.is_late(&new, time) {
                return self.drop_late(value);
            }
            return self.element(
                ctx,
                new,
                new.start,
                None,
                Default::default(),
                value,
                ts,
                out,
            );
        }
        let (start, end, id, _) = sessions[0];
        if members == 1 && (start, end) == (merged.start, merged.end) {
            // Inside one session, which does not grow: no merge. Its
            // contents and trigger state are taken out of its slot, which
            // `element` writes again in place.
            self.bounds = sessions;
            let mut taken = None;
            self.windows.upsert_then(
                ctx,
                start,
                |slot| {
                    let (end, id, contents, state) =
                        slot.expect("a session listed a moment ago is stored");
                    taken = Some((contents, state));
                    (end, id, None, Default::default())
                },
                |_| (),
            );
            let (contents, state) = taken.expect("the session's slot was read");
            return self.element(ctx, merged, id, contents, state, value, ts, out);
        }
        // The parts in time order, merged in that order: the largest keeps
        // its contents and the others merge in, the earliest of equal ones
        // (an aggregate's accumulators all weigh the same), so an
        // aggregate of the order rows came in (SQL's FIRST_VALUE,
        // LAST_VALUE, LISTAGG) takes the earlier session's first (it took
        // the later one's, whose rows came after).
        sessions[..members].sort_unstable_by_key(|s| s.0);
        let target = (0..members)
            .max_by_key(|&i| (sessions[i].3, std::cmp::Reverse(i)))
            .expect("a merge has members");
        let id = sessions[target].2;
        let mut parts = std::mem::take(&mut self.merging_slots);
        parts.clear();
        for &(start, ..) in &sessions[..members] {
            let slot = self
                .windows
                .remove(ctx, &start)
                .expect("a session listed a moment ago is stored");
            parts.push((start, slot));
        }
        self.bounds = sessions;
        let mut contents = parts[target].1 .2.take();
        let mut merged_states = std::mem::take(&mut self.merged_states);
        merged_states.clear();
        merged_states.extend(parts.iter().map(|(_, s)| s.3.clone()));
        let mut state = Tr::State::default();
        {
            let timers = &self.timers;
            let clock = || timers.current_processing_time();
            let tctx =
                TriggerContext::new(ctx.current_watermark(), &clock, &mut state, &mut self.ops);
            let mut mctx = OnMergeContext::new(tctx, &merged_states);
            self.trigger.on_merge(&merged, &mut mctx);
        }
        self.timers.apply(ctx, &merged, &mut self.ops);
        for (i, (start, (end, from_id, from, part_state))) in parts.drain(..).enumerate() {
            let w = TimeWindow::new(start, end);
            let mut part_state = part_state;
            self.call_trigger(ctx, &w, &mut part_state, |t, c| t.clear(&w, c));
            self.delete_cleanup(ctx, &w);
            if i != target {
                if let Some(from) = from {
                    contents = Some(self.contents.merge(ctx, id, contents, from_id, from));
                }
            }
        }
        self.merged_states = merged_states;
        self.merging_slots = parts;
        self.element(ctx, merged, id, contents, state, value, ts, out);
    }

    fn drop_late(&mut self, value: T) {
        self.late += 1;
        if let Some(late) = &mut self.late_output {
            late(value);
        }
    }

    /// Timer `ts` of `domain` of the current key's window `w` fired.
    fn on_window_timer<O: Collector<C::Out>>(
        &mut self,
        ts: i64,
        w: &TimeWindow,
        ctx: &KeyContext<K>,
        domain: TimeDomain,
        out: &mut O,
    ) {
        let key = self.slot_key(w);
        let slot = self.windows.get(ctx, &key).filter(|s| s.0 == w.end);
        if slot.is_none() && self.merging {
            // A session merged away or cleaned up: its trigger state is
            // gone, nothing to do (as Flink).
            return;
        }
        let existed = slot.is_some();
        let (id, mut contents, mut state) = match slot {
            Some((_, id, contents, state)) => (id, contents, state),
            None => (key, None, Default::default()),
        };
        let result = self.call_trigger(ctx, w, &mut state, |t, c| match domain {
            TimeDomain::EventTime => t.on_event_time(ts, w, c),
            TimeDomain::ProcessingTime => t.on_processing_time(ts, w, c),
        });
        if result.is_fire() {
            let late = match domain {
                TimeDomain::EventTime => {
                    self.domain == TimeDomain::EventTime && ts > w.max_timestamp()
                }
                TimeDomain::ProcessingTime => self.late_at(w, ctx.current_watermark()),
            };
            self.fire(ctx, w, id, &mut contents, late, out);
        }
        if result.is_purge() {
            if let Some(m) = contents.take() {
                self.contents.clear(ctx, id, &m);
            }
        }
        if domain == self.domain && ts == self.cleanup_time(w) {
            self.clear_all(ctx, w, id, contents, state);
        } else if existed {
            self.windows.put(ctx, key, (w.end, id, contents, state));
        }
    }

    /// Flink's `clearAllState`: the window's contents, its trigger (and
    /// timers), the window function's `clear` and per-window state, and the
    /// window itself.
    fn clear_all(
        &mut self,
        ctx: &KeyContext<K>,
        w: &TimeWindow,
        id: i64,
        contents: Option<C::Meta>,
        mut state: Tr::State,
    ) {
        if let Some(m) = contents {
            self.contents.clear(ctx, id, &m);
        }
        self.call_trigger(ctx, w, &mut state, |t, c| t.clear(w, c));
        let timers = &self.timers;
        let clock = || timers.current_processing_time();
        let mut fire =
            Self::window_context(ctx, w, false, self.merging, &clock, &mut self.functions);
        self.contents.clear_window(&mut fire);
        self.functions.clear_window(ctx, w);
        let key = self.slot_key(w);
        self.windows.remove(ctx, &key);
    }

    /// Window `w`'s key in the windows map (and its contents' id): its
    /// start, but its end for cumulative windows, which share starts.
    #[inline]
    fn slot_key(&self, w: &TimeWindow) -> i64 {
        if matches!(self.spec.kind, WindowKind::Cumulate { .. }) {
            w.end
        } else {
            w.start
        }
    }
}

impl<K, T, Tr, C> KeyedProcessFunction for GeneralWindowOperator<K, T, Tr, C>
where
    K: StateKey + Wire + 'static,
    T: Clone + 'static,
    Tr: Trigger<T>,
    C: WindowContents<K, T>,
{
    type Key = K;
    type In = T;
    type Out = C::Out;

    fn process<O: Collector<C::Out>>(&mut self, ctx: &KeyContext<K>, value: T, out: &mut O) {
        let (ts, time, stamp) = match &self.spec.timestamp {
            Some(timestamp) => {
                let ts = timestamp(&value);
                (ts, ctx.current_watermark(), Some(ts))
            }
            None => {
                let now = self.timers.current_processing_time();
                (now, now, None)
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
                        self.element_fixed(ctx, w, value.clone(), stamp, out);
                    }
                    start = start.saturating_sub(slide);
                }
                if !taken {
                    self.drop_late(value);
                }
            }
            WindowKind::Cumulate { step, size, offset } => {
                // Every window of this cumulation that ends after `ts`.
                let (step, size) = (*step, *size);
                let start = start_with_offset(ts, *offset, size);
                let mut end = start.saturating_add((ts - start) / step * step + step);
                let last = start.saturating_add(size);
                let mut taken = false;
                while end <= last {
                    let w = TimeWindow::new(start, end);
                    if !self.is_late(&w, time) {
                        taken = true;
                        self.element_fixed(ctx, w, value.clone(), stamp, out);
                    }
                    end = end.saturating_add(step);
                }
                if !taken {
                    self.drop_late(value);
                }
            }
            WindowKind::Attached { size } => {
                let end = ts.saturating_add(1);
                let w = TimeWindow::new(end.saturating_sub(*size), end);
                if self.is_late(&w, time) {
                    self.drop_late(value);
                } else {
                    self.element_fixed(ctx, w, value, stamp, out);
                }
            }
            WindowKind::Session(gap) => {
                let gap = gap.of(&value);
                let w = TimeWindow::new(ts, ts.saturating_add(gap));
                self.add_session(ctx, w, value, stamp, time, out);
            }
        }
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.map(&mut self.windows);
        states.map(&mut self.functions.map);
        self.contents.visit_state(states);
    }

    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        self.contents.side_outputs(outputs);
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
        let w = self.timers.fired_window();
        self.on_window_timer(ts, &w, ctx, domain, out);
    }

    fn on_end_of_input<O: Collector<C::Out>>(&mut self, out: &mut O) {
        // Event-time windows fired by the final watermark; processing-time
        // ones fire now, in the order of their timers.
        if self.domain == TimeDomain::ProcessingTime {
            while let Some((ts, key)) = self.timers.pop_processing() {
                let ctx = KeyContext::with_watermark(key, i64::MAX);
                let w = self.timers.fired_window();
                self.on_window_timer(ts, &w, &ctx, TimeDomain::ProcessingTime, out);
            }
        }
    }
}

#[cfg(test)]
mod tests;
