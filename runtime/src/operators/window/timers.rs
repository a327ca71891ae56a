//! The general window operator's timers: Flink's timers namespaced by
//! window, `(key, window, time)`.
//!
//! They are a [`KeyedTimerService`] whose key is the record's key with the
//! window ([`WindowTimerKey`]): its key hash is the record key's, so the
//! timers are written per key group of the key and follow it when the job
//! is rescaled; two windows of one key keep separate timers at the same
//! time (a trigger deleting its timer does not delete another window's).
//! Checkpoint entries (state names [`EVENT_TIMERS_STATE`] and
//! [`PROCESSING_TIMERS_STATE`]): `key, window start, window end,
//! timestamp`.
//!
//! [`WindowTimers`] hands the keyed operator's core the timers as
//! [`TimerQueues`] of the plain key; the window of the timer it returned
//! last is kept for the operator's `on_timer`
//! ([`fired_window`](WindowTimers::fired_window)), which the core calls
//! right after.
//!
//! **Processing time.** Flink fires a processing-time timer at `t` once the
//! clock passed `t` (its timer service waits `t - now + 1` ms), so that no
//! record of the last millisecond comes after it. The timers keep Flink's
//! `t` and are due when the clock reaches `t + 1`.
//!
//! [`EVENT_TIMERS_STATE`]: crate::state::timers::EVENT_TIMERS_STATE
//! [`PROCESSING_TIMERS_STATE`]: crate::state::timers::PROCESSING_TIMERS_STATE

use weir_net::{DecodeError, Wire};
use weir_state::{KeyHash, StateKey};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::FrozenKeyedState;
use crate::operators::window::spec::TimeWindow;
use crate::state::key_context::KeyContext;
use crate::state::timers::{KeyedTimerService, TimeDomain, TimerQueues};

/// A timer request of a trigger (or of the window's cleanup), applied to
/// the current key and window after the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerOp {
    /// Register a timer of the domain at the time.
    Register(TimeDomain, i64),
    /// Delete the timer of the domain at the time.
    Delete(TimeDomain, i64),
}

/// A timer's key: the record's key and the window, hashed as the key alone
/// (the hash kept, so no timer operation rehashes the key).
#[derive(Clone, Debug, Default)]
pub struct WindowTimerKey<K> {
    key: K,
    hash: u64,
    start: i64,
    end: i64,
}

impl<K: PartialEq> PartialEq for WindowTimerKey<K> {
    fn eq(&self, other: &Self) -> bool {
        self.start == other.start && self.end == other.end && self.key == other.key
    }
}

impl<K: Eq> Eq for WindowTimerKey<K> {}

impl<K> KeyHash for WindowTimerKey<K> {
    #[inline]
    fn key_hash(&self) -> u64 {
        self.hash
    }
}

impl<K: Wire + KeyHash> Wire for WindowTimerKey<K> {
    fn encoded_len(&self) -> usize {
        self.key.encoded_len() + 16
    }

    fn write(&self, out: &mut [u8]) {
        let n = self.key.encoded_len();
        self.key.write(&mut out[..n]);
        self.start.write(&mut out[n..n + 8]);
        self.end.write(&mut out[n + 8..n + 16]);
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (key, n) = K::read(input)?;
        let ((start, end), m) = <(i64, i64)>::read(&input[n..])?;
        let hash = key.key_hash();
        Ok((
            Self {
                key,
                hash,
                start,
                end,
            },
            n + m,
        ))
    }
}

/// The window operator's timers (see the [module docs](self)).
pub struct WindowTimers<K> {
    service: KeyedTimerService<WindowTimerKey<K>>,
    /// The window of the timer `pop_due` returned last.
    fired: TimeWindow,
}

impl<K: StateKey> WindowTimers<K> {
    /// No timers; processing time by `clock`.
    pub fn new(clock: impl Fn() -> i64 + 'static) -> Self {
        Self {
            service: KeyedTimerService::with_clock(clock),
            fired: TimeWindow::new(0, 0),
        }
    }

    fn context(key: &KeyContext<K>, window: &TimeWindow) -> KeyContext<WindowTimerKey<K>> {
        KeyContext::new(WindowTimerKey {
            key: key.key().clone(),
            hash: key.hash(),
            start: window.start,
            end: window.end,
        })
    }

