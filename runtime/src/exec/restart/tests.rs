//! Each strategy against Flink's semantics, with time passed in.
use super::*;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A clock of instants `t(n)` = n seconds after a fixed origin.
fn clock() -> impl Fn(u64) -> Instant {
    let origin = Instant::now();
    move |n| origin + secs(n)
}

fn restart(delay: Duration, attempt: u32) -> RestartDecision {
    RestartDecision::Restart { delay, attempt }
}

fn reason(decision: RestartDecision) -> String {
    match decision {
        RestartDecision::GiveUp { reason } => reason,
        other => panic!("expected GiveUp, got {other:?}"),
    }
}

fn delay(decision: RestartDecision) -> Duration {
    match decision {
        RestartDecision::Restart { delay, .. } => delay,
        other => panic!("expected Restart, got {other:?}"),
    }
}

fn exponential(jitter_factor: f64, limit: Option<u32>) -> ExponentialDelay {
    ExponentialDelay {
        initial_backoff: secs(1),
        max_backoff: secs(10),
        backoff_multiplier: 2.0,
        reset_backoff_threshold: secs(60),
        jitter_factor,
        attempts_before_reset_backoff: limit,
    }
}

#[test]
fn type_names_and_aliases_parse() {
    let cases = [
        ("none", RestartStrategyType::None),
        ("off", RestartStrategyType::None),
        ("disable", RestartStrategyType::None),
        ("fixed-delay", RestartStrategyType::FixedDelay),
        ("fixeddelay", RestartStrategyType::FixedDelay),
        ("failure-rate", RestartStrategyType::FailureRate),
        ("FailureRate", RestartStrategyType::FailureRate),
        ("exponential-delay", RestartStrategyType::ExponentialDelay),
        (" exponentialdelay ", RestartStrategyType::ExponentialDelay),
    ];
    for (text, kind) in cases {
        assert_eq!(text.parse::<RestartStrategyType>(), Ok(kind), "{text}");
    }
    for kind in RestartStrategyType::ALL {
        assert_eq!(kind.to_string().parse::<RestartStrategyType>(), Ok(kind));
        assert_eq!(kind.names()[0], kind.as_str());
    }
    let err = "fixed_delay".parse::<RestartStrategyType>().unwrap_err();
    assert!(err
        .to_string()
        .starts_with("unknown restart strategy \"fixed_delay\": expected one of none"));
}

#[test]
fn unset_type_resolves_by_checkpointing() {
    let mut config = RestartStrategyConfig::default();
    config.exponential_delay.max_backoff = secs(7);
    config.fixed_delay.attempts = 5;
    assert_eq!(config.resolve(false), RestartStrategy::None);
    // With checkpointing, Flink (1.19+) uses exponential-delay with the
    // configured exponential-delay options.
    assert_eq!(
        config.resolve(true),
        RestartStrategy::ExponentialDelay(config.exponential_delay)
    );
    config.kind = Some(RestartStrategyType::FixedDelay);
    for checkpointing in [false, true] {
        assert_eq!(
            config.resolve(checkpointing),
            RestartStrategy::FixedDelay(config.fixed_delay)
        );
    }
    config.kind = Some(RestartStrategyType::None);
    assert_eq!(config.resolve(true), RestartStrategy::None);
    config.kind = Some(RestartStrategyType::FailureRate);
    assert_eq!(
        config.resolve(false).kind(),
        RestartStrategyType::FailureRate
    );
}

#[test]
fn flink_defaults_of_each_type() {
    let fixed = FixedDelay::default();
    assert_eq!((fixed.attempts, fixed.delay), (1, secs(1)));
    let rate = FailureRate::default();
    assert_eq!(
        (
            rate.max_failures_per_interval,
            rate.failure_rate_interval,
            rate.delay
        ),
        (1, secs(60), secs(1))
    );
    let exp = ExponentialDelay::default();
    assert_eq!(
        (
            exp.initial_backoff,
            exp.max_backoff,
            exp.reset_backoff_threshold
        ),
        (secs(1), secs(60), secs(3600))
    );
    assert_eq!(
        (
            exp.backoff_multiplier,
            exp.jitter_factor,
            exp.attempts_before_reset_backoff
        ),
        (1.5, 0.1, None)
    );
}

#[test]
fn none_gives_up_at_the_first_failure() {
    let t = clock();
    let mut tracker = RestartTracker::with_seed(RestartStrategy::None, 1);
    let why = reason(tracker.on_failure(t(5), t(0)));
    assert!(
        why.starts_with("restart-strategy none: restarts are disabled"),
        "{why}"
    );
    assert_eq!(tracker.restarts(), 0);
}

