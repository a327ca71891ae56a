//! Walking a [`ValueState`] a few entries at a time to remove the ones a
//! caller says are dead (TTL's incremental cleanup, Flink's
//! `StateTtlConfig.cleanupIncrementally`), and giving memory back once the
//! table has become sparse.
//!
//! The table keeps a *sweep cursor*: the slot the next step starts at.
//! [`ValueState::purge_step`] examines up to a budget of entries from
//! there, removes those its predicate picks (with the table's
//! backward-shift deletion) and leaves the cursor where it stopped; the
//! next step goes on from there and wraps around at the end, so that
//! repeated steps sweep the whole table again and again.
//!
//! Backward-shift deletion moves entries *back* into the hole a removal
//! leaves, never forward: removing the entry at the cursor can only move
//! entries from after the cursor into the cursor's slot or after it, so the
//! step examines the cursor's slot again and misses none. (Removals
//! elsewhere, by the user, may move an entry from after the cursor to
//! before it; that entry is then seen one sweep later. It can happen only
//! finitely often: a move only ever brings an entry closer to its home
//! bucket, and inserts never move entries.) A rebuild, growing or
//! shrinking, starts the sweep again at slot 0.
//!
//! A caller whose removal has side effects in other tables (a map entry
//! unlinks itself from its neighbours) uses [`ValueState::sweep_step`]
//! instead, which collects the keys and moves the cursor back to the first
//! one collected: once the caller has removed them all, entries their
//! removals shifted lie at or after it and are examined by the next step.
//!
//! [`ValueState::shrink_if_sparse`] rebuilds a table whose entries use
//! less than 1/8 of its slots into one about 2.5 times their number (so a
//! table that just shrank does not grow back at once), and drops the arena
//! of an empty one: the old arena's chunks go back to the system (a slab
//! is unmapped, heap chunks freed) as soon as no frozen view holds them. A
//! view taken before keeps the old table, as it does across growth.
//!
//! A table's buckets are the top bits of the hash, and a sweep removes
//! entries in slot order, that is in hash order: entries that expire while
//! a sweep goes round are removed behind the cursor first, so the
//! survivors can crowd one range of hashes. Shrunk by their number alone,
//! such a table packs that range into a run of full slots as long as the
//! survivors are many (measured: 261 k entries of a 1 Mi-slot table in one
//! run, each removal's backward shift then moving thousands of entries, a
//! tick of 2,097 removals taking seconds, and the TTL sweep stalling).
//! So the target is sized by the densest of [`DENSITY_PARTS`] equal slot
//! ranges, times their number: a range keeps its hashes in any smaller
//! table, and stays at most as full as the table is allowed to be.

use std::rc::Rc;

use super::{capacity_for, ValueState, EMPTY, GROUP, HIGH_BITS, MIN_CAPACITY};
use crate::arena::{SlotArena, CHUNK_LEN};
use crate::bounds::{StateKey, StateValue};

/// Slots a step may scan per entry of its budget: bounds a step over a
/// table that is mostly empty slots.
const SLOTS_PER_ENTRY: usize = 64;

/// Equal slot ranges whose entries [`ValueState::shrink_if_sparse`]
/// counts: a shrunk table is sized for the densest (see the [module
/// doc](self)).
const DENSITY_PARTS: usize = 64;

/// What one [`ValueState::purge_step`] or [`ValueState::sweep_step`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepStep {
    /// Entries examined.
    pub examined: usize,
    /// Entries removed (or, for `sweep_step`, collected).
    pub removed: usize,
    /// The cursor went past the table's last slot: a sweep ended.
    pub wrapped: bool,
}

