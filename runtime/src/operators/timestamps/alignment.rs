//! Watermark alignment at a source subtask (Flink's
//! `WatermarkStrategy::withWatermarkAlignment`, FLIP-182): a source whose
//! watermark runs ahead of its group's slowest member by more than the
//! allowed drift stops reading until the others catch up, so that fast
//! sources do not pile up state (windows, join buffers) waiting for slow
//! ones.
//!
//! Every member publishes its watermark into the group's shared slots
//! ([`crate::exchange::watermark_alignment`]) as soon as it changes (`i64::MAX`
//! while idle and once finished; nothing before its first watermark). Every
//! `update_interval` of processing time it reads the group's minimum and
//! sets its limit, `minimum + max_drift` (no limit while no member has a
//! watermark). Whenever its own watermark is above its limit the source is
//! *paused*: its timestamps link reports the chain unavailable, so the
//! source task polls the source no more — it keeps injecting barriers and
//! answering every other control call — and the link names its next
//! update as a deadline, so a parked worker wakes to look again. A paused
//! source's input activity clock stands still, so idleness does not take
//! it for an idle one.
//!
//! How far a member can lead: its watermark passes its limit by at most
//! one step of its generator (one record for a per-record generator, the
//! records of one `pipeline.auto-watermark-interval` for a periodic one)
//! before it pauses, and its limit is at most one `update_interval` old.
//!
//! Deviations from Flink: members publish on every change instead of every
//! `update_interval` (fresher, and an atomic store), and read the minimum
//! themselves instead of being sent it by a coordinator. Alignment is by
//! subtask (Flink also pauses single splits inside a reader: a weir source
//! is paused whole). A strategy with alignment assigned after an exchange
//! (not at a source) does not align. While paused a source's time counts
//! as back-pressured in its subtask's metrics.

use std::time::{Duration, Instant};

use crate::build::context::BuildContext;
use crate::exchange::watermark_alignment::AlignmentGroupMember;

/// Flink's default `updateInterval` of watermark alignment.
pub const DEFAULT_ALIGNMENT_UPDATE_INTERVAL: Duration = Duration::from_secs(1);

/// A strategy's watermark alignment: its group, the largest drift allowed
/// above the group's minimum watermark, and how often the minimum is read
/// (Flink's `WatermarkAlignmentParams`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatermarkAlignment {
    group: String,
    max_drift: Duration,
    update_interval: Duration,
}

impl WatermarkAlignment {
    /// Alignment in `group` with `max_drift`, reading the group's minimum
    /// every `update_interval` (at least 1 ms).
    pub fn new(group: &str, max_drift: Duration, update_interval: Duration) -> Self {
        Self {
            group: group.to_owned(),
            max_drift,
            update_interval: update_interval.max(Duration::from_millis(1)),
        }
    }

    /// The group's name.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The largest drift allowed above the group's minimum watermark.
    pub fn max_drift(&self) -> Duration {
        self.max_drift
    }

    /// How often a member reads the group's minimum.
    pub fn update_interval(&self) -> Duration {
        self.update_interval
    }
}

/// No watermark alignment: the default of a strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoWatermarkAlignment;

/// A strategy's alignment setting, made into each subtask's
/// [`SourceAlignment`] when its task is built.
pub trait AlignmentSpec: Send + Sync + 'static {
    /// What the subtask's timestamps link holds.
    type Source: SourceAlignment + 'static;

    /// The alignment of the subtask `ctx` builds; `at_source` says whether
    /// its timestamps link follows a source (only those align).
    fn source(&self, ctx: &BuildContext<'_>, at_source: bool) -> Self::Source;
}

/// How a timestamps link takes part in watermark alignment.
pub trait SourceAlignment {
    /// True while the source must not be read.
    fn paused(&self) -> bool;

    /// The link's output changed: its watermark is `watermark` and it is
    /// `idle` or not; `now` is the latest processing time the link knows.
    fn on_output(&mut self, watermark: i64, idle: bool, now: Instant);

