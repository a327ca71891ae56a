//! Flink's `StatusWatermarkValve`: combines the watermarks of a gate's
//! inputs. The operator's event time is the minimum of the watermarks of
//! its active inputs, never goes backwards, and the gate is idle when every
//! input is.

use weir_net::WatermarkStatus;

/// One input of a [`WatermarkValve`].
#[derive(Clone, Copy, Debug)]
struct InputStatus {
    watermark: i64,
    active: bool,
    /// Takes part in the minimum: active and caught up with the output.
    aligned: bool,
}

/// What a [`WatermarkValve`] emits for one input event: a new combined
/// watermark and then a new status, each if there is one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValveOutput {
    /// The combined watermark advanced to this.
    pub watermark: Option<i64>,
    /// The combined status changed to this.
    pub status: Option<WatermarkStatus>,
}

impl ValveOutput {
    /// True if nothing is emitted.
    pub fn is_empty(&self) -> bool {
        self.watermark.is_none() && self.status.is_none()
    }
}

/// Combines the watermarks and statuses of a gate's inputs into the
/// operator's event time, as Flink's `StatusWatermarkValve`:
///
/// - the combined watermark is the minimum over the *aligned* inputs
///   (active ones whose watermark caught up with the combined one) and is
///   only emitted when it advances;
/// - an input that goes idle stops holding it back; when every input is
///   idle the valve emits the largest watermark of all inputs (if the last
///   active one was the minimum) and the idle status;
/// - an input that becomes active again rejoins the minimum only once its
///   watermark reaches the combined one, so event time never goes back;
/// - watermarks of idle inputs, and any watermark while the valve is idle,
///   are ignored.
#[derive(Debug)]
pub struct WatermarkValve {
    inputs: Box<[InputStatus]>,
    last_watermark: i64,
    idle: bool,
}

impl WatermarkValve {
    /// A valve over `inputs` inputs, all active at `i64::MIN`.
    pub fn new(inputs: usize) -> Self {
        Self {
            inputs: vec![
                InputStatus {
                    watermark: i64::MIN,
                    active: true,
                    aligned: true,
                };
                inputs
            ]
            .into_boxed_slice(),
            last_watermark: i64::MIN,
            idle: false,
        }
    }

    /// The combined watermark last emitted (`i64::MIN` before any).
    pub fn current_watermark(&self) -> i64 {
        self.last_watermark
    }

    /// True if every input is idle.
    pub fn is_idle(&self) -> bool {
        self.idle
    }

    /// Watermark `watermark` arrived on input `input`.
    pub fn input_watermark(&mut self, input: usize, watermark: i64) -> ValveOutput {
        let mut out = ValveOutput::default();
        let ch = &mut self.inputs[input];
        if self.idle || !ch.active || watermark <= ch.watermark {
            return out;
        }
        ch.watermark = watermark;
        if !ch.aligned && watermark >= self.last_watermark {
            ch.aligned = true;
        }
        out.watermark = self.advance_min();
        out
    }

    /// Input `input` changed its status.
    pub fn input_status(&mut self, input: usize, status: WatermarkStatus) -> ValveOutput {
        let mut out = ValveOutput::default();
        let last = self.last_watermark;
        let ch = &mut self.inputs[input];
        match status {
            WatermarkStatus::Idle if ch.active => {
                ch.active = false;
                ch.aligned = false;
                let was_min = ch.watermark == last;
                if self.inputs.iter().all(|c| !c.active) {
                    if was_min {
                        out.watermark = self.flush_max();
                    }
                    self.idle = true;
                    out.status = Some(WatermarkStatus::Idle);
                } else if was_min {
                    out.watermark = self.advance_min();
                }
            }
            WatermarkStatus::Active if !ch.active => {
                ch.active = true;
                if ch.watermark >= last {
                    ch.aligned = true;
                }
                if self.idle {
                    self.idle = false;
                    out.status = Some(WatermarkStatus::Active);
                }
            }
            _ => {}
        }
        out
    }

    /// The minimum over the aligned inputs, if it advanced.
    fn advance_min(&mut self) -> Option<i64> {
        let min = self
            .inputs
            .iter()
            .filter(|c| c.aligned)
            .map(|c| c.watermark)
            .min()?;
        (min > self.last_watermark).then(|| {
            self.last_watermark = min;
            min
        })
    }

    /// The maximum over all inputs, if it advanced (every input is idle).
    fn flush_max(&mut self) -> Option<i64> {
        let max = self.inputs.iter().map(|c| c.watermark).max()?;
        (max > self.last_watermark).then(|| {
            self.last_watermark = max;
            max
        })
    }
}

#[cfg(test)]
mod tests;
