//! Word count over a directory of text files: the first weir job to copy.
//!
//! What it shows:
//! - a [`FileSource`] reading every file of a directory line by line, the
//!   files shared out among the source's subtasks;
//! - `flat_map` (a line into its words) and `key_by` (each word travels to
//!   the subtask that owns its key group);
//! - a [`KeyedProcessFunction`] counting each word in keyed
//!   [`KeyedValueState`], and an event-time timer at the end of time that
//!   emits each word's count once the input has ended;
//! - the exactly-once [`TransactionalFileSink`], which writes `word count`
//!   lines into committed `part-*` files;
//! - weir's configuration as `weir run` takes it (`--config FILE`,
//!   `--set key=value`, e.g. `--set parallelism.default=4`).
//!
//! Run it from the repository's root (the input defaults to
//! `examples/data/words`):
//!
//! ```sh
//! cargo run -p weir-examples --bin word_count -- --output /tmp/word-count
//! cargo run -p weir-examples --bin word_count -- --input my/texts --output /tmp/wc \
//!     --set parallelism.default=4
//! ```
//!
//! It then reads the committed files back, compares every count with a
//! count made here without weir, prints the most frequent words and exits
//! 0, or 1 naming the first difference (2 for bad arguments).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use weir_runtime::{
    execute, Collector, Config, ExecutionOptions, FileSource, JobGraph, KeyContext,
    KeyedProcessFunction, KeyedStates, KeyedTimerService, KeyedValueState, SubtaskInfo, TimeDomain,
    TimerQueues, TransactionalFileSink,
};

#[derive(Parser)]
#[command(about = "Counts the words of a directory of text files with weir")]
struct Args {
    /// The directory whose files are read (names starting with `.` are
    /// skipped).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/data/words"))]
    input: PathBuf,
    /// Where the counts are written (`part-*` files); created if missing.
    #[arg(long)]
    output: PathBuf,
    /// A weir config file (TOML, the keys of configs/README.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Overrides a config key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The words of a line: runs of letters, digits and apostrophes,
/// lowercased. The job and the check below both use it.
fn words(line: &str) -> Vec<String> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Counts each word in keyed state and emits `(word, count)` once the
/// input has ended.
struct CountWords {
    /// One count per word (the key of the record being processed).
    counts: KeyedValueState<String, u64>,
    /// Event-time timers, per word.
    timers: KeyedTimerService<String>,
}

impl KeyedProcessFunction for CountWords {
    type Key = String;
    type In = String;
    type Out = (String, u64);

    fn process<C: Collector<(String, u64)>>(
        &mut self,
        ctx: &KeyContext<String>,
        _word: String,
        _out: &mut C,
    ) {
        *self.counts.value_mut_or_insert_with(ctx, || 0) += 1;
        // The end of a bounded input is the final watermark, i64::MAX: it
        // fires every event-time timer, so a timer at the end of time is
        // the way to emit once per key when the input is done. Registering
        // it again for the same word does nothing.
        self.timers.register_event_time_timer(ctx, i64::MAX);
    }

    fn on_timer<C: Collector<(String, u64)>>(
        &mut self,
        _timestamp: i64,
        ctx: &KeyContext<String>,
        _domain: TimeDomain,
        out: &mut C,
    ) {
        if let Some(count) = self.counts.value(ctx) {
            out.collect((ctx.key().clone(), count));
        }
    }

    /// Every keyed state, so that checkpoints keep it (weir checks that
    /// none is missing).
    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.counts);
    }

    fn timer_service(&mut self) -> Option<&mut dyn TimerQueues<String>> {
        Some(&mut self.timers)
    }
}

