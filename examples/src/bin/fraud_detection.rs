//! Fraud detection: a keyed process function with state and timers,
//! after Flink's fraud-detection walkthrough.
//!
//! A small transaction (under $1) followed by a large one (over $500) on
//! the same account within a minute is an alert: someone tried a stolen
//! card with a small amount first. What it shows:
//! - a user record type with `#[derive(Wire)]`, so it can cross a `key_by`;
//! - event time: `assign_timestamps_and_watermarks` right after the source;
//! - a [`KeyedProcessFunction`] keeping a flag per account in keyed
//!   [`KeyedValueState`] and an event-time timer per flag that clears it
//!   a minute later (state that cleans up after itself), deleting the
//!   timer when the flag goes earlier;
//! - a sink of your own ([`Sink`]) gathering the alerts;
//! - unit tests of the function with weir's operator test harness
//!   (`weir_runtime::testing::KeyedOperatorHarness`), at the end of this
//!   file: `cargo test -p weir-examples --bin fraud_detection`.
//!
//! Run it:
//!
//! ```sh
//! cargo run -p weir-examples --bin fraud_detection
//! cargo run -p weir-examples --bin fraud_detection -- --transactions 1000000 \
//!     --set parallelism.default=4
//! ```
//!
//! It generates the transactions, runs the job, checks the alerts against
//! the same rule applied to the transactions in a plain loop, prints a few
//! and exits 0, or 1 if they differ (2 for bad arguments).

use std::sync::{Arc, Mutex};

use clap::Parser;
use weir_runtime::{
    execute, Collector, Config, ExecutionOptions, JobGraph, KeyContext, KeyedProcessFunction,
    KeyedStates, KeyedTimerService, KeyedValueState, SequenceSource, Sink, SubtaskInfo, TimeDomain,
    TimerQueues, WatermarkStrategy, Wire,
};

#[derive(Parser)]
#[command(about = "Flags a small transaction followed by a large one within a minute")]
struct Args {
    /// Transactions to generate.
    #[arg(long, default_value_t = 200_000)]
    transactions: u64,
    /// A weir config file (TOML, the keys of configs/README.md).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Overrides a config key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// A card transaction. `Wire` is how records cross a `key_by` (and how
/// state is checkpointed): derived, field by field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Wire)]
struct Transaction {
    account: u64,
    /// Event time: milliseconds since the epoch.
    timestamp: i64,
    cents: u64,
}

/// What the detector emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Alert {
    account: u64,
    /// The small transaction's time and the large one's.
    small_at: i64,
    large_at: i64,
    /// The large transaction's amount.
    cents: u64,
}

const SMALL_CENTS: u64 = 100;
const LARGE_CENTS: u64 = 50_000;
const ONE_MINUTE: i64 = 60_000;

/// The rule, per account: after a small transaction, the next one is an
/// alert if it is large and comes within a minute.
struct FraudDetector {
    /// Per account: the time of its last transaction, if that was small.
    small_at: KeyedValueState<u64, i64>,
    /// A timer a minute after each small transaction clears the flag, so
    /// that accounts that went quiet leave no state behind.
    timers: KeyedTimerService<u64>,
}

impl FraudDetector {
    fn new(_: &SubtaskInfo) -> Self {
        FraudDetector {
            small_at: KeyedValueState::new("small-at"),
            timers: KeyedTimerService::new(),
        }
    }
}

impl KeyedProcessFunction for FraudDetector {
    type Key = u64;
    type In = Transaction;
    type Out = Alert;

    fn process<C: Collector<Alert>>(&mut self, ctx: &KeyContext<u64>, t: Transaction, out: &mut C) {
        if let Some(small_at) = self.small_at.value(ctx) {
            // The timer clears the flag once the watermark passes the
            // minute, which may be later than this record: the time check
            // keeps the answer independent of when watermarks come.
            if t.cents > LARGE_CENTS && t.timestamp - small_at <= ONE_MINUTE {
                out.collect(Alert {
                    account: t.account,
                    small_at,
                    large_at: t.timestamp,
                    cents: t.cents,
                });
            }
            // Only the next transaction counts: forget the flag and its
            // timer.
            self.timers
                .delete_event_time_timer(ctx, small_at + ONE_MINUTE);
            self.small_at.clear(ctx);
        }
        if t.cents < SMALL_CENTS {
            self.small_at.update(ctx, t.timestamp);
            self.timers
                .register_event_time_timer(ctx, t.timestamp + ONE_MINUTE);
        }
    }

