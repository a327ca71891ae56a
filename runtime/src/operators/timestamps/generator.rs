//! Watermark generators (Flink's `WatermarkGenerator`): what decides a
//! stream's watermarks from its records and from the passing of time,
//! the [`WatermarkOutput`] they emit into, and the built-in ones.
//!
//! A generator sees every record with its timestamp
//! ([`WatermarkGenerator::on_event`]) and is asked every
//! `pipeline.auto-watermark-interval` ([`WatermarkGenerator::on_periodic_emit`]).
//! A *periodic* generator (the built-in [`BoundedOutOfOrderness`]) only
//! remembers in `on_event` and emits in `on_periodic_emit`; a *punctuated*
//! one emits in `on_event` (on marker records, say), and that watermark
//! goes out right behind the record that caused it: per-record watermarks.
//! [`WatermarksWithIdleness`] wraps any generator and marks the stream idle
//! when no record came for a while.
//!
//! A job gives each source subtask its own generator through a
//! [`WatermarkGeneratorSupplier`]: the built-in generators are their own
//! suppliers (each subtask gets a fresh copy), and
//! [`GeneratorFactory`] makes one from a closure
//! ([`WatermarkStrategy::for_generator`](crate::operators::timestamps::strategy::WatermarkStrategy::for_generator)).

use std::time::Duration;

use crate::core::subtask::SubtaskInfo;

/// Decides a stream's watermarks (Flink's `WatermarkGenerator`).
///
/// Both methods emit through the [`WatermarkOutput`] they are given. A
/// watermark says that no record with a timestamp at or below it should
/// follow; the output ignores one that does not advance, so watermarks never
/// go backwards whatever a generator emits.
///
/// ```
/// use weir_runtime::{WatermarkGenerator, WatermarkOutput};
///
/// /// Per-record watermarks: a record with a negative value is a marker
/// /// saying that event time has reached its timestamp.
/// struct Markers;
///
/// impl WatermarkGenerator<(i64, i64)> for Markers {
///     fn on_event(&mut self, record: &(i64, i64), timestamp: i64, output: &mut WatermarkOutput) {
///         if record.1 < 0 {
///             output.emit_watermark(timestamp);
///         }
///     }
///     fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
/// }
/// ```
pub trait WatermarkGenerator<T> {
    /// Called for each record with its timestamp (ms), before the record
    /// goes down the chain. A watermark emitted here follows that record
    /// at once, in order with the records (a punctuated generator).
    fn on_event(&mut self, record: &T, timestamp: i64, output: &mut WatermarkOutput);

    /// Called every `pipeline.auto-watermark-interval` of processing time
    /// (never when it is zero), also in the middle of a long run of
    /// records (a periodic generator emits here).
    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput);
}

/// Makes the [`WatermarkGenerator`] of each subtask (Flink's
/// `WatermarkGeneratorSupplier`).
pub trait WatermarkGeneratorSupplier<T>: Send + Sync + 'static {
    /// The generator it makes.
    type Generator: WatermarkGenerator<T> + 'static;

    /// The generator of subtask `info`.
    fn create_watermark_generator(&self, info: &SubtaskInfo) -> Self::Generator;
}

/// Where a [`WatermarkGenerator`] emits watermarks and marks its stream
/// idle or active (Flink's `WatermarkOutput`).
///
/// - [`emit_watermark`](Self::emit_watermark) with a watermark above the
///   current one advances it (and marks the stream active if it was
///   idle); anything else is ignored: watermarks never go backwards.
/// - [`mark_idle`](Self::mark_idle): downstream operators stop waiting
///   for this stream's watermarks until it is active again.
/// - [`mark_active`](Self::mark_active): the stream counts again.
///
/// The runtime passes what changed on, in order with the records: after
/// the record whose `on_event` emitted it, or at once for a periodic
/// emission. A record arriving while the stream is idle marks it active
/// before it goes down the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatermarkOutput {
    watermark: i64,
    idle: bool,
    /// Something changed since the runtime last took the output.
    changed: bool,
    /// The input activity clock when the generator was called.
    activity: Duration,
}

impl WatermarkOutput {
    /// An output at watermark `i64::MIN`, active, nothing emitted.
    pub fn new() -> Self {
        Self {
            watermark: i64::MIN,
            idle: false,
            changed: false,
            activity: Duration::ZERO,
        }
    }

    /// Emits `watermark` if it is above the current watermark (and marks
    /// the stream active if it was idle); ignores it otherwise.
    #[inline]
    pub fn emit_watermark(&mut self, watermark: i64) {
        if watermark > self.watermark {
            self.watermark = watermark;
            self.idle = false;
            self.changed = true;
        }
    }

    /// Marks the stream idle: downstream event time no longer waits for
    /// it, until it emits a watermark, is marked active or a record
    /// arrives.
    #[inline]
    pub fn mark_idle(&mut self) {
        if !self.idle {
            self.idle = true;
            self.changed = true;
        }
    }

    /// Marks the stream active again.
    #[inline]
    pub fn mark_active(&mut self) {
        if self.idle {
            self.idle = false;
            self.changed = true;
        }
    }

