//! The event-time tumbling and sliding window operator: one table per open
//! window (a pane), fired as a whole when the watermark passes its end; or,
//! for sliding windows of a fold that merges exactly and no allowed
//! lateness, one table per slice (`window::slices`), merged per window
//! when it fires.

use std::time::Duration;

use weir_net::Wire;
use weir_state::{KeyHash, StateKey};

use crate::chain::control::Collector;
use crate::checkpoint::keyed_restore::restore_entries;
use crate::core::duration::millis;
use crate::core::timestamp::set_record_timestamp;
use crate::operators::keyed::function::KeyedProcessFunction;
use crate::operators::late_data::LateOutput;
use crate::operators::window::event_time::{
    Slicing, WindowAssigner, WindowStarts, WINDOW_CONTENTS_STATE,
};
use crate::operators::window::fold::WindowFold;
use crate::operators::window::panes::WindowPanes;
use crate::operators::window::slices::{SlicesIntoPanes, WindowSlices, WINDOW_SLICES_STATE};
use crate::operators::window::spec::TimeWindow;
use crate::state::key_context::KeyContext;
use crate::state::key_selector::KeySelector;
use crate::state::visitor::KeyedStates;

/// The keyed process function behind event-time windows: one accumulator
/// per `(key, window start)` in the window's pane (`window::panes`), fired as a
/// whole when the watermark reaches the window's end - 1 and retired after
/// the allowed lateness. Emits `(key, window, result)`.
pub struct WindowOperator<K, W, A>
where
    K: StateKey,
    W: WindowFold,
{
    assigner: A,
    size: i64,
    lateness: i64,
    fold: W,
    /// The panes: every window's accumulators; when sliced, only those of
    /// windows restored from a pane checkpoint (the records before it).
    contents: WindowPanes<K, W::Acc>,
    /// The slices of overlapping windows of a fold that merges exactly,
    /// with their state (visited even when lateness keeps the panes, so
    /// that a sliced checkpoint restores into them).
    slices: Option<(Slicing, WindowSlices<K, W::Acc>)>,
    /// Records fold into slices (`slices` and no allowed lateness).
    sliced: bool,
    /// The windows (sliced: the slice) last assigned, for the timestamps
    /// that have them.
    assigned: Assigned,
    late: u64,
    late_output: Option<LateOutput<W::In>>,
}

