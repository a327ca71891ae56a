//! State time-to-live (Flink's `StateTtlConfig`): keyed state entries that
//! expire a fixed time after they were last written (or read).
//!
//! A state configured with a [`StateTtlConfig`] stores each entry with the
//! time of its last access in milliseconds of a [`TtlClock`]. An entry is
//! expired once `last access + ttl <= now`; expired entries are never
//! returned ([`StateVisibility::NeverReturnExpired`]). What counts as an
//! access is the [`UpdateType`]: writes only, or reads and writes.
//!
//! Expired entries are removed, and their memory given back, by the
//! cleanup strategies of the configuration (Flink's `cleanupIncrementally`
//! and `cleanupFullSnapshot`; both on by default, see
//! [`crate::state::ttl_cleanup`]): a read of the current key deletes its
//! expired entry; every state access, optionally every record, and a
//! periodic tick of the operator (also while its input is idle) check a
//! bounded number of entries from a cursor that sweeps the whole table;
//! a checkpoint never writes an expired entry and has the live table
//! swept soon after. A table whose entries fall under 1/8 of its slots
//! shrinks.
//!
//! The clock is processing time ([`ProcessingTimeClock`], wall-clock
//! milliseconds since the Unix epoch, so timestamps stay meaningful across
//! a restore) unless the state is given another one: tests use a
//! [`ManualClock`] whose time they set.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When an entry's last-access timestamp is renewed (Flink's
/// `StateTtlConfig.UpdateType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateType {
    /// Only creating or writing an entry renews it.
    OnCreateAndWrite,
    /// Reading an entry renews it too.
    OnReadAndWrite,
}

/// Whether expired entries not cleaned up yet may be returned (Flink's
/// `StateTtlConfig.StateVisibility`). Only the strict kind exists here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateVisibility {
    /// An expired entry is never returned, cleaned up or not.
    NeverReturnExpired,
}

/// Incremental cleanup (Flink's `StateTtlConfig.cleanupIncrementally`):
/// how many entries each trigger checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IncrementalCleanup {
    /// Entries checked on every access to the state (and per record with
    /// `run_for_every_record`); Flink's default is 5.
    pub cleanup_size: usize,
    /// Also check `cleanup_size` entries for every record the operator
    /// processes, whether or not it touches this state.
    pub run_for_every_record: bool,
}

/// Flink's default incremental cleanup: 5 entries per state access.
pub const DEFAULT_CLEANUP_SIZE: usize = 5;

/// Time-to-live of one keyed state's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateTtlConfig {
    /// How long an entry lives after its last access.
    pub ttl: Duration,
    /// What counts as an access.
    pub update_type: UpdateType,
    /// Whether expired entries may be seen.
    pub visibility: StateVisibility,
    /// Incremental cleanup in the background (per access, per record, and
    /// on the operator's periodic tick); `None` leaves expired entries
    /// until they are read or a snapshot sweeps them.
    pub incremental_cleanup: Option<IncrementalCleanup>,
    /// Whether a snapshot has the live table swept of the entries it left
    /// out (they are never written either way).
    pub cleanup_full_snapshot: bool,
}

