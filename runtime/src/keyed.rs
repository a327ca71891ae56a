//! The keyed process operator and keyed `ValueState`.
//!
//! After a key_by exchange every record's key belongs to a key group owned
//! by the receiving subtask. The operator computes the key's stable hash once
//! and hands the user's [`KeyedProcessFunction`] a [`KeyContext`]: the
//! current key, as in Flink, through which keyed state is read and written.
//! [`KeyedValueState`] is Flink's `ValueState`, stored in the worker's own
//! arena ([`weir_state::ValueState`]), one entry per key, no allocation per
//! entry.

use weir_state::{KeyGroupRange, KeyHash, ValueState};

use crate::checkpoint::snapshot::{KeyedStates, TaskSnapshot};
use crate::operator::{ChainControl, Collector, FlushOutcome};
use crate::source::SubtaskInfo;
use crate::timers::{processing_deadline, TimeDomain, TimerQueues};

/// The key of the record being processed, with its precomputed hash, and
/// the operator's current event time.
#[derive(Clone, Copy, Debug)]
pub struct KeyContext<K> {
    key: K,
    hash: u64,
    watermark: i64,
}

impl<K: KeyHash> KeyContext<K> {
    /// The context for `key`, before any watermark (`i64::MIN`).
    #[inline]
    pub fn new(key: K) -> Self {
        Self::with_watermark(key, i64::MIN)
    }

    /// The context for `key` in an operator whose watermark is `watermark`.
    #[inline]
    pub fn with_watermark(key: K, watermark: i64) -> Self {
        let hash = key.key_hash();
        Self {
            key,
            hash,
            watermark,
        }
    }
}

impl<K> KeyContext<K> {
    /// The current key.
    #[inline]
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The current key's stable hash (decides its key group).
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The operator's current watermark (ms): the minimum over its active
    /// inputs of their watermarks, as Flink's
    /// `TimerService::currentWatermark`; `i64::MIN` before the first one
    /// and in jobs without event time, `i64::MAX` once every input ended.
    #[inline]
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
}

/// User logic of a keyed process operator.
pub trait KeyedProcessFunction: 'static {
    /// The key type of the key_by before it.
    /// Any `Eq + KeyHash` type; keyed `ValueState` needs fixed-size
    /// (`Copy`) keys.
    type Key: Eq + KeyHash + 'static;
    /// Records in.
    type In;
    /// Records out.
    type Out;

    /// Processes one record of key `ctx.key()`.
    fn process<C: Collector<Self::Out>>(
        &mut self,
        ctx: &KeyContext<Self::Key>,
        value: Self::In,
        out: &mut C,
    );

    /// Processes records of `records` while `out` is available, at most
    /// `limit`, each with the context of its key (`key_of`) at operator
    /// watermark `watermark`; returns how many it took. The default calls
    /// [`process`](Self::process) for each. A function overrides it to
    /// run through several records in one loop (the event-time window
    /// folds a run of records of one window into its table); the result
    /// must be the same.
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
        I: Iterator<Item = Self::In>,
        KF: Fn(&Self::In) -> Self::Key,
        C: Collector<Self::Out>,
    {
        let mut taken = 0;
        while taken < limit && out.is_available() {
            let Some(record) = records.next() else {
                break;
            };
            let ctx = KeyContext::with_watermark(key_of(&record), watermark);
            self.process(&ctx, record, out);
            taken += 1;
        }
        taken
    }

    /// The operator's event time advanced to `watermark` (ms; `i64::MAX`
    /// once every input ended), before the watermark is passed on: the
    /// place for event-time logic (timers, windows) to emit what is due.
    /// Called only when it advances.
    fn on_watermark<C: Collector<Self::Out>>(&mut self, watermark: i64, out: &mut C) {
        let _ = (watermark, out);
    }

    /// The input ended (bounded sources): emit any final results.
    fn on_end_of_input<C: Collector<Self::Out>>(&mut self, out: &mut C) {
        let _ = out;
    }

    /// Hands every keyed state of this function to `states`, the same way
    /// for snapshots and restores:
    ///
    /// ```text
    /// fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
    ///     states.value(&mut self.totals);
    /// }
    /// ```
    ///
    /// A function with keyed state must list all of it: with checkpointing
    /// on, a state created but not visited fails the job at start (it would
    /// be lost on restore).
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        let _ = states;
    }

    /// The function's timer service, if it uses timers: a
    /// [`KeyedTimerService`](crate::KeyedTimerService) field it registers
    /// timers in. The operator fires them (calling
    /// [`on_timer`](Self::on_timer)), checkpoints and restores them.
    ///
    /// ```text
    /// fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
    ///     Some(&mut self.timers)
    /// }
    /// ```
    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<Self::Key>> {
        None
    }

    /// Timer `timestamp` of domain `domain` fired for key `ctx.key()`
    /// (event-time timers in timestamp order, before the watermark that
    /// fired them is passed on).
    fn on_timer<C: Collector<Self::Out>>(
        &mut self,
        timestamp: i64,
        ctx: &KeyContext<Self::Key>,
        domain: TimeDomain,
        out: &mut C,
    ) {
        let _ = (timestamp, ctx, domain, out);
    }
}

