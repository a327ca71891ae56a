//! The checkpoint coordinator, on the control thread.
//!
//! Every `execution.checkpointing.interval` it triggers checkpoint `n`
//! (creating `chk-<n>`, then publishing the trigger to the sources), unless
//! `max-concurrent-checkpoints` are already pending or less than `min-pause`
//! has passed since the last one ended. It collects one acknowledgement per
//! task; when it has all of them it writes the manifest atomically, and only
//! then is checkpoint `n` complete: it announces the completion (sinks
//! commit), older pending checkpoints are subsumed, and checkpoints beyond
//! `state.checkpoints.num-retained` are deleted. A checkpoint that a task
//! declines or that outlives `execution.checkpointing.timeout` fails; more
//! than `tolerable-failed-checkpoints` consecutive failures fail the job.
//! When every source has reached the end of its input the coordinator
//! triggers the *final* checkpoint, which commits a bounded job's last
//! output (sources end their partitions once it is complete).
//!
//! A *stop* ([`CheckpointCoordinator::request_stop`], Flink's
//! stop-with-savepoint) triggers a savepoint at once (into
//! `state.savepoints.dir`; a checkpoint when that is unset), whatever the
//! interval, the pause or the checkpoints pending; sources emit nothing
//! after its barrier and no checkpoint is triggered after it. Once it is
//! complete the attempt ends when every task has passed the completion on
//! ([`CheckpointCoordinator::stopped`]). A stop savepoint that fails is
//! withdrawn: sources go on, the job runs on, and the failure does not
//! count against `tolerable-failed-checkpoints` (as in Flink).
//!
//! A *savepoint* ([`CheckpointCoordinator::trigger_savepoint`], Flink's
//! `POST /jobs/:id/savepoints`) is triggered at once too, into
//! `state.savepoints.dir` or the directory asked for, and the job runs on
//! after it; no periodic checkpoint is triggered while it is pending (its
//! barrier would be overtaken). How it ended is taken with
//! [`CheckpointCoordinator::take_savepoint_outcomes`]; its failure does not
//! count against `tolerable-failed-checkpoints` either.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_state::snapshot::{Lineage, Manifest, OperatorSnapshot, SnapshotKind, SubtaskSnapshot};

use crate::checkpoint::deleter::Deleter;
use crate::checkpoint::error::{CheckpointError, Result};
use crate::checkpoint::lineage::Fingerprint;
use crate::checkpoint::signals::CheckpointSignals;
use crate::checkpoint::stats::{CheckpointRecord, CheckpointStatus};
use crate::checkpoint::storage::{CheckpointStorage, HISTORY_FILE, METADATA_FILE};

pub use crate::checkpoint::stats::TaskCheckpointStats;
use crate::core::log::CHECKPOINT;
use crate::core::paths::within;
use crate::core::time::wall_ms;

/// A task's acknowledgement of a checkpoint: its operators' state handles.
pub struct TaskAck {
    /// The checkpoint.
    pub checkpoint: u64,
    /// The task, for messages.
    pub task: String,
    /// `(operator uid, operator parallelism, this subtask's snapshot)`.
    pub operators: Vec<(String, u32, SubtaskSnapshot)>,
    /// When the asynchronous part started.
    pub async_started: Instant,
    /// Statistics.
    pub stats: TaskCheckpointStats,
}

/// What workers send the coordinator.
pub enum CoordinatorMsg {
    /// A task's part is durable.
    Ack(TaskAck),
    /// A task could not take part.
    Decline {
        /// The checkpoint.
        checkpoint: u64,
        /// Who declined.
        task: String,
        /// Why.
        reason: String,
    },
}

/// How checkpoints are taken (the `execution.checkpointing.*` and
/// `state.checkpoints.*` options).
#[derive(Clone, Debug)]
pub struct CoordinatorOptions {
    /// Interval between triggers.
    pub interval: Duration,
    /// Least time between the end of one checkpoint and the next trigger.
    pub min_pause: Duration,
    /// A checkpoint pending longer fails.
    pub timeout: Duration,
    /// Most checkpoints pending at once.
    pub max_concurrent: usize,
    /// Consecutive failed checkpoints tolerated before the job fails.
    pub tolerable_failures: u32,
    /// Complete checkpoints kept.
    pub num_retained: usize,
}

struct Pending {
    triggered_at: Instant,
    trigger_ms: u64,
    is_final: bool,
    /// The stop's snapshot (and its kind).
    stop: Option<SnapshotKind>,
    /// A savepoint the job runs on after: its directory.
    savepoint: Option<PathBuf>,
    acks: Vec<TaskAck>,
}

/// The record of pending checkpoint `id` with `status`: its duration
/// until now and the largest and summed figures of `tasks`.
fn record_of(
    id: u64,
    p: &Pending,
    status: CheckpointStatus,
    tasks: Vec<TaskCheckpointStats>,
    failure: Option<String>,
) -> CheckpointRecord {
    let max = |f: fn(&TaskCheckpointStats) -> f64| tasks.iter().map(f).fold(0.0, f64::max);
    CheckpointRecord {
        id,
        status,
        is_final: p.is_final,
        is_savepoint: p.savepoint.is_some() || p.stop == Some(SnapshotKind::Savepoint),
        trigger_ms: p.trigger_ms,
        duration_ms: p.triggered_at.elapsed().as_secs_f64() * 1e3,
        alignment_ms: max(|t| t.alignment_ms),
        sync_ms: max(|t| t.sync_ms),
        async_ms: max(|t| t.async_ms),
        bytes: tasks.iter().map(|t| t.bytes).sum(),
        inflight_bytes: tasks.iter().map(|t| t.inflight_bytes).sum(),
        failure,
        tasks,
    }
}

/// Why a checkpoint is triggered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Periodic,
    Final,
    Stop,
    /// A savepoint into this parent directory.
    Savepoint,
}

/// How a savepoint the job ran on after ended: its directory, or why it
/// failed.
pub type SavepointOutcome = (u64, std::result::Result<PathBuf, String>);

