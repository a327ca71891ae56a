//! A job with checkpoints and the exactly-once file sink that you can
//! kill, stop and restore.
//!
//! Payments come in for 1,000 accounts; for each payment the job writes
//! the account's running count and total (`account,n,total` lines) into
//! `part-*` files. What it shows:
//! - checkpointing turned on through weir's config keys
//!   (`execution.checkpointing.interval`, `state.checkpoints.dir`, and
//!   any other of configs/README.md), with the exactly-once
//!   [`TransactionalFileSink`]: output is committed per checkpoint, so a
//!   crash at any moment and a restore write every line exactly once;
//! - `--restore latest|PATH`: continue from the newest complete
//!   checkpoint, or from a given checkpoint or savepoint;
//! - SIGTERM / Ctrl-C: stop with a savepoint (into `state.savepoints.dir`
//!   if set, else a checkpoint) and print where it is; a second signal
//!   aborts at once;
//! - a source wrapper of your own ([`Paced`]), which must forward the
//!   checkpoint hooks of the source it wraps;
//! - declaring what the job's state means (`parameter`,
//!   `output_directory`), so that a checkpoint of another job is refused.
//!
//! Run it, kill it, restore it:
//!
//! ```sh
//! cargo run -p weir-examples --bin checkpointed_totals -- --output /tmp/totals \
//!     --rate 20000 --set state.checkpoints.dir=/tmp/totals-checkpoints
//! # Ctrl-C (a savepoint), or kill -9 from another shell, then:
//! cargo run -p weir-examples --bin checkpointed_totals -- --output /tmp/totals \
//!     --set state.checkpoints.dir=/tmp/totals-checkpoints --restore latest
//! ```
//!
//! Without `--config`, checkpoints are taken every second into
//! `<output>-checkpoints` unless `--set` says otherwise; with `--config`
//! the file must turn them on (`examples/checkpointed_totals.toml`). A run that
//! reaches the end checks every committed line against the payments
//! replayed in a plain loop (each line exactly once) and exits 0, or 1
//! naming the first difference; a stopped run exits 0 after printing the
//! savepoint; bad arguments, or a checkpoint that does not fit, exit 2.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use weir_runtime::checkpoint::CheckpointSummary;
use weir_runtime::{
    execute, Collector, Config, ExecutionOptions, JobGraph, KeyContext, KeyedProcessFunction,
    KeyedStates, KeyedValueState, OperatorStates, RestoreFrom, SequenceSource, Source, SourcePoll,
    StopRequest, SubtaskInfo, TransactionalFileSink, Wire,
};

#[derive(Parser)]
#[command(about = "Running totals per account, checkpointed, written exactly once")]
struct Args {
    /// Where the lines are written (`part-*` files); created if missing.
    #[arg(long)]
    output: PathBuf,
    /// Payments to generate.
    #[arg(long, default_value_t = 200_000)]
    payments: u64,
    /// Payments per second (0: as fast as it goes), to leave time to kill
    /// or stop it.
    #[arg(long, default_value_t = 0)]
    rate: u64,
    /// A weir config file (TOML, the keys of configs/README.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Overrides a config key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Resume from `latest` (the newest complete checkpoint in
    /// state.checkpoints.dir) or a checkpoint's or savepoint's directory.
    #[arg(long, value_name = "latest|PATH")]
    restore: Option<String>,
}

/// One payment into an account, in cents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Wire)]
struct Payment {
    account: u64,
    cents: u64,
}

const ACCOUNTS: u64 = 1_000;

/// Payment `i` (the same every run, so a replay repeats it exactly).
fn payment(i: u64) -> Payment {
    let h = i
        .wrapping_add(0x9E37_79B9_7F4A_7C15)
        .wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let h = h ^ (h >> 31);
    Payment {
        account: h % ACCOUNTS,
        cents: 1 + (h >> 20) % 10_000,
    }
}

/// Per account: how many payments so far and their total; emits both
/// with every payment.
struct RunningTotals {
    totals: KeyedValueState<u64, (u64, u64)>,
}

impl KeyedProcessFunction for RunningTotals {
    type Key = u64;
    type In = Payment;
    type Out = (u64, u64, u64);

    fn process<C: Collector<(u64, u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        p: Payment,
        out: &mut C,
    ) {
        let (n, total) = self.totals.value_mut_or_insert_with(ctx, || (0, 0));
        *n += 1;
        *total += p.cents;
        out.collect((p.account, *n, *total));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.totals);
    }
}

