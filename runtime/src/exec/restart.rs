//! Restart strategies: whether, and after how long, a failed job is
//! restarted, with Flink's semantics for each `restart-strategy.type`.
//!
//! [`RestartStrategyConfig`] holds what the `restart-strategy.*` keys say;
//! [`RestartStrategyConfig::resolve`] applies Flink's rule for an unset type
//! (`none` without checkpointing, `exponential-delay` with it) and yields a
//! [`RestartStrategy`]. A [`RestartTracker`] then decides for each failure
//! of one job run: [`RestartDecision::Restart`] after a delay, or
//! [`RestartDecision::GiveUp`] with the limit that was hit.
//!
//! Time is passed in ([`RestartTracker::on_failure`] takes `now` and the
//! start of the current attempt), and the jitter of `exponential-delay`
//! comes from a seedable generator ([`RestartTracker::with_seed`]), so the
//! decisions are reproducible in tests without sleeping.

use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::core::units::format_duration;

/// The value of `restart-strategy.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RestartStrategyType {
    /// `none` (also `off`, `disable`): a failure fails the job.
    None,
    /// `fixed-delay` (also `fixeddelay`): a fixed number of restarts, each
    /// after the same delay.
    FixedDelay,
    /// `failure-rate` (also `failurerate`): restart unless too many failures
    /// fall within a sliding interval.
    FailureRate,
    /// `exponential-delay` (also `exponentialdelay`): restart with a delay
    /// that grows after each failure and is reset after failure-free running.
    ExponentialDelay,
}

impl RestartStrategyType {
    /// Every type, in the order error messages list them.
    pub const ALL: [RestartStrategyType; 4] = [
        RestartStrategyType::None,
        RestartStrategyType::FixedDelay,
        RestartStrategyType::FailureRate,
        RestartStrategyType::ExponentialDelay,
    ];

    /// The canonical name, as [`crate::config::Config::get`] renders it.
    pub fn as_str(self) -> &'static str {
        match self {
            RestartStrategyType::None => "none",
            RestartStrategyType::FixedDelay => "fixed-delay",
            RestartStrategyType::FailureRate => "failure-rate",
            RestartStrategyType::ExponentialDelay => "exponential-delay",
        }
    }

    /// Every spelling Flink accepts for this type, canonical name first.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            RestartStrategyType::None => &["none", "off", "disable"],
            RestartStrategyType::FixedDelay => &["fixed-delay", "fixeddelay"],
            RestartStrategyType::FailureRate => &["failure-rate", "failurerate"],
            RestartStrategyType::ExponentialDelay => &["exponential-delay", "exponentialdelay"],
        }
    }
}

impl fmt::Display for RestartStrategyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `restart-strategy.type` accepts, for error messages.
pub const RESTART_STRATEGY_TYPE_EXPECTED: &str = "one of none (also off, disable), fixed-delay \
     (also fixeddelay), failure-rate (also failurerate), exponential-delay (also exponentialdelay)";

/// The error of parsing a [`RestartStrategyType`] from text that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown restart strategy {0:?}: expected {RESTART_STRATEGY_TYPE_EXPECTED}")]
pub struct UnknownRestartStrategy(pub String);

impl FromStr for RestartStrategyType {
    type Err = UnknownRestartStrategy;

    /// Flink's names and aliases, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        RestartStrategyType::ALL
            .into_iter()
            .find(|t| t.names().iter().any(|n| n.eq_ignore_ascii_case(text)))
            .ok_or_else(|| UnknownRestartStrategy(s.to_string()))
    }
}

/// The options of `fixed-delay` (`restart-strategy.fixed-delay.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedDelay {
    /// `attempts`: restarts allowed in the job's lifetime; the failure after
    /// the last one fails the job. Flink's default: 1.
    pub attempts: u32,
    /// `delay`: wait before each restart. Flink's default: 1 s.
    pub delay: Duration,
}

impl Default for FixedDelay {
    fn default() -> Self {
        FixedDelay {
            attempts: 1,
            delay: Duration::from_secs(1),
        }
    }
}

/// The options of `failure-rate` (`restart-strategy.failure-rate.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureRate {
    /// `max-failures-per-interval`: failures tolerated within one interval;
    /// one more within the interval fails the job. Flink's default: 1.
    pub max_failures_per_interval: u32,
    /// `failure-rate-interval`: the sliding window. Flink's default: 1 min.
    pub failure_rate_interval: Duration,
    /// `delay`: wait before each restart. Flink's default: 1 s.
    pub delay: Duration,
}

impl Default for FailureRate {
    fn default() -> Self {
        FailureRate {
            max_failures_per_interval: 1,
            failure_rate_interval: Duration::from_secs(60),
            delay: Duration::from_secs(1),
        }
    }
}

