//! Buffer debloating on a throttled pipeline: while the keyed operator is
//! slow, the data in flight towards it shrinks until it drains in about the
//! target time (within 2x); when the throttle is lifted, throughput
//! recovers (the buffers grow back).
//!
//! In flight is what the sources shipped and the keyed gates did not take
//! yet (per output channel, from the subtask metrics); the drain time is
//! that over the rate at which the gates take bytes, per progress interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_runtime::operators::source::function::decode_u64_position;
use weir_runtime::{
    execute_with_progress, Collector, DebloatOptions, JobGraph, KeyContext, KeyedProcessFunction,
    Progress, Sink, Source, SourcePoll, SubtaskInfo,
};

use crate::{options, splitmix64, JOB_TIMEOUT};

/// Records as fast as the chain takes them, for `run_for`.
struct Unbounded {
    next: u64,
    step: u64,
    run_for: Duration,
    started: Option<Instant>,
}

impl Source for Unbounded {
    type Out = (u64, u64);

    fn poll_next<C: Collector<(u64, u64)>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let started = *self.started.get_or_insert_with(Instant::now);
        if started.elapsed() >= self.run_for {
            return SourcePoll::Finished;
        }
        let mut n = 0;
        while n < budget && out.is_available() {
            out.collect((splitmix64(self.next) % 1000, self.next));
            self.next += self.step;
            n += 1;
        }
        SourcePoll::Emitted(n)
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.next.to_le_bytes().to_vec()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.next = decode_u64_position(position)?;
        Ok(())
    }
}

/// Forwards every record after busy-waiting the current throttle.
struct Throttled {
    spin_ns: Arc<AtomicU64>,
}

impl KeyedProcessFunction for Throttled {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        _ctx: &KeyContext<u64>,
        record: (u64, u64),
        out: &mut C,
    ) {
        let spin = Duration::from_nanos(self.spin_ns.load(Ordering::Relaxed));
        if !spin.is_zero() {
            let start = Instant::now();
            while start.elapsed() < spin {
                std::hint::spin_loop();
            }
        }
        out.collect(record);
    }
}

struct Discard;

impl Sink for Discard {
    type In = (u64, u64);
    fn invoke(&mut self, _record: (u64, u64)) {}
}

/// Per progress interval: (end of the interval since the start, bytes in
/// flight towards the keyed stage, bytes per second it took).
fn samples(reports: &[Progress]) -> Vec<(Duration, f64, f64)> {
    reports
        .iter()
        .map(|p| {
            let in_flight: u64 = p
                .now
                .subtasks
                .iter()
                .filter(|s| s.id.stage.contains("source"))
                .flat_map(|s| s.in_flight_bytes.iter())
                .sum();
            let taken = |m: &weir_runtime::metrics::MetricsSnapshot| -> u64 {
                m.subtasks
                    .iter()
                    .filter(|s| s.id.stage.contains("throttled"))
                    .map(|s| s.bytes_in)
                    .sum()
            };
            let rate = (taken(&p.now) - taken(&p.before)) as f64 / p.interval.as_secs_f64();
            (p.elapsed, in_flight as f64, rate)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "no samples");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn debloating_sizes_in_flight_data_to_the_target_and_recovers() {
    let target = Duration::from_millis(20);
    let spin_ns = Arc::new(AtomicU64::new(20_000));
    let (throttled_for, run_for) = (Duration::from_millis(3_500), Duration::from_millis(4_500));
    let job = JobGraph::new("debloat");
    let spin = spin_ns.clone();
    job.source("source", move |info: &SubtaskInfo| Unbounded {
        next: info.index as u64,
        step: info.parallelism as u64,
        run_for,
        started: None,
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("throttled", move |_: &SubtaskInfo| Throttled {
        spin_ns: spin.clone(),
    })
    .sink("discard", |_: &SubtaskInfo| Discard);
    let mut o = options(2);
    o.progress_interval = Duration::from_millis(50);
    o.debloat = Some(DebloatOptions {
        target,
        period: Duration::from_millis(20),
        samples: 5,
        threshold_percentages: 25,
        min_buffer_size: 256,
    });
    let full_credit = (o.buffers_per_channel * o.segment_size * 2 * 2) as f64;

    let (tx, rx) = channel();
    let lift = spin_ns.clone();
    std::thread::spawn(move || {
        let mut reports = Vec::new();
        let mut lifted = false;
        let result = execute_with_progress(job, &o, &mut |p: &Progress| {
            if !lifted && p.elapsed >= throttled_for {
                lifted = true;
                lift.store(0, Ordering::Relaxed);
            }
            reports.push(p.clone());
        });
        let _ = tx.send((result, reports));
    });
    let (result, reports) = match rx.recv_timeout(JOB_TIMEOUT) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) => panic!("the job did not finish in {JOB_TIMEOUT:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("execute panicked"),
    };
    result.expect("the job runs");
    let samples = samples(&reports);
    let window = |from: u64, to: u64| -> Vec<(f64, f64)> {
        samples
            .iter()
            .filter(|(at, _, rate)| {
                *at >= Duration::from_millis(from) && *at < Duration::from_millis(to) && *rate > 0.0
            })
            .map(|&(_, in_flight, rate)| (in_flight, rate))
            .collect()
    };
    // Throttled, after 1.5 s to converge (the first buffers, full size,
    // drain at the throttled rate; slower on a loaded machine, where a
    // 50 ms sample's rate swings with the scheduler: the drain time is the
    // settled in-flight bytes, the last half of the window's samples, over
    // the window's mean rate).
    let throttled = window(1_500, 3_450);
    let slow_rate = throttled.iter().map(|p| p.1).sum::<f64>() / throttled.len().max(1) as f64;
    let settled = &throttled[throttled.len() / 2..];
    let drain = median(settled.iter().map(|p| p.0).collect()) / slow_rate;
    assert!(
        drain <= 2.0 * target.as_secs_f64(),
        "in flight drains in {:.1} ms, target {target:?}: {throttled:?}",
        drain * 1e3
    );
    let in_flight = median(settled.iter().map(|p| p.0).collect());
    assert!(
        in_flight < full_credit / 4.0,
        "in flight {in_flight} bytes, undebloated up to {full_credit}"
    );
    // Unthrottled: throughput is back (bigger buffers, more credit).
    let fast_rate = median(window(3_900, 4_450).iter().map(|p| p.1).collect());
    assert!(
        fast_rate > 5.0 * slow_rate,
        "throughput {fast_rate:.0} B/s after the throttle, {slow_rate:.0} B/s during it"
    );
}
