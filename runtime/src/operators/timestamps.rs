//! Event time at the sources: timestamps and watermark generation, as in
//! Flink.
//!
//! A [`WatermarkStrategy`] says how a stream's records carry event time (a
//! timestamp extractor, in milliseconds), which [`WatermarkGenerator`]
//! each subtask runs, and whether the sources align their watermarks.
//! [`TimestampsOp`] is a strategy as a chain link: it is the only place
//! where event time costs anything per record, and only jobs that assign
//! timestamps have one.
//!
//! **Generators.** For each record the link extracts its timestamp and
//! calls the generator's [`on_event`](WatermarkGenerator::on_event); every
//! `pipeline.auto-watermark-interval` of processing time it calls
//! [`on_periodic_emit`](WatermarkGenerator::on_periodic_emit) (never when
//! the interval is zero, as in Flink). Both emit into a
//! [`WatermarkOutput`], which ignores a watermark that does not advance:
//! watermarks never go backwards. Built in:
//!
//! - [`BoundedOutOfOrderness`] (`for_bounded_out_of_orderness`, and
//!   `for_monotonous_timestamps` with a bound of zero): periodic, watermark
//!   = largest timestamp seen - bound - 1 (Flink's
//!   `BoundedOutOfOrdernessWatermarks`);
//! - [`WatermarksWithIdleness`] (`with_idleness`): wraps any generator and
//!   marks the stream idle (Flink's `WatermarkStatus.IDLE`) when a periodic
//!   emission finds no record for the timeout; a record marks it active
//!   again before it goes down the chain;
//! - any generator of the user's (`for_generator`): one that emits in
//!   `on_event` gives per-record (punctuated) watermarks.
//!
//! **When watermarks go out.** A watermark emitted in `on_event` goes down
//! the chain right behind its record, before the next one: a run of
//! records handed over together ([`Collector::collect_many`]) stops there
//! and goes on after it. Periodic emissions happen at each task poll whose
//! time is due and, inside long runs, whenever a record comes after
//! [`CLOCK_CHECK_RECORDS`] since the link last looked at the clock, so a
//! watermark follows within about one interval (plus the time of that many
//! records) however many records a poll hands over. At the end of its input the link emits the final
//! watermark `i64::MAX` (active first if idle). Watermarks from upstream
//! (a link after an exchange) are dropped except `i64::MAX`, as Flink's
//! `TimestampsAndWatermarksOperator` does.
//!
//! **Alignment** ([`alignment`], `with_watermark_alignment`): a source
//! whose watermark leads its group's slowest by more than the allowed
//! drift is paused: this link then reports the chain unavailable, so the
//! source task stops reading (barriers still pass).
//!
//! **Cost.** The generator and the alignment are type parameters, so every
//! call is monomorphised and inlined: with the bounded generator the
//! per-record work is the timestamp and a `max`, as before generators
//! existed, and a run's check for a per-record watermark compiles away
//! (its output can only change in `on_periodic_emit`). A run moves the
//! generator into a local, so that its state stays in registers through
//! the chain's loop. Without alignment the pause check is the constant
//! `false`.
//!
//! Watermarks and watermark statuses travel through the chain by
//! [`ChainControl::on_watermark`] and [`ChainControl::on_watermark_status`]
//! and through exchanges as channel events, in order with the records.
//! Each input gate feeds them to a
//! [`WatermarkValve`](crate::exchange::valve::WatermarkValve) (Flink's
//! `StatusWatermarkValve`): the operator's event time is the minimum of the
//! watermarks of its active inputs, never goes backwards, and the gate is
//! idle when every input is.

pub mod alignment;
pub mod generator;
pub mod strategy;

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use weir_net::WatermarkStatus;