    fn on_timer<C: Collector<Alert>>(
        &mut self,
        _timestamp: i64,
        ctx: &KeyContext<u64>,
        _domain: TimeDomain,
        _out: &mut C,
    ) {
        // A minute passed without another transaction.
        self.small_at.clear(ctx);
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.small_at);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<u64>> {
        Some(&mut self.timers)
    }
}

/// Gathers every alert of its subtask into a list shared with `main`.
struct AlertSink(Arc<Mutex<Vec<Alert>>>);

impl Sink for AlertSink {
    type In = Alert;

    fn invoke(&mut self, alert: Alert) {
        self.0.lock().expect("not poisoned").push(alert);
    }
}

/// 2024-01-01 00:00 UTC, in ms.
const START: i64 = 1_704_067_200_000;
const ACCOUNTS: u64 = 100;

/// Transaction `i`: a pseudo-random account and amount (3% small, 3%
/// large), every 250 ms of event time.
fn transaction(i: u64) -> Transaction {
    let h = splitmix64(i);
    let cents = match (h >> 32) % 100 {
        0..=2 => 1 + (h >> 8) % (SMALL_CENTS - 1),
        3..=5 => LARGE_CENTS + 1 + (h >> 8) % 100_000,
        _ => SMALL_CENTS + (h >> 8) % 20_000,
    };
    Transaction {
        account: h % ACCOUNTS,
        timestamp: START + i as i64 * 250,
        cents,
    }
}

/// A well-mixed hash of `x` (splitmix64's output function).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of a transaction.
fn by_account(t: &Transaction) -> u64 {
    t.account
}

/// The job: transactions -> event time -> key_by(account) -> detector ->
/// alerts.
fn fraud_job(transactions: u64, alerts: &Arc<Mutex<Vec<Alert>>>) -> JobGraph {
    let mut job = JobGraph::new("fraud-detection");
    job.parameter("transactions", transactions);
    let alerts = alerts.clone();
    job.source("transactions", move |info: &SubtaskInfo| {
        SequenceSource::new(info, transactions, transaction)
    })
    // One source subtask: each account's transactions stay in time order.
    .parallelism(1)
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|t: &Transaction| t.timestamp),
    )
    .key_by(by_account)
    .process("fraud-detector", FraudDetector::new)
    .sink("alerts", move |_: &SubtaskInfo| AlertSink(alerts.clone()));
    job
}

/// The same rule in a plain loop over the transactions, in order.
fn expected_alerts(transactions: u64) -> Vec<Alert> {
    let mut small_at: std::collections::HashMap<u64, i64> = Default::default();
    let mut alerts = Vec::new();
    for t in (0..transactions).map(transaction) {
        if let Some(s) = small_at.remove(&t.account) {
            if t.cents > LARGE_CENTS && t.timestamp - s <= ONE_MINUTE {
                alerts.push(Alert {
                    account: t.account,
                    small_at: s,
                    large_at: t.timestamp,
                    cents: t.cents,
                });
            }
        }
        if t.cents < SMALL_CENTS {
            small_at.insert(t.account, t.timestamp);
        }
    }
    alerts.sort();
    alerts
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let config = match Config::load(args.config.as_deref(), &args.set) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let options = ExecutionOptions::from_config(&config);
    println!(
        "fraud detection: {} transactions of {ACCOUNTS} accounts on {} workers",
        args.transactions, options.workers
    );
    let alerts = Arc::new(Mutex::new(Vec::new()));
    if let Err(e) = execute(fraud_job(args.transactions, &alerts), &options) {
        eprintln!("error: {e}");
        return std::process::ExitCode::from(if e.retryable() { 1 } else { 2 });
    }
    let mut got = std::mem::take(&mut *alerts.lock().expect("not poisoned"));
    got.sort_by_key(|a| (a.large_at, a.account));
    println!("the first alerts:");
    for a in got.iter().take(5) {
        println!(
            "ALERT account {:>3}: under $1 at +{:.2}s, then ${:.2} at +{:.2}s",
            a.account,
            (a.small_at - START) as f64 / 1e3,
            a.cents as f64 / 100.0,
            (a.large_at - START) as f64 / 1e3,
        );
    }
    got.sort();
    let expected = expected_alerts(args.transactions);
    if got != expected {
        let first = got
            .iter()
            .zip(&expected)
            .position(|(g, e)| g != e)
            .unwrap_or(got.len().min(expected.len()));
        eprintln!(
            "error: {} alerts, expected {}; first difference at alert {first}: got {:?}, expected {:?}",
            got.len(),
            expected.len(),
            got.get(first),
            expected.get(first)
        );
        return std::process::ExitCode::from(1);
    }
    println!(
        "verified: {} alerts, as the same rule finds in a plain loop",
        got.len()
    );
    std::process::ExitCode::SUCCESS
}

