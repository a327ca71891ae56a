//! Waking a worker that sleeps past its wake-up.
//!
//! A parked worker sleeps inside glommio, in `io_uring_enter`, until a
//! completion arrives on its ring: the timeout glommio arms for the
//! worker's deadline, or the read of the eventfd that a producer's doorbell
//! writes through glommio's foreign wake. Both completions reach the ring
//! through kernel task work for the sleeping thread, and a sleep can outlast
//! them: in one CI run a worker slept 107 s past its 1 s safety net, holding
//! up a checkpoint's alignment on every other worker, until a debugger's
//! attach interrupted it (glommio's issues list sleeps that outlast their
//! timers on some kernels and VMs). A signal does what the attach did:
//! `io_uring_enter` returns `EINTR`, glommio's loop goes round, fires the
//! timers that are due by the clock and takes the foreign wakes from its
//! queue, whatever the ring holds.
//!
//! So each worker publishes, before every sleep, when it expects to be awake
//! again ([`SleepWatch::asleep_until`]); the control thread's watch
//! ([`Rescuer::look`], every tick) sends the worker's thread [`SIGNAL`] when
//! the worker is still asleep [`GRACE`] after that moment, or [`GRACE`]
//! after a producer rang its doorbell, and again every [`GRACE`] while it
//! stays asleep (a signal that lands just before the thread enters its wait
//! interrupts nothing). The handler does nothing and is installed without
//! `SA_RESTART`, which is what makes the wait return. Go's runtime
//! interrupts its threads with the same signal, whose default action is to
//! ignore it.
//!
//! A rescue that was not needed (a worker the host did not schedule for
//! [`GRACE`]) costs one signal: glommio's waits retry, and the worker's other
//! blocking calls are on regular files (which signals do not interrupt) or
//! go through std's retrying `read_exact`, `write_all`, sleeps and locks.
//! Every rescue is counted in [`WorkerMetrics::rescues`] and logged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use weir_net::Doorbell;

use crate::metrics::counters::{epoch, ns_since};
use crate::metrics::worker::WorkerMetrics;

/// The signal that interrupts a worker's wait.
pub const SIGNAL: libc::c_int = libc::SIGURG;

/// How long past its wake-up a worker may still sleep before it is
/// interrupted: far above a wake-up's usual microseconds, short enough
/// that a checkpoint's alignment hardly notices.
pub const GRACE: Duration = Duration::from_millis(50);

/// One worker's published sleep, written by the worker and read by the
/// control thread. Alone on its cache lines: the worker writes it on every
/// sleep.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct SleepWatch {
    /// When the worker expects to be awake again, in nanoseconds since
    /// [`epoch`] (at least 1); 0 while it is awake.
    due: AtomicU64,
    /// The worker's thread and its kernel id, once it bound itself.
    thread: OnceLock<(libc::pthread_t, libc::pid_t)>,
}

/// A published sleep: ends (the worker is awake) when dropped.
pub(crate) struct Asleep<'a>(&'a SleepWatch);

impl Drop for Asleep<'_> {
    fn drop(&mut self) {
        self.0.due.store(0, Ordering::Release);
    }
}

impl SleepWatch {
    /// Records the calling thread as the worker's: the thread a rescue
    /// interrupts. Called on the worker's executor thread.
    pub fn bind_current_thread(&self) {
        // SAFETY: `pthread_self` and `gettid` have no preconditions and
        // cannot fail.
        let _ = self
            .thread
            .set(unsafe { (libc::pthread_self(), libc::gettid()) });
    }

    /// Publishes that the worker sleeps and expects to be awake by `until`,
    /// until the returned guard is dropped.
    pub fn asleep_until(&self, until: Instant) -> Asleep<'_> {
        self.due
            .store(ns_since(epoch(), until).max(1), Ordering::Release);
        Asleep(self)
    }

    fn due(&self) -> u64 {
        self.due.load(Ordering::Acquire)
    }
}

/// What the watch remembers of one worker's current sleep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Seen {
    /// The sleep (its `due`), 0 for none.
    due: u64,
    /// Whether its doorbell was seen parked during this sleep.
    parked: bool,
    /// When the doorbell was first seen rung during this sleep (ns).
    rung_at: Option<u64>,
    /// When the last signal went to this sleep (ns).
    signalled_at: Option<u64>,
}