pub use alignment::{
    AlignedSource, AlignmentSpec, NoWatermarkAlignment, SourceAlignment, WatermarkAlignment,
    DEFAULT_ALIGNMENT_UPDATE_INTERVAL,
};
pub use generator::{
    BoundedOutOfOrderness, GeneratorFactory, WatermarkGenerator, WatermarkGeneratorSupplier,
    WatermarkOutput, WatermarksWithIdleness,
};
pub use strategy::WatermarkStrategy;

use crate::build::builder::ChainBuilder;
use crate::build::context::BuildContext;
use crate::build::demand::TimestampDemand;
use crate::build::error::BuildError;
use crate::chain::control::{ChainControl, Collector, FlushOutcome};
use crate::chain::error::TaskError;
use crate::chain::task::Task;
use crate::core::snapshot::TaskSnapshot;
use crate::core::time::earliest;
use crate::core::timestamp::set_record_timestamp;

/// Flink's default of `pipeline.auto-watermark-interval`.
pub const DEFAULT_AUTO_WATERMARK_INTERVAL: Duration = Duration::from_millis(200);

/// Records a link takes before it looks at the clock again inside a run
/// (a task poll's flush looks too), for its periodic emission and
/// alignment updates. It looks when the next record comes, so not after
/// the last record of a poll.
pub const CLOCK_CHECK_RECORDS: usize = 1024;

/// A [`WatermarkStrategy`] in a chain: extracts each record's timestamp,
/// runs the subtask's [`WatermarkGenerator`] (per record and
/// periodically), passes on its watermarks and statuses, and takes part in
/// watermark alignment (`A`).
///
/// Watermarks from upstream (when it follows an exchange) are dropped
/// except the final `i64::MAX`, as Flink's `TimestampsAndWatermarksOperator`
/// does: this link is the stream's new source of event time.
pub struct TimestampsOp<T, TF, G, C, A = NoWatermarkAlignment> {
    extract: TF,
    /// The generator; a run of records moves it into a local of its own
    /// (see [`run`]), so it is `None` only during a run.
    generator: Option<G>,
    pub(crate) out: C,
    alignment: A,
    /// What the stream emitted so far: its watermark and status.
    output: WatermarkOutput,
    /// `pipeline.auto-watermark-interval`; `None` calls no periodic
    /// emission.
    interval: Option<Duration>,
    next_emit: Option<Instant>,
    /// The alignment's next update.
    next_update: Option<Instant>,
    /// Records until the next look at the clock.
    until_clock: usize,
    /// When the link was made: its input activity clock starts here.
    started: Instant,
    /// The latest processing time the link knows.
    now: Instant,
    ended: bool,
    /// Someone downstream reads the records' timestamps: set each as the
    /// current record timestamp ([`crate::core::timestamp`]).
    stamp: bool,
    _record: PhantomData<fn(&T)>,
}

impl<T, TF: Fn(&T) -> i64, G: WatermarkGenerator<T>, C> TimestampsOp<T, TF, G, C> {
    /// The link extracting timestamps with `extract` and running
    /// `generator`, feeding `out`, with periodic emissions every
    /// `interval` (zero: none; the final watermark still goes out).
    pub fn new(extract: TF, generator: G, interval: Duration, out: C) -> Self {
        let now = Instant::now();
        Self {
            extract,
            generator: Some(generator),
            out,
            alignment: NoWatermarkAlignment,
            output: WatermarkOutput::new(),
            interval: (!interval.is_zero()).then_some(interval),
            next_emit: None,
            next_update: None,
            until_clock: CLOCK_CHECK_RECORDS,
            started: now,
            now,
            ended: false,
            stamp: false,
            _record: PhantomData,
        }
    }
}

impl<T, TF, G, C, A> TimestampsOp<T, TF, G, C, A> {
    /// This link taking part in watermark alignment as `alignment`.
    pub fn with_alignment<A2>(self, alignment: A2) -> TimestampsOp<T, TF, G, C, A2> {
        TimestampsOp {
            extract: self.extract,
            generator: self.generator,
            out: self.out,
            alignment,
            output: self.output,
            interval: self.interval,
            next_emit: self.next_emit,
            next_update: self.next_update,
            until_clock: self.until_clock,
            started: self.started,
            now: self.now,
            ended: self.ended,
            stamp: self.stamp,
            _record: PhantomData,
        }
    }

