//! Event-time tumbling windows with allowed lateness and late data.
//!
//! Three temperature sensors report every second; their readings arrive
//! in batches, some of them late. Each sensor's readings are summed up in
//! 10-second event-time windows. What it shows:
//! - a source of your own ([`Source`]) replaying batches with pauses;
//! - event time: timestamps from the readings and watermarks that trail
//!   the largest timestamp by a bound (2 s of out-of-orderness);
//! - `window(TumblingEventTimeWindows::of(..))` with an
//!   [`AggregateFunction`] (count, mean, max per window);
//! - what happens to a reading that comes after its window fired:
//!   within the allowed lateness (5 s) it updates the window, which fires
//!   again; later than that it goes to the late-data side output, a
//!   stream of its own (`OutputTag`, `get_side_output`);
//! - the reference: the same rules applied to the batches in a plain loop
//!   (what a watermark is and when a window fires, written out).
//!
//! Run it:
//!
//! ```sh
//! cargo run -p weir-examples --bin sensor_windows
//! ```
//!
//! It pauses 300 ms after each batch, far longer than its watermark
//! interval (it sets `pipeline.auto-watermark-interval=20ms`; `--set`
//! may change it), so every batch meets the watermark of the batches
//! before it (unless the machine stalls the job for most of a pause: the
//! watermark would then come after the next batch, and the check would
//! say which windows differ). It prints each window's results and the late readings,
//! checks them against the reference and exits 0, or 1 if they differ
//! (2 for bad arguments).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use weir_runtime::{
    execute, record_timestamp, AggregateFunction, Collector, Config, ExecutionOptions, JobGraph,
    OutputTag, Sink, Source, SourcePoll, SubtaskInfo, TimeWindow, TumblingEventTimeWindows,
    WatermarkStrategy, Wire,
};

#[derive(Parser)]
#[command(about = "Event-time windows over sensor readings, some of them late")]
struct Args {
    /// A weir config file (TOML, the keys of configs/README.md).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Overrides a config key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// One reading: a sensor, when it was measured (event time, ms) and the
/// temperature in tenths of a degree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Wire)]
struct Reading {
    sensor: u64,
    timestamp: i64,
    tenths: i64,
}

/// Window size, out-of-orderness bound and allowed lateness: lengths of
/// time are `Duration`s, instants (timestamps, watermarks) are `i64` ms.
const WINDOW: Duration = Duration::from_secs(10);
const OUT_OF_ORDERNESS: Duration = Duration::from_secs(2);
const LATENESS: Duration = Duration::from_secs(5);
/// The wait after each batch.
const PAUSE: Duration = Duration::from_millis(300);

/// Readings of sensors 1 to 3 at seconds 0 to 59, in batches of five
/// seconds of event time, as they arrive. Three of them are delayed:
/// one out of order but on time, one after its window fired but within
/// the lateness, one past the lateness.
fn batches() -> Vec<Vec<Reading>> {
    let mut batches = vec![Vec::new(); 12];
    for second in 0..60 {
        for sensor in 1..=3 {
            let reading = Reading {
                sensor,
                timestamp: second * 1_000 + sensor as i64 * 100,
                tenths: 200 + (sensor as i64 * 37 + second * 11) % 80,
            };
            let batch = match (sensor, second) {
                (1, 34) => 7, // 2.7 s late: out of order, still on time
                (2, 13) => 5, // its window [10 s, 20 s) fired; within the lateness
                (3, 21) => 8, // its window [20 s, 30 s) is gone: late data
                _ => second as usize / 5,
            };
            batches[batch].push(reading);
        }
    }
    batches
}

/// Replays batches of records, pausing after each one.
struct Replay {
    batches: Vec<Vec<Reading>>,
    /// The next record: batch and index in it.
    next: (usize, usize),
    /// The end of the pause under way.
    resume_at: Option<Instant>,
}

impl Source for Replay {
    type Out = Reading;

    fn poll_next<C: Collector<Reading>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if let Some(at) = self.resume_at {
            if Instant::now() < at {
                // Nothing before `at`: the worker may sleep until then.
                return SourcePoll::Idle { until: Some(at) };
            }
            self.resume_at = None;
        }
        let Some(batch) = self.batches.get(self.next.0) else {
            return SourcePoll::Finished;
        };
        let mut emitted = 0;
        // Check for backpressure before each record, as sources must.
        while emitted < budget && out.is_available() {
            let Some(&reading) = batch.get(self.next.1) else {
                self.next = (self.next.0 + 1, 0);
                self.resume_at = Some(Instant::now() + PAUSE);
                break;
            };
            out.collect(reading);
            self.next.1 += 1;
            emitted += 1;
        }
        SourcePoll::Emitted(emitted)
    }

