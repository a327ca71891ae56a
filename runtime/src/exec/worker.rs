//! A worker: one glommio executor pinned to one core, running the tasks of
//! every subtask assigned to it.
//!
//! The worker's loop polls its tasks round-robin; each poll does a bounded
//! amount of work; the worker reads the clock once after each poll and
//! tells the subtask's `TaskClock` how the poll went, which splits the
//! subtask's time into busy, backpressured and idle (see
//! [`crate::metrics`]). When nothing progressed it spins for
//! `weir.worker.spin-before-park`, then parks on its [`Doorbell`]: it
//! announces itself asleep, polls once more (so nothing published in between
//! is missed), and awaits a ring of the doorbell or its next deadline (a
//! buffer timeout or a paced source). Before every sleep it publishes when
//! it expects to be awake again, so that the control thread can interrupt a
//! sleep that outlasts it ([`crate::exec::rescue`]). A task that fails (after a poll, it
//! reports the [`TaskError`](crate::chain::error::TaskError) a link of its
//! chain met: [`Task::failure`]) or panics fails the job: the worker
//! records the failure, cancels the job and rings every doorbell so that no
//! worker waits for input that will never come.

use crate::core::timestamp::{set_record_timestamp, NO_TIMESTAMP};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_lite::future;
use weir_net::Doorbell;

use crate::chain::task::Task;
use crate::checkpoint::writer::SnapshotWriter;
use crate::core::time::earliest;
use crate::core::UserError;
use crate::exec::error::TaskFailure;
use crate::exec::rescue::SleepWatch;
use crate::exec::spin_gate::SpinGate;
use crate::metrics::subtask::{SubtaskEntry, SubtaskMetrics, TaskClock};
use crate::metrics::worker::WorkerMetrics;

/// A task's failure: its worker, its name and why.
pub(crate) type Failure = (usize, String, TaskFailure);

/// State every worker and the control thread share.
pub(crate) struct JobShared {
    pub ready: AtomicUsize,
    pub go: AtomicBool,
    pub cancelled: AtomicBool,
    pub finished: AtomicUsize,
    /// The first failure (set once; taken by the control thread).
    failure: Mutex<Option<Failure>>,
    pub bells: Vec<Arc<Doorbell>>,
    /// Per worker: when it expects to wake from its sleep, for the control
    /// thread's [`Rescuer`](crate::exec::rescue::Rescuer).
    pub sleeps: Vec<SleepWatch>,
    pub finished_at: Vec<OnceLock<Instant>>,
    /// When the control thread released the workers (set before `go`).
    pub released: OnceLock<Instant>,
}

impl JobShared {
    pub fn new(workers: usize) -> Self {
        Self {
            ready: AtomicUsize::new(0),
            go: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
            failure: Mutex::new(None),
            bells: (0..workers).map(|_| Arc::new(Doorbell::new())).collect(),
            sleeps: (0..workers).map(|_| SleepWatch::default()).collect(),
            finished_at: (0..workers).map(|_| OnceLock::new()).collect(),
            released: OnceLock::new(),
        }
    }

    /// Records the first failure and stops every worker.
    pub fn fail(&self, worker: usize, task: String, cause: TaskFailure) {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert((worker, task, cause));
        self.cancel();
    }

    /// Whether a failure was recorded.
    pub fn has_failed(&self) -> bool {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The first failure, taken.
    pub fn take_failure(&self) -> Option<Failure> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Stops every worker at its next loop iteration.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        for bell in &self.bells {
            bell.ring();
        }
    }
}

/// How the worker loop behaves when idle.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdlePolicy {
    pub spin_before_park: Duration,
}

/// Outcome of one pass over the tasks.
struct Pass {
    progressed: bool,
    deadline: Option<Instant>,
}

struct TaskSet {
    tasks: Vec<Box<dyn Task>>,
    /// One per task, in the same order.
    clocks: Vec<TaskClock>,
    done: Vec<bool>,
    remaining: usize,
}

