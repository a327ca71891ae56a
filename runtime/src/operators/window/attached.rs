//! Windows a record already belongs to (Flink's window-attached windowing):
//! each record carries the end of its one window, all windows have one
//! size, and the record's event time is the window's last millisecond. The
//! rows of a window aggregation are such records, so the aggregation
//! cascaded after it (its rows grouped again by their window) fires each
//! window once, when the watermark passes its end, as the first one did.

use std::sync::Arc;
use std::time::Duration;

use crate::core::duration::positive_millis;
use crate::operators::window::assign::fast_windowing;
use crate::operators::window::event_time::{WindowAssigner, WindowStarts};
use crate::operators::window::spec::{WindowKind, WindowSpec};

/// Windows of `size` given by each record's window end (`end`): the record
/// at `end(r)` is in `[end(r) - size, end(r))` alone, at event time
/// `end(r) - 1`.
#[derive(Clone, Debug)]
pub struct AttachedEventTimeWindows<EF> {
    size: i64,
    end: EF,
}

impl<EF> AttachedEventTimeWindows<EF> {
    /// Windows of `size`, each record's ending at `end(record)`.
    ///
    /// # Panics
    ///
    /// If `size` is zero or not a whole number of milliseconds.
    pub fn of(size: Duration, end: EF) -> Self {
        Self {
            size: positive_millis("AttachedEventTimeWindows: window size", size),
            end,
        }
    }
}

impl<T, EF> WindowAssigner<T> for AttachedEventTimeWindows<EF>
where
    EF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    #[inline]
    fn timestamp(&self, record: &T) -> i64 {
        (self.end)(record).saturating_sub(1)
    }

    fn size(&self) -> i64 {
        self.size
    }

    #[inline]
    fn window_starts(&self, ts: i64) -> WindowStarts {
        WindowStarts {
            next: ts.saturating_add(1).saturating_sub(self.size),
            left: 1,
            step: self.size,
        }
    }
}

impl<EF> AttachedEventTimeWindows<EF> {
    fn spec_of<T>(&self) -> WindowSpec<T>
    where
        EF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    {
        let end = self.end.clone();
        WindowSpec {
            kind: WindowKind::Attached { size: self.size },
            timestamp: Some(Arc::new(move |r: &T| end(r).saturating_sub(1))),
            clock: None,
        }
    }
}

fast_windowing!(AttachedEventTimeWindows, false);