/// The options of `exponential-delay` (`restart-strategy.exponential-delay.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialDelay {
    /// `initial-backoff`: the delay of the first restart after a reset.
    /// Flink's default: 1 s.
    pub initial_backoff: Duration,
    /// `max-backoff`: the longest delay. Flink's default: 1 min.
    pub max_backoff: Duration,
    /// `backoff-multiplier`: the delay grows by this factor per restart.
    /// Flink's default: 1.5.
    pub backoff_multiplier: f64,
    /// `reset-backoff-threshold`: an attempt that ran this long before
    /// failing resets the delay (and the attempt count) to the start.
    /// Flink's default: 1 h.
    pub reset_backoff_threshold: Duration,
    /// `jitter-factor`: each delay moves by a uniformly random amount of up
    /// to this fraction of itself, either way. Flink's default: 0.1.
    pub jitter_factor: f64,
    /// `attempts-before-reset-backoff`: restarts allowed between resets;
    /// `None` is Flink's default, unlimited ("infinite").
    pub attempts_before_reset_backoff: Option<u32>,
}

impl Default for ExponentialDelay {
    fn default() -> Self {
        ExponentialDelay {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            backoff_multiplier: 1.5,
            reset_backoff_threshold: Duration::from_secs(3600),
            jitter_factor: 0.1,
            attempts_before_reset_backoff: None,
        }
    }
}

/// A resolved restart policy: one type with its options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RestartStrategy {
    /// Never restart.
    None,
    /// See [`FixedDelay`].
    FixedDelay(FixedDelay),
    /// See [`FailureRate`].
    FailureRate(FailureRate),
    /// See [`ExponentialDelay`].
    ExponentialDelay(ExponentialDelay),
}

impl RestartStrategy {
    /// The strategy's type.
    pub fn kind(&self) -> RestartStrategyType {
        match self {
            RestartStrategy::None => RestartStrategyType::None,
            RestartStrategy::FixedDelay(_) => RestartStrategyType::FixedDelay,
            RestartStrategy::FailureRate(_) => RestartStrategyType::FailureRate,
            RestartStrategy::ExponentialDelay(_) => RestartStrategyType::ExponentialDelay,
        }
    }
}

/// One line in config terms, e.g. `fixed-delay (attempts 3, delay 1s)`.
impl fmt::Display for RestartStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = format_duration;
        match self {
            RestartStrategy::None => f.write_str("none"),
            RestartStrategy::FixedDelay(p) => {
                write!(
                    f,
                    "fixed-delay (attempts {}, delay {})",
                    p.attempts,
                    d(p.delay)
                )
            }
            RestartStrategy::FailureRate(p) => write!(
                f,
                "failure-rate (max-failures-per-interval {}, failure-rate-interval {}, delay {})",
                p.max_failures_per_interval,
                d(p.failure_rate_interval),
                d(p.delay)
            ),
            RestartStrategy::ExponentialDelay(p) => write!(
                f,
                "exponential-delay (initial-backoff {}, max-backoff {}, backoff-multiplier {}, \
                 reset-backoff-threshold {}, jitter-factor {}, attempts-before-reset-backoff {})",
                d(p.initial_backoff),
                d(p.max_backoff),
                p.backoff_multiplier,
                d(p.reset_backoff_threshold),
                p.jitter_factor,
                format_attempts(p.attempts_before_reset_backoff)
            ),
        }
    }
}

/// Renders an optional attempt limit as config text: the number or `infinite`.
pub fn format_attempts(attempts: Option<u32>) -> String {
    attempts.map_or_else(|| "infinite".to_string(), |n| n.to_string())
}

/// Everything the `restart-strategy.*` keys say: the chosen type (if any)
/// and the options of every type, as Flink keeps them all whichever type is
/// chosen.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RestartStrategyConfig {
    /// `restart-strategy.type`; `None` = Flink's default, which depends on
    /// whether checkpointing is enabled (see [`RestartStrategyConfig::resolve`]).
    pub kind: Option<RestartStrategyType>,
    /// `restart-strategy.fixed-delay.*`.
    pub fixed_delay: FixedDelay,
    /// `restart-strategy.failure-rate.*`.
    pub failure_rate: FailureRate,
    /// `restart-strategy.exponential-delay.*`.
    pub exponential_delay: ExponentialDelay,
}

