//! How a job is executed: workers, buffers, checkpointing, restore and
//! restarts, resolved from the configuration or set directly.

use std::path::PathBuf;
use std::time::Duration;

use crate::checkpoint::coordinator::CoordinatorOptions;
use crate::checkpoint::segment_file::IoMode;
use crate::core::barrier::BarrierMode;
use crate::exchange::debloat::DebloatOptions;
use crate::exchange::flush::{BufferTimeout, OperatorTimeouts};
use crate::exec::handle::JobHandle;
use crate::exec::restart::RestartStrategy;
use crate::exec::stop::StopRequest;
use crate::metrics::latency::LatencyOptions;

/// Where a run starts from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RestoreFrom {
    /// A fresh start.
    #[default]
    Nothing,
    /// The newest complete and verified checkpoint in
    /// `state.checkpoints.dir` (a fresh start if there is none).
    Latest,
    /// This checkpoint or savepoint (a `chk-<id>` or `savepoint-*`
    /// directory, or its `_metadata`). A savepoint is only read (Flink's
    /// no-claim mode).
    Path(PathBuf),
}

/// How checkpoints are taken.
#[derive(Clone, Debug)]
pub struct CheckpointingOptions {
    /// `state.checkpoints.dir`.
    pub dir: PathBuf,
    /// Triggering, timeouts, failures, retention.
    pub coordinator: CoordinatorOptions,
    /// `execution.checkpointing.mode` is exactly-once (else at-least-once).
    pub exactly_once: bool,
    /// `execution.checkpointing.unaligned.enabled` (only with exactly-once;
    /// the configuration rejects it with at-least-once).
    pub unaligned: bool,
    /// `execution.checkpointing.aligned-checkpoint-timeout`: with
    /// `unaligned`, how long a checkpoint stays aligned before switching;
    /// zero = unaligned from the start. Ignored without `unaligned`.
    pub aligned_checkpoint_timeout: Duration,
    /// How segment files are written.
    pub io_mode: IoMode,
    /// `execution.checkpointing.incremental`: keyed state tables write
    /// only their changed slots (see `checkpoint::writer`).
    pub incremental: bool,
    /// `state.savepoints.dir`: where a stop writes its savepoint; `None`:
    /// a stop takes a checkpoint into `dir`.
    pub savepoints_dir: Option<PathBuf>,
}

impl CheckpointingOptions {
    /// How barriers are aligned and sent.
    pub fn barrier_mode(&self) -> BarrierMode {
        BarrierMode::of(
            self.exactly_once,
            self.unaligned,
            self.aligned_checkpoint_timeout,
        )
    }
}

/// How a job is executed (from a [`Config`](crate::config::Config), or set
/// directly in tests).
#[derive(Clone, Debug)]
pub struct ExecutionOptions {
    /// Workers (one executor each).
    pub workers: usize,
    /// Pin each worker to a core.
    pub pin_cores: bool,
    /// `pipeline.max-parallelism`: number of key groups.
    pub max_parallelism: u32,
    /// `execution.buffer-timeout`.
    pub buffer_timeout: BufferTimeout,
    /// `execution.buffer-timeout.operators`.
    pub buffer_timeout_operators: OperatorTimeouts,
    /// `pipeline.auto-watermark-interval` (zero: only final watermarks).
    pub auto_watermark_interval: Duration,
    /// `metrics.latency.*`: latency markers and their histograms.
    pub latency: LatencyOptions,
    /// `taskmanager.memory.segment-size`: bytes per network buffer.
    pub segment_size: usize,
    /// `taskmanager.network.memory.buffers-per-channel`: credit per channel.
    pub buffers_per_channel: usize,
    /// `taskmanager.network.memory.floating-buffers-per-gate`.
    pub floating_buffers: usize,
    /// `weir.worker.spin-before-park`.
    pub spin_before_park: Duration,
    /// `weir.progress.interval` (zero: no progress reports).
    pub progress_interval: Duration,
    /// Checkpointing, if `execution.checkpointing.interval` is set.
    pub checkpointing: Option<CheckpointingOptions>,
    /// Buffer debloating, if `taskmanager.network.memory.buffer-debloat.enabled`.
    pub debloat: Option<DebloatOptions>,
    /// Where the run starts from (`--restore`).
    pub restore: RestoreFrom,
    /// `--allow-non-restored-state`: state in the restored snapshot for an
    /// operator uid this job does not have is skipped (logged) instead of
    /// refused.
    pub allow_non_restored_state: bool,
    /// Set to stop the run with a savepoint (see [`StopRequest`]).
    pub stop: StopRequest,
    /// What the control plane sees of the run and asks of it (see
    /// [`JobHandle`]).
    pub handle: JobHandle,
    /// `restart-strategy.*`.
    pub restart: RestartStrategy,
}

/// Cores this process may run on (its affinity mask), at least 1.
pub fn available_cores() -> usize {
    core_affinity::get_core_ids()
        .map(|ids| ids.len())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}
