//! The user's logic of a keyed process operator (Flink's
//! `KeyedProcessFunction`).

use crate::operators::side_output::SideOutputs;
use weir_state::KeyHash;

use crate::chain::control::Collector;
use crate::state::key_context::KeyContext;
use crate::state::timers::{TimeDomain, TimerQueues};
use crate::state::visitor::KeyedStates;

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

    /// How far (ms, at least 0) the watermark the operator passes on
    /// stays behind its own: a function whose output may carry event
    /// times up to this much behind the operator's watermark (weir SQL's
    /// interval join, as Flink's `KeyedCoProcessOperatorWithWatermarkDelay`)
    /// holds it back so that its records are not late downstream. The
    /// end of input (`i64::MAX`) passes unchanged. Default: 0.
    fn watermark_delay(&self) -> i64 {
        0
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

    /// Lists the side outputs this function emits to, so that each is
    /// connected to the streams the job took for its tag
    /// ([`Stream::get_side_output`](crate::api::stream::Stream::get_side_output)):
    ///
    /// ```text
    /// fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
    ///     outputs.connect(&self.rejected);
    /// }
    /// ```
    ///
    /// A handle not listed stays unconnected: what it emits is dropped.
    fn side_outputs(&mut self, outputs: &mut SideOutputs<'_, '_>) {
        let _ = outputs;
    }

    /// The function's timer service, if it uses timers: a
    /// [`KeyedTimerService`](crate::state::timers::KeyedTimerService) field it registers
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
