//! Sliding-window contents stored by *slice*: Flink SQL's window slicing
//! (its `SliceAssigners` and `SliceSharedWindowAggProcessor`) for the
//! event-time window operator.
//!
//! Sliding windows of size `S` every `L` overlap: a record is in about
//! `S / L` of them, and the pane operator (`window::panes`) folds it into
//! each. Cut time into slices of `gcd(S, L)` instead (aligned like the
//! windows, so that every window is exactly the slices it covers): a
//! record folds into its one slice, and when the watermark passes a
//! window's end the accumulators of its slices are merged, per key, into
//! one table (cleared and reused: no allocation in the steady state) and
//! emitted from there. Folding costs one probe per record instead of `S /
//! L`; firing costs one merge per `(key, slice)` of the window.
//!
//! Only for folds whose merge is exact ([`WindowFold::merges_exactly`]:
//! the merged accumulator is the one of folding all the records, in any
//! order) and without allowed lateness (a late firing would merge the
//! slices of every window the record re-fires; the pane operator keeps
//! that). Tumbling windows keep their panes (one slice is one window).
//!
//! **What fired.** A slice is shared by windows that fire at different
//! watermarks, so the windows that fired are kept as one watermark,
//! `fired_to`: every window whose last timestamp is at or below it fired
//! (windows fire in order, on the watermark alone). A slice is retired
//! once the last window holding it fired. A record whose windows all
//! fired is late; one whose older windows fired folds into its slice,
//! which only the windows still to fire read: what the pane operator
//! gives, window by window.
//!
//! **Checkpoints.** The slices are one keyed state,
//! [`WINDOW_SLICES_STATE`], written per key group of the key (rescalable
//! as the panes). Entry format (each field in its [`Wire`] encoding):
//! `key, slice start, accumulator, fired_to` with `fired_to` an `i64`, so
//! that a restore knows which windows fired before the checkpoint (Flink's
//! window-aggregate operator likewise keeps its watermark in state);
//! restored from several old subtasks, the smallest one holds (a window
//! fired on some and not on others fires again rather than never). So a
//! record that comes after the restore, before any watermark, for windows
//! that all fired before the checkpoint is late, as it would have been
//! before it (the pane operator keeps no watermark: it fires such a
//! record alone in its windows once more, as Flink's DataStream window
//! operator does). The
//! panes' state, [`WINDOW_CONTENTS_STATE`], keeps its own format and name,
//! so a checkpoint written by the pane operator (before slicing, or with a
//! fold that does not merge) restores into a slicing operator as it is:
//! its windows are kept as panes holding the records before the
//! checkpoint, and a window fires as its pane merged with its slices
//! (which hold only the records after). The other way, slices restored
//! into the pane operator (the job now allows lateness) are merged into
//! the panes of every window holding them that had not fired
//! (`SlicesIntoPanes`).
//!
//! [`WINDOW_CONTENTS_STATE`]: crate::operators::window::event_time::WINDOW_CONTENTS_STATE
//! [`WindowFold::merges_exactly`]: crate::operators::window::fold::WindowFold::merges_exactly

use weir_net::{DecodeError, Wire};
use weir_state::value_state::FrozenValueState;
use weir_state::{KeyGroupAssigner, KeyGroupRange, StateKey, StateValue, ValueState};

use crate::checkpoint::keyed_restore::RestoreSink;
use crate::core::snapshot::FrozenKeyedState;
use crate::core::wire::append_wire;
use crate::operators::window::event_time::Slicing;
use crate::operators::window::panes::WindowPanes;
use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};

/// State name of a slicing window operator's slices in checkpoints.
pub const WINDOW_SLICES_STATE: &str = "_window_slices";

/// Retired tables kept for reuse.
const SPARE_TABLES: usize = 4;

/// The accumulators of one slice, by key.
struct Slice<K, A>
where
    K: StateKey,
    A: StateValue,
{
    start: i64,
    table: ValueState<K, A>,
}

