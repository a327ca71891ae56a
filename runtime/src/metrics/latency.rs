//! Latency tracking, as Flink's latency markers
//! (`metrics.latency.interval`): every source subtask stamps a
//! [`LatencyMarker`] with the time every `interval`; it travels in band
//! through the job, one channel of each exchange at a time (so it exists
//! once), and every task it reaches records how long it took to get there
//! since the source emitted it: the time the records in front of it spent
//! in buffers, queues and the operators before. A task keeps the last
//! `metrics.latency.history-size` of them per source (Flink's
//! `DescriptiveStatisticsHistogram` over a window) and reports their
//! distribution (an HdrHistogram made at read time).
//!
//! What a histogram is per, `metrics.latency.granularity` as in Flink:
//! `single` (one per receiving subtask, every source together),
//! `operator` (the default: one per source stage) or `subtask` (one per
//! source subtask).
//!
//! A task records a marker when its input gate takes it, which is when
//! every operator chained in the task sees it: the operators of one chain
//! run one record after the other in one call, so Flink's per-operator
//! figures of one chain differ by the nanoseconds of a call. Sources do
//! not record (they emit); nor does a source's own chain.
//!
//! Cost: nothing per record. A source looks at a deadline once per poll;
//! a marker costs one event in one channel, and its record an uncontended
//! lock of its subtask's window, once per interval per source subtask.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use weir_net::LatencyMarker;

use crate::metrics::counters::{epoch, ns_since};

/// `metrics.latency.granularity`: which markers share a histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LatencyGranularity {
    /// One histogram per receiving subtask: every source together.
    Single,
    /// One per source stage (Flink's default).
    #[default]
    Operator,
    /// One per source subtask.
    Subtask,
}

impl LatencyGranularity {
    /// The value as the configuration spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Operator => "operator",
            Self::Subtask => "subtask",
        }
    }
}

impl fmt::Display for LatencyGranularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LatencyGranularity {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s.to_ascii_lowercase().as_str() {
            "single" => Ok(Self::Single),
            "operator" => Ok(Self::Operator),
            "subtask" => Ok(Self::Subtask),
            _ => Err(()),
        }
    }
}

/// Flink's default `metrics.latency.history-size`.
pub const DEFAULT_HISTORY_SIZE: usize = 128;

/// How latency is tracked (`metrics.latency.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyOptions {
    /// Time between two markers of a source subtask; `None`: no markers.
    pub interval: Option<Duration>,
    /// Markers kept per histogram.
    pub history_size: usize,
    /// Which markers share a histogram.
    pub granularity: LatencyGranularity,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        Self {
            interval: None,
            history_size: DEFAULT_HISTORY_SIZE,
            granularity: LatencyGranularity::Operator,
        }
    }
}

/// Which source a histogram is of: the source's stage (`None` with
/// granularity `single`) and subtask (`Some` only with `subtask`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LatencySource {
    /// The source's stage.
    pub stage: Option<u32>,
    /// The source subtask.
    pub subtask: Option<u32>,
}

impl LatencySource {
    fn of(marker: &LatencyMarker, granularity: LatencyGranularity) -> Self {
        match granularity {
            LatencyGranularity::Single => Self {
                stage: None,
                subtask: None,
            },
            LatencyGranularity::Operator => Self {
                stage: Some(marker.source_stage),
                subtask: None,
            },
            LatencyGranularity::Subtask => Self {
                stage: Some(marker.source_stage),
                subtask: Some(marker.source_subtask),
            },
        }
    }
}

/// The distribution of one histogram's window, in milliseconds (Flink's
/// unit for latency) with nanosecond resolution underneath.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyStats {
    /// Markers recorded since the attempt started (not only those kept).
    pub count: u64,
    /// Markers in the window the figures below are of.
    pub samples: usize,
    /// Least, greatest and mean latency in the window.
    pub min: f64,
    /// Greatest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Quantiles: 0.5 (the median), 0.75, 0.9, 0.95, 0.98, 0.99, 0.999.
    pub p50: f64,
    /// 0.75.
    pub p75: f64,
    /// 0.9.
    pub p90: f64,
    /// 0.95.
    pub p95: f64,
    /// 0.98.
    pub p98: f64,
    /// 0.99.
    pub p99: f64,
    /// 0.999.
    pub p999: f64,
}