#[test]
fn fixed_delay_counts_attempts_over_the_job_lifetime() {
    let t = clock();
    let strategy = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 3,
        delay: ms(250),
    });
    let mut tracker = RestartTracker::with_seed(strategy, 1);
    // Long runs between failures do not give attempts back.
    for (attempt, at) in [(1, 10), (2, 10_000), (3, 20_000)] {
        assert_eq!(
            tracker.on_failure(t(at), t(at - 5)),
            restart(ms(250), attempt)
        );
    }
    let why = reason(tracker.on_failure(t(30_000), t(29_000)));
    assert_eq!(
        why,
        "restart-strategy fixed-delay: 3 attempts used (restart-strategy.fixed-delay.attempts = 3)"
    );
    // A failed job stays failed.
    assert_eq!(reason(tracker.on_failure(t(40_000), t(39_000))), why);
    assert_eq!(tracker.restarts(), 3);

    let none_allowed = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 0,
        delay: ms(1),
    });
    let why = reason(RestartTracker::with_seed(none_allowed, 1).on_failure(t(1), t(0)));
    assert!(why.contains("0 attempts used"), "{why}");
}

#[test]
fn failure_rate_window_slides() {
    let t = clock();
    let params = FailureRate {
        max_failures_per_interval: 2,
        failure_rate_interval: secs(60),
        delay: secs(3),
    };
    let mut tracker = RestartTracker::with_seed(RestartStrategy::FailureRate(params), 1);
    // Two failures per minute are tolerated however close they are.
    assert_eq!(tracker.on_failure(t(0), t(0)), restart(secs(3), 1));
    assert_eq!(tracker.on_failure(t(30), t(3)), restart(secs(3), 2));
    // The third 61 s after the first: the first has left the window.
    assert_eq!(tracker.on_failure(t(61), t(33)), restart(secs(3), 3));
    // The fourth: 30, 61 and 62 all lie within one minute.
    let why = reason(tracker.on_failure(t(62), t(61)));
    assert_eq!(
        why,
        "restart-strategy failure-rate: 3 failures within 1min \
                     (restart-strategy.failure-rate.max-failures-per-interval = 2)"
    );
    assert_eq!(reason(tracker.on_failure(t(1000), t(999))), why);
}

#[test]
fn failure_rate_window_edge_is_inclusive_as_in_flink() {
    let t = clock();
    let params = FailureRate {
        max_failures_per_interval: 1,
        failure_rate_interval: secs(60),
        delay: ms(0),
    };
    // Exactly one interval apart still counts as within it ...
    let mut tracker = RestartTracker::with_seed(RestartStrategy::FailureRate(params), 1);
    assert_eq!(tracker.on_failure(t(0), t(0)), restart(ms(0), 1));
    assert!(reason(tracker.on_failure(t(60), t(0))).contains("2 failures within 1min"));
    // ... a nanosecond later it does not.
    let mut tracker = RestartTracker::with_seed(RestartStrategy::FailureRate(params), 1);
    tracker.on_failure(t(0), t(0));
    let later = t(60) + Duration::from_nanos(1);
    assert_eq!(tracker.on_failure(later, t(0)), restart(ms(0), 2));
    // Spread-out failures go on forever.
    for n in 2..100u64 {
        assert_eq!(
            tracker.on_failure(t(61 * n), t(61 * n - 1)),
            restart(ms(0), n as u32 + 1)
        );
    }
}

#[test]
fn exponential_delay_grows_caps_and_resets() {
    let t = clock();
    let mut tracker =
        RestartTracker::with_seed(RestartStrategy::ExponentialDelay(exponential(0.0, None)), 1);
    // Each attempt fails after 5 s, well below the 60 s threshold.
    let mut now = 0;
    let mut delays = Vec::new();
    for _ in 0..7 {
        delays.push(delay(tracker.on_failure(t(now + 5), t(now))).as_secs());
        now += 20;
    }
    assert_eq!(delays, [1, 2, 4, 8, 10, 10, 10]);
    // An attempt that ran exactly the threshold resets the backoff.
    assert_eq!(tracker.on_failure(t(now + 60), t(now)), restart(secs(1), 8));
    now += 100;
    assert_eq!(delay(tracker.on_failure(t(now + 59), t(now))), secs(2));
    // Running 59 s is not enough: the backoff keeps growing.
    now += 100;
    assert_eq!(delay(tracker.on_failure(t(now + 59), t(now))), secs(4));
    assert_eq!(tracker.restarts(), 10);
}

