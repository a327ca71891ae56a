//! The file connectors in a checkpointed job: lines read by the replayable
//! `FileSource`, counted per key, written by the `TransactionalFileSink`,
//! with an operator failing mid-way and the job restarting in-process from
//! its latest checkpoint. The committed `part-*` files must hold every
//! output line exactly once. The source's byte ranges, cut mid-read by a
//! failure, restore at another parallelism and every line is counted
//! once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::exec::restart::{FixedDelay, RestartStrategy};
use weir_runtime::{
    Collector, DecodeWith, Decoded, FileSource, JobError, JobGraph, KeyContext,
    KeyedProcessFunction, KeyedStates, KeyedValueState, RestoreFrom, SubtaskInfo, TaskError,
    TaskFailure, TransactionalFileSink,
};

use crate::{collect_into, options, run_job, run_ok, splitmix64, temp_dir, Collected};

const LINES: u64 = 400_000;
const KEYS: u64 = 777;
const FILES: u64 = 5;

/// Per key: how many lines so far; fails once at line `fail_at`.
struct CountLines {
    counts: KeyedValueState<u64, u64>,
    fail_at: u64,
    armed: Arc<AtomicBool>,
}

impl KeyedProcessFunction for CountLines {
    type Key = u64;
    type In = (u64, u64);
    type Out = (u64, u64);

    fn process<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (key, line): (u64, u64),
        out: &mut C,
    ) {
        if line == self.fail_at && self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected failure at line {line}");
        }
        let n = self.counts.value_mut_or_insert_with(ctx, || 0);
        *n += 1;
        out.collect((key, *n));
    }

    fn visit_state(&mut self, states: &mut KeyedStates<'_>) {
        states.value(&mut self.counts);
    }
}

/// Lines `key,line` spread over `FILES` files; returns each key's count.
fn write_input(dir: &Path) -> HashMap<u64, u64> {
    let mut counts = HashMap::new();
    let mut files: Vec<String> = vec![String::new(); FILES as usize];
    for i in 0..LINES {
        let key = splitmix64(i) % KEYS;
        *counts.entry(key).or_default() += 1;
        files[(i % FILES) as usize].push_str(&format!("{key},{i}\n"));
    }
    for (f, text) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("input-{f}.csv")), text).unwrap();
    }
    counts
}

/// Runs `job` at parallelism 2 with 10 ms checkpoints into
/// `checkpoints`, restarting once from the injected failure.
fn run_with_one_restart(job: JobGraph, checkpoints: &Path) {
    let mut o = options(2).with_checkpointing(Duration::from_millis(10), checkpoints);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 1,
        delay: Duration::from_millis(10),
    });
    let result = run_ok(job, &o);
    assert_eq!(result.restarts, 1, "the injected failure restarted the job");
}

/// `seen` (how often each `(key, n)` line was committed) holds every count
/// `1..=expected[key]` of every key once, and nothing else.
fn assert_every_count_once(seen: &HashMap<(u64, u64), u32>, expected: &HashMap<u64, u64>) {
    assert_eq!(seen.len() as u64, LINES, "every output line is there");
    assert!(seen.values().all(|&c| c == 1), "no output line twice");
    for (&key, &count) in expected {
        assert!(
            seen.contains_key(&(key, count)),
            "key {key} reached {count}"
        );
    }
}

#[test]
fn file_source_to_transactional_sink_is_exactly_once_across_a_restart() {
    let root = temp_dir("files-e2e");
    std::fs::create_dir_all(&root).unwrap();
    let (input, output, checkpoints) = (root.join("in"), root.join("out"), root.join("ck"));
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir_all(&output).unwrap();
    let expected = write_input(&input);

    let armed = Arc::new(AtomicBool::new(true));
    let mut job = JobGraph::new("lines");
    job.parameter("input", input.display())
        .output_directory(&output);
    let (inp, out) = (input.clone(), output.clone());
    job.source("lines", move |info: &SubtaskInfo| {
        FileSource::new(&inp, info).expect("the input directory exists")
    })
    .map("parse", |line: String| {
        let (k, i) = line.split_once(',').expect("key,line");
        (k.parse::<u64>().unwrap(), i.parse::<u64>().unwrap())
    })
    .key_by(|r: &(u64, u64)| r.0)
    .process("count", move |_: &SubtaskInfo| CountLines {
        counts: KeyedValueState::new("counts"),
        fail_at: LINES / 2,
        armed: armed.clone(),
    })
    .sink("files", move |info: &SubtaskInfo| {
        TransactionalFileSink::new(&out, info, |r: &(u64, u64), buf: &mut Vec<u8>| {
            buf.extend_from_slice(format!("{},{}\n", r.0, r.1).as_bytes())
        })
    });
    run_with_one_restart(job, &checkpoints);

    // Every (key, n) for n in 1..=count exactly once, nothing else.
    let mut seen: HashMap<(u64, u64), u32> = HashMap::new();
    for entry in std::fs::read_dir(&output).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if name == ".weir-lineage" || name == ".weir-lock" {
            continue; // the run's record of the directory's owner
        }
        assert!(
            !name.starts_with('.'),
            "no pending or in-progress file is left: {name}"
        );
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let (k, n) = line.split_once(',').unwrap();
            *seen
                .entry((k.parse().unwrap(), n.parse().unwrap()))
                .or_default() += 1;
        }
    }
    assert_every_count_once(&seen, &expected);
    std::fs::remove_dir_all(&root).unwrap();
}

