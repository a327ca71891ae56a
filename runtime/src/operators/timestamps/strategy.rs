//! [`WatermarkStrategy`]: how a stream's records carry event time and how
//! its watermarks are generated and aligned (Flink's `WatermarkStrategy`).

use std::time::Duration;

use crate::core::subtask::SubtaskInfo;
use crate::operators::timestamps::alignment::{NoWatermarkAlignment, WatermarkAlignment};
use crate::operators::timestamps::generator::{
    BoundedOutOfOrderness, GeneratorFactory, WatermarksWithIdleness,
};

/// How a stream's records are timestamped and its watermarks generated
/// (Flink's `WatermarkStrategy`): a timestamp extractor (`TF`, ms), a
/// [`WatermarkGeneratorSupplier`](crate::operators::timestamps::generator::WatermarkGeneratorSupplier)
/// (`G`) that makes each subtask's generator, and its watermark alignment
/// (`A`, none by default).
///
/// ```
/// use std::time::Duration;
/// use weir_runtime::WatermarkStrategy;
///
/// let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(500))
///     .with_timestamp_assigner(|r: &(u64, i64)| r.1)
///     .with_idleness(Duration::from_secs(10));
/// assert_eq!(strategy.idleness(), Duration::from_secs(10));
/// assert_eq!(strategy.generator().inner().bound(), Duration::from_millis(500));
/// ```
#[derive(Clone, Debug)]
pub struct WatermarkStrategy<TF, G = BoundedOutOfOrderness, A = NoWatermarkAlignment> {
    generator: G,
    alignment: A,
    timestamps: TF,
}

impl WatermarkStrategy<(), BoundedOutOfOrderness> {
    /// Watermarks that trail the largest timestamp seen by `bound`: a record
    /// may arrive up to `bound` later (in event time) than a newer one
    /// ([`BoundedOutOfOrderness`], emitted periodically).
    pub fn for_bounded_out_of_orderness(bound: Duration) -> Self {
        Self {
            generator: BoundedOutOfOrderness::new(bound),
            alignment: NoWatermarkAlignment,
            timestamps: (),
        }
    }

    /// Watermarks for timestamps that never decrease (a bound of zero:
    /// the watermark is the largest timestamp seen - 1).
    pub fn for_monotonous_timestamps() -> Self {
        Self::for_bounded_out_of_orderness(Duration::ZERO)
    }
}

impl<F> WatermarkStrategy<(), GeneratorFactory<F>> {
    /// Watermarks from a generator of the user's: `factory` makes each
    /// subtask's
    /// [`WatermarkGenerator`](crate::operators::timestamps::generator::WatermarkGenerator)
    /// (Flink's `forGenerator`). One that emits in `on_event` gives
    /// per-record (punctuated) watermarks.
    pub fn for_generator<G>(factory: F) -> Self
    where
        F: Fn(&SubtaskInfo) -> G + Send + Sync + 'static,
    {
        Self {
            generator: GeneratorFactory(factory),
            alignment: NoWatermarkAlignment,
            timestamps: (),
        }
    }
}

impl<TF, G, A> WatermarkStrategy<TF, G, A> {
    /// Takes each record's event time (milliseconds) from `f`.
    pub fn with_timestamp_assigner<T, F>(self, f: F) -> WatermarkStrategy<F, G, A>
    where
        F: Fn(&T) -> i64,
    {
        WatermarkStrategy {
            generator: self.generator,
            alignment: self.alignment,
            timestamps: f,
        }
    }

    /// A subtask that saw no record for `timeout` marks itself idle until
    /// its next record (checked at each periodic emission;
    /// [`WatermarksWithIdleness`] around the generator).
    pub fn with_idleness(
        self,
        timeout: Duration,
    ) -> WatermarkStrategy<TF, WatermarksWithIdleness<G>, A> {
        WatermarkStrategy {
            generator: WatermarksWithIdleness::new(self.generator, timeout),
            alignment: self.alignment,
            timestamps: self.timestamps,
        }
    }

    /// Aligns the watermarks of the sources of `group` (Flink's
    /// `withWatermarkAlignment`): a source subtask whose watermark is more
    /// than `max_drift` ahead of the group's smallest stops reading until
    /// the others catch up; each reads the group's minimum every
    /// `update_interval` (Flink's default:
    /// [`DEFAULT_ALIGNMENT_UPDATE_INTERVAL`](crate::operators::timestamps::alignment::DEFAULT_ALIGNMENT_UPDATE_INTERVAL)).
    /// Idle and finished sources hold nobody back. Applies where the
    /// strategy is assigned right after a source (see
    /// [`crate::operators::timestamps::alignment`]).
    pub fn with_watermark_alignment(
        self,
        group: &str,
        max_drift: Duration,
        update_interval: Duration,
    ) -> WatermarkStrategy<TF, G, WatermarkAlignment> {
        WatermarkStrategy {
            generator: self.generator,
            alignment: WatermarkAlignment::new(group, max_drift, update_interval),
            timestamps: self.timestamps,
        }
    }

    /// The timestamp extractor.
    pub fn timestamp_assigner(&self) -> &TF {
        &self.timestamps
    }

    /// The generator supplier.
    pub fn generator(&self) -> &G {
        &self.generator
    }

    /// The watermark alignment.
    pub fn alignment(&self) -> &A {
        &self.alignment
    }
}

impl<TF, A> WatermarkStrategy<TF, BoundedOutOfOrderness, A> {
    /// The out-of-orderness bound.
    pub fn out_of_orderness(&self) -> Duration {
        self.generator.bound()
    }
}

impl<TF, G, A> WatermarkStrategy<TF, WatermarksWithIdleness<G>, A> {
    /// The idleness timeout.
    pub fn idleness(&self) -> Duration {
        self.generator.timeout()
    }
}
