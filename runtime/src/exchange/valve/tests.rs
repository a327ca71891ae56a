//! Tests of the watermark valve (Flink's `StatusWatermarkValve` semantics).

use weir_net::WatermarkStatus::{Active, Idle};

use super::*;

fn wm(w: i64) -> ValveOutput {
    ValveOutput {
        watermark: Some(w),
        status: None,
    }
}

const NONE: ValveOutput = ValveOutput {
    watermark: None,
    status: None,
};

#[test]
fn combined_watermark_is_the_minimum_over_inputs() {
    let mut v = WatermarkValve::new(3);
    assert_eq!(v.input_watermark(0, 10), NONE);
    assert_eq!(v.input_watermark(1, 5), NONE);
    assert_eq!(v.input_watermark(2, 7), wm(5));
    assert_eq!(v.input_watermark(1, 20), wm(7));
    // A watermark below an input's last one is ignored.
    assert_eq!(v.input_watermark(1, 3), NONE);
    assert_eq!(v.input_watermark(2, 30), wm(10));
    // Equal to the combined one: no new output.
    assert_eq!(v.input_watermark(0, 10), NONE);
    assert_eq!(v.current_watermark(), 10);
}

#[test]
fn an_idle_input_stops_holding_event_time_back() {
    let mut v = WatermarkValve::new(2);
    v.input_watermark(0, 100);
    assert_eq!(v.input_watermark(1, 4), wm(4));
    // Input 1 held the minimum: going idle lets input 0 lead.
    assert_eq!(v.input_status(1, Idle), wm(100));
    assert!(!v.is_idle());
    assert_eq!(v.input_watermark(0, 150), wm(150));
    // Watermarks of an idle input are ignored.
    assert_eq!(v.input_watermark(1, 400), NONE);
    assert_eq!(v.current_watermark(), 150);
}

#[test]
fn a_rejoining_input_never_moves_event_time_back() {
    let mut v = WatermarkValve::new(2);
    v.input_watermark(0, 100);
    v.input_watermark(1, 4);
    v.input_status(1, Idle);
    assert_eq!(v.current_watermark(), 100);
    // Active again, but behind: not aligned, so it neither lowers nor
    // holds back the combined watermark.
    assert_eq!(v.input_status(1, Active), NONE);
    assert_eq!(v.input_watermark(1, 50), NONE);
    assert_eq!(v.input_watermark(0, 120), wm(120));
    // Caught up: it takes part in the minimum again.
    assert_eq!(v.input_watermark(1, 130), NONE);
    assert_eq!(v.input_watermark(0, 200), wm(130));
    assert_eq!(v.input_watermark(1, 250), wm(200));
}

#[test]
fn all_inputs_idle_makes_the_valve_idle_and_flushes_the_maximum() {
    let mut v = WatermarkValve::new(2);
    v.input_watermark(0, 30);
    assert_eq!(v.input_watermark(1, 20), wm(20));
    assert_eq!(v.input_status(0, Idle), NONE);
    // The last active input held the minimum: the largest watermark of
    // all inputs is emitted before the idle status.
    assert_eq!(
        v.input_status(1, Idle),
        ValveOutput {
            watermark: Some(30),
            status: Some(Idle)
        }
    );
    assert!(v.is_idle());
    // Idle twice is no change.
    assert_eq!(v.input_status(1, Idle), NONE);
    // One input back: the valve is active again, at the same watermark.
    assert_eq!(
        v.input_status(0, Active),
        ValveOutput {
            watermark: None,
            status: Some(Active)
        }
    );
    assert_eq!(v.current_watermark(), 30);
    assert_eq!(v.input_watermark(0, 40), wm(40));
}

#[test]
fn the_final_watermark_passes_once_every_input_sent_it() {
    let mut v = WatermarkValve::new(2);
    v.input_watermark(0, 10);
    v.input_watermark(1, 10);
    assert_eq!(v.input_watermark(0, i64::MAX), NONE);
    assert_eq!(v.input_watermark(1, i64::MAX), wm(i64::MAX));
}
