//! Flink's tumbling and sliding event-time window assigners, and where
//! the slices of overlapping sliding windows lie ([`Slicing`]).

use std::time::Duration;

use crate::core::duration::{positive_millis, Offset};

/// State name of a window operator's accumulators in checkpoints.
pub const WINDOW_CONTENTS_STATE: &str = "_window_contents";

/// Decides which event-time windows hold a record (Flink's
/// `WindowAssigner` for time windows).
pub trait WindowAssigner<T>: Clone + Send + Sync + 'static {
    /// The record's event time (ms).
    fn timestamp(&self, record: &T) -> i64;

    /// The windows' size (ms): window `start` is `[start, start + size)`.
    fn size(&self) -> i64;

    /// The starts of the windows holding timestamp `ts`.
    fn window_starts(&self, ts: i64) -> WindowStarts;

    /// [`window_starts`](Self::window_starts) of `ts` and the timestamps
    /// `lo..hi` (holding `ts`) that have the very same windows, so that
    /// the operator assigns consecutive records of one window without
    /// dividing again. By default only `ts` itself.
    #[inline]
    fn window_starts_range(&self, ts: i64) -> (WindowStarts, i64, i64) {
        (self.window_starts(ts), ts, ts.saturating_add(1))
    }

    /// The slices the windows can be cut into, when they overlap
    /// (`window::slices`): none by default.
    fn slicing(&self) -> Option<Slicing> {
        None
    }
}

/// The starts of the windows holding a timestamp, latest first.
#[derive(Clone, Copy, Debug)]
pub struct WindowStarts {
    pub(crate) next: i64,
    pub(crate) left: u32,
    pub(crate) step: i64,
}

impl Iterator for WindowStarts {
    type Item = i64;

    #[inline]
    fn next(&mut self) -> Option<i64> {
        if self.left == 0 {
            return None;
        }
        let start = self.next;
        self.left -= 1;
        self.next = self.next.wrapping_sub(self.step);
        Some(start)
    }
}

/// The start of the window of `size` and `offset` holding `ts`.
#[inline]
pub(crate) fn start_with_offset(ts: i64, offset: i64, size: i64) -> i64 {
    ts - (ts - offset).rem_euclid(size)
}

/// Flink's `TumblingEventTimeWindows`: fixed-size, non-overlapping
/// event-time windows, with the record timestamp extractor.
#[derive(Clone, Debug)]
pub struct TumblingEventTimeWindows<TF> {
    pub(crate) size: i64,
    pub(crate) offset: i64,
    pub(crate) timestamp: TF,
}

impl<TF> TumblingEventTimeWindows<TF> {
    /// Windows of `size` aligned to the epoch; `timestamp` gives a
    /// record's event time (ms).
    ///
    /// # Panics
    ///
    /// If `size` is zero or not a whole number of milliseconds.
    pub fn of(size: Duration, timestamp: TF) -> Self {
        Self {
            size: positive_millis("TumblingEventTimeWindows: window size", size),
            offset: 0,
            timestamp,
        }
    }

    /// The same windows shifted by `offset`, taken modulo the size: daily
    /// windows from midnight in UTC+8 are
    /// `with_offset(Offset::before(Duration::from_secs(8 * 3600)))`.
    ///
    /// # Panics
    ///
    /// If `offset` is not a whole number of milliseconds.
    pub fn with_offset(mut self, offset: impl Into<Offset>) -> Self {
        let offset = offset
            .into()
            .millis("TumblingEventTimeWindows: window offset");
        self.offset = offset.rem_euclid(self.size);
        self
    }

    /// The start of the window holding timestamp `ts`.
    #[inline]
    pub fn window_start(&self, ts: i64) -> i64 {
        start_with_offset(ts, self.offset, self.size)
    }
}

impl<T, TF> WindowAssigner<T> for TumblingEventTimeWindows<TF>
where
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    #[inline]
    fn timestamp(&self, record: &T) -> i64 {
        (self.timestamp)(record)
    }

    fn size(&self) -> i64 {
        self.size
    }

    #[inline]
    fn window_starts(&self, ts: i64) -> WindowStarts {
        WindowStarts {
            next: self.window_start(ts),
            left: 1,
            step: self.size,
        }
    }

    #[inline]
    fn window_starts_range(&self, ts: i64) -> (WindowStarts, i64, i64) {
        let starts = self.window_starts(ts);
        (starts, starts.next, starts.next.saturating_add(self.size))
    }
}

/// Flink's `SlidingEventTimeWindows`: windows of `size` starting every
/// `slide`, so a record is in `size / slide` of them (rounded up).
#[derive(Clone, Debug)]
pub struct SlidingEventTimeWindows<TF> {
    pub(crate) size: i64,
    pub(crate) slide: i64,
    pub(crate) offset: i64,
    pub(crate) timestamp: TF,
}

