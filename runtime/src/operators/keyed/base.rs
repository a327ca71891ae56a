//! What every keyed operator shares, whatever its function: the keyed
//! process operator and the keyed broadcast operator both run their
//! function's keyed states and timers through this core.
//!
//! - At build time, [`build_keyed_function`] makes the subtask's function,
//!   checks the states it creates against those it visits (one name
//!   check, `check_state_names`), and restores its keyed states and
//!   timers from the checkpoint being restored.
//! - While it runs, a [`KeyedCore`] holds the operator's identity (uid,
//!   subtask, owned key groups), its event time and whether its input
//!   ended; it fires due timers into a [`TimerTarget`] (Flink's
//!   `InternalTimerService` driving `onTimer`) and snapshots the keyed
//!   states and timers at a barrier. It also runs the TTL cleanup of the
//!   function's states ([`crate::state::ttl_cleanup`]): a tick every
//!   10 ms from the operator's flush, and a step per batch of records for
//!   states that clean up for every record; a function without TTL state
//!   is visited once, found to have none, and never again.

use std::time::Instant;

use weir_state::KeyGroupRange;

use crate::build::context::{BuildContext, FunctionSite};
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::FlushOutcome;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::{OperatorState, TaskSnapshot};
use crate::core::subtask::SubtaskInfo;
use crate::core::time::processing_deadline;
use crate::state::key_context::KeyContext;
use crate::state::registry::{check_state_names, created_by, StateKind};
use crate::state::timers::{TimeDomain, TimerQueues, EVENT_TIMERS_STATE, PROCESSING_TIMERS_STATE};
use crate::state::ttl_cleanup::{CleanupPass, CleanupTrigger, TICK as TTL_TICK};
use crate::state::visitor::KeyedStates;

/// Name of a keyed process operator's end-of-input flag in its inline
/// state: set once `on_end_of_input` ran, so that a restore after it does
/// not run it again.
pub const INPUT_ENDED_STATE: &str = "keyed.input-ended";

