//! Tasks: the runnable heads of operator chains that a worker polls.
//!
//! A stage (a chain between two exchanges) becomes one task per subtask. A
//! task is polled by its worker's loop; each poll does a bounded amount of
//! work and says whether it progressed, when it next has something to do
//! (buffer timeout, source pacing), what it waits for until its next poll
//! (for the split of its time into busy, backpressured and idle, see
//! [`crate::metrics`]) and whether it is finished. A task whose chain
//! failed says so through [`Task::failure`], which its worker asks after
//! every poll.

use std::rc::Rc;
use std::time::Instant;

use crate::chain::control::ChainControl;
use crate::chain::error::TaskError;
use crate::checkpoint::task::TaskCheckpointing;
use crate::core::time::earliest;
use crate::metrics::subtask::TimeState;

/// What one [`Task::poll`] did.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskPoll {
    /// Records or events moved.
    pub progressed: bool,
    /// The task has ended its input and delivered end-of-partition.
    pub finished: bool,
    /// The task wants to be polled again at this time even if no input
    /// arrives (buffer timeout, source pacing).
    pub deadline: Option<Instant>,
    /// What the task waits for until its next poll: the state its time
    /// counts in meanwhile. `Busy`: it used up its budget and could go on
    /// at once; `BackPressured`: its output can take no more; `Idle`: its
    /// input has nothing more.
    pub waiting: TimeState,
}

impl TaskPoll {
    /// Folds a deadline into this result, keeping the earliest.
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = earliest(self.deadline, deadline);
        self
    }
}

/// A runnable chain head, owned by one worker.
pub trait Task {
    /// Does a bounded amount of work.
    fn poll(&mut self, now: Instant) -> TaskPoll;
    /// The error a link of the task's chain failed with, if one did
    /// ([`ChainControl::failure`]): the worker asks after every poll and
    /// then polls the task no more and fails the job. (Asked apart from
    /// [`Task::poll`], whose result stays a plain [`TaskPoll`]: its code
    /// around the per-record loops stays as it was.)
    fn failure(&self) -> Option<&TaskError>;
    /// Operator name and subtask, for messages.
    fn describe(&self) -> String;
}

/// What a head did with its input in one poll.
#[derive(Clone, Copy, Debug, Default)]
pub struct InputStep {
    /// Records or events moved.
    pub progressed: bool,
    /// Every record of the input has been delivered: end the chain's input
    /// (once).
    pub data_ended: bool,
    /// Nothing at all will come any more: finish the chain.
    pub ended: bool,
    /// Poll again at this time even without input (source pacing).
    pub deadline: Option<Instant>,
    /// The input stopped for its per-poll budget and has more to move
    /// right now (else it stopped because it had nothing more, or because
    /// the chain was unavailable).
    pub more: bool,
}

/// The part every task shares: the chain it feeds, checkpoint-completion
/// notifications and the end-of-input sequence. Each poll forwards a newly
/// completed checkpoint down the chain (sinks commit), flushes the chain's
/// tail (buffer timeout, queued buffers), lets the task move input, ends
/// the chain's input once the input says so, and once the input is over
/// finishes the chain until end-of-partition is delivered. At the end of
/// every poll the chain publishes its counters and the head says what the
/// task waits for. A head that takes a snapshot hands it over only if the
/// chain did not fail while taking it ([`ChainHead::failure`]).
pub struct ChainHead<C> {
    /// The chain.
    pub out: C,
    checkpointing: Option<Rc<TaskCheckpointing>>,
    notified: u64,
    /// This task has reported the stop's completion.
    stopped: bool,
    data_ended: bool,
    input_ended: bool,
    finished: bool,
}

impl<C> ChainHead<C> {
    /// A head feeding `out`.
    pub fn new(out: C, checkpointing: Option<Rc<TaskCheckpointing>>) -> Self {
        let notified = checkpointing
            .as_ref()
            .map_or(0, |c| c.signals.completed_id());
        Self {
            out,
            checkpointing,
            notified,
            stopped: false,
            data_ended: false,
            input_ended: false,
            finished: false,
        }
    }
}

impl<C: ChainControl> ChainHead<C> {
    /// The error a link of the chain failed with, if one did.
    #[inline]
    pub fn failure(&self) -> Option<&TaskError> {
        self.out.failure()
    }

    /// Forwards the newest completed checkpoint, if it is new.
    #[inline]
    fn notify(&mut self) -> bool {
        let Some(cp) = &self.checkpointing else {
            return false;
        };
        let done = cp.signals.completed_id();
        if done > self.notified {
            self.notified = done;
            self.out.notify_checkpoint_complete(done);
            // A stop ends the attempt once every task has passed its
            // completion on (sinks committed the savepoint's transaction).
            let stop = cp.signals.stop_id();
            if stop != 0 && done >= stop && !self.stopped {
                self.stopped = true;
                cp.signals.task_stopped();
            }
            return true;
        }
        false
    }

    /// One poll; `input` moves what the task's input has, into the chain.
    #[inline]
    pub fn poll(&mut self, now: Instant, input: impl FnOnce(&mut C) -> InputStep) -> TaskPoll {
        if self.finished {
            return TaskPoll {
                finished: true,
                ..TaskPoll::default()
            };
        }
        let notified = self.notify();
        let flushed = self.out.flush(now);
        let mut result = TaskPoll {
            progressed: flushed.progressed || notified,
            ..TaskPoll::default()
        }
        .with_deadline(flushed.next_deadline);
        let mut more = false;
        if !self.input_ended {
            let step = input(&mut self.out);
            result.progressed |= step.progressed;
            result = result.with_deadline(step.deadline);
            more = step.more;
            if (step.data_ended || step.ended) && !self.data_ended {
                self.data_ended = true;
                self.out.end_input();
                result.progressed = true;
            }
            self.input_ended = step.ended;
        }
        if self.input_ended {
            // A completion published before the end of the input must reach
            // the sinks before they finish.
            self.notify();
            if self.out.finish() {
                self.finished = true;
                result.finished = true;
                result.progressed = true;
            }
        }
        self.out.publish_metrics();
        // Output first, as Flink does: a task whose output is blocked is
        // backpressured whatever its input. After the end of the data the
        // tail is closed to records, so only events stuck for lack of
        // credit count.
        let blocked = if self.data_ended {
            self.out.output_pending()
        } else {
            !self.out.is_available()
        };
        result.waiting = if blocked {
            TimeState::BackPressured
        } else if more {
            TimeState::Busy
        } else {
            TimeState::Idle
        };
        result
    }
}
