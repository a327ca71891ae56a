//! A running job as the control plane sees it: a read-only view (the
//! REST endpoint, `weir list`, a metrics exporter or a dashboard read the
//! same [`JobView`]) and the control actions Flink's REST API offers: a
//! savepoint while the job runs on, stop with a savepoint, cancel.
//!
//! The run's control thread publishes into the [`JobHandle`] what it has
//! anyway: the job's identity and stages at the start, each attempt's
//! worker metrics (the atomics every task stores into once per poll), each
//! checkpoint as it ends, failures and restarts, the final state. A reader
//! ([`JobHandle::view`]) copies them out: it reads those atomics and takes
//! mutexes that only the control side ever takes, never a worker. Nothing
//! here is on the per-record path.
//!
//! Requests (a savepoint, a cancel) are queued; the control thread acts on
//! them on its tick, as it does on a stop ([`StopRequest`]). A savepoint or
//! a stop asked for here gets a trigger id whose [`SavepointStatus`] can be
//! polled.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::checkpoint::coordinator::CoordinatorOptions;
use crate::checkpoint::stats::CheckpointRecord;
use crate::core::time::wall_ms;
use crate::exec::stop::StopRequest;
use crate::metrics::latency::LatencyStats;
use crate::metrics::report::{IoRates, MetricsSnapshot, SubtaskSnapshot, TimeShares};
use crate::metrics::worker::WorkerMetrics;

/// Newest checkpoints a view keeps (as `checkpoint-history.json`).
pub const HISTORY: usize = 100;

/// Newest exceptions a view keeps.
const EXCEPTIONS: usize = 50;

/// Least time between two samples of the counters the recent ratios are
/// taken over.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// How often a wait for a restart looks for a cancel.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// Why a job without checkpointing can take no savepoint.
const NO_CHECKPOINTING: &str = "checkpointing is off, so the job can take no savepoint (set \
     execution.checkpointing.interval and state.checkpoints.dir)";

/// A job's state, as Flink names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum JobState {
    /// Checking, restoring, starting workers.
    Initializing = 0,
    /// Its workers run.
    Running = 1,
    /// A failure is being recovered from (restart strategy).
    Restarting = 2,
    /// Ran to its end, or stopped with a savepoint.
    Finished = 3,
    /// Failed for good.
    Failed = 4,
    /// Cancel asked for, workers ending.
    Cancelling = 5,
    /// Cancelled.
    Canceled = 6,
}

impl JobState {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Running,
            2 => Self::Restarting,
            3 => Self::Finished,
            4 => Self::Failed,
            5 => Self::Cancelling,
            6 => Self::Canceled,
            _ => Self::Initializing,
        }
    }

    /// Flink's name: `RUNNING`, `FINISHED`, `CANCELED`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initializing => "INITIALIZING",
            Self::Running => "RUNNING",
            Self::Restarting => "RESTARTING",
            Self::Finished => "FINISHED",
            Self::Failed => "FAILED",
            Self::Cancelling => "CANCELLING",
            Self::Canceled => "CANCELED",
        }
    }

    /// Whether the job has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Finished | Self::Failed | Self::Canceled)
    }
}

/// How a savepoint asked for through the handle is going.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavepointStatus {
    /// Triggered (or about to be).
    InProgress,
    /// Complete: its directory (what `--restore` takes).
    Completed(PathBuf),
    /// It failed, or was refused: why.
    Failed(String),
}

/// A failure of the job, as `/jobs/:id/exceptions` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExceptionRecord {
    /// Wall-clock ms when it happened.
    pub timestamp_ms: u64,
    /// The error, as the job reports it.
    pub message: String,
    /// The failing task ("stage (i/P)"), if one did.
    pub task: Option<String>,
    /// Whether the job was restarted after it.
    pub restarted: bool,
}

/// One subtask in a view.
#[derive(Clone, Debug, PartialEq)]
pub struct SubtaskView {
    /// Its index in `0..parallelism`.
    pub index: usize,
    /// The worker (core) that runs it.
    pub worker: usize,
    /// Its counters now.
    pub now: SubtaskSnapshot,
    /// Busy, backpressured and idle ms per second over the last one to
    /// two seconds (or since its start); `None` if it did not run then.
    pub recent: Option<TimeShares>,
    /// Records and bytes per second over the same interval.
    pub rates: Option<IoRates>,
    /// How long latency markers took from each source to it (empty
    /// without `metrics.latency.interval`, and for sources' own stages).
    pub latency: Vec<LatencyView>,
}

/// The latency from one source to a subtask, over its last markers.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyView {
    /// The source's vertex id (`None` with granularity `single`).
    pub source_vertex: Option<String>,
    /// The source subtask (only with granularity `subtask`).
    pub source_subtask: Option<u32>,
    /// The distribution, in ms.
    pub stats: LatencyStats,
}

