//! Spinning before a park only while the worker has its core to itself.
//!
//! An idle worker spins for `weir.worker.spin-before-park` before it parks,
//! so that a record arriving within that time is taken without a sleep and
//! a wake-up (W3's microsecond percentiles). That pays when the worker's
//! core runs nothing else. When other threads want the same core (other
//! programs, or more weir threads than cores), the spin burns the slice
//! that the thread it waits for (a producer, a file source's I/O thread)
//! could have run in: a SQL join on two cores beside two busy loops ran
//! 1.3-1.9x slower with the spin than without it (bench/RESULTS.md).
//!
//! The kernel says when that happens: the time a thread spends runnable
//! but waiting for a CPU (its run delay, the second field of
//! `/proc/thread-self/schedstat`). [`SpinGate`] samples it when the worker
//! parks, at most every [`SAMPLE`] (one `pread` of a file it keeps open),
//! and closes while the run delay grew by more than [`CONTENDED`] of the
//! time since the previous sample: the worker then parks without spinning
//! until a later sample finds its core quiet again. Alone on its core a
//! worker still waits for short kernel work now and then (W3 counted about
//! 200 preemptions a second per worker), which stays far below the
//! threshold (W3 alone: no gated park in most runs); beside two busy loops
//! nearly every park was gated.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// Least time between two samples of the run delay.
pub const SAMPLE: Duration = Duration::from_millis(10);

/// Share of the time between two samples the worker may wait for a CPU
/// with the gate still open.
pub const CONTENDED: f64 = 0.1;

/// Whether an idle worker may spin before it parks (see the module doc).
#[derive(Debug)]
pub struct SpinGate {
    /// The calling thread's `schedstat` (`None` if it cannot be read: the
    /// gate then stays open).
    schedstat: Option<File>,
    /// The last sample: when, and the run delay then (ns).
    last: Option<(Instant, u64)>,
    /// The last samples found the core shared.
    closed: bool,
}

impl SpinGate {
    /// A gate for the calling thread, open.
    pub fn new() -> Self {
        let schedstat = File::open("/proc/thread-self/schedstat").ok();
        let mut gate = Self {
            schedstat,
            last: None,
            closed: false,
        };
        let now = Instant::now();
        gate.last = gate.run_delay().map(|d| (now, d));
        gate
    }

    /// Whether the worker may spin now.
    #[inline]
    pub fn may_spin(&self) -> bool {
        !self.closed
    }

    /// The worker parks at `now`: samples the run delay if the last sample
    /// is [`SAMPLE`] old. Returns whether the gate is closed.
    pub fn at_park(&mut self, now: Instant) -> bool {
        if self
            .last
            .is_some_and(|(at, _)| now.saturating_duration_since(at) >= SAMPLE)
        {
            let delay = self.run_delay();
            self.observe(now, delay);
        }
        self.closed
    }

    /// Takes the sample `delay` (the run delay in ns) at `now`.
    fn observe(&mut self, now: Instant, delay: Option<u64>) {
        let (Some((at, before)), Some(delay)) = (self.last, delay) else {
            return;
        };
        let elapsed = now.saturating_duration_since(at).as_nanos() as f64;
        let waited = delay.saturating_sub(before) as f64;
        self.closed = elapsed > 0.0 && waited > CONTENDED * elapsed;
        self.last = Some((now, delay));
    }

    /// The thread's run delay so far (ns).
    fn run_delay(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.schedstat.as_ref()?.read_at(&mut buf, 0).ok()?;
        parse_run_delay(&buf[..n])
    }
}

impl Default for SpinGate {
    fn default() -> Self {
        Self::new()
    }
}

/// The run delay of a `schedstat` line: `runtime_ns run_delay_ns slices`.
fn parse_run_delay(line: &[u8]) -> Option<u64> {
    std::str::from_utf8(line)
        .ok()?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(at: Instant, delay: u64) -> SpinGate {
        SpinGate {
            schedstat: None,
            last: Some((at, delay)),
            closed: false,
        }
    }

    #[test]
    fn the_gate_closes_while_the_run_delay_grows_past_its_share_and_reopens() {
        let t0 = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        let mut g = gate(t0, 1_000);
        assert!(g.may_spin());
        // 1 ms waited in 20 ms: 5%, open.
        g.observe(t0 + ms(20), Some(1_000 + 1_000_000));
        assert!(g.may_spin());
        // 10 ms waited in the next 20 ms: 50%, closed.
        g.observe(t0 + ms(40), Some(11_001_000));
        assert!(!g.may_spin());
        // Quiet again: open.
        g.observe(t0 + ms(60), Some(11_101_000));
        assert!(g.may_spin());
        // A failed read changes nothing.
        g.observe(t0 + ms(80), None);
        assert!(g.may_spin());
        assert_eq!(g.last, Some((t0 + ms(60), 11_101_000)));
    }

    #[test]
    fn samples_come_no_more_often_than_the_sample_period() {
        let t0 = Instant::now();
        let mut g = gate(t0, 0);
        g.closed = true;
        // Too soon: no sample (the gate has no file; a sample would fail
        // and change nothing anyway, so look at `last`).
        assert!(g.at_park(t0 + SAMPLE / 2));
        assert_eq!(g.last, Some((t0, 0)));
    }

    #[test]
    fn schedstat_lines_parse() {
        assert_eq!(parse_run_delay(b"28406415 79884 21\n"), Some(79884));
        assert_eq!(parse_run_delay(b"0 0 1\n"), Some(0));
        assert_eq!(parse_run_delay(b"28406415\n"), None);
        assert_eq!(parse_run_delay(b"a b c"), None);
    }

    /// The kernel counts it: a thread that spins while another thread wants
    /// its only core waits for it about half of the time, and its gate
    /// closes.
    #[test]
    fn a_thread_sharing_its_core_with_a_busy_one_closes_its_gate() {
        if SpinGate::new().run_delay().is_none() {
            return;
        }
        let Some(core) = core_affinity::get_core_ids().and_then(|ids| ids.into_iter().next())
        else {
            return;
        };
        let spin = move || {
            core_affinity::set_for_current(core);
            let mut g = SpinGate::new();
            let end = Instant::now() + Duration::from_millis(200);
            while Instant::now() < end {
                std::hint::spin_loop();
            }
            g.at_park(Instant::now())
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                core_affinity::set_for_current(core);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let closed = std::thread::spawn(spin).join().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        busy.join().unwrap();
        assert!(closed, "200 ms spinning beside a busy thread on one core");
    }
}
