//! The few atomics through which the checkpoint coordinator (on the control
//! thread) and the workers talk.
//!
//! The coordinator *triggers* checkpoint `n` by publishing its timestamp and
//! then its id; source tasks compare the id with the last one they injected
//! once per poll (one relaxed load) and inject a barrier for the newest id.
//! It announces *completion* the same way; every task forwards the newest
//! completed id down its chain (sinks commit). Sources report the end of
//! their input, so the coordinator can take the final checkpoint that
//! commits a bounded job's last output; sources then wait for that
//! checkpoint to complete before they end their partitions. A *stop*
//! (stop-with-savepoint) is a checkpoint marked as such: sources emit
//! nothing after its barrier, every task counts itself once it has
//! forwarded the stop's completion (sinks committed), and the control
//! thread then ends the attempt. A *savepoint* taken while the job runs
//! is a checkpoint marked as such too, only so that its barrier is a
//! savepoint's (aligned); sources go on after it. Every change is followed by ringing all
//! workers' doorbells, so parked workers see it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use weir_net::{BarrierKind, CheckpointBarrier};

/// Shared between the coordinator and every task of one attempt.
#[derive(Debug, Default)]
pub struct CheckpointSignals {
    trigger_id: AtomicU64,
    trigger_ms: AtomicU64,
    completed_id: AtomicU64,
    final_id: AtomicU64,
    sources_ended: AtomicUsize,
    stop_id: AtomicU64,
    savepoint_id: AtomicU64,
    stopped_tasks: AtomicUsize,
}

impl CheckpointSignals {
    /// Signals for an attempt whose latest complete checkpoint is
    /// `restored` (0 if none): tasks consider it already notified.
    pub fn new(restored: u64) -> Self {
        let s = Self::default();
        s.completed_id.store(restored, Ordering::Relaxed);
        s.trigger_id.store(restored, Ordering::Relaxed);
        s
    }

    /// Publishes checkpoint `id`, triggered at `timestamp_ms`.
    pub fn trigger(&self, id: u64, timestamp_ms: u64) {
        self.trigger_ms.store(timestamp_ms, Ordering::Relaxed);
        self.trigger_id.store(id, Ordering::Release);
    }

    /// Marks `id` as the final checkpoint (and triggers it).
    pub fn trigger_final(&self, id: u64, timestamp_ms: u64) {
        self.final_id.store(id, Ordering::Release);
        self.trigger(id, timestamp_ms);
    }

    /// Marks `id` as the stop's snapshot (and triggers it): sources emit
    /// nothing after its barrier.
    pub fn trigger_stop(&self, id: u64, timestamp_ms: u64) {
        self.stop_id.store(id, Ordering::Release);
        self.trigger(id, timestamp_ms);
    }

    /// Marks `id` as a savepoint the job runs on after (and triggers it):
    /// its barrier is a savepoint's.
    pub fn trigger_savepoint(&self, id: u64, timestamp_ms: u64) {
        self.savepoint_id.store(id, Ordering::Release);
        self.trigger(id, timestamp_ms);
    }

    /// The stop's snapshot failed: sources go on emitting.
    pub fn cancel_stop(&self) {
        self.stop_id.store(0, Ordering::Release);
    }

    /// The stop's snapshot id, 0 if no stop is under way (read once per
    /// source poll).
    #[inline]
    pub fn stop_id(&self) -> u64 {
        self.stop_id.load(Ordering::Acquire)
    }

    /// A task has forwarded the completion of the stop's snapshot down its
    /// chain (its sinks committed).
    pub fn task_stopped(&self) {
        self.stopped_tasks.fetch_add(1, Ordering::AcqRel);
    }

    /// Tasks that have forwarded the completion of the stop's snapshot.
    pub fn stopped_tasks(&self) -> usize {
        self.stopped_tasks.load(Ordering::Acquire)
    }

    /// The newest triggered checkpoint: `(id, timestamp_ms)`.
    #[inline]
    pub fn triggered(&self) -> (u64, u64) {
        let id = self.trigger_id.load(Ordering::Acquire);
        (id, self.trigger_ms.load(Ordering::Relaxed))
    }

    /// The barrier of the newest triggered checkpoint: a savepoint's
    /// (always aligned) if it is the stop's snapshot, else a checkpoint's.
    pub fn triggered_barrier(&self) -> CheckpointBarrier {
        let (id, timestamp_ms) = self.triggered();
        // `trigger_stop` and `trigger_savepoint` mark the id before they
        // publish it, so the acquire of the id above sees the mark.
        let savepoint = self.stop_id() == id || self.savepoint_id.load(Ordering::Acquire) == id;
        let kind = if id != 0 && savepoint {
            BarrierKind::Savepoint
        } else {
            BarrierKind::Checkpoint
        };
        CheckpointBarrier {
            id,
            timestamp_ms,
            kind,
        }
    }

    /// Cheap check used on every source poll.
    #[inline]
    pub fn triggered_id(&self) -> u64 {
        self.trigger_id.load(Ordering::Relaxed)
    }

    /// The final checkpoint's id, 0 until it is triggered.
    #[inline]
    pub fn final_id(&self) -> u64 {
        self.final_id.load(Ordering::Acquire)
    }

    /// Announces that checkpoint `id` is complete.
    pub fn complete(&self, id: u64) {
        self.completed_id.fetch_max(id, Ordering::AcqRel);
    }

    /// The newest complete checkpoint (0 if none).
    #[inline]
    pub fn completed_id(&self) -> u64 {
        self.completed_id.load(Ordering::Acquire)
    }

    /// A source subtask's input has ended.
    pub fn source_ended(&self) {
        self.sources_ended.fetch_add(1, Ordering::AcqRel);
    }

    /// Source subtasks whose input has ended.
    pub fn sources_ended(&self) -> usize {
        self.sources_ended.load(Ordering::Acquire)
    }
}