    /// Registers `key`'s timer of `domain` at `time` for `window`.
    #[inline]
    pub fn register(
        &mut self,
        key: &KeyContext<K>,
        window: &TimeWindow,
        domain: TimeDomain,
        time: i64,
    ) {
        let ctx = Self::context(key, window);
        match domain {
            TimeDomain::EventTime => self.service.register_event_time_timer(&ctx, time),
            TimeDomain::ProcessingTime => self.service.register_processing_time_timer(&ctx, time),
        }
    }

    /// Deletes `key`'s timer of `domain` at `time` for `window`, if any.
    pub fn delete(
        &mut self,
        key: &KeyContext<K>,
        window: &TimeWindow,
        domain: TimeDomain,
        time: i64,
    ) {
        let ctx = Self::context(key, window);
        match domain {
            TimeDomain::EventTime => self.service.delete_event_time_timer(&ctx, time),
            TimeDomain::ProcessingTime => self.service.delete_processing_time_timer(&ctx, time),
        }
    }

    /// Applies (and drains) the timer requests `ops` of `key`'s `window`.
    #[inline]
    pub fn apply(&mut self, key: &KeyContext<K>, window: &TimeWindow, ops: &mut Vec<TimerOp>) {
        for op in ops.drain(..) {
            match op {
                TimerOp::Register(domain, time) => self.register(key, window, domain, time),
                TimerOp::Delete(domain, time) => self.delete(key, window, domain, time),
            }
        }
    }

    /// The window of the timer [`TimerQueues::pop_due`] returned last.
    #[inline]
    pub fn fired_window(&self) -> TimeWindow {
        self.fired
    }

    /// Registered timers of both domains, all keys and windows.
    pub fn len(&self) -> usize {
        self.service.event_time_timers() + self.service.processing_time_timers()
    }

    /// True without timers.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The current processing time.
    pub fn current_processing_time(&self) -> i64 {
        self.service.current_processing_time()
    }

    fn fired(&mut self, ts: i64, k: WindowTimerKey<K>) -> (i64, K) {
        self.fired = TimeWindow::new(k.start, k.end);
        (ts, k.key)
    }
}

impl<K: StateKey + Wire + 'static> WindowTimers<K> {
    /// The earliest processing-time timer whatever the clock says (the end
    /// of the input), as `(time, key)`; its window is
    /// [`fired_window`](Self::fired_window).
    pub fn pop_processing(&mut self) -> Option<(i64, K)> {
        let (ts, k) = self.service.pop_due(TimeDomain::ProcessingTime, i64::MAX)?;
        Some(self.fired(ts, k))
    }
}

impl<K> TimerQueues<K> for WindowTimers<K>
where
    K: StateKey + Wire + 'static,
{
    fn advance_watermark(&mut self, watermark: i64) {
        self.service.advance_watermark(watermark);
    }

    fn pop_due(&mut self, domain: TimeDomain, time: i64) -> Option<(i64, K)> {
        // A processing-time timer at `t` is due once the clock passed `t`.
        let due = match domain {
            TimeDomain::EventTime => time,
            TimeDomain::ProcessingTime => time.saturating_sub(1),
        };
        let (ts, k) = self.service.pop_due(domain, due)?;
        Some(self.fired(ts, k))
    }

    fn next_processing_timer(&mut self) -> Option<i64> {
        self.service
            .next_processing_timer()
            .map(|t| t.saturating_add(1))
    }

    fn processing_time(&self) -> i64 {
        self.service.processing_time()
    }

    fn snapshot(&self, out: &mut Vec<(String, Box<dyn FrozenKeyedState>)>) {
        self.service.snapshot(out);
    }

    fn restore(&mut self, scope: &RestoreScope<'_>) -> Result<(), RestoreError> {
        self.service.restore(scope)
    }

    fn registered(&self, domain: TimeDomain) -> Vec<(i64, K)> {
        self.service
            .registered(domain)
            .into_iter()
            .map(|(ts, k)| (ts, k.key))
            .collect()
    }

    fn set_processing_time_clock(&mut self, clock: Box<dyn Fn() -> i64>) {
        self.service.set_processing_time_clock(clock);
    }
}
