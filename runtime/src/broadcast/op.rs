//! The broadcast operators, their outputs and their place in the job API.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::{WatermarkStatus, Wire};
use weir_state::{KeyGroupRange, KeyHash};

use super::{
    BroadcastProcessFunction, BroadcastState, BroadcastStream, FanOutTail,
    KeyedBroadcastProcessFunction, BROADCAST_STATE,
};
use crate::checkpoint::restore::RestoreScope;
use crate::checkpoint::snapshot::{KeyedStates, TaskSnapshot};
use crate::exchange::ExchangeOutput;
use crate::job::{ChainBuilder, JobGraph, KeyedStream, Stream};
use crate::keyed::{take_created_states, KeyContext};
use crate::operator::{ChainControl, Collector, FlushOutcome};
use crate::source::SubtaskInfo;
use crate::task::Task;
use crate::timers::{processing_deadline, TimeDomain};
use crate::two_input::{CoInput, ConnectWith, TwoInputChain};
use crate::worker::BuildContext;

/// The sending side of a broadcast edge (every record to every channel) or
/// a rebalance edge (round-robin).
pub struct FanOutOutput<T> {
    inner: ExchangeOutput<T, u64, fn(&T) -> u64>,
    all: bool,
    next: usize,
}

/// Never called: fan-out edges pick channels without a key.
fn no_key<T>(_: &T) -> u64 {
    0
}

impl<T: Wire> FanOutOutput<T> {
    pub(crate) fn new(ctx: &mut BuildContext<'_>, exchange: usize, all: bool) -> Self {
        let (senders, pool, max_pool, counters) = ctx.take_output(exchange);
        let inner = ExchangeOutput::new(
            no_key::<T> as fn(&T) -> u64,
            ctx.info.max_parallelism,
            senders,
            pool,
            max_pool,
            ctx.buffer_timeout,
            ctx.barrier_mode,
        )
        .with_metrics(ctx.subtask.clone(), counters);
        // Round-robin starts at different receivers from different senders.
        let next = ctx.info.index % inner.channel_count().max(1);
        Self { inner, all, next }
    }
}

impl<T: Wire> Collector<T> for FanOutOutput<T> {
    #[inline]
    fn collect(&mut self, record: T) {
        if self.all {
            self.inner.send_to_all(&record);
        } else {
            self.inner.send_to(self.next, &record);
            self.next += 1;
            if self.next == self.inner.channel_count() {
                self.next = 0;
            }
        }
    }
}

impl<T> ChainControl for FanOutOutput<T> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.inner.is_available()
    }
    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        self.inner.flush(now)
    }
    fn end_input(&mut self) {
        self.inner.end_input()
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        self.inner.snapshot(snapshot)
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> bool {
        self.inner.finish()
    }
    fn publish_metrics(&mut self) {
        self.inner.publish_metrics()
    }
    fn output_pending(&self) -> bool {
        self.inner.output_pending()
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.inner.on_watermark(watermark)
    }
    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.inner.on_watermark_status(status)
    }
}