/// The last markers of one source, oldest overwritten first.
#[derive(Debug, Default)]
struct Window {
    /// Latencies in ns; `next` is where the next one goes once full.
    samples: Vec<u64>,
    next: usize,
    count: u64,
}

impl Window {
    fn record(&mut self, ns: u64, size: usize) {
        self.count += 1;
        if self.samples.len() < size {
            self.samples.push(ns);
        } else {
            self.samples[self.next] = ns;
            self.next = (self.next + 1) % size;
        }
    }

    fn stats(&self) -> Option<LatencyStats> {
        let mut h = Histogram::<u64>::new(3).ok()?;
        for &ns in &self.samples {
            // Auto-resizing: a value out of range cannot happen.
            h.record(ns.max(1)).ok()?;
        }
        if h.is_empty() {
            return None;
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        Some(LatencyStats {
            count: self.count,
            samples: self.samples.len(),
            min: ms(h.min()),
            max: ms(h.max()),
            mean: h.mean() / 1e6,
            stddev: h.stdev() / 1e6,
            p50: ms(h.value_at_quantile(0.5)),
            p75: ms(h.value_at_quantile(0.75)),
            p90: ms(h.value_at_quantile(0.9)),
            p95: ms(h.value_at_quantile(0.95)),
            p98: ms(h.value_at_quantile(0.98)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
        })
    }
}

/// One subtask's latency histograms, one window per source.
#[derive(Debug)]
pub(crate) struct LatencyWindows {
    history_size: usize,
    granularity: LatencyGranularity,
    windows: BTreeMap<LatencySource, Window>,
}

impl LatencyWindows {
    pub(crate) fn new(options: &LatencyOptions) -> Self {
        Self {
            history_size: options.history_size.max(1),
            granularity: options.granularity,
            windows: BTreeMap::new(),
        }
    }

    /// `marker` arrived `at` ns on the metrics clock.
    pub(crate) fn record(&mut self, marker: &LatencyMarker, at: u64) {
        let source = LatencySource::of(marker, self.granularity);
        let ns = at.saturating_sub(marker.marked_ns);
        self.windows
            .entry(source)
            .or_default()
            .record(ns, self.history_size);
    }

    /// Every kept marker latency (ns) of every source, in no particular
    /// order: what a report merges across subtasks.
    pub(crate) fn samples_ns(&self) -> Vec<u64> {
        self.windows
            .values()
            .flat_map(|w| w.samples.iter().copied())
            .collect()
    }

    /// Each source's distribution, in source order.
    pub(crate) fn stats(&self) -> Vec<(LatencySource, LatencyStats)> {
        self.windows
            .iter()
            .filter_map(|(s, w)| Some((*s, w.stats()?)))
            .collect()
    }
}

/// The source side: when a source subtask's next marker is due, and what
/// it says.
#[derive(Debug)]
pub(crate) struct MarkerEmitter {
    interval: Duration,
    next: Instant,
    stage: u32,
    subtask: u32,
}

impl MarkerEmitter {
    /// Markers of `stage`'s subtask `subtask` every `interval`, the first
    /// one `interval` after `now`.
    pub(crate) fn new(interval: Duration, stage: usize, subtask: usize, now: Instant) -> Self {
        Self {
            interval,
            next: now + interval,
            stage: stage as u32,
            subtask: subtask as u32,
        }
    }

    /// The marker due at `now`, if one is (and schedules the next).
    #[inline]
    pub(crate) fn due(&mut self, now: Instant) -> Option<LatencyMarker> {
        if now < self.next {
            return None;
        }
        // A late poll skips the markers it missed rather than sending a
        // burst.
        self.next = now + self.interval;
        Some(LatencyMarker {
            marked_ns: now_ns(),
            source_stage: self.stage,
            source_subtask: self.subtask,
        })
    }

    /// When the next marker is due.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }
}

/// Now, in ns on the metrics clock (what markers are stamped with).
#[inline]
pub(crate) fn now_ns() -> u64 {
    ns_since(epoch(), Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(stage: u32, subtask: u32, marked_ns: u64) -> LatencyMarker {
        LatencyMarker {
            marked_ns,
            source_stage: stage,
            source_subtask: subtask,
        }
    }

    #[test]
    fn a_window_keeps_the_last_markers_and_counts_all() {
        let mut w = LatencyWindows::new(&LatencyOptions {
            history_size: 4,
            ..Default::default()
        });
        // Latencies 1..=10 ms; the window keeps 7..=10.
        for i in 1..=10u64 {
            w.record(&marker(0, 0, 1_000), 1_000 + i * 1_000_000);
        }
        let stats = w.stats();
        assert_eq!(stats.len(), 1);
        let (source, s) = stats[0];
        assert_eq!(
            source,
            LatencySource {
                stage: Some(0),
                subtask: None
            }
        );
        assert_eq!((s.count, s.samples), (10, 4));
        let close = |a: f64, b: f64| (a - b).abs() < b * 0.002;
        assert!(close(s.min, 7.0), "{s:?}");
        assert!(close(s.max, 10.0), "{s:?}");
        assert!(close(s.mean, 8.5), "{s:?}");
        assert!(close(s.p50, 8.0), "{s:?}");
        assert!(close(s.p99, 10.0), "{s:?}");
    }

    #[test]
    fn granularity_decides_what_shares_a_histogram() {
        let markers = [marker(0, 0, 0), marker(0, 1, 0), marker(2, 0, 0)];
        let count = |granularity| {
            let mut w = LatencyWindows::new(&LatencyOptions {
                granularity,
                ..Default::default()
            });
            for m in &markers {
                w.record(m, 5);
            }
            w.stats()
                .iter()
                .map(|(s, st)| (s.stage, s.subtask, st.count))
                .collect::<Vec<_>>()
        };
        assert_eq!(count(LatencyGranularity::Single), [(None, None, 3)]);
        assert_eq!(
            count(LatencyGranularity::Operator),
            [(Some(0), None, 2), (Some(2), None, 1)]
        );
        assert_eq!(
            count(LatencyGranularity::Subtask),
            [
                (Some(0), Some(0), 1),
                (Some(0), Some(1), 1),
                (Some(2), Some(0), 1)
            ]
        );
    }

    #[test]
    fn a_marker_from_the_future_counts_as_no_latency() {
        let mut w = LatencyWindows::new(&LatencyOptions::default());
        w.record(&marker(0, 0, 100), 50);
        assert_eq!(w.stats()[0].1.max, 1e-6);
    }

    #[test]
    fn the_emitter_is_due_once_per_interval_and_skips_missed_ones() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut e = MarkerEmitter::new(ms(10), 3, 1, t0);
        assert!(e.due(t0).is_none());
        assert!(e.due(t0 + ms(9)).is_none());
        let m = e.due(t0 + ms(10)).expect("due");
        assert_eq!((m.source_stage, m.source_subtask), (3, 1));
        assert!(e.due(t0 + ms(15)).is_none());
        // Late by several intervals: one marker, the next an interval on.
        assert!(e.due(t0 + ms(100)).is_some());
        assert_eq!(e.next(), t0 + ms(110));
        assert!(e.due(t0 + ms(105)).is_none());
    }

    #[test]
    fn granularity_parses_as_flink_spells_it() {
        for g in [
            LatencyGranularity::Single,
            LatencyGranularity::Operator,
            LatencyGranularity::Subtask,
        ] {
            assert_eq!(g.as_str().parse(), Ok(g));
            assert_eq!(g.as_str().to_uppercase().parse(), Ok(g));
        }
        assert!("per-core".parse::<LatencyGranularity>().is_err());
    }
}