/// What the core needs of a keyed function, as plain functions so that
/// every kind of keyed function can hand them over: its keyed states and
/// its timer service.
pub struct KeyedHooks<F, K> {
    /// The function's `visit_state`.
    pub visit_state: fn(&mut F, &mut KeyedStates<'_>),
    /// The function's `timer_service`.
    pub timer_service: fn(&mut F) -> Option<&mut dyn TimerQueues<K>>,
}

/// A keyed function built for one subtask, its states restored.
pub struct BuiltKeyedFunction<F> {
    /// The function.
    pub func: F,
    /// Whether the restored checkpoint was taken after the operator's end
    /// of input ([`INPUT_ENDED_STATE`]).
    pub input_ended: bool,
}

/// Makes subtask `ctx.info`'s function of keyed operator `uid` with
/// `factory`; with checkpointing on, checks that it visits every keyed
/// state it creates, under unique names that are not its timers'; when
/// restoring, fills its keyed states and timers from the checkpoint, then
/// lets `restore_more` restore the operator's own state from the same
/// scope. `what` names the operator in messages ("keyed operator").
///
/// A failed check or restore is a [`BuildError`] naming the operator and
/// the checkpoint: the task does not start.
pub fn build_keyed_function<F, K>(
    ctx: &BuildContext<'_>,
    uid: &str,
    what: &'static str,
    factory: impl FnOnce(&SubtaskInfo) -> F,
    hooks: KeyedHooks<F, K>,
    restore_more: impl FnOnce(&RestoreScope<'_>) -> Result<(), BuildError>,
) -> Result<BuiltKeyedFunction<F>, BuildError> {
    make_keyed_function(&ctx.function_site(uid, what), factory, hooks, restore_more)
}

/// [`build_keyed_function`] at `site`: makes the function with `factory`,
/// checks its state names if asked, and restores its keyed states, timers
/// and end-of-input flag (and, through `restore_more`, the operator's own
/// state) from the checkpoint the site names.
pub fn make_keyed_function<F, K>(
    site: &FunctionSite<'_>,
    factory: impl FnOnce(&SubtaskInfo) -> F,
    hooks: KeyedHooks<F, K>,
    restore_more: impl FnOnce(&RestoreScope<'_>) -> Result<(), BuildError>,
) -> Result<BuiltKeyedFunction<F>, BuildError> {
    let (uid, what) = (site.uid, site.what);
    let (mut func, created) = created_by(StateKind::Keyed, || factory(&site.info));
    if site.check_state_names {
        let mut visited = Vec::new();
        (hooks.visit_state)(&mut func, &mut KeyedStates::names(&mut visited));
        let reserved = [EVENT_TIMERS_STATE, PROCESSING_TIMERS_STATE];
        check_state_names(StateKind::Keyed, created, visited, &reserved).map_err(|source| {
            BuildError::StateNames {
                task: site.task.clone(),
                kind: what,
                uid: uid.to_owned(),
                source,
            }
        })?;
    }
    let mut input_ended = false;
    if let Some(restore) = site.restore {
        let failed = |part, source| BuildError::Restore {
            task: site.task.clone(),
            kind: what,
            uid: uid.to_owned(),
            checkpoint: restore.id(),
            part,
            source: Box::new(source),
        };
        let scope = restore.scope(uid, &site.info);
        let mut states = KeyedStates::restore(&scope);
        (hooks.visit_state)(&mut func, &mut states);
        if let Some(e) = states.into_error() {
            return Err(failed(Restoring::States, e));
        }
        if let Some(timers) = (hooks.timer_service)(&mut func) {
            timers
                .restore(&scope)
                .map_err(|e| failed(Restoring::Timers, e))?;
        }
        input_ended = scope
            .flag(INPUT_ENDED_STATE)
            .map_err(|e| failed(Restoring::Inline, e))?;
        restore_more(&scope)?;
    }
    Ok(BuiltKeyedFunction { func, input_ended })
}

/// Where a fired timer goes: the function's `on_timer`, with whatever else
/// the operator hands it.
pub trait TimerTarget {
    /// The key type.
    type Key: weir_state::KeyHash;

    /// The function's timer service, if it uses timers.
    fn timers(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>>;

    /// Timer `timestamp` of `domain` fired for key `ctx.key()`.
    fn on_timer(&mut self, timestamp: i64, ctx: &KeyContext<Self::Key>, domain: TimeDomain);
}

/// The state every keyed operator keeps besides its function: its
/// identity, its event time and whether its input ended.
pub struct KeyedCore {
    uid: String,
    info: SubtaskInfo,
    /// Key groups this subtask owns (checked in debug builds).
    owned: KeyGroupRange,
    /// The current watermark (`i64::MIN` before the first).
    watermark: i64,
    /// The input ended (bounded sources), here or before the restored
    /// checkpoint.
    ended: bool,
    /// The TTL cleanup of the function's states.
    ttl: TtlTicks,
}

/// Whether and when a keyed operator's TTL cleanup ticks.
#[derive(Clone, Copy, Debug)]
enum TtlTicks {
    /// Not known yet: the first tick finds out.
    Unknown,
    /// The function has no state with TTL.
    Off,
    /// It has: the next tick is due at `next`; `pending` if a TTL state
    /// held entries at the last one; `per_record` if one cleans up for
    /// every record.
    On {
        next: Instant,
        pending: bool,
        per_record: bool,
    },
}

impl KeyedCore {
    /// The core of operator `uid` for subtask `info`; `input_ended` is
    /// restored from a checkpoint taken after its end of input.
    pub fn new(uid: &str, info: &SubtaskInfo, input_ended: bool) -> Self {
        Self {
            uid: uid.to_owned(),
            info: *info,
            owned: KeyGroupRange::for_subtask(
                info.max_parallelism,
                info.parallelism as u32,
                info.index as u32,
            ),
            watermark: i64::MIN,
            ended: input_ended,
            ttl: TtlTicks::Unknown,
        }
    }

    /// Runs the TTL cleanup tick of `func`'s states if it is due at `now`
    /// (see [`crate::state::ttl_cleanup`]); returns when the next one is
    /// due, if a TTL state holds entries (the worker then wakes for it
    /// even with no input).
    pub fn ttl_tick<F, K>(
        &mut self,
        now: Instant,
        func: &mut F,
        hooks: &KeyedHooks<F, K>,
    ) -> Option<Instant> {
        match self.ttl {
            TtlTicks::Off => return None,
            TtlTicks::On { next, pending, .. } if now < next => return pending.then_some(next),
            _ => {}
        }
        let mut pass = CleanupPass::new(CleanupTrigger::Tick);
        (hooks.visit_state)(func, &mut KeyedStates::cleanup(&mut pass));
        if !pass.any_ttl {
            self.ttl = TtlTicks::Off;
            return None;
        }
        let next = now + TTL_TICK;
        self.ttl = TtlTicks::On {
            next,
            pending: pass.pending,
            per_record: pass.per_record,
        };
        pass.pending.then_some(next)
    }

    /// The cleanup of `records` processed records, for TTL states that
    /// clean up for every record (nothing for others).
    #[inline(always)]
    pub fn ttl_records<F, K>(&mut self, records: usize, func: &mut F, hooks: &KeyedHooks<F, K>) {
        if let TtlTicks::On {
            per_record: true, ..
        } = self.ttl
        {
            let mut pass = CleanupPass::new(CleanupTrigger::Records(records));
            (hooks.visit_state)(func, &mut KeyedStates::cleanup(&mut pass));
        }
    }

    /// The operator's current watermark.
    #[inline(always)]
    pub fn watermark(&self) -> i64 {
        self.watermark
    }

    /// Whether the operator's input ended.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The context of `key` at the operator's current watermark.
    #[inline(always)]
    pub fn context<K: weir_state::KeyHash>(&self, key: K) -> KeyContext<K> {
        let ctx = KeyContext::with_watermark(key, self.watermark);
        self.debug_check_owned(ctx.hash());
        ctx
    }

    /// In debug builds, that a key of hash `hash` belongs to this subtask.
    #[inline(always)]
    pub fn debug_check_owned(&self, hash: u64) {
        debug_assert!(
            self.owned.contains(weir_state::key_group_for_hash(
                hash,
                self.info.max_parallelism
            )),
            "record routed to a subtask that does not own its key group"
        );
    }

    /// The key groups this subtask owns and the job's key-group count.
    pub fn key_groups(&self) -> (KeyGroupRange, u32) {
        (self.owned, self.info.max_parallelism)
    }

    /// Takes watermark `watermark` if it advances event time; returns
    /// whether it did (the operator then fires its timers and passes it
    /// on).
    pub fn advance_watermark(&mut self, watermark: i64) -> bool {
        if watermark > self.watermark {
            self.watermark = watermark;
            true
        } else {
            false
        }
    }

    /// The input ended: fires every event-time timer (Flink's final
    /// `i64::MAX` watermark) and returns true, once; false if it had ended
    /// already (before a restore too).
    pub fn end_input<T: TimerTarget>(&mut self, target: &mut T) -> bool {
        if self.ended {
            return false;
        }
        self.fire_event_timers(i64::MAX, target);
        self.ended = true;
        true
    }

    /// Fires the event-time timers at or before `watermark`, in timestamp
    /// order (including those `on_timer` registers for passed times).
    pub fn fire_event_timers<T: TimerTarget>(&self, watermark: i64, target: &mut T) {
        let ctx_watermark = self.watermark.max(watermark);
        loop {
            let Some(timers) = target.timers() else {
                return;
            };
            timers.advance_watermark(watermark);
            let Some((ts, key)) = timers.pop_due(TimeDomain::EventTime, watermark) else {
                return;
            };
            let ctx = KeyContext::with_watermark(key, ctx_watermark);
            target.on_timer(ts, &ctx, TimeDomain::EventTime);
        }
    }

    /// Fires the processing-time timers due by the service's clock; returns
    /// whether any fired and when the next one is due (none after the end
    /// of the input).
    pub fn fire_processing_timers<T: TimerTarget>(
        &self,
        now: Instant,
        target: &mut T,
    ) -> FlushOutcome {
        let mut outcome = FlushOutcome::default();
        if self.ended {
            return outcome;
        }
        let Some(timers) = target.timers() else {
            return outcome;
        };
        let now_ms = timers.processing_time();
        loop {
            let Some(timers) = target.timers() else {
                return outcome;
            };
            let Some((ts, key)) = timers.pop_due(TimeDomain::ProcessingTime, now_ms) else {
                outcome.next_deadline = timers
                    .next_processing_timer()
                    .and_then(|ts| processing_deadline(now, now_ms, ts));
                return outcome;
            };
            outcome.progressed = true;
            let ctx = KeyContext::with_watermark(key, self.watermark);
            target.on_timer(ts, &ctx, TimeDomain::ProcessingTime);
        }
    }

    /// Adds the function's keyed states (frozen by `visit_state`) and its
    /// timers to `snapshot` under the operator's uid; returns the
    /// operator's part for what else it stores.
    pub fn snapshot<'s, F, K>(
        &self,
        snapshot: &'s mut TaskSnapshot,
        func: &mut F,
        hooks: &KeyedHooks<F, K>,
    ) -> &'s mut OperatorState {
        let part = snapshot.operator(&self.uid, &self.info);
        (hooks.visit_state)(func, &mut KeyedStates::snapshot(&mut part.keyed));
        if let Some(timers) = (hooks.timer_service)(func) {
            timers.snapshot(&mut part.keyed);
        }
        part
    }
}