/// One stage (Flink's job vertex) in a view.
#[derive(Clone, Debug, PartialEq)]
pub struct VertexView {
    /// A stable 32-hex id made from the stage's position and name.
    pub id: String,
    /// Its operators' uids joined by " -> ".
    pub name: String,
    /// Subtasks.
    pub parallelism: usize,
    /// The vertices feeding it and how (none for a source's stage).
    pub inputs: Vec<VertexInput>,
    /// Its subtasks of the current attempt, by index (empty before the
    /// workers built their tasks).
    pub subtasks: Vec<SubtaskView>,
}

/// A stage as the run describes it: its name, parallelism and the stages
/// feeding it with their ship strategies.
pub(crate) type StageDescription = (String, usize, Vec<(usize, &'static str)>);

/// An edge into a vertex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexInput {
    /// The id of the vertex it comes from.
    pub vertex: String,
    /// Flink's ship strategy: `HASH` (key_by), `REBALANCE`, `FORWARD`,
    /// `BROADCAST`, `RESCALE`, `SHUFFLE` or `CUSTOM`.
    pub ship_strategy: &'static str,
}

/// How checkpoints are taken, as a view shows it (what
/// `/jobs/:id/checkpoints/config` reports).
#[derive(Clone, Debug)]
pub struct CheckpointingView {
    /// `state.checkpoints.dir`.
    pub dir: PathBuf,
    /// `state.savepoints.dir`.
    pub savepoints_dir: Option<PathBuf>,
    /// Interval, timeout, pause, concurrency, tolerance, retention.
    pub coordinator: CoordinatorOptions,
    /// Exactly-once (else at-least-once).
    pub exactly_once: bool,
    /// Unaligned checkpoints.
    pub unaligned: bool,
    /// With `unaligned`: how long a checkpoint stays aligned first.
    pub aligned_checkpoint_timeout: Duration,
    /// Incremental checkpoints.
    pub incremental: bool,
}

/// What a run restored, as a view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredView {
    /// The checkpoint or savepoint id.
    pub id: u64,
    /// Its directory.
    pub path: PathBuf,
    /// Wall-clock ms of the restore.
    pub restore_ms: u64,
}

/// A copy of everything the handle knows, taken at `now_ms`.
#[derive(Clone, Debug)]
pub struct JobView {
    /// Flink-style 32-hex job id.
    pub job_id: String,
    /// `job.name`.
    pub name: String,
    /// Its state.
    pub state: JobState,
    /// Wall-clock ms it was submitted.
    pub start_ms: u64,
    /// Wall-clock ms it ended, if it has.
    pub end_ms: Option<u64>,
    /// Wall-clock ms of this view.
    pub now_ms: u64,
    /// Workers.
    pub workers: usize,
    /// Key groups.
    pub max_parallelism: u32,
    /// Its stages.
    pub vertices: Vec<VertexView>,
    /// The newest [`HISTORY`] checkpoints of every attempt, oldest first.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Completed checkpoints (all, not only those kept).
    pub checkpoints_completed: u64,
    /// Failed checkpoints.
    pub checkpoints_failed: u64,
    /// Checkpoints pending now.
    pub checkpoints_in_progress: u64,
    /// Those checkpoints, oldest first, with the acknowledgements so far
    /// (status [`CheckpointStatus::InProgress`](crate::checkpoint::stats::CheckpointStatus::InProgress)).
    pub checkpoints_pending: Vec<CheckpointRecord>,
    /// What the current attempt restored.
    pub restored: Option<RestoredView>,
    /// How checkpoints are taken, if they are.
    pub checkpointing: Option<CheckpointingView>,
    /// The restart strategy, as text.
    pub restart_strategy: String,
    /// Restarts so far.
    pub restarts: u32,
    /// Failures, oldest first.
    pub exceptions: Vec<ExceptionRecord>,
    /// The effective configuration, key and value (secrets left out by
    /// whoever set it).
    pub config: Vec<(String, String)>,
}

/// What the control thread is asked to do.
#[derive(Debug)]
pub(crate) struct SavepointRequest {
    /// The trigger id handed out.
    pub(crate) trigger: String,
    /// Where to (`None`: `state.savepoints.dir`).
    pub(crate) dir: Option<PathBuf>,
}

/// The stages as the run described them.
#[derive(Clone, Debug, Default)]
struct Plan {
    job_id: String,
    name: String,
    workers: usize,
    max_parallelism: u32,
    /// (id, name, parallelism, inputs) per stage.
    stages: Vec<(String, String, usize, Vec<VertexInput>)>,
    checkpointing: Option<CheckpointingView>,
    restart_strategy: String,
}

