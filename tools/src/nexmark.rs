//! `weir nexmark generate --events N --out DIR [--rate R] [--seed S]
//! [--force]`: the first N events of the Nexmark stream (weir-nexmark) as
//! three CSV tables, `DIR/person/part-0.csv`, `DIR/auction/part-0.csv`
//! and `DIR/bid/part-0.csv` (column order and formats: weir-nexmark's
//! crate docs).
//!
//! DIR and the table folders are created if missing. A DIR that already
//! holds any of the three files is refused before anything is written,
//! unless `--force` asks to overwrite them: a second run never mixes its
//! rows into an earlier one's. The command prints one line with the rows
//! per table and exits 0; a file that cannot be created or written prints
//! one `error: ...` line naming it and exits 2 (what was written is then
//! incomplete).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Subcommand};
use weir_nexmark::{CsvTables, Generator, GeneratorConfig, WriteError};

/// What `weir nexmark` does.
#[derive(Subcommand)]
pub enum Action {
    /// Write the first N events of the Nexmark stream as CSV tables
    /// DIR/person, DIR/auction and DIR/bid (part-0.csv each).
    Generate(GenerateArgs),
}

/// `weir nexmark generate`'s flags.
#[derive(Args)]
pub struct GenerateArgs {
    /// How many events (persons, auctions and bids together, 1/3/46 in 50).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    events: u64,
    /// The directory the three tables go to.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Events per second of event time: event n happens at
    /// base time + n / R (default 10,000,000, the Nexmark suite's rate).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..))]
    rate: Option<u64>,
    /// Another seed gives another stream with the same ids, times and
    /// distributions (default 0).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Overwrite the tables if DIR already holds them.
    #[arg(long)]
    force: bool,
}

/// Runs `weir nexmark <action>`.
pub fn run(action: &Action) -> ExitCode {
    match action {
        Action::Generate(args) => generate(args),
    }
}

fn generate(args: &GenerateArgs) -> ExitCode {
    let defaults = GeneratorConfig::default();
    let config = GeneratorConfig {
        events_per_second: args.rate.unwrap_or(defaults.events_per_second),
        num_events: args.events,
        seed: args.seed.unwrap_or(defaults.seed),
        ..defaults
    };
    let generator = match Generator::new(config) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let written = CsvTables::create(&args.out, args.force).and_then(|mut tables| {
        for event in generator.stream() {
            tables.write(&event)?;
        }
        tables.finish()
    });
    let counts = match written {
        Ok(c) => c,
        Err(e @ WriteError::Exists { .. }) => {
            eprintln!("error: {e}; choose another --out or pass --force to overwrite");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "wrote {} nexmark events to {}: person {}, auction {}, bid {} rows in {seconds:.2} s ({} events/s)",
        counts.total(),
        args.out.display(),
        counts.person,
        counts.auction,
        counts.bid,
        weir_runtime::exec::progress::human_rate(counts.total() as f64 / seconds.max(1e-9)),
    );
    ExitCode::SUCCESS
}
