//! Windows a record already belongs to (Flink's window-attached windowing):
//! each record carries the end of its one window, all windows have one
//! size, and the record's event time is the window's last millisecond. The
//! rows of a window aggregation are such records, so the aggregation
//! cascaded after it (its rows grouped again by their window) fires each
//! window once, when the watermark passes its end, as the first one did.

use std::sync::Arc;
use std::time::Duration;

use weir_net::Wire;
use weir_state::StateKey;

use crate::core::duration::positive_millis;
use crate::operators::late_data::LateOutput;
use crate::operators::window::assign::{fast_incremental, Windowing};
use crate::operators::window::contents::MergeFold;
use crate::operators::window::event_time::{WindowAssigner, WindowStarts};
use crate::operators::window::operator::WindowOperator;
use crate::operators::window::spec::{WindowKind, WindowSpec};
use crate::operators::window::triggers::EventTimeTrigger;

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

impl<T, EF> Windowing<T> for AttachedEventTimeWindows<EF>
where
    T: Clone + 'static,
    EF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    type DefaultTrigger = EventTimeTrigger;

    type Incremental<K, W>
        = WindowOperator<K, W, Self>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire;

    fn incremental<K, W>(
        &self,
        fold: W,
        lateness: Duration,
        late: Option<LateOutput<T>>,
    ) -> Self::Incremental<K, W>
    where
        K: StateKey + Wire + 'static,
        W: MergeFold<In = T>,
        W::Acc: Wire,
    {
        fast_incremental(self.clone(), fold, lateness, late)
    }

    fn spec(&self) -> WindowSpec<T> {
        let end = self.end.clone();
        WindowSpec {
            kind: WindowKind::Attached { size: self.size },
            timestamp: Some(Arc::new(move |r: &T| end(r).saturating_sub(1))),
            clock: None,
        }
    }

    fn default_trigger(&self) -> EventTimeTrigger {
        EventTimeTrigger
    }
}
