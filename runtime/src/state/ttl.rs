//! State time-to-live (Flink's `StateTtlConfig`): keyed state entries that
//! expire a fixed time after they were last written (or read).
//!
//! A state configured with a [`StateTtlConfig`] stores each entry with the
//! time of its last access in milliseconds of a [`TtlClock`]. An entry is
//! expired once `last access + ttl <= now`; expired entries are never
//! returned ([`StateVisibility::NeverReturnExpired`]). They are removed
//! incrementally when they are accessed (a read of the current key finds
//! them and deletes them) and fully at snapshot time: a checkpoint never
//! writes an expired entry. What counts as an access is the
//! [`UpdateType`]: writes only, or reads and writes.
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

/// Time-to-live of one keyed state's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateTtlConfig {
    /// How long an entry lives after its last access.
    pub ttl: Duration,
    /// What counts as an access.
    pub update_type: UpdateType,
    /// Whether expired entries may be seen.
    pub visibility: StateVisibility,
}

impl StateTtlConfig {
    /// Entries live `ttl` after they were created or last written, and
    /// expired ones are never returned (Flink's defaults).
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            update_type: UpdateType::OnCreateAndWrite,
            visibility: StateVisibility::NeverReturnExpired,
        }
    }

    /// The same configuration with update type `update_type`.
    pub fn with_update_type(mut self, update_type: UpdateType) -> Self {
        self.update_type = update_type;
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

/// The TTL settings a state carries: none, or a configuration and its
/// clock. Without TTL every timestamp is 0 and the clock is never read.
#[derive(Clone, Default)]
pub(crate) struct Ttl {
    config: Option<(StateTtlConfig, u64, Rc<dyn TtlClock>)>,
}

impl Ttl {
    /// TTL `config` measured by `clock`.
    pub(crate) fn new(config: StateTtlConfig, clock: Rc<dyn TtlClock>) -> Self {
        Self {
            config: Some((config, config.ttl_millis(), clock)),
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
        self.config.as_ref().map_or(0, |(_, _, c)| c.now_millis())
    }

    /// True if an entry last accessed at `stamp` has expired at `now`.
    #[inline]
    pub(crate) fn expired(&self, stamp: u64, now: u64) -> bool {
        self.config
            .as_ref()
            .is_some_and(|&(_, ttl, _)| stamp.saturating_add(ttl) <= now)
    }

    /// True if reads renew entries.
    #[inline]
    pub(crate) fn renew_on_read(&self) -> bool {
        self.config
            .as_ref()
            .is_some_and(|(c, _, _)| c.update_type == UpdateType::OnReadAndWrite)
    }

    /// `(now, ttl in ms)` for a snapshot's full cleanup, if TTL is on.
    pub(crate) fn snapshot_cutoff(&self) -> Option<(u64, u64)> {
        self.config
            .as_ref()
            .map(|(_, ttl, c)| (c.now_millis(), *ttl))
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