impl RestartStrategyConfig {
    /// The strategy in effect. An unset type is Flink's default (since 1.19):
    /// `none` without checkpointing, `exponential-delay` (with the configured
    /// `exponential-delay.*` options) with it.
    pub fn resolve(&self, checkpointing_enabled: bool) -> RestartStrategy {
        let kind = self.kind.unwrap_or(if checkpointing_enabled {
            RestartStrategyType::ExponentialDelay
        } else {
            RestartStrategyType::None
        });
        match kind {
            RestartStrategyType::None => RestartStrategy::None,
            RestartStrategyType::FixedDelay => RestartStrategy::FixedDelay(self.fixed_delay),
            RestartStrategyType::FailureRate => RestartStrategy::FailureRate(self.failure_rate),
            RestartStrategyType::ExponentialDelay => {
                RestartStrategy::ExponentialDelay(self.exponential_delay)
            }
        }
    }
}

/// What to do about one failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartDecision {
    /// Restart the job after `delay`.
    Restart {
        /// How long to wait before restarting.
        delay: Duration,
        /// The number of this restart: 1 for the first restart the tracker
        /// granted, counting every restart since the tracker was created.
        attempt: u32,
    },
    /// Fail the job for good.
    GiveUp {
        /// The limit that was hit, in the strategy's own terms, e.g.
        /// "restart-strategy fixed-delay: 3 attempts used (...)".
        reason: String,
    },
}

/// The limit of a restart strategy that a failure hit: why it gives up.
/// [`RestartDecision::GiveUp`] carries its text, in the strategy's own
/// terms and naming the option that set the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RestartLimit {
    /// `none`: no restart at all.
    Disabled,
    /// `fixed-delay`: every attempt used.
    FixedDelayAttempts {
        /// `restart-strategy.fixed-delay.attempts`.
        attempts: u32,
    },
    /// `failure-rate`: too many failures within the interval.
    FailureRate {
        /// Failures within the interval.
        failures: usize,
        /// `restart-strategy.failure-rate.failure-rate-interval`.
        interval: Duration,
        /// `restart-strategy.failure-rate.max-failures-per-interval`.
        max_per_interval: u32,
    },
    /// `exponential-delay`: every attempt used without a long enough run.
    ExponentialDelayAttempts {
        /// `restart-strategy.exponential-delay.attempts-before-reset-backoff`.
        limit: u32,
        /// `restart-strategy.exponential-delay.reset-backoff-threshold`.
        reset_threshold: Duration,
    },
}

impl fmt::Display for RestartLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Disabled => {
                f.write_str("restart-strategy none: restarts are disabled (restart-strategy.type)")
            }
            Self::FixedDelayAttempts { attempts: n } => write!(
                f,
                "restart-strategy fixed-delay: {n} attempts used \
                 (restart-strategy.fixed-delay.attempts = {n})"
            ),
            Self::FailureRate {
                failures,
                interval,
                max_per_interval,
            } => write!(
                f,
                "restart-strategy failure-rate: {failures} failures within {} \
                 (restart-strategy.failure-rate.max-failures-per-interval = {max_per_interval})",
                format_duration(*interval)
            ),
            Self::ExponentialDelayAttempts {
                limit,
                reset_threshold,
            } => write!(
                f,
                "restart-strategy exponential-delay: {limit} attempts used without \
                 {} of running between failures \
                 (restart-strategy.exponential-delay.attempts-before-reset-backoff = {limit})",
                format_duration(*reset_threshold)
            ),
        }
    }
}

/// Decides, failure by failure, whether a job restarts and after how long.
///
/// One tracker lives as long as the job (across its restarts). Once it has
/// given up it keeps giving up with the same reason: a failed job stays
/// failed.
#[derive(Debug, Clone)]
pub struct RestartTracker {
    strategy: RestartStrategy,
    rng: SplitMix64,
    /// Restarts granted so far.
    restarts: u32,
    /// failure-rate: the times of the latest failures, oldest first, at most
    /// `max_failures_per_interval + 1` of them.
    failures: VecDeque<Instant>,
    /// exponential-delay: restarts granted since the backoff was last reset.
    attempts_since_reset: u32,
    gave_up: Option<RestartLimit>,
}

impl RestartTracker {
    /// A tracker whose jitter is seeded randomly (per process and call).
    pub fn new(strategy: RestartStrategy) -> Self {
        Self::with_seed(strategy, RandomState::new().hash_one(0x7765_6972_u64))
    }

    /// A tracker whose jitter comes from a generator seeded with `seed`, so
    /// the same failures at the same times yield the same delays.
    pub fn with_seed(strategy: RestartStrategy, seed: u64) -> Self {
        RestartTracker {
            strategy,
            rng: SplitMix64(seed),
            restarts: 0,
            failures: VecDeque::new(),
            attempts_since_reset: 0,
            gave_up: None,
        }
    }