    /// Sets each record's timestamp as the current record timestamp if
    /// `stamp` (someone downstream reads it).
    pub fn with_stamping(mut self, stamp: bool) -> Self {
        self.stamp = stamp;
        self
    }

    /// The last watermark this link emitted.
    pub fn current_watermark(&self) -> i64 {
        self.output.current_watermark()
    }

    /// True while the link has marked its stream idle.
    pub fn is_idle(&self) -> bool {
        self.output.is_idle()
    }

    /// Its part in watermark alignment.
    pub fn alignment(&self) -> &A {
        &self.alignment
    }
}

impl<T, TF, G, C, A> TimestampsOp<T, TF, G, C, A>
where
    G: WatermarkGenerator<T>,
    C: ChainControl,
    A: SourceAlignment,
{
    /// Passes on what changed from the current output to `output`: a new
    /// watermark (active first if the stream was idle), then a new status.
    fn forward(&mut self, output: WatermarkOutput) {
        let before = self.output;
        self.output = output.taken();
        let (watermark, idle) = (output.current_watermark(), output.is_idle());
        if watermark > before.current_watermark() {
            if before.is_idle() {
                self.out.on_watermark_status(WatermarkStatus::Active);
            }
            self.out.on_watermark(watermark);
            if idle {
                self.out.on_watermark_status(WatermarkStatus::Idle);
            }
        } else if idle != before.is_idle() {
            self.out.on_watermark_status(if idle {
                WatermarkStatus::Idle
            } else {
                WatermarkStatus::Active
            });
        }
        self.alignment.on_output(watermark, idle, self.now);
    }

    /// Marks the stream active again (before a record).
    #[inline(never)]
    fn activate(&mut self) {
        let mut output = self.output.taken();
        output.mark_active();
        self.forward(output);
    }

    /// Emits `i64::MAX`, the end of event time.
    fn emit_final(&mut self) {
        let mut output = self.output.taken();
        output.emit_watermark(i64::MAX);
        self.forward(output);
    }

    /// Processing time reached `now`: the periodic emission and the
    /// alignment's update, when due. Returns whether anything was emitted.
    #[inline(never)]
    fn on_time(&mut self, now: Instant) -> bool {
        self.now = now;
        self.until_clock = CLOCK_CHECK_RECORDS;
        if self.ended {
            return false;
        }
        let mut emitted = false;
        if let Some(interval) = self.interval {
            match self.next_emit {
                Some(at) if at > now => {}
                Some(_) => {
                    let activity = now
                        .saturating_duration_since(self.started)
                        .saturating_sub(self.alignment.paused_time(now));
                    let mut output = self.output.taken();
                    output.set_input_activity(activity);
                    if let Some(generator) = &mut self.generator {
                        generator.on_periodic_emit(&mut output);
                    }
                    if output.changed() {
                        self.forward(output);
                        emitted = true;
                    } else {
                        self.output = output;
                    }
                    self.next_emit = Some(now + interval);
                }
                None => self.next_emit = Some(now + interval),
            }
        }
        self.next_update = self.alignment.on_time(now, self.output.current_watermark());
        emitted
    }
}