    /// Where a restore resumes: batch and index (checkpoints store it).
    fn snapshot_position(&mut self) -> Vec<u8> {
        [self.next.0 as u64, self.next.1 as u64]
            .iter()
            .flat_map(|n| n.to_le_bytes())
            .collect()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        let n = |i: usize| -> Result<usize, String> {
            let bytes = position.get(i * 8..i * 8 + 8).ok_or("a short position")?;
            Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")) as usize)
        };
        self.next = (n(0)?, n(1)?);
        Ok(())
    }
}

/// Count, sum and maximum of a window's readings; the result is count,
/// mean and maximum (tenths of a degree).
#[derive(Clone)]
struct Stats;

impl AggregateFunction for Stats {
    type In = Reading;
    type Acc = (u64, i64, i64);
    type Out = (u64, i64, i64);

    fn create_accumulator(&self) -> (u64, i64, i64) {
        (0, 0, i64::MIN)
    }

    fn add(&self, r: Reading, (count, sum, max): (u64, i64, i64)) -> (u64, i64, i64) {
        (count + 1, sum + r.tenths, max.max(r.tenths))
    }

    fn get_result(&self, &(count, sum, max): &(u64, i64, i64)) -> (u64, i64, i64) {
        (count, sum / count.max(1) as i64, max)
    }

    fn merge(&self, a: (u64, i64, i64), b: (u64, i64, i64)) -> (u64, i64, i64) {
        (a.0 + b.0, a.1 + b.1, a.2.max(b.2))
    }
}

/// `(sensor, window, (count, mean, max))`: what the window emits.
type WindowResult = (u64, TimeWindow, (u64, i64, i64));

/// Gathers what its subtask receives into a list shared with `main`.
struct Gather<T>(Arc<Mutex<Vec<T>>>);

impl<T: 'static> Sink for Gather<T> {
    type In = T;

    fn invoke(&mut self, record: T) {
        self.0.lock().expect("not poisoned").push(record);
    }
}

/// The job: replay -> event time -> key_by(sensor) -> 10 s windows with
/// lateness -> results, late readings to their own list.
fn windows_job(
    results: &Arc<Mutex<Vec<WindowResult>>>,
    late: &Arc<Mutex<Vec<Reading>>>,
) -> JobGraph {
    let job = JobGraph::new("sensor-windows");
    let (results, late) = (results.clone(), late.clone());
    // Names the window operator's side output of late readings.
    let late_readings: OutputTag<Reading> = OutputTag::new("late-readings");
    let windows = job
        .source("readings", |_: &SubtaskInfo| Replay {
            batches: batches(),
            next: (0, 0),
            resume_at: None,
        })
        // One source subtask replays all batches in order.
        .parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(OUT_OF_ORDERNESS)
                .with_timestamp_assigner(|r: &Reading| r.timestamp),
        )
        .key_by(|r: &Reading| r.sensor)
        // Each reading carries the timestamp the strategy gave it.
        .window(TumblingEventTimeWindows::of(WINDOW, record_timestamp))
        .allowed_lateness(LATENESS)
        .side_output_late_data(&late_readings)
        .aggregate("stats", Stats);
    // The late readings are a stream of their own, here into a sink.
    windows
        .get_side_output(&late_readings)
        .sink("late", move |_: &SubtaskInfo| Gather(late.clone()));
    windows.sink("results", move |_: &SubtaskInfo| Gather(results.clone()));
    job
}

