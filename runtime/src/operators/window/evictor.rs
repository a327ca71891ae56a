//! Flink's `Evictor`: removes elements from a window's buffer before and
//! after its window function runs, and the built-ins [`CountEvictor`],
//! [`TimeEvictor`] and [`DeltaEvictor`].
//!
//! With an evictor the window operator keeps every element of a window
//! with its timestamp, whatever the window function (as Flink's
//! `EvictingWindowOperator`; an `aggregate` then folds the remaining
//! elements when the window fires). At a firing the elements, in the order
//! they were added, go through [`Evictor::evict_before`], the window
//! function gets what is left, then [`Evictor::evict_after`] runs and what
//! is left after it is the window's buffer from then on (empty: the window
//! has no contents until its next element).

use std::time::Duration;

use crate::core::duration::millis;
use crate::operators::window::spec::TimeWindow;

/// A buffered element and its timestamp (Flink's `TimestampedValue`):
/// `None` on processing-time windows, whose elements have no event time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimestampedValue<T> {
    /// The element.
    pub value: T,
    /// Its event time (ms), if it has one.
    pub timestamp: Option<i64>,
}

/// What an evictor sees of the operator (Flink's `EvictorContext`).
pub struct EvictorContext<'a> {
    pub(crate) watermark: i64,
    pub(crate) clock: &'a dyn Fn() -> i64,
}

impl EvictorContext<'_> {
    /// The operator's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The current processing time (ms).
    pub fn current_processing_time(&self) -> i64 {
        (self.clock)()
    }
}

/// Removes elements of a firing window (see the [module docs](self)).
/// Remove with `Vec::retain`, `drain` or `remove`; keep the order of the
/// rest.
pub trait Evictor<T>: Clone + Send + Sync + 'static {
    /// Before the window function: what it removes the function does not
    /// see.
    fn evict_before(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        window: &TimeWindow,
        ctx: &EvictorContext<'_>,
    );

    /// After the window function: what it removes later firings do not
    /// see.
    fn evict_after(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        window: &TimeWindow,
        ctx: &EvictorContext<'_>,
    );
}

/// Keeps the last `n` elements of a window, in the order they were added
/// (Flink's `CountEvictor`): before the window function, or after it.
#[derive(Clone, Copy, Debug)]
pub struct CountEvictor {
    max: usize,
    after: bool,
}

impl CountEvictor {
    /// Keeps `n` elements, evicting before the window function (Flink's
    /// `CountEvictor.of(n)`).
    pub fn of(n: usize) -> Self {
        Self {
            max: n,
            after: false,
        }
    }

    /// Keeps `n` elements, evicting after the window function when `after`
    /// (Flink's `CountEvictor.of(n, doEvictAfter)`).
    pub fn of_after(n: usize, after: bool) -> Self {
        Self { max: n, after }
    }

    fn evict<T>(&self, elements: &mut Vec<TimestampedValue<T>>) {
        if elements.len() > self.max {
            let extra = elements.len() - self.max;
            elements.drain(..extra);
        }
    }
}

impl<T> Evictor<T> for CountEvictor {
    fn evict_before(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        _: &TimeWindow,
        _: &EvictorContext<'_>,
    ) {
        if !self.after {
            self.evict(elements);
        }
    }

    fn evict_after(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        _: &TimeWindow,
        _: &EvictorContext<'_>,
    ) {
        if self.after {
            self.evict(elements);
        }
    }
}

/// Keeps the elements within `keep` of the window's newest element
/// (Flink's `TimeEvictor`): removes those at or before `max timestamp -
/// keep`. Elements without timestamps (processing-time windows) are kept.
#[derive(Clone, Copy, Debug)]
pub struct TimeEvictor {
    keep: i64,
    after: bool,
}

impl TimeEvictor {
    /// Keeps the last `keep` of event time, evicting before the window
    /// function (Flink's `TimeEvictor.of(size)`).
    ///
    /// # Panics
    ///
    /// If `keep` is not a whole number of milliseconds.
    pub fn of(keep: Duration) -> Self {
        Self::of_after(keep, false)
    }

    /// The same, evicting after the window function when `after` (Flink's
    /// `TimeEvictor.of(size, doEvictAfter)`).
    ///
    /// # Panics
    ///
    /// If `keep` is not a whole number of milliseconds.
    pub fn of_after(keep: Duration, after: bool) -> Self {
        Self {
            keep: millis("TimeEvictor: kept span", keep),
            after,
        }
    }

    fn evict<T>(&self, elements: &mut Vec<TimestampedValue<T>>) {
        // Flink looks at the first element: without a timestamp, nothing.
        if elements.first().is_none_or(|e| e.timestamp.is_none()) {
            return;
        }
        let newest = elements
            .iter()
            .filter_map(|e| e.timestamp)
            .max()
            .unwrap_or(i64::MIN);
        let cutoff = newest.saturating_sub(self.keep);
        elements.retain(|e| e.timestamp.is_none_or(|t| t > cutoff));
    }
}