/// The open slices of a slicing window operator.
pub(crate) struct WindowSlices<K, A>
where
    K: StateKey,
    A: StateValue,
{
    name: String,
    /// Sorted by slice start, ascending.
    slices: Vec<Slice<K, A>>,
    /// The slice the last record went to.
    last: usize,
    spare: Vec<ValueState<K, A>>,
    /// Where a window's slices are merged when it fires; empty between
    /// firings.
    merged: ValueState<K, A>,
    /// Every window whose last timestamp is at or below it fired.
    fired_to: i64,
    /// The smallest `fired_to` of the entries restored so far.
    restored_to: Option<i64>,
}

impl<K, A> WindowSlices<K, A>
where
    K: StateKey,
    A: StateValue,
{
    /// No slice; registers the state `name`.
    pub(crate) fn new(name: &str) -> Self {
        register_state(StateKind::Keyed, name);
        Self {
            name: name.to_owned(),
            slices: Vec::new(),
            last: 0,
            spare: Vec::new(),
            merged: ValueState::new(name),
            fired_to: i64::MIN,
            restored_to: None,
        }
    }

    /// The state's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// `(key, slice)` entries held.
    pub(crate) fn len(&self) -> usize {
        self.slices.iter().map(|s| s.table.len()).sum()
    }

    /// Every window whose last timestamp is at or below this fired.
    #[inline]
    pub(crate) fn fired_to(&self) -> i64 {
        self.fired_to
    }

    /// The index of slice `start`, created if absent.
    #[inline(always)]
    fn slice(&mut self, start: i64) -> usize {
        if let Some(s) = self.slices.get(self.last) {
            if s.start == start {
                return self.last;
            }
        }
        self.find_or_create(start)
    }

    #[inline(never)]
    fn find_or_create(&mut self, start: i64) -> usize {
        let at = match self.slices.binary_search_by_key(&start, |s| s.start) {
            Ok(at) => at,
            Err(at) => {
                let table = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| ValueState::new(&self.name));
                self.slices.insert(at, Slice { start, table });
                at
            }
        };
        self.last = at;
        at
    }

    /// Folds into the current key's accumulator of slice `start` with `f`
    /// (given `None` for the slice's first record of this key).
    #[inline(always)]
    pub(crate) fn fold(&mut self, ctx: &KeyContext<K>, start: i64, f: impl FnOnce(Option<A>) -> A) {
        let at = self.slice(start);
        self.slices[at]
            .table
            .upsert_hashed_ref(ctx.key(), ctx.hash(), f);
    }

    /// Folds a run of records into slice `start`: `head` first, then every
    /// `(key, hash, record)` of `rest`, each into its key's accumulator.
    #[inline(always)]
    pub(crate) fn fold_run<T, I: Iterator<Item = (K, u64, T)>>(
        &mut self,
        start: i64,
        head: (K, u64, T),
        rest: &mut I,
        f: impl Fn(Option<A>, T) -> A,
    ) {
        let at = self.slice(start);
        let table = &mut self.slices[at].table;
        let (key, hash, record) = head;
        table.upsert_hashed(key, hash, |acc| f(acc, record));
        table.upsert_run(rest, f);
    }

    /// Fires, in window order, every window whose last timestamp the
    /// watermark reached and that had not fired: its slices (and its pane
    /// in `base`, restored from a pane checkpoint) merged per key with
    /// `merge`, each `(key, window start, accumulator)` handed to `emit`.
    /// Then retires the slices (and panes) of no window still to fire.
    pub(crate) fn fire(
        &mut self,
        watermark: i64,
        geo: Slicing,
        base: &mut WindowPanes<K, A>,
        merge: impl Fn(A, &A) -> A,
        mut emit: impl FnMut(K, i64, &A),
    ) {
        if watermark <= self.fired_to {
            return;
        }
        let size = geo.size;
        let oldest_slice = self.slices.first().map(|s| geo.windows_of(s.start).0);
        let oldest_pane = base.first_start_from(i64::MIN);
        let Some(mut start) = oldest_slice.into_iter().chain(oldest_pane).min() else {
            self.fired_to = watermark;
            return;
        };
        start = start.max(geo.first_unfired(self.fired_to));
        while start.saturating_add(size - 1) <= watermark {
            let end = start.saturating_add(size);
            let lo = self.slices.partition_point(|s| s.start < start);
            let hi = lo + self.slices[lo..].partition_point(|s| s.start < end);
            let pane = base.table(start);
            if lo == hi && pane.is_none() {
                // No record in this window: on to the next that has one.
                let next_slice = self.slices.get(lo).map(|s| geo.windows_of(s.start).0);
                let next_pane = base.first_start_from(start.saturating_add(1));
                match next_slice.into_iter().chain(next_pane).min() {
                    Some(next) if next > start => start = next,
                    _ => break,
                }
                continue;
            }
            let merged = &mut self.merged;
            if let Some(pane) = pane {
                for (k, acc) in pane.iter() {
                    merged.put_hashed_ref(k, k.key_hash(), acc.clone());
                }
            }
            for slice in &self.slices[lo..hi] {
                for (k, acc) in slice.table.iter() {
                    merged.upsert_hashed_ref(k, k.key_hash(), |cur| match cur {
                        Some(cur) => merge(cur, acc),
                        None => acc.clone(),
                    });
                }
            }
            for (k, acc) in merged.iter() {
                emit(k.clone(), start, acc);
            }
            merged.clear();
            match start.checked_add(geo.slide) {
                Some(next) => start = next,
                None => break,
            }
        }
        self.fired_to = watermark;
        let retired = self
            .slices
            .partition_point(|s| geo.windows_of(s.start).1.saturating_add(size - 1) <= watermark);
        if retired > 0 {
            for mut slice in self.slices.drain(..retired) {
                if self.spare.len() < SPARE_TABLES {
                    slice.table.clear();
                    self.spare.push(slice.table);
                }
            }
            self.last = 0;
        }
        base.retire_ended(watermark, size);
    }

    /// Ends a restore: the windows fired before the checkpoint stay fired
    /// (the smallest `fired_to` restored, or `fired`, the last timestamp
    /// of the last window a restored pane fired, whichever is later).
    pub(crate) fn restored(&mut self, fired: Option<i64>) {
        let restored = self.restored_to.take().into_iter().chain(fired).max();
        if let Some(to) = restored {
            self.fired_to = self.fired_to.max(to);
        }
    }

    /// A frozen view of every slice for a checkpoint.
    pub(crate) fn freeze(&self) -> FrozenSlices<K, A> {
        FrozenSlices {
            fired_to: self.fired_to,
            slices: self
                .slices
                .iter()
                .filter(|s| !s.table.is_empty())
                .map(|s| (s.start, s.table.freeze()))
                .collect(),
        }
    }
}