impl<K, W, A> WindowOperator<K, W, A>
where
    K: StateKey,
    W: WindowFold,
    A: WindowAssigner<W::In>,
{
    /// The operator of windows `assigner` folding records with `fold`,
    /// without allowed lateness or late-data output.
    pub fn new(assigner: A, fold: W) -> Self {
        let slices = match assigner.slicing() {
            Some(geo) if fold.merges_exactly() => {
                Some((geo, WindowSlices::new(WINDOW_SLICES_STATE)))
            }
            _ => None,
        };
        Self {
            size: assigner.size(),
            assigner,
            lateness: 0,
            fold,
            contents: WindowPanes::new(WINDOW_CONTENTS_STATE),
            sliced: slices.is_some(),
            slices,
            assigned: Assigned::NONE,
            late: 0,
            late_output: None,
        }
    }

    /// The same operator keeping windows `lateness` after they fired:
    /// records arriving meanwhile update them and fire them again.
    ///
    /// # Panics
    ///
    /// If `lateness` is not a whole number of milliseconds.
    pub fn with_allowed_lateness(mut self, lateness: Duration) -> Self {
        self.lateness = millis("window allowed lateness", lateness);
        // A late firing re-fires every window of the record: panes.
        self.sliced = self.slices.is_some() && self.lateness == 0;
        self
    }

    /// The same operator handing records late for all their windows to
    /// `late` (Flink's `sideOutputLateData`).
    pub fn with_late_output(mut self, late: LateOutput<W::In>) -> Self {
        self.late_output = Some(late);
        self
    }

    /// Records dropped because all their windows were past their lateness.
    pub fn late_records(&self) -> u64 {
        self.late
    }

    /// Windows kept (not cleaned up yet) on this subtask, over all keys.
    /// Sliced, `(key, slice)` entries count.
    pub fn open_windows(&self) -> usize {
        self.contents.len() + self.slices.as_ref().map_or(0, |(_, s)| s.len())
    }

    /// Whether records fold into slices rather than into every window.
    pub fn is_sliced(&self) -> bool {
        self.sliced
    }

    /// Fires the windows the watermark `watermark` completed.
    fn fire<C: Collector<(K, TimeWindow, W::Out)>>(&mut self, watermark: i64, out: &mut C) {
        let (fold, size) = (&self.fold, self.size);
        if let (true, Some((geo, slices))) = (self.sliced, &mut self.slices) {
            let merge = |a, b: &W::Acc| fold.merge_slices(a, b);
            slices.fire(
                watermark,
                *geo,
                &mut self.contents,
                merge,
                |key, start, acc| {
                    let window = TimeWindow::new(start, start.saturating_add(size));
                    set_record_timestamp(window.max_timestamp());
                    out.collect((key, window, fold.result(acc)));
                },
            );
            return;
        }
        self.contents
            .fire(watermark, size, self.lateness, |key, start, acc| {
                let window = TimeWindow::new(start, start.saturating_add(size));
                // A window's result has its last millisecond as timestamp.
                set_record_timestamp(window.max_timestamp());
                out.collect((key, window, fold.result(acc)));
            });
    }

    /// Assigns the windows of timestamp `ts` (and of the timestamps that
    /// share them).
    #[cold]
    #[inline(never)]
    fn assign(&mut self, ts: i64) {
        if let (true, Some((geo, slices))) = (self.sliced, &self.slices) {
            // The record's slice, open while its last window is to fire.
            let start = geo.slice_start(ts);
            let last = geo.windows_of(start).1.saturating_add(self.size - 1);
            self.assigned = Assigned {
                starts: WindowStarts {
                    next: start,
                    left: 1,
                    step: geo.slice(),
                },
                lo: start,
                hi: start.saturating_add(geo.slice()),
                open_below: if last <= slices.fired_to() {
                    i64::MIN
                } else {
                    last
                },
            };
            return;
        }
        let (starts, lo, hi) = self.assigner.window_starts_range(ts);
        // The oldest window ends first.
        let open_below = starts
            .last()
            .map_or(i64::MIN, |oldest| oldest.saturating_add(self.size - 1));
        self.assigned = Assigned {
            starts,
            lo,
            hi,
            open_below,
        };
    }

    /// Emits the current result of the current key's window `start`: a
    /// late firing.
    #[cold]
    #[inline(never)]
    fn late_firing<C: Collector<(K, TimeWindow, W::Out)>>(
        &mut self,
        ctx: &KeyContext<K>,
        start: i64,
        out: &mut C,
    ) {
        if let Some(acc) = self.contents.get(ctx, start) {
            let window = TimeWindow::new(start, start.saturating_add(self.size));
            set_record_timestamp(window.max_timestamp());
            out.collect((ctx.key().clone(), window, self.fold.result(&acc)));
        }
    }

    /// A record some of whose windows reached their end: windows past
    /// their lateness skip it, the others take it (and fire again if they
    /// fired); a record no window takes is late.
    #[cold]
    #[inline(never)]
    fn process_late<C: Collector<(K, TimeWindow, W::Out)>>(
        &mut self,
        ctx: &KeyContext<K>,
        value: W::In,
        watermark: i64,
        out: &mut C,
    ) where
        W::In: Clone,
    {
        if self.sliced {
            // Every window of the record fired: late.
            self.late += 1;
            if let Some(late) = &mut self.late_output {
                late(value);
            }
            return;
        }
        let mut taken = false;
        for start in self.assigned.starts {
            let max_ts = start.saturating_add(self.size - 1);
            let cleanup = max_ts.saturating_add(self.lateness);
            if cleanup <= watermark {
                continue;
            }
            taken = true;
            let fold = &self.fold;
            let fired = self
                .contents
                .fold_or_fire(ctx, start, max_ts <= watermark, |acc| {
                    fold.fold_ref(acc, &value)
                });
            if fired {
                // Within the allowed lateness: a late firing.
                self.late_firing(ctx, start, out);
            }
        }
        if !taken {
            self.late += 1;
            if let Some(late) = &mut self.late_output {
                late(value);
            }
        }
    }
}