impl TaskSet {
    /// Polls every unfinished task once, starting at `now`; reads the clock
    /// after each poll (the end of one poll is the start of the next) and
    /// accounts the task's time. A task's error or panic becomes
    /// `Err((task, cause))`.
    fn poll_all(&mut self, now: Instant) -> Result<Pass, (String, TaskFailure)> {
        let mut pass = Pass {
            progressed: false,
            deadline: None,
        };
        let mut start = now;
        for ((task, done), clock) in self
            .tasks
            .iter_mut()
            .zip(self.done.iter_mut())
            .zip(self.clocks.iter_mut())
        {
            if *done {
                continue;
            }
            // Records of stages without event time have no timestamp;
            // stages with it set each record's.
            set_record_timestamp(NO_TIMESTAMP);
            let polled = catch_unwind(AssertUnwindSafe(|| task.poll(start)))
                .map_err(|panic| (task.describe(), failure_of(panic)))?;
            if let Some(e) = task.failure() {
                return Err((task.describe(), TaskFailure::from(e.clone())));
            }
            let end = Instant::now();
            clock.on_poll(
                start,
                end,
                polled.progressed,
                polled.waiting,
                polled.finished,
            );
            start = end;
            pass.progressed |= polled.progressed;
            pass.deadline = earliest(pass.deadline, polled.deadline);
            if polled.finished {
                *done = true;
                self.remaining -= 1;
            }
        }
        Ok(pass)
    }
}

/// What a task's unwinding means: a user function's
/// [`fail_task`](crate::core::fail_task), or a panic.
pub(crate) fn failure_of(panic: Box<dyn std::any::Any + Send>) -> TaskFailure {
    match panic.downcast::<UserError>() {
        Ok(e) => TaskFailure::User(e.0),
        Err(panic) => TaskFailure::Panic(panic_message(panic)),
    }
}

pub(crate) fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// Iterations between voluntary yields to glommio (its timers and I/O).
const YIELD_EVERY: u32 = 64;

/// While the snapshot writer works, how often the loop steps aside so
/// that glommio reaps the writer's I/O completions.
const IO_TURN_EVERY: Duration = Duration::from_micros(500);

/// Longest run of back-to-back I/O turns the loop gives the snapshot writer
/// after a long pass (see [`io_turns`]).
const IO_BURST_MAX: Duration = Duration::from_micros(100);

/// Longest a parked worker sleeps without a deadline before re-checking the
/// job's state (a safety net; doorbells wake it much sooner).
const PARK_SAFETY_NET: Duration = Duration::from_secs(1);

/// Gives the snapshot writer's I/O its turns after a pass that took
/// `pass`: one turn after a short pass (each costs the records waiting
/// behind it a few microseconds), back-to-back turns after a long one for
/// up to an eighth of the pass (at most [`IO_BURST_MAX`]) while the writer
/// is busy.
///
/// A turn is a moment asleep, in which glommio submits the writer's queued
/// requests and reaps completed ones (its executor polls its ring through
/// the sleep: `REACTOR_SPIN` in `attempt.rs`, so the core does not sleep); the writer's next request waits for
/// the next turn. Its requests are sequential (create the segment, write,
/// sync, close, sync the sink's files), so with one turn per pass a
/// checkpoint's asynchronous part took a dozen passes: with a busy source
/// whose passes take tens of milliseconds (a heavy chain, or any chain in
/// a debug build) a checkpoint took seconds, and the exactly-once sinks
/// committed nothing meanwhile. Back-to-back turns chain the requests that
/// complete at once; only a sync waits for a later pass.
async fn io_turns(writer: Option<&SnapshotWriter>, pass: Duration, watch: &SleepWatch) {
    let until = Instant::now() + (pass / 8).min(IO_BURST_MAX);
    loop {
        nap(watch, Duration::from_micros(1)).await;
        if !writer.is_some_and(SnapshotWriter::is_busy) || Instant::now() >= until {
            return;
        }
    }
}

/// Sleeps for `d`, published on `watch` (see [`crate::exec::rescue`]).
async fn nap(watch: &SleepWatch, d: Duration) {
    let _asleep = watch.asleep_until(Instant::now() + d);
    glommio::timer::sleep(d).await;
}

