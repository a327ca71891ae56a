//! Backpressure and buffer timeouts: with the smallest buffers and pools, a
//! slow sink or a large fan-out, every record still arrives exactly once and
//! the job ends by itself.

use std::time::Duration;

use weir_runtime::ExecutionOptions;

use crate::options;
use crate::w1::{check_w1, W1Case};

/// 64-byte buffers (four W1 records), one buffer of credit per channel, no
/// floating buffers, every record sent at once.
///
/// The record counts below are ten thousand or more buffers per run, each
/// handed over with the least credit there is: enough to exercise every
/// wait, small enough that a debug build on a loaded 2-core machine ends
/// well inside the 30 s limit (the fan-out test at 200 k inputs took 10 s
/// alone and timed out beside the rest of the suite).
fn tiny_pools(workers: usize) -> ExecutionOptions {
    let mut o = options(workers);
    o.segment_size = 64;
    o.buffers_per_channel = 1;
    o.floating_buffers = 0;
    o.buffer_timeout = Duration::ZERO.into();
    o
}

#[test]
fn tiny_buffers_and_pools_two_workers() {
    check_w1(W1Case::new(40_000, 1_000, tiny_pools(2)));
}

#[test]
fn tiny_buffers_and_pools_three_workers_on_two_cores() {
    check_w1(W1Case::new(40_000, 1_000, tiny_pools(3)));
}

#[test]
fn tiny_buffers_with_full_buffers_and_a_timeout() {
    // Same tiny pools, but buffers fill up before they are sent.
    let mut o = tiny_pools(2);
    o.buffer_timeout = Duration::from_millis(5).into();
    check_w1(W1Case::new(40_000, 1_000, o));
}

#[test]
fn one_buffer_per_channel_and_no_floating_buffers_with_default_timeout() {
    // Documented-valid settings (buffers-per-channel 1, floating buffers 0)
    // with the default segment size and buffer timeout.
    let mut o = options(1);
    o.buffers_per_channel = 1;
    o.floating_buffers = 0;
    check_w1(W1Case::new(20_000, 1_000, o));
}

#[test]
fn slow_sink_behind_tiny_pools() {
    let mut case = W1Case::new(60_000, 1_000, tiny_pools(2));
    case.sink_spin = Duration::from_micros(1);
    check_w1(case);
}

#[test]
fn slow_sink_with_default_pools() {
    let mut case = W1Case::new(60_000, 1_000, options(3));
    case.sink_spin = Duration::from_micros(1);
    check_w1(case);
}

/// One input record becomes 50 records (800 bytes), far more than a
/// sender's whole pool of 64-byte buffers holds.
fn flat_map_of_fifty_records_per_input(workers: usize) {
    let mut case = W1Case::new(40_000, 1_000, tiny_pools(workers));
    case.fan_out = 50;
    check_w1(case);
}

#[test]
fn flat_map_of_fifty_records_per_input_with_tiny_pools_one_worker() {
    flat_map_of_fifty_records_per_input(1);
}

#[test]
fn flat_map_of_fifty_records_per_input_with_tiny_pools_two_workers() {
    flat_map_of_fifty_records_per_input(2);
}

#[test]
fn buffer_timeout_zero() {
    let mut o = options(2);
    o.buffer_timeout = Duration::ZERO.into();
    check_w1(W1Case::new(200_000, 1_000, o));
}

#[test]
fn buffer_timeout_fifty_ms() {
    let mut o = options(2);
    o.buffer_timeout = Duration::from_millis(50).into();
    check_w1(W1Case::new(200_000, 1_000, o));
}

#[test]
fn buffer_timeout_fifty_ms_with_few_records_per_channel() {
    // So few records that no buffer ever fills: only the timeout and the end
    // of input can send them.
    let mut o = options(3);
    o.buffer_timeout = Duration::from_millis(50).into();
    check_w1(W1Case::new(30, 7, o));
}