impl<T> Evictor<T> for TimeEvictor {
    fn evict_before(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        _: &TimeWindow,
        _: &EvictorContext<'_>,
    ) {
        if !self.after {
            self.evict(elements);
        }
    }

    fn evict_after(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        _: &TimeWindow,
        _: &EvictorContext<'_>,
    ) {
        if self.after {
            self.evict(elements);
        }
    }
}

/// Removes the elements whose delta to the window's last element is at
/// least `threshold` (Flink's `DeltaEvictor`): `delta(element, last)`.
pub struct DeltaEvictor<F> {
    threshold: f64,
    delta: F,
    after: bool,
}

impl<F: Clone> Clone for DeltaEvictor<F> {
    fn clone(&self) -> Self {
        Self {
            threshold: self.threshold,
            delta: self.delta.clone(),
            after: self.after,
        }
    }
}

impl<F> std::fmt::Debug for DeltaEvictor<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaEvictor")
            .field("threshold", &self.threshold)
            .field("after", &self.after)
            .finish()
    }
}

impl<F> DeltaEvictor<F> {
    /// Evicts, before the window function, the elements `e` with
    /// `delta(e, last) >= threshold` (Flink's `DeltaEvictor.of(threshold,
    /// deltaFunction)`).
    pub fn of(threshold: f64, delta: F) -> Self {
        Self {
            threshold,
            delta,
            after: false,
        }
    }

    /// The same, evicting after the window function when `after`.
    pub fn of_after(threshold: f64, delta: F, after: bool) -> Self {
        Self {
            threshold,
            delta,
            after,
        }
    }

    fn evict<T>(&self, elements: &mut Vec<TimestampedValue<T>>)
    where
        F: Fn(&T, &T) -> f64,
    {
        let Some(last) = elements.len().checked_sub(1) else {
            return;
        };
        let mut keep = Vec::with_capacity(elements.len());
        for e in elements.iter() {
            keep.push((self.delta)(&e.value, &elements[last].value) < self.threshold);
        }
        let mut i = 0;
        elements.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }
}

impl<T, F> Evictor<T> for DeltaEvictor<F>
where
    F: Fn(&T, &T) -> f64 + Clone + Send + Sync + 'static,
{
    fn evict_before(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        _: &TimeWindow,
        _: &EvictorContext<'_>,
    ) {
        if !self.after {
            self.evict(elements);
        }
    }

    fn evict_after(
        &self,
        elements: &mut Vec<TimestampedValue<T>>,
        _: &TimeWindow,
        _: &EvictorContext<'_>,
    ) {
        if self.after {
            self.evict(elements);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(ts: &[i64]) -> Vec<TimestampedValue<i64>> {
        ts.iter()
            .map(|&t| TimestampedValue {
                value: t,
                timestamp: Some(t),
            })
            .collect()
    }

    fn values(v: &[TimestampedValue<i64>]) -> Vec<i64> {
        v.iter().map(|e| e.value).collect()
    }

    const W: TimeWindow = TimeWindow { start: 0, end: 100 };

    fn ctx() -> EvictorContext<'static> {
        EvictorContext {
            watermark: 0,
            clock: &|| 0,
        }
    }

    #[test]
    fn count_evictor_keeps_the_last_n_before_or_after() {
        let mut e = stamped(&[5, 1, 9, 3]);
        CountEvictor::of(2).evict_before(&mut e, &W, &ctx());
        assert_eq!(values(&e), vec![9, 3]);
        CountEvictor::of(2).evict_after(&mut e, &W, &ctx());
        assert_eq!(values(&e), vec![9, 3], "evicts before only");
        let mut e = stamped(&[5, 1, 9]);
        let after = CountEvictor::of_after(1, true);
        after.evict_before(&mut e, &W, &ctx());
        assert_eq!(e.len(), 3);
        after.evict_after(&mut e, &W, &ctx());
        assert_eq!(values(&e), vec![9]);
        let mut e = stamped(&[5]);
        CountEvictor::of(0).evict_before(&mut e, &W, &ctx());
        assert!(e.is_empty());
    }

    #[test]
    fn time_evictor_keeps_what_is_newer_than_max_minus_keep() {
        let mut e = stamped(&[10, 3, 7, 8, 1]);
        // Max 10, keep 3: cutoff 7, removes <= 7.
        TimeEvictor::of(Duration::from_millis(3)).evict_before(&mut e, &W, &ctx());
        assert_eq!(values(&e), vec![10, 8]);
        let mut none = vec![TimestampedValue {
            value: 1,
            timestamp: None,
        }];
        TimeEvictor::of(Duration::ZERO).evict_before(&mut none, &W, &ctx());
        assert_eq!(none.len(), 1, "no timestamps: nothing evicted");
    }

    #[test]
    fn delta_evictor_removes_elements_far_from_the_last() {
        let mut e = stamped(&[1, 10, 4, 6, 5]);
        DeltaEvictor::of(2.0, |a: &i64, b: &i64| (a - b).abs() as f64).evict_before(
            &mut e,
            &W,
            &ctx(),
        );
        assert_eq!(values(&e), vec![4, 6, 5]);
    }
}
