//! Window contents stored by window: one arena table of accumulators per
//! open window (a *pane*), keyed by the record's key alone.
//!
//! Flink keeps a window operator's contents in keyed state *namespaced* by
//! the window and fires each `(key, window)` by its own timer. Here the
//! namespace comes first: the operator holds a short list of panes sorted by
//! window start, each a [`ValueState`] from key to accumulator. A record
//! folds into its pane with one probe by the key's hash, which the keyed
//! operator computed already; the records of one window touch one table that
//! holds only that window's keys (dense, so a window of a few thousand keys
//! stays in the core's L2 cache); and no timer is kept per `(key, window)`:
//! when the watermark passes a window's end its pane fires as a whole, in
//! window order, which is the order Flink's per-key timers fire in.
//! A pane is kept until the allowed lateness has passed too, then its table
//! is cleared and reused by the next window (it keeps its capacity, so the
//! steady state allocates nothing).
//!
//! **Checkpoints.** The panes are one keyed state ([`WINDOW_CONTENTS_STATE`])
//! written per key group of the *key*, so windows follow their keys when the
//! parallelism changes. Entry format (each field in its [`Wire`] encoding):
//! `key, window start, accumulator, fired` with `fired` a `u64` (1 once the
//! window fired: it then only sees late firings until its cleanup). The
//! pending firings are implied by the panes, so no timers are written.
//!
//! [`WINDOW_CONTENTS_STATE`]: crate::operators::window::event_time::WINDOW_CONTENTS_STATE

use weir_net::{DecodeError, Wire};
use weir_state::value_state::FrozenValueState;
use weir_state::{KeyGroupAssigner, KeyGroupRange, StateKey, StateValue, ValueState};

use crate::checkpoint::keyed_restore::RestoreSink;
use crate::core::snapshot::FrozenKeyedState;
use crate::core::wire::append_wire;
use crate::state::key_context::KeyContext;
use crate::state::registry::{register_state, StateKind};

/// Retired tables kept for reuse (a window or two ahead of the watermark).
const SPARE_TABLES: usize = 4;

/// The accumulators of one window, by key.
struct Pane<K, A>
where
    K: StateKey,
    A: StateValue,
{
    start: i64,
    /// The window fired (on the watermark, or before the checkpoint it was
    /// restored from): records within the lateness fire it at once.
    fired: bool,
    table: ValueState<K, A>,
}

/// The open windows of a window operator, one pane per window start.
pub(crate) struct WindowPanes<K, A>
where
    K: StateKey,
    A: StateValue,
{
    name: String,
    /// Sorted by window start, ascending.
    panes: Vec<Pane<K, A>>,
    /// The pane the last record went to (consecutive records mostly share
    /// their window).
    last: usize,
    spare: Vec<ValueState<K, A>>,
}