/// The snapshot a stop took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// The snapshot's id.
    pub id: u64,
    /// A savepoint (into `state.savepoints.dir`) or, without that key, a
    /// checkpoint (into `state.checkpoints.dir`).
    pub kind: SnapshotKind,
    /// Its directory: what `--restore` takes.
    pub dir: PathBuf,
}

/// Checkpoints kept in `checkpoint-history.json`.
const HISTORY_LEN: usize = 100;

/// One entry of `checkpoint-history.json`: `value` as pretty JSON, indented
/// as an element of the file's array.
fn history_entry(value: &impl serde::Serialize) -> serde_json::Result<String> {
    let pretty = serde_json::to_string_pretty(value)?;
    let mut entry = String::with_capacity(pretty.len() + pretty.len() / 8);
    for (i, line) in pretty.lines().enumerate() {
        if i > 0 {
            entry.push('\n');
        }
        entry.push_str("  ");
        entry.push_str(line);
    }
    Ok(entry)
}

/// `checkpoint-history.json` of encoded entries ([`history_entry`]): the
/// bytes `serde_json::to_vec_pretty` writes for the array of them.
fn history_file(entries: &std::collections::VecDeque<String>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(entries.iter().map(|e| e.len() + 2).sum::<usize>() + 4);
    bytes.push(b'[');
    for (i, entry) in entries.iter().enumerate() {
        bytes.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        bytes.extend_from_slice(entry.as_bytes());
    }
    bytes.extend_from_slice(if entries.is_empty() { b"]" } else { b"\n]" });
    bytes
}

