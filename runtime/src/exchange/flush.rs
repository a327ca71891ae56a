//! When an output ships a partly filled buffer: the buffer timeout, every
//! way Flink sets it.
//!
//! A buffer always ships when it is full. A partly filled one ships when
//! its timeout since its first record has passed
//! (`execution.buffer-timeout.interval`, Flink's; `execution.buffer-timeout`
//! is its older name, kept as Flink keeps it), after every record with a
//! timeout of zero, or never (`execution.buffer-timeout.enabled = false`,
//! Flink's `setBufferTimeout(-1)`: throughput over latency). A barrier,
//! watermark or the end of the input ships it whatever the timeout.
//!
//! Beyond Flink, `execution.buffer-timeout.interval = auto` with
//! `execution.buffer-timeout.latency-target = 1ms` lets each channel of an
//! output pick its own deadline ([`AdaptiveDeadline`], the control law is
//! there).
//!
//! The job-wide value comes from the configuration; an exchange may have
//! its own, from the Rust API (`key_by(..).buffer_timeout(..)`, Flink's
//! `setBufferTimeout` on the operator before it) or, for jobs written in
//! TOML or SQL, from `execution.buffer-timeout.operators`
//! (`uid=5ms, other-uid=0ms`): the exchanges a stage sends into take the
//! timeout named for one of its operators.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::core::units::{format_duration, parse_duration};

/// How long a partly filled buffer may wait for more records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferTimeout {
    /// Ship it this long after its first record (zero: after every
    /// record).
    Interval(Duration),
    /// Ship only full buffers (and at barriers, watermarks, the end).
    Disabled,
    /// Each channel adapts its deadline so that records reach the
    /// receiver within `target` ([`AdaptiveDeadline`]).
    Auto {
        /// The latency a record's buffer wait plus its queueing before
        /// the receiver should stay under (a p99 target).
        target: Duration,
    },
}

impl BufferTimeout {
    /// The time a partly filled buffer may wait, `None` when only full
    /// buffers ship.
    pub fn interval(self) -> Option<Duration> {
        match self {
            Self::Interval(d) => Some(d),
            Self::Disabled => None,
            Self::Auto { target } => Some(AdaptiveDeadline::new(target).timeout()),
        }
    }

    /// Every record ships at once (a timeout of zero).
    pub fn flushes_every_record(self) -> bool {
        self == Self::Interval(Duration::ZERO)
    }

    /// Parses one value as the configuration spells it: a duration, or
    /// `-1` / `disabled` for full buffers only (Flink's `-1`).
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        if t == "-1" || t == "-1ms" || t.eq_ignore_ascii_case("disabled") {
            return Some(Self::Disabled);
        }
        parse_duration(t).map(Self::Interval)
    }
}

impl From<Duration> for BufferTimeout {
    fn from(d: Duration) -> Self {
        Self::Interval(d)
    }
}

impl fmt::Display for BufferTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Interval(d) => f.write_str(&format_duration(*d)),
            Self::Disabled => f.write_str("disabled"),
            Self::Auto { target } => write!(f, "auto (target {})", format_duration(*target)),
        }
    }
}

/// The share of the latency target a buffer may spend waiting when nothing
/// queues downstream: the rest is headroom for the receiver's work and the
/// tail of the distribution.
const WAIT_SHARE: f64 = 0.8;

/// The least deadline, as a share of the target: below it buffers would
/// shrink to a record or two and their per-buffer cost would slow the
/// receiver down, adding the very queueing the deadline makes room for.
const FLOOR_SHARE: f64 = 0.2;

/// How often a channel looks at its rate and backlog.
const ADAPT_EVERY: Duration = Duration::from_micros(250);

/// Weight of a new rate sample in the moving average.
const RATE_WEIGHT: f64 = 0.25;

/// One channel's adaptive deadline (`execution.buffer-timeout.interval =
/// auto`). The control law, with `L` the latency target:
///
/// - Every [`ADAPT_EVERY`] the channel measures its fill rate `r` (bytes
///   shipped per second, a moving average) and its backlog `b` (bytes
///   shipped that the receiver has not taken yet: in the ring or waiting
///   for credit).
/// - By Little's law the time a byte shipped now waits before the receiver
///   takes it is `q = b / r`.
/// - The deadline of a partly filled buffer is what is left of the budget:
///   `T = clamp(0.8 L - q, 0.2 L, 0.8 L)`. A buffer that fills sooner ships
///   full, so at high rates the deadline never fires (no extra flushes);
///   at low rates each buffer waits `T`, about as long as the target
///   allows (as few flushes as the target allows). A record's wait in its
///   buffer is at most `T`, so wait plus queueing stays under `0.8 L` while
///   the receiver keeps up.
/// - When the receiver does not keep up (`q` beyond `0.6 L`), no deadline
///   meets the target: shrinking buffers further would only add per-buffer
///   work where the backlog already is, so `T` stays at `0.2 L`.
#[derive(Clone, Debug)]
pub struct AdaptiveDeadline {
    target: Duration,
    timeout: Duration,
    /// Bytes per second shipped, a moving average (`None`: no sample yet).
    rate: Option<f64>,
    /// When the rate was last sampled, and the bytes shipped then.
    last: Option<(std::time::Instant, u64)>,
}

impl AdaptiveDeadline {
    /// A channel aiming at `target`, starting at the deadline of an empty
    /// backlog.
    pub fn new(target: Duration) -> Self {
        Self {
            target,
            timeout: target.mul_f64(WAIT_SHARE),
            rate: None,
            last: None,
        }
    }

