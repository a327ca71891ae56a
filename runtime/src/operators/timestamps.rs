//! Event time at the sources: timestamps and watermark generation, as in
//! Flink.
//!
//! A [`WatermarkStrategy`] says how a stream's records carry event time (a
//! timestamp extractor, in milliseconds) and how watermarks follow from it:
//! bounded out-of-orderness (watermark = largest timestamp seen - bound -
//! 1, Flink's `BoundedOutOfOrdernessWatermarks`), emitted every
//! `pipeline.auto-watermark-interval` rather than per record, and an
//! optional idleness timeout after which a subtask that saw no record marks
//! itself idle (Flink's `WatermarkStatus.IDLE`) until its next record. At
//! the end of its input it emits the final watermark `i64::MAX`.
//! [`TimestampsOp`] is that strategy as a chain link; it is the only place
//! where event time costs anything per record, and only jobs that assign
//! timestamps have one.
//!
//! Watermarks and watermark statuses travel through the chain by
//! [`ChainControl::on_watermark`] and [`ChainControl::on_watermark_status`]
//! and through exchanges as channel events, in order with the records.
//! Each input gate feeds them to a
//! [`WatermarkValve`](crate::exchange::valve::WatermarkValve) (Flink's
//! `StatusWatermarkValve`): the operator's event time is the minimum of the
//! watermarks of its active inputs, never goes backwards, and the gate is
//! idle when every input is.

use std::time::{Duration, Instant};

use weir_net::WatermarkStatus;

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::error::BuildError;
use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::chain::task::Task;
use crate::core::snapshot::TaskSnapshot;
use crate::core::time::earliest;
use crate::core::timestamp::set_record_timestamp;

/// Flink's default of `pipeline.auto-watermark-interval`.
pub const DEFAULT_AUTO_WATERMARK_INTERVAL: Duration = Duration::from_millis(200);

/// How a stream's records are timestamped and its watermarks generated
/// (Flink's `WatermarkStrategy` with bounded out-of-orderness).
///
/// ```
/// use std::time::Duration;
/// use weir_runtime::WatermarkStrategy;
///
/// let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(500))
///     .with_timestamp_assigner(|r: &(u64, i64)| r.1)
///     .with_idleness(Duration::from_secs(10));
/// assert_eq!(strategy.out_of_orderness(), Duration::from_millis(500));
/// ```
#[derive(Clone, Debug)]
pub struct WatermarkStrategy<TF> {
    out_of_orderness: Duration,
    idleness: Option<Duration>,
    timestamps: TF,
}

impl WatermarkStrategy<()> {
    /// Watermarks that trail the largest timestamp seen by `bound`: a record
    /// may arrive up to `bound` later (in event time) than a newer one.
    pub fn for_bounded_out_of_orderness(bound: Duration) -> Self {
        Self {
            out_of_orderness: bound,
            idleness: None,
            timestamps: (),
        }
    }

    /// Watermarks for timestamps that never decrease (a bound of zero).
    pub fn for_monotonous_timestamps() -> Self {
        Self::for_bounded_out_of_orderness(Duration::ZERO)
    }
}

impl<TF> WatermarkStrategy<TF> {
    /// Takes each record's event time (milliseconds) from `f`.
    pub fn with_timestamp_assigner<T, F>(self, f: F) -> WatermarkStrategy<F>
    where
        F: Fn(&T) -> i64,
    {
        WatermarkStrategy {
            out_of_orderness: self.out_of_orderness,
            idleness: self.idleness,
            timestamps: f,
        }
    }

    /// A subtask that emitted no record for `timeout` marks itself idle
    /// until its next record (checked at each periodic emission).
    pub fn with_idleness(mut self, timeout: Duration) -> Self {
        self.idleness = Some(timeout);
        self
    }

    /// The out-of-orderness bound.
    pub fn out_of_orderness(&self) -> Duration {
        self.out_of_orderness
    }

    /// The idleness timeout, if any.
    pub fn idleness(&self) -> Option<Duration> {
        self.idleness
    }

    /// The timestamp extractor.
    pub fn timestamp_assigner(&self) -> &TF {
        &self.timestamps
    }
}

/// Milliseconds of `d`, saturating at `i64::MAX`.
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A [`WatermarkStrategy`] in a chain: extracts each record's timestamp,
/// emits watermarks periodically and marks the stream idle and active
/// again.
///
/// Watermarks from upstream (when it follows an exchange) are dropped
/// except the final `i64::MAX`, as Flink's `TimestampsAndWatermarksOperator`
/// does: this link is the stream's new source of event time.
pub struct TimestampsOp<TF, C> {
    extract: TF,
    pub(crate) out: C,
    bound_ms: i64,
    /// Largest timestamp seen (starts so that the first watermark is
    /// `i64::MIN`, as Flink's).
    max_ts: i64,
    /// Last watermark emitted.
    emitted: i64,
    /// `pipeline.auto-watermark-interval`; `None` emits no periodic
    /// watermark (only the final one).
    interval: Option<Duration>,
    next_emit: Option<Instant>,
    idleness: Option<Duration>,
    /// A record arrived since the last periodic check.
    seen: bool,
    /// When the last periodic check found records, or the link started.
    last_activity: Instant,
    idle: bool,
    ended: bool,
}