/// Checkpoints and failures as they come.
#[derive(Debug, Default)]
struct History {
    checkpoints: VecDeque<CheckpointRecord>,
    completed: u64,
    failed: u64,
    /// The pending checkpoints, as of the control thread's last tick.
    pending: Vec<CheckpointRecord>,
    restored: Option<RestoredView>,
    exceptions: VecDeque<ExceptionRecord>,
    restarts: u32,
}

/// The current attempt's counters and the samples recent ratios use.
#[derive(Debug, Default)]
struct Live {
    metrics: Vec<WorkerMetrics>,
    /// At most two samples, oldest first.
    samples: VecDeque<MetricsSnapshot>,
    last_sample_ms: u64,
}

#[derive(Debug, Default)]
struct Inner {
    plan: OnceLock<Plan>,
    state: AtomicU8,
    start_ms: AtomicU64,
    end_ms: AtomicU64,
    live: Mutex<Live>,
    history: Mutex<History>,
    config: Mutex<Vec<(String, String)>>,
    stop: OnceLock<StopRequest>,
    cancel: AtomicBool,
    requests: Mutex<VecDeque<SavepointRequest>>,
    savepoints: Mutex<BTreeMap<String, SavepointStatus>>,
    /// Savepoint id -> trigger id, for savepoints under way.
    pending: Mutex<BTreeMap<u64, String>>,
    /// The trigger id of a stop asked for here.
    stop_trigger: Mutex<Option<String>>,
    /// Every trigger id handed to a stop (the others are savepoints').
    stop_triggers: Mutex<Vec<String>>,
    /// Trigger ids whose final status nobody has read yet.
    unread: Mutex<Vec<String>>,
    next_trigger: AtomicU64,
}

