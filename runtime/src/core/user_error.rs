//! A user function's way to fail its task over a record it cannot
//! process, as a Flink function throws an exception: [`fail_task`] from
//! inside `map`, `process` or any other user function ends the task's
//! poll; the worker reports the task failed with the message, the user's
//! fault (not a bug, as a panic is taken to be), and the restart strategy
//! decides as for any failure. It unwinds without the panic hook, so
//! nothing but the job's error is printed.

/// The unwinding payload of [`fail_task`]: the message.
#[derive(Debug)]
pub struct UserError(pub String);

/// Fails the running task with `message` (say which record and why).
pub fn fail_task(message: impl Into<String>) -> ! {
    std::panic::resume_unwind(Box::new(UserError(message.into())))
}
