//! Resolving a job graph into tasks: the stages' parallelism, the channel
//! mesh of every exchange, and each worker's tasks.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use weir_net::channel;

use crate::api::graph::JobPlan;
use crate::build::context::{BuildContext, InputEndpoint, OutputEndpoint, WorkerEndpoints};
use crate::chain::task::Task;
use crate::checkpoint::restore::RestoredCheckpoint;
use crate::checkpoint::task::TaskCheckpointing;
use crate::core::barrier::BarrierMode;
use crate::core::subtask::SubtaskInfo;
use crate::core::wakeup::SourceWakeup;
use crate::exchange::debloat::DebloatOptions;
use crate::exchange::flush::BufferTimeout;
use crate::exchange::watermark_alignment::WatermarkAlignmentGroups;
use crate::exec::error::{JobError, Result, TaskFailure};
use crate::exec::options::ExecutionOptions;
use crate::exec::worker::{failure_of, JobShared};
use crate::metrics::counters::ChannelCounters;
use crate::metrics::latency::LatencyOptions;
use crate::metrics::subtask::{SubtaskEntry, SubtaskId, SubtaskMetrics};
use crate::metrics::worker::WorkerMetrics;

/// Buffers a pool may borrow beyond its size when a single record's output
/// exceeds it (see `ExchangeOutput`); bounds the return rings' capacity.
const OVERDRAFT_BUFFERS: usize = 1024;

pub(crate) struct ResolvedStage {
    pub(crate) parallelism: usize,
}

/// Subtasks (tasks) that run on worker `w`.
pub(crate) fn tasks_on_worker(stages: &[ResolvedStage], w: usize, workers: usize) -> usize {
    stages
        .iter()
        .map(|s| (w..s.parallelism).step_by(workers).count())
        .sum()
}

/// What every subtask of a worker is built with.
pub(crate) struct WorkerSettings {
    pub(crate) buffer_timeout: BufferTimeout,
    /// Exchanges with a buffer timeout of their own.
    pub(crate) exchange_buffer_timeouts: Arc<HashMap<usize, BufferTimeout>>,
    pub(crate) auto_watermark_interval: Duration,
    /// `metrics.latency.*`.
    pub(crate) latency: LatencyOptions,
    pub(crate) max_parallelism: u32,
    pub(crate) barrier_mode: BarrierMode,
    /// Buffer debloating: options, credit per channel, segment size.
    pub(crate) debloat: Option<(DebloatOptions, usize, usize)>,
    pub(crate) restore: Option<Arc<RestoredCheckpoint>>,
    /// The attempt's watermark alignment groups.
    pub(crate) watermark_alignment: Arc<WatermarkAlignmentGroups>,
}

/// Checks the graph and options; returns each stage's parallelism.
pub(crate) fn validate(job: &JobPlan, options: &ExecutionOptions) -> Result<Vec<ResolvedStage>> {
    job.exchange_buffer_timeouts(&options.buffer_timeout_operators)
        .map_err(JobError::InvalidJob)?;
    if let Some(e) = job.errors.first() {
        return Err(JobError::InvalidJob(e.clone()));
    }
    if options.workers == 0 {
        return Err(JobError::InvalidJob(
            "a job needs at least one worker".into(),
        ));
    }
    if job.stages.is_empty() {
        return Err(JobError::InvalidJob(format!(
            "job `{}` has no sink: nothing would run",
            job.name()
        )));
    }
    if let Some(name) = job.stages.iter().find_map(|s| s.spec.unfinished()) {
        return Err(JobError::InvalidJob(format!(
            "the stream `{name}` has side outputs or branches but does not end \
             (in a sink, a key_by or another exchange)"
        )));
    }
    let mut resolved = Vec::with_capacity(job.stages.len());
    for stage in &job.stages {
        let p = stage.parallelism.unwrap_or(options.workers);
        if p as u64 > u64::from(options.max_parallelism) {
            return Err(JobError::InvalidJob(format!(
                "stage `{}` has parallelism {p}, above pipeline.max-parallelism {}",
                stage.name, options.max_parallelism
            )));
        }
        resolved.push(ResolvedStage { parallelism: p });
    }
    for e in 0..job.exchanges {
        let senders = job.stages.iter().filter(|s| s.outputs.contains(&e)).count();
        let receivers = (0..job.stages.len())
            .filter(|&s| job.stage_receives(s, e))
            .count();
        if senders != 1 || receivers != 1 {
            return Err(JobError::InvalidJob(format!(
                "a key_by is not followed by a keyed operator ending in a sink \
                 (exchange {e} has {senders} sending and {receivers} receiving stages)"
            )));
        }
    }
    for &e in &job.forward {
        let from = job.stages.iter().position(|s| s.outputs.contains(&e));
        let to = (0..job.stages.len()).find(|&s| job.stage_receives(s, e));
        if let (Some(from), Some(to)) = (from, to) {
            let (pf, pt) = (resolved[from].parallelism, resolved[to].parallelism);
            if pf != pt {
                return Err(JobError::InvalidJob(format!(
                    "forward edge from `{}` (parallelism {pf}) to `{}` (parallelism {pt}): \
                     forward needs the same parallelism on both sides; use rebalance or rescale",
                    job.stages[from].name, job.stages[to].name
                )));
            }
        }
    }
    Ok(resolved)
}