/// Restores broadcast state `state` of operator `uid` from `scope`.
fn restore_broadcast<K, V>(scope: &RestoreScope<'_>, uid: &str, state: &mut BroadcastState<K, V>)
where
    K: Copy + Eq + KeyHash + Wire,
    V: Copy + Wire,
{
    let bytes = scope
        .inline_replicated(BROADCAST_STATE)
        .unwrap_or_else(|e| panic!("broadcast operator `{uid}`: {e}"));
    if let Some(bytes) = bytes {
        if let Err(e) = state.decode_into(bytes) {
            panic!(
                "broadcast operator `{uid}` cannot restore its broadcast state from checkpoint {}: \
                 {e}",
                scope.checkpoint_id()
            );
        }
    }
}

/// The keyed broadcast operator: keyed records with their key context and
/// the read-only broadcast state; broadcast records with the state
/// read-write; the keyed function's timers fired as in the keyed process
/// operator.
pub struct KeyedBroadcastProcessOp<F: KeyedBroadcastProcessFunction, KF, C> {
    func: F,
    key_fn: KF,
    out: C,
    state: BroadcastState<F::StateKey, F::StateValue>,
    uid: String,
    info: SubtaskInfo,
    owned: KeyGroupRange,
    watermark: i64,
    ended: bool,
}

impl<F: KeyedBroadcastProcessFunction, KF, C: Collector<F::Out>> KeyedBroadcastProcessOp<F, KF, C> {
    /// The operator `uid` of subtask `info` with broadcast state `state`.
    pub fn new(
        func: F,
        key_fn: KF,
        out: C,
        state: BroadcastState<F::StateKey, F::StateValue>,
        uid: &str,
        info: &SubtaskInfo,
    ) -> Self {
        Self {
            func,
            key_fn,
            out,
            state,
            uid: uid.to_owned(),
            info: *info,
            owned: KeyGroupRange::for_subtask(
                info.max_parallelism,
                info.parallelism as u32,
                info.index as u32,
            ),
            watermark: i64::MIN,
            ended: false,
        }
    }

    /// The chain after this operator (tests).
    #[cfg(test)]
    pub(crate) fn output_mut(&mut self) -> &mut C {
        &mut self.out
    }

    /// The broadcast state.
    pub fn broadcast_state(&self) -> &BroadcastState<F::StateKey, F::StateValue> {
        &self.state
    }

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
                .on_timer(ts, &ctx, TimeDomain::EventTime, &self.state, &mut self.out);
        }
    }

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
            self.func.on_timer(
                ts,
                &ctx,
                TimeDomain::ProcessingTime,
                &self.state,
                &mut self.out,
            );
        }
    }
}

impl<F, KF, C> Collector<CoInput<F::In, F::Broadcast>> for KeyedBroadcastProcessOp<F, KF, C>
where
    F: KeyedBroadcastProcessFunction,
    KF: Fn(&F::In) -> F::Key,
    C: Collector<F::Out>,
{
    #[inline]
    fn collect(&mut self, record: CoInput<F::In, F::Broadcast>) {
        match record {
            CoInput::First(r) => {
                let ctx = KeyContext::with_watermark((self.key_fn)(&r), self.watermark);
                debug_assert!(
                    self.owned.contains(weir_state::key_group_for_hash(
                        ctx.hash(),
                        self.info.max_parallelism
                    )),
                    "record routed to a subtask that does not own its key group"
                );
                self.func
                    .process_element(&ctx, r, &self.state, &mut self.out);
            }
            CoInput::Second(b) => {
                self.func
                    .process_broadcast_element(b, &mut self.state, &mut self.out);
            }
        }
    }
}

impl<F, KF, C> ChainControl for KeyedBroadcastProcessOp<F, KF, C>
where
    F: KeyedBroadcastProcessFunction,
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
        part.inline
            .push((BROADCAST_STATE.to_owned(), self.state.encode()));
        self.out.snapshot(snapshot);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id);
    }

    fn finish(&mut self) -> bool {
        self.out.finish()
    }

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
            self.out.on_watermark(watermark);
        }
    }

    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.out.on_watermark_status(status);
    }
}

/// The non-keyed broadcast operator.
pub struct BroadcastProcessOp<F: BroadcastProcessFunction, C> {
    func: F,
    out: C,
    state: BroadcastState<F::StateKey, F::StateValue>,
    uid: String,
    info: SubtaskInfo,
}

impl<F: BroadcastProcessFunction, C> BroadcastProcessOp<F, C> {
    /// The operator `uid` of subtask `info` with broadcast state `state`.
    pub fn new(
        func: F,
        out: C,
        state: BroadcastState<F::StateKey, F::StateValue>,
        uid: &str,
        info: &SubtaskInfo,
    ) -> Self {
        Self {
            func,
            out,
            state,
            uid: uid.to_owned(),
            info: *info,
        }
    }
}

impl<F, C> Collector<CoInput<F::In, F::Broadcast>> for BroadcastProcessOp<F, C>
where
    F: BroadcastProcessFunction,
    C: Collector<F::Out>,
{
    #[inline]
    fn collect(&mut self, record: CoInput<F::In, F::Broadcast>) {
        match record {
            CoInput::First(r) => self.func.process_element(r, &self.state, &mut self.out),
            CoInput::Second(b) => {
                self.func
                    .process_broadcast_element(b, &mut self.state, &mut self.out)
            }
        }
    }
}