impl Seen {
    /// Takes one look at a worker asleep until `due`, whose doorbell is
    /// `parked` or not, at `now` (all ns since [`epoch`]); returns whether
    /// to signal it now.
    fn look(&mut self, due: u64, parked: bool, now: u64) -> bool {
        if due != self.due {
            *self = Seen {
                due,
                ..Seen::default()
            };
        }
        if due == 0 {
            return false;
        }
        if parked {
            self.parked = true;
        } else if self.parked && self.rung_at.is_none() {
            // Parked on the doorbell before, not now: a producer rang it.
            self.rung_at = Some(now);
        }
        let grace = GRACE.as_nanos() as u64;
        let wake_by = self.rung_at.map_or(due, |r| r.min(due));
        let overdue = now >= wake_by.saturating_add(grace);
        let quiet = self
            .signalled_at
            .is_none_or(|s| now >= s.saturating_add(grace));
        if overdue && quiet {
            self.signalled_at = Some(now);
            return true;
        }
        false
    }
}

/// The control thread's side: looks at every worker's sleep and interrupts
/// the overdue ones.
#[derive(Debug)]
pub(crate) struct Rescuer {
    seen: Vec<Seen>,
    /// False when the signal's handler could not be installed (another
    /// handler owns it): then nobody is interrupted.
    armed: bool,
}

impl Rescuer {
    /// A rescuer for `workers` workers; installs the signal's handler.
    pub fn new(workers: usize) -> Self {
        Self {
            seen: vec![Seen::default(); workers],
            armed: install_handler(),
        }
    }

    /// One look at every worker (`watches`, `bells` and `metrics` are
    /// indexed by worker) at `now`. Must be called only while the workers'
    /// threads have not been joined.
    pub fn look(
        &mut self,
        now: Instant,
        watches: &[SleepWatch],
        bells: &[Arc<Doorbell>],
        metrics: &[WorkerMetrics],
    ) {
        if !self.armed {
            return;
        }
        let now_ns = ns_since(epoch(), now);
        for (w, seen) in self.seen.iter_mut().enumerate() {
            let due = watches[w].due();
            if !seen.look(due, bells[w].is_parked(), now_ns) {
                continue;
            }
            let Some(&(thread, tid)) = watches[w].thread.get() else {
                continue;
            };
            if is_runnable(tid) {
                // Not in a wait: the host has not run it yet, and a signal
                // would interrupt nothing.
                continue;
            }
            if interrupt(thread) {
                metrics[w].rescues.add(1);
                let late = Duration::from_nanos(now_ns.saturating_sub(due));
                tracing::warn!(
                    "worker {w} still asleep {late:?} past its wake-up{}: interrupted its wait",
                    if seen.rung_at.is_some() {
                        " or its doorbell's ring"
                    } else {
                        ""
                    }
                );
            }
        }
    }
}

extern "C" fn on_signal(_: libc::c_int) {}

/// Installs [`SIGNAL`]'s do-nothing handler without `SA_RESTART`, once per
/// process; false when another handler owns the signal (it is left alone).
fn install_handler() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: `sigaction` reads and writes only the structs passed to
        // it, which are zero-initialised plain C data (a valid empty action);
        // the handler installed is an `extern "C"` function that does
        // nothing, so it is async-signal-safe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(SIGNAL, std::ptr::null(), &mut old) != 0 {
                return false;
            }
            if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
                tracing::warn!(
                    "SIGURG has a handler of the program's: a worker that sleeps past its \
                     wake-up will not be interrupted"
                );
                return false;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            // No SA_RESTART: the interrupted wait must return.
            action.sa_flags = 0;
            libc::sigaction(SIGNAL, &action, std::ptr::null_mut()) == 0
        }
    })
}

/// Whether the kernel has the thread `tid` of this process running or
/// ready to run (state `R` in its `stat`), rather than waiting; false when
/// that cannot be read.
fn is_runnable(tid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
        .ok()
        .and_then(|stat| state_of(&stat))
        == Some('R')
}