impl<K, W, A> WindowOperator<K, W, A>
where
    K: StateKey,
    W: WindowFold,
{
    /// Ends the restore of a sliced operator (its panes restored first):
    /// the windows fired before the checkpoint stay fired, and the
    /// records' slices are assigned anew.
    fn slices_restored(
        slices: &mut WindowSlices<K, W::Acc>,
        panes: &WindowPanes<K, W::Acc>,
        size: i64,
        assigned: &mut Assigned,
    ) {
        slices.restored(panes.fired_through(size));
        *assigned = Assigned::NONE;
    }
}

/// [`WindowSlices::fold_run`] with `fold`, out of line: a run is long, and
/// inlined beside the panes' run it changed the code of the tumbling loop
/// (W2, tumbling, measured 1-3% more instructions than without slices;
/// out of line, as many as without).
#[inline(never)]
fn fold_slice_run<K, W, I>(
    slices: &mut WindowSlices<K, W::Acc>,
    fold: &W,
    start: i64,
    head: (K, u64, W::In),
    rest: &mut I,
) where
    K: StateKey,
    W: WindowFold,
    I: Iterator<Item = (K, u64, W::In)>,
{
    slices.fold_run(start, head, rest, |acc, v| fold.fold(acc, v));
}

/// The records that follow a run's first, while their timestamps fall
/// in `lo..hi` (the run's window), as `(key, hash, record)`: at most
/// `left`; the first record outside the range ends the run and is kept in
/// `stopped`.
struct WindowRun<'a, I: Iterator, KF, A> {
    records: &'a mut I,
    key_of: &'a KF,
    assigner: &'a A,
    lo: i64,
    hi: i64,
    left: usize,
    /// Records taken from `records` (the one in `stopped` too).
    pulled: usize,
    stopped: Option<I::Item>,
}

impl<I, K, KF, A> Iterator for WindowRun<'_, I, KF, A>
where
    I: Iterator,
    K: KeyHash,
    KF: KeySelector<I::Item, Key = K>,
    A: WindowAssigner<I::Item>,
{
    type Item = (K, u64, I::Item);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let record = self.records.next()?;
        self.pulled += 1;
        self.left -= 1;
        let ts = self.assigner.timestamp(&record);
        if !(self.lo <= ts && ts < self.hi) {
            self.stopped = Some(record);
            self.left = 0;
            return None;
        }
        let key = self.key_of.key(&record);
        let hash = key.key_hash();
        Some((key, hash, record))
    }
}

/// The windows (sliced: the slice) a window operator assigned last.
#[derive(Clone, Copy, Debug)]
struct Assigned {
    starts: WindowStarts,
    /// The timestamps `lo..hi` have these windows.
    lo: i64,
    hi: i64,
    /// The last timestamp of the window that ends first: while the
    /// watermark is below it, every window is open. Sliced: of the last
    /// window holding the slice (the record folds into the slice while
    /// one of its windows is to fire), `i64::MIN` if it fired.
    open_below: i64,
}

impl Assigned {
    /// Before the first record: no timestamp has these windows.
    const NONE: Self = Self {
        starts: WindowStarts {
            next: 0,
            left: 0,
            step: 1,
        },
        lo: 0,
        hi: 0,
        open_below: i64::MIN,
    };
}