/// Lets through at most `per_second` records per second of the source it
/// wraps (all of them if 0). The position and the states are the inner
/// source's: a wrapper forwards every checkpoint hook, or a restore would
/// lose them.
struct Paced<S> {
    inner: S,
    per_second: u64,
    started: Option<Instant>,
    emitted: u64,
}

impl<S: Source> Source for Paced<S> {
    type Out = S::Out;

    fn poll_next<C: Collector<S::Out>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        if self.per_second == 0 {
            return self.inner.poll_next(out, budget);
        }
        let started = *self.started.get_or_insert_with(Instant::now);
        let due = (started.elapsed().as_secs_f64() * self.per_second as f64) as u64;
        if due <= self.emitted {
            let next = (self.emitted + 1) as f64 / self.per_second as f64;
            return SourcePoll::Idle {
                until: Some(started + Duration::from_secs_f64(next)),
            };
        }
        let budget = budget.min((due - self.emitted) as usize);
        let polled = self.inner.poll_next(out, budget);
        if let SourcePoll::Emitted(n) = polled {
            self.emitted += n as u64;
        }
        polled
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        self.inner.snapshot_position()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        self.inner.restore_position(position)
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        self.inner.visit_state(states);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        self.inner.initialize_restored_state()
    }

    fn check(&mut self) -> Result<(), String> {
        self.inner.check()
    }

    fn is_retryable(&self, error: &str) -> bool {
        self.inner.is_retryable(error)
    }
}

/// The job: payments -> key_by(account) -> running totals -> files,
/// exactly once.
fn totals_job(payments: u64, rate: u64, output: &Path) -> JobGraph {
    let mut job = JobGraph::new("checkpointed-totals");
    // A checkpoint of a run with another number of payments, or writing
    // elsewhere, means other state: refused instead of restored. (The
    // rate is no parameter: a restore may change it.)
    job.parameter("payments", payments).output_directory(output);
    let output = output.to_path_buf();
    job.source("payments", move |info: &SubtaskInfo| Paced {
        inner: SequenceSource::new(info, payments, payment),
        per_second: rate,
        started: None,
        emitted: 0,
    })
    // One source subtask, so each account's payments come in one order
    // and its running totals are the same in every run.
    .parallelism(1)
    .key_by(|p: &Payment| p.account)
    .process("totals", |_: &SubtaskInfo| RunningTotals {
        totals: KeyedValueState::new("totals"),
    })
    .sink("files", move |info: &SubtaskInfo| {
        TransactionalFileSink::new(
            &output,
            info,
            |&(account, n, total): &(u64, u64, u64), out| {
                writeln!(out, "{account},{n},{total}").expect("writing to a Vec cannot fail")
            },
        )
    });
    job
}

/// weir's configuration. Without `--config`, checkpoints every second
/// into `<output>-checkpoints` come first, then the `--set` overrides
/// (which may change them); with `--config`, the file says how
/// checkpoints are taken. The example needs them.
fn load_config(args: &Args) -> Result<Config, String> {
    let mut overrides = Vec::new();
    if args.config.is_none() {
        let mut dir = args.output.clone().into_os_string();
        dir.push("-checkpoints");
        overrides.push("execution.checkpointing.interval=1s".to_owned());
        overrides.push(format!("state.checkpoints.dir={}", dir.to_string_lossy()));
    }
    overrides.extend(args.set.iter().cloned());
    let config = Config::load(args.config.as_deref(), &overrides).map_err(|e| e.to_string())?;
    if !config.checkpointing_enabled() {
        let needed = "execution.checkpointing.interval and state.checkpoints.dir";
        return Err(format!("this example needs checkpoints: set {needed}"));
    }
    Ok(config)
}

