//! What an assigner tells the general window operator: the window
//! ([`TimeWindow`]) and the [`WindowSpec`], *fixed* windows (a size, a slide,
//! an offset) or *session* windows (a gap, fixed or per record), on event time
//! (a timestamp extractor) or processing time (the operator's clock).

use std::sync::Arc;

use weir_net::Wire;

use crate::state::timers::TimeDomain;

/// A window: the half-open interval `[start, end)` of milliseconds (Flink's
/// `TimeWindow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeWindow {
    /// First millisecond in the window.
    pub start: i64,
    /// First millisecond after the window.
    pub end: i64,
}

impl TimeWindow {
    /// The window `[start, end)`.
    pub fn new(start: i64, end: i64) -> Self {
        Self { start, end }
    }

    /// The window's last millisecond, `end - 1`: when it fires (Flink's
    /// `maxTimestamp`).
    #[inline]
    pub fn max_timestamp(&self) -> i64 {
        self.end.saturating_sub(1)
    }

    /// True if the two windows overlap or touch (Flink's
    /// `TimeWindow::intersects`, which session windows merge by).
    #[inline]
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window holding both.
    #[inline]
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// Moves to the front of `windows` those that merge with the session
/// `new`: the ones intersecting it, then its growing cover (a key's
/// sessions are disjoint and do not touch, so only `new` can join them).
/// Returns the cover and how many merge.
pub(crate) fn gather_intersecting<E>(
    new: TimeWindow,
    windows: &mut [E],
    window_of: impl Fn(&E) -> TimeWindow,
) -> (TimeWindow, usize) {
    let mut merged = new;
    let mut members = 0;
    loop {
        let mut grew = false;
        let mut i = members;
        while i < windows.len() {
            let w = window_of(&windows[i]);
            if merged.intersects(&w) {
                merged = merged.cover(&w);
                windows.swap(members, i);
                members += 1;
                grew = true;
            }
            i += 1;
        }
        if !grew {
            return (merged, members);
        }
    }
}

impl Wire for TimeWindow {
    fn encoded_len(&self) -> usize {
        16
    }

    fn write(&self, out: &mut [u8]) {
        self.start.write(&mut out[..8]);
        self.end.write(&mut out[8..]);
    }

    fn read(input: &[u8]) -> Result<(Self, usize), weir_net::DecodeError> {
        let ((start, end), used) = <(i64, i64)>::read(input)?;
        Ok((TimeWindow::new(start, end), used))
    }
}

/// A record's event time (ms).
pub type TimestampFn<T> = Arc<dyn Fn(&T) -> i64 + Send + Sync>;

/// A processing-time clock: milliseconds since the epoch (tests inject a
/// manual one).
pub type ProcessingClock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// How a session window's gap is found.
pub(crate) enum Gap<T> {
    /// The same gap (ms) for every record.
    Static(i64),
    /// Per record, by the extractor of a dynamic-gap assigner (named for
    /// errors).
    Dynamic(Arc<dyn Fn(&T) -> i64 + Send + Sync>, &'static str),
}

impl<T> Clone for Gap<T> {
    fn clone(&self) -> Self {
        match self {
            Gap::Static(g) => Gap::Static(*g),
            Gap::Dynamic(f, name) => Gap::Dynamic(f.clone(), name),
        }
    }
}

impl<T> Gap<T> {
    /// The gap (ms) of the session `record` opens.
    ///
    /// # Panics
    ///
    /// If a dynamic gap extractor returns a gap that is not positive
    /// (Flink fails the job likewise).
    #[inline]
    pub(crate) fn of(&self, record: &T) -> i64 {
        match self {
            Gap::Static(g) => *g,
            Gap::Dynamic(f, name) => {
                let gap = f(record);
                assert!(
                    gap > 0,
                    "{name}: the session gap extractor returned {gap} ms for a record; \
                     session gaps must be positive"
                );
                gap
            }
        }
    }
}

/// Which windows hold a record.
pub(crate) enum WindowKind<T> {
    /// Windows of `size` starting every `slide` (tumbling: `slide ==
    /// size`), at `offset` from the epoch.
    Fixed {
        /// Window length (ms).
        size: i64,
        /// Distance between window starts (ms).
        slide: i64,
        /// Shift of the window starts (ms, `0 <= offset < slide`).
        offset: i64,
    },
    /// A record at `t` opens `[t, t + gap)`; windows that intersect merge.
    Session(Gap<T>),
    /// Flink's cumulative windows: within each window of `size` (at
    /// `offset` from the epoch), the windows `[start, start + k * step)`
    /// for `k = 1 ..= size / step`, all starting at the same `start`.
    Cumulate {
        /// Step between window ends (ms).
        step: i64,
        /// Largest window (ms), a multiple of `step`.
        size: i64,
        /// Shift of the window starts (ms, `0 <= offset < size`).
        offset: i64,
    },
    /// The one window a record at `t` already belongs to,
    /// `[t + 1 - size, t + 1)` (see `window::attached`).
    Attached {
        /// Window length (ms).
        size: i64,
    },
}

impl<T> Clone for WindowKind<T> {
    fn clone(&self) -> Self {
        match self {
            WindowKind::Fixed {
                size,
                slide,
                offset,
            } => WindowKind::Fixed {
                size: *size,
                slide: *slide,
                offset: *offset,
            },
            WindowKind::Session(g) => WindowKind::Session(g.clone()),
            WindowKind::Cumulate { step, size, offset } => WindowKind::Cumulate {
                step: *step,
                size: *size,
                offset: *offset,
            },
            WindowKind::Attached { size } => WindowKind::Attached { size: *size },
        }
    }
}

/// What an assigner tells the general window operator: which windows hold
/// a record and by which time they are assigned and fire. Opaque: made by
/// the assigners of this module.
pub struct WindowSpec<T> {
    pub(crate) kind: WindowKind<T>,
    /// Event time: the record's timestamp; processing time: `None`.
    pub(crate) timestamp: Option<TimestampFn<T>>,
    /// Processing time: the clock replacing the system clock, if any.
    pub(crate) clock: Option<ProcessingClock>,
}

impl<T> Clone for WindowSpec<T> {
    fn clone(&self) -> Self {
        Self {
            kind: self.kind.clone(),
            timestamp: self.timestamp.clone(),
            clock: self.clock.clone(),
        }
    }
}

impl<T> WindowSpec<T> {
    /// The time domain the windows are assigned and fired in.
    pub fn domain(&self) -> TimeDomain {
        if self.timestamp.is_some() {
            TimeDomain::EventTime
        } else {
            TimeDomain::ProcessingTime
        }
    }

    /// True for session (merging) windows.
    pub fn is_merging(&self) -> bool {
        matches!(self.kind, WindowKind::Session(_))
    }
}
