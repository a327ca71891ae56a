//! A plain transcription of Flink's `WindowOperator` and
//! `EvictingWindowOperator` on event time, written for the tests without
//! any of the operator's machinery: contents per `(key, state window)` in
//! ordered maps, Flink's `MergingWindowSet` (a window -> state window
//! mapping, merged by sorting the windows by start as
//! `TimeWindow.mergeWindows` does), and the timers as one ordered set of
//! `(time, key, window)`. It runs the real triggers and evictors, whose
//! own semantics are tested against closed forms elsewhere; what it checks
//! is how the operator drives them: merging, purging, cleanup, lateness,
//! timers per window, and which firings are late.

use std::collections::{BTreeMap, BTreeSet};

use crate::operators::window::evictor::{Evictor, EvictorContext, TimestampedValue};
use crate::operators::window::spec::TimeWindow;
use crate::operators::window::timers::TimerOp;
use crate::operators::window::trigger::{OnMergeContext, Trigger, TriggerContext};
use crate::state::timers::TimeDomain;

use super::Rec;

/// A firing: key, window start, end, the values the function saw
/// (sorted), and whether it was late.
pub(super) type Firing = (u64, i64, i64, Vec<u64>, bool);

/// Which windows hold a record.
#[derive(Clone, Copy)]
pub(super) enum Windows {
    Fixed { size: i64, slide: i64 },
    Sessions { gap: i64 },
}

/// The reference operator.
pub(super) struct Reference<Tr: Trigger<Rec>, E> {
    trigger: Tr,
    evictor: Option<E>,
    windows: Windows,
    lateness: i64,
    watermark: i64,
    /// Per key, Flink's merging window set: window -> state window.
    merging: BTreeMap<u64, BTreeMap<TimeWindow, TimeWindow>>,
    /// Contents by `(key, state window)`: records and timestamps in the
    /// order they were added.
    contents: BTreeMap<(u64, TimeWindow), Vec<(Rec, i64)>>,
    /// Trigger state by `(key, window)`.
    states: BTreeMap<(u64, TimeWindow), Tr::State>,
    timers: BTreeSet<(i64, u64, TimeWindow)>,
    pub(super) fired: Vec<Firing>,
    pub(super) late: Vec<Rec>,
}

impl<Tr: Trigger<Rec>, E: Evictor<Rec>> Reference<Tr, E> {
    pub(super) fn new(trigger: Tr, evictor: Option<E>, windows: Windows, lateness: i64) -> Self {
        Self {
            trigger,
            evictor,
            windows,
            lateness,
            watermark: i64::MIN,
            merging: BTreeMap::new(),
            contents: BTreeMap::new(),
            states: BTreeMap::new(),
            timers: BTreeSet::new(),
            fired: Vec::new(),
            late: Vec::new(),
        }
    }

    fn cleanup_time(&self, w: &TimeWindow) -> i64 {
        let t = w.max_timestamp().wrapping_add(self.lateness);
        if t >= w.max_timestamp() {
            t
        } else {
            i64::MAX
        }
    }

    fn is_window_late(&self, w: &TimeWindow) -> bool {
        self.cleanup_time(w) <= self.watermark
    }