impl<K, A> WindowPanes<K, A>
where
    K: StateKey,
    A: StateValue,
{
    /// No open window; registers the state `name` (see
    /// [`crate::operators::keyed::function::KeyedProcessFunction::visit_state`]).
    pub(crate) fn new(name: &str) -> Self {
        register_state(StateKind::Keyed, name);
        Self {
            name: name.to_owned(),
            panes: Vec::new(),
            last: 0,
            spare: Vec::new(),
        }
    }

    /// The state's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// `(key, window)` entries held, over all windows.
    pub(crate) fn len(&self) -> usize {
        self.panes.iter().map(|p| p.table.len()).sum()
    }

    /// The index of the pane of window `start`, created (unfired) if absent.
    #[inline(always)]
    fn pane(&mut self, start: i64) -> usize {
        if let Some(p) = self.panes.get(self.last) {
            if p.start == start {
                return self.last;
            }
        }
        self.find_or_create(start)
    }

    #[inline(never)]
    fn find_or_create(&mut self, start: i64) -> usize {
        let at = match self.panes.binary_search_by_key(&start, |p| p.start) {
            Ok(at) => at,
            Err(at) => {
                let table = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| ValueState::new(&self.name));
                self.panes.insert(
                    at,
                    Pane {
                        start,
                        fired: false,
                        table,
                    },
                );
                at
            }
        };
        self.last = at;
        at
    }

    /// Folds into the current key's accumulator of window `start` with `f`
    /// (given `None` for the window's first record of this key); returns
    /// whether the window fired already (only after a restore, for a window
    /// before its end: the record is then a late firing). The window must
    /// be before its end (the watermark below its last timestamp).
    #[inline(always)]
    pub(crate) fn fold(
        &mut self,
        ctx: &KeyContext<K>,
        start: i64,
        f: impl FnOnce(Option<A>) -> A,
    ) -> bool {
        let at = self.pane(start);
        let pane = &mut self.panes[at];
        pane.table.upsert_hashed_ref(ctx.key(), ctx.hash(), f);
        pane.fired
    }

    /// Folds a run of records into window `start` (created if absent),
    /// before its end: `head` first, then every `(key, hash, record)` of
    /// `rest`, each into its key's accumulator with `f`. A window that
    /// fired already (restored as fired: each of its records is a late
    /// firing) takes none and gives `head` back.
    #[inline(always)]
    pub(crate) fn fold_run<T, I: Iterator<Item = (K, u64, T)>>(
        &mut self,
        start: i64,
        head: (K, u64, T),
        rest: &mut I,
        f: impl Fn(Option<A>, T) -> A,
    ) -> Result<(), (K, u64, T)> {
        let at = self.pane(start);
        let pane = &mut self.panes[at];
        if pane.fired {
            return Err(head);
        }
        let (key, hash, record) = head;
        pane.table.upsert_hashed(key, hash, |acc| f(acc, record));
        pane.table.upsert_run(rest, f);
        Ok(())
    }

    /// [`fold`](Self::fold) into a window that may have reached its end: a
    /// new window counts as fired when `fired_if_new` (its end passed the
    /// watermark, within the lateness). Returns whether the window fired
    /// (the record is a late firing).
    pub(crate) fn fold_or_fire(
        &mut self,
        ctx: &KeyContext<K>,
        start: i64,
        fired_if_new: bool,
        f: impl FnOnce(Option<A>) -> A,
    ) -> bool {
        let at = self.pane(start);
        let pane = &mut self.panes[at];
        if pane.table.is_empty() && fired_if_new {
            pane.fired = true;
        }
        pane.table.upsert_hashed_ref(ctx.key(), ctx.hash(), f);
        pane.fired
    }

    /// The current key's accumulator of window `start`, if any.
    pub(crate) fn get(&self, ctx: &KeyContext<K>, start: i64) -> Option<A> {
        let pane = self.panes.iter().find(|p| p.start == start)?;
        pane.table.get_hashed(ctx.key(), ctx.hash()).cloned()
    }

    /// Fires, in window order, every window whose last timestamp `start +
    /// size - 1` the watermark reached and that has not fired: `emit` gets
    /// each of its `(key, start, accumulator)`. Then retires every window
    /// whose cleanup time (last timestamp + `lateness`) the watermark
    /// reached.
    pub(crate) fn fire(
        &mut self,
        watermark: i64,
        size: i64,
        lateness: i64,
        mut emit: impl FnMut(K, i64, &A),
    ) {
        let mut retired = 0;
        for pane in &mut self.panes {
            let max_ts = pane.start.saturating_add(size - 1);
            if max_ts > watermark {
                break;
            }
            if !pane.fired {
                pane.fired = true;
                for (k, acc) in pane.table.iter() {
                    emit(k.clone(), pane.start, acc);
                }
            }
            if max_ts.saturating_add(lateness) <= watermark {
                retired += 1;
            }
        }
        if retired > 0 {
            for mut pane in self.panes.drain(..retired) {
                if self.spare.len() < SPARE_TABLES {
                    pane.table.clear();
                    self.spare.push(pane.table);
                }
            }
            self.last = 0;
        }
    }

    /// The table of window `start`, if it has one.
    pub(crate) fn table(&self, start: i64) -> Option<&ValueState<K, A>> {
        let at = self.panes.binary_search_by_key(&start, |p| p.start).ok()?;
        Some(&self.panes[at].table)
    }

    /// The first window starting at or after `start` that has a pane.
    pub(crate) fn first_start_from(&self, start: i64) -> Option<i64> {
        let at = self.panes.partition_point(|p| p.start < start);
        self.panes.get(at).map(|p| p.start)
    }

    /// Drops, without firing them, the windows whose last timestamp the
    /// watermark reached (the slicing operator merged them into its
    /// firings).
    pub(crate) fn retire_ended(&mut self, watermark: i64, size: i64) {
        let ended = self
            .panes
            .partition_point(|p| p.start.saturating_add(size - 1) <= watermark);
        if ended > 0 {
            self.panes.drain(..ended);
            self.last = 0;
        }
    }

    /// The last timestamp of the last window that fired (restored as
    /// fired), if any did.
    pub(crate) fn fired_through(&self, size: i64) -> Option<i64> {
        let last = self.panes.iter().rev().find(|p| p.fired)?;
        Some(last.start.saturating_add(size - 1))
    }

    /// Merges `acc` into `key`'s accumulator of window `start` (created,
    /// unfired, if absent) with `merge`.
    pub(crate) fn merge_entry(
        &mut self,
        key: &K,
        hash: u64,
        start: i64,
        acc: &A,
        merge: impl Fn(A, &A) -> A,
    ) {
        let at = self.pane(start);
        self.panes[at]
            .table
            .upsert_hashed_ref(key, hash, |cur| match cur {
                Some(cur) => merge(cur, acc),
                None => acc.clone(),
            });
    }

    /// A frozen view of every pane for a checkpoint.
    pub(crate) fn freeze(&self) -> FrozenPanes<K, A> {
        FrozenPanes {
            panes: self
                .panes
                .iter()
                .filter(|p| !p.table.is_empty())
                .map(|p| (p.start, p.fired, p.table.freeze()))
                .collect(),
        }
    }
}