impl<TF> SlidingEventTimeWindows<TF> {
    /// Windows of `size` starting every `slide`, aligned to the epoch;
    /// `timestamp` gives a record's event time (ms).
    ///
    /// # Panics
    ///
    /// If the size or the slide is zero or not a whole number of
    /// milliseconds.
    pub fn of(size: Duration, slide: Duration, timestamp: TF) -> Self {
        Self {
            size: positive_millis("SlidingEventTimeWindows: window size", size),
            slide: positive_millis("SlidingEventTimeWindows: window slide", slide),
            offset: 0,
            timestamp,
        }
    }

    /// The same windows shifted by `offset`, taken modulo the slide.
    ///
    /// # Panics
    ///
    /// If `offset` is not a whole number of milliseconds.
    pub fn with_offset(mut self, offset: impl Into<Offset>) -> Self {
        let offset = offset
            .into()
            .millis("SlidingEventTimeWindows: window offset");
        self.offset = offset.rem_euclid(self.slide);
        self
    }
}

impl<T, TF> WindowAssigner<T> for SlidingEventTimeWindows<TF>
where
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    #[inline]
    fn timestamp(&self, record: &T) -> i64 {
        (self.timestamp)(record)
    }

    fn size(&self) -> i64 {
        self.size
    }

    #[inline]
    fn window_starts(&self, ts: i64) -> WindowStarts {
        let last = start_with_offset(ts, self.offset, self.slide);
        // Windows starting at last, last - slide, ... while start > ts - size.
        let span = last - (ts - self.size);
        let count = if span > 0 {
            (span - 1) / self.slide + 1
        } else {
            0
        };
        WindowStarts {
            next: last,
            left: u32::try_from(count).unwrap_or(u32::MAX),
            step: self.slide,
        }
    }

    #[inline]
    fn window_starts_range(&self, ts: i64) -> (WindowStarts, i64, i64) {
        // The same windows hold the timestamps from the latest start (and
        // past the end of the window before the oldest) up to the next
        // start or the oldest window's end, whichever comes first.
        let starts = self.window_starts(ts);
        if starts.left == 0 {
            return (starts, ts, ts.saturating_add(1));
        }
        let last = starts.next;
        let oldest = last.saturating_sub(i64::from(starts.left - 1).saturating_mul(self.slide));
        let lo = last.max(oldest.saturating_sub(self.slide).saturating_add(self.size));
        let hi = last
            .saturating_add(self.slide)
            .min(oldest.saturating_add(self.size));
        (starts, lo, hi)
    }

    fn slicing(&self) -> Option<Slicing> {
        Slicing::of(self.size, self.slide, self.offset)
    }
}

/// Where the slices of sliding windows lie (`window::slices`): windows
/// of `size` starting every `slide` at `offset`, cut into slices of
/// `gcd(size, slide)`, aligned like the windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slicing {
    pub(crate) size: i64,
    pub(crate) slide: i64,
    /// The windows' offset, modulo the slide.
    pub(crate) offset: i64,
    pub(crate) slice: i64,
}

impl Slicing {
    /// The slices of windows of `size` every `slide` from `offset`, if
    /// slicing saves folds: windows that overlap (`size > slide`).
    pub fn of(size: i64, slide: i64, offset: i64) -> Option<Self> {
        if size <= slide || slide <= 0 {
            return None;
        }
        let (mut a, mut b) = (size, slide);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        Some(Self {
            size,
            slide,
            offset: offset.rem_euclid(slide),
            slice: a,
        })
    }

    /// The slices' length.
    pub fn slice(&self) -> i64 {
        self.slice
    }

    /// The windows' size.
    pub fn size(&self) -> i64 {
        self.size
    }

    /// The start of the slice holding timestamp `ts`.
    #[inline]
    pub fn slice_start(&self, ts: i64) -> i64 {
        start_with_offset(ts, self.offset.rem_euclid(self.slice), self.slice)
    }

    /// The latest window starting at or before `t`.
    #[inline]
    fn window_at_or_before(&self, t: i64) -> i64 {
        start_with_offset(t, self.offset, self.slide)
    }

    /// The first and the last window holding slice `start` (every slice
    /// has some: the windows overlap).
    #[inline]
    pub fn windows_of(&self, start: i64) -> (i64, i64) {
        let last = self.window_at_or_before(start);
        let first = self
            .window_at_or_before(start.saturating_sub(self.size))
            .saturating_add(self.slide);
        (first, last)
    }

    /// The first window that had not fired once every window whose last
    /// timestamp is at or below `fired_to` did.
    pub(crate) fn first_unfired(&self, fired_to: i64) -> i64 {
        if fired_to == i64::MIN {
            return i64::MIN;
        }
        self.window_at_or_before(fired_to.saturating_sub(self.size - 1))
            .saturating_add(self.slide)
    }
}