/// Runs one worker until all its tasks finished or the job is cancelled.
pub(crate) async fn run_worker(
    index: usize,
    tasks: Vec<(Box<dyn Task>, SubtaskEntry)>,
    shared: Arc<JobShared>,
    metrics: WorkerMetrics,
    idle: IdlePolicy,
    writer: Option<SnapshotWriter>,
) {
    let n = tasks.len();
    let (tasks, entries): (Vec<_>, Vec<_>) = tasks.into_iter().unzip();
    let subtasks: Vec<SubtaskMetrics> = entries.iter().map(|e| e.metrics.clone()).collect();
    // Registered before `ready`, so the control thread sees every subtask.
    let _ = metrics.subtasks.set(entries);
    let bell = shared.bells[index].clone();
    let watch = &shared.sleeps[index];
    watch.bind_current_thread();

    // Start together, so that the measured time covers the run, not setup.
    shared.ready.fetch_add(1, Ordering::AcqRel);
    while !shared.go.load(Ordering::Acquire) {
        if shared.cancelled.load(Ordering::Relaxed) {
            return;
        }
        nap(watch, Duration::from_micros(50)).await;
    }
    let epoch = crate::metrics::counters::epoch();
    let released = shared.released.get().copied().unwrap_or_else(Instant::now);
    let mut set = TaskSet {
        tasks,
        clocks: subtasks
            .into_iter()
            .map(|m| TaskClock::start(m, epoch, released))
            .collect(),
        done: vec![false; n],
        remaining: n,
    };

    let mut idle_since: Option<Instant> = None;
    let mut spin_gate = SpinGate::new();
    let mut iterations: u32 = 0;
    let mut last_io_turn = Instant::now();
    while set.remaining > 0 {
        if shared.cancelled.load(Ordering::Relaxed) {
            return;
        }
        let now = Instant::now();
        let pass = match set.poll_all(now) {
            Ok(pass) => pass,
            Err((task, cause)) => {
                shared.fail(index, task, cause);
                return;
            }
        };
        // A deadline that is due is work for the next pass, so it counts
        // as progress here: the loop goes round again at once, and gives
        // glommio its turns as it does after progress. Without those turns
        // a task that reports a due deadline pass after pass would keep the
        // snapshot writer's I/O from ever being submitted.
        let due = pass.deadline.is_some_and(|d| d <= now);
        if pass.progressed || due || set.remaining == 0 {
            if pass.progressed {
                idle_since = None;
            }
            iterations = iterations.wrapping_add(1);
            if writer.as_ref().is_some_and(|w| w.is_busy()) {
                // Let the snapshot writer (a task on this executor) take
                // its turn: the asynchronous part of a checkpoint. glommio
                // reaps I/O completions only when no task is runnable (or
                // at preemption), so now and then the loop sleeps for a
                // moment instead, letting the writer's writes complete.
                if now.duration_since(last_io_turn) >= IO_TURN_EVERY {
                    last_io_turn = now;
                    io_turns(writer.as_ref(), now.elapsed(), watch).await;
                } else {
                    futures_lite::future::yield_now().await;
                }
            } else if iterations.is_multiple_of(YIELD_EVERY) {
                glommio::yield_if_needed().await;
            }
            continue;
        }
        let since = *idle_since.get_or_insert(now);
        if now.duration_since(since) < idle.spin_before_park && spin_gate.may_spin() {
            std::hint::spin_loop();
            continue;
        }

        // Park: announce, re-check once, then wait for a ring or a deadline.
        future::poll_fn(|cx| {
            bell.prepare_park(cx.waker());
            Poll::Ready(())
        })
        .await;
        let recheck = match set.poll_all(Instant::now()) {
            Ok(pass) => pass,
            Err((task, cause)) => {
                bell.cancel_park();
                shared.fail(index, task, cause);
                return;
            }
        };
        if recheck.progressed || set.remaining == 0 || shared.cancelled.load(Ordering::Relaxed) {
            bell.cancel_park();
            idle_since = None;
            continue;
        }
        metrics.parks.add(1);
        let now = Instant::now();
        if spin_gate.at_park(now) {
            metrics.contended_parks.add(1);
        }
        let wait = recheck
            .deadline
            .map_or(PARK_SAFETY_NET, |d| d.saturating_duration_since(now));
        let rung = future::poll_fn(|_| {
            if bell.is_parked() {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        });
        let asleep = watch.asleep_until(now + wait);
        future::or(rung, glommio::timer::sleep(wait)).await;
        drop(asleep);
        bell.cancel_park();
        idle_since = None;
    }
    // Snapshots still being written belong to checkpoints that can still
    // complete (the final one): finish them before the worker ends.
    while writer.as_ref().is_some_and(|w| w.is_busy()) {
        if shared.cancelled.load(Ordering::Relaxed) {
            return;
        }
        nap(watch, Duration::from_micros(200)).await;
    }
    let _ = shared.finished_at[index].set(Instant::now());
    shared.finished.fetch_add(1, Ordering::AcqRel);
}
