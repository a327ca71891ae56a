//! The file source: byte ranges (lines across their boundaries, ranges
//! without a line start, CRLF, a last line without newline), restores at
//! other parallelisms, continuous discovery, and malformed input.

use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::*;
use crate::chain::control::{ChainControl, FlushOutcome};
use crate::state::operator::redistribute::assigned_to;

static DIRS: AtomicU64 = AtomicU64::new(0);

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!(
            "weir-file-source-{}-{test}-{n}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn write(&self, name: &str, contents: &[u8]) {
        fs::write(self.0.join(name), contents).unwrap();
    }

    /// Writes `name` under a hidden name and renames it in, as a producer
    /// for a continuous source should.
    fn publish(&self, name: &str, contents: &[u8]) {
        let hidden = self.0.join(format!(".{name}.tmp"));
        fs::write(&hidden, contents).unwrap();
        fs::rename(hidden, self.0.join(name)).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A chain tail that keeps what it receives and takes at most `room`
/// records (then reports backpressure).
struct Tail<T = String> {
    items: Vec<T>,
    room: usize,
}

impl<T> Tail<T> {
    fn new() -> Self {
        Self {
            items: Vec::new(),
            room: usize::MAX,
        }
    }
}

impl<T> ChainControl for Tail<T> {
    fn is_available(&self) -> bool {
        self.items.len() < self.room
    }
    fn flush(&mut self, _now: Instant) -> FlushOutcome {
        FlushOutcome::default()
    }
    fn end_input(&mut self) {}
    fn snapshot(&mut self, _snapshot: &mut crate::core::snapshot::TaskSnapshot) {}
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {}
    fn finish(&mut self) -> bool {
        true
    }
    fn publish_metrics(&mut self) {}
    fn on_watermark(&mut self, _watermark: i64) {}
    fn on_watermark_status(&mut self, _status: weir_net::WatermarkStatus) {}
    fn on_latency_marker(&mut self, _marker: weir_net::LatencyMarker) {}
    fn failure(&self) -> Option<&crate::chain::error::TaskError> {
        None
    }
    fn output_pending(&self) -> bool {
        false
    }
}

impl<T> Collector<T> for Tail<T> {
    fn collect(&mut self, record: T) {
        assert!(self.is_available(), "collect while unavailable");
        self.items.push(record);
    }
}

fn info(index: usize, parallelism: usize) -> SubtaskInfo {
    SubtaskInfo {
        index,
        parallelism,
        worker: 0,
        max_parallelism: 128,
    }
}

/// Polls with `budget` until finished (waiting out idle polls, which only
/// mean the reader is behind); returns every record. Panics on an error.
fn drain<D: LineDecoder>(source: &mut FileSource<D>, budget: usize) -> Vec<D::Out> {
    let mut tail = Tail::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match source.poll_next(&mut tail, budget) {
            SourcePoll::Emitted(n) => assert!(n <= budget, "{n}"),
            SourcePoll::Finished => return tail.items,
            SourcePoll::Idle { until } => {
                if let Err(e) = source.check() {
                    panic!("the source failed: {e}");
                }
                assert!(until.is_some(), "idle without a deadline and no error");
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        assert!(Instant::now() < deadline, "the source never finished");
    }
}

/// Polls until the source fails; returns what it emitted and the error.
fn until_error(source: &mut FileSource) -> (Vec<String>, String) {
    let mut tail = Tail::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match source.poll_next(&mut tail, 100) {
            SourcePoll::Finished => panic!("finished without an error: {:?}", tail.items),
            SourcePoll::Idle { .. } => {
                if let Err(e) = source.check() {
                    return (tail.items, e);
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            SourcePoll::Emitted(_) => {}
        }
        assert!(Instant::now() < deadline, "no error came");
    }
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|s| s.to_string()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Files with an empty one, empty lines, CRLF and a missing final newline,
/// a hidden file and a subdirectory.
fn sample(test: &str) -> (TempDir, Vec<String>) {
    let d = TempDir::new(test);
    d.write("f0", b"a0\na1\n");
    d.write("f1", b"b0\n\nb2");
    d.write("f2", b"");
    d.write("f3", "c0 \u{e9}\r\nc1\r\nc2\n".as_bytes());
    d.write("f4", b"\n");
    d.write(".hidden", b"never\n");
    d.write("_SUCCESS", b"never\n");
    // Subdirectories are read too (Flink's enumerator is recursive), but
    // not hidden ones, nor `_` ones (`_temporary`).
    fs::create_dir_all(d.0.join("sub").join("deeper")).unwrap();
    fs::write(d.0.join("sub").join("x"), b"s0\n").unwrap();
    fs::write(d.0.join("sub").join(".y"), b"never\n").unwrap();
    fs::write(d.0.join("sub").join("deeper").join("z"), b"s1\ns2\n").unwrap();
    for skipped in [".git", "_temporary"] {
        fs::create_dir(d.0.join(skipped)).unwrap();
        fs::write(d.0.join(skipped).join("x"), b"never\n").unwrap();
    }
    let all = strings(&[
        "a0",
        "a1",
        "b0",
        "",
        "b2",
        "c0 \u{e9}\r",
        "c1\r",
        "c2",
        "",
        "s1",
        "s2",
        "s0",
    ]);
    (d, all)
}

#[test]
fn one_subtask_reads_every_line_of_every_input_file_in_order() {
    let (d, all) = sample("one");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    assert_eq!(drain(&mut s, 4096), all);
}

/// Every range size (so every boundary falls everywhere: inside lines,
/// on newlines, on a CR of a CRLF, inside a multi-byte character), every
/// parallelism, every read buffer: each line is read exactly once, and
/// each subtask reads its ranges' lines in file order.
#[test]
fn ranges_of_every_size_read_every_line_once() {
    let (d, all) = sample("ranges");
    for size in 1..=14 {
        for parallelism in 1..=3 {
            for buffer in [1, 3, 64] {
                let mut got = Vec::new();
                for s in 0..parallelism {
                    let mut source = FileSource::new(&d.0, &info(s, parallelism))
                        .unwrap()
                        .with_range_size(size)
                        .with_read_buffer(buffer);
                    let lines = drain(&mut source, 2);
                    // In file order: a subsequence of `all`.
                    let mut it = all.iter();
                    assert!(
                        lines.iter().all(|l| it.any(|a| a == l)),
                        "size {size}, subtask {s} of {parallelism}: {lines:?}"
                    );
                    got.extend(lines);
                }
                assert_eq!(
                    sorted(got),
                    sorted(all.clone()),
                    "size {size}, parallelism {parallelism}, buffer {buffer}"
                );
            }
        }
    }
}

/// A UTF-8 byte order mark at the start of a file is not part of its first
/// line (in any range size, so also when the first range is one byte);
/// the same character anywhere else is text.
#[test]
fn a_byte_order_mark_at_a_files_start_is_not_text() {
    let d = TempDir::new("bom");
    d.write("a.csv", "\u{feff}id,name\n1,\u{feff}x\n".as_bytes());
    d.write("b.csv", b"2,y\n");
    for size in [1, 2, 3, 4, 64] {
        let mut s = FileSource::new(&d.0, &info(0, 1))
            .unwrap()
            .with_range_size(size);
        assert_eq!(
            drain(&mut s, 4096),
            ["id,name", "1,\u{feff}x", "2,y"],
            "range size {size}"
        );
    }
}

#[test]
fn a_big_file_is_read_by_several_subtasks() {
    let d = TempDir::new("big");
    let lines: Vec<String> = (0..5000).map(|i| format!("line {i}")).collect();
    d.write("big", (lines.join("\n") + "\n").as_bytes());
    let mut got = Vec::new();
    for s in 0..3 {
        let mut source = FileSource::new(&d.0, &info(s, 3))
            .unwrap()
            .with_range_size(1000)
            .with_read_buffer(256);
        let ranges = source.ranges();
        assert!(
            ranges.len() >= 15,
            "subtask {s} reads a third of the ranges"
        );
        let mine = drain(&mut source, 100);
        assert!(!mine.is_empty());
        got.extend(mine);
    }
    assert_eq!(sorted(got), sorted(lines));
}

#[test]
fn a_range_without_a_line_start_reads_nothing_and_long_lines_cross_ranges() {
    let d = TempDir::new("no-start");
    let long = "x".repeat(50);
    d.write("f", format!("a\n{long}\nb\n{long}").as_bytes());
    let mut s = FileSource::new(&d.0, &info(0, 1))
        .unwrap()
        .with_range_size(10)
        .with_read_buffer(4);
    assert!(s.ranges().len() > 6);
    assert_eq!(
        drain(&mut s, 10),
        vec!["a".to_string(), long.clone(), "b".into(), long]
    );
}

#[test]
fn empty_files_and_an_empty_directory_yield_no_records() {
    let d = TempDir::new("empty");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    assert_eq!(s.poll_next(&mut Tail::new(), 10), SourcePoll::Finished);
    d.write("a", b"");
    d.write("b", b"");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    assert!(s.ranges().is_empty());
    assert_eq!(s.poll_next(&mut Tail::new(), 10), SourcePoll::Finished);
}

#[test]
fn backpressure_stops_the_source_without_losing_lines() {
    let (d, all) = sample("backpressure");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let mut tail = Tail::new();
    tail.room = 3;
    let deadline = Instant::now() + Duration::from_secs(10);
    while tail.items.len() < 3 {
        s.poll_next(&mut tail, 100);
        assert!(Instant::now() < deadline);
    }
    assert_eq!(s.poll_next(&mut tail, 100), SourcePoll::Emitted(0));
    tail.room = usize::MAX;
    let mut rest = drain(&mut s, 100);
    let mut got = tail.items;
    got.append(&mut rest);
    assert_eq!(got, all);
}

/// A checkpoint of `subtasks`' ranges and claims: every subtask's lists,
/// in subtask order.
type Checkpoint = (Vec<Vec<StoredRange>>, Vec<StoredClaim>);

fn checkpoint<D>(subtasks: &mut [FileSource<D>]) -> Checkpoint {
    let mut ranges = Vec::new();
    let mut claims = Vec::new();
    for s in subtasks {
        s.claim_listing_if_fresh();
        s.store();
        ranges.push(s.ranges_state.to_vec());
        claims.extend(s.claims_state.to_vec());
    }
    (ranges, claims)
}

/// Restores subtask `j` of `after` from `cp` as the runtime does (ranges
/// by even split, claims by union).
fn restore<D>(s: &mut FileSource<D>, cp: &Checkpoint, after: usize, j: usize)
where
    D: LineDecoder,
{
    s.ranges_state.clear();
    for r in assigned_to(crate::core::Redistribution::EvenSplit, &cp.0, after, j) {
        s.ranges_state.add(r);
    }
    s.claims_state.clear();
    for c in &cp.1 {
        s.claims_state.add(c.clone());
    }
    s.initialize_restored_state().unwrap();
    s.restore_position(&[]).unwrap();
}

/// Polls every subtask once with `budget`, keeping what they emit.
fn poll_each(subtasks: &mut [FileSource], budget: usize, emitted: &mut Vec<String>) {
    for s in subtasks {
        let mut tail = Tail::new();
        let _ = s.poll_next(&mut tail, budget);
        assert!(s.check().is_ok(), "{:?}", s.check());
        emitted.extend(tail.items);
    }
}

/// Polls `s` with `budget` until it emitted `polls` times (waiting out
/// idle polls) or finished; returns what it emitted.
fn take(s: &mut FileSource, budget: usize, polls: usize) -> Vec<String> {
    let mut tail = Tail::new();
    let mut emitting = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while emitting < polls {
        match s.poll_next(&mut tail, budget) {
            SourcePoll::Emitted(_) => emitting += 1,
            SourcePoll::Finished => break,
            SourcePoll::Idle { .. } => {
                assert!(s.check().is_ok(), "{:?}", s.check());
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        assert!(Instant::now() < deadline);
    }
    tail.items
}

/// The ranges of any parallelism, cut mid-read, restored at any other
/// (dealt out by even split), replay exactly the lines not yet emitted.
#[test]
fn ranges_restored_at_another_parallelism_read_every_line_once() {
    let d = TempDir::new("rescale");
    let mut all = Vec::new();
    for f in 0..7 {
        let lines: Vec<String> = (0..(5 + f * 13)).map(|l| format!("f{f}-l{l}")).collect();
        d.write(&format!("f{f}"), (lines.join("\n") + "\n").as_bytes());
        all.extend(lines);
    }
    all.sort();
    let mut cut_mid_range = 0;
    for (before, after, budget, polls) in [
        (2, 3, 4, 1),
        (3, 1, 7, 3),
        (1, 4, 11, 2),
        (4, 2, 3, 5),
        (3, 3, 5, 1),
        (2, 2, 1000, 0),
    ] {
        let make = |i, p| {
            FileSource::new(&d.0, &info(i, p))
                .unwrap()
                .with_range_size(60)
                .with_read_buffer(16)
        };
        let mut olds: Vec<FileSource> = (0..before).map(|i| make(i, before)).collect();
        let mut emitted = Vec::new();
        for s in &mut olds {
            emitted.extend(take(s, budget, polls));
        }
        let cp = checkpoint(&mut olds);
        drop(olds);
        cut_mid_range += usize::from(cp.0.iter().flatten().any(|r| r.3 > r.1));
        for j in 0..after {
            let mut s = make(j, after);
            restore(&mut s, &cp, after, j);
            emitted.extend(drain(&mut s, budget));
        }
        emitted.sort();
        assert_eq!(
            emitted, all,
            "{before} -> {after}, {polls} polls of {budget}"
        );
    }
    assert!(
        cut_mid_range >= 3,
        "checkpoints inside ranges: {cut_mid_range}"
    );
}

/// Given a file, the source reads that file alone (not its neighbours in
/// the directory, and also when its name is hidden), split over several
/// subtasks and restored at another parallelism mid-read, each line
/// once.
#[test]
fn a_file_given_alone_is_read_alone_and_rescales() {
    let d = TempDir::new("one-file");
    let lines: Vec<String> = (0..3000).map(|i| format!("clicks {i}")).collect();
    d.write(".clicks.csv", (lines.join("\n") + "\n").as_bytes());
    d.write("other", b"never\n");
    let file = d.0.join(".clicks.csv");
    let make = |i, p| {
        FileSource::new(&file, &info(i, p))
            .unwrap()
            .with_range_size(2000)
            .with_read_buffer(512)
    };
    let mut all = Vec::new();
    for s in 0..3 {
        all.extend(drain(&mut make(s, 3), 50));
    }
    assert_eq!(sorted(all), sorted(lines.clone()));

    let mut olds: Vec<FileSource> = (0..2).map(|i| make(i, 2)).collect();
    let mut emitted = Vec::new();
    for s in &mut olds {
        emitted.extend(take(s, 40, 3));
    }
    assert!(!emitted.is_empty() && emitted.len() < lines.len());
    let cp = checkpoint(&mut olds);
    drop(olds);
    for j in 0..3 {
        let mut s = make(j, 3);
        restore(&mut s, &cp, 3, j);
        emitted.extend(drain(&mut s, 40));
    }
    assert_eq!(sorted(emitted), sorted(lines));
}

#[test]
fn a_resumed_offset_not_at_a_line_start_fails_naming_the_file() {
    let d = TempDir::new("changed");
    d.write("f", b"one\ntwo\nthree\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let mut tail = Tail::new();
    tail.room = 1;
    while tail.items.is_empty() {
        s.poll_next(&mut tail, 1);
    }
    let cp = checkpoint(std::slice::from_mut(&mut s));
    assert_eq!(cp.0[0][0].3, 4, "resumes after `one\\n`");
    drop(s);
    d.write("f", b"oneone\ntwo\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    restore(&mut s, &cp, 1, 0);
    let (_, err) = until_error(&mut s);
    assert!(err.contains(&d.0.join("f").display().to_string()), "{err}");
    assert!(
        err.contains("byte offset 4") && err.contains("changed"),
        "{err}"
    );
    assert!(!s.is_retryable(&err));
}

#[test]
fn a_position_of_bytes_from_before_ranges_is_refused() {
    let (d, _) = sample("old");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let err = s
        .restore_position(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        .unwrap_err();
    assert!(err.contains("before the source read byte ranges"), "{err}");
    assert!(!s.is_retryable(&err));
}

/// Polls `subtasks` until `want` records came (or panics after a while).
fn poll_until(subtasks: &mut [FileSource], want: usize, emitted: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while emitted.len() < want {
        for s in subtasks.iter_mut() {
            let mut tail = Tail::new();
            match s.poll_next(&mut tail, 64) {
                SourcePoll::Finished => panic!("a continuous source finished"),
                SourcePoll::Idle { until } => {
                    assert!(s.check().is_ok(), "{:?}", s.check());
                    assert!(until.is_some());
                }
                SourcePoll::Emitted(_) => {}
            }
            emitted.extend(tail.items);
        }
        std::thread::sleep(Duration::from_micros(200));
        assert!(
            Instant::now() < deadline,
            "only {} of {want} records: {emitted:?}",
            emitted.len()
        );
    }
}

fn lines_of(prefix: &str, n: usize) -> (Vec<u8>, Vec<String>) {
    let lines: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
    ((lines.join("\n") + "\n").into_bytes(), lines)
}

/// A bounded source's checkpoint, restored in continuous mode (a script
/// given `source.monitor-interval` and restored), at another parallelism:
/// the files the bounded run listed are read on from where it stopped,
/// not again; only files published since are new. (Bounded checkpoints
/// kept no claims: the watching restore read every file again.)
#[test]
fn a_bounded_checkpoint_restored_watching_reads_only_what_is_left_and_new() {
    let d = TempDir::new("bounded-to-continuous");
    let mut want = Vec::new();
    for (name, n) in [("a", 40), ("b", 25), ("c", 0), ("d", 60)] {
        let (text, lines) = lines_of(name, n);
        d.write(name, if n == 0 { &[] } else { &text });
        if n > 0 {
            want.extend(lines);
        }
    }
    let make = |i, p| {
        FileSource::new(&d.0, &info(i, p))
            .unwrap()
            .with_range_size(64)
            .with_read_buffer(32)
    };
    let mut olds: Vec<FileSource> = (0..2).map(|i| make(i, 2)).collect();
    let mut emitted = Vec::new();
    for s in &mut olds {
        emitted.extend(take(s, 7, 2));
    }
    assert!(emitted.len() < want.len(), "the checkpoint is mid-read");
    let cp = checkpoint(&mut olds);
    drop(olds);
    let (text, lines) = lines_of("e", 20);
    d.publish("e", &text);
    want.extend(lines);

    // Older weir's bounded checkpoint held no claims: restored watching
    // with ranges left, it is refused, naming the way out.
    let older = &cp.0;
    let mut refused = 0;
    for j in 0..3 {
        let mut s = make(j, 3).with_monitor_interval(Duration::from_millis(5));
        for r in assigned_to(crate::core::Redistribution::EvenSplit, older, 3, j) {
            s.ranges_state.add(r);
        }
        if let Err(e) = s.initialize_restored_state() {
            assert!(e.contains("bounded source of older weir"), "{e}");
            assert!(e.contains("without 'source.monitor-interval'"), "{e}");
            assert!(!s.is_retryable(&e));
            refused += 1;
        }
    }
    assert!(refused > 0, "a subtask with ranges left refuses");

    let mut news: Vec<FileSource> = (0..3)
        .map(|j| make(j, 3).with_monitor_interval(Duration::from_millis(5)))
        .collect();
    for (j, s) in news.iter_mut().enumerate() {
        restore(s, &cp, 3, j);
    }
    poll_until(&mut news, want.len(), &mut emitted);
    // Nothing more comes: no file is read again.
    std::thread::sleep(Duration::from_millis(30));
    poll_each(&mut news, 1000, &mut emitted);
    assert_eq!(sorted(emitted), sorted(want));
}

/// A continuous source reads the files there, then every file published
/// later, once; it never finishes. A restore at another parallelism reads
/// neither a file twice nor skips one published around the checkpoint;
/// a file that grew after it was read is not read again.
#[test]
fn continuous_mode_discovers_new_files_once_across_a_rescale() {
    let d = TempDir::new("continuous");
    let mut want = Vec::new();
    let (text, lines) = lines_of("a", 40);
    d.write("a", &text);
    want.extend(lines);
    let make = |i, p| {
        FileSource::new(&d.0, &info(i, p))
            .unwrap()
            .with_range_size(64)
            .with_read_buffer(32)
            .with_monitor_interval(Duration::from_millis(5))
    };
    let mut olds: Vec<FileSource> = (0..2).map(|i| make(i, 2)).collect();
    let mut emitted = Vec::new();
    poll_until(&mut olds, want.len(), &mut emitted);
    for (name, n) in [("b", 30), ("c", 1)] {
        let (text, lines) = lines_of(name, n);
        d.publish(name, &text);
        want.extend(lines);
    }
    poll_until(&mut olds, want.len(), &mut emitted);
    // A file published just before the checkpoint, perhaps seen by one
    // subtask only (or none), and one grown after it was read.
    let (text, lines) = lines_of("d", 50);
    d.publish("d", &text);
    want.extend(lines);
    poll_each(&mut olds, 3, &mut emitted);
    let cp = checkpoint(&mut olds);
    drop(olds);
    let mut grown = fs::read(d.0.join("a")).unwrap();
    grown.extend_from_slice(b"never read\n");
    fs::write(d.0.join("a"), grown).unwrap();

    let mut news: Vec<FileSource> = (0..3).map(|j| make(j, 3)).collect();
    for (j, s) in news.iter_mut().enumerate() {
        restore(s, &cp, 3, j);
    }
    poll_until(&mut news, want.len(), &mut emitted);
    let (text, lines) = lines_of("e", 20);
    d.publish("e", &text);
    want.extend(lines);
    poll_until(&mut news, want.len(), &mut emitted);
    // Nothing more comes.
    std::thread::sleep(Duration::from_millis(30));
    poll_each(&mut news, 1000, &mut emitted);
    assert_eq!(sorted(emitted), sorted(want));
}

#[test]
fn invalid_utf8_fails_naming_the_file_line_and_offset() {
    let d = TempDir::new("utf8");
    d.write("a", b"fine\nab\xffcd\nnever\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let (lines, msg) = until_error(&mut s);
    assert_eq!(lines, strings(&["fine"]));
    assert!(msg.contains(&d.0.join("a").display().to_string()), "{msg}");
    assert!(msg.contains("line 2 (byte offset 5)"), "{msg}");
    assert!(msg.contains("invalid UTF-8 at byte offset 7"), "{msg}");
    assert!(
        !s.is_retryable(&msg),
        "the file will not change on a restart"
    );
}

#[test]
fn a_line_longer_than_the_limit_fails_naming_it() {
    let d = TempDir::new("long");
    let long = "y".repeat(100);
    d.write("a", format!("ok\n{long}\nnever\n").as_bytes());
    for buffer in [8, 1000] {
        let mut s = FileSource::new(&d.0, &info(0, 1))
            .unwrap()
            .with_read_buffer(buffer)
            .with_max_line_length(50);
        let (lines, msg) = until_error(&mut s);
        assert_eq!(lines, strings(&["ok"]), "buffer {buffer}");
        assert!(msg.contains("line 2 (byte offset 3)"), "{msg}");
        assert!(msg.contains("longer than 50 bytes"), "{msg}");
    }
    // In a range that does not start the file, the line is counted in the
    // range.
    let mut s = FileSource::new(&d.0, &info(0, 1))
        .unwrap()
        .with_range_size(2)
        .with_max_line_length(50);
    let (_, msg) = until_error(&mut s);
    assert!(
        msg.contains("line 1 of the byte range from 2 (byte offset 3)"),
        "{msg}"
    );
}

#[test]
fn a_file_deleted_before_it_is_read_fails_naming_it() {
    let d = TempDir::new("vanished");
    d.write("a", b"one\n");
    d.write("b", b"two\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    fs::remove_file(d.0.join("b")).unwrap();
    let (lines, msg) = until_error(&mut s);
    assert_eq!(lines, strings(&["one"]));
    assert!(msg.contains(&d.0.join("b").display().to_string()), "{msg}");
    assert!(msg.contains("vanished"), "{msg}");
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let d = TempDir::new("nodir");
    let missing = d.0.join("nope");
    let err = FileSource::new(&missing, &info(0, 1))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains(&missing.display().to_string()), "{err}");
}

/// Numbers; `#` lines skipped; other lines refused at column 1 (or
/// ignored).
fn numbers(ignore: bool) -> impl LineDecoder<Out = u64> {
    DecodeWith(move |line: &str| {
        if line.starts_with('#') {
            return Decoded::Skip;
        }
        match line.parse() {
            Ok(n) => Decoded::Record(n),
            Err(_) if ignore => Decoded::Ignored(format!("`{line}` is not a number")),
            Err(_) => Decoded::Error {
                column: Some(1),
                message: format!("`{line}` is not a number"),
            },
        }
    })
}

#[test]
fn a_decoder_parses_in_place_and_its_errors_name_line_and_column() {
    let d = TempDir::new("decode");
    d.write("a", b"1\n# comment\n2\nx\n3\n");
    let mut s = FileSource::new(&d.0, &info(0, 1))
        .unwrap()
        .with_decoder(numbers(true));
    assert_eq!(drain(&mut s, 10), vec![1, 2, 3]);
    assert_eq!(s.ignored_lines(), 1);

    let mut s = FileSource::new(&d.0, &info(0, 1))
        .unwrap()
        .with_decoder(numbers(false));
    let mut tail = Tail::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let msg = loop {
        if let SourcePoll::Idle { .. } = s.poll_next(&mut tail, 10) {
            if let Err(e) = s.check() {
                break e;
            }
        }
        assert!(Instant::now() < deadline);
    };
    assert_eq!(tail.items, vec![1, 2]);
    assert!(
        msg.contains("line 4 (byte offset 14), column 1: `x` is not a number"),
        "{msg}"
    );
}

/// A checkpoint of the source before byte ranges (whole files from an
/// offset, list state `file-splits`) restores: each file from its offset
/// to its end, at any parallelism.
#[test]
fn file_splits_of_a_checkpoint_before_ranges_restore_as_ranges() {
    let (d, _) = sample("old-splits");
    let old = vec![
        vec![(b"f1".to_vec(), 3u64), (b"f3".to_vec(), 0)],
        vec![(b"f0".to_vec(), 6)],
    ];
    let mut got = Vec::new();
    for j in 0..3 {
        let mut s = FileSource::new(&d.0, &info(j, 3)).unwrap();
        let _ = s.ranges();
        s.ranges_state.clear();
        for split in assigned_to(crate::core::Redistribution::EvenSplit, &old, 3, j) {
            s.old_splits.add(split);
        }
        s.initialize_restored_state().unwrap();
        got.extend(drain(&mut s, 2));
        s.store();
        assert!(
            s.old_splits.is_empty(),
            "snapshots leave the old state empty"
        );
    }
    assert_eq!(
        sorted(got),
        sorted(strings(&["", "b2", "c0 \u{e9}\r", "c1\r", "c2"]))
    );
}

/// Opened by its task, the source waits for its I/O thread with no
/// deadline: the thread rings the worker's doorbell when it hands over a
/// chunk, so a worker parked on the doorbell (with the protocol's re-check
/// poll) is woken for every chunk and reads every line.
#[test]
fn an_opened_source_sleeps_until_its_reader_rings() {
    let d = TempDir::new("wakeup");
    let lines: Vec<String> = (0..2000).map(|i| format!("line {i}")).collect();
    d.write("a", (lines.join("\n") + "\n").as_bytes());
    let bell = std::sync::Arc::new(weir_net::Doorbell::new());
    let mut s = FileSource::new(&d.0, &info(0, 1))
        .unwrap()
        .with_read_buffer(512);
    s.open(crate::core::wakeup::SourceWakeup::new(bell.clone()));
    let mut tail = Tail::new();
    let mut parks = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match s.poll_next(&mut tail, 64) {
            SourcePoll::Finished => break,
            SourcePoll::Emitted(_) => {}
            SourcePoll::Idle { until } => {
                assert!(s.check().is_ok(), "{:?}", s.check());
                assert_eq!(until, None, "no polling deadline: the reader rings");
                bell.prepare_park(std::task::Waker::noop());
                match s.poll_next(&mut tail, 64) {
                    SourcePoll::Idle { .. } => {
                        parks += 1;
                        while bell.is_parked() {
                            assert!(Instant::now() < deadline, "the reader never rang");
                            std::thread::yield_now();
                        }
                    }
                    SourcePoll::Finished => break,
                    SourcePoll::Emitted(_) => bell.cancel_park(),
                }
            }
        }
        assert!(Instant::now() < deadline);
    }
    assert_eq!(tail.items, lines);
    assert_eq!(bell.wakeups(), parks, "the reader ended every park");
}

/// `text` compressed as `compression` writes it (gzip in two members
/// when `members`, as `cat a.gz b.gz` makes).
fn compressed(compression: ranges::Compression, text: &[u8], members: bool) -> Vec<u8> {
    use std::io::Write;
    let level = flate2::Compression::default();
    match compression {
        ranges::Compression::Gzip => {
            let half = if members { text.len() / 2 } else { text.len() };
            let mut out = Vec::new();
            for part in [&text[..half], &text[half..]] {
                if part.is_empty() {
                    continue;
                }
                let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
                e.write_all(part).unwrap();
                out.extend(e.finish().unwrap());
            }
            out
        }
        ranges::Compression::Deflate => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(text).unwrap();
            e.finish().unwrap()
        }
        ranges::Compression::None => text.to_vec(),
    }
}

/// Files ending in `.gz`/`.gzip` (gzip, also of concatenated members) and
/// `.deflate` (zlib) are read as their decompressed lines, as Flink's
/// file source reads them, next to a plain file; each is one range (a
/// compressed file cannot be read from its middle), whatever the range
/// size, and a checkpoint inside one, restored at another parallelism,
/// resumes at its decompressed offset with every line once.
#[test]
fn compressed_files_are_read_decompressed_and_resume_mid_file() {
    use ranges::Compression;
    let d = TempDir::new("compressed");
    let mut all = Vec::new();
    let files = [
        ("a.csv.gz", Compression::Gzip, false),
        ("b.csv.GZIP", Compression::Gzip, true),
        ("c.deflate", Compression::Deflate, false),
        ("d.csv", Compression::None, false),
    ];
    for (f, (name, compression, members)) in files.iter().enumerate() {
        let lines: Vec<String> = (0..(300 + f * 37)).map(|l| format!("{name}-{l}")).collect();
        let text = lines.join("\n") + "\n";
        d.write(name, &compressed(*compression, text.as_bytes(), *members));
        all.extend(lines);
    }
    all.sort();
    // Read whole, by one subtask.
    let mut one = FileSource::new(&d.0, &info(0, 1))
        .unwrap()
        .with_range_size(100);
    assert_eq!(sorted(drain(&mut one, 1000)), all);
    // Cut mid-read (small chunks, few records per poll), restored at
    // another parallelism.
    for (before, after) in [(1, 3), (3, 2), (2, 1)] {
        let make = |i, p| {
            FileSource::new(&d.0, &info(i, p))
                .unwrap()
                .with_range_size(100)
                .with_read_buffer(64)
        };
        let mut olds: Vec<FileSource> = (0..before).map(|i| make(i, before)).collect();
        let mut emitted = Vec::new();
        for s in &mut olds {
            emitted.extend(take(s, 7, 5));
        }
        let cp = checkpoint(&mut olds);
        drop(olds);
        let compressed_ranges =
            cp.0.iter()
                .flatten()
                .filter(|r| r.2 == u64::MAX)
                .collect::<Vec<_>>();
        assert!(
            compressed_ranges.iter().any(|r| r.3 > 0),
            "a checkpoint inside a compressed file: {compressed_ranges:?}"
        );
        for j in 0..after {
            let mut s = make(j, after);
            restore(&mut s, &cp, after, j);
            emitted.extend(drain(&mut s, 7));
        }
        assert_eq!(sorted(emitted), all, "{before} -> {after}");
    }
}

/// A file named as compressed that is not (or is cut short) fails the
/// job naming the file, never passing on garbage.
#[test]
fn a_corrupt_compressed_file_fails_naming_it() {
    let d = TempDir::new("corrupt-gz");
    d.write("plain-text.gz", b"not gzip at all\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let (lines, msg) = until_error(&mut s);
    assert!(lines.is_empty(), "{lines:?}");
    assert!(msg.contains("plain-text.gz"), "{msg}");
    let d = TempDir::new("truncated-gz");
    let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let full = compressed(ranges::Compression::Gzip, text.as_bytes(), false);
    d.write("cut.gz", &full[..full.len() / 2]);
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let (lines, msg) = until_error(&mut s);
    assert!(msg.contains("cut.gz"), "{msg}");
    // What was emitted is a prefix of the text's lines, each whole.
    let want: Vec<String> = (0..lines.len()).map(|i| format!("line {i}")).collect();
    assert_eq!(lines, want);
}
