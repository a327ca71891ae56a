//! Tests of the buffer debloater on a simulated clock: a consumer throttled
//! to a fixed rate, the throttle lifted, small fluctuations, the bounds and
//! idle time.
use super::*;

const MS: Duration = Duration::from_millis(1);
const CHANNELS: usize = 4;
const CREDIT: usize = 4;
const SEGMENT: usize = 32 * 1024;

/// A gate's debloater fed by a consumer of a given rate, in steps of 1 ms,
/// asked to recalculate at every step (it acts once per period).
struct Sim {
    debloater: BufferDebloater,
    now: Instant,
    /// Fractional bytes not yet reported.
    carry: f64,
    announced: Vec<DebloatTarget>,
}

impl Sim {
    fn new(options: DebloatOptions) -> Self {
        let now = Instant::now();
        Self {
            debloater: BufferDebloater::new(&options, CHANNELS, CREDIT, SEGMENT, now),
            now,
            carry: 0.0,
            announced: Vec::new(),
        }
    }

    fn step(&mut self, bytes_per_s: f64) {
        self.carry += bytes_per_s / 1000.0;
        let whole = self.carry.floor();
        self.carry -= whole;
        self.debloater.on_consumed(whole as u64);
        self.now += MS;
        if let Some(t) = self.debloater.recalculate(self.now) {
            self.announced.push(t);
        }
    }

    /// Consumes at `bytes_per_s` for `ms` milliseconds; returns the
    /// announcements made meanwhile.
    fn run(&mut self, bytes_per_s: f64, ms: u64) -> Vec<DebloatTarget> {
        let before = self.announced.len();
        for _ in 0..ms {
            self.step(bytes_per_s);
        }
        self.announced[before..].to_vec()
    }

    /// The announced in-flight bytes of the whole gate.
    fn in_flight(&self) -> f64 {
        (self.debloater.current().per_channel_bytes() * CHANNELS as u64) as f64
    }

    /// How long the announced in-flight data takes to consume at
    /// `bytes_per_s`, as a multiple of the target.
    fn drain_time_over_target(&self, bytes_per_s: f64, target: Duration) -> f64 {
        self.in_flight() / bytes_per_s / target.as_secs_f64()
    }
}

fn largest() -> DebloatTarget {
    DebloatTarget {
        buffer_size: SEGMENT,
        buffers: CREDIT,
    }
}

/// Each announcement (but one reaching a bound) differs from the one
/// before by more than the threshold.
fn assert_steps_exceed_threshold(start: DebloatTarget, list: &[DebloatTarget], percent: u32) {
    let mut last = start;
    for t in list {
        let (a, b) = (
            last.per_channel_bytes() as f64,
            t.per_channel_bytes() as f64,
        );
        let at_bound = *t == largest() || t.buffers == 1;
        assert!(
            at_bound || (b - a).abs() > a * f64::from(percent) / 100.0,
            "{last:?} -> {t:?} is within {percent}%"
        );
        last = *t;
    }
}

#[test]
fn defaults_are_the_documented_ones() {
    let o = DebloatOptions::default();
    assert_eq!(
        o,
        DebloatOptions {
            target: 20 * MS,
            period: 50 * MS,
            samples: 20,
            threshold_percentages: 25,
            min_buffer_size: 256,
        }
    );
}

#[test]
fn starts_with_full_buffers_and_credit_and_measures_after_a_period() {
    let now = Instant::now();
    let mut d = BufferDebloater::new(&DebloatOptions::default(), CHANNELS, CREDIT, SEGMENT, now);
    assert_eq!(d.current(), largest());
    assert_eq!(d.throughput_bytes_per_s(), 0.0);
    d.on_consumed(60_000);
    // Before the period ends nothing is measured and nothing is lost.
    assert_eq!(d.recalculate(now + 10 * MS), None);
    assert_eq!(d.throughput_bytes_per_s(), 0.0);
    d.on_consumed(40_000);
    // 100 kB in 50 ms: the first sample is taken as it is, not averaged
    // with nothing.
    let announced = d.recalculate(now + 50 * MS);
    assert!((d.throughput_bytes_per_s() - 2e6).abs() < 1e-3);
    assert!((d.desired_in_flight_bytes() - 40e3).abs() < 1e-3);
    // 40 kB over 4 channels of 4 buffers: 2500 B each.
    let expected = DebloatTarget {
        buffer_size: 2500,
        buffers: CREDIT,
    };
    assert_eq!(announced, Some(expected));
    assert_eq!(d.current(), expected);
    // A call after a longer gap is one longer period: 300 kB in 150 ms is
    // 2 MB/s again, so the average and the target stay.
    d.on_consumed(300_000);
    assert_eq!(d.recalculate(now + 200 * MS), None);
    assert!((d.throughput_bytes_per_s() - 2e6).abs() < 1e-3);
}

