//! The builders of exchanges: a stage's input task over an exchange's
//! channels (with its gate, debloater and restored channel state) and the
//! tails that feed an exchange.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use weir_net::Wire;
use weir_state::KeyHash;

use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::channel_rescale::{
    restore_rescaled_channel_state, two_input_channels, GateRoutes, InputRoute, KeyRoute,
};
use crate::build::context::BuildContext;
use crate::build::demand::{needed, TimestampDemand};
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::core::barrier::BarrierMode;
use crate::exchange::debloat::BufferDebloater;
use crate::exchange::decoder::WireDecoder;
use crate::exchange::fan_out::{no_key, FanOutOutput, Partitioning};
use crate::exchange::gate::InputGate;
use crate::exchange::input_task::{channel_state_name, InputTask};

use crate::exchange::output::ExchangeOutput;
use crate::exchange::stamped::{StampOutput, Stamped, StampedDecoder};

/// Head of a stage fed by an exchange.
pub struct ExchangeInputChain<T> {
    pub(crate) exchange: usize,
    /// How the exchange's records find their key group: its channel state
    /// follows its key groups on a rescale.
    pub(crate) route: KeyRoute,
    /// The records cross with their timestamps ([`Stamped`]) if this
    /// demand is read downstream.
    pub(crate) stamped: Option<TimestampDemand>,
    pub(crate) _record: PhantomData<fn() -> T>,
}

impl<T: Wire> ChainBuilder<T> for ExchangeInputChain<T> {
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let (receivers, counters) = ctx.take_input(self.exchange);
        let routes = GateRoutes::One(InputRoute::Keyed(self.route.clone()));
        let stamped = needed(&self.stamped);
        single_input_task(
            ctx,
            self.exchange,
            (receivers, counters),
            out,
            stamped,
            &routes,
        )
    }
}

/// The input task of a single-input stage over `channels` (receivers and
/// their counters; `exchange` the first exchange), decoding bare records
/// or, if `stamped`, records with their timestamps.
fn single_input_task<T: Wire, C: Collector<T> + 'static>(
    ctx: &mut BuildContext<'_>,
    exchange: usize,
    (receivers, counters): (
        Vec<weir_net::ChannelReceiver>,
        Vec<Arc<crate::metrics::counters::ChannelCounters>>,
    ),
    out: C,
    stamped: bool,
    routes: &GateRoutes,
) -> Result<Box<dyn Task>, BuildError> {
    Ok(if stamped {
        let decoder = StampedDecoder::<T>::default();
        Box::new(build_input_task::<T, C, _>(
            ctx, exchange, receivers, counters, out, decoder, routes,
        )?)
    } else {
        let decoder = WireDecoder::<T>::default();
        Box::new(build_input_task::<T, C, _>(
            ctx, exchange, receivers, counters, out, decoder, routes,
        )?)
    })
}

/// The input task of a stage over `receivers` (the channels of one or more
/// exchanges, `exchange` the first), decoding records with `decoder`: the
/// gate with its trigger signals, debloater and restored channel state.
/// Fails if the channel state of the checkpoint being restored cannot be.
/// `routes` says how the records of each exchange are redistributed, so
/// that the channel state can be restored at another parallelism (see
/// [`restore_rescaled_channel_state`]); a two-input stage's input task
/// records where the first exchange's channels end for that.
pub(crate) fn build_input_task<T, C, D>(
    ctx: &mut BuildContext<'_>,
    exchange: usize,
    receivers: Vec<weir_net::ChannelReceiver>,
    counters: Vec<Arc<crate::metrics::counters::ChannelCounters>>,
    out: C,
    decoder: D,
    routes: &GateRoutes,
) -> Result<InputTask<T, C, D>, BuildError> {
    let mut gate = InputGate::new(receivers, ctx.barrier_mode).with_channel_counters(counters);
    if let (BarrierMode::AlignedWithTimeout(_), Some(cp)) = (ctx.barrier_mode, &ctx.checkpointing) {
        gate = gate.with_trigger_signals(cp.signals.clone());
    }
    if let Some((options, credit, segment_size)) = &ctx.debloat {
        let channels = gate.channels();
        gate = gate.with_debloater(BufferDebloater::new(
            options,
            channels,
            *credit,
            *segment_size,
            std::time::Instant::now(),
        ));
    }
    // Unaligned checkpoints keep the data their barriers overtook under
    // the exchange's input, per receiving subtask.
    let uid = format!("weir.exchange-{exchange}.input");
    if let Some(restore) = ctx.restore.clone() {
        let scope = restore.scope(&uid, &ctx.info);
        let state = if scope.rescaled() {
            restore_rescaled_channel_state(&scope, gate.channels(), routes)
        } else {
            scope.channel_state(gate.channels(), channel_state_name)
        }
        .map_err(|source| BuildError::Restore {
            task: ctx.task_name(),
            kind: "exchange input",
            uid: uid.clone(),
            checkpoint: restore.id(),
            part: Restoring::Inline,
            source: Box::new(source),
        })?;
        for (c, records) in state.into_iter().enumerate() {
            gate.restore_channel_state(c, records);
        }
    }
    let channels = gate.channels();
    let task = InputTask::with_decoder(
        ctx.task_name(),
        gate,
        out,
        ctx.checkpointing.clone(),
        (uid, ctx.info),
        ctx.subtask.clone(),
        decoder,
    );
    Ok(match routes {
        GateRoutes::One(_) => task,
        GateRoutes::Two { split, .. } => {
            task.with_channel_layout(two_input_channels(*split, channels - split))
        }
    })
}