/// Two file sinks (even and odd keys) write one directory, as two SQL
/// INSERTs into one table do, and the job restarts from a checkpoint
/// mid-way: each sink writes, commits and recovers its own part files
/// (their names carry its uid), and every output line is there once.
#[test]
fn two_transactional_sinks_into_one_directory_are_exactly_once_across_a_restart() {
    let root = temp_dir("files-two-sinks");
    let (input, output, checkpoints) = (root.join("in"), root.join("out"), root.join("ck"));
    std::fs::create_dir_all(&input).unwrap();
    let expected = write_input(&input);

    let armed = Arc::new(AtomicBool::new(true));
    let mut job = JobGraph::new("two-sinks");
    job.output_directory(&output);
    let inp = input.clone();
    // The graph's streams borrow `job` until it runs.
    {
        let counted = job
            .source("lines", move |info: &SubtaskInfo| {
                FileSource::new(&inp, info).expect("the input directory exists")
            })
            .map("parse", |line: String| {
                let (k, i) = line.split_once(',').expect("key,line");
                (k.parse::<u64>().unwrap(), i.parse::<u64>().unwrap())
            })
            .key_by(|r: &(u64, u64)| r.0)
            .process("count", move |_: &SubtaskInfo| CountLines {
                counts: KeyedValueState::new("counts"),
                fail_at: LINES / 2,
                armed: armed.clone(),
            })
            .share();
        for parity in [0, 1] {
            let out = output.clone();
            counted
                .branch()
                .filter(&format!("keys-{parity}"), move |r: &(u64, u64)| {
                    r.0 % 2 == parity
                })
                .sink(&format!("files-{parity}"), move |info: &SubtaskInfo| {
                    TransactionalFileSink::new(&out, info, |r: &(u64, u64), buf: &mut Vec<u8>| {
                        buf.extend_from_slice(format!("{},{}\n", r.0, r.1).as_bytes())
                    })
                });
        }
    }
    run_with_one_restart(job, &checkpoints);

    let mut seen: HashMap<(u64, u64), u32> = HashMap::new();
    for entry in std::fs::read_dir(&output).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.starts_with("part-") {
            assert!(
                !name.starts_with(".pending-") && !name.starts_with(".inprogress-"),
                "no pending or in-progress file is left: {name}"
            );
            continue;
        }
        let parity = u64::from(name.starts_with("part-files-1-"));
        assert!(name.starts_with(&format!("part-files-{parity}-")), "{name}");
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let (k, n) = line.split_once(',').unwrap();
            let key: u64 = k.parse().unwrap();
            assert_eq!(key % 2, parity, "{name} holds only its sink's keys");
            *seen.entry((key, n.parse().unwrap())).or_default() += 1;
        }
    }
    assert_every_count_once(&seen, &expected);
    std::fs::remove_dir_all(&root).unwrap();
}