    /// Processing time passed to `now`: reads the group's minimum if an
    /// update is due. Returns when the next one is.
    fn on_time(&mut self, now: Instant, watermark: i64) -> Option<Instant>;

    /// Processing time spent paused up to `now`.
    fn paused_time(&self, now: Instant) -> Duration;
}

impl AlignmentSpec for NoWatermarkAlignment {
    type Source = NoWatermarkAlignment;

    fn source(&self, _ctx: &BuildContext<'_>, _at_source: bool) -> Self {
        Self
    }
}

impl SourceAlignment for NoWatermarkAlignment {
    #[inline(always)]
    fn paused(&self) -> bool {
        false
    }

    #[inline(always)]
    fn on_output(&mut self, _watermark: i64, _idle: bool, _now: Instant) {}

    #[inline(always)]
    fn on_time(&mut self, _now: Instant, _watermark: i64) -> Option<Instant> {
        None
    }

    #[inline(always)]
    fn paused_time(&self, _now: Instant) -> Duration {
        Duration::ZERO
    }
}

impl AlignmentSpec for WatermarkAlignment {
    type Source = AlignedSource;

    fn source(&self, ctx: &BuildContext<'_>, at_source: bool) -> AlignedSource {
        AlignedSource::new(
            at_source.then(|| ctx.watermark_alignment.join(&self.group)),
            self,
        )
    }
}

/// A source subtask's part in its alignment group (see the
/// [module](self) docs).
#[derive(Debug)]
pub struct AlignedSource {
    /// `None` when the link does not follow a source: it never pauses.
    member: Option<AlignmentGroupMember>,
    max_drift_ms: i64,
    update_interval: Duration,
    next_update: Option<Instant>,
    /// The group's minimum plus the drift, at the last update.
    max_allowed: i64,
    paused_since: Option<Instant>,
    paused_before: Duration,
}

impl AlignedSource {
    /// `member`'s alignment with `params`.
    pub fn new(member: Option<AlignmentGroupMember>, params: &WatermarkAlignment) -> Self {
        Self {
            member,
            max_drift_ms: i64::try_from(params.max_drift.as_millis()).unwrap_or(i64::MAX),
            update_interval: params.update_interval,
            next_update: None,
            max_allowed: i64::MAX,
            paused_since: None,
            paused_before: Duration::ZERO,
        }
    }

    /// The group's minimum plus the drift, as of the last update.
    pub fn max_allowed_watermark(&self) -> i64 {
        self.max_allowed
    }

    fn set_paused(&mut self, paused: bool, now: Instant) {
        match (paused, self.paused_since) {
            (true, None) => self.paused_since = Some(now),
            (false, Some(since)) => {
                self.paused_before += now.saturating_duration_since(since);
                self.paused_since = None;
            }
            _ => {}
        }
    }
}

impl SourceAlignment for AlignedSource {
    #[inline]
    fn paused(&self) -> bool {
        self.paused_since.is_some()
    }

    fn on_output(&mut self, watermark: i64, idle: bool, now: Instant) {
        if let Some(member) = &self.member {
            // Idle (with a watermark or not yet): it holds nobody back.
            member.publish(if idle { i64::MAX } else { watermark });
        }
        self.set_paused(watermark > self.max_allowed, now);
    }

    fn on_time(&mut self, now: Instant, watermark: i64) -> Option<Instant> {
        let member = self.member.as_ref()?;
        if self.next_update.is_none_or(|at| at <= now) {
            self.max_allowed = member
                .group_minimum()
                .map_or(i64::MAX, |min| min.saturating_add(self.max_drift_ms));
            self.next_update = Some(now + self.update_interval);
            self.set_paused(watermark > self.max_allowed, now);
        }
        self.next_update
    }

    fn paused_time(&self, now: Instant) -> Duration {
        self.paused_before
            + self
                .paused_since
                .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }
}