/// What the job must emit, worked out in a plain loop: each batch meets
/// the watermark of the batches before it (largest timestamp - bound -
/// 1); a window fires when the watermark reaches its end - 1, again for
/// each record within the lateness after that, and records later than
/// end - 1 + lateness are late data. The end of the input fires the rest.
fn reference() -> (Vec<WindowResult>, Vec<Reading>) {
    /// Per (sensor, window start): the accumulator and whether it fired.
    type Windows = BTreeMap<(u64, i64), ((u64, i64, i64), bool)>;
    /// The lengths in ms, to compute with the timestamps.
    const SIZE: i64 = WINDOW.as_millis() as i64;
    const BOUND: i64 = OUT_OF_ORDERNESS.as_millis() as i64;
    const LATE: i64 = LATENESS.as_millis() as i64;
    /// Fires the windows the watermark reached, in start order.
    fn fire_due(windows: &mut Windows, watermark: i64, results: &mut Vec<WindowResult>) {
        for (&(sensor, start), (acc, fired)) in windows.iter_mut() {
            if !*fired && start + SIZE - 1 <= watermark {
                *fired = true;
                let window = TimeWindow::new(start, start + SIZE);
                results.push((sensor, window, Stats.get_result(acc)));
            }
        }
    }
    let stats = Stats;
    let mut windows = Windows::new();
    let (mut results, mut late) = (Vec::new(), Vec::new());
    let (mut watermark, mut max_ts) = (i64::MIN, i64::MIN);
    for batch in batches() {
        for r in batch {
            max_ts = max_ts.max(r.timestamp);
            let start = r.timestamp - r.timestamp.rem_euclid(SIZE);
            if start + SIZE - 1 + LATE <= watermark {
                late.push(r);
                continue;
            }
            let (acc, fired) = windows
                .entry((r.sensor, start))
                .or_insert((stats.create_accumulator(), false));
            *acc = stats.add(r, *acc);
            if *fired {
                let window = TimeWindow::new(start, start + SIZE);
                results.push((r.sensor, window, stats.get_result(acc)));
            }
        }
        watermark = watermark.max(max_ts - BOUND - 1);
        fire_due(&mut windows, watermark, &mut results);
    }
    fire_due(&mut windows, i64::MAX, &mut results);
    results.sort();
    late.sort();
    (results, late)
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    // Watermarks every 20 ms, unless --set says otherwise.
    let mut overrides = vec!["pipeline.auto-watermark-interval=20ms".to_owned()];
    overrides.extend(args.set);
    let config = match Config::load(args.config.as_deref(), &overrides) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let options = ExecutionOptions::from_config(&config);
    println!(
        "sensor windows: 3 sensors, {} s windows, {} s out of order at most, {} s lateness, \
         12 batches {} ms apart, {} workers",
        WINDOW.as_secs(),
        OUT_OF_ORDERNESS.as_secs(),
        LATENESS.as_secs(),
        PAUSE.as_millis(),
        options.workers
    );
    let (results, late) = (Arc::default(), Arc::default());
    if let Err(e) = execute(windows_job(&results, &late), &options) {
        eprintln!("error: {e}");
        return std::process::ExitCode::from(if e.retryable() { 1 } else { 2 });
    }
    let mut results: Vec<WindowResult> = std::mem::take(&mut *results.lock().expect("ok"));
    let mut late: Vec<Reading> = std::mem::take(&mut *late.lock().expect("ok"));
    results.sort();
    late.sort();

    let mut previous = None;
    for &(sensor, window, (count, mean, max)) in &results {
        let again = previous == Some((sensor, window));
        println!(
            "sensor {sensor} [{:>2} s, {:>2} s): {count:>2} readings, mean {:.1}, max {:.1}{}",
            window.start / 1_000,
            window.end / 1_000,
            mean as f64 / 10.0,
            max as f64 / 10.0,
            if again {
                "  (fired again: a late reading within the lateness)"
            } else {
                ""
            }
        );
        previous = Some((sensor, window));
    }
    for r in &late {
        println!(
            "late: sensor {} at {:.1} s, after its window's lateness: in the side output",
            r.sensor,
            r.timestamp as f64 / 1e3
        );
    }
    let (want_results, want_late) = reference();
    if results != want_results || late != want_late {
        eprintln!(
            "error: the job's windows differ from the reference:\n  got      {results:?}\n  \
             expected {want_results:?}\n  late     {late:?}\n  expected {want_late:?}"
        );
        return std::process::ExitCode::from(1);
    }
    let mut windows: Vec<(u64, TimeWindow)> = results.iter().map(|r| (r.0, r.1)).collect();
    windows.dedup();
    println!(
        "verified: {} windows fired, {} of them again for late readings, {} reading past the \
         lateness, as worked out without weir",
        windows.len(),
        results.len() - windows.len(),
        late.len()
    );
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batches show every case: the reference fires one window
    /// twice and has one reading past the lateness.
    #[test]
    fn the_data_has_a_late_firing_and_a_reading_past_the_lateness() {
        let (results, late) = reference();
        let mut windows: Vec<(u64, TimeWindow)> = results.iter().map(|r| (r.0, r.1)).collect();
        windows.dedup();
        assert_eq!(windows.len(), 18, "3 sensors, 6 windows each");
        assert_eq!(results.len(), 19, "one late firing");
        assert_eq!(late.len(), 1);
    }
}