/// Builds every channel of every exchange: one SPSC channel per (sending
/// subtask, receiving subtask) pair, and hands the endpoints to the workers
/// that run those subtasks.
pub(crate) fn wire_channels(
    job: &JobPlan,
    stages: &[ResolvedStage],
    options: &ExecutionOptions,
    shared: &JobShared,
) -> Vec<WorkerEndpoints> {
    let workers = options.workers;
    let mut endpoints: Vec<WorkerEndpoints> =
        (0..workers).map(|_| WorkerEndpoints::default()).collect();
    let credit = options.buffers_per_channel.max(1);
    for e in 0..job.exchanges {
        let from = job
            .stages
            .iter()
            .position(|s| s.outputs.contains(&e))
            .expect("validated");
        let to = (0..job.stages.len())
            .find(|&s| job.stage_receives(s, e))
            .expect("validated");
        let (ps, pr) = (stages[from].parallelism, stages[to].parallelism);
        // Every channel keeps one buffer being filled; one more guarantees
        // that a full buffer can always be replaced while it travels (as
        // Flink requires subpartitions + 1 buffers), whatever the config.
        let pool_size = (pr * credit + options.floating_buffers).max(pr + 1);
        let max_pool = pool_size + OVERDRAFT_BUFFERS;
        let mut receivers: HashMap<usize, InputEndpoint> = HashMap::new();
        for s in 0..ps {
            let ws = s % workers;
            let mut senders = Vec::with_capacity(pr);
            let mut returns = Vec::with_capacity(pr);
            let mut counters = Vec::with_capacity(pr);
            for r in 0..pr {
                let wr = r % workers;
                // The return ring holds every buffer the pool may ever own,
                // so a return never fails.
                let (tx, rx, ret) = channel(
                    credit,
                    max_pool,
                    shared.bells[ws].clone(),
                    shared.bells[wr].clone(),
                );
                let bytes = Arc::new(ChannelCounters::default());
                senders.push(tx);
                returns.push(ret);
                counters.push(bytes.clone());
                let input = receivers.entry(r).or_default();
                input.receivers.push(rx);
                input.counters.push(bytes);
            }
            endpoints[ws].outputs.insert(
                (e, s),
                OutputEndpoint {
                    senders,
                    counters,
                    returns,
                    pool_size,
                    max_pool,
                    buffer_size: options.segment_size,
                },
            );
        }
        for (r, rx) in receivers {
            endpoints[r % workers].inputs.insert((e, r), rx);
        }
    }
    endpoints
}

/// A subtask's task and its registry entry (metrics, channel counters).
type BuiltTask = (Box<dyn Task>, SubtaskEntry);

/// Builds the tasks of every subtask that runs on worker `w`. The first
/// that cannot be built fails with its task's name and why: a
/// [`BuildError`](crate::build::error::BuildError), or the message of a
/// panic while building (a bug, weir's or a user function's).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_tasks(
    w: usize,
    workers: usize,
    bell: Arc<weir_net::Doorbell>,
    job: &JobPlan,
    stages: &[ResolvedStage],
    endpoints: &mut WorkerEndpoints,
    metrics: &WorkerMetrics,
    settings: &WorkerSettings,
    checkpointing: Option<Rc<TaskCheckpointing>>,
) -> std::result::Result<Vec<BuiltTask>, (String, TaskFailure)> {
    let mut tasks = Vec::new();
    for (stage, (node, resolved)) in job.stages.iter().zip(stages).enumerate() {
        for index in (w..resolved.parallelism).step_by(workers) {
            let subtask = SubtaskMetrics::with_latency(
                SubtaskId {
                    stage: node.name.clone(),
                    index,
                    parallelism: resolved.parallelism,
                    worker: w,
                },
                &settings.latency,
            );
            let mut ctx = BuildContext {
                info: SubtaskInfo {
                    index,
                    parallelism: resolved.parallelism,
                    worker: w,
                    max_parallelism: settings.max_parallelism,
                },
                buffer_timeout: settings.buffer_timeout,
                exchange_buffer_timeouts: settings.exchange_buffer_timeouts.clone(),
                auto_watermark_interval: settings.auto_watermark_interval,
                latency_interval: settings.latency.interval,
                stage,
                metrics,
                watermark_alignment: settings.watermark_alignment.clone(),
                stage_name: &node.name,
                endpoints,
                checkpointing: checkpointing.clone(),
                barrier_mode: settings.barrier_mode,
                debloat: settings.debloat.clone(),
                restore: settings.restore.clone(),
                branch: None,
                subtask,
                input_channels: Vec::new(),
                output_channels: Vec::new(),
                wakeup: SourceWakeup::new(bell.clone()),
            };
            let name = ctx.task_name();
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                node.spec.build(&mut ctx)
            }));
            let task = match built {
                Ok(Ok(task)) => task,
                Ok(Err(e)) => return Err((name, TaskFailure::from(e))),
                Err(panic) => return Err((name, failure_of(panic))),
            };
            let entry = SubtaskEntry {
                metrics: ctx.subtask,
                inputs: ctx.input_channels,
                outputs: ctx.output_channels,
            };
            tasks.push((task, entry));
        }
    }
    Ok(tasks)
}