/// The slices of a window operator frozen at a barrier. Each slice is one
/// part of the snapshot ([`FrozenKeyedState::chunk_count`]).
pub(crate) struct FrozenSlices<K, A>
where
    K: StateKey,
    A: StateValue,
{
    fired_to: i64,
    slices: Vec<(i64, FrozenValueState<K, A>)>,
}

/// A restored or written entry: key, slice start, accumulator, fired_to.
type SliceEntry<K, A> = (K, i64, A, i64);

impl<K, A> FrozenKeyedState for FrozenSlices<K, A>
where
    K: StateKey + Wire,
    A: StateValue + Wire,
{
    fn len(&self) -> usize {
        self.slices.iter().map(|(_, v)| v.len()).sum()
    }

    fn chunk_count(&self) -> usize {
        self.slices.len()
    }

    fn estimated_bytes(&self) -> usize {
        let one = self.slices.iter().find_map(|(s, v)| {
            v.iter()
                .next()
                .map(|(k, a)| k.encoded_len() + s.encoded_len() + a.encoded_len() + 8)
        });
        one.unwrap_or(0) * FrozenKeyedState::len(self)
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        out.resize_with(range.len() as usize, Vec::new);
        for buf in out.iter_mut() {
            buf.clear();
        }
        let groups = KeyGroupAssigner::new(max_parallelism, 1);
        for (start, view) in &self.slices[chunks] {
            for (k, acc) in view.iter() {
                let kg = groups.key_group(k.key_hash());
                debug_assert!(range.contains(kg), "a key outside the subtask's range");
                let buf = &mut out[(kg - range.start()) as usize];
                append_wire(buf, k);
                append_wire(buf, start);
                append_wire(buf, acc);
                append_wire(buf, &self.fired_to);
            }
        }
    }
}

