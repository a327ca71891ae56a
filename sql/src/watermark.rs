//! The watermarks of a table's `WATERMARK FOR ts AS ts - INTERVAL '..'`
//! declaration, made as Flink's SQL planner makes them for a source that
//! does not take the watermark itself (its `WatermarkAssignerOperator`,
//! which the filesystem connector gets): the watermark is the largest
//! `ts - delay` seen (not one less, as the DataStream API's bounded
//! out-of-orderness has it), and it goes out right behind a row that moved
//! it more than `pipeline.auto-watermark-interval` (in event time) past
//! the last one emitted, besides every interval of processing time.
//!
//! So rows hours apart in a file read in a few milliseconds are late as
//! Flink finds them late: a row whose window a watermark has already
//! fired is dropped whatever the speed of the read, where a watermark made
//! only on the clock would let every row of a small file in. With an
//! interval of zero every advance goes out at once. As Flink's operator,
//! the watermark starts at 0, the epoch, and only a larger one is ever
//! emitted: before the end of the input, rows before 1970 move no
//! watermark and are never late.

use weir_runtime::{WatermarkGenerator, WatermarkOutput};

/// One source subtask's watermarks of a `ts - delay` declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredWatermarks {
    /// The declaration's delay (ms).
    delay: i64,
    /// `pipeline.auto-watermark-interval` (ms): how far past the last
    /// emitted watermark a row must move it to emit it at once.
    interval: i64,
    /// The largest `ts - delay` so far (0 before it is larger).
    current: i64,
    /// The last watermark emitted (0 before any).
    emitted: i64,
}

impl DeclaredWatermarks {
    /// A generator of `ts - delay_ms`, emitting at once past
    /// `interval_ms`.
    pub fn new(delay_ms: i64, interval_ms: i64) -> Self {
        Self {
            delay: delay_ms,
            interval: interval_ms,
            current: 0,
            emitted: 0,
        }
    }

    /// The watermark so far, if above the last emitted.
    fn advance(&mut self, output: &mut WatermarkOutput) {
        if self.current > self.emitted {
            self.emitted = self.current;
            output.emit_watermark(self.current);
        }
    }
}

impl<T> WatermarkGenerator<T> for DeclaredWatermarks {
    #[inline]
    fn on_event(&mut self, _record: &T, timestamp: i64, output: &mut WatermarkOutput) {
        // (a row without a time extracts as i64::MIN: it moves nothing)
        self.current = self.current.max(timestamp.saturating_sub(self.delay));
        if self.current.saturating_sub(self.emitted) > self.interval {
            self.advance(output);
        }
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        self.advance(output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The watermarks emitted by `g` for `times`, per row (`None`: none).
    fn run(g: &mut DeclaredWatermarks, times: &[i64]) -> Vec<Option<i64>> {
        let mut out = WatermarkOutput::new();
        times
            .iter()
            .map(|&t| {
                let before = out.current_watermark();
                WatermarkGenerator::<()>::on_event(g, &(), t, &mut out);
                (out.current_watermark() != before).then(|| out.current_watermark())
            })
            .collect()
    }

    #[test]
    fn a_row_moving_the_watermark_past_the_interval_emits_it_at_once() {
        let mut g = DeclaredWatermarks::new(3_000, 200);
        assert_eq!(
            run(&mut g, &[10_000, 9_000, 10_150, 10_201, 10_300, 20_000]),
            [
                Some(7_000),
                None,
                None, // 150 ms past: waits for the clock
                Some(7_201),
                None,
                Some(17_000)
            ]
        );
        let mut out = WatermarkOutput::new();
        WatermarkGenerator::<()>::on_event(&mut g, &(), 20_100, &mut out);
        assert_eq!(out.current_watermark(), i64::MIN);
        WatermarkGenerator::<()>::on_periodic_emit(&mut g, &mut out);
        assert_eq!(out.current_watermark(), 17_100);
    }

    #[test]
    fn every_advance_goes_out_with_an_interval_of_zero() {
        let mut g = DeclaredWatermarks::new(0, 0);
        assert_eq!(
            run(&mut g, &[5, 5, 4, 6, i64::MIN]),
            [Some(5), None, None, Some(6), None]
        );
    }

    #[test]
    fn a_watermark_before_the_epoch_is_never_emitted() {
        let mut g = DeclaredWatermarks::new(1_000, 0);
        assert_eq!(
            run(&mut g, &[-5_000, 500, 1_000, 1_001]),
            [None, None, None, Some(1)]
        );
    }
}