impl<T, TF, G, C, A> ChainControl for TimestampsOp<T, TF, G, C, A>
where
    G: WatermarkGenerator<T>,
    C: ChainControl,
    A: SourceAlignment,
{
    /// Unavailable also while the source is paused for watermark
    /// alignment (never without alignment).
    #[inline(always)]
    fn is_available(&self) -> bool {
        self.out.is_available() && !self.alignment.paused()
    }
    #[inline(always)]
    fn is_available_for(&self, records: usize) -> bool {
        self.out.is_available_for(records) && !self.alignment.paused()
    }

    fn flush(&mut self, now: Instant) -> FlushOutcome {
        let emitted = self.on_time(now);
        let mut outcome = self.out.flush(now);
        outcome.progressed |= emitted;
        if !self.ended {
            outcome.next_deadline = earliest(
                earliest(outcome.next_deadline, self.next_emit),
                self.next_update,
            );
        }
        outcome
    }

    fn end_input(&mut self) {
        if !self.ended {
            self.ended = true;
            self.emit_final();
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
            self.emit_final();
        }
    }

    fn on_watermark_status(&mut self, _status: WatermarkStatus) {
        // This link decides its stream's status itself.
    }
    fn on_latency_marker(&mut self, marker: weir_net::LatencyMarker) {
        self.out.on_latency_marker(marker)
    }

    #[inline]
    fn failure(&self) -> Option<&TaskError> {
        self.out.failure()
    }
}

impl<T, TF, G, C, A> Collector<T> for TimestampsOp<T, TF, G, C, A>
where
    TF: Fn(&T) -> i64,
    G: WatermarkGenerator<T>,
    C: Collector<T>,
    A: SourceAlignment,
{
    #[inline(always)]
    fn collect(&mut self, record: T) {
        if self.output.is_idle() {
            self.activate();
        }
        let timestamp = (self.extract)(&record);
        // A copy whose `changed` is a known `false`: for a generator that
        // emits only periodically, the check below compiles away.
        let mut output = self.output.taken();
        if let Some(generator) = &mut self.generator {
            generator.on_event(&record, timestamp, &mut output);
        }
        if self.stamp {
            set_record_timestamp(timestamp);
        }
        self.out.collect(record);
        if output.changed() {
            self.forward(output);
        }
        // The clock is looked at when a record comes after many, not
        // after the last of a poll: the next poll's flush looks anyway.
        if self.until_clock == 0 {
            self.on_time(Instant::now());
        }
        self.until_clock -= 1;
    }

    /// Runs the generator over the records as the chain pulls them, so
    /// that the chain below runs through them in its own loop. A run stops
    /// right after a record whose `on_event` emitted (that goes out, then
    /// the next run starts), and every [`CLOCK_CHECK_RECORDS`] records to
    /// look at the clock.
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        // The generator in a local for the run: the compiler keeps its
        // state (the bounded generator's largest timestamp) in registers
        // through the chain's loop, which it cannot prove for a field.
        let Some(mut generator) = self.generator.take() else {
            return 0;
        };
        let mut taken = 0;
        loop {
            if self.until_clock == 0 && taken < limit {
                // Many records since the clock was last looked at, and
                // more to come (after the last of a poll, the next poll's
                // flush looks anyway).
                self.generator = Some(generator);
                self.on_time(Instant::now());
                match self.generator.take() {
                    Some(g) => generator = g,
                    None => return taken,
                }
            }
            if self.output.is_idle() {
                // Its first record makes the stream active again (`collect`).
                if taken == limit || !self.is_available() {
                    break;
                }
                let Some(record) = records.next() else {
                    break;
                };
                self.generator = Some(generator);
                self.collect(record);
                taken += 1;
                match self.generator.take() {
                    Some(g) => generator = g,
                    None => return taken,
                }
                continue;
            }
            let chunk = (limit - taken).min(self.until_clock);
            let (n, output, stopped) = if self.stamp {
                run::<_, _, _, _, _, true>(
                    &mut self.out,
                    &mut generator,
                    &self.extract,
                    records,
                    self.output.taken(),
                    chunk,
                )
            } else {
                run::<_, _, _, _, _, false>(
                    &mut self.out,
                    &mut generator,
                    &self.extract,
                    records,
                    self.output.taken(),
                    chunk,
                )
            };
            taken += n;
            self.until_clock -= n;
            if output.changed() {
                self.forward(output);
            }
            // Fewer than asked without a watermark to pass on: the records
            // ran out or the chain is unavailable.
            if (n < chunk && !stopped) || taken == limit || self.alignment.paused() {
                break;
            }
        }
        self.generator = Some(generator);
        taken
    }
}

