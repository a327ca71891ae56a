//! What a stage's builders may ask for while they build one subtask: its
//! place, the job's settings, its channel endpoints, checkpointing and the
//! checkpoint it restores.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use weir_net::{BufferPool, ChannelReceiver, ChannelSender, Consumer, NetworkBuffer};

use crate::checkpoint::restore::RestoredCheckpoint;
use crate::checkpoint::task::TaskCheckpointing;
use crate::core::barrier::BarrierMode;
use crate::core::subtask::SubtaskInfo;
use crate::exchange::flush::BufferTimeout;
use crate::exchange::watermark_alignment::WatermarkAlignmentGroups;
use crate::metrics::counters::ChannelCounters;
use crate::metrics::subtask::SubtaskMetrics;
use crate::metrics::worker::WorkerMetrics;

/// The sending side of one exchange for one subtask, before its pool exists.
pub(crate) struct OutputEndpoint {
    pub senders: Vec<ChannelSender>,
    /// Byte counters of the channels, one per sender.
    pub counters: Vec<Arc<ChannelCounters>>,
    pub returns: Vec<Consumer<NetworkBuffer>>,
    pub pool_size: usize,
    /// Capacity of each return ring: the most buffers the pool may own.
    pub max_pool: usize,
    pub buffer_size: usize,
}

/// The receiving side of one exchange for one subtask.
#[derive(Default)]
pub(crate) struct InputEndpoint {
    /// One per sending subtask, in order.
    pub receivers: Vec<ChannelReceiver>,
    /// Byte counters of the same channels.
    pub counters: Vec<Arc<ChannelCounters>>,
}

/// Channel endpoints handed to one worker, keyed by (exchange, subtask).
#[derive(Default)]
pub(crate) struct WorkerEndpoints {
    pub inputs: HashMap<(usize, usize), InputEndpoint>,
    pub outputs: HashMap<(usize, usize), OutputEndpoint>,
}

/// What a stage's builders may ask for while building one subtask.
pub struct BuildContext<'a> {
    /// The subtask being built.
    pub info: SubtaskInfo,
    /// `execution.buffer-timeout.*`: the job's buffer timeout.
    pub buffer_timeout: BufferTimeout,
    /// Exchanges with a buffer timeout of their own.
    pub(crate) exchange_buffer_timeouts: Arc<HashMap<usize, BufferTimeout>>,
    /// `pipeline.auto-watermark-interval` (zero: only final watermarks).
    pub auto_watermark_interval: Duration,
    /// `metrics.latency.interval`: how often a source emits a latency
    /// marker (`None`: never).
    pub latency_interval: Option<Duration>,
    /// The stage's position in the job (what a marker names its source by).
    pub stage: usize,
    /// The worker's counters.
    pub metrics: &'a WorkerMetrics,
    /// The attempt's watermark alignment groups (shared by every worker).
    pub(crate) watermark_alignment: Arc<WatermarkAlignmentGroups>,
    pub(crate) stage_name: &'a str,
    pub(crate) endpoints: &'a mut WorkerEndpoints,
    /// Checkpointing, if on: the worker's writer and the signals.
    pub(crate) checkpointing: Option<Rc<TaskCheckpointing>>,
    /// How barriers are aligned (or not) and sent.
    pub(crate) barrier_mode: BarrierMode,
    /// Buffer debloating of input gates: options, credit per channel and
    /// segment size.
    pub(crate) debloat: Option<(crate::exchange::debloat::DebloatOptions, usize, usize)>,
    /// The checkpoint this attempt restores, if any.
    pub(crate) restore: Option<Arc<RestoredCheckpoint>>,
    /// Where a branch's head leaves its chain for the fork building it
    /// ([`crate::build::branch`]).
    pub(crate) branch: Option<Box<dyn std::any::Any>>,
    /// The subtask's metrics.
    pub(crate) subtask: SubtaskMetrics,
    /// Byte counters of the input channels the subtask took (for the
    /// registry).
    pub(crate) input_channels: Vec<Arc<ChannelCounters>>,
    /// Byte counters of the output channels the subtask took.
    pub(crate) output_channels: Vec<Arc<ChannelCounters>>,
    /// Wakes the worker this subtask runs on (handed to sources that
    /// read through a thread of their own, `Source::open`).
    pub(crate) wakeup: crate::core::wakeup::SourceWakeup,
}

/// What making a user's function (keyed or not) needs of a
/// [`BuildContext`]: where it runs, whether its state names are checked
/// and what it restores. Also made without a job, by the operator test
/// harnesses of the `testing` feature, which make functions through the
/// same code.
pub struct FunctionSite<'a> {
    /// The task's name, for messages ("stage (i/P)").
    pub task: String,
    /// The operator's uid.
    pub uid: &'a str,
    /// The operator's kind, for messages ("keyed operator").
    pub what: &'static str,
    /// The subtask.
    pub info: SubtaskInfo,
    /// Whether to check the function's state names (as a job with
    /// checkpointing on does: a state that is not visited would be lost).
    pub check_state_names: bool,
    /// The checkpoint to restore the function's state from.
    pub restore: Option<&'a RestoredCheckpoint>,
}

impl BuildContext<'_> {
    /// Where operator `uid` (of kind `what`, for messages) makes this
    /// subtask's function.
    pub fn function_site<'s>(&'s self, uid: &'s str, what: &'static str) -> FunctionSite<'s> {
        FunctionSite {
            task: self.task_name(),
            uid,
            what,
            info: self.info,
            check_state_names: self.checkpointing.is_some(),
            restore: self.restore.as_deref(),
        }
    }

    /// The buffer timeout of the senders into `exchange`.
    pub fn buffer_timeout_of(&self, exchange: usize) -> BufferTimeout {
        self.exchange_buffer_timeouts
            .get(&exchange)
            .copied()
            .unwrap_or(self.buffer_timeout)
    }

    /// "stage (i/P)", as Flink names subtasks.
    pub fn task_name(&self) -> String {
        format!(
            "{} ({}/{})",
            self.stage_name,
            self.info.index + 1,
            self.info.parallelism
        )
    }

    /// The receivers of `exchange` for this subtask, one per sender, and
    /// their byte counters.
    pub(crate) fn take_input(
        &mut self,
        exchange: usize,
    ) -> (Vec<ChannelReceiver>, Vec<Arc<ChannelCounters>>) {
        let ep = self
            .endpoints
            .inputs
            .remove(&(exchange, self.info.index))
            .expect("every receiving subtask has its input channels");
        self.input_channels.extend(ep.counters.iter().cloned());
        (ep.receivers, ep.counters)
    }

    /// The senders of `exchange` for this subtask (one per receiver), the
    /// buffer pool, allocated here, on the worker's own core, the pool's
    /// largest size and the channels' byte counters.
    pub(crate) fn take_output(
        &mut self,
        exchange: usize,
    ) -> (
        Vec<ChannelSender>,
        BufferPool,
        usize,
        Vec<Arc<ChannelCounters>>,
    ) {
        let ep = self
            .endpoints
            .outputs
            .remove(&(exchange, self.info.index))
            .expect("every sending subtask has its output channels");
        let mut pool = BufferPool::new(ep.pool_size, ep.buffer_size);
        for r in ep.returns {
            pool.add_return_path(r);
        }
        self.output_channels.extend(ep.counters.iter().cloned());
        (ep.senders, pool, ep.max_pool, ep.counters)
    }
}