impl<K, V> ValueState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    /// The slot the next sweep step starts at.
    pub fn sweep_cursor(&self) -> usize {
        self.sweep
    }

    /// Walks the sweep step's slots from the cursor: calls `visit(pos)` on
    /// each used slot, up to `budget` of them (and at most
    /// [`SLOTS_PER_ENTRY`] slots scanned per entry of the budget, and at
    /// most one lap, so that no entry is visited twice in one step);
    /// `visit` returns true to stay on `pos` (it removed the entry there,
    /// so another may have moved into it). Returns the step and the
    /// position it stopped at.
    fn walk(
        &mut self,
        budget: usize,
        mut visit: impl FnMut(&mut Self, usize) -> bool,
    ) -> SweepStep {
        let mut step = SweepStep::default();
        if self.len == 0 || self.slots.is_empty() || budget == 0 {
            return step;
        }
        let capacity = self.capacity();
        let mut pos = if self.sweep < capacity { self.sweep } else { 0 };
        let max_scan = budget.saturating_mul(SLOTS_PER_ENTRY).min(capacity);
        let mut scanned = 0;
        while step.examined < budget && scanned < max_scan && self.len > 0 {
            if pos >= capacity {
                pos = 0;
                step.wrapped = true;
            }
            if self.tags[pos] == EMPTY {
                // Skip a whole empty group at once (groups at multiples
                // of GROUP never cross the end: capacities are powers of
                // two of at least GROUP).
                if pos.is_multiple_of(GROUP) && self.group_at(pos) & HIGH_BITS == 0 {
                    pos += GROUP;
                    scanned += GROUP;
                } else {
                    pos += 1;
                    scanned += 1;
                }
                continue;
            }
            step.examined += 1;
            scanned += 1;
            if visit(self, pos) {
                step.removed += 1;
            } else {
                pos += 1;
            }
        }
        if pos >= capacity {
            pos = 0;
            step.wrapped = true;
        }
        self.sweep = pos;
        step
    }

    /// Examines up to `budget` entries from the sweep cursor and removes
    /// those for which `dead(key, value)` is true (see the [module
    /// doc](self)). The cursor stays where the step stopped.
    pub fn purge_step(&mut self, budget: usize, mut dead: impl FnMut(&K, &V) -> bool) -> SweepStep {
        self.walk(budget, |s, pos| {
            let slot = s.slots.get(pos);
            if !dead(&slot.key, &slot.value) {
                return false;
            }
            drop(s.take_slot(pos));
            s.backward_shift(pos);
            s.len -= 1;
            true
        })
    }

    /// Examines up to `budget` entries from the sweep cursor and appends to
    /// `out` the keys of those for which `dead(key, value)` is true,
    /// removing nothing: the caller must then remove every key collected
    /// (before any other step). The cursor is left at the first key
    /// collected, so that entries the removals shift back are examined by
    /// the next step; with nothing collected, where the step stopped.
    pub fn sweep_step(
        &mut self,
        budget: usize,
        mut dead: impl FnMut(&K, &V) -> bool,
        out: &mut Vec<K>,
    ) -> SweepStep {
        let mut first = None;
        let mut step = self.walk(budget, |s, pos| {
            let slot = s.slots.get(pos);
            if dead(&slot.key, &slot.value) {
                first.get_or_insert(pos);
                out.push(slot.key.clone());
            }
            false
        });
        if let Some(first) = first {
            step.removed = out.len();
            // Back to the first dead entry: a wrap past it is undone too.
            step.wrapped &= first >= self.sweep;
            self.sweep = first;
        }
        step
    }

    /// Shrinks a table whose entries fill less than 1/8 of its slots (see
    /// the [module doc](self)); returns whether it did. Tables of one
    /// arena chunk or less are left alone (a chunk is the smallest
    /// allocation), unless empty.
    pub fn shrink_if_sparse(&mut self) -> bool {
        let capacity = self.capacity();
        if self.slots.is_empty() || self.len.saturating_mul(8) >= capacity {
            return false;
        }
        if self.len == 0 {
            self.release_arena();
            return true;
        }
        if capacity <= CHUNK_LEN {
            return false;
        }
        // Found too uneven before: look again once a quarter of those
        // entries are gone (counting costs a pass over the tags).
        if self.uneven_at != 0 && self.len.saturating_mul(4) > self.uneven_at.saturating_mul(3) {
            return false;
        }
        // At least the entry count: the densest part holds at least the
        // average.
        let local = self.densest_part().saturating_mul(DENSITY_PARTS);
        let target = capacity_for(local.saturating_mul(2), &self.name).max(MIN_CAPACITY);
        if target >= capacity {
            self.uneven_at = self.len;
            return false;
        }
        self.rebuild(target);
        true
    }

    /// The entries of the fullest of [`DENSITY_PARTS`] equal slot ranges
    /// (a table of more than one arena chunk: a range is at least a group).
    fn densest_part(&self) -> usize {
        let part = self.capacity() / DENSITY_PARTS;
        (0..DENSITY_PARTS)
            .map(|p| {
                (p * part..(p + 1) * part)
                    .step_by(GROUP)
                    .map(|pos| (self.group_at(pos) & HIGH_BITS).count_ones() as usize)
                    .sum::<usize>()
            })
            .max()
            .unwrap_or(0)
    }

    /// Drops the arena and tags of an empty table: the table is as
    /// [`ValueState::new`] made it, and the next insert allocates again.
    fn release_arena(&mut self) {
        debug_assert_eq!(self.len, 0);
        let old = std::mem::replace(&mut self.slots, SlotArena::empty());
        self.retired_chunk_copies += old.cow_copies();
        drop(old);
        self.tags = Rc::new([]);
        self.set_capacity(MIN_CAPACITY);
        self.sweep = 0;
    }
}

#[cfg(test)]
mod tests;