impl<F, C> ChainControl for BroadcastProcessOp<F, C>
where
    F: BroadcastProcessFunction,
    C: Collector<F::Out>,
{
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available()
    }
    fn flush(&mut self, now: std::time::Instant) -> FlushOutcome {
        self.out.flush(now)
    }
    fn end_input(&mut self) {
        self.out.end_input()
    }
    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        snapshot
            .operator(&self.uid, &self.info)
            .inline
            .push((BROADCAST_STATE.to_owned(), self.state.encode()));
        self.out.snapshot(snapshot);
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> bool {
        self.out.finish()
    }
    fn publish_metrics(&mut self) {
        self.out.publish_metrics()
    }
    fn output_pending(&self) -> bool {
        self.out.output_pending()
    }
    fn on_watermark(&mut self, watermark: i64) {
        self.out.on_watermark(watermark)
    }
    fn on_watermark_status(&mut self, status: WatermarkStatus) {
        self.out.on_watermark_status(status)
    }
}

/// Chain link of a keyed broadcast operator: the two-input head, then the
/// operator.
pub struct KeyedBroadcastChain<A, B, FF, KF> {
    first: usize,
    second: usize,
    uid: String,
    factory: Arc<FF>,
    key_fn: KF,
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B, FF, KF, F> ChainBuilder<F::Out> for KeyedBroadcastChain<A, B, FF, KF>
where
    A: Wire,
    B: Wire,
    F: KeyedBroadcastProcessFunction<In = A, Broadcast = B>,
    F::Out: 'static,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    KF: Fn(&A) -> F::Key + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let _ = take_created_states();
        let mut func = (self.factory)(&ctx.info);
        let created = take_created_states();
        if ctx.checkpointing.is_some() {
            let mut visited = Vec::new();
            func.visit_state(&mut KeyedStates::names(&mut visited));
            if let Some(missing) = created.iter().find(|c| !visited.contains(c)) {
                panic!(
                    "keyed broadcast operator `{}` creates state `{missing}` but its visit_state \
                     does not visit it: the state would be lost by checkpoints",
                    self.uid
                );
            }
        }
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            let scope = restore.scope(&self.uid, &ctx.info);
            let mut states = KeyedStates::restore(&scope);
            func.visit_state(&mut states);
            if let Some(e) = states.into_error() {
                panic!(
                    "keyed broadcast operator `{}` cannot restore checkpoint {}: {e}",
                    self.uid,
                    restore.id()
                );
            }
            if let Some(timers) = func.timer_service() {
                if let Err(e) = timers.restore(&scope) {
                    panic!(
                        "keyed broadcast operator `{}` cannot restore its timers: {e}",
                        self.uid
                    );
                }
            }
            restore_broadcast(&scope, &self.uid, &mut state);
        }
        let op = KeyedBroadcastProcessOp::new(
            func,
            self.key_fn.clone(),
            out,
            state,
            &self.uid,
            &ctx.info,
        );
        TwoInputChain::<A, B>::new(self.first, self.second).build(ctx, op)
    }
}

/// Chain link of a non-keyed broadcast operator.
pub struct BroadcastChain<A, B, FF> {
    first: usize,
    second: usize,
    uid: String,
    factory: Arc<FF>,
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B, FF, F> ChainBuilder<F::Out> for BroadcastChain<A, B, FF>
where
    A: Wire,
    B: Wire,
    F: BroadcastProcessFunction<In = A, Broadcast = B>,
    F::Out: 'static,
    FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
{
    fn build<C: Collector<F::Out> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Box<dyn Task> {
        let func = (self.factory)(&ctx.info);
        let mut state = BroadcastState::default();
        if let Some(restore) = ctx.restore.clone() {
            restore_broadcast(&restore.scope(&self.uid, &ctx.info), &self.uid, &mut state);
        }
        let op = BroadcastProcessOp::new(func, out, state, &self.uid, &ctx.info);
        TwoInputChain::<A, B>::new(self.first, self.second).build(ctx, op)
    }
}

/// A keyed stream connected with a broadcast stream (Flink's
/// `BroadcastConnectedStream` of a `KeyedStream`).
pub struct KeyedBroadcastConnectedStream<'j, A, B, K, KA> {
    job: &'j mut JobGraph,
    first: usize,
    second: usize,
    key_fn: KA,
    _types: PhantomData<fn(A, B) -> K>,
}