#[test]
fn exponential_delay_limits_attempts_between_resets() {
    let t = clock();
    let strategy = RestartStrategy::ExponentialDelay(exponential(0.0, Some(3)));
    let mut tracker = RestartTracker::with_seed(strategy, 1);
    for (i, at) in [0u64, 10, 20].into_iter().enumerate() {
        assert_eq!(
            tracker.on_failure(t(at + 1), t(at)),
            restart(secs(1 << i), i as u32 + 1)
        );
    }
    // A reset gives the attempts back.
    assert_eq!(tracker.on_failure(t(200), t(100)), restart(secs(1), 4));
    assert_eq!(delay(tracker.on_failure(t(301), t(300))), secs(2));
    assert_eq!(delay(tracker.on_failure(t(401), t(400))), secs(4));
    let why = reason(tracker.on_failure(t(501), t(500)));
    assert_eq!(why, "restart-strategy exponential-delay: 3 attempts used without 1min of running \
                     between failures (restart-strategy.exponential-delay.attempts-before-reset-backoff = 3)");
    // Given up is final, even after a long run.
    assert_eq!(reason(tracker.on_failure(t(5000), t(600))), why);
}

#[test]
fn exponential_delay_jitter_stays_in_bounds_and_is_seeded() {
    let t = clock();
    let params = ExponentialDelay {
        max_backoff: secs(3600),
        jitter_factor: 0.25,
        ..exponential(0.25, None)
    };
    let run = |seed: u64| -> Vec<Duration> {
        let mut tracker =
            RestartTracker::with_seed(RestartStrategy::ExponentialDelay(params), seed);
        (0..8u64)
            .map(|i| delay(tracker.on_failure(t(100 * i + 1), t(100 * i))))
            .collect()
    };
    let (mut below, mut above) = (0, 0);
    for seed in 0..200 {
        let delays = run(seed);
        assert_eq!(delays, run(seed), "seed {seed} must repeat");
        for (k, d) in delays.iter().enumerate() {
            let base = secs(1 << k);
            // ± 25 %, but never below initial-backoff.
            let low = base.mul_f64(0.75).max(secs(1));
            assert!(
                *d >= low && *d <= base.mul_f64(1.25),
                "seed {seed} restart {k}: {d:?}"
            );
            below += usize::from(*d < base);
            above += usize::from(*d > base);
        }
    }
    // Jitter goes both ways (1600 draws; each side has half the odds).
    assert!(below > 400 && above > 400, "{below} below, {above} above");
    assert_ne!(run(1), run(2));
    // With jitter the cap still holds exactly.
    let capped = ExponentialDelay {
        jitter_factor: 1.0,
        ..exponential(1.0, None)
    };
    let mut tracker = RestartTracker::with_seed(RestartStrategy::ExponentialDelay(capped), 7);
    for i in 0..50u64 {
        let d = delay(tracker.on_failure(t(100 * i + 1), t(100 * i)));
        assert!(d >= secs(1) && d <= secs(10), "{d:?}");
    }
}

#[test]
fn exponential_delay_survives_huge_exponents() {
    let t = clock();
    let params = ExponentialDelay {
        backoff_multiplier: 1e6,
        max_backoff: secs(5),
        ..exponential(0.5, None)
    };
    let mut tracker = RestartTracker::with_seed(RestartStrategy::ExponentialDelay(params), 3);
    let delays: Vec<Duration> = (0..2000u64)
        .map(|i| delay(tracker.on_failure(t(i + 1), t(i))))
        .collect();
    assert_eq!(delays[0].as_secs_f64().round(), 1.0);
    assert!(
        delays[1..].iter().all(|d| *d == secs(5)),
        "{:?}",
        &delays[..5]
    );
}

#[test]
fn running_since_after_now_counts_as_no_running_time() {
    let t = clock();
    let mut tracker =
        RestartTracker::with_seed(RestartStrategy::ExponentialDelay(exponential(0.0, None)), 1);
    assert_eq!(delay(tracker.on_failure(t(1), t(0))), secs(1));
    assert_eq!(delay(tracker.on_failure(t(2), t(500))), secs(2));
}

#[test]
fn strategies_display_in_config_terms() {
    let fixed = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 3,
        delay: ms(1500),
    });
    assert_eq!(fixed.to_string(), "fixed-delay (attempts 3, delay 1500ms)");
    let rate = RestartStrategy::FailureRate(FailureRate::default());
    assert_eq!(
        rate.to_string(),
        "failure-rate (max-failures-per-interval 1, failure-rate-interval 1min, delay 1s)"
    );
    let exp = RestartStrategy::ExponentialDelay(ExponentialDelay::default());
    assert_eq!(exp.to_string(), "exponential-delay (initial-backoff 1s, max-backoff 1min, backoff-multiplier 1.5, \
                                 reset-backoff-threshold 1h, jitter-factor 0.1, attempts-before-reset-backoff infinite)");
    assert_eq!(RestartStrategy::None.to_string(), "none");
    assert_eq!(RestartTracker::new(fixed).strategy(), &fixed);
}