#[test]
fn degenerate_shapes_are_made_sane() {
    let now = Instant::now();
    let options = DebloatOptions {
        min_buffer_size: 4096,
        ..DebloatOptions::default()
    };
    // No channels or credit count as one; a least size above the segment is
    // lowered to it.
    let mut d = BufferDebloater::new(&options, 0, 0, 1024, now);
    assert_eq!(
        d.current(),
        DebloatTarget {
            buffer_size: 1024,
            buffers: 1
        }
    );
    d.on_consumed(1);
    assert_eq!(d.recalculate(now + 50 * MS), None, "already at the bound");
    assert_eq!(d.current().buffer_size, 1024);
}

/// A consumer throttled to 2 MB/s after running at 100 MB/s: the announced
/// in-flight data shrinks until it drains within 2x of the target, stays
/// there, and gets there in steps each larger than the threshold.
#[test]
fn throttled_consumer_converges_to_the_target() {
    let options = DebloatOptions::default();
    let mut sim = Sim::new(options.clone());
    // Fast: 100 MB/s x 20 ms = 2 MB wanted, above the 512 KiB the channels
    // hold at most, so nothing changes.
    assert_eq!(sim.run(100e6, 2000), vec![]);
    assert_eq!(sim.debloater.current(), largest());

    let rate = 2e6;
    let shrinking = sim.run(rate, 3000);
    assert!(!shrinking.is_empty());
    assert_steps_exceed_threshold(largest(), &shrinking, 25);
    assert!(
        shrinking
            .windows(2)
            .all(|w| w[1].per_channel_bytes() < w[0].per_channel_bytes()),
        "{shrinking:?}"
    );
    let ratio = sim.drain_time_over_target(rate, options.target);
    assert!((0.5..=2.0).contains(&ratio), "{ratio}: {shrinking:?}");
    // It stays converged.
    for _ in 0..40 {
        sim.run(rate, 50);
        let ratio = sim.drain_time_over_target(rate, options.target);
        assert!((0.5..=2.0).contains(&ratio), "{ratio}");
    }
    let throughput = sim.debloater.throughput_bytes_per_s();
    assert!((throughput / rate - 1.0).abs() < 0.01, "{throughput}");
    assert!(sim.debloater.current().buffer_size >= options.min_buffer_size);
}

/// Lifting the throttle (rate x10) grows the in-flight data back to the
/// target; a consumer faster than the channels can feed gets the largest
/// buffers and full credit, and never more.
#[test]
fn lifting_the_throttle_grows_back_bounded_by_the_max() {
    let options = DebloatOptions::default();
    let mut sim = Sim::new(options.clone());
    sim.run(2e6, 5000);
    let throttled = sim.debloater.current();
    assert!(throttled.buffer_size < SEGMENT / 4, "{throttled:?}");

    let rate = 20e6;
    let growing = sim.run(rate, 5000);
    assert!(
        growing
            .windows(2)
            .all(|w| w[1].per_channel_bytes() > w[0].per_channel_bytes()),
        "{growing:?}"
    );
    assert_steps_exceed_threshold(throttled, &growing, 25);
    let ratio = sim.drain_time_over_target(rate, options.target);
    assert!((0.5..=2.0).contains(&ratio), "{ratio}: {growing:?}");

    // x10 again: 200 MB/s x 20 ms = 4 MB, more than the gate's 512 KiB.
    let more = sim.run(200e6, 5000);
    assert_eq!(sim.debloater.current(), largest());
    assert_eq!(more.last(), Some(&largest()));
    for t in sim.announced.iter() {
        assert!(t.buffer_size <= SEGMENT && t.buffers <= CREDIT, "{t:?}");
    }
}