/// The panes of a window operator frozen at a barrier. Each pane is one
/// part of the snapshot ([`FrozenKeyedState::chunk_count`]).
pub(crate) struct FrozenPanes<K, A>
where
    K: StateKey,
    A: StateValue,
{
    panes: Vec<(i64, bool, FrozenValueState<K, A>)>,
}

/// A restored or written entry: key, window start, accumulator, fired.
type PaneEntry<K, A> = (K, i64, A, u64);

impl<K, A> FrozenKeyedState for FrozenPanes<K, A>
where
    K: StateKey + Wire,
    A: StateValue + Wire,
{
    fn len(&self) -> usize {
        self.panes.iter().map(|(_, _, v)| v.len()).sum()
    }

    fn chunk_count(&self) -> usize {
        self.panes.len()
    }

    fn estimated_bytes(&self) -> usize {
        let one = self.panes.iter().find_map(|(s, _, v)| {
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
        for (start, fired, view) in &self.panes[chunks] {
            for (k, acc) in view.iter() {
                let kg = groups.key_group(k.key_hash());
                debug_assert!(range.contains(kg), "a key outside the subtask's range");
                let buf = &mut out[(kg - range.start()) as usize];
                append_wire(buf, k);
                append_wire(buf, start);
                append_wire(buf, acc);
                append_wire(buf, &u64::from(*fired));
            }
        }
    }
}

impl<K, A> RestoreSink for WindowPanes<K, A>
where
    K: StateKey + Wire,
    A: StateValue + Wire,
{
    type Entry = PaneEntry<K, A>;

    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), DecodeError> {
        <PaneEntry<K, A>>::read(bytes)
    }

    fn group_hash(entry: &Self::Entry) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, _entries: usize) {
        // Entries spread over windows: each pane grows as it is filled.
    }

    fn insert(&mut self, (key, start, acc, fired): Self::Entry, hash: u64) {
        let at = self.pane(start);
        let pane = &mut self.panes[at];
        // A window fired before the checkpoint stays fired. Restored from
        // several old subtasks (a rescale), one window may have fired on
        // some and not on others: it then counts as not fired, so that the
        // keys it had not fired for fire (the others fire again).
        if pane.table.is_empty() {
            pane.fired = fired != 0;
        } else {
            pane.fired &= fired != 0;
        }
        pane.table.put_hashed(key, hash, acc);
    }

    fn entry_count(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_state::KeyHash;

    fn ctx(k: u64) -> KeyContext<u64> {
        KeyContext::new(k)
    }

    /// Adds `v` to `key`'s window `start`; its new sum and whether the
    /// window fired.
    fn add(panes: &mut WindowPanes<u64, u64>, key: u64, start: i64, v: u64) -> (u64, bool) {
        let fired = panes.fold(&ctx(key), start, |a| a.unwrap_or(0) + v);
        (panes.get(&ctx(key), start).unwrap(), fired)
    }

    fn fired(
        panes: &mut WindowPanes<u64, u64>,
        wm: i64,
        size: i64,
        late: i64,
    ) -> Vec<(u64, i64, u64)> {
        let mut got = Vec::new();
        panes.fire(wm, size, late, |k, s, a| got.push((k, s, *a)));
        got.sort();
        got
    }

    #[test]
    fn panes_fire_in_window_order_and_are_reused_after_cleanup() {
        let (mut p, created) =
            crate::state::registry::created_by(crate::state::registry::StateKind::Keyed, || {
                WindowPanes::<u64, u64>::new("w")
            });
        assert_eq!(created, vec!["w".to_owned()]);
        add(&mut p, 1, 10, 5);
        add(&mut p, 1, 0, 1);
        add(&mut p, 2, 0, 2);
        assert_eq!(add(&mut p, 1, 0, 1), (2, false));
        assert_eq!(p.len(), 3);
        assert_eq!(fired(&mut p, 8, 10, 0), vec![]);
        assert_eq!(fired(&mut p, 9, 10, 0), vec![(1, 0, 2), (2, 0, 2)]);
        assert_eq!(p.len(), 1, "window 0 retired without lateness");
        assert_eq!(p.spare.len(), 1);
        assert_eq!(fired(&mut p, i64::MAX, 10, 0), vec![(1, 10, 5)]);
        assert_eq!(p.len(), 0);
        // A new window takes a retired table, empty.
        add(&mut p, 3, 20, 7);
        assert_eq!(p.spare.len(), 1);
        assert_eq!(fired(&mut p, 29, 10, 0), vec![(3, 20, 7)]);
    }

    #[test]
    fn a_fired_window_within_its_lateness_reports_late_firings_until_cleanup() {
        let mut p: WindowPanes<u64, u64> = WindowPanes::new("w");
        add(&mut p, 1, 0, 1);
        assert_eq!(fired(&mut p, 9, 10, 5), vec![(1, 0, 1)]);
        assert_eq!(add(&mut p, 1, 0, 1), (2, true), "late firing");
        assert_eq!(
            fired(&mut p, 13, 10, 5),
            vec![],
            "fires once on the watermark"
        );
        assert_eq!(p.len(), 1);
        assert_eq!(fired(&mut p, 14, 10, 5), vec![]);
        assert_eq!(p.len(), 0, "cleaned up at end - 1 + lateness");
        // A window first seen after its end (within lateness) is fired.
        assert!(p.fold_or_fire(&ctx(4), 20, true, |a| a.unwrap_or(0) + 1));
        // A new window before its end is not.
        assert!(!p.fold_or_fire(&ctx(4), 30, false, |a| a.unwrap_or(0) + 1));
    }

    #[test]
    fn a_run_folds_into_an_open_window_and_a_restored_fired_window_refuses_it() {
        let mut p: WindowPanes<u64, u64> = WindowPanes::new("w");
        let item = |k: u64, v: u64| (k, k.key_hash(), v);
        let mut rest = vec![item(2, 10), item(1, 5), item(3, 1)].into_iter();
        let folded = p.fold_run(0, item(1, 1), &mut rest, |a, v| a.unwrap_or(0) + v);
        assert!(folded.is_ok());
        assert_eq!(rest.len(), 0, "the whole run");
        assert_eq!(p.get(&ctx(1), 0), Some(6));
        assert_eq!(p.get(&ctx(2), 0), Some(10));
        assert_eq!(p.get(&ctx(3), 0), Some(1));
        // Restored as fired (within its lateness): every record of it is a
        // late firing, so a run takes none and hands its first one back.
        p.insert((7, 10, 4, 1), 7u64.key_hash());
        let mut rest = vec![item(8, 1)].into_iter();
        let refused = p.fold_run(10, item(7, 2), &mut rest, |a, v| a.unwrap_or(0) + v);
        assert_eq!(refused.err(), Some(item(7, 2)));
        assert_eq!(rest.len(), 1, "nothing taken");
        assert_eq!(p.get(&ctx(7), 10), Some(4), "nothing folded");
    }

    #[test]
    fn frozen_panes_write_every_entry_once_in_its_key_group_and_restore_them() {
        let mut p: WindowPanes<u64, u64> = WindowPanes::new("w");
        for k in 0..200u64 {
            add(&mut p, k, 0, k);
            add(&mut p, k, 10, 2 * k);
        }
        let _ = fired(&mut p, 9, 10, 100);
        let frozen = p.freeze();
        // A write after the freeze is not in the view.
        add(&mut p, 1000, 10, 1);
        assert_eq!(FrozenKeyedState::len(&frozen), 400);
        let range = KeyGroupRange::new(0, 128);
        let mut out = Vec::new();
        let mut entries = Vec::new();
        for part in 0..frozen.chunk_count() {
            frozen.serialize_part(128, range, part..part + 1, &mut out);
            for (kg, buf) in out.iter().enumerate() {
                let mut at = 0;
                while at < buf.len() {
                    let (e, n) =
                        <WindowPanes<u64, u64> as RestoreSink>::decode(&buf[at..]).unwrap();
                    assert_eq!(
                        weir_state::key_group_for_hash(e.0.key_hash(), 128),
                        kg as u32
                    );
                    entries.push(e);
                    at += n;
                }
            }
        }
        entries.sort();
        let mut want: Vec<_> = (0..200u64)
            .flat_map(|k| [(k, 0, k, 1), (k, 10, 2 * k, 0)])
            .collect();
        want.sort();
        assert_eq!(entries, want);
        // Restored, window 0 is fired (late firings only), window 10 not.
        let mut r: WindowPanes<u64, u64> = WindowPanes::new("w");
        for e in entries {
            let h = e.0.key_hash();
            r.insert(e, h);
        }
        assert_eq!(r.len(), 400);
        assert_eq!(add(&mut r, 7, 0, 1), (8, true));
        let got = fired(&mut r, 19, 10, 0);
        assert_eq!(got.len(), 200);
        assert!(got.iter().all(|&(k, s, a)| s == 10 && a == 2 * k));
    }
}