    /// Runs `call` on the trigger for `(key, w)` and applies its timers.
    fn call<R>(
        &mut self,
        key: u64,
        w: TimeWindow,
        call: impl FnOnce(&Tr, &mut TriggerContext<'_, Tr::State>) -> R,
    ) -> R {
        let mut state = self.states.remove(&(key, w)).unwrap_or_default();
        let mut ops = Vec::new();
        let clock = || 0;
        let result = {
            let mut ctx = TriggerContext::new(self.watermark, &clock, &mut state, &mut ops);
            call(&self.trigger, &mut ctx)
        };
        self.states.insert((key, w), state);
        self.apply(key, w, ops);
        result
    }

    fn apply(&mut self, key: u64, w: TimeWindow, ops: Vec<TimerOp>) {
        for op in ops {
            match op {
                TimerOp::Register(TimeDomain::EventTime, t) => {
                    self.timers.insert((t, key, w));
                }
                TimerOp::Delete(TimeDomain::EventTime, t) => {
                    self.timers.remove(&(t, key, w));
                }
                other => panic!("the reference runs on event time only, got {other:?}"),
            }
        }
    }

    /// Flink's `emitWindowContents` (evicting or not).
    fn emit(&mut self, key: u64, w: TimeWindow, state_window: TimeWindow, late: bool) {
        let Some(contents) = self.contents.get(&(key, state_window)) else {
            return;
        };
        let mut stamped: Vec<TimestampedValue<Rec>> = contents
            .iter()
            .map(|&(r, ts)| TimestampedValue {
                value: r,
                timestamp: Some(ts),
            })
            .collect();
        let clock = || 0;
        let ctx = EvictorContext {
            watermark: self.watermark,
            clock: &clock,
        };
        if let Some(e) = &self.evictor {
            e.evict_before(&mut stamped, &w, &ctx);
        }
        let mut values: Vec<u64> = stamped.iter().map(|e| e.value.2).collect();
        values.sort_unstable();
        self.fired.push((key, w.start, w.end, values, late));
        if let Some(e) = &self.evictor {
            e.evict_after(&mut stamped, &w, &ctx);
            if stamped.is_empty() {
                self.contents.remove(&(key, state_window));
            } else {
                let kept = stamped
                    .into_iter()
                    .map(|e| (e.value, e.timestamp.expect("event time")))
                    .collect();
                self.contents.insert((key, state_window), kept);
            }
        }
    }

    /// Flink's `processElement`.
    pub(super) fn element(&mut self, r: Rec) {
        let (key, ts) = (r.0, r.1);
        let mut skipped = true;
        match self.windows {
            Windows::Fixed { size, slide } => {
                let mut start = ts - (ts % slide + slide) % slide;
                let mut windows = Vec::new();
                while start > ts - size {
                    windows.push(TimeWindow::new(start, start + size));
                    start -= slide;
                }
                for w in windows {
                    if self.is_window_late(&w) {
                        continue;
                    }
                    skipped = false;
                    self.add(key, w, w, r);
                }
            }
            Windows::Sessions { gap } => {
                let new = TimeWindow::new(ts, ts + gap);
                let actual = self.add_window(key, new);
                if self.is_window_late(&actual) {
                    self.merging.get_mut(&key).unwrap().remove(&actual);
                } else {
                    skipped = false;
                    let state_window = self.merging[&key][&actual];
                    self.add(key, actual, state_window, r);
                }
            }
        }
        if skipped && ts + self.lateness <= self.watermark {
            self.late.push(r);
        }
    }

    /// Adds `r` to `w` (contents in `state_window`): trigger, fire, purge,
    /// cleanup timer.
    fn add(&mut self, key: u64, w: TimeWindow, state_window: TimeWindow, r: Rec) {
        self.contents
            .entry((key, state_window))
            .or_default()
            .push((r, r.1));
        let result = self.call(key, w, |t, c| t.on_element(&r, r.1, &w, c));
        if result.is_fire() {
            let late = w.max_timestamp() <= self.watermark;
            self.emit(key, w, state_window, late);
        }
        if result.is_purge() {
            self.contents.remove(&(key, state_window));
        }
        let cleanup = self.cleanup_time(&w);
        if cleanup != i64::MAX {
            self.timers.insert((cleanup, key, w));
        }
    }

    /// Flink's `MergingWindowSet.addWindow` with the operator's merge
    /// function; returns the window the record goes to.
    fn add_window(&mut self, key: u64, new: TimeWindow) -> TimeWindow {
        let mapping = self.merging.entry(key).or_default();
        let mut all: Vec<TimeWindow> = mapping.keys().copied().collect();
        all.push(new);
        all.sort_by_key(|w| w.start);
        // TimeWindow.mergeWindows: consecutive intersecting windows.
        let mut groups: Vec<(TimeWindow, Vec<TimeWindow>)> = Vec::new();
        for w in all {
            match groups.last_mut() {
                Some((cover, members)) if cover.intersects(&w) => {
                    *cover = cover.cover(&w);
                    members.push(w);
                }
                _ => groups.push((w, vec![w])),
            }
        }
        let mut result = new;
        let mut merged_new = false;
        for (merge_result, mut members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
            if let Some(at) = members.iter().position(|w| *w == new) {
                members.remove(at);
                merged_new = true;
                result = merge_result;
            }
            let mapping = self.merging.get_mut(&key).unwrap();
            let state_window = mapping[&members[0]];
            let state_windows: Vec<TimeWindow> = members
                .iter()
                .filter_map(|m| mapping.remove(m))
                .filter(|s| *s != state_window)
                .collect();
            mapping.insert(merge_result, state_window);
            if !(members.len() == 1 && members[0] == merge_result) {
                self.merge(key, merge_result, &members, state_window, &state_windows);
            }
        }
        if result == new && !merged_new {
            self.merging.get_mut(&key).unwrap().insert(new, new);
        }
        result
    }

    /// The window operator's merge function.
    fn merge(
        &mut self,
        key: u64,
        result: TimeWindow,
        members: &[TimeWindow],
        state_window: TimeWindow,
        state_windows: &[TimeWindow],
    ) {
        let merged: Vec<Tr::State> = members
            .iter()
            .map(|m| self.states.get(&(key, *m)).cloned().unwrap_or_default())
            .collect();
        let mut state = Tr::State::default();
        let mut ops = Vec::new();
        let clock = || 0;
        {
            let ctx = TriggerContext::new(self.watermark, &clock, &mut state, &mut ops);
            let mut ctx = OnMergeContext::new(ctx, &merged);
            self.trigger.on_merge(&result, &mut ctx);
        }
        self.states.insert((key, result), state);
        self.apply(key, result, ops);
        for &m in members {
            self.call(key, m, |t, c| t.clear(&m, c));
            self.states.remove(&(key, m));
            let cleanup = self.cleanup_time(&m);
            self.timers.remove(&(cleanup, key, m));
        }
        for s in state_windows {
            if let Some(from) = self.contents.remove(&(key, *s)) {
                self.contents
                    .entry((key, state_window))
                    .or_default()
                    .extend(from);
            }
        }
    }

    /// The watermark advances to `to`: timers fire in time order, those
    /// registered meanwhile for passed times too.
    pub(super) fn watermark(&mut self, to: i64) {
        if to <= self.watermark {
            return;
        }
        self.watermark = to;
        while let Some(&(t, key, w)) = self.timers.first() {
            if t > to {
                break;
            }
            self.timers.pop_first();
            self.on_event_time(t, key, w);
        }
    }

    /// Flink's `onEventTime`.
    fn on_event_time(&mut self, t: i64, key: u64, w: TimeWindow) {
        let state_window = match self.windows {
            Windows::Fixed { .. } => w,
            Windows::Sessions { .. } => match self.merging.get(&key).and_then(|m| m.get(&w)) {
                Some(s) => *s,
                None => return,
            },
        };
        let result = self.call(key, w, |tr, c| tr.on_event_time(t, &w, c));
        if result.is_fire() {
            self.emit(key, w, state_window, t > w.max_timestamp());
        }
        if result.is_purge() {
            self.contents.remove(&(key, state_window));
        }
        if t == self.cleanup_time(&w) {
            self.contents.remove(&(key, state_window));
            self.call(key, w, |tr, c| tr.clear(&w, c));
            self.states.remove(&(key, w));
            if let Some(m) = self.merging.get_mut(&key) {
                m.remove(&w);
            }
        }
    }

    /// The end of the input: the final watermark.
    pub(super) fn end(&mut self) {
        self.watermark(i64::MAX);
    }

    /// Windows, contents and timers left.
    pub(super) fn left(&self) -> (usize, usize, usize) {
        let windows = match self.windows {
            Windows::Fixed { .. } => self.states.len(),
            Windows::Sessions { .. } => self.merging.values().map(|m| m.len()).sum(),
        };
        (windows, self.contents.len(), self.timers.len())
    }
}
