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
}

impl BufferTimeout {
    /// The time a partly filled buffer may wait, `None` when only full
    /// buffers ship.
    pub fn interval(self) -> Option<Duration> {
        match self {
            Self::Interval(d) => Some(d),
            Self::Disabled => None,
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
        }
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
