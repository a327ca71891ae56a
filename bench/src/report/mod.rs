//! `weir bench report [--quick] [--out DIR]`: runs every workload of
//! WORKLOADS.md (W1 against workers, keys and buffer timeout, W1 with
//! checkpoints, W2, the W3 sweep with aligned checkpoints, W4 in every
//! mode, W5 at several state sizes, Nexmark), each as a child process of
//! the same `weir` binary, checks that every run verified, and writes
//! `DIR/report.md` and `DIR/report.html` with plots as SVG and PNG, the
//! machine it ran on and the exact command of every figure.
//!
//! [`plan`] says which runs at which size, [`child`] runs one and judges
//! it, the section modules ([`throughput`], [`latency`], [`checkpoints`])
//! turn runs into tables and charts, [`plot`] draws the charts and
//! [`doc`] renders the whole as Markdown and HTML. A run that fails (a
//! non-zero exit, no JSON line, an unverified result, missing checkpoints)
//! is listed at the top of the report with its stderr, marked in its
//! table, left out of the plots, and makes the command exit non-zero.

mod checkpoints;
pub mod child;
pub mod doc;
mod latency;
pub mod machine;
pub mod plan;
pub mod plot;
mod throughput;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use child::RunRecord;
use doc::{Block, Table};
use machine::Machine;
pub use plan::Scale;
use plan::Sizes;
use plot::Chart;

/// What `weir bench report` was asked for.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// The `weir` binary the runs use (the running one).
    pub exe: PathBuf,
    /// Where the report goes.
    pub out: PathBuf,
    /// How big.
    pub scale: Scale,
}

/// The default output directory.
pub const DEFAULT_OUT: &str = "target/report";

/// What a finished report holds.
#[derive(Clone, Debug)]
pub struct ReportOutcome {
    /// Runs made.
    pub runs: usize,
    /// Runs that failed.
    pub failed: usize,
    /// Wall-clock seconds of the whole report.
    pub seconds: f64,
    /// `report.md`.
    pub markdown: PathBuf,
    /// `report.html`.
    pub html: PathBuf,
}

/// A section's blocks and the charts drawn after them.
pub(crate) struct Section {
    blocks: Vec<Block>,
    charts: Vec<Chart>,
}

/// Runs the report; an `Err` is a report that could not be made at all
/// (no font, an unwritable directory). Failed runs are not errors: they
/// are in the report and counted in [`ReportOutcome::failed`].
pub fn run(opts: &ReportOptions) -> Result<ReportOutcome, String> {
    // Before any run: a missing font would only show after all of them.
    let font = plot::load_font()?;
    let out = &opts.out;
    let logs = out.join("logs");
    let work = out.join("work");
    // What an earlier report left.
    let _ = fs::remove_dir_all(&logs);
    let _ = fs::remove_dir_all(&work);
    for dir in [out, &logs, &work] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let machine = Machine::probe(&source);
    let specs = plan::runs(opts.scale, machine.cores, &work);
    let started = Instant::now();
    let mut runs = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        eprintln!(
            "report [{}/{}] {}",
            i + 1,
            specs.len(),
            child::command_line(&spec.args)
        );
        let r = child::run(&opts.exe, spec, &logs, i + 1);
        match &r.failure {
            None => eprintln!("  verified ({:.1} s)", r.seconds),
            Some(why) => eprintln!(
                "  FAILED ({:.1} s): {why}\n  stderr (last lines):\n{}",
                r.seconds, r.stderr_tail
            ),
        }
        runs.push(r);
    }
    let seconds = started.elapsed().as_secs_f64();
    let load_at_end = machine::load_average();
    // Each run deleted its directory if it passed: what is left belongs to
    // failed runs (W5's run logs, checkpoints) and stays for inspection.
    let _ = fs::remove_dir(&work);

    let sizes = Sizes::of(opts.scale);
    let cores = machine.cores;
    let sections = [
        throughput::w1_workers(&runs, cores),
        throughput::w1_keys(&runs, cores),
        throughput::w1_timeout(&runs, cores),
        latency::w3(&runs, &sizes, cores),
        throughput::w1_checkpoints(&runs, &sizes),
        throughput::w2(&runs, cores),
        checkpoints::w4(&runs, &sizes, cores),
        checkpoints::w5(&runs, &sizes),
        throughput::nexmark(&runs),
    ];
    let mut blocks = header(opts, &machine, &runs, seconds, load_at_end, &font);
    for section in sections {
        blocks.extend(section.blocks);
        for chart in section.charts {
            if chart.series.iter().all(|s| s.points.is_empty()) {
                blocks.push(Block::Para(format!(
                    "**No plot of \"{}\": no verified run to draw.**",
                    chart.title
                )));
                continue;
            }
            let svg = plot::render(&chart, out)?;
            blocks.push(Block::Figure {
                name: chart.name.clone(),
                caption: chart.title.clone(),
                svg,
            });
        }
    }
    let title = format!("weir benchmark report ({})", opts.scale.name());
    let write = |name: &str, text: String| {
        let path = out.join(name);
        fs::write(&path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
            .map(|()| path)
    };
    let markdown = write("report.md", doc::markdown(&blocks))?;
    let html = write("report.html", doc::html(&title, &blocks))?;
    let raw: Vec<_> = runs
        .iter()
        .map(|r| {
            json!({
                "command": r.command,
                "seconds": r.seconds,
                "passed": r.passed(),
                "failure": r.failure,
                "steal_ms": r.steal_ms,
                "report": r.json,
            })
        })
        .collect();
    write(
        "runs.json",
        serde_json::to_string_pretty(&raw).unwrap_or_default(),
    )?;
    Ok(ReportOutcome {
        runs: runs.len(),
        failed: runs.iter().filter(|r| !r.passed()).count(),
        seconds,
        markdown,
        html,
    })
}