/// The detector on its own, driven by weir's operator test harness:
/// records, watermarks, its state and timers, a snapshot and a restore.
#[cfg(test)]
mod tests {
    use weir_runtime::testing::KeyedOperatorHarness;

    use super::*;

    fn t(account: u64, timestamp: i64, cents: u64) -> Transaction {
        Transaction {
            account,
            timestamp,
            cents,
        }
    }

    #[test]
    fn a_small_then_a_large_transaction_within_a_minute_is_an_alert() {
        let mut h = KeyedOperatorHarness::new(FraudDetector::new, by_account).unwrap();
        h.process_element(t(7, 0, 50));
        assert_eq!(h.event_time_timers(), vec![(ONE_MINUTE, 7)]);
        h.process_element(t(7, 30_000, 80_000));
        let alert = Alert {
            account: 7,
            small_at: 0,
            large_at: 30_000,
            cents: 80_000,
        };
        assert_eq!(h.take_output(), vec![alert]);
        // The flag and its timer are gone.
        assert_eq!(h.function().small_at.value(&h.key_context(7)), None);
        assert!(h.event_time_timers().is_empty());
    }

    #[test]
    fn the_timer_clears_the_flag_a_minute_later() {
        let mut h = KeyedOperatorHarness::new(FraudDetector::new, by_account).unwrap();
        h.process_element(t(7, 1_000, 50));
        assert_eq!(h.function().small_at.value(&h.key_context(7)), Some(1_000));
        h.process_watermark(1_000 + ONE_MINUTE);
        assert_eq!(h.function().small_at.value(&h.key_context(7)), None);
        h.process_element(t(7, 70_000, 80_000));
        assert!(h.output().is_empty());
    }

    #[test]
    fn a_large_transaction_after_the_minute_is_no_alert_even_before_the_timer() {
        let mut h = KeyedOperatorHarness::new(FraudDetector::new, by_account).unwrap();
        h.process_element(t(7, 0, 50));
        // No watermark yet: the timer has not fired.
        h.process_element(t(7, ONE_MINUTE + 1, 80_000));
        assert!(h.output().is_empty());
    }

    #[test]
    fn other_accounts_and_medium_amounts_reset_nothing_else() {
        let mut h = KeyedOperatorHarness::new(FraudDetector::new, by_account).unwrap();
        h.process_elements([t(1, 0, 50), t(2, 1, 50), t(1, 2, 5_000), t(2, 3, 60_000)]);
        assert_eq!(h.take_output().len(), 1, "account 2 only");
    }

    #[test]
    fn the_flag_and_its_timer_survive_a_snapshot_and_restore() {
        let mut h = KeyedOperatorHarness::new(FraudDetector::new, by_account).unwrap();
        h.process_element(t(7, 0, 50));
        let snapshot = h.snapshot().unwrap();
        let mut r =
            KeyedOperatorHarness::restore(FraudDetector::new, by_account, &snapshot).unwrap();
        assert_eq!(r.event_time_timers(), vec![(ONE_MINUTE, 7)]);
        r.process_element(t(7, 10_000, 90_000));
        assert_eq!(r.take_output().len(), 1);
    }

    #[test]
    fn the_reference_finds_alerts_in_the_generated_data() {
        assert!(!expected_alerts(20_000).is_empty());
    }
}