impl<K, W, A> KeyedProcessFunction for WindowOperator<K, W, A>
where
    K: StateKey + Wire + 'static,
    W: WindowFold,
    W::In: Clone,
    W::Acc: Wire,
    A: WindowAssigner<W::In>,
{
    type Key = K;
    type In = W::In;
    type Out = (K, TimeWindow, W::Out);

    #[inline]
    fn process<C: Collector<Self::Out>>(&mut self, ctx: &KeyContext<K>, value: W::In, out: &mut C) {
        let ts = self.assigner.timestamp(&value);
        let watermark = ctx.current_watermark();
        if !(self.assigned.lo <= ts && ts < self.assigned.hi) {
            self.assign(ts);
        }
        if watermark >= self.assigned.open_below {
            return self.process_late(ctx, value, watermark, out);
        }
        if let (true, Some((_, slices))) = (self.sliced, &mut self.slices) {
            let fold = &self.fold;
            slices.fold(ctx, self.assigned.starts.next, |acc| fold.fold(acc, value));
            return;
        }
        // Every window of the record is before its end: fold, and emit
        // only for a window restored as fired (a late firing). Tumbling
        // windows have one, without the loop.
        let starts = self.assigned.starts;
        if starts.left == 1 {
            let fold = &self.fold;
            if self
                .contents
                .fold(ctx, starts.next, |acc| fold.fold(acc, value))
            {
                self.late_firing(ctx, starts.next, out);
            }
            return;
        }
        for start in starts {
            let fold = &self.fold;
            let fired = self
                .contents
                .fold(ctx, start, |acc| fold.fold_ref(acc, &value));
            if fired {
                self.late_firing(ctx, start, out);
            }
        }
    }

    /// Runs of records that share the window last assigned, which is open
    /// and has not fired (every in-order record of a tumbling window), are
    /// folded into its table in one loop (`WindowPanes::fold_run`); any
    /// other record goes through [`process`](Self::process).
    #[inline]
    fn process_many<I, KF, C>(
        &mut self,
        records: &mut I,
        key_of: &KF,
        watermark: i64,
        limit: usize,
        out: &mut C,
    ) -> usize
    where
        I: Iterator<Item = W::In>,
        KF: KeySelector<W::In, Key = K>,
        C: Collector<Self::Out>,
    {
        let mut taken = 0;
        while taken < limit && out.is_available() {
            let Some(first) = records.next() else {
                break;
            };
            taken += 1;
            let ts = self.assigner.timestamp(&first);
            let a = self.assigned;
            if !(a.lo <= ts && ts < a.hi && watermark < a.open_below && a.starts.left == 1) {
                let ctx = KeyContext::with_watermark(key_of.key(&first), watermark);
                self.process(&ctx, first, out);
                continue;
            }
            // Folding emits nothing, so the chain stays available.
            let key = key_of.key(&first);
            let mut run = WindowRun {
                records: &mut *records,
                key_of,
                assigner: &self.assigner,
                lo: a.lo,
                hi: a.hi,
                left: limit - taken,
                pulled: 0,
                stopped: None,
            };
            let fold = &self.fold;
            let hash = key.key_hash();
            let head = (key, hash, first);
            let refused = match (self.sliced, &mut self.slices) {
                (true, Some((_, slices))) => {
                    fold_slice_run(slices, fold, a.starts.next, head, &mut run);
                    Ok(())
                }
                _ => self
                    .contents
                    .fold_run(a.starts.next, head, &mut run, |acc, v| fold.fold(acc, v)),
            };
            let (pulled, stopped) = (run.pulled, run.stopped.take());
            taken += pulled;
            if let Err((key, _, first)) = refused {
                let ctx = KeyContext::with_watermark(key, watermark);
                self.process(&ctx, first, out);
            }
            if let Some(record) = stopped {
                let ctx = KeyContext::with_watermark(key_of.key(&record), watermark);
                self.process(&ctx, record, out);
            }
        }
        taken
    }

    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        self.fire(watermark, out);
    }

    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        // Flink's final watermark: every window fires.
        self.fire(i64::MAX, out);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let name = self.contents.name().to_owned();
        states.visit(
            &name,
            &mut self.contents,
            |c| Box::new(c.freeze()),
            |scope, c| restore_entries(scope, &name, c),
        );
        let Some((geo, slices)) = &mut self.slices else {
            return;
        };
        let (geo, size, fold) = (*geo, self.size, &self.fold);
        let (sliced, contents, assigned) = (self.sliced, &mut self.contents, &mut self.assigned);
        let name = slices.name().to_owned();
        states.visit(
            &name,
            slices,
            |s| Box::new(s.freeze()),
            |scope, s| {
                if sliced {
                    restore_entries(scope, &name, s)?;
                    Self::slices_restored(s, contents, size, assigned);
                    Ok(())
                } else {
                    let mut into = SlicesIntoPanes {
                        panes: contents,
                        geo,
                        merge: |a, b: &W::Acc| fold.merge_slices(a, b),
                        entries: 0,
                    };
                    restore_entries(scope, &name, &mut into)
                }
            },
        );
    }
}

