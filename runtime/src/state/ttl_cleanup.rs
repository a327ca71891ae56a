//! TTL cleanup that frees memory (Flink's `TtlIncrementalCleanup` with
//! `cleanupIncrementally`, and `cleanupFullSnapshot`): how many expired
//! entries of a state's tables are looked for, and when.
//!
//! Every table of a state with TTL is swept by a cursor that persists
//! between steps ([`weir_state::ValueState::purge_step`]); each step checks
//! a bounded number of entries and removes the expired ones, and a table
//! left under 1/8 full shrinks, so its arena goes back to the system. The
//! steps are triggered by:
//!
//! - every access to the state (a read, write or clear of any key):
//!   `cleanup_size` entries, Flink's incremental cleanup;
//! - with `run_for_every_record`, every record the operator processes:
//!   `cleanup_size` entries per record and state (`CleanupTrigger::Records`);
//! - the operator's periodic tick (`TICK`, 10 ms, from its `flush`, which runs
//!   on every poll of its task, busy or idle, and wakes a parked worker by
//!   its deadline while a TTL state holds entries): enough entries that the
//!   whole table is swept about every half TTL (at least every 10 minutes),
//!   so that a job whose input stopped reclaims all the same. Flink has no
//!   such trigger: there, keys nobody touches again stay until a restore.
//! - a snapshot with `cleanup_full_snapshot`: the snapshot leaves the
//!   expired entries out, and the ticks after it sweep the live table at a
//!   higher rate (`SNAPSHOT_TICK_ENTRIES`) until every entry it had was
//!   checked, while the frozen view is written. (Removing them in the
//!   barrier's synchronous part would cost it a pass over the table; the
//!   chunks the sweep writes are copied for the view, as any write is.)
//!
//! A state without TTL is never visited for cleanup, and an operator
//! whose function has no TTL state stops ticking after its first tick:
//! the per-record path of a job without TTL is unchanged.

use std::time::Duration;

use weir_state::SweepStep;

use crate::state::ttl::Ttl;

/// How often an operator with TTL state runs a cleanup tick.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// Most entries one tick checks in one table outside a snapshot sweep.
const TICK_MAX_ENTRIES: usize = 1 << 16;

/// Entries one tick checks in one table while a snapshot sweep is pending.
pub(crate) const SNAPSHOT_TICK_ENTRIES: usize = 1 << 16;

/// Shortest and longest time a tick-driven sweep of a whole table takes.
const SWEEP_PERIOD_MIN: Duration = Duration::from_millis(100);
const SWEEP_PERIOD_MAX: Duration = Duration::from_secs(600);

/// Why a cleanup pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CleanupTrigger {
    /// The operator's periodic tick.
    Tick,
    /// The operator processed this many records: states cleaning up for
    /// every record check `cleanup_size` entries per record.
    Records(usize),
}

/// One cleanup pass over a function's keyed states (through its
/// `visit_state`), and what it learned about them.
#[derive(Debug)]
pub(crate) struct CleanupPass {
    /// Why it runs.
    pub(crate) trigger: CleanupTrigger,
    /// A state visited has TTL.
    pub(crate) any_ttl: bool,
    /// A state visited cleans up for every record.
    pub(crate) per_record: bool,
    /// A TTL state visited still holds entries: the tick should return.
    pub(crate) pending: bool,
}

impl CleanupPass {
    /// A pass for `trigger`.
    pub(crate) fn new(trigger: CleanupTrigger) -> Self {
        Self {
            trigger,
            any_ttl: false,
            per_record: false,
            pending: false,
        }
    }
}

/// What a state kind with TTL gives the cleanup: its TTL, its entries and
/// a step over its tables.
pub(crate) trait TtlTables {
    /// The state's TTL.
    fn ttl(&self) -> &Ttl;
    /// Entries stored (expired ones not removed yet included).
    fn stored_entries(&self) -> usize;
    /// Slots of the table the sweep walks.
    fn slots(&self) -> usize;
    /// Checks up to `budget` entries from the sweep cursor, removes those
    /// expired at `now`, and shrinks tables left sparse.
    fn purge(&mut self, budget: usize, now: u64) -> SweepStep;

    /// The cleanup of one access to the state at `now`.
    #[inline]
    fn cleanup_on_access(&mut self, now: u64) {
        if let Some(inc) = self.ttl().incremental() {
            self.purge(inc.cleanup_size, now);
        }
    }
}

/// Runs `pass` on `state` (nothing without TTL).
pub(crate) fn run_pass<S: TtlTables>(state: &mut S, pass: &mut CleanupPass) {
    let ttl = state.ttl();
    let Some(ttl_ms) = ttl.ttl_millis() else {
        return;
    };
    pass.any_ttl = true;
    let incremental = ttl.incremental();
    pass.per_record |= incremental.is_some_and(|i| i.run_for_every_record);
    let entries = state.stored_entries();
    let budget = match pass.trigger {
        CleanupTrigger::Records(n) => incremental
            .filter(|i| i.run_for_every_record)
            .map_or(0, |i| i.cleanup_size.saturating_mul(n)),
        CleanupTrigger::Tick => {
            // Sized by the table's slots, not its entries: a budget that
            // shrank with the entries left would remove a fixed share of
            // them per tick and never finish. A step scans at most
            // SLOTS_PER_ENTRY slots per entry of its budget, so a sweep
            // of a sparse table takes no longer.
            let work = state.slots();
            let mut budget = incremental.map_or(0, |i| tick_budget(work, ttl_ms, i.cleanup_size));
            if ttl.snapshot_sweep() > 0 {
                budget = budget.max(SNAPSHOT_TICK_ENTRIES);
            }
            budget
        }
    };
    if budget > 0 && entries > 0 {
        let now = ttl.now();
        let step = state.purge(budget, now);
        if pass.trigger == CleanupTrigger::Tick {
            let ttl = state.ttl();
            ttl.snapshot_swept(if step.examined == 0 {
                usize::MAX
            } else {
                step.examined
            });
        }
    }
    pass.pending |= state.stored_entries() > 0;
}

/// Entries one tick checks in a table of `slots` slots whose TTL is
/// `ttl_ms`: a whole sweep about every half TTL, within the bounds.
fn tick_budget(slots: usize, ttl_ms: u64, cleanup_size: usize) -> usize {
    let period = Duration::from_millis(ttl_ms / 2).clamp(SWEEP_PERIOD_MIN, SWEEP_PERIOD_MAX);
    let per_tick = (slots as u128 * TICK.as_micros()) / period.as_micros().max(1);
    usize::try_from(per_tick)
        .unwrap_or(usize::MAX)
        .clamp(cleanup_size, TICK_MAX_ENTRIES)
}

#[cfg(test)]
mod tests;