/// Hands `out` a run of up to `limit` records (see [`Run`]); returns how
/// many it took, the output after them and whether a watermark ended the
/// run.
#[inline(always)]
fn run<T, I, TF, G, C, const STAMP: bool>(
    out: &mut C,
    generator: &mut G,
    extract: &TF,
    records: &mut I,
    output: WatermarkOutput,
    limit: usize,
) -> (usize, WatermarkOutput, bool)
where
    I: Iterator<Item = T>,
    TF: Fn(&T) -> i64,
    G: WatermarkGenerator<T>,
    C: Collector<T>,
{
    let mut run = Run::<_, _, _, STAMP> {
        records,
        extract,
        generator,
        output,
        stopped: false,
    };
    let n = out.collect_many(&mut run, limit);
    (n, run.output, run.stopped)
}

/// The records of a run as the chain below pulls them: each one's
/// timestamp goes to the generator first; after one whose `on_event`
/// emitted, the run ends (so that the watermark goes out behind it).
/// With `STAMP`, each record's timestamp becomes the current record
/// timestamp as it is pulled (someone downstream reads it).
struct Run<'a, I, TF, G, const STAMP: bool> {
    records: &'a mut I,
    extract: &'a TF,
    generator: &'a mut G,
    output: WatermarkOutput,
    stopped: bool,
}

impl<T, I, TF, G, const STAMP: bool> Iterator for Run<'_, I, TF, G, STAMP>
where
    I: Iterator<Item = T>,
    TF: Fn(&T) -> i64,
    G: WatermarkGenerator<T>,
{
    type Item = T;

    #[inline(always)]
    fn next(&mut self) -> Option<T> {
        if self.stopped {
            return None;
        }
        let record = self.records.next()?;
        let timestamp = (self.extract)(&record);
        if STAMP {
            set_record_timestamp(timestamp);
        }
        self.generator
            .on_event(&record, timestamp, &mut self.output);
        self.stopped = self.output.changed();
        Some(record)
    }
}

/// Chain link of
/// [`Stream::assign_timestamps_and_watermarks`](crate::api::stream::Stream::assign_timestamps_and_watermarks).
pub struct TimestampsChain<B, TF, G, A> {
    pub(crate) prev: B,
    pub(crate) strategy: WatermarkStrategy<TF, G, A>,
    /// The link follows a source (in the source's stage): only then does
    /// it align.
    pub(crate) at_source: bool,
    /// Who reads the record timestamps it gives.
    pub(crate) demand: TimestampDemand,
}

impl<T, B, TF, G, A> ChainBuilder<T> for TimestampsChain<B, TF, G, A>
where
    T: 'static,
    B: ChainBuilder<T>,
    TF: Fn(&T) -> i64 + Clone + Send + Sync + 'static,
    G: WatermarkGeneratorSupplier<T>,
    A: AlignmentSpec,
{
    fn build<C: Collector<T> + 'static>(
        &self,
        ctx: &mut BuildContext<'_>,
        out: C,
    ) -> Result<Box<dyn Task>, BuildError> {
        let op = TimestampsOp::new(
            self.strategy.timestamp_assigner().clone(),
            self.strategy
                .generator()
                .create_watermark_generator(&ctx.info),
            ctx.auto_watermark_interval,
            out,
        )
        .with_alignment(self.strategy.alignment().source(ctx, self.at_source))
        .with_stamping(self.demand.is_needed());
        self.prev.build(ctx, op)
    }
}

#[cfg(test)]
mod tests;