/// Checkpoints and restores without the checkpoint machinery: the entries
/// a checkpoint writes per key group, and their restore into the key
/// groups of a subtask (rescaled or not).
#[cfg(test)]
impl<K, W, A> WindowOperator<K, W, A>
where
    K: StateKey + Wire + 'static,
    W: WindowFold,
    W::Acc: Wire,
    A: WindowAssigner<W::In>,
{
    /// The panes' and the slices' entries a checkpoint writes, per key
    /// group of `max_parallelism`.
    pub(crate) fn checkpoint_groups(&self, max_parallelism: u32) -> [Vec<Vec<u8>>; 2] {
        use crate::core::snapshot::FrozenKeyedState;
        use weir_state::KeyGroupRange;

        fn groups(state: &dyn FrozenKeyedState, max_parallelism: u32) -> Vec<Vec<u8>> {
            let range = KeyGroupRange::new(0, max_parallelism);
            let mut all = vec![Vec::new(); max_parallelism as usize];
            let mut out = Vec::new();
            for part in 0..state.chunk_count() {
                state.serialize_part(max_parallelism, range, part..part + 1, &mut out);
                for (kg, bytes) in out.iter().enumerate() {
                    all[kg].extend_from_slice(bytes);
                }
            }
            all
        }
        let slices = match &self.slices {
            Some((_, s)) => groups(&s.freeze(), max_parallelism),
            None => vec![Vec::new(); max_parallelism as usize],
        };
        [groups(&self.contents.freeze(), max_parallelism), slices]
    }

    /// Restores the entries of key groups `groups` of a checkpoint
    /// ([`checkpoint_groups`](Self::checkpoint_groups)), as
    /// `visit_state` does.
    pub(crate) fn restore_groups(
        &mut self,
        [panes, slices]: &[Vec<Vec<u8>>; 2],
        groups: std::ops::Range<usize>,
    ) {
        use crate::checkpoint::keyed_restore::RestoreSink;

        fn each<S: RestoreSink>(sink: &mut S, bytes: &[u8]) {
            let mut at = 0;
            while at < bytes.len() {
                let (entry, n) = S::decode(&bytes[at..]).expect("a checkpoint entry");
                let hash = S::group_hash(&entry);
                sink.insert(entry, hash);
                at += n;
            }
        }
        for kg in groups.clone() {
            each(&mut self.contents, &panes[kg]);
        }
        let Some((geo, s)) = &mut self.slices else {
            assert!(groups.clone().all(|kg| slices[kg].is_empty()));
            return;
        };
        if self.sliced {
            for kg in groups {
                each(s, &slices[kg]);
            }
            Self::slices_restored(s, &self.contents, self.size, &mut self.assigned);
        } else {
            let fold = &self.fold;
            let mut into = SlicesIntoPanes {
                panes: &mut self.contents,
                geo: *geo,
                merge: |a, b: &W::Acc| fold.merge_slices(a, b),
                entries: 0,
            };
            for kg in groups {
                each(&mut into, &slices[kg]);
            }
        }
    }
}