/// Starts a thread that turns the first SIGTERM or SIGINT into a stop
/// with a savepoint, and a second one into an exit.
fn stop_on_signals() -> std::io::Result<StopRequest> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = StopRequest::new();
    let request = stop.clone();
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if request.request() {
                eprintln!("stopping with a savepoint; a second signal aborts");
            } else {
                eprintln!("aborted: the next run restores the last checkpoint (--restore latest)");
                std::process::exit(128 + signal);
            }
        }
    });
    Ok(stop)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match load_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = ExecutionOptions::from_config(&config);
    options.restore = match args.restore.as_deref() {
        None => RestoreFrom::Nothing,
        Some("latest") => RestoreFrom::Latest,
        Some(path) => RestoreFrom::Path(PathBuf::from(path)),
    };
    options.stop = match stop_on_signals() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("error: cannot handle SIGTERM and SIGINT: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "checkpointed totals: {} payments -> {} on {} workers, checkpoints every {} into {}",
        args.payments,
        args.output.display(),
        options.workers,
        config
            .get("execution.checkpointing.interval")
            .unwrap_or_default(),
        config.get("state.checkpoints.dir").unwrap_or_default()
    );
    let result = match execute(totals_job(args.payments, args.rate, &args.output), &options) {
        Ok(result) => result,
        Err(e) => {
            // A failure a restart may cure (1), or one it cannot (2): a
            // checkpoint of another job, a directory that is a file, ...
            eprintln!("error: {e}");
            return ExitCode::from(if e.retryable() { 1 } else { 2 });
        }
    };
    if let Some(restored) = &result.restored {
        println!(
            "restored checkpoint {} ({})",
            restored.checkpoint_id,
            restored.dir.display()
        );
    }
    let summary = CheckpointSummary::of(&result.checkpoints);
    println!(
        "{} checkpoints completed, {} failed, {} restarts",
        summary.completed, summary.failed, result.restarts
    );
    if let Some(stopped) = &result.stopped {
        // Stopped early: the output so far is committed; nothing to check.
        println!(
            "stopped with a {}: {}",
            stopped.kind,
            std::path::absolute(&stopped.dir)
                .unwrap_or_else(|_| stopped.dir.clone())
                .display()
        );
        return ExitCode::SUCCESS;
    }
    match check_output(args.payments, &args.output) {
        Ok(lines) => {
            println!("verified: {lines} lines, each payment's exactly once");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Checks that the committed `part-*` files of `output` hold exactly the
/// lines of the payments replayed in a plain loop, each once; returns
/// their number.
fn check_output(payments: u64, output: &Path) -> Result<usize, String> {
    let mut expected: HashMap<(u64, u64), u64> = HashMap::new();
    let mut totals: HashMap<u64, (u64, u64)> = HashMap::new();
    for p in (0..payments).map(payment) {
        let (n, total) = totals.entry(p.account).or_default();
        *n += 1;
        *total += p.cents;
        expected.insert((p.account, *n), *total);
    }
    let mut seen = 0;
    let entries =
        std::fs::read_dir(output).map_err(|e| format!("cannot read {}: {e}", output.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if !name.is_some_and(|n| n.starts_with("part-")) {
            continue; // in progress, or weir's own
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for line in text.lines() {
            let fields: Vec<u64> = line.split(',').filter_map(|f| f.parse().ok()).collect();
            let [account, n, total] = fields[..] else {
                return Err(format!(
                    "{}: not an `account,n,total` line: {line:?}",
                    path.display()
                ));
            };
            match expected.remove(&(account, n)) {
                Some(want) if want == total => seen += 1,
                Some(want) => {
                    return Err(format!(
                        "account {account}'s payment {n}: total {total}, expected {want}"
                    ))
                }
                None => {
                    return Err(format!(
                        "account {account}'s payment {n} is written twice, or does not exist"
                    ))
                }
            }
        }
    }
    match expected.keys().min() {
        Some((account, n)) => Err(format!(
            "{} lines are missing, among them account {account}'s payment {n}",
            expected.len()
        )),
        None => Ok(seen),
    }
}

/// The check must catch what a job that is not exactly once would write.
#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `payments` payments, as the job writes them.
    fn lines(payments: u64) -> Vec<String> {
        let mut totals: HashMap<u64, (u64, u64)> = HashMap::new();
        (0..payments)
            .map(payment)
            .map(|p| {
                let (n, total) = totals.entry(p.account).or_default();
                *n += 1;
                *total += p.cents;
                format!("{},{n},{total}\n", p.account)
            })
            .collect()
    }

    #[test]
    fn the_check_finds_duplicated_and_missing_lines() {
        let dir = std::env::temp_dir().join(format!("weir-totals-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let all = lines(3_000);
        let (first, rest) = all.split_at(1_000);
        std::fs::write(dir.join("part-0000-0000000001"), first.concat()).unwrap();
        // Not committed: ignored.
        std::fs::write(dir.join(".pending-0000-0000000002"), rest.concat()).unwrap();
        assert!(check_output(3_000, &dir)
            .unwrap_err()
            .contains("2000 lines are missing"));

        std::fs::write(dir.join("part-0000-0000000002"), rest.concat()).unwrap();
        assert_eq!(check_output(3_000, &dir), Ok(3_000));

        // A replay committed twice.
        std::fs::write(dir.join("part-0001-0000000002"), rest[..5].concat()).unwrap();
        assert!(check_output(3_000, &dir)
            .unwrap_err()
            .contains("written twice"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
