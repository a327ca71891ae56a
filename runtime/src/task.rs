//! Tasks: the runnable heads of operator chains that a worker polls.
//!
//! A stage (a chain between two exchanges) becomes one task per subtask. A
//! task is polled by its worker's loop; each poll does a bounded amount of
//! work and says whether it progressed, when it next has something to do
//! (buffer timeout, source pacing) and whether it is finished.

use std::time::Instant;

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
}

impl TaskPoll {
    /// Folds a deadline into this result, keeping the earliest.
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = earliest(self.deadline, deadline);
        self
    }
}

/// The earlier of two optional instants.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A runnable chain head, owned by one worker.
pub trait Task {
    /// Does a bounded amount of work.
    fn poll(&mut self, now: Instant) -> TaskPoll;
    /// Operator name and subtask, for messages.
    fn describe(&self) -> String;
}