/// The title, what was run, the machine, and the failures if any.
fn header(
    opts: &ReportOptions,
    m: &Machine,
    runs: &[RunRecord],
    seconds: f64,
    load_at_end: Option<f64>,
    font: &Path,
) -> Vec<Block> {
    let failed: Vec<&RunRecord> = runs.iter().filter(|r| !r.passed()).collect();
    let command = match opts.scale {
        Scale::Full => "weir bench report",
        Scale::Quick => "weir bench report --quick",
        Scale::Tiny => "weir bench report --tiny",
    };
    let verdict = if failed.is_empty() {
        format!("all {} verified", runs.len())
    } else {
        format!(
            "**{} of {} FAILED** (listed below)",
            failed.len(),
            runs.len()
        )
    };
    let mut blocks = vec![
        Block::Heading(1, format!("weir benchmark report ({})", opts.scale.name())),
        Block::Para(format!(
            "Made by `{command}` in {} min {} s: {} runs of `weir bench`, {verdict}. \
             Every figure was measured by this run on this machine; every table row gives \
             the exact command that produced it (paths relative to the directory the report \
             ran in), and `runs.json` beside this file holds each run's full JSON line.",
            seconds.round() as u64 / 60,
            seconds.round() as u64 % 60,
            runs.len()
        )),
    ];
    if opts.scale != Scale::Full {
        blocks.push(Block::Para(
            "This is a reduced report: the same sweeps with smaller N and shorter runs than \
             WORKLOADS.md's (see the commands). `weir bench report` runs the workloads at \
             their own sizes."
                .into(),
        ));
    }
    let load = |l: Option<f64>| l.map_or_else(|| "unknown".into(), |l| format!("{l:.2}"));
    let mut t = Table::new(&["machine", ""]);
    for (k, v) in [
        ("CPU", m.cpu.clone()),
        ("cores", m.cores.to_string()),
        ("memory", format!("{:.1} GiB", m.memory_gib)),
        ("kernel", m.kernel.clone()),
        ("date", m.date.clone()),
        ("commit", format!("`{}`", m.commit)),
        (
            "load average (1 min) at start / end",
            format!(
                "{} / {} (the report's own runs included at the end; a load near the \
                 core count before it started means other work competed for the cores, \
                 and figures are noisy)",
                load(m.load_at_start),
                load(load_at_end)
            ),
        ),
        (
            "disk (W5's measurement in this run, sequential, 2 MiB blocks)",
            match checkpoints::disk_rates(runs) {
                Some((w, r, direct)) => format!(
                    "writes {:.2} GB/s (O_DIRECT + fsync), reads {:.2} GB/s ({})",
                    w / 1e9,
                    r / 1e9,
                    if direct {
                        "O_DIRECT"
                    } else {
                        "buffered after dropping the cache"
                    }
                ),
                None => "not measured (no W5 run printed its figures)".into(),
            },
        ),
        ("plot font", format!("`{}`", font.display())),
    ] {
        t.row(vec![k.to_owned(), v]);
    }
    blocks.push(Block::Table(t));
    if !failed.is_empty() {
        blocks.push(Block::Heading(2, "Failures".into()));
        blocks.push(Block::Para(format!(
            "**{} failed: their figures are not plotted and the command exits 1.** \
             Their stdout and stderr are in `{}`, their working directories in `{}`.",
            if failed.len() == 1 {
                "1 run".to_owned()
            } else {
                format!("{} runs", failed.len())
            },
            opts.out.join("logs").display(),
            opts.out.join("work").display()
        )));
        for r in failed {
            blocks.push(Block::Failure {
                command: r.command.clone(),
                why: r.failure.clone().unwrap_or_default(),
                stderr_tail: r.stderr_tail.clone(),
            });
        }
    }
    blocks
}