/// Once converged, throughput wobbling by 10% around its mean moves the
/// computed size by less than the 25% threshold: nothing is announced.
/// With a threshold of 0 the same wobble is announced.
#[test]
fn small_fluctuations_are_not_announced() {
    for (threshold, quiet) in [(25, true), (0, false)] {
        let options = DebloatOptions {
            threshold_percentages: threshold,
            ..DebloatOptions::default()
        };
        let mut sim = Sim::new(options);
        sim.run(2e6, 5000);
        let settled = sim.debloater.current();
        let mut wobble = Vec::new();
        for i in 0..100 {
            let rate = if i % 2 == 0 { 1.8e6 } else { 2.2e6 };
            wobble.extend(sim.run(rate, 50));
        }
        if quiet {
            assert_eq!(wobble, vec![], "threshold {threshold}");
            assert_eq!(sim.debloater.current(), settled);
        } else {
            assert!(!wobble.is_empty(), "threshold {threshold}");
        }
    }
}

/// A very slow consumer: the buffer size stops at the least size, then
/// credit shrinks, to one buffer of the least size per channel.
#[test]
fn least_buffer_size_bounds_it() {
    let options = DebloatOptions::default();
    // 120 kB/s x 20 ms = 2400 B, 600 B per channel: 3 buffers of 256 B.
    let mut sim = Sim::new(options.clone());
    sim.run(120e3, 10_000);
    assert_eq!(
        sim.debloater.current(),
        DebloatTarget {
            buffer_size: 256,
            buffers: 3
        }
    );
    // 10 kB/s wants 200 B for the whole gate: one least buffer per channel.
    let mut sim = Sim::new(options.clone());
    sim.run(10e3, 10_000);
    let least = DebloatTarget {
        buffer_size: options.min_buffer_size,
        buffers: 1,
    };
    assert_eq!(sim.debloater.current(), least);
    assert_eq!(sim.announced.last(), Some(&least));
    assert!(sim
        .announced
        .iter()
        .all(|t| t.buffer_size >= options.min_buffer_size && t.buffers >= 1));
    // Still slower changes nothing: the bound is not announced twice.
    assert_eq!(sim.run(1e3, 5000), vec![]);
}

/// A gate whose senders are slow is idle half the time: its throughput is
/// what it consumes while it has data. A gate idle for whole periods keeps
/// its estimate and its target.
#[test]
fn idle_time_does_not_count() {
    let options = DebloatOptions::default();
    let mut sim = Sim::new(options.clone());
    // 35 ms consuming at 2 MB/s, then 35 ms idle, repeatedly: periods of
    // 50 ms begin and end both in pauses and in busy stretches.
    for _ in 0..100 {
        sim.run(2e6, 35);
        sim.debloater.on_idle(sim.now);
        sim.run(0.0, 35);
        sim.debloater.on_data(sim.now);
    }
    let throughput = sim.debloater.throughput_bytes_per_s();
    assert!(
        (throughput / 2e6 - 1.0).abs() < 0.05,
        "throughput {throughput}, not 2 MB/s"
    );
    let target = sim.debloater.current();
    // Idle for two seconds: no samples, nothing announced.
    sim.debloater.on_idle(sim.now);
    sim.debloater.on_idle(sim.now + 5 * MS); // a repeated call keeps the start
    assert_eq!(sim.run(0.0, 2000), vec![]);
    sim.debloater.on_data(sim.now);
    assert_eq!(sim.debloater.throughput_bytes_per_s(), throughput);
    assert_eq!(sim.debloater.current(), target);
    // on_data without a pause is harmless.
    sim.debloater.on_data(sim.now);
    sim.run(2e6, 1000);
    let after = sim.debloater.throughput_bytes_per_s();
    assert!((after / 2e6 - 1.0).abs() < 0.05, "{after}");
}

/// With one sample there is no smoothing: a step in throughput is followed
/// in one period.
#[test]
fn one_sample_follows_at_once() {
    let options = DebloatOptions {
        samples: 1,
        ..DebloatOptions::default()
    };
    let mut sim = Sim::new(options.clone());
    sim.run(2e6, 50);
    sim.run(8e6, 50);
    let throughput = sim.debloater.throughput_bytes_per_s();
    assert!((throughput / 8e6 - 1.0).abs() < 0.01, "{throughput}");
    let ratio = sim.drain_time_over_target(8e6, options.target);
    assert!((0.8..=1.25).contains(&ratio), "{ratio}");
}