/// Replaces `dir/name` with `bytes` atomically (a temporary file renamed
/// over it), without syncing either.
fn replace_file(dir: &std::path::Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let written =
        std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes the temporary files of [`replace_file`] for `dir/name` that
/// other processes left (one that crashed between writing and renaming
/// its own): the directory's lock (`exec::lock`) keeps any other process
/// from writing into it meanwhile.
fn remove_stale_temporaries(dir: &std::path::Path, name: &str) {
    let prefix = format!(".{name}.tmp.");
    let mine = format!("{prefix}{}", std::process::id());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        let pid = file.strip_prefix(&prefix);
        if file != mine
            && pid.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// How many checkpoint ids the coordinator records in `_timeline` at once
/// ([`CheckpointStorage::record_id`]): a minute's worth at `interval`, so
/// the durable write happens about once a minute whatever the interval
/// (at most 1,000 ids ahead; every trigger at intervals of a minute or more).
fn ids_ahead(interval: Duration) -> u64 {
    let per_minute = Duration::from_secs(60).as_nanos() / interval.as_nanos().max(1);
    per_minute.clamp(1, 1000) as u64
}

/// Triggers, collects and completes checkpoints for one attempt.
pub struct CheckpointCoordinator {
    options: CoordinatorOptions,
    storage: Arc<CheckpointStorage>,
    signals: Arc<CheckpointSignals>,
    inbox: Receiver<CoordinatorMsg>,
    job_name: String,
    max_parallelism: u32,
    expected_acks: usize,
    source_subtasks: usize,
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    started: Instant,
    last_trigger: Option<Instant>,
    last_end: Option<Instant>,
    consecutive_failures: u32,
    final_pending: bool,
    final_completed: bool,
    stop_pending: bool,
    stopped: Option<Stopped>,
    stop_failed: Option<String>,
    /// The savepoint pending (the job runs on after it).
    savepoint_pending: Option<u64>,
    /// Where the next savepoint goes (set just before its trigger).
    savepoint_parent: Option<PathBuf>,
    /// Where the stop's savepoint goes if not `state.savepoints.dir` (set
    /// just before its trigger).
    stop_parent: Option<PathBuf>,
    /// Deletes what retention retired, off this thread's bursts (made at
    /// the first retirement).
    deleter: Option<Deleter>,
    /// Whether retired directories a crashed run left were looked for.
    retired_swept: bool,
    /// The job's output directories: no savepoint goes into one.
    outputs: Vec<PathBuf>,
    /// The directories its file sources read.
    inputs: Vec<PathBuf>,
    savepoint_outcomes: Vec<SavepointOutcome>,
    records: Vec<CheckpointRecord>,
    fresh: Vec<CheckpointRecord>,
    /// The lineage written into every manifest: the run's job id and
    /// fingerprint, and as the parent the last checkpoint completed (or
    /// restored) before the one being completed.
    lineage: Option<Lineage>,
    /// `checkpoint-history.json`'s entries, encoded ([`Self::write_history`]);
    /// read from the file at the first write.
    history: Option<std::collections::VecDeque<String>>,
}

impl CheckpointCoordinator {
    /// A coordinator numbering checkpoints from `first_id`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        options: CoordinatorOptions,
        storage: Arc<CheckpointStorage>,
        signals: Arc<CheckpointSignals>,
        inbox: Receiver<CoordinatorMsg>,
        job_name: String,
        max_parallelism: u32,
        expected_acks: usize,
        source_subtasks: usize,
        first_id: u64,
    ) -> Self {
        Self {
            options,
            storage,
            signals,
            inbox,
            job_name,
            max_parallelism,
            expected_acks,
            source_subtasks,
            next_id: first_id,
            pending: BTreeMap::new(),
            started: Instant::now(),
            last_trigger: None,
            last_end: None,
            consecutive_failures: 0,
            final_pending: false,
            final_completed: false,
            stop_pending: false,
            stopped: None,
            stop_failed: None,
            savepoint_pending: None,
            savepoint_parent: None,
            stop_parent: None,
            deleter: None,
            retired_swept: false,
            outputs: Vec::new(),
            inputs: Vec::new(),
            savepoint_outcomes: Vec::new(),
            records: Vec::new(),
            fresh: Vec::new(),
            lineage: None,
            history: None,
        }
    }

    /// Records `job_id` and `fingerprint` in every manifest, with as the
    /// first checkpoint's parent `restored` (the checkpoint the run
    /// restored; `None` for a fresh start) and as every later one's the
    /// checkpoint completed before it.
    pub fn with_lineage(
        mut self,
        job_id: &str,
        restored: Option<u64>,
        fingerprint: &Fingerprint,
    ) -> Self {
        self.lineage = Some(Lineage {
            job_id: job_id.to_owned(),
            parent: restored,
            fingerprint: fingerprint.entries().to_vec(),
        });
        self
    }

    /// The job's output directories, which a savepoint triggered into a
    /// directory of the caller's choice must stay out of
    /// ([`CheckpointCoordinator::trigger_savepoint`]).
    pub fn with_outputs(mut self, outputs: &[PathBuf]) -> Self {
        self.outputs = outputs.to_vec();
        self
    }

    /// The directories the job's file sources read, which such a savepoint
    /// must stay out of too.
    pub fn with_inputs(mut self, inputs: &[PathBuf]) -> Self {
        self.inputs = inputs.to_vec();
        self
    }

    /// The checkpoints of this attempt so far.
    pub fn records(&self) -> &[CheckpointRecord] {
        &self.records
    }

    /// Checkpoints that ended since the last call (for progress lines).
    pub fn take_fresh(&mut self) -> Vec<CheckpointRecord> {
        std::mem::take(&mut self.fresh)
    }

    /// The next id this coordinator would use.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// True while a checkpoint is pending (the control thread then polls
    /// for acknowledgements more often).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Checkpoints pending now.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// What changes when a checkpoint is triggered, acknowledged or ends:
    /// `(pending, acknowledgements, newest pending id)`, so that the
    /// control thread rebuilds [`in_progress`](Self::in_progress) only then.
    pub fn pending_progress(&self) -> (usize, usize, Option<u64>) {
        let acks = self.pending.values().map(|p| p.acks.len()).sum();
        (
            self.pending.len(),
            acks,
            self.pending.keys().next_back().copied(),
        )
    }

    /// The pending checkpoints, oldest first, as records in progress:
    /// their duration so far and the statistics of the tasks that
    /// acknowledged (Flink's pending checkpoint statistics).
    pub fn in_progress(&self) -> Vec<CheckpointRecord> {
        self.pending
            .iter()
            .map(|(&id, p)| {
                let tasks = p.acks.iter().map(|a| a.stats.clone()).collect();
                record_of(id, p, CheckpointStatus::InProgress, tasks, None)
            })
            .collect()
    }

    /// True once the final checkpoint completed.
    pub fn final_completed(&self) -> bool {
        self.final_completed
    }

    /// Stops the job with a savepoint (Flink's stop-with-savepoint):
    /// triggers it now. Does nothing while a stop is under way or done,
    /// or once the final checkpoint of a job whose input ended was
    /// triggered (the job is about to end by itself). The savepoint goes
    /// into a directory of `parent` if given (Flink's stop
    /// `targetDirectory`; `None`: `state.savepoints.dir`, or a final
    /// checkpoint without it); a `parent` no savepoint may go into is
    /// refused as the stop's failure ([`take_stop_failure`]), and the job
    /// goes on. An `Err` fails the job as in
    /// [`CheckpointCoordinator::tick`].
    ///
    /// [`take_stop_failure`]: CheckpointCoordinator::take_stop_failure
    pub fn request_stop(
        &mut self,
        now: Instant,
        parent: Option<PathBuf>,
        ring: &dyn Fn(),
    ) -> Result<()> {
        if self.stop_pending || self.stopped.is_some() || self.final_pending || self.final_completed
        {
            return Ok(());
        }
        if let Some(parent) = &parent {
            if let Err(why) = self.check_savepoint_parent(parent) {
                self.stop_failed = Some(why);
                return Ok(());
            }
        }
        self.stop_parent = parent;
        if let Some(ms) = crate::core::failpoint::armed_ms("stop-delay") {
            std::thread::sleep(Duration::from_millis(ms));
        }
        self.trigger(now, Trigger::Stop, ring)
    }

    /// The directory the pending stop's snapshot is written into, if a
    /// stop is pending.
    pub fn stop_target(&self) -> Option<PathBuf> {
        self.pending
            .iter()
            .find(|(_, p)| p.stop.is_some())
            .map(|(&id, _)| self.storage.snapshot_dir(id))
    }

    /// Triggers a savepoint now, into `dir` (`None`: `state.savepoints.dir`),
    /// after which the job runs on; returns its id. Refused (with why)
    /// while a stop or another savepoint is under way, once the job's input
    /// ended, or with no directory to write to. A failure to create its
    /// directory is reported as its outcome, as any later failure.
    pub fn trigger_savepoint(
        &mut self,
        now: Instant,
        dir: Option<PathBuf>,
        ring: &dyn Fn(),
    ) -> std::result::Result<u64, String> {
        if self.stop_pending || self.stopped.is_some() {
            return Err("the job is stopping with a savepoint".into());
        }
        if self.final_pending || self.final_completed {
            return Err("the job's input ended: it is taking its final checkpoint".into());
        }
        if let Some(id) = self.savepoint_pending {
            return Err(format!("savepoint {id} is in progress"));
        }
        let Some(parent) = dir.or_else(|| self.storage.savepoints_dir().map(PathBuf::from)) else {
            return Err(
                "no savepoint directory: set state.savepoints.dir or give a target directory"
                    .into(),
            );
        };
        self.check_savepoint_parent(&parent)?;
        let id = self.next_id;
        self.savepoint_parent = Some(parent);
        match self.trigger(now, Trigger::Savepoint, ring) {
            Ok(()) => Ok(id),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Why a savepoint may not go into a directory of `parent`, if it may
    /// not: the job's output or input, or a directory weir manages.
    fn check_savepoint_parent(&self, parent: &Path) -> std::result::Result<(), String> {
        if let Some((dir, same)) = self
            .outputs
            .iter()
            .find_map(|out| within(parent, out).map(|same| (out, same)))
        {
            return Err(format!(
                "savepoint target {} is {}the job's output directory {}: the savepoint would \
                 land among its committed output; give it a directory of its own",
                parent.display(),
                if same { "" } else { "inside " },
                dir.display()
            ));
        }
        if let Some(input) = self
            .inputs
            .iter()
            .find(|input| within(parent, input).is_some())
        {
            return Err(format!(
                "savepoint target {} is {}the job's input {}: its file source, listing it \
                 again or in the next run, would read the savepoint's files as input; give it a \
                 directory of its own",
                parent.display(),
                if within(parent, input) == Some(true) {
                    ""
                } else {
                    "inside "
                },
                input.display()
            ));
        }
        if let Some(managed) = self.storage.managed_dir_containing(parent) {
            return Err(format!(
                "savepoint target {} is inside {}, which weir deletes or moves as checkpoints \
                 are subsumed, cleaned up or abandoned: the savepoint would be lost; give it a \
                 directory of its own",
                parent.display(),
                managed.display()
            ));
        }
        Ok(())
    }

    /// How the savepoints the job ran on after ended since the last call.
    pub fn take_savepoint_outcomes(&mut self) -> Vec<SavepointOutcome> {
        std::mem::take(&mut self.savepoint_outcomes)
    }

    /// The stop's snapshot, once it is complete.
    pub fn stopped(&self) -> Option<&Stopped> {
        self.stopped.as_ref()
    }

    /// Why the stop's snapshot failed, once (the job goes on).
    pub fn take_stop_failure(&mut self) -> Option<String> {
        self.stop_failed.take()
    }

    /// Does whatever is due at `now`; `ring` wakes every worker. An `Err`
    /// fails the job (too many consecutive checkpoint failures).
    pub fn tick(&mut self, now: Instant, ring: &dyn Fn()) -> Result<()> {
        while let Ok(msg) = self.inbox.try_recv() {
            match msg {
                CoordinatorMsg::Ack(ack) => {
                    tracing::debug!(
                        target: CHECKPOINT,
                        checkpoint = ack.checkpoint,
                        task = ack.task.as_str(),
                        "acknowledged"
                    );
                    if let Some(p) = self.pending.get_mut(&ack.checkpoint) {
                        p.acks.push(ack);
                    }
                }
                CoordinatorMsg::Decline {
                    checkpoint,
                    task,
                    reason,
                } => {
                    tracing::debug!(
                        target: CHECKPOINT,
                        checkpoint,
                        task = task.as_str(),
                        reason = reason.as_str(),
                        "declined"
                    );
                    if self.pending.contains_key(&checkpoint) {
                        self.fail(checkpoint, format!("declined by {task}: {reason}"))?;
                    }
                }
            }
        }
        let ready: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.acks.len() >= self.expected_acks)
            .map(|(&id, _)| id)
            .collect();
        for id in ready {
            self.complete(id, ring)?;
        }
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| now.duration_since(p.triggered_at) > self.options.timeout)
            .map(|(&id, _)| id)
            .collect();
        for id in expired {
            self.fail(
                id,
                format!(
                    "expired after execution.checkpointing.timeout {:?}",
                    self.options.timeout
                ),
            )?;
        }
        if self.stop_pending || self.stopped.is_some() {
            return Ok(());
        }
        if !self.final_pending
            && !self.final_completed
            && self.signals.sources_ended() >= self.source_subtasks
        {
            self.trigger(now, Trigger::Final, ring)?;
            return Ok(());
        }
        if self.final_pending || self.final_completed || self.savepoint_pending.is_some() {
            return Ok(());
        }
        let due = self
            .last_trigger
            .map_or(self.started + self.options.interval, |t| {
                t + self.options.interval
            });
        let paused = self
            .last_end
            .is_none_or(|t| now.duration_since(t) >= self.options.min_pause);
        if now >= due && paused && self.pending.len() < self.options.max_concurrent {
            self.trigger(now, Trigger::Periodic, ring)?;
        }
        Ok(())
    }

    fn trigger(&mut self, now: Instant, why: Trigger, ring: &dyn Fn()) -> Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        self.last_trigger = Some(now);
        let trigger_ms = wall_ms();
        let is_final = why == Trigger::Final;
        let stop_parent = if why == Trigger::Stop {
            self.stop_parent.take()
        } else {
            None
        };
        let stop = (why == Trigger::Stop).then(|| {
            if stop_parent.is_some() || self.storage.savepoints_dir().is_some() {
                SnapshotKind::Savepoint
            } else {
                SnapshotKind::Checkpoint
            }
        });
        let savepoint = if why == Trigger::Savepoint {
            self.savepoint_parent.take()
        } else {
            None
        };
        self.pending.insert(
            id,
            Pending {
                triggered_at: now,
                trigger_ms,
                is_final,
                stop,
                savepoint: savepoint.clone(),
                acks: Vec::new(),
            },
        );
        if stop.is_some() {
            self.stop_pending = true;
        }
        if savepoint.is_some() {
            self.savepoint_pending = Some(id);
        }
        // The id is used from here on, whatever becomes of its directory.
        let created = self
            .storage
            .record_id(id, ids_ahead(self.options.interval))
            .and_then(|()| match (stop, &savepoint) {
                (_, Some(parent)) => self.storage.begin_savepoint_in(id, parent).map(|_| ()),
                (Some(SnapshotKind::Savepoint), _) => match &stop_parent {
                    Some(parent) => self.storage.begin_savepoint_in(id, parent).map(|_| ()),
                    None => self.storage.begin_savepoint(id).map(|_| ()),
                },
                _ => {
                    let dir = self.storage.checkpoint_dir(id);
                    std::fs::create_dir_all(&dir).map_err(|e| CheckpointError::io("create", dir, e))
                }
            });
        if let Err(e) = created {
            return self.fail(id, e.to_string());
        }
        tracing::debug!(target: CHECKPOINT, checkpoint = id, is_final, stop = stop.is_some(), "triggered");
        match why {
            Trigger::Final => {
                self.final_pending = true;
                self.signals.trigger_final(id, trigger_ms);
            }
            Trigger::Stop => self.signals.trigger_stop(id, trigger_ms),
            Trigger::Savepoint => self.signals.trigger_savepoint(id, trigger_ms),
            Trigger::Periodic => self.signals.trigger(id, trigger_ms),
        }
        ring();
        Ok(())
    }

    fn complete(&mut self, id: u64, ring: &dyn Fn()) -> Result<()> {
        let mut p = self.pending.remove(&id).expect("pending");
        let mut operators: BTreeMap<String, OperatorSnapshot> = BTreeMap::new();
        let mut tasks = Vec::with_capacity(p.acks.len());
        for ack in std::mem::take(&mut p.acks) {
            for (uid, parallelism, sub) in ack.operators {
                let op = operators
                    .entry(uid.clone())
                    .or_insert_with(|| OperatorSnapshot {
                        uid,
                        parallelism,
                        subtasks: Vec::new(),
                    });
                op.subtasks.push(sub);
            }
            tasks.push(ack.stats);
        }
        let mut ops: Vec<OperatorSnapshot> = operators.into_values().collect();
        for op in &mut ops {
            op.subtasks.sort_by_key(|s| s.index);
        }
        let manifest = Manifest {
            checkpoint_id: id,
            timestamp_ms: p.trigger_ms,
            max_parallelism: self.max_parallelism,
            job_name: self.job_name.clone(),
            operators: ops,
            lineage: self.lineage.clone(),
            kind: if p.savepoint.is_some() {
                SnapshotKind::Savepoint
            } else {
                p.stop.unwrap_or(SnapshotKind::Checkpoint)
            },
        };
        if p.stop.is_some() {
            if let Some(ms) = crate::core::failpoint::armed_ms("stop-complete-delay") {
                std::thread::sleep(Duration::from_millis(ms));
            }
        }
        let dir = self.storage.snapshot_dir(id);
        if let Err(e) = manifest.write(&dir, METADATA_FILE) {
            self.pending.insert(
                id,
                Pending {
                    acks: Vec::new(),
                    ..p
                },
            );
            return self.fail(id, format!("cannot write the manifest: {e}"));
        }
        // Durable: the checkpoint is complete, and the next one follows it.
        if let Some(lineage) = &mut self.lineage {
            lineage.parent = Some(id);
        }
        crate::core::failpoint::hit("checkpoint-complete", id);
        tracing::debug!(target: CHECKPOINT, checkpoint = id, "completed");
        self.signals.complete(id);
        ring();
        self.consecutive_failures = 0;
        self.last_end = Some(Instant::now());
        if p.is_final {
            self.final_pending = false;
            self.final_completed = true;
        }
        let is_savepoint = p.savepoint.is_some() || p.stop == Some(SnapshotKind::Savepoint);
        if p.savepoint.is_some() {
            self.savepoint_pending = None;
            self.savepoint_outcomes.push((id, Ok(dir.clone())));
        }
        if let Some(kind) = p.stop {
            self.stop_pending = false;
            self.stopped = Some(Stopped { id, kind, dir });
        }
        let record = record_of(id, &p, CheckpointStatus::Completed, tasks, None);
        debug_assert_eq!(record.is_savepoint, is_savepoint);
        self.push_record(record);
        // Older pending checkpoints are subsumed.
        let older: Vec<u64> = self.pending.range(..id).map(|(&i, _)| i).collect();
        for old in older {
            if let Some(p) = self.pending.remove(&old) {
                self.push_failed(old, &p, format!("subsumed by checkpoint {id}"));
            }
        }
        // Retired by a rename here, deleted a slice at a time on the
        // deleter's thread (unlinking a checkpoint's segments frees their
        // pages in one burst of kernel time, taken from a worker's core).
        match self.storage.retire_for_retention(self.options.num_retained) {
            Ok(retired) => {
                let dirs: Vec<PathBuf> = if self.retired_swept {
                    retired.into_iter().map(|(_, dir)| dir).collect()
                } else {
                    // Those just retired, and any a crashed run left.
                    self.retired_swept = true;
                    self.storage.retired()
                };
                if !dirs.is_empty() {
                    let deleter = self.deleter.get_or_insert_with(Deleter::new);
                    for dir in dirs {
                        deleter.delete(dir);
                    }
                }
            }
            Err(e) => tracing::warn!(target: CHECKPOINT, "cannot delete old checkpoints: {e}"),
        }
        // Directories of failed checkpoints below the newest complete one.
        if let Ok(list) = self.storage.list() {
            for c in list {
                if !c.complete && c.id < id && !self.pending.contains_key(&c.id) {
                    let _ = self.storage.delete(c.id);
                }
            }
        }
        Ok(())
    }

    fn fail(&mut self, id: u64, reason: String) -> Result<()> {
        let Some(p) = self.pending.remove(&id) else {
            return Ok(());
        };
        tracing::debug!(target: CHECKPOINT, checkpoint = id, reason = reason.as_str(), "failed");
        if p.is_final {
            self.final_pending = false;
        }
        self.last_end = Some(Instant::now());
        let _ = self.storage.delete(id);
        self.push_failed(id, &p, reason.clone());
        if p.savepoint.is_some() {
            // As a stop's: the job goes on, and it is not counted.
            self.savepoint_pending = None;
            self.savepoint_outcomes
                .push((id, Err(format!("savepoint {id} failed: {reason}"))));
            return Ok(());
        }
        if p.stop.is_some() {
            // The stop is withdrawn and the job goes on; a savepoint's
            // failure is not a checkpoint's (Flink does not count it).
            self.stop_pending = false;
            self.signals.cancel_stop();
            self.stop_failed = Some(format!(
                "{} {id} failed: {reason}",
                if p.stop == Some(SnapshotKind::Savepoint) {
                    "savepoint"
                } else {
                    "checkpoint"
                }
            ));
            return Ok(());
        }
        self.consecutive_failures += 1;
        if self.consecutive_failures > self.options.tolerable_failures {
            return Err(CheckpointError::TooManyFailures {
                failed: self.consecutive_failures,
                tolerable: self.options.tolerable_failures,
                last: id,
                reason,
            });
        }
        Ok(())
    }

    fn push_failed(&mut self, id: u64, p: &Pending, reason: String) {
        let record = record_of(id, p, CheckpointStatus::Failed, Vec::new(), Some(reason));
        self.push_record(record);
    }

    fn push_record(&mut self, record: CheckpointRecord) {
        self.records.push(record.clone());
        self.fresh.push(record);
        self.write_history();
    }

    /// Rewrites `checkpoint-history.json` (the newest [`HISTORY_LEN`]
    /// checkpoints, earlier runs' too) with the newest record.
    ///
    /// The file is read once per attempt; each record is then encoded once
    /// and the file assembled from the encoded entries. It is replaced
    /// atomically (temporary file, rename) but not synced: statistics, not
    /// state, and the control thread's CPU time during a checkpoint is taken
    /// from a worker's core where there is no spare one. Reading, decoding
    /// and re-encoding the whole history and two fsyncs cost ~0.4 ms of it
    /// per checkpoint (bench/RESULTS.md, "W3's tail: ...").
    fn write_history(&mut self) {
        let path = self.storage.history_path();
        let root = self.storage.root();
        let history = self.history.get_or_insert_with(|| {
            // Once a run: a process that crashed between writing its
            // temporary file and renaming it left it behind.
            remove_stale_temporaries(root, HISTORY_FILE);
            let earlier: Vec<serde_json::Value> = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
            earlier
                .iter()
                .filter_map(|v| history_entry(v).ok())
                .collect()
        });
        if let Some(r) = self.records.last() {
            match history_entry(r) {
                Ok(entry) => history.push_back(entry),
                Err(e) => {
                    tracing::warn!(target: CHECKPOINT, "cannot encode checkpoint statistics: {e}")
                }
            }
        }
        while history.len() > HISTORY_LEN {
            history.pop_front();
        }
        let bytes = history_file(history);
        if let Err(e) = replace_file(root, HISTORY_FILE, &bytes) {
            tracing::warn!(target: CHECKPOINT, "cannot write {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{channel, Sender};

    use weir_state::snapshot::{InlineState, SubtaskSnapshot};
    use weir_state::KeyGroupRange;

    use super::*;
    use crate::checkpoint::stats::CheckpointStatus;

    struct Fixture {
        coordinator: CheckpointCoordinator,
        signals: Arc<CheckpointSignals>,
        acks: Sender<CoordinatorMsg>,
        root: std::path::PathBuf,
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    fn fixture(name: &str, tolerable_failures: u32) -> Fixture {
        let root = std::env::temp_dir().join(format!("weir-coord-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let storage = Arc::new(CheckpointStorage::open(&root).unwrap());
        let signals = Arc::new(CheckpointSignals::new(0));
        let (acks, inbox) = channel();
        let options = CoordinatorOptions {
            interval: Duration::from_millis(100),
            min_pause: Duration::ZERO,
            timeout: Duration::from_secs(1),
            max_concurrent: 1,
            tolerable_failures,
            num_retained: 1,
        };
        let coordinator = CheckpointCoordinator::new(
            options,
            storage,
            signals.clone(),
            inbox,
            "job".into(),
            128,
            1,
            1,
            1,
        );
        Fixture {
            coordinator,
            signals,
            acks,
            root,
        }
    }

    fn ack(id: u64) -> CoordinatorMsg {
        CoordinatorMsg::Ack(TaskAck {
            checkpoint: id,
            task: "t (1/1)".into(),
            operators: vec![(
                "src".into(),
                1,
                SubtaskSnapshot {
                    index: 0,
                    key_groups: KeyGroupRange::new(0, 128),
                    extents: Vec::new(),
                    inline_state: vec![InlineState {
                        name: "source.position".into(),
                        bytes: id.to_le_bytes().to_vec(),
                    }],
                },
            )],
            async_started: Instant::now(),
            stats: TaskCheckpointStats {
                task: "t (1/1)".into(),
                worker: 0,
                first_barrier_ms: 0.0,
                alignment_ms: 0.0,
                sync_ms: 0.0,
                async_ms: 0.0,
                persist_ms: 0.0,
                bytes: 8,
                inflight_bytes: 0,
                entries: 0,
                direct_io: false,
            },
        })
    }

    /// The history file assembled from entries encoded one at a time is
    /// what encoding the whole array at once gave (nested objects, arrays,
    /// strings with line breaks, the empty file).
    #[test]
    fn the_history_file_is_the_pretty_array_of_its_entries() {
        let records = [
            serde_json::json!({"id": 1, "status": "completed", "tasks": [{"task": "a (1/2)", "bytes": 4096}]}),
            serde_json::json!({"id": 2, "failure": "line one\nline two", "tasks": [], "nested": {"x": [1, 2]}}),
        ];
        for n in 0..=records.len() {
            let entries: std::collections::VecDeque<String> = records[..n]
                .iter()
                .map(|r| history_entry(r).unwrap())
                .collect();
            assert_eq!(
                String::from_utf8(history_file(&entries)).unwrap(),
                serde_json::to_string_pretty(&records[..n]).unwrap(),
                "{n} entries"
            );
        }
    }

    #[test]
    fn a_crashed_runs_temporary_history_file_is_removed() {
        let dir = std::env::temp_dir().join(format!("weir-coord-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stale = dir.join(format!(".{HISTORY_FILE}.tmp.4242424"));
        let kept = [
            dir.join(format!(".{HISTORY_FILE}.tmp.{}", std::process::id())),
            dir.join(format!(".{HISTORY_FILE}.tmp.notes")),
            dir.join(HISTORY_FILE),
        ];
        for f in kept.iter().chain([&stale]) {
            std::fs::write(f, b"[]").unwrap();
        }
        remove_stale_temporaries(&dir, HISTORY_FILE);
        assert!(!stale.exists());
        for f in &kept {
            assert!(f.exists(), "{}", f.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ids_ahead_are_a_minute_of_triggers() {
        assert_eq!(ids_ahead(Duration::from_secs(1)), 60);
        assert_eq!(ids_ahead(Duration::from_millis(10)), 1000);
        assert_eq!(ids_ahead(Duration::from_secs(60)), 1);
        assert_eq!(ids_ahead(Duration::from_secs(600)), 1);
        assert_eq!(ids_ahead(Duration::ZERO), 1000);
    }

    #[test]
    fn triggers_on_the_interval_and_completes_with_every_ack() {
        let mut f = fixture("complete", 0);
        let t0 = Instant::now();
        f.coordinator.tick(t0, &|| {}).unwrap();
        assert_eq!(f.signals.triggered_id(), 0, "not before the interval");
        f.coordinator
            .tick(t0 + Duration::from_millis(150), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), 1);
        assert!(f.coordinator.has_pending());
        // Max one concurrent checkpoint: no second trigger while 1 pends.
        f.coordinator
            .tick(t0 + Duration::from_millis(300), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), 1);
        f.acks.send(ack(1)).unwrap();
        f.coordinator
            .tick(t0 + Duration::from_millis(310), &|| {})
            .unwrap();
        assert_eq!(f.signals.completed_id(), 1);
        let m = Manifest::read(f.root.join("chk-1").join(METADATA_FILE)).unwrap();
        assert_eq!((m.checkpoint_id, m.job_name.as_str()), (1, "job"));
        assert_eq!(
            m.operators[0].subtasks[0].inline("source.position"),
            Some(&1u64.to_le_bytes()[..])
        );
        let r = &f.coordinator.records()[0];
        assert_eq!((r.id, r.status), (1, CheckpointStatus::Completed));
        assert!(f.root.join("checkpoint-history.json").is_file());
    }

    #[test]
    fn consecutive_failures_beyond_the_tolerance_fail_the_job() {
        let mut f = fixture("tolerance", 1);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        f.coordinator.tick(at(150), &|| {}).unwrap(); // trigger 1
                                                      // Checkpoint 1 times out: one failure is tolerated.
        f.coordinator.tick(at(1_300), &|| {}).unwrap();
        assert_eq!(f.coordinator.records()[0].status, CheckpointStatus::Failed);
        assert!(
            !f.root.join("chk-1").exists(),
            "a failed checkpoint's directory is deleted"
        );
        f.coordinator.tick(at(1_450), &|| {}).unwrap(); // trigger 2
        assert_eq!(f.signals.triggered_id(), 2);
        // A success resets the count ...
        f.acks.send(ack(2)).unwrap();
        f.coordinator.tick(at(1_460), &|| {}).unwrap();
        assert_eq!(f.signals.completed_id(), 2);
        f.coordinator.tick(at(1_600), &|| {}).unwrap(); // trigger 3
        f.acks
            .send(CoordinatorMsg::Decline {
                checkpoint: 3,
                task: "t (1/1)".into(),
                reason: "disk full".into(),
            })
            .unwrap();
        f.coordinator.tick(at(1_610), &|| {}).unwrap(); // one failure: tolerated
        f.coordinator.tick(at(1_750), &|| {}).unwrap(); // trigger 4
        let err = f
            .coordinator
            .tick(at(2_900), &|| {})
            .unwrap_err()
            .to_string(); // 4 times out
        assert!(
            err.contains("2 consecutive checkpoints failed")
                && err.contains("tolerable-failed-checkpoints = 1"),
            "{err}"
        );
    }

    #[test]
    fn a_stop_takes_a_savepoint_at_once_and_nothing_after_it() {
        let mut f = fixture("stop", 0);
        let sp = f.root.join("savepoints");
        let storage = CheckpointStorage::open(&f.root)
            .unwrap()
            .with_savepoints(Some(sp.clone()), "abcdef0123");
        f.coordinator.storage = Arc::new(storage);
        let t0 = Instant::now();
        // Before the interval: the stop does not wait for it.
        f.coordinator.request_stop(t0, None, &|| {}).unwrap();
        assert_eq!((f.signals.triggered_id(), f.signals.stop_id()), (1, 1));
        let dir = sp.join("savepoint-abcdef-1");
        assert!(
            dir.is_dir(),
            "the savepoint's directory is made at the trigger"
        );
        f.coordinator.request_stop(t0, None, &|| {}).unwrap();
        assert_eq!(f.signals.triggered_id(), 1, "one stop at a time");
        f.acks.send(ack(1)).unwrap();
        f.coordinator.tick(t0, &|| {}).unwrap();
        let stopped = f.coordinator.stopped().expect("stopped").clone();
        assert_eq!(
            stopped,
            Stopped {
                id: 1,
                kind: SnapshotKind::Savepoint,
                dir: dir.clone()
            }
        );
        let m = Manifest::read(dir.join(METADATA_FILE)).unwrap();
        assert_eq!((m.checkpoint_id, m.kind), (1, SnapshotKind::Savepoint));
        assert!(!f.root.join("chk-1").exists(), "not a checkpoint");
        // Nothing is triggered after the stop, and retention leaves it.
        f.coordinator
            .tick(t0 + Duration::from_secs(5), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), 1);
        assert!(dir.join(METADATA_FILE).is_file());
    }

    #[test]
    fn a_stop_into_a_directory_of_its_own_takes_a_savepoint_there() {
        // No savepoints directory: without a target the stop would take a
        // checkpoint; with one it is a savepoint in that directory.
        let mut f = fixture("stop-into", 0);
        let t0 = Instant::now();
        let managed = f.root.join("chk-1").join("sp");
        f.coordinator
            .request_stop(t0, Some(managed.clone()), &|| {})
            .unwrap();
        let why = f.coordinator.take_stop_failure().expect("refused");
        assert!(
            why.starts_with(&format!("savepoint target {}", managed.display())),
            "{why}"
        );
        assert_eq!(f.signals.stop_id(), 0, "nothing triggered");
        let target = PathBuf::from(format!("{}-target", f.root.display()));
        let _ = std::fs::remove_dir_all(&target);
        f.coordinator
            .request_stop(t0, Some(target.clone()), &|| {})
            .unwrap();
        let id = f.signals.stop_id();
        assert_ne!(id, 0);
        let dir = f.coordinator.stop_target().expect("pending");
        assert!(dir.starts_with(&target) && dir.is_dir(), "{dir:?}");
        f.acks.send(ack(id)).unwrap();
        f.coordinator.tick(t0, &|| {}).unwrap();
        let stopped = f.coordinator.stopped().expect("stopped").clone();
        assert_eq!(
            (stopped.kind, &stopped.dir),
            (SnapshotKind::Savepoint, &dir)
        );
        let m = Manifest::read(dir.join(METADATA_FILE)).unwrap();
        assert_eq!(m.kind, SnapshotKind::Savepoint);
        assert!(
            !f.root.join(format!("chk-{id}")).exists(),
            "not a checkpoint"
        );
        let _ = std::fs::remove_dir_all(&target);
    }

    #[test]
    fn a_failed_stop_is_withdrawn_and_not_counted_as_a_failed_checkpoint() {
        // No savepoints directory: the stop takes a checkpoint.
        let mut f = fixture("stop-fails", 0);
        let t0 = Instant::now();
        f.coordinator.request_stop(t0, None, &|| {}).unwrap();
        assert!(f.root.join("chk-1").is_dir());
        // It times out: tolerable-failed-checkpoints is 0, yet the job goes on.
        f.coordinator
            .tick(t0 + Duration::from_secs(2), &|| {})
            .unwrap();
        assert_eq!(f.signals.stop_id(), 0, "sources go on");
        let why = f.coordinator.take_stop_failure().expect("a failure");
        assert!(why.starts_with("checkpoint 1 failed: expired"), "{why}");
        assert!(f.coordinator.stopped().is_none());
        // Periodic checkpoints resume; a second stop may be asked for.
        f.coordinator
            .tick(t0 + Duration::from_secs(3), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), 2);
    }

    #[test]
    fn a_savepoint_while_running_is_aligned_holds_periodic_triggers_and_the_job_goes_on() {
        let mut f = fixture("savepoint", 0);
        let storage = CheckpointStorage::open(&f.root)
            .unwrap()
            .with_savepoints(None, "abcdef0123");
        f.coordinator.storage = Arc::new(storage);
        let t0 = Instant::now();
        let why = f
            .coordinator
            .trigger_savepoint(t0, None, &|| {})
            .unwrap_err();
        assert!(why.contains("state.savepoints.dir"), "{why}");
        // Not into the job's output, nor below it (probe 16 found a
        // target given to a trigger unchecked).
        let out = f.root.join("out");
        f.coordinator.outputs = vec![out.clone()];
        for into in [out.clone(), out.join("savepoints")] {
            let why = f
                .coordinator
                .trigger_savepoint(t0, Some(into.clone()), &|| {})
                .unwrap_err();
            assert!(why.contains("the job's output directory"), "{why}");
            assert!(why.contains(&into.display().to_string()), "{why}");
        }
        assert_eq!(f.signals.triggered_id(), 0, "nothing triggered");
        let target = f.root.join("elsewhere");
        let id = f
            .coordinator
            .trigger_savepoint(t0, Some(target.clone()), &|| {})
            .unwrap();
        assert_eq!(
            f.signals.triggered_barrier().kind,
            weir_net::BarrierKind::Savepoint
        );
        assert_eq!(f.signals.stop_id(), 0, "sources go on");
        let busy = f
            .coordinator
            .trigger_savepoint(t0, None, &|| {})
            .unwrap_err();
        assert!(busy.contains("in progress"), "{busy}");
        // No periodic trigger while it is pending.
        f.coordinator
            .tick(t0 + Duration::from_millis(500), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), id);
        f.acks.send(ack(id)).unwrap();
        f.coordinator
            .tick(t0 + Duration::from_millis(510), &|| {})
            .unwrap();
        let dir = target.join(format!("savepoint-abcdef-{id}"));
        assert_eq!(
            f.coordinator.take_savepoint_outcomes(),
            vec![(id, Ok(dir.clone()))]
        );
        let m = Manifest::read(dir.join(METADATA_FILE)).unwrap();
        assert_eq!(m.kind, SnapshotKind::Savepoint);
        assert!(f.coordinator.records()[0].is_savepoint);
        assert!(f.coordinator.stopped().is_none(), "not a stop");
        // Periodic checkpoints resume, into chk-<id>.
        f.coordinator
            .tick(t0 + Duration::from_millis(700), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), id + 1);
        assert_eq!(
            f.signals.triggered_barrier().kind,
            weir_net::BarrierKind::Checkpoint
        );
        assert!(f.root.join(format!("chk-{}", id + 1)).is_dir());
    }

    #[test]
    fn the_final_checkpoint_follows_the_end_of_every_source() {
        let mut f = fixture("final", 0);
        let t0 = Instant::now();
        f.signals.source_ended();
        f.coordinator.tick(t0, &|| {}).unwrap();
        assert_eq!((f.signals.triggered_id(), f.signals.final_id()), (1, 1));
        f.acks.send(ack(1)).unwrap();
        f.coordinator.tick(t0, &|| {}).unwrap();
        assert!(f.coordinator.final_completed());
        assert!(f.coordinator.records()[0].is_final);
        // Nothing is triggered after the final checkpoint.
        f.coordinator
            .tick(t0 + Duration::from_secs(5), &|| {})
            .unwrap();
        assert_eq!(f.signals.triggered_id(), 1);
    }
}