    /// The largest watermark emitted so far (`i64::MIN` before any).
    #[inline]
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// True while the stream is marked idle.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.idle
    }

    /// Processing time the stream's input could deliver records, since its
    /// link started: a clock for generators that measure inactivity
    /// ([`WatermarksWithIdleness`]). It stands still while the source waits
    /// for watermark alignment (as Flink's input activity clock), so a
    /// source held back by the others is not taken for an idle one.
    #[inline]
    pub fn input_activity_clock(&self) -> Duration {
        self.activity
    }

    /// True if something changed since the runtime last took the output.
    #[inline]
    pub(crate) fn changed(&self) -> bool {
        self.changed
    }

    /// A copy to hand a generator: nothing changed yet.
    #[inline(always)]
    pub(crate) fn taken(&self) -> Self {
        Self {
            changed: false,
            ..*self
        }
    }

    /// Sets the input activity clock generators read.
    #[inline]
    pub(crate) fn set_input_activity(&mut self, activity: Duration) {
        self.activity = activity;
    }
}

impl Default for WatermarkOutput {
    fn default() -> Self {
        Self::new()
    }
}

/// Watermarks that trail the largest timestamp seen by a bound (Flink's
/// `BoundedOutOfOrdernessWatermarks`): a record may come up to the bound
/// later in event time than a newer one. A periodic generator: the
/// watermark `max - bound - 1` goes out at each periodic emission (so
/// never before the first record). With a bound of zero it is Flink's
/// `AscendingTimestampsWatermarks` (monotonous timestamps).
///
/// It is its own [`WatermarkGeneratorSupplier`]: each subtask gets a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoundedOutOfOrderness {
    bound_ms: i64,
    /// Largest timestamp seen (starts so that the first watermark is
    /// `i64::MIN`, as Flink's).
    max_ts: i64,
}

impl BoundedOutOfOrderness {
    /// Watermarks trailing the largest timestamp by `bound`.
    pub fn new(bound: Duration) -> Self {
        let bound_ms = i64::try_from(bound.as_millis()).unwrap_or(i64::MAX);
        Self {
            bound_ms,
            max_ts: i64::MIN.saturating_add(bound_ms).saturating_add(1),
        }
    }

    /// The out-of-orderness bound.
    pub fn bound(&self) -> Duration {
        Duration::from_millis(self.bound_ms as u64)
    }
}

impl<T> WatermarkGenerator<T> for BoundedOutOfOrderness {
    #[inline(always)]
    fn on_event(&mut self, _record: &T, timestamp: i64, _output: &mut WatermarkOutput) {
        self.max_ts = self.max_ts.max(timestamp);
    }

    #[inline]
    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        output.emit_watermark(self.max_ts.saturating_sub(self.bound_ms).saturating_sub(1));
    }
}

impl<T> WatermarkGeneratorSupplier<T> for BoundedOutOfOrderness {
    type Generator = Self;

    fn create_watermark_generator(&self, _info: &SubtaskInfo) -> Self {
        *self
    }
}

/// Marks the stream idle when no record came for a timeout, and lets the
/// generator it wraps emit otherwise (Flink's `WatermarksWithIdleness`).
///
/// At each periodic emission: if a record came since the last one, the
/// stream was active then; if none came for `timeout` of the
/// [input activity clock](WatermarkOutput::input_activity_clock) since
/// the last emission that saw one (or since the start), it marks the
/// stream idle (once) and the wrapped generator is not asked; otherwise
/// the wrapped generator's `on_periodic_emit` runs. The next record
/// makes the stream active again.
///
/// Wrapping a supplier, it is the supplier of the wrapped generators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatermarksWithIdleness<G> {
    inner: G,
    timeout: Duration,
    /// A record came since the last periodic emission.
    seen: bool,
    /// The activity clock at the last periodic emission that saw records.
    last_active: Duration,
    /// This wrapper marked the stream idle and saw no record since.
    idle_now: bool,
}

impl<G> WatermarksWithIdleness<G> {
    /// `inner`, marking the stream idle after `timeout` without records.
    pub fn new(inner: G, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            seen: false,
            last_active: Duration::ZERO,
            idle_now: false,
        }
    }

    /// The idleness timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The wrapped generator (or supplier).
    pub fn inner(&self) -> &G {
        &self.inner
    }
}

impl<T, G: WatermarkGenerator<T>> WatermarkGenerator<T> for WatermarksWithIdleness<G> {
    #[inline]
    fn on_event(&mut self, record: &T, timestamp: i64, output: &mut WatermarkOutput) {
        self.inner.on_event(record, timestamp, output);
        self.seen = true;
        self.idle_now = false;
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        let now = output.input_activity_clock();
        if self.seen {
            self.seen = false;
            self.last_active = now;
        } else if now.saturating_sub(self.last_active) >= self.timeout {
            if !self.idle_now {
                self.idle_now = true;
                output.mark_idle();
            }
            return;
        }
        self.inner.on_periodic_emit(output);
    }
}

impl<T, S: WatermarkGeneratorSupplier<T>> WatermarkGeneratorSupplier<T>
    for WatermarksWithIdleness<S>
{
    type Generator = WatermarksWithIdleness<S::Generator>;

    fn create_watermark_generator(&self, info: &SubtaskInfo) -> Self::Generator {
        WatermarksWithIdleness::new(self.inner.create_watermark_generator(info), self.timeout)
    }
}

/// A [`WatermarkGeneratorSupplier`] from a closure making each subtask's
/// generator
/// ([`WatermarkStrategy::for_generator`](crate::operators::timestamps::strategy::WatermarkStrategy::for_generator)).
#[derive(Clone, Copy, Debug)]
pub struct GeneratorFactory<F>(pub F);

impl<T, F, G> WatermarkGeneratorSupplier<T> for GeneratorFactory<F>
where
    F: Fn(&SubtaskInfo) -> G + Send + Sync + 'static,
    G: WatermarkGenerator<T> + 'static,
{
    type Generator = G;

    fn create_watermark_generator(&self, info: &SubtaskInfo) -> G {
        (self.0)(info)
    }
}
