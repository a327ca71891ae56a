//! A result that another thread hands to a worker's asynchronous code,
//! once: [`completion`] makes the pair.
//!
//! A sink whose pre-commit is finished by a thread of its own (a network
//! client flushing what it sent) returns a [`Completion`] from
//! [`Sink::take_precommit`](crate::operators::sink::Sink::take_precommit);
//! the checkpoint's asynchronous part awaits it on the worker before
//! acknowledging, so the worker never blocks on the other thread. The
//! other side, [`Completer`], may be completed from any thread; dropped
//! without completing, it completes with an error saying so.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

struct Slot {
    result: Option<Result<(), String>>,
    waker: Option<Waker>,
}

/// The awaiting side: a future of the other thread's result.
pub struct Completion {
    slot: Arc<Mutex<Slot>>,
}

/// The completing side.
pub struct Completer {
    slot: Option<Arc<Mutex<Slot>>>,
}

/// A completer and the completion it completes.
pub fn completion() -> (Completer, Completion) {
    let slot = Arc::new(Mutex::new(Slot {
        result: None,
        waker: None,
    }));
    (
        Completer {
            slot: Some(slot.clone()),
        },
        Completion { slot },
    )
}

impl Completer {
    /// Hands `result` over and wakes the awaiting task.
    pub fn complete(mut self, result: Result<(), String>) {
        self.finish(result);
    }

    fn finish(&mut self, result: Result<(), String>) {
        if let Some(slot) = self.slot.take() {
            let waker = {
                let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
                s.result = Some(result);
                s.waker.take()
            };
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        self.finish(Err("the thread that was to complete it ended first".into()));
    }
}

impl Completion {
    /// One that is already complete with `result`.
    pub fn ready(result: Result<(), String>) -> Self {
        let (c, f) = completion();
        c.complete(result);
        f
    }

    /// Waits for the result on this thread (for callers that are not
    /// asynchronous: the end of a job without checkpointing).
    pub fn wait(self) -> Result<(), String> {
        futures_lite::future::block_on(self)
    }
}

impl Future for Completion {
    type Output = Result<(), String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match s.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_from_another_thread() {
        let (c, f) = completion();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            c.complete(Err("flush failed".into()));
        });
        assert_eq!(f.wait(), Err("flush failed".into()));
        t.join().unwrap();
    }

    #[test]
    fn a_dropped_completer_is_an_error_not_a_hang() {
        let (c, f) = completion();
        drop(c);
        assert!(f.wait().unwrap_err().contains("ended first"));
        assert_eq!(Completion::ready(Ok(())).wait(), Ok(()));
    }
}