/// The handle of one job: cheap to clone, shared by the run and its
/// readers. A handle nobody reads costs the control thread an uncontended
/// mutex per tick, a few per checkpoint and one counter sample per second;
/// the workers nothing.
#[derive(Clone, Debug, Default)]
pub struct JobHandle(Arc<Inner>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The marker latency of every subtask that has some, by (stage, index).
fn latencies(
    workers: &[WorkerMetrics],
    plan: &Plan,
) -> BTreeMap<(String, usize), Vec<LatencyView>> {
    let mut out = BTreeMap::new();
    for entry in workers.iter().filter_map(|w| w.subtasks.get()).flatten() {
        let stats = entry.metrics.latency();
        if stats.is_empty() {
            continue;
        }
        let views = stats
            .into_iter()
            .map(|(source, stats)| LatencyView {
                source_vertex: source
                    .stage
                    .and_then(|i| plan.stages.get(i as usize))
                    .map(|(id, ..)| id.clone()),
                source_subtask: source.subtask,
                stats,
            })
            .collect();
        let id = entry.metrics.id();
        out.insert((id.stage.clone(), id.index), views);
    }
    out
}

/// A stable 32-hex id for stage `index` named `name` (FNV-1a, twice).
pub fn vertex_id(index: usize, name: &str) -> String {
    let mut halves = [0xcbf2_9ce4_8422_2325u64, 0x84222325cbf29ce4u64];
    for (n, h) in halves.iter_mut().enumerate() {
        for b in (index as u64 + n as u64 * 7919)
            .to_le_bytes()
            .iter()
            .chain(name.as_bytes())
        {
            *h ^= u64::from(*b);
            *h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{:016x}{:016x}", halves[0], halves[1])
}

impl JobHandle {
    /// A handle for a job not started yet.
    pub fn new() -> Self {
        Self::default()
    }

    // ---- what readers use ----

    /// The job's id, once the run started.
    pub fn job_id(&self) -> Option<String> {
        self.0.plan.get().map(|p| p.job_id.clone())
    }

    /// Its state now.
    pub fn state(&self) -> JobState {
        JobState::from_u8(self.0.state.load(Ordering::Acquire))
    }

    /// A copy of everything known now; `None` before the run started.
    pub fn view(&self) -> Option<JobView> {
        let plan = self.0.plan.get()?;
        let now_ms = wall_ms();
        let (snapshot, base, latency) = {
            let live = lock(&self.0.live);
            let now = (!live.metrics.is_empty()).then(|| MetricsSnapshot::read(&live.metrics));
            (
                now,
                live.samples.front().cloned(),
                latencies(&live.metrics, plan),
            )
        };
        let vertices = plan
            .stages
            .iter()
            .map(|(id, name, parallelism, inputs)| {
                let mut subtasks: Vec<SubtaskView> = snapshot
                    .iter()
                    .flat_map(|s| &s.subtasks)
                    .filter(|s| &s.id.stage == name)
                    .map(|s| {
                        let before = base.as_ref().and_then(|b| {
                            b.subtasks
                                .iter()
                                .find(|o| o.id.stage == s.id.stage && o.id.index == s.id.index)
                        });
                        SubtaskView {
                            index: s.id.index,
                            worker: s.id.worker,
                            now: s.clone(),
                            recent: s.shares_since(before),
                            rates: s.rates_since(before),
                            latency: latency
                                .get(&(s.id.stage.clone(), s.id.index))
                                .cloned()
                                .unwrap_or_default(),
                        }
                    })
                    .collect();
                subtasks.sort_by_key(|s| s.index);
                VertexView {
                    id: id.clone(),
                    name: name.clone(),
                    parallelism: *parallelism,
                    inputs: inputs.clone(),
                    subtasks,
                }
            })
            .collect();
        let history = lock(&self.0.history);
        let end_ms = self.0.end_ms.load(Ordering::Acquire);
        Some(JobView {
            job_id: plan.job_id.clone(),
            name: plan.name.clone(),
            state: self.state(),
            start_ms: self.0.start_ms.load(Ordering::Acquire),
            end_ms: (end_ms != 0).then_some(end_ms),
            now_ms,
            workers: plan.workers,
            max_parallelism: plan.max_parallelism,
            vertices,
            checkpoints: history.checkpoints.iter().cloned().collect(),
            checkpoints_completed: history.completed,
            checkpoints_failed: history.failed,
            checkpoints_in_progress: history.pending.len() as u64,
            // Their durations until now, not until the last change.
            checkpoints_pending: history
                .pending
                .iter()
                .map(|r| CheckpointRecord {
                    duration_ms: now_ms.saturating_sub(r.trigger_ms) as f64,
                    ..r.clone()
                })
                .collect(),
            restored: history.restored.clone(),
            checkpointing: plan.checkpointing.clone(),
            restart_strategy: plan.restart_strategy.clone(),
            restarts: history.restarts,
            exceptions: history.exceptions.iter().cloned().collect(),
            config: lock(&self.0.config).clone(),
        })
    }

    /// Sets the effective configuration a view shows (leave secrets out).
    pub fn set_config(&self, config: Vec<(String, String)>) {
        *lock(&self.0.config) = config;
    }

    // ---- control actions ----

    /// The trigger id asked for (Flink's `triggerId`, for a request sent
    /// again) if it is already a stop's (`Some(true)`) or a savepoint's
    /// (`Some(false)`): the repeated request is that one, not another.
    fn known_trigger(&self, asked: Option<&str>) -> Option<bool> {
        let asked = asked?;
        lock(&self.0.savepoints).contains_key(asked).then(|| {
            lock(&self.0.stop_triggers)
                .iter()
                .any(|t| t.as_str() == asked)
        })
    }

    fn new_trigger(&self, asked: Option<&str>) -> String {
        if let Some(asked) = asked {
            return asked.to_owned();
        }
        let n = self.0.next_trigger.fetch_add(1, Ordering::Relaxed);
        let job = self.job_id().unwrap_or_default();
        // Unique within the run (a counter, mixed with the job id and the
        // clock so that ids of two runs differ).
        vertex_id(n as usize, &format!("{job}/{}", wall_ms()))
    }

    /// Why the job cannot take a snapshot now, if it cannot: it is not
    /// running, or it takes no checkpoints (so no savepoint either).
    fn refuse_snapshot(&self) -> Result<(), String> {
        let state = self.state();
        if state != JobState::Running {
            return Err(format!("the job is {}, not RUNNING", state.as_str()));
        }
        if self.0.plan.get().is_some_and(|p| p.checkpointing.is_none()) {
            return Err(NO_CHECKPOINTING.into());
        }
        Ok(())
    }

    /// Asks for a savepoint into `dir` (`None`: `state.savepoints.dir`)
    /// while the job runs on; returns its trigger id (`trigger` if given:
    /// a request repeated with the trigger id of a savepoint asked for
    /// already is that savepoint, not a second one). Refused while the
    /// job is not running, without checkpointing, and while a stop or
    /// another savepoint is under way.
    pub fn trigger_savepoint(
        &self,
        dir: Option<PathBuf>,
        trigger: Option<&str>,
    ) -> Result<String, String> {
        match self.known_trigger(trigger) {
            Some(false) => return Ok(trigger.unwrap_or_default().to_owned()),
            Some(true) => {
                return Err(format!(
                    "trigger {} is a stop's",
                    trigger.unwrap_or_default()
                ))
            }
            None => {}
        }
        self.refuse_snapshot()?;
        if self.0.stop.get().is_some_and(StopRequest::is_requested) {
            return Err("the job is stopping with a savepoint".into());
        }
        if let Some((under_way, _)) = lock(&self.0.savepoints)
            .iter()
            .find(|(_, s)| **s == SavepointStatus::InProgress)
        {
            return Err(format!(
                "savepoint {under_way} is in progress (one at a time)"
            ));
        }
        let trigger = self.new_trigger(trigger);
        lock(&self.0.savepoints).insert(trigger.clone(), SavepointStatus::InProgress);
        lock(&self.0.requests).push_back(SavepointRequest {
            trigger: trigger.clone(),
            dir,
        });
        Ok(trigger)
    }

    /// Stops the job with a savepoint (the path SIGTERM takes) into a
    /// directory of `dir` (`None`: `state.savepoints.dir`, or a final
    /// checkpoint without it); returns the trigger id of the stop's
    /// savepoint (`trigger` if given, as for
    /// [`JobHandle::trigger_savepoint`]). Refused, and the job runs on,
    /// while it is not running or without checkpointing (where SIGTERM
    /// would end it without a savepoint).
    pub fn stop_with_savepoint(
        &self,
        dir: Option<PathBuf>,
        trigger: Option<&str>,
    ) -> Result<String, String> {
        match self.known_trigger(trigger) {
            Some(true) => return Ok(trigger.unwrap_or_default().to_owned()),
            Some(false) => {
                return Err(format!(
                    "trigger {} is a savepoint's",
                    trigger.unwrap_or_default()
                ))
            }
            None => {}
        }
        self.refuse_snapshot().map_err(|why| {
            if why == NO_CHECKPOINTING {
                format!("{why}: it runs on; cancel it to end it without one")
            } else {
                why
            }
        })?;
        let Some(stop) = self.0.stop.get() else {
            return Err("the job cannot be stopped".into());
        };
        if !stop.request_into(dir) {
            return Err("a stop is already under way".into());
        }
        let trigger = self.new_trigger(trigger);
        lock(&self.0.savepoints).insert(trigger.clone(), SavepointStatus::InProgress);
        lock(&self.0.stop_triggers).push(trigger.clone());
        *lock(&self.0.stop_trigger) = Some(trigger.clone());
        Ok(trigger)
    }

    /// Cancels the job: its workers end at once, nothing is committed
    /// after its last complete checkpoint. Refused once it ended.
    pub fn cancel(&self) -> Result<(), String> {
        let state = self.state();
        if state.is_terminal() {
            return Err(format!("the job is {} already", state.as_str()));
        }
        self.0.cancel.store(true, Ordering::Release);
        self.set_state(JobState::Cancelling);
        Ok(())
    }

    /// Whether a cancel was asked for.
    pub fn cancel_requested(&self) -> bool {
        self.0.cancel.load(Ordering::Acquire)
    }

    /// Waits `delay` (a restart's) unless a cancel or a stop (`stop`,
    /// SIGTERM's or the endpoint's) is asked for first, looked at every
    /// [`CANCEL_POLL`]: whether a cancel was. A stop ends the wait so that
    /// the next attempt starts now and takes the stop's savepoint.
    pub(crate) fn cancelled_within(&self, delay: Duration, stop: &StopRequest) -> bool {
        let until = std::time::Instant::now() + delay;
        loop {
            if self.cancel_requested() {
                return true;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || stop.is_requested() {
                return false;
            }
            std::thread::sleep(left.min(CANCEL_POLL));
        }
    }

    /// The status of savepoint trigger `trigger`; `None` for an unknown
    /// id. Reading a final status marks it read.
    pub fn savepoint_status(&self, trigger: &str) -> Option<SavepointStatus> {
        let status = lock(&self.0.savepoints).get(trigger).cloned()?;
        if status != SavepointStatus::InProgress {
            lock(&self.0.unread).retain(|t| t != trigger);
        }
        Some(status)
    }

    /// Whether every savepoint asked for here that has ended has had its
    /// status read (the `weir` command waits a little for that before it
    /// exits, so that `weir stop` learns where the savepoint is).
    pub fn all_results_read(&self) -> bool {
        lock(&self.0.unread).is_empty()
            && !lock(&self.0.savepoints)
                .values()
                .any(|s| *s == SavepointStatus::InProgress)
    }

    // ---- what the run publishes ----

    /// The run starts: its identity, stages and options.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn started(
        &self,
        job_id: &str,
        name: &str,
        workers: usize,
        max_parallelism: u32,
        stages: Vec<StageDescription>,
        checkpointing: Option<CheckpointingView>,
        restart_strategy: String,
        stop: &StopRequest,
    ) {
        let ids: Vec<String> = stages
            .iter()
            .enumerate()
            .map(|(i, (name, ..))| vertex_id(i, name))
            .collect();
        let stages = stages
            .into_iter()
            .zip(&ids)
            .map(|((name, p, inputs), id)| {
                let inputs = inputs
                    .into_iter()
                    .filter_map(|(from, strategy)| {
                        Some(VertexInput {
                            vertex: ids.get(from)?.clone(),
                            ship_strategy: strategy,
                        })
                    })
                    .collect();
                (id.clone(), name, p, inputs)
            })
            .collect();
        let _ = self.0.plan.set(Plan {
            job_id: job_id.to_owned(),
            name: name.to_owned(),
            workers,
            max_parallelism,
            stages,
            checkpointing,
            restart_strategy,
        });
        let _ = self.0.stop.set(stop.clone());
        self.0.start_ms.store(wall_ms(), Ordering::Release);
    }

    pub(crate) fn set_state(&self, state: JobState) {
        let current = self.state();
        // A cancel asked for stays visible until the job ends.
        if current == JobState::Cancelling && !state.is_terminal() {
            return;
        }
        if state.is_terminal() {
            self.0.end_ms.store(wall_ms(), Ordering::Release);
        }
        self.0.state.store(state as u8, Ordering::Release);
    }

    /// An attempt's workers are released: their counters.
    pub(crate) fn attempt_started(
        &self,
        metrics: &[WorkerMetrics],
        restored: Option<RestoredView>,
    ) {
        {
            let mut live = lock(&self.0.live);
            live.metrics = metrics.to_vec();
            live.samples.clear();
            live.last_sample_ms = 0;
        }
        lock(&self.0.history).restored = restored;
        // A savepoint the previous attempt had triggered died with it: no
        // outcome of it will come (the stop's request carries over).
        let lost: Vec<String> = std::mem::take(&mut *lock(&self.0.pending))
            .into_values()
            .collect();
        for trigger in lost {
            self.finish(
                trigger,
                SavepointStatus::Failed(
                    "the job failed and restarted before the savepoint completed".into(),
                ),
            );
        }
        self.set_state(JobState::Running);
    }

    /// The control thread's tick: samples the counters about every
    /// second (for recent ratios) and records the pending checkpoints
    /// (`None`: as they were).
    pub(crate) fn tick(&self, pending: Option<Vec<CheckpointRecord>>) {
        let now = wall_ms();
        {
            let mut live = lock(&self.0.live);
            if now.saturating_sub(live.last_sample_ms) >= SAMPLE_EVERY.as_millis() as u64
                && !live.metrics.is_empty()
            {
                let sample = MetricsSnapshot::read(&live.metrics);
                live.samples.push_back(sample);
                if live.samples.len() > 2 {
                    live.samples.pop_front();
                }
                live.last_sample_ms = now;
            }
        }
        if let Some(pending) = pending {
            lock(&self.0.history).pending = pending;
        }
    }

    /// Checkpoints that ended.
    pub(crate) fn checkpoints_ended(&self, records: &[CheckpointRecord]) {
        if records.is_empty() {
            return;
        }
        let mut h = lock(&self.0.history);
        for r in records {
            match r.status {
                crate::checkpoint::stats::CheckpointStatus::Completed => h.completed += 1,
                crate::checkpoint::stats::CheckpointStatus::Failed => h.failed += 1,
                // Pending checkpoints come through `tick`, never here.
                crate::checkpoint::stats::CheckpointStatus::InProgress => continue,
            }
            h.checkpoints.push_back(r.clone());
        }
        while h.checkpoints.len() > HISTORY {
            h.checkpoints.pop_front();
        }
    }

    /// A failure; `restarted` if the job restarts after it.
    pub(crate) fn failed(&self, message: String, task: Option<String>, restarted: bool) {
        let mut h = lock(&self.0.history);
        if restarted {
            h.restarts += 1;
        }
        h.exceptions.push_back(ExceptionRecord {
            timestamp_ms: wall_ms(),
            message,
            task,
            restarted,
        });
        while h.exceptions.len() > EXCEPTIONS {
            h.exceptions.pop_front();
        }
    }

    /// Savepoints asked for, taken by the control thread.
    pub(crate) fn take_requests(&self) -> Vec<SavepointRequest> {
        let mut r = lock(&self.0.requests);
        if r.is_empty() {
            return Vec::new();
        }
        r.drain(..).collect()
    }

    /// Savepoint `trigger` was triggered as checkpoint `id`.
    pub(crate) fn savepoint_triggered(&self, trigger: String, id: u64) {
        lock(&self.0.pending).insert(id, trigger);
    }

    /// Savepoint `trigger` (or the one of id `id`) ended.
    fn finish(&self, trigger: String, status: SavepointStatus) {
        lock(&self.0.unread).push(trigger.clone());
        lock(&self.0.savepoints).insert(trigger, status);
    }

    /// Savepoint `trigger` was refused before it was triggered.
    pub(crate) fn savepoint_refused(&self, trigger: String, why: String) {
        self.finish(trigger, SavepointStatus::Failed(why));
    }

    /// Savepoint `id` ended.
    pub(crate) fn savepoint_ended(&self, id: u64, outcome: Result<PathBuf, String>) {
        let Some(trigger) = lock(&self.0.pending).remove(&id) else {
            return;
        };
        let status = match outcome {
            Ok(dir) => SavepointStatus::Completed(crate::core::paths::resolved(&dir)),
            Err(why) => SavepointStatus::Failed(why),
        };
        self.finish(trigger, status);
    }

    /// The stop's savepoint is complete (`Ok`) or failed (`Err`; the job
    /// goes on).
    pub(crate) fn stop_ended(&self, outcome: Result<PathBuf, String>) {
        let Some(trigger) = lock(&self.0.stop_trigger).take() else {
            return;
        };
        let status = match outcome {
            Ok(dir) => SavepointStatus::Completed(crate::core::paths::resolved(&dir)),
            Err(why) => SavepointStatus::Failed(why),
        };
        self.finish(trigger, status);
    }

    /// The job ended in `state`: savepoints still under way failed.
    pub(crate) fn ended(&self, state: JobState) {
        let pending: Vec<String> = lock(&self.0.pending).values().cloned().collect();
        lock(&self.0.pending).clear();
        let stop = lock(&self.0.stop_trigger).take();
        let queued: Vec<String> = self
            .take_requests()
            .into_iter()
            .map(|r| r.trigger)
            .collect();
        for t in pending.into_iter().chain(stop).chain(queued) {
            self.finish(
                t,
                SavepointStatus::Failed(format!(
                    "the job ended ({}) before the savepoint completed",
                    state.as_str()
                )),
            );
        }
        {
            let mut live = lock(&self.0.live);
            // Keep the last counters readable: the view of an ended job.
            let last = (!live.metrics.is_empty()).then(|| MetricsSnapshot::read(&live.metrics));
            if let Some(last) = last {
                live.samples.push_back(last);
                if live.samples.len() > 2 {
                    live.samples.pop_front();
                }
            }
        }
        lock(&self.0.history).pending.clear();
        self.set_state(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vertex_ids_are_32_hex_and_stable() {
        let a = vertex_id(0, "src -> map");
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, vertex_id(0, "src -> map"));
        assert_ne!(a, vertex_id(1, "src -> map"));
    }

    /// Checkpointing every minute into `/ck`.
    fn checkpointing() -> CheckpointingView {
        CheckpointingView {
            dir: PathBuf::from("/ck"),
            savepoints_dir: None,
            coordinator: CoordinatorOptions {
                interval: Duration::from_secs(60),
                min_pause: Duration::ZERO,
                timeout: Duration::from_secs(600),
                max_concurrent: 1,
                tolerable_failures: 0,
                num_retained: 1,
            },
            exactly_once: true,
            unaligned: false,
            aligned_checkpoint_timeout: Duration::ZERO,
            incremental: false,
        }
    }

    /// A handle of a running one-stage job (`checkpointing` or none).
    fn running(checkpointing: Option<CheckpointingView>, stop: &StopRequest) -> JobHandle {
        let h = JobHandle::new();
        h.started(
            "0123456789abcdef0123456789abcdef",
            "job",
            1,
            128,
            vec![("src".into(), 1, Vec::new())],
            checkpointing,
            "none".into(),
            stop,
        );
        h.attempt_started(&[], None);
        h
    }

    #[test]
    fn requests_are_refused_before_the_job_runs_and_statuses_are_read_once() {
        let h = JobHandle::new();
        assert!(h.view().is_none());
        assert!(h.trigger_savepoint(None, None).is_err());
        let h = running(Some(checkpointing()), &StopRequest::new());
        let t = h.trigger_savepoint(None, None).unwrap();
        assert_eq!(h.savepoint_status(&t), Some(SavepointStatus::InProgress));
        assert!(!h.all_results_read());
        let r = h.take_requests();
        assert_eq!(r.len(), 1);
        h.savepoint_triggered(r[0].trigger.clone(), 7);
        h.savepoint_ended(7, Ok(PathBuf::from("/sp/savepoint-012345-7")));
        assert!(!h.all_results_read());
        assert_eq!(
            h.savepoint_status(&t),
            Some(SavepointStatus::Completed(PathBuf::from(
                "/sp/savepoint-012345-7"
            )))
        );
        assert!(h.all_results_read());
        h.cancel().unwrap();
        assert_eq!(h.state(), JobState::Cancelling);
        h.ended(JobState::Canceled);
        let v = h.view().unwrap();
        assert_eq!(v.state, JobState::Canceled);
        assert!(v.end_ms.is_some());
        assert_eq!(v.vertices[0].name, "src");
    }

    #[test]
    fn without_checkpointing_a_stop_or_savepoint_is_refused_and_the_job_runs_on() {
        let stop = StopRequest::new();
        let h = running(None, &stop);
        for why in [
            h.stop_with_savepoint(None, None),
            h.trigger_savepoint(None, None),
        ] {
            let why = why.expect_err("refused");
            assert!(why.contains("checkpointing is off"), "{why}");
        }
        assert!(!stop.is_requested(), "no stop handed to the run");
        assert!(h.take_requests().is_empty());
        assert_eq!(h.state(), JobState::Running);
    }

    #[test]
    fn one_savepoint_at_a_time_and_none_while_stopping() {
        let stop = StopRequest::new();
        let h = running(Some(checkpointing()), &stop);
        let first = h.trigger_savepoint(None, None).unwrap();
        let why = h.trigger_savepoint(None, None).expect_err("a second one");
        assert!(
            why.contains(&format!("savepoint {first} is in progress")),
            "{why}"
        );
        let r = h.take_requests();
        h.savepoint_triggered(r[0].trigger.clone(), 3);
        h.savepoint_ended(3, Err("declined".into()));
        h.trigger_savepoint(None, None).unwrap();
        h.take_requests();
        let h = running(Some(checkpointing()), &StopRequest::new());
        h.stop_with_savepoint(None, None).unwrap();
        let why = h.trigger_savepoint(None, None).expect_err("while stopping");
        assert!(why.contains("stopping"), "{why}");
    }

    #[test]
    fn a_savepoint_under_way_when_the_job_restarts_fails() {
        let h = running(Some(checkpointing()), &StopRequest::new());
        let t = h.trigger_savepoint(None, None).unwrap();
        let r = h.take_requests();
        h.savepoint_triggered(r[0].trigger.clone(), 5);
        // A task fails; the next attempt starts from a checkpoint.
        h.set_state(JobState::Restarting);
        h.attempt_started(&[], None);
        match h.savepoint_status(&t) {
            Some(SavepointStatus::Failed(why)) => assert!(why.contains("restarted"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The next one is taken.
        h.trigger_savepoint(None, None).unwrap();
        assert!(!h.all_results_read());
    }

    #[test]
    fn a_request_repeated_with_its_trigger_id_is_the_same_one() {
        let stop = StopRequest::new();
        let h = running(Some(checkpointing()), &stop);
        let id = "00112233445566778899aabbccddeeff";
        assert_eq!(h.trigger_savepoint(None, Some(id)).unwrap(), id);
        assert_eq!(h.trigger_savepoint(None, Some(id)).unwrap(), id);
        assert_eq!(h.take_requests().len(), 1, "one savepoint");
        assert!(
            h.stop_with_savepoint(None, Some(id)).is_err(),
            "not a stop's id"
        );
        assert!(!stop.is_requested());
        let h = running(Some(checkpointing()), &StopRequest::new());
        assert_eq!(h.stop_with_savepoint(None, Some(id)).unwrap(), id);
        assert_eq!(h.stop_with_savepoint(None, Some(id)).unwrap(), id);
        assert!(h.trigger_savepoint(None, Some(id)).is_err());
    }

    #[test]
    fn a_cancel_ends_the_wait_for_a_restart() {
        let h = running(Some(checkpointing()), &StopRequest::new());
        let stop = StopRequest::new();
        let start = std::time::Instant::now();
        assert!(!h.cancelled_within(Duration::from_millis(30), &stop));
        assert!(start.elapsed() >= Duration::from_millis(30));
        let (waiting, stopping) = (h.clone(), stop.clone());
        let waiter = std::thread::spawn(move || {
            waiting.cancelled_within(Duration::from_secs(600), &stopping)
        });
        std::thread::sleep(Duration::from_millis(20));
        h.cancel().unwrap();
        assert!(waiter.join().unwrap(), "cancelled, not waited out");
        // A stop ends the wait too, without a cancel: the restart is now.
        let h = running(Some(checkpointing()), &StopRequest::new());
        let (waiting, stopping) = (h.clone(), stop.clone());
        let start = std::time::Instant::now();
        let waiter = std::thread::spawn(move || {
            waiting.cancelled_within(Duration::from_secs(600), &stopping)
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(stop.request());
        assert!(!waiter.join().unwrap(), "not a cancel");
        assert!(start.elapsed() < Duration::from_secs(60));
    }
}