    /// The strategy this tracker applies.
    pub fn strategy(&self) -> &RestartStrategy {
        &self.strategy
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// A failure at `now`; `running_since` is when the current attempt
    /// started (the job's start, or the end of the last restart's delay).
    /// A `running_since` after `now` counts as no running time.
    pub fn on_failure(&mut self, now: Instant, running_since: Instant) -> RestartDecision {
        if let Some(limit) = &self.gave_up {
            return RestartDecision::GiveUp {
                reason: limit.to_string(),
            };
        }
        let delay = match self.strategy {
            RestartStrategy::None => Err(RestartLimit::Disabled),
            RestartStrategy::FixedDelay(p) => self.fixed_delay(&p),
            RestartStrategy::FailureRate(p) => self.failure_rate(&p, now),
            RestartStrategy::ExponentialDelay(p) => {
                let ran = now.saturating_duration_since(running_since);
                self.exponential_delay(&p, ran)
            }
        };
        match delay {
            Ok(delay) => {
                self.restarts = self.restarts.saturating_add(1);
                RestartDecision::Restart {
                    delay,
                    attempt: self.restarts,
                }
            }
            Err(limit) => {
                let reason = limit.to_string();
                self.gave_up = Some(limit);
                RestartDecision::GiveUp { reason }
            }
        }
    }

    /// Flink's `FixedDelayRestartBackoffTimeStrategy`: failure `k` (from 1)
    /// restarts while `k <= attempts`.
    fn fixed_delay(&mut self, p: &FixedDelay) -> Result<Duration, RestartLimit> {
        if self.restarts >= p.attempts {
            return Err(RestartLimit::FixedDelayAttempts {
                attempts: p.attempts,
            });
        }
        Ok(p.delay)
    }

    /// Flink's `FailureRateRestartBackoffTimeStrategy`: keep the latest
    /// `max + 1` failure times; give up when all of them lie within the
    /// interval (the oldest is not more than the interval before `now`).
    fn failure_rate(&mut self, p: &FailureRate, now: Instant) -> Result<Duration, RestartLimit> {
        let window = p.max_failures_per_interval as usize + 1;
        self.failures.push_back(now);
        while self.failures.len() > window {
            self.failures.pop_front();
        }
        let oldest = self.failures[0];
        if self.failures.len() == window
            && now.saturating_duration_since(oldest) <= p.failure_rate_interval
        {
            return Err(RestartLimit::FailureRate {
                failures: window,
                interval: p.failure_rate_interval,
                max_per_interval: p.max_failures_per_interval,
            });
        }
        Ok(p.delay)
    }

    /// Flink's `ExponentialDelayRestartBackoffTimeStrategy` (1.19+): an
    /// attempt that ran at least the reset threshold resets the count; the
    /// `k`-th restart since then (from 0) waits `initial * multiplier^k`,
    /// moved by up to ± `jitter` of itself and kept within
    /// `[initial-backoff, max-backoff]`.
    fn exponential_delay(
        &mut self,
        p: &ExponentialDelay,
        ran: Duration,
    ) -> Result<Duration, RestartLimit> {
        if ran >= p.reset_backoff_threshold {
            self.attempts_since_reset = 0;
        }
        if let Some(limit) = p.attempts_before_reset_backoff {
            if self.attempts_since_reset >= limit {
                return Err(RestartLimit::ExponentialDelayAttempts {
                    limit,
                    reset_threshold: p.reset_backoff_threshold,
                });
            }
        }
        let delay = backoff(p, self.attempts_since_reset, &mut self.rng);
        self.attempts_since_reset = self.attempts_since_reset.saturating_add(1);
        Ok(delay)
    }
}

/// The delay of the `k`-th restart since the last reset (from 0).
///
/// Computed in nanoseconds as `f64` (exact up to 2^53 ns, about 104 days).
/// Like Flink, jitter is applied to the uncapped backoff and the result is
/// then clamped, so a long series of failures waits `max-backoff`.
fn backoff(p: &ExponentialDelay, k: u32, rng: &mut SplitMix64) -> Duration {
    let initial = p.initial_backoff.as_nanos() as f64;
    let max = p.max_backoff.as_nanos() as f64;
    let exponent = i32::try_from(k).unwrap_or(i32::MAX);
    // Java's long conversion saturates; capping here also keeps the jitter
    // arithmetic finite when the power overflows.
    let base = (initial * p.backoff_multiplier.powi(exponent)).min(i64::MAX as f64);
    let offset = base * p.jitter_factor;
    let jitter = if offset > 0.0 {
        (2.0 * rng.next_f64() - 1.0) * offset
    } else {
        0.0
    };
    // max before min, as Flink does: an initial above the maximum wins.
    let nanos = (base + jitter).min(max).max(initial);
    Duration::from_nanos(nanos.round() as u64)
}

/// SplitMix64: a tiny, well-distributed generator, enough for jitter and
/// fully determined by its seed.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests;
