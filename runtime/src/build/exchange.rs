//! The builders of exchanges: a stage's input task over an exchange's
//! channels (with its gate, debloater and restored channel state) and the
//! tails that feed an exchange.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_net::{DecodeError, Wire};
use weir_state::{key_group_for_hash, KeyHash};

use crate::build::builder::{ChainBuilder, TailBuilder};
use crate::build::context::BuildContext;
use crate::build::error::{BuildError, Restoring};
use crate::chain::control::Collector;
use crate::chain::task::Task;
use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::core::barrier::BarrierMode;
use crate::exchange::debloat::BufferDebloater;
use crate::exchange::decoder::WireDecoder;
use crate::exchange::fan_out::{no_key, FanOutOutput};
use crate::exchange::gate::InputGate;
use crate::exchange::input_task::{channel_state_name, InputTask};
use crate::exchange::output::ExchangeOutput;

/// Splits records in their wire form (channel state) into `(key hash,
/// encoded length)` per record: how a keyed exchange's channel state is
/// redistributed by key group when the receiving stage rescales.
pub type KeyRoute =
    Arc<dyn Fn(&[u8], &mut Vec<(u64, usize)>) -> Result<(), DecodeError> + Send + Sync>;

/// The [`KeyRoute`] of a key_by exchange of `T` records keyed by `key_fn`.
pub(crate) fn key_route<T, K, KF>(key_fn: KF) -> KeyRoute
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K + Send + Sync + 'static,
{
    Arc::new(move |mut bytes: &[u8], out: &mut Vec<(u64, usize)>| {
        while !bytes.is_empty() {
            let (record, used) = T::read(bytes)?;
            out.push((key_fn(&record).key_hash(), used));
            bytes = &bytes[used..];
        }
        Ok(())
    })
}

/// Head of a stage fed by an exchange.
pub struct ExchangeInputChain<T> {
    pub(crate) exchange: usize,
    /// How the exchange's records find their key group: its channel state
    /// follows its key groups on a rescale.
    pub(crate) route: KeyRoute,
    pub(crate) _record: PhantomData<fn() -> T>,
}

impl<T: Wire> ChainBuilder<T> for ExchangeInputChain<T> {
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let (receivers, counters) = ctx.take_input(self.exchange);
        let task: InputTask<T, C> = build_input_task(
            ctx,
            self.exchange,
            receivers,
            counters,
            out,
            WireDecoder::default(),
            Some(&self.route),
        )?;
        Ok(Box::new(task))
    }
}

/// The input task of a stage over `receivers` (the channels of one or more
/// exchanges, `exchange` the first), decoding records with `decoder`: the
/// gate with its trigger signals, debloater and restored channel state.
/// Fails if the channel state of the checkpoint being restored cannot be.
/// `route` finds the key groups of the records of a keyed exchange, so
/// that its channel state can be restored at another parallelism (see
/// [`restore_rescaled_channel_state`]); `None` (a two-input stage's
/// inputs) refuses that.
pub(crate) fn build_input_task<T, C, D>(
    ctx: &mut BuildContext<'_>,
    exchange: usize,
    receivers: Vec<weir_net::ChannelReceiver>,
    counters: Vec<Arc<crate::metrics::counters::ChannelCounters>>,
    out: C,
    decoder: D,
    route: Option<&KeyRoute>,
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
            restore_rescaled_channel_state(&scope, gate.channels(), route)
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
    Ok(InputTask::with_decoder(
        ctx.task_name(),
        gate,
        out,
        ctx.checkpointing.clone(),
        (uid, ctx.info),
        ctx.subtask.clone(),
        decoder,
    ))
}

/// The channel state of a subtask of a keyed exchange's receiving stage
/// restored at another parallelism than its checkpoint's (Flink
/// redistributes the in-flight data of keyed exchanges the same way):
/// every old subtask's captured records are split by key group
/// (`route`), and this subtask keeps those of its key groups, each old
/// input channel's in their order, queued on new input `old channel %
/// channels` (per old sender, so a key's records from one sender stay in
/// order; all of them are processed before what the channel delivers,
/// and event time waits for every input). A key's records were all
/// received by the one old subtask owning its key group, so each record
/// is replayed exactly once, by the new owner of its key. Without a
/// route (a two-input stage) records in flight refuse the rescale:
/// [`RestoreError::ChannelStateRescale`].
fn restore_rescaled_channel_state(
    scope: &RestoreScope<'_>,
    channels: usize,
    route: Option<&KeyRoute>,
) -> Result<Vec<Vec<u8>>, RestoreError> {
    let mut out = vec![Vec::new(); channels];
    let all = scope.channel_state_of_every_subtask()?;
    if all.iter().all(|(_, _, records)| records.is_empty()) {
        return Ok(out);
    }
    let info = scope.subtask_info();
    let Some(route) = route else {
        return Err(RestoreError::ChannelStateRescale {
            uid: scope.uid().to_owned(),
            checkpoint: scope.checkpoint_id(),
            was: scope.old_parallelism().unwrap_or(0),
            now: info.parallelism,
        });
    };
    let mine = scope.key_groups();
    let mut split = Vec::new();
    for (_, extent, records) in &all {
        let channel = extent
            .state
            .strip_prefix("input-")
            .and_then(|c| c.parse::<usize>().ok())
            .ok_or_else(|| {
                scope.malformed(extent, 0, "not the channel state of an input".into())
            })?;
        split.clear();
        route(records, &mut split).map_err(|e| {
            let at = split.iter().map(|(_, len)| len).sum();
            scope.malformed(extent, at, format!("a record does not decode: {e}"))
        })?;
        let into = &mut out[channel % channels.max(1)];
        let mut at = 0;
        for &(hash, len) in &split {
            let group = key_group_for_hash(hash, info.max_parallelism);
            if mine.contains(group) {
                into.extend_from_slice(&records[at..at + len]);
            }
            at += len;
        }
    }
    Ok(out)
}

/// Tail of a stage that ends in a key_by exchange.
pub(crate) struct ExchangeTail<T, K, KF> {
    pub(crate) exchange: usize,
    pub(crate) key_fn: KF,
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
        ctx.buffer_timeout,
        ctx.barrier_mode,
    )
    .with_metrics(ctx.subtask.clone(), counters)
}

/// Tail of a stage whose records go to every receiving subtask (`all`) or
/// round-robin to one.
pub(crate) struct FanOutTail<T> {
    exchange: usize,
    all: bool,
    _record: PhantomData<fn(T)>,
}

impl<T> FanOutTail<T> {
    pub(crate) fn new(exchange: usize, all: bool) -> Self {
        Self {
            exchange,
            all,
            _record: PhantomData,
        }
    }
}

impl<T: Wire> TailBuilder<T> for FanOutTail<T> {
    type Tail = FanOutOutput<T>;
    fn make(&self, ctx: &mut BuildContext<'_>) -> Result<Self::Tail, BuildError> {
        let inner = exchange_output(ctx, self.exchange, no_key::<T> as fn(&T) -> u64);
        // Round-robin starts at different receivers from different senders.
        let first = ctx.info.index % inner.channel_count().max(1);
        Ok(FanOutOutput::new(inner, self.all, first))
    }
}