impl<'j, A, B, K, KA> ConnectWith<'j, A, K, KA> for BroadcastStream<B>
where
    A: Wire,
    K: KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
{
    type Connected = KeyedBroadcastConnectedStream<'j, A, B, K, KA>;

    fn connect_to(self, first: KeyedStream<'j, A, K, KA>) -> Self::Connected {
        KeyedBroadcastConnectedStream {
            job: first.job,
            first: first.exchange,
            second: self.exchange,
            key_fn: first.key_fn,
            _types: PhantomData,
        }
    }
}

impl<'j, A, B, K, KA> KeyedBroadcastConnectedStream<'j, A, B, K, KA>
where
    A: Wire,
    B: Wire,
    K: Copy + KeyHash + Eq + 'static,
    KA: Fn(&A) -> K + Clone + Send + Sync + 'static,
{
    /// Applies a keyed broadcast process function; `factory` makes each
    /// subtask's instance.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, KeyedBroadcastChain<A, B, FF, KA>>
    where
        F: KeyedBroadcastProcessFunction<Key = K, In = A, Broadcast = B>,
        F::Out: 'static,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        self.job.add_co_input(self.first, self.second);
        Stream {
            name: uid.to_owned(),
            chain: KeyedBroadcastChain {
                first: self.first,
                second: self.second,
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                key_fn: self.key_fn,
                _types: PhantomData,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.first),
            _record: PhantomData,
        }
    }
}

/// A non-keyed stream connected with a broadcast stream (Flink's
/// `BroadcastConnectedStream` of a `DataStream`).
pub struct BroadcastConnectedStream<'j, A, B> {
    job: &'j mut JobGraph,
    first: usize,
    second: usize,
    _types: PhantomData<fn(A, B)>,
}

impl<'j, A: Wire, B0: ChainBuilder<A>> Stream<'j, A, B0> {
    /// Connects this stream with `broadcast` (Flink's
    /// `DataStream.connect(BroadcastStream)`), for
    /// [`process`](BroadcastConnectedStream::process) with a
    /// [`BroadcastProcessFunction`]. Ends this stage: its records are
    /// rebalanced (round-robin) over the operator's subtasks.
    pub fn connect<B: Wire>(
        self,
        broadcast: BroadcastStream<B>,
    ) -> BroadcastConnectedStream<'j, A, B> {
        let exchange = self.job.exchanges;
        self.job.exchanges += 1;
        let job = self.end_with(FanOutTail::<A>::new(exchange, false), exchange);
        BroadcastConnectedStream {
            job,
            first: exchange,
            second: broadcast.exchange,
            _types: PhantomData,
        }
    }
}

impl<'j, A: Wire, B: Wire> BroadcastConnectedStream<'j, A, B> {
    /// Applies a broadcast process function; `factory` makes each
    /// subtask's instance.
    pub fn process<F, FF>(
        self,
        uid: &str,
        factory: FF,
    ) -> Stream<'j, F::Out, BroadcastChain<A, B, FF>>
    where
        F: BroadcastProcessFunction<In = A, Broadcast = B>,
        F::Out: 'static,
        FF: Fn(&SubtaskInfo) -> F + Send + Sync + 'static,
    {
        self.job.register_uid(uid);
        self.job.add_co_input(self.first, self.second);
        Stream {
            name: uid.to_owned(),
            chain: BroadcastChain {
                first: self.first,
                second: self.second,
                uid: uid.to_owned(),
                factory: Arc::new(factory),
                _types: PhantomData,
            },
            job: self.job,
            parallelism: None,
            input: Some(self.first),
            _record: PhantomData,
        }
    }
}