thread_local! {
    /// Names of the keyed states created on this thread since the last
    /// [`take_created_states`] (the runtime checks them against
    /// `visit_state`).
    static CREATED_STATES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Records that keyed state `name` was created on this thread (every keyed
/// state kind's constructor calls it, so that the runtime can check it
/// against `visit_state`).
pub(crate) fn register_state(name: &str) {
    CREATED_STATES.with(|c| c.borrow_mut().push(name.to_owned()));
}

/// The keyed states created on this thread since the last call.
pub(crate) fn take_created_states() -> Vec<String> {
    CREATED_STATES.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

/// Flink's keyed `ValueState<V>`: one value per key, scoped to the current
/// key of a [`KeyContext`].
pub struct KeyedValueState<K, V>
where
    K: Copy + Eq + KeyHash,
    V: Copy,
{
    inner: ValueState<K, V>,
}

impl<K: Copy + Eq + KeyHash, V: Copy> KeyedValueState<K, V> {
    /// An empty state named `name` (the name identifies it in snapshots;
    /// unique within its operator).
    pub fn new(name: &str) -> Self {
        CREATED_STATES.with(|c| c.borrow_mut().push(name.to_owned()));
        Self {
            inner: ValueState::new(name),
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The table behind it.
    pub fn inner(&self) -> &ValueState<K, V> {
        &self.inner
    }

    /// The table behind it, for restores.
    pub fn inner_mut(&mut self) -> &mut ValueState<K, V> {
        &mut self.inner
    }

    /// The current key's value, if any.
    #[inline]
    pub fn value(&self, ctx: &KeyContext<K>) -> Option<V> {
        self.inner.get_hashed(&ctx.key, ctx.hash).copied()
    }

    /// Sets the current key's value.
    #[inline]
    pub fn update(&mut self, ctx: &KeyContext<K>, value: V) {
        self.inner.put_hashed(ctx.key, ctx.hash, value);
    }

    /// Removes the current key's value.
    #[inline]
    pub fn clear(&mut self, ctx: &KeyContext<K>) {
        self.inner.remove_hashed(&ctx.key, ctx.hash);
    }

    /// The current key's value for in-place update, created with `init` if
    /// absent (one lookup: the hot path of a keyed aggregate).
    #[inline]
    pub fn value_mut_or_insert_with(
        &mut self,
        ctx: &KeyContext<K>,
        init: impl FnOnce() -> V,
    ) -> &mut V {
        self.inner
            .get_or_insert_with_hashed(ctx.key, ctx.hash, init)
    }

    /// Keys with a value on this subtask.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True if no key has a value.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// All entries of this subtask (for inspection and tests).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.inner.iter()
    }
}

/// Name of the keyed process operator's end-of-input flag in its inline
/// state: set once `on_end_of_input` ran, so that a restore after it does
/// not run it again.
pub const INPUT_ENDED_STATE: &str = "keyed.input-ended";

/// The keyed process operator in a chain: key extraction, hashing, the
/// user's function.
///
/// Records are processed as they arrive. (Holding them back a few records
/// to prefetch their state was measured on W1 and made it slower: the
/// lookups of consecutive records are independent, so the CPU already
/// overlaps their cache misses.)
pub struct KeyedProcessOp<F, KF, C> {
    func: F,
    key_fn: KF,
    out: C,
    ended: bool,
    uid: String,
    info: SubtaskInfo,
    /// Key groups this subtask owns (checked in debug builds).
    owned: KeyGroupRange,
    /// The current watermark (`i64::MIN` before the first).
    watermark: i64,
}

impl<F, KF, C> KeyedProcessOp<F, KF, C> {
    /// The operator `uid` for subtask `info`; `input_ended` is restored
    /// from a checkpoint taken after its end of input.
    pub fn new(
        func: F,
        key_fn: KF,
        out: C,
        uid: &str,
        info: &SubtaskInfo,
        input_ended: bool,
    ) -> Self {
        Self {
            func,
            key_fn,
            out,
            ended: input_ended,
            uid: uid.to_owned(),
            info: *info,
            owned: KeyGroupRange::for_subtask(
                info.max_parallelism,
                info.parallelism as u32,
                info.index as u32,
            ),
            watermark: i64::MIN,
        }
    }

    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
}

impl<F, KF, C> KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    C: Collector<F::Out>,
{
    /// The chain after this operator (tests).
    #[cfg(test)]
    pub(crate) fn output_mut(&mut self) -> &mut C {
        &mut self.out
    }

    /// The user's function (tests).
    #[cfg(test)]
    pub(crate) fn function_mut(&mut self) -> &mut F {
        &mut self.func
    }

    /// Fires the event-time timers at or before `watermark`, in timestamp
    /// order (including those `on_timer` registers for passed times).
    fn fire_event_timers(&mut self, watermark: i64) {
        let ctx_watermark = self.watermark.max(watermark);
        loop {
            let Some(timers) = self.func.timer_service() else {
                return;
            };
            timers.advance_watermark(watermark);
            let Some((ts, key)) = timers.pop_due(TimeDomain::EventTime, watermark) else {
                return;
            };
            let ctx = KeyContext::with_watermark(key, ctx_watermark);
            self.func
                .on_timer(ts, &ctx, TimeDomain::EventTime, &mut self.out);
        }
    }

    /// Fires the processing-time timers due by the service's clock; returns
    /// whether any fired and when the next one is due (none after the end
    /// of the input).
    fn fire_processing_timers(&mut self, now: std::time::Instant) -> FlushOutcome {
        let mut outcome = FlushOutcome::default();
        if self.ended {
            return outcome;
        }
        let Some(timers) = self.func.timer_service() else {
            return outcome;
        };
        let now_ms = timers.processing_time();
        loop {
            let Some(timers) = self.func.timer_service() else {
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
            self.func
                .on_timer(ts, &ctx, TimeDomain::ProcessingTime, &mut self.out);
        }
    }
}

impl<F, KF, C> ChainControl for KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available()
    }

    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        let timers = self.fire_processing_timers(now);
        let flushed = self.out.flush(now);
        FlushOutcome {
            progressed: flushed.progressed || timers.progressed,
            next_deadline: crate::task::earliest(flushed.next_deadline, timers.next_deadline),
        }
    }

    fn end_input(&mut self) {
        if !self.ended {
            self.fire_event_timers(i64::MAX);
            self.ended = true;
            self.func.on_end_of_input(&mut self.out);
        }
        self.out.end_input();
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        let part = snapshot.operator(&self.uid, &self.info);
        self.func
            .visit_state(&mut KeyedStates::snapshot(&mut part.keyed));
        if let Some(timers) = self.func.timer_service() {
            timers.snapshot(&mut part.keyed);
        }
        if self.ended {
            part.inline.push((INPUT_ENDED_STATE.to_owned(), vec![1]));
        }
        self.out.snapshot(snapshot);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id);
    }

    fn finish(&mut self) -> bool {
        self.out.finish()
    }

    #[inline]
    fn publish_metrics(&mut self) {
        self.out.publish_metrics()
    }

    fn output_pending(&self) -> bool {
        self.out.output_pending()
    }

    fn on_watermark(&mut self, watermark: i64) {
        if watermark > self.watermark {
            self.watermark = watermark;
            self.fire_event_timers(watermark);
            self.func.on_watermark(watermark, &mut self.out);
            self.out.on_watermark(watermark);
        }
    }

    fn on_watermark_status(&mut self, status: weir_net::WatermarkStatus) {
        self.out.on_watermark_status(status);
    }
}

impl<F, KF, C> Collector<F::In> for KeyedProcessOp<F, KF, C>
where
    F: KeyedProcessFunction,
    KF: Fn(&F::In) -> F::Key,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn collect(&mut self, record: F::In) {
        let ctx = KeyContext::with_watermark((self.key_fn)(&record), self.watermark);
        debug_assert!(
            self.owned.contains(weir_state::key_group_for_hash(
                ctx.hash,
                self.info.max_parallelism
            )),
            "record routed to a subtask that does not own its key group"
        );
        self.func.process(&ctx, record, &mut self.out);
    }

    #[inline]
    fn collect_many<I: Iterator<Item = F::In>>(&mut self, records: &mut I, limit: usize) -> usize {
        let (key_fn, owned, max_parallelism) =
            (&self.key_fn, self.owned, self.info.max_parallelism);
        let mut records = records.by_ref().inspect(|record| {
            debug_assert!(
                owned.contains(weir_state::key_group_for_hash(
                    key_fn(record).key_hash(),
                    max_parallelism
                )),
                "record routed to a subtask that does not own its key group"
            );
        });
        self.func.process_many(
            &mut records,
            &self.key_fn,
            self.watermark,
            limit,
            &mut self.out,
        )
    }
}
