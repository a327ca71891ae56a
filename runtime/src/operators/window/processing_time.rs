//! Processing-time window assigners: Flink's
//! `TumblingProcessingTimeWindows`, `SlidingProcessingTimeWindows`,
//! `ProcessingTimeSessionWindows` and `DynamicProcessingTimeSessionWindows`.
//! A record belongs to the windows of the time the operator processes it
//! at, by its clock (the system clock, or one injected with `with_clock`
//! for tests); windows fire on processing-time timers once the clock
//! reaches their end, and those still open fire at the end of the input
//! (see [`general`](super::general)).

use std::sync::Arc;
use std::time::Duration;

use crate::core::duration::{positive_millis, Offset};

use crate::operators::window::assign::general_windowing;
use crate::operators::window::spec::{Gap, ProcessingClock, WindowKind, WindowSpec};

/// The processing-time clock of an assigner, printed for `Debug`.
#[derive(Clone, Default)]
struct Clock(Option<ProcessingClock>);

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "injected"
        } else {
            "system"
        })
    }
}

/// Flink's `TumblingProcessingTimeWindows`: fixed-size, non-overlapping
/// windows of the operator's processing time (wall-clock ms). A record
/// belongs to the window holding the time it is processed at; the window
/// fires when the clock passes its end - 1, and at the end of the input.
#[derive(Clone, Debug)]
pub struct TumblingProcessingTimeWindows {
    size: i64,
    offset: i64,
    clock: Clock,
}

impl TumblingProcessingTimeWindows {
    /// Windows of `size` aligned to the epoch.
    ///
    /// # Panics
    ///
    /// If `size` is zero or not a whole number of milliseconds.
    pub fn of(size: Duration) -> Self {
        Self {
            size: positive_millis("TumblingProcessingTimeWindows: window size", size),
            offset: 0,
            clock: Clock::default(),
        }
    }

    /// The same windows shifted by `offset` (taken modulo the size).
    ///
    /// # Panics
    ///
    /// If `offset` is not a whole number of milliseconds.
    pub fn with_offset(mut self, offset: impl Into<Offset>) -> Self {
        let offset = offset
            .into()
            .millis("TumblingProcessingTimeWindows: window offset");
        self.offset = offset.rem_euclid(self.size);
        self
    }

    /// The same windows on `clock` (ms) instead of the system clock: for
    /// tests that drive time by hand.
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.clock = Clock(Some(Arc::new(clock)));
        self
    }

    fn spec_of<T>(&self) -> WindowSpec<T> {
        WindowSpec {
            kind: WindowKind::Fixed {
                size: self.size,
                slide: self.size,
                offset: self.offset,
            },
            timestamp: None,
            clock: self.clock.0.clone(),
        }
    }
}

general_windowing!([T] TumblingProcessingTimeWindows, T, crate::operators::window::triggers::ProcessingTimeTrigger, [T: 'static,]);

/// Flink's `SlidingProcessingTimeWindows`: windows of `size` starting every
/// `slide` of processing time.
#[derive(Clone, Debug)]
pub struct SlidingProcessingTimeWindows {
    size: i64,
    slide: i64,
    offset: i64,
    clock: Clock,
}

impl SlidingProcessingTimeWindows {
    /// Windows of `size` starting every `slide`, aligned to the epoch.
    ///
    /// # Panics
    ///
    /// If the size or the slide is zero or not a whole number of
    /// milliseconds.
    pub fn of(size: Duration, slide: Duration) -> Self {
        Self {
            size: positive_millis("SlidingProcessingTimeWindows: window size", size),
            slide: positive_millis("SlidingProcessingTimeWindows: window slide", slide),
            offset: 0,
            clock: Clock::default(),
        }
    }

    /// The same windows shifted by `offset` (taken modulo the slide).
    ///
    /// # Panics
    ///
    /// If `offset` is not a whole number of milliseconds.
    pub fn with_offset(mut self, offset: impl Into<Offset>) -> Self {
        let offset = offset
            .into()
            .millis("SlidingProcessingTimeWindows: window offset");
        self.offset = offset.rem_euclid(self.slide);
        self
    }

    /// The same windows on `clock` (ms) instead of the system clock.
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.clock = Clock(Some(Arc::new(clock)));
        self
    }

    fn spec_of<T>(&self) -> WindowSpec<T> {
        WindowSpec {
            kind: WindowKind::Fixed {
                size: self.size,
                slide: self.slide,
                offset: self.offset,
            },
            timestamp: None,
            clock: self.clock.0.clone(),
        }
    }
}

general_windowing!([T] SlidingProcessingTimeWindows, T, crate::operators::window::triggers::ProcessingTimeTrigger, [T: 'static,]);

/// Flink's `ProcessingTimeSessionWindows::withGap`: per key, a record
/// processed at `t` opens `[t, t + gap)` and intersecting sessions merge;
/// a session fires when the clock passes its end - 1 (a gap without
/// records), and at the end of the input.
#[derive(Clone, Debug)]
pub struct ProcessingTimeSessionWindows {
    gap: i64,
    clock: Clock,
}

impl ProcessingTimeSessionWindows {
    /// Sessions closing after `gap` of processing time without records.
    ///
    /// # Panics
    ///
    /// If `gap` is zero or not a whole number of milliseconds.
    pub fn with_gap(gap: Duration) -> Self {
        Self {
            gap: positive_millis("ProcessingTimeSessionWindows: session gap", gap),
            clock: Clock::default(),
        }
    }

    /// Flink's `ProcessingTimeSessionWindows::withDynamicGap`: each
    /// record's gap is `gap(record)` (ms; must be positive).
    pub fn with_dynamic_gap<GF>(gap: GF) -> DynamicProcessingTimeSessionWindows<GF> {
        DynamicProcessingTimeSessionWindows {
            gap,
            clock: Clock::default(),
        }
    }

    /// The same windows on `clock` (ms) instead of the system clock.
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.clock = Clock(Some(Arc::new(clock)));
        self
    }

    fn spec_of<T>(&self) -> WindowSpec<T> {
        WindowSpec {
            kind: WindowKind::Session(Gap::Static(self.gap)),
            timestamp: None,
            clock: self.clock.0.clone(),
        }
    }
}

general_windowing!([T] ProcessingTimeSessionWindows, T, crate::operators::window::triggers::ProcessingTimeTrigger, [T: 'static,]);

/// Flink's `DynamicProcessingTimeSessionWindows`: processing-time sessions
/// whose gap each record gives.
#[derive(Clone, Debug)]
pub struct DynamicProcessingTimeSessionWindows<GF> {
    gap: GF,
    clock: Clock,
}

impl<GF> DynamicProcessingTimeSessionWindows<GF> {
    /// The same windows on `clock` (ms) instead of the system clock.
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.clock = Clock(Some(Arc::new(clock)));
        self
    }

    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        GF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        WindowSpec {
            kind: WindowKind::Session(Gap::Dynamic(
                Arc::new(self.gap.clone()),
                "DynamicProcessingTimeSessionWindows",
            )),
            timestamp: None,
            clock: self.clock.0.clone(),
        }
    }
}

general_windowing!([T, GF] DynamicProcessingTimeSessionWindows<GF>, T, crate::operators::window::triggers::ProcessingTimeTrigger, [
    T: 'static,
    GF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
]);