impl<K, A> RestoreSink for WindowSlices<K, A>
where
    K: StateKey + Wire,
    A: StateValue + Wire,
{
    type Entry = SliceEntry<K, A>;

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), DecodeError> {
        <SliceEntry<K, A>>::read(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, _entries: usize) {
        // Entries spread over slices: each grows as it is filled.
    }

    fn insert(&mut self, (key, start, acc, fired_to): Self::Entry, hash: u64) {
        let at = self.slice(start);
        self.slices[at].table.put_hashed(key, hash, acc);
        self.restored_to = Some(self.restored_to.map_or(fired_to, |t| t.min(fired_to)));
    }

    fn entry_count(&self) -> usize {
        self.len()
    }
}

/// Slices restored into the pane operator (a job that now allows lateness,
/// from a checkpoint of its slicing operator): each entry is merged into
/// the pane of every window holding its slice that had not fired.
pub(crate) struct SlicesIntoPanes<'a, K, A, M>
where
    K: StateKey,
    A: StateValue,
{
    pub(crate) panes: &'a mut WindowPanes<K, A>,
    pub(crate) geo: Slicing,
    pub(crate) merge: M,
    /// Entries restored.
    pub(crate) entries: usize,
}

impl<K, A, M> RestoreSink for SlicesIntoPanes<'_, K, A, M>
where
    K: StateKey + Wire,
    A: StateValue + Wire,
    M: Fn(A, &A) -> A,
{
    type Entry = SliceEntry<K, A>;

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), DecodeError> {
        <SliceEntry<K, A>>::read(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, _entries: usize) {}

    fn insert(&mut self, (key, start, acc, fired_to): Self::Entry, hash: u64) {
        self.entries += 1;
        let (first, last) = self.geo.windows_of(start);
        let mut window = first.max(self.geo.first_unfired(fired_to));
        while window <= last {
            self.panes
                .merge_entry(&key, hash, window, &acc, &self.merge);
            window += self.geo.slide;
        }
    }

    fn entry_count(&self) -> usize {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_tile_every_window_of_any_offset() {
        for (size, slide, offset) in [(10, 2, 0), (10, 4, 3), (9, 6, -5), (7, 3, 1)] {
            let geo = Slicing::of(size, slide, offset).unwrap();
            for ts in -50..50 {
                let s = geo.slice_start(ts);
                assert!(s <= ts && ts < s + geo.slice(), "{ts} in slice {s}");
                let (first, last) = geo.windows_of(s);
                // The windows holding ts, as Flink assigns them.
                let mut want = Vec::new();
                let mut w = ts - (ts - offset).rem_euclid(slide);
                while w > ts - size {
                    want.push(w);
                    w -= slide;
                }
                want.reverse();
                let got: Vec<i64> = (first..=last).step_by(slide as usize).collect();
                assert_eq!(
                    got, want,
                    "size {size} slide {slide} offset {offset} ts {ts}"
                );
                // A window holding the slice holds all of it.
                for w in got {
                    assert!(w <= s && s + geo.slice() <= w + size);
                }
            }
        }
        assert_eq!(Slicing::of(5, 5, 0), None, "tumbling: one slice a window");
        assert_eq!(Slicing::of(2, 5, 0), None, "no overlap");
    }
}