/// The job: files -> words -> key_by(word) -> counts -> files.
fn word_count_job(input: &Path, output: &Path) -> JobGraph {
    let mut job = JobGraph::new("word-count");
    // What the job's state means: a checkpoint of a run over another
    // input, or into another output, is refused rather than restored.
    // The input declared as one, so that no savepoint is written where the
    // source would read it.
    job.parameter("input", input.display())
        .output_directory(output)
        .input_directory(input);
    let (input, output) = (input.to_path_buf(), output.to_path_buf());
    job.source("lines", move |info: &SubtaskInfo| {
        FileSource::new(&input, info).expect("the input directory was checked before the job")
    })
    .flat_map("words", |line: String| words(&line))
    .key_by_ref(|word: &String| word)
    .process("count", |_: &SubtaskInfo| CountWords {
        counts: KeyedValueState::new("counts"),
        timers: KeyedTimerService::new(),
    })
    .sink("files", move |info: &SubtaskInfo| {
        TransactionalFileSink::new(&output, info, |(word, count): &(String, u64), out| {
            writeln!(out, "{word} {count}").expect("writing to a Vec cannot fail")
        })
    });
    job
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = match Config::load(args.config.as_deref(), &args.set) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::read_dir(&args.input) {
        eprintln!(
            "error: cannot read input directory {}: {e}",
            args.input.display()
        );
        return ExitCode::from(2);
    }
    let options = ExecutionOptions::from_config(&config);
    println!(
        "word count: {} -> {} on {} workers",
        args.input.display(),
        args.output.display(),
        options.workers
    );
    let result = match execute(word_count_job(&args.input, &args.output), &options) {
        Ok(result) => result,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(if e.retryable() { 1 } else { 2 });
        }
    };
    println!(
        "done in {:.3} s: {} (word, count) lines written",
        result.elapsed.as_secs_f64(),
        result.metrics.total_sink_records()
    );

    // Check the committed output against a count made without weir.
    let expected = match count_directly(&args.input) {
        Ok(counts) => counts,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let written = match read_counts(&args.output) {
        Ok(counts) => counts,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(difference) = first_difference(&expected, &written) {
        eprintln!("error: the job's counts are wrong: {difference}");
        return ExitCode::from(1);
    }
    let mut top: Vec<(&String, &u64)> = written.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    println!("most frequent words:");
    for (word, count) in top.iter().take(5) {
        println!("  {count:>5}  {word}");
    }
    println!(
        "verified: {} distinct words, {} in all, as counted without weir",
        expected.len(),
        expected.values().sum::<u64>()
    );
    ExitCode::SUCCESS
}

/// Every word of the files the source reads (regular files whose names
/// do not start with `.`), counted in one loop.
fn count_directly(input: &Path) -> Result<HashMap<String, u64>, String> {
    let mut counts = HashMap::new();
    let entries =
        std::fs::read_dir(input).map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden || !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for word in text.lines().flat_map(words) {
            *counts.entry(word).or_default() += 1;
        }
    }
    Ok(counts)
}

/// The `word count` lines of the committed `part-*` files of `output`;
/// a word written twice is an error.
fn read_counts(output: &Path) -> Result<HashMap<String, u64>, String> {
    let mut counts = HashMap::new();
    let entries =
        std::fs::read_dir(output).map_err(|e| format!("cannot read {}: {e}", output.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        // Only `part-*` files are committed output; `.`-files are weir's
        // own or in progress.
        if !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("part-"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        for line in text.lines() {
            let (word, count) = line
                .rsplit_once(' ')
                .and_then(|(w, c)| Some((w.to_owned(), c.parse::<u64>().ok()?)))
                .ok_or_else(|| format!("{}: not a `word count` line: {line:?}", path.display()))?;
            if counts.insert(word.clone(), count).is_some() {
                return Err(format!("{word:?} is written twice"));
            }
        }
    }
    Ok(counts)
}

/// The first word whose counts differ, described.
fn first_difference(expected: &HashMap<String, u64>, got: &HashMap<String, u64>) -> Option<String> {
    let mut words: Vec<&String> = expected.keys().chain(got.keys()).collect();
    words.sort();
    words.dedup();
    words.into_iter().find_map(|w| {
        let (want, have) = (expected.get(w), got.get(w));
        (want != have).then(|| format!("{w:?}: expected {want:?}, the job wrote {have:?}"))
    })
}

/// The check must catch what a broken job would do.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercased_runs_of_letters_digits_and_apostrophes() {
        assert_eq!(
            words("It's 2 WEIRS, a-weir!"),
            ["it's", "2", "weirs", "a", "weir"]
        );
        assert!(words("  -- ").is_empty());
    }

    #[test]
    fn the_check_finds_a_wrong_a_missing_and_a_duplicated_count() {
        let expected: HashMap<String, u64> = [("a".into(), 2), ("b".into(), 1)].into();
        let wrong: HashMap<String, u64> = [("a".into(), 3), ("b".into(), 1)].into();
        let missing: HashMap<String, u64> = [("a".into(), 2)].into();
        assert!(first_difference(&expected, &expected).is_none());
        assert!(first_difference(&expected, &wrong)
            .unwrap()
            .contains("\"a\""));
        assert!(first_difference(&expected, &missing)
            .unwrap()
            .contains("\"b\""));

        let dir = std::env::temp_dir().join(format!("weir-wc-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("part-0000-0000000000"), "a 2\n").unwrap();
        std::fs::write(dir.join(".pending-0001-0000000001"), "b 9\n").unwrap();
        assert_eq!(read_counts(&dir).unwrap(), HashMap::from([("a".into(), 2)]));
        std::fs::write(dir.join("part-0001-0000000000"), "a 2\n").unwrap();
        assert!(read_counts(&dir).unwrap_err().contains("twice"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
