//! The options the runtime is built from, made from a [`Config`]: the
//! execution options of a job and its debloating options. The defaults of
//! every option are the configuration's, so they are written once, in
//! [`Config::default`].

use std::path::PathBuf;
use std::time::Duration;

use crate::checkpoint::coordinator::CoordinatorOptions;
use crate::checkpoint::segment_file::IoMode;
use crate::config::settings::{CheckpointingMode, Config};
use crate::exchange::debloat::DebloatOptions;
use crate::exec::options::{available_cores, CheckpointingOptions, ExecutionOptions, RestoreFrom};
use crate::metrics::latency::LatencyOptions;

impl ExecutionOptions {
    /// Options from a configuration; workers default to every usable core.
    pub fn from_config(config: &Config) -> Self {
        let checkpointing = match (config.checkpoint_interval, &config.checkpoints_dir) {
            (Some(interval), Some(dir)) => Some(CheckpointingOptions {
                dir: dir.clone(),
                coordinator: CoordinatorOptions {
                    interval,
                    min_pause: config.checkpoint_min_pause,
                    timeout: config.checkpoint_timeout,
                    max_concurrent: config.max_concurrent_checkpoints as usize,
                    tolerable_failures: config.tolerable_failed_checkpoints,
                    num_retained: config.checkpoints_num_retained as usize,
                },
                exactly_once: config.checkpointing_mode == CheckpointingMode::ExactlyOnce,
                unaligned: config.unaligned_checkpoints,
                incremental: config.incremental_checkpoints,
                aligned_checkpoint_timeout: config.aligned_checkpoint_timeout,
                io_mode: IoMode::Auto,
                savepoints_dir: config.savepoints_dir.clone(),
            }),
            _ => None,
        };
        Self {
            workers: config.parallelism.unwrap_or_else(available_cores),
            pin_cores: config.pin_cores,
            max_parallelism: config.max_parallelism,
            buffer_timeout: config.effective_buffer_timeout(),
            buffer_timeout_operators: config.buffer_timeout_operators.clone(),
            auto_watermark_interval: config.auto_watermark_interval,
            latency: LatencyOptions {
                interval: (!config.latency_interval.is_zero()).then_some(config.latency_interval),
                history_size: config.latency_history_size as usize,
                granularity: config.latency_granularity,
            },
            segment_size: config.segment_size,
            buffers_per_channel: config.buffers_per_channel as usize,
            floating_buffers: config.floating_buffers_per_gate as usize,
            spin_before_park: config.spin_before_park,
            progress_interval: config.progress_interval,
            checkpointing,
            debloat: config
                .debloat_enabled
                .then(|| DebloatOptions::from_config(config)),
            restore: RestoreFrom::Nothing,
            allow_non_restored_state: false,
            stop: Default::default(),
            handle: Default::default(),
            restart: config.effective_restart_strategy(),
        }
    }

    /// The defaults of [`Config`] with `workers` workers and no progress
    /// reports (handy in tests).
    pub fn with_workers(workers: usize) -> Self {
        let mut options = Self::from_config(&Config::default());
        options.workers = workers;
        options.progress_interval = Duration::ZERO;
        options
    }

    /// Turns checkpointing on with the given interval and directory, other
    /// options at their defaults (handy in tests).
    pub fn with_checkpointing(mut self, interval: Duration, dir: impl Into<PathBuf>) -> Self {
        let defaults = Config::default();
        self.checkpointing = Some(CheckpointingOptions {
            dir: dir.into(),
            coordinator: CoordinatorOptions {
                interval,
                min_pause: defaults.checkpoint_min_pause,
                timeout: defaults.checkpoint_timeout,
                max_concurrent: defaults.max_concurrent_checkpoints as usize,
                tolerable_failures: defaults.tolerable_failed_checkpoints,
                num_retained: defaults.checkpoints_num_retained as usize,
            },
            exactly_once: true,
            unaligned: defaults.unaligned_checkpoints,
            incremental: defaults.incremental_checkpoints,
            aligned_checkpoint_timeout: defaults.aligned_checkpoint_timeout,
            io_mode: IoMode::Auto,
            savepoints_dir: None,
        });
        self
    }
}

impl DebloatOptions {
    /// The options as configured (whether debloating is enabled or not).
    pub fn from_config(config: &Config) -> Self {
        Self {
            target: config.debloat_target,
            period: config.debloat_period,
            samples: config.debloat_samples,
            threshold_percentages: config.debloat_threshold_percentages,
            min_buffer_size: config.min_segment_size,
        }
    }
}

impl Default for DebloatOptions {
    /// The documented defaults of the keys.
    fn default() -> Self {
        Self::from_config(&Config::default())
    }
}

#[cfg(test)]
mod tests;