    /// The deadline now.
    #[inline]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Looks at the channel at `now` (every [`ADAPT_EVERY`] at most): it
    /// shipped `shipped` bytes in all, `backlog` of which the receiver has
    /// not taken. Returns the deadline.
    pub fn adapt(&mut self, now: std::time::Instant, shipped: u64, backlog: u64) -> Duration {
        let Some((at, before)) = self.last else {
            self.last = Some((now, shipped));
            return self.timeout;
        };
        let dt = now.saturating_duration_since(at);
        if dt < ADAPT_EVERY {
            return self.timeout;
        }
        self.last = Some((now, shipped));
        let sample = shipped.saturating_sub(before) as f64 / dt.as_secs_f64();
        let rate = match self.rate {
            Some(r) => r + RATE_WEIGHT * (sample - r),
            None => sample,
        };
        self.rate = Some(rate);
        let queueing = if backlog == 0 {
            0.0
        } else if rate > 0.0 {
            backlog as f64 / rate
        } else {
            // A backlog and nothing moving: the receiver is stalled.
            f64::INFINITY
        };
        let l = self.target.as_secs_f64();
        let t = (WAIT_SHARE * l - queueing).clamp(FLOOR_SHARE * l, WAIT_SHARE * l);
        self.timeout = Duration::from_secs_f64(t);
        self.timeout
    }
}

/// `execution.buffer-timeout.operators`: operator uid to its output's
/// buffer timeout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorTimeouts(pub BTreeMap<String, BufferTimeout>);

impl OperatorTimeouts {
    /// Parses `uid=5ms, other=0ms` (commas or semicolons between entries;
    /// empty: none). The error names the entry.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut map = BTreeMap::new();
        for entry in text
            .split([',', ';'])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let Some((uid, value)) = entry.split_once('=') else {
                return Err(format!("`{entry}` is not `uid=timeout`"));
            };
            let uid = uid.trim();
            if uid.is_empty() {
                return Err(format!("`{entry}` names no operator uid"));
            }
            let timeout = BufferTimeout::parse(value)
                .ok_or_else(|| format!("`{entry}`: `{}` is not a duration or -1", value.trim()))?;
            if map.insert(uid.to_owned(), timeout).is_some() {
                return Err(format!("operator `{uid}` is named twice"));
            }
        }
        Ok(Self(map))
    }
}

impl fmt::Display for OperatorTimeouts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (uid, t) in &self.0 {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{uid}={t}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_flink_writes_them() {
        let ms = |n| BufferTimeout::Interval(Duration::from_millis(n));
        assert_eq!(BufferTimeout::parse("100ms"), Some(ms(100)));
        assert_eq!(BufferTimeout::parse(" 0 ms"), Some(ms(0)));
        assert_eq!(BufferTimeout::parse("-1"), Some(BufferTimeout::Disabled));
        assert_eq!(
            BufferTimeout::parse("disabled"),
            Some(BufferTimeout::Disabled)
        );
        assert_eq!(BufferTimeout::parse("soon"), None);
        assert!(ms(0).flushes_every_record());
        assert!(!ms(1).flushes_every_record());
        assert_eq!(BufferTimeout::Disabled.interval(), None);
    }

    #[test]
    fn the_adaptive_deadline_gives_the_target_what_queueing_leaves() {
        use std::time::Instant;
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let mut a = AdaptiveDeadline::new(Duration::from_millis(1));
        assert_eq!(a.timeout(), us(800));
        // 1 MB/s shipped, nothing waiting: the whole wait share.
        assert_eq!(a.adapt(t0, 0, 0), us(800));
        assert_eq!(a.adapt(t0 + us(1000), 1000, 0), us(800));
        // 300 bytes waiting at 1 MB/s: 300 us of queueing.
        let t = a.adapt(t0 + us(2000), 2000, 300);
        assert!((us(499)..=us(501)).contains(&t), "{t:?}");
        // Looked at again too soon: unchanged.
        assert_eq!(a.adapt(t0 + us(2100), 2000, 0), t);
        // A receiver far behind: the floor, not smaller buffers.
        assert_eq!(a.adapt(t0 + us(3000), 3000, 100_000), us(200));
        // Stalled (a backlog, nothing shipped for long): the floor.
        let mut stalled = AdaptiveDeadline::new(Duration::from_millis(1));
        stalled.adapt(t0, 500, 500);
        for i in 1..20 {
            stalled.adapt(t0 + us(1000 * i), 500, 500);
        }
        assert_eq!(stalled.timeout(), us(200));
    }

    #[test]
    fn operator_timeouts_round_trip_and_name_bad_entries() {
        let t = OperatorTimeouts::parse("w3-source=0ms; w3-keyed = 10ms,sink=-1").expect("parses");
        assert_eq!(t.to_string(), "sink=disabled, w3-keyed=10ms, w3-source=0ms");
        assert_eq!(OperatorTimeouts::parse(&t.to_string()), Ok(t));
        assert_eq!(OperatorTimeouts::parse(""), Ok(OperatorTimeouts::default()));
        assert!(OperatorTimeouts::parse("a=1ms,a=2ms")
            .unwrap_err()
            .contains("`a` is named twice"));
        assert!(OperatorTimeouts::parse("a")
            .unwrap_err()
            .contains("`a` is not `uid=timeout`"));
        assert!(OperatorTimeouts::parse("=1ms")
            .unwrap_err()
            .contains("names no operator"));
        assert!(OperatorTimeouts::parse("a=fast")
            .unwrap_err()
            .contains("`fast` is not"));
    }
}