impl StateTtlConfig {
    /// Entries live `ttl` after they were created or last written,
    /// expired ones are never returned (Flink's defaults), and they are
    /// cleaned up incrementally, 5 per access, and at every snapshot.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            update_type: UpdateType::OnCreateAndWrite,
            visibility: StateVisibility::NeverReturnExpired,
            incremental_cleanup: Some(IncrementalCleanup {
                cleanup_size: DEFAULT_CLEANUP_SIZE,
                run_for_every_record: false,
            }),
            cleanup_full_snapshot: true,
        }
    }

    /// The same configuration with update type `update_type`.
    pub fn with_update_type(mut self, update_type: UpdateType) -> Self {
        self.update_type = update_type;
        self
    }

    /// The same configuration cleaning up incrementally (Flink's
    /// `cleanupIncrementally(cleanupSize, runCleanupForEveryRecord)`):
    /// `cleanup_size` entries (at least 1) checked per state access, and
    /// per processed record if `run_for_every_record`.
    pub fn cleanup_incrementally(
        mut self,
        cleanup_size: usize,
        run_for_every_record: bool,
    ) -> Self {
        self.incremental_cleanup = Some(IncrementalCleanup {
            cleanup_size: cleanup_size.max(1),
            run_for_every_record,
        });
        self
    }

    /// The same configuration without incremental cleanup (Flink's
    /// `disableCleanupInBackground`): expired entries stay in memory until
    /// read, or until a snapshot sweeps them if
    /// [`cleanup_full_snapshot`](Self::cleanup_full_snapshot) is on.
    pub fn disable_cleanup_in_background(mut self) -> Self {
        self.incremental_cleanup = None;
        self
    }

    /// The same configuration with snapshot cleanup `on` (Flink's
    /// `cleanupFullSnapshot`): a snapshot leaves expired entries out
    /// always; with this on it also has the live table swept of them.
    pub fn cleanup_full_snapshot(mut self, on: bool) -> Self {
        self.cleanup_full_snapshot = on;
        self
    }

    /// The time to live in whole milliseconds (at least 1).
    pub fn ttl_millis(&self) -> u64 {
        u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

/// A source of time for state TTL, in milliseconds.
pub trait TtlClock {
    /// The current time in milliseconds.
    fn now_millis(&self) -> u64;
}

/// Processing time: wall-clock milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessingTimeClock;

impl TtlClock for ProcessingTimeClock {
    fn now_millis(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that only moves when told to: clones share one time, so a test
/// keeps a clone and advances the time a state sees.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Rc<Cell<u64>>,
}

impl ManualClock {
    /// A clock at `millis`.
    pub fn new(millis: u64) -> Self {
        Self {
            now: Rc::new(Cell::new(millis)),
        }
    }

    /// Sets the time to `millis`.
    pub fn set(&self, millis: u64) {
        self.now.set(millis);
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.now.set(self.now.get().saturating_add(by));
    }
}

impl TtlClock for ManualClock {
    fn now_millis(&self) -> u64 {
        self.now.get()
    }
}

/// The TTL settings a state carries: none, or a configuration, its
/// clock and its cleanup bookkeeping. Without TTL every timestamp is 0 and
/// the clock is never read.
#[derive(Clone, Default)]
pub(crate) struct Ttl {
    config: Option<TtlOn>,
}

/// A state's TTL when it has one.
#[derive(Clone)]
struct TtlOn {
    config: StateTtlConfig,
    /// `config.ttl` in milliseconds.
    ttl: u64,
    clock: Rc<dyn TtlClock>,
    /// Entries the periodic tick still checks at the snapshot rate: set by
    /// a snapshot with `cleanup_full_snapshot` to the table's size.
    snapshot_sweep: Cell<usize>,
}

impl Ttl {
    /// TTL `config` measured by `clock`.
    pub(crate) fn new(config: StateTtlConfig, clock: Rc<dyn TtlClock>) -> Self {
        Self {
            config: Some(TtlOn {
                config,
                ttl: config.ttl_millis(),
                clock,
                snapshot_sweep: Cell::new(0),
            }),
        }
    }

    /// True if the state has a TTL.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.config.is_some()
    }

    /// The timestamp of an access now (0 without TTL).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.config.as_ref().map_or(0, |t| t.clock.now_millis())
    }

    /// True if an entry last accessed at `stamp` has expired at `now`.
    #[inline]
    pub(crate) fn expired(&self, stamp: u64, now: u64) -> bool {
        self.config
            .as_ref()
            .is_some_and(|t| stamp.saturating_add(t.ttl) <= now)
    }

    /// True if reads renew entries.
    #[inline]
    pub(crate) fn renew_on_read(&self) -> bool {
        self.config
            .as_ref()
            .is_some_and(|t| t.config.update_type == UpdateType::OnReadAndWrite)
    }

    /// The time to live in milliseconds, if TTL is on.
    pub(crate) fn ttl_millis(&self) -> Option<u64> {
        self.config.as_ref().map(|t| t.ttl)
    }

    /// The incremental cleanup configured, if TTL and it are on.
    #[inline]
    pub(crate) fn incremental(&self) -> Option<IncrementalCleanup> {
        self.config.as_ref()?.config.incremental_cleanup
    }

    /// Entries the periodic tick still checks at the snapshot rate.
    pub(crate) fn snapshot_sweep(&self) -> usize {
        self.config.as_ref().map_or(0, |t| t.snapshot_sweep.get())
    }

    /// Counts `examined` entries off the snapshot sweep.
    pub(crate) fn snapshot_swept(&self, examined: usize) {
        if let Some(t) = &self.config {
            t.snapshot_sweep
                .set(t.snapshot_sweep.get().saturating_sub(examined));
        }
    }

    /// `(now, ttl in ms)` for a snapshot's full cleanup, if TTL is on; with
    /// `cleanup_full_snapshot`, also schedules a sweep of the live table's
    /// `entries` entries.
    pub(crate) fn snapshot_cutoff(&self, entries: usize) -> Option<(u64, u64)> {
        self.config.as_ref().map(|t| {
            if t.config.cleanup_full_snapshot {
                t.snapshot_sweep.set(entries);
            }
            (t.clock.now_millis(), t.ttl)
        })
    }
}

/// Attaches [`StateTtlConfig`]s to a state.
pub(crate) fn ttl_for(config: StateTtlConfig, clock: Option<Rc<dyn TtlClock>>) -> Ttl {
    Ttl::new(
        config,
        clock.unwrap_or_else(|| Rc::new(ProcessingTimeClock)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_follows_the_manual_clock() {
        let clock = ManualClock::new(1_000);
        let ttl = Ttl::new(
            StateTtlConfig::new(Duration::from_millis(100)),
            Rc::new(clock.clone()),
        );
        let stamp = ttl.now();
        assert_eq!(stamp, 1_000);
        clock.advance(Duration::from_millis(99));
        assert!(!ttl.expired(stamp, ttl.now()));
        clock.advance(Duration::from_millis(1));
        assert!(ttl.expired(stamp, ttl.now()));
        assert!(!ttl.renew_on_read());
        assert!(!Ttl::default().expired(0, u64::MAX));
    }
}