/// An input line that is not UTF-8 fails the job with the source's typed
/// error naming the file and offset: no panic, and no restart (the file
/// will be the same), whatever the restart strategy.
#[test]
fn an_input_that_is_not_utf8_fails_the_job_at_once_without_a_panic() {
    let root = temp_dir("files-utf8");
    let input = root.join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(input.join("a.txt"), b"one\ntwo\nthr\xffee\nfour\n").unwrap();
    let collected: Arc<Collected<String>> = Collected::new();
    let job = JobGraph::new("utf8");
    let inp = input.clone();
    job.source("lines", move |info: &SubtaskInfo| {
        FileSource::new(&inp, info).expect("the input directory exists")
    })
    .sink("collect", collect_into(&collected));
    let mut o = options(1);
    o.restart = RestartStrategy::FixedDelay(FixedDelay {
        attempts: 5,
        delay: Duration::from_millis(5),
    });
    let e = run_job(job, &o).unwrap_err();
    let JobError::TaskFailed {
        cause: TaskFailure::Run(error),
        ..
    } = &e
    else {
        panic!("expected the source's own error, got {e:?}");
    };
    let TaskError::Source { uid, message, .. } = &**error else {
        panic!("expected the source's error, got {error:?}");
    };
    assert_eq!(uid, "lines");
    assert!(
        message.contains(&input.join("a.txt").display().to_string())
            && message.contains("byte offset 11"),
        "{message}"
    );
    assert!(!e.retryable(), "{e}");
    std::fs::remove_dir_all(&root).unwrap();
}

/// `key,index` lines of `n` indexes over 3 files; the final count per key.
fn write_keyed_lines(dir: &Path, n: u64) -> HashMap<u64, u64> {
    let mut want = HashMap::new();
    let mut files = vec![String::new(); 3];
    for i in 0..n {
        let key = splitmix64(i) % crate::split_source::KEYS;
        *want.entry(key).or_insert(0) += 1;
        files[(i % 3) as usize].push_str(&format!("{key},{i}\n"));
    }
    for (f, text) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("part-{f}.csv")), text).unwrap();
    }
    want
}

/// The file source at `parallelism`, in byte ranges of 4 KiB, paced,
/// failing once after a checkpoint if `fail`.
fn keyed_file_job(
    input: &Path,
    parallelism: usize,
    fail: bool,
    counts: &Arc<std::sync::Mutex<HashMap<u64, u64>>>,
) -> JobGraph {
    use crate::split_source::{Count, FailAfterCheckpoint, Latest, Paced};
    let armed = Arc::new(AtomicBool::new(fail));
    let into = counts.clone();
    let job = JobGraph::new("file-ranges");
    let inp = input.to_path_buf();
    job.source("lines", move |info: &SubtaskInfo| Paced {
        inner: FileSource::new(&inp, info)
            .expect("the input directory exists")
            .with_range_size(4096)
            .with_read_buffer(1024)
            .with_decoder(DecodeWith(|line: &str| {
                let (k, i) = line.split_once(',').expect("key,index");
                Decoded::Record((k.parse::<u64>().unwrap(), i.parse::<u64>().unwrap()))
            })),
        per_poll: 40,
        resume_at: None,
    })
    .process("fail", move |_: &SubtaskInfo| FailAfterCheckpoint {
        seen: 0,
        checkpointed: false,
        armed: armed.clone(),
    })
    .parallelism(parallelism)
    .key_by(|r: &(u64, u64)| r.0)
    .process("count", |_: &SubtaskInfo| {
        Count(KeyedValueState::new("count"))
    })
    .parallelism(2)
    .sink("latest", move |_: &SubtaskInfo| Latest(into.clone()));
    job
}

/// A job reading byte ranges fails after a checkpoint taken mid-way
/// through them and is restored at another parallelism: the restored
/// ranges (dealt out by even split) resume where they stopped, and every
/// line is counted exactly once.
#[test]
fn file_ranges_restored_at_another_parallelism_count_every_line_once() {
    for (before, after) in [(2, 3), (3, 1)] {
        let root = temp_dir(&format!("files-rescale-{before}-{after}"));
        let (input, checkpoints) = (root.join("in"), root.join("ck"));
        std::fs::create_dir_all(&input).unwrap();
        let want = write_keyed_lines(&input, 60_000);
        let counts = Arc::new(std::sync::Mutex::new(HashMap::new()));
        let mut o = crate::split_source::checkpointed(&checkpoints);
        match run_job(keyed_file_job(&input, before, true, &counts), &o) {
            Err(e @ JobError::TaskFailed { .. }) => {
                assert!(e.to_string().contains("injected failure"), "{e}")
            }
            other => panic!("expected the injected failure, got {other:?}"),
        }
        o.restore = RestoreFrom::Latest;
        let result = run_ok(keyed_file_job(&input, after, false, &counts), &o);
        let restored = result
            .restored
            .expect("restored the failed run's checkpoint");
        assert_eq!(
            *counts.lock().unwrap(),
            want,
            "every line counted once after restoring checkpoint {} of parallelism {before} at {after}",
            restored.checkpoint_id
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