/// Tail of a stage that ends in a key_by exchange.
pub(crate) struct ExchangeTail<T, K, KF> {
    pub(crate) exchange: usize,
    pub(crate) key_fn: KF,
    /// The stream's record timestamps, if it has event time: its records
    /// cross as [`Stamped`] if an operator downstream reads them.
    pub(crate) stamped: Option<TimestampDemand>,
    pub(crate) _types: PhantomData<fn(T) -> K>,
}

impl<T, K, KF> TailBuilder<T> for ExchangeTail<T, K, KF>
where
    T: Wire,
    K: KeyHash + 'static,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    type Tail = ExchangeOutput<T, K, KF>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Result<Self::Tail, BuildError> {
        Ok(exchange_output(ctx, self.exchange, self.key_fn.clone()))
    }

    fn build_stage<B: ChainBuilder<T>>(
        &self,
        ctx: &mut BuildContext<'_>,
        chain: &B,
    ) -> Result<Box<dyn Task>, BuildError> {
        if needed(&self.stamped) {
            let key_fn = self.key_fn.clone();
            let key_of = move |s: &Stamped<T>| key_fn(&s.value);
            let out = exchange_output(ctx, self.exchange, key_of);
            chain.build(ctx, StampOutput { out })
        } else {
            let tail = self.make(ctx)?;
            chain.build(ctx, tail)
        }
    }
}

/// The output of this subtask into `exchange`, routing by `key_fn`: its
/// channels and a buffer pool allocated here, on the worker's own core.
fn exchange_output<T, K, KF>(
    ctx: &mut BuildContext<'_>,
    exchange: usize,
    key_fn: KF,
) -> ExchangeOutput<T, K, KF>
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K,
{
    let (senders, pool, max_pool, counters) = ctx.take_output(exchange);
    ExchangeOutput::new(
        key_fn,
        ctx.info.max_parallelism,
        senders,
        pool,
        max_pool,
        ctx.buffer_timeout_of(exchange),
        ctx.barrier_mode,
    )
    .with_metrics(ctx.subtask.clone(), counters)
}

/// Tail of a stage whose records go to the receiving subtasks without a
/// key (see [`Partitioning`]).
pub(crate) struct FanOutTail<T> {
    exchange: usize,
    partitioning: Partitioning<T>,
    /// The stream's record timestamps (see [`ExchangeTail`]).
    stamped: Option<TimestampDemand>,
}

impl<T> FanOutTail<T> {
    /// To every receiving subtask (`all`) or round-robin to one.
    pub(crate) fn new(exchange: usize, all: bool) -> Self {
        let partitioning = if all {
            Partitioning::Broadcast
        } else {
            Partitioning::RoundRobin
        };
        Self::with(exchange, partitioning)
    }

    /// As `partitioning` says.
    pub(crate) fn with(exchange: usize, partitioning: Partitioning<T>) -> Self {
        Self {
            exchange,
            partitioning,
            stamped: None,
        }
    }

    /// With each record's timestamp if `stamped` is read downstream.
    pub(crate) fn stamped(mut self, stamped: Option<TimestampDemand>) -> Self {
        self.stamped = stamped;
        self
    }
}

impl<T: Wire> TailBuilder<T> for FanOutTail<T> {
    type Tail = FanOutOutput<T>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Result<Self::Tail, BuildError> {
        let inner = exchange_output(ctx, self.exchange, no_key::<T> as fn(&T) -> u64);
        Ok(FanOutOutput::new(
            inner,
            &self.partitioning,
            ctx.info.index,
            ctx.info.parallelism,
        ))
    }

    fn build_stage<B: ChainBuilder<T>>(
        &self,
        ctx: &mut BuildContext<'_>,
        chain: &B,
    ) -> Result<Box<dyn Task>, BuildError> {
        if needed(&self.stamped) {
            let inner = exchange_output(
                ctx,
                self.exchange,
                no_key::<Stamped<T>> as fn(&Stamped<T>) -> u64,
            );
            let out = FanOutOutput::new(
                inner,
                &self.partitioning.on_value(),
                ctx.info.index,
                ctx.info.parallelism,
            );
            chain.build(ctx, StampOutput { out })
        } else {
            let tail = self.make(ctx)?;
            chain.build(ctx, tail)
        }
    }
}

/// Head of a stage fed by one or more exchanges whose records need no key
/// (a union's, a rebalance's, a forward's...): its input task over all
/// their channels, first exchange first.
pub struct PartitionedInputChain<T> {
    /// The exchanges; a union adds to them after the stream was made.
    pub(crate) exchanges: Arc<Mutex<Vec<usize>>>,
    /// How their in-flight records follow a rescale.
    pub(crate) route: InputRoute,
    /// The records cross with their timestamps ([`Stamped`]) if this
    /// demand is read downstream.
    pub(crate) stamped: Option<TimestampDemand>,
    pub(crate) _record: PhantomData<fn() -> T>,
}

impl<T: Wire> ChainBuilder<T> for PartitionedInputChain<T> {
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let exchanges = self
            .exchanges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let (mut receivers, mut counters) = (Vec::new(), Vec::new());
        for &e in &exchanges {
            let (r, c) = ctx.take_input(e);
            receivers.extend(r);
            counters.extend(c);
        }
        let routes = GateRoutes::One(self.route.clone());
        let stamped = needed(&self.stamped);
        single_input_task(
            ctx,
            exchanges[0],
            (receivers, counters),
            out,
            stamped,
            &routes,
        )
    }
}
