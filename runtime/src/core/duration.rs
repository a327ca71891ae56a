//! Lengths of time in the job API, and their one conversion to the
//! operators' milliseconds.
//!
//! Every length of time a job is built with (a window's size and slide, a
//! session gap, allowed lateness, a trigger's interval, an evictor's span,
//! a watermark bound, a TTL) is a [`std::time::Duration`]. Every instant
//! (an event time, a timer, a watermark, `ctx.timestamp()`) is an `i64` of
//! milliseconds since the epoch, Flink's `long`. The lengths that Flink
//! lets be negative, an interval join's bounds and a window's offset, are
//! an [`Offset`]: a duration before or after a point in time.
//!
//! Operators keep lengths as `i64` milliseconds, the unit of the instants
//! they are added to. `millis`, `positive_millis` and `Offset::millis`
//! (crate-internal) convert them when the job is built and panic, naming
//! the parameter, on what the conversion would lose (a fraction of a
//! millisecond, a length beyond `i64` milliseconds) rather than truncating.

use std::fmt;
use std::time::Duration;

/// A signed length of time: a [`Duration`] before or after a point in
/// time, where Flink takes a `java.time.Duration` that may be negative.
///
/// An interval join's bounds are offsets of the right record's timestamp
/// from the left's (Flink's `between(Duration.ofMillis(-5),
/// Duration.ofMillis(5))` is
/// `between(Offset::before(Duration::from_millis(5)), Duration::from_millis(5))`);
/// a window offset shifts the window starts from the epoch (days from
/// midnight in UTC+8 are `with_offset(Offset::before(Duration::from_secs(8 * 3600)))`,
/// Flink's `Duration.ofHours(-8)`). A plain [`Duration`] converts to the
/// offset after.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Offset {
    span: Duration,
    /// Never set with a zero span, so that both zeros are equal.
    before: bool,
}

impl Offset {
    /// No offset.
    pub const ZERO: Offset = Offset {
        span: Duration::ZERO,
        before: false,
    };

    /// `span` before the point in time (a negative offset).
    pub fn before(span: Duration) -> Self {
        Self {
            span,
            before: !span.is_zero(),
        }
    }

    /// `span` after the point in time (a positive offset, or zero).
    pub fn after(span: Duration) -> Self {
        Self {
            span,
            before: false,
        }
    }

    /// The offset in signed milliseconds.
    ///
    /// # Panics
    ///
    /// If it is not a whole number of milliseconds or beyond `i64`
    /// milliseconds; the message names `what` (e.g. "interval join: lower
    /// bound") and the offset.
    pub(crate) fn millis(self, what: &str) -> i64 {
        match whole_millis(self.span) {
            Ok(ms) if self.before => -ms,
            Ok(ms) => ms,
            Err(why) => panic!("{what} {why}, got {self:?}"),
        }
    }
}

impl From<Duration> for Offset {
    /// The offset `span` after.
    fn from(span: Duration) -> Self {
        Self::after(span)
    }
}

impl fmt::Debug for Offset {
    /// `-5ms` before, `5ms` after.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.before {
            f.write_str("-")?;
        }
        fmt::Debug::fmt(&self.span, f)
    }
}

/// `d` in the operators' `i64` milliseconds.
///
/// # Panics
///
/// If `d` is not a whole number of milliseconds or beyond `i64`
/// milliseconds; the message names `what` (e.g. "TimeEvictor: kept span")
/// and `d`.
pub(crate) fn millis(what: &str, d: Duration) -> i64 {
    whole_millis(d).unwrap_or_else(|why| panic!("{what} {why}, got {d:?}"))
}

/// [`millis`] of a length that must not be zero (a window's size, a gap).
///
/// # Panics
///
/// As [`millis`], and if `d` is zero.
pub(crate) fn positive_millis(what: &str, d: Duration) -> i64 {
    assert!(!d.is_zero(), "{what} must be positive, got {d:?}");
    millis(what, d)
}

/// `ms` milliseconds: tests compute lengths as `i64`, like the instants
/// they check.
#[cfg(test)]
pub(crate) fn ms(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).expect("a length is not negative"))
}

/// The one conversion: `d` in whole milliseconds, or what is wrong with it.
fn whole_millis(d: Duration) -> Result<i64, &'static str> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err("must be a whole number of milliseconds");
    }
    i64::try_from(d.as_millis()).map_err(|_| "is too long for i64 milliseconds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_milliseconds_convert_exactly() {
        assert_eq!(millis("x", Duration::ZERO), 0);
        assert_eq!(millis("x", Duration::from_secs(3)), 3_000);
        assert_eq!(millis("x", Duration::from_micros(7_000)), 7);
        let max = Duration::from_millis(i64::MAX as u64);
        assert_eq!(millis("x", max), i64::MAX);
        assert_eq!(positive_millis("x", Duration::from_millis(1)), 1);
    }

    #[test]
    #[should_panic(
        expected = "TumblingEventTimeWindows: window size must be a whole number of milliseconds, got 1.5ms"
    )]
    fn a_fraction_of_a_millisecond_panics_naming_the_parameter() {
        positive_millis(
            "TumblingEventTimeWindows: window size",
            Duration::from_micros(1_500),
        );
    }

    #[test]
    #[should_panic(
        expected = "TimeEvictor: kept span must be a whole number of milliseconds, got 1ns"
    )]
    fn a_nanosecond_is_not_rounded_to_zero() {
        millis("TimeEvictor: kept span", Duration::from_nanos(1));
    }

    #[test]
    #[should_panic(expected = "allowed lateness is too long for i64 milliseconds, got")]
    fn a_length_beyond_i64_milliseconds_panics() {
        millis("allowed lateness", Duration::from_secs(u64::MAX));
    }

    #[test]
    #[should_panic(expected = "EventTimeSessionWindows: session gap must be positive, got 0ns")]
    fn zero_is_not_positive() {
        positive_millis("EventTimeSessionWindows: session gap", Duration::ZERO);
    }

    #[test]
    fn offsets_are_signed_milliseconds() {
        let five = Duration::from_millis(5);
        assert_eq!(Offset::before(five).millis("x"), -5);
        assert_eq!(Offset::after(five).millis("x"), 5);
        assert_eq!(Offset::from(five), Offset::after(five));
        assert_eq!(Offset::before(Duration::ZERO), Offset::ZERO);
        assert_eq!(Offset::ZERO.millis("x"), 0);
        let max = Duration::from_millis(i64::MAX as u64);
        assert_eq!(Offset::before(max).millis("x"), -i64::MAX);
        assert_eq!(format!("{:?}", Offset::before(five)), "-5ms");
    }

    #[test]
    #[should_panic(
        expected = "interval join: lower bound must be a whole number of milliseconds, got -2.5ms"
    )]
    fn an_offset_with_a_fraction_of_a_millisecond_panics_with_its_sign() {
        Offset::before(Duration::from_micros(2_500)).millis("interval join: lower bound");
    }
}
