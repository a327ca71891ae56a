//! A value being applied to a key, and how the values of keys are read:
//! numbers, durations, memory sizes, booleans, directories, each with the
//! form a bad value is told to take.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::error::ConfigError;
use crate::core::units::{format_duration, parse_duration, parse_uint};

/// Origin of values given with `--set`.
pub(crate) const OVERRIDE_ORIGIN: &str = "--set";
pub(crate) const DURATION_EXPECTED: &str =
    "a duration such as 100ms, 1s or 2min (a non-negative integer \
     and a unit: ns, us, ms, s, min, h or d; a bare integer means milliseconds)";
pub(crate) const SIZE_EXPECTED: &str =
    "a memory size from 64b to 16mb such as 32kb (an integer and a \
     unit: b, kb, mb or gb; a bare integer means bytes)";
pub(crate) const BOOL_EXPECTED: &str = "true or false";
pub(crate) const POSITIVE_OR_UNSET: &str = "an integer of at least 1, or unset";
pub(crate) const MODE_EXPECTED: &str = "EXACTLY_ONCE or AT_LEAST_ONCE (in any case)";
pub(crate) const DIR_EXPECTED: &str =
    "a local directory: a path such as /var/lib/weir/checkpoints or a \
     file:// URI (weir writes checkpoints to the local file system), or unset";
/// Flink's upper bound of its integer options (a Java `int`).
pub(crate) const FLINK_INT_MAX: u64 = i32::MAX as u64;
/// Flink's least checkpoint interval and timeout (`MINIMAL_CHECKPOINT_TIME`).
pub(crate) const MIN_CHECKPOINT_TIME: Duration = Duration::from_millis(10);
/// The least value of durations that must be positive: Flink keeps restart
/// durations in whole milliseconds and requires these to be at least 1; the
/// buffer debloater's target and period are held to the same.
pub(crate) const ONE_MS: Duration = Duration::from_millis(1);
/// Origin of checks that involve several keys: no single source is to blame.
pub(crate) const FINAL_ORIGIN: &str = "the final configuration";

/// One value being applied to one key. Values are TOML values because TOML
/// keeps integers and booleans typed; `--set` text arrives as a TOML string.
pub struct Setting<'a> {
    pub(crate) key: &'a str,
    pub(crate) value: &'a toml::Value,
    pub(crate) origin: &'a str,
}

impl Setting<'_> {
    /// `parsed`, or the error naming the key, the value and the `expected` form.
    pub fn check<T>(&self, parsed: Option<T>, expected: &str) -> Result<T, ConfigError> {
        parsed.ok_or_else(|| ConfigError::InvalidValue {
            key: self.key.to_string(),
            value: match self.value {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            expected: expected.to_string(),
            origin: self.origin.to_string(),
        })
    }

    /// The value as trimmed text, if it is text.
    pub fn text(&self) -> Option<&str> {
        self.value.as_str().map(str::trim)
    }

    /// A number: a non-negative TOML integer through `from_int`, or text
    /// through `parse`; floats, booleans and arrays are never numbers.
    pub fn number<T>(&self, from_int: fn(u64) -> T, parse: fn(&str) -> Option<T>) -> Option<T> {
        match self.value {
            toml::Value::Integer(i) => u64::try_from(*i).ok().map(from_int),
            toml::Value::String(s) => parse(s),
            _ => None,
        }
    }

    /// A boolean: TOML's, or `true` / `false` as text in any case.
    pub fn boolean(&self) -> Option<bool> {
        match (self.value, self.text()) {
            (toml::Value::Boolean(b), _) => Some(*b),
            (_, Some(t)) if t.eq_ignore_ascii_case("true") => Some(true),
            (_, Some(t)) if t.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }

    /// An integer from `min` to `max`.
    pub fn int_in(&self, min: u64, max: u64) -> Result<u64, ConfigError> {
        let parsed = self.number(|n| n, parse_uint);
        let parsed = parsed.filter(|n| (min..=max).contains(n));
        self.check(parsed, &format!("an integer from {min} to {max}"))
    }

    /// An optional count: "unset" clears it, otherwise an integer of at least 1.
    pub fn positive_or_unset(&self) -> Result<Option<u64>, ConfigError> {
        if self.is_unset() {
            return Ok(None);
        }
        let parsed = self.number(|n| n, parse_uint).filter(|n| *n >= 1);
        self.check(parsed, POSITIVE_OR_UNSET).map(Some)
    }

    /// A duration (a bare TOML integer means milliseconds, as in Flink).
    pub fn duration(&self) -> Result<Duration, ConfigError> {
        // A bare TOML integer means milliseconds, as in Flink.
        let parsed = self.number(Duration::from_millis, parse_duration);
        self.check(parsed, DURATION_EXPECTED)
    }

    /// A duration of at least `min`.
    pub fn duration_at_least(&self, min: Duration) -> Result<Duration, ConfigError> {
        let parsed = self.number(Duration::from_millis, parse_duration);
        let expected = format!("{DURATION_EXPECTED}, of at least {}", format_duration(min));
        self.check(parsed.filter(|d| *d >= min), &expected)
    }

    /// Whether the value is `unset`.
    pub fn is_unset(&self) -> bool {
        self.text().is_some_and(|t| t.eq_ignore_ascii_case("unset"))
    }

    /// A finite number (TOML float or integer, or text) that `ok` accepts.
    pub fn float(&self, ok: fn(f64) -> bool, expected: &str) -> Result<f64, ConfigError> {
        let parsed = match self.value {
            toml::Value::Float(f) => Some(*f),
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        self.check(parsed.filter(|f| f.is_finite() && ok(*f)), expected)
    }

    /// `unset`, a path, or a `file:` URI of a local path.
    pub fn directory(&self) -> Result<Option<PathBuf>, ConfigError> {
        if self.is_unset() {
            return Ok(None);
        }
        let path = self.text().and_then(|t| {
            let local = match t.split_once(':') {
                // `file:///tmp/x` and Flink's short `file:/tmp/x`.
                Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => {
                    let rest = rest.strip_prefix("//").unwrap_or(rest);
                    rest.starts_with('/').then_some(rest)?
                }
                // Any other URI scheme names storage weir cannot write to.
                Some((scheme, rest))
                    if rest.starts_with("//")
                        && scheme
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
                {
                    return None
                }
                _ => t,
            };
            (!local.is_empty()).then(|| PathBuf::from(local))
        });
        self.check(path, DIR_EXPECTED).map(Some)
    }
}