impl<TF, C> TimestampsOp<TF, C> {
    /// The link for `strategy` feeding `out`, emitting every `interval`
    /// (zero: only the final watermark).
    pub fn new<T>(strategy: &WatermarkStrategy<TF>, interval: Duration, out: C) -> Self
    where
        TF: Fn(&T) -> i64 + Clone,
    {
        let bound_ms = millis(strategy.out_of_orderness);
        Self {
            extract: strategy.timestamps.clone(),
            out,
            bound_ms,
            max_ts: i64::MIN.saturating_add(bound_ms).saturating_add(1),
            emitted: i64::MIN,
            interval: (!interval.is_zero()).then_some(interval),
            next_emit: None,
            idleness: strategy.idleness,
            seen: false,
            last_activity: Instant::now(),
            idle: false,
            ended: false,
        }
    }

    /// The last watermark this link emitted.
    pub fn current_watermark(&self) -> i64 {
        self.emitted
    }

    /// True while the link has marked its stream idle.
    pub fn is_idle(&self) -> bool {
        self.idle
    }
}

impl<TF, C: ChainControl> TimestampsOp<TF, C> {
    /// The periodic emission: the idleness check, then the watermark if it
    /// advanced. Returns whether anything was emitted.
    fn periodic_emit(&mut self, now: Instant) -> bool {
        if self.seen {
            self.seen = false;
            self.last_activity = now;
        } else if let Some(timeout) = self.idleness {
            if !self.idle && now.saturating_duration_since(self.last_activity) >= timeout {
                self.idle = true;
                self.out.on_watermark_status(WatermarkStatus::Idle);
                return true;
            }
        }
        if self.idle {
            return false;
        }
        let watermark = self.max_ts.saturating_sub(self.bound_ms).saturating_sub(1);
        if watermark > self.emitted {
            self.emitted = watermark;
            self.out.on_watermark(watermark);
            return true;
        }
        false
    }

    /// Marks the stream active again (its next record or watermark).
    #[inline]
    fn activate(&mut self) {
        if self.idle {
            self.idle = false;
            self.out.on_watermark_status(WatermarkStatus::Active);
        }
    }
}

impl<TF, C: ChainControl> ChainControl for TimestampsOp<TF, C> {
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available()
    }

    fn flush(&mut self, now: Instant) -> FlushOutcome {
        let mut emitted = false;
        if let (Some(interval), false) = (self.interval, self.ended) {
            match self.next_emit {
                Some(at) if at > now => {}
                _ => {
                    if self.next_emit.is_some() {
                        emitted = self.periodic_emit(now);
                    }
                    self.next_emit = Some(now + interval);
                }
            }
        }
        let mut outcome = self.out.flush(now);
        outcome.progressed |= emitted;
        if !self.ended {
            outcome.next_deadline = earliest(outcome.next_deadline, self.next_emit);
        }
        outcome
    }

    fn end_input(&mut self) {
        if !self.ended {
            self.ended = true;
            self.activate();
            self.emitted = i64::MAX;
            self.out.on_watermark(i64::MAX);
        }
        self.out.end_input();
    }

    fn snapshot(&mut self, snapshot: &mut TaskSnapshot) {
        self.out.snapshot(snapshot);
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) {
        self.out.notify_checkpoint_complete(checkpoint_id);
    }

    fn finish(&mut self) -> bool {
        self.out.finish()
    }

    #[inline]
    fn publish_metrics(&mut self) {
        self.out.publish_metrics();
    }

    fn output_pending(&self) -> bool {
        self.out.output_pending()
    }

    fn on_watermark(&mut self, watermark: i64) {
        if watermark == i64::MAX && !self.ended {
            self.activate();
            self.emitted = i64::MAX;
            self.out.on_watermark(i64::MAX);
        }
    }

    fn on_watermark_status(&mut self, _status: WatermarkStatus) {
        // This link decides its stream's status itself.
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.out.failure()
    }
}

impl<T, TF: Fn(&T) -> i64, C: Collector<T>> Collector<T> for TimestampsOp<TF, C> {
    #[inline(always)]
    fn collect(&mut self, record: T) {
        let ts = (self.extract)(&record);
        if ts > self.max_ts {
            self.max_ts = ts;
        }
        set_record_timestamp(ts);
        self.seen = true;
        self.activate();
        self.out.collect(record);
    }

    /// Tracks the largest timestamp of the records as the chain pulls
    /// them, so that the chain below runs through them in its own loop.
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        if self.idle {
            // Its first record makes the stream active again (`collect`).
            if limit == 0 || !self.out.is_available() {
                return 0;
            }
            let Some(record) = records.next() else {
                return 0;
            };
            self.collect(record);
            return 1 + self.collect_many(records, limit - 1);
        }
        let (extract, mut max_ts) = (&self.extract, self.max_ts);
        let mut tracked = records.by_ref().inspect(|record| {
            let ts = extract(record);
            max_ts = max_ts.max(ts);
            set_record_timestamp(ts);
        });
        let taken = self.out.collect_many(&mut tracked, limit);
        self.max_ts = max_ts;
        self.seen |= taken > 0;
        taken
    }
}

/// Chain link of
/// [`Stream::assign_timestamps_and_watermarks`](crate::api::stream::Stream::assign_timestamps_and_watermarks).
pub struct TimestampsChain<B, TF> {
    pub(crate) prev: B,
    pub(crate) strategy: WatermarkStrategy<TF>,
}

impl<T, B, TF> ChainBuilder<T> for TimestampsChain<B, TF>
where
    T: 'static,
    B: ChainBuilder<T>,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
{
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let op = TimestampsOp::new(&self.strategy, ctx.auto_watermark_interval, out);
        self.prev.build(ctx, op)
    }
}

#[cfg(test)]
mod tests;