/// The state letter of a `/proc/…/stat` line: the first field after the
/// command name, which is in parentheses and may itself hold any character.
fn state_of(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Sends [`SIGNAL`] to `thread`; true if it was sent.
fn interrupt(thread: libc::pthread_t) -> bool {
    // SAFETY: `thread` is a worker's executor thread (bound by the worker
    // itself), and the control thread joins the workers only after its watch
    // ended, so it names a running thread or one that ended but was not
    // joined: `pthread_kill` is defined for both. The signal's handler was
    // installed before any call (`Rescuer::new`).
    unsafe { libc::pthread_kill(thread, SIGNAL) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;

    const MS: u64 = 1_000_000;
    const G: u64 = GRACE.as_nanos() as u64;

    #[test]
    fn a_sleep_is_interrupted_only_a_grace_after_its_wake_up_and_then_every_grace() {
        let mut seen = Seen::default();
        let due = 1_000 * MS;
        assert!(!seen.look(0, false, due + 10 * G), "awake: never");
        assert!(!seen.look(due, true, due - MS));
        assert!(!seen.look(due, true, due + G - 1));
        assert!(seen.look(due, true, due + G));
        assert!(
            !seen.look(due, true, due + G + G / 2),
            "not twice in a grace"
        );
        assert!(seen.look(due, true, due + 2 * G));
        // The next sleep starts afresh.
        let next = due + 10 * G;
        assert!(!seen.look(next, true, next + G - 1));
        assert!(seen.look(next, true, next + G));
    }

    #[test]
    fn a_rung_doorbell_makes_a_parked_sleep_due_at_once() {
        let mut seen = Seen::default();
        let due = 1_000 * MS;
        let t = 100 * MS;
        assert!(!seen.look(due, true, t));
        assert!(!seen.look(due, false, t + MS), "rung now");
        assert!(!seen.look(due, false, t + MS + G - 1));
        assert!(seen.look(due, false, t + MS + G), "a grace after the ring");
    }

    #[test]
    fn a_sleep_without_its_doorbell_waits_for_its_deadline() {
        // A plain sleep (not a park) never sees its doorbell parked, so an
        // unparked doorbell is no ring.
        let mut seen = Seen::default();
        let due = 1_000 * MS;
        assert!(!seen.look(due, false, 10 * MS));
        assert!(!seen.look(due, false, due + G - 1));
        assert!(seen.look(due, false, due + G));
    }

    #[test]
    fn a_stat_line_gives_its_state_whatever_the_command_name() {
        assert_eq!(state_of("42 (weir-worker-0) S 1 2 3"), Some('S'));
        assert_eq!(state_of("42 (a) R (b)) R 1"), Some('R'));
        assert_eq!(state_of("42 (x) D"), Some('D'));
        assert_eq!(state_of("garbage"), None);
        // SAFETY: `gettid` has no preconditions and cannot fail.
        let own = format!("/proc/self/task/{}/stat", unsafe { libc::gettid() });
        let stat = std::fs::read_to_string(own).unwrap();
        assert_eq!(state_of(&stat), Some('R'), "a thread reading is running");
    }

    /// The signal ends a system call that would block forever: the handler
    /// is installed without `SA_RESTART` and goes to the worker's thread.
    #[test]
    fn an_overdue_sleeper_blocked_in_a_system_call_is_interrupted() {
        let watches = Arc::new(vec![SleepWatch::default()]);
        let bells = vec![Arc::new(Doorbell::new())];
        let metrics = vec![WorkerMetrics::default()];
        let mut rescuer = Rescuer::new(1);
        assert!(rescuer.armed, "the handler installs");
        let (mut reader, _writer) = UnixStream::pair().unwrap();
        let (tx, rx) = mpsc::channel();
        let sleeper = {
            let watches = watches.clone();
            std::thread::spawn(move || {
                watches[0].bind_current_thread();
                let _asleep = watches[0].asleep_until(Instant::now());
                // Nothing is ever written: only a signal ends this read.
                let got = reader.read(&mut [0u8; 1]);
                tx.send(got.map_err(|e| e.kind())).unwrap();
            })
        };
        let give_up = Instant::now() + Duration::from_secs(30);
        let got = loop {
            rescuer.look(Instant::now(), &watches, &bells, &metrics);
            if let Ok(got) = rx.recv_timeout(Duration::from_millis(5)) {
                break got;
            }
            assert!(Instant::now() < give_up, "the read was never interrupted");
        };
        sleeper.join().unwrap();
        assert_eq!(got, Err(std::io::ErrorKind::Interrupted));
        assert!(metrics[0].rescues.get() >= 1);
    }

    /// Rescues are harmless to glommio: an executor interrupted again and
    /// again in its sleep still wakes its sleeping task on time, once.
    #[test]
    fn glommio_sleeps_through_rescues_and_wakes_on_time() {
        let watches = Arc::new(vec![SleepWatch::default()]);
        let bells = vec![Arc::new(Doorbell::new())];
        let metrics = vec![WorkerMetrics::default()];
        let mut rescuer = Rescuer::new(1);
        let nap = Duration::from_millis(400);
        let executor = {
            let watches = watches.clone();
            glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
                .spawn(move || async move {
                    watches[0].bind_current_thread();
                    let start = Instant::now();
                    // Published as due already: every look interrupts it.
                    let asleep = watches[0].asleep_until(start);
                    glommio::timer::sleep(nap).await;
                    drop(asleep);
                    start.elapsed()
                })
                .unwrap()
        };
        let started = Instant::now();
        while watches[0].due() == 0 && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        while watches[0].due() != 0 && started.elapsed() < Duration::from_secs(10) {
            rescuer.look(Instant::now(), &watches, &bells, &metrics);
            std::thread::sleep(Duration::from_millis(5));
        }
        let slept = executor.join().unwrap();
        assert!(slept >= nap, "woke early: {slept:?}");
        assert!(slept < nap * 5, "woke late: {slept:?}");
        assert!(
            metrics[0].rescues.get() >= 3,
            "interrupted {} times",
            metrics[0].rescues.get()
        );
    }
}
