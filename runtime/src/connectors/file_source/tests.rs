//! The replayable file source: reading, positions, and resuming from a
//! position, at every byte.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::*;
use crate::chain::control::{ChainControl, FlushOutcome};

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
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A chain tail that keeps what it receives and takes at most `room`
/// records (then reports backpressure).
struct Tail {
    items: Vec<String>,
    room: usize,
}

impl Tail {
    fn new() -> Self {
        Self {
            items: Vec::new(),
            room: usize::MAX,
        }
    }
}

impl ChainControl for Tail {
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
    fn failure(&self) -> Option<&crate::chain::error::TaskError> {
        None
    }
    fn output_pending(&self) -> bool {
        false
    }
}

impl Collector<String> for Tail {
    fn collect(&mut self, record: String) {
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

/// Polls with `budget` until finished; returns every line.
fn drain(source: &mut FileSource, budget: usize) -> Vec<String> {
    let mut tail = Tail::new();
    loop {
        match source.poll_next(&mut tail, budget) {
            SourcePoll::Emitted(n) => assert!(n > 0 && n <= budget, "{n}"),
            SourcePoll::Finished => return tail.items,
            SourcePoll::Idle { .. } => {
                panic!(
                    "a file source is idle only after an error: {:?}",
                    source.check()
                )
            }
        }
    }
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|s| s.to_string()).collect()
}

/// Files `f0..f4` (with an empty one, an empty line and a missing final
/// newline), a hidden file and a subdirectory.
fn sample(test: &str) -> TempDir {
    let d = TempDir::new(test);
    d.write("f0", b"a0\na1\n");
    d.write("f1", b"b0\n\nb2");
    d.write("f2", b"");
    d.write("f3", "c0 é\nc1\nc2\n".as_bytes());
    d.write("f4", b"\n");
    d.write(".hidden", b"never\n");
    fs::create_dir(d.0.join("sub")).unwrap();
    fs::write(d.0.join("sub").join("x"), b"never\n").unwrap();
    d
}

#[test]
fn subtasks_read_their_share_of_the_files_in_order() {
    let d = sample("share");
    let mut all = FileSource::new(&d.0, &info(0, 1)).unwrap();
    assert_eq!(
        drain(&mut all, 4096),
        strings(&["a0", "a1", "b0", "", "b2", "c0 é", "c1", "c2", ""])
    );
    let mut s0 = FileSource::new(&d.0, &info(0, 2)).unwrap();
    let names: Vec<PathBuf> = s0.files().collect();
    assert_eq!(names, vec![d.0.join("f0"), d.0.join("f2"), d.0.join("f4")]);
    assert_eq!(drain(&mut s0, 1), strings(&["a0", "a1", ""]));
    let mut s1 = FileSource::new(&d.0, &info(1, 2)).unwrap();
    assert_eq!(
        drain(&mut s1, 2),
        strings(&["b0", "", "b2", "c0 é", "c1", "c2"])
    );
    // More subtasks than files: the extra ones finish at once.
    let mut s7 = FileSource::new(&d.0, &info(7, 8)).unwrap();
    let mut tail = Tail::new();
    assert_eq!(s7.poll_next(&mut tail, 10), SourcePoll::Finished);
    let pos = s7.position();
    let mut again = FileSource::new(&d.0, &info(7, 8)).unwrap();
    again.restore_position(&pos).unwrap();
    assert_eq!(again.poll_next(&mut tail, 10), SourcePoll::Finished);
}

#[test]
fn restoring_any_snapshot_replays_exactly_the_remaining_lines() {
    let d = sample("restore");
    for buffer in [1, 3, 64, READ_BUFFER] {
        let all = drain(
            &mut FileSource::new(&d.0, &info(0, 1))
                .unwrap()
                .with_read_buffer(buffer),
            4096,
        );
        for cut in 0..=all.len() {
            let mut first = FileSource::new(&d.0, &info(0, 1))
                .unwrap()
                .with_read_buffer(buffer);
            let mut tail = Tail::new();
            tail.room = cut;
            // Polls until the tail is full: the rest stays unread.
            for _ in 0..=cut {
                first.poll_next(&mut tail, 2);
            }
            assert_eq!(tail.items, all[..cut], "cut {cut}");
            let pos = first.position();
            let mut second = FileSource::new(&d.0, &info(0, 1))
                .unwrap()
                .with_read_buffer(buffer);
            second.restore_position(&pos).unwrap();
            assert_eq!(drain(&mut second, 3), all[cut..], "cut {cut}");
        }
    }
}

#[test]
fn position_names_the_file_and_the_offset() {
    let d = sample("position");
    let mut s = FileSource::new(&d.0, &info(1, 2)).unwrap();
    let mut tail = Tail::new();
    assert_eq!(s.poll_next(&mut tail, 2), SourcePoll::Emitted(2));
    let mut expected = vec![POSITION_VERSION, 2, 0, 0, 0, b'f', b'1'];
    expected.extend_from_slice(&4u64.to_le_bytes());
    assert_eq!(s.position(), expected);
    // After the last line of f1 (no trailing newline), on to f3.
    s.poll_next(&mut tail, 1);
    assert_eq!(s.position()[5..7], *b"f1");
    assert_eq!(decode_position(&s.position()).unwrap().1, 6);
    s.poll_next(&mut tail, 1);
    assert_eq!(decode_position(&s.position()).unwrap(), (&b"f3"[..], 6));
    // Finished: stays at the end of the last file.
    assert_eq!(tail.items, strings(&["b0", "", "b2", "c0 é"]));
    assert_eq!(drain(&mut s, 10), strings(&["c1", "c2"]));
    assert_eq!(decode_position(&s.position()).unwrap(), (&b"f3"[..], 12));
}

#[test]
fn backpressure_stops_the_source_without_losing_lines() {
    let d = sample("backpressure");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let mut tail = Tail::new();
    tail.room = 3;
    assert_eq!(s.poll_next(&mut tail, 100), SourcePoll::Emitted(3));
    assert_eq!(s.poll_next(&mut tail, 100), SourcePoll::Emitted(0));
    tail.room = usize::MAX;
    assert_eq!(s.poll_next(&mut tail, 100), SourcePoll::Emitted(6));
    assert_eq!(s.poll_next(&mut tail, 100), SourcePoll::Finished);
    assert_eq!(
        tail.items,
        strings(&["a0", "a1", "b0", "", "b2", "c0 é", "c1", "c2", ""])
    );
}

#[test]
fn lines_longer_than_the_read_buffer_and_across_its_boundary() {
    let d = TempDir::new("long");
    let lines: Vec<String> = (0..200)
        .map(|i| "x".repeat(i * 7 % 41) + &i.to_string())
        .collect();
    let mut text = lines.join("\n");
    text.push('\n');
    d.write("big", text.as_bytes());
    for buffer in [1, 5, 16, 40, 64, 1000] {
        let mut s = FileSource::new(&d.0, &info(0, 1))
            .unwrap()
            .with_read_buffer(buffer);
        assert_eq!(drain(&mut s, 7), lines, "buffer {buffer}");
    }
}

#[test]
fn a_last_line_without_newline_is_a_record() {
    let d = TempDir::new("no-newline");
    d.write("a", b"one\ntwo");
    d.write("b", b"three");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    assert_eq!(drain(&mut s, 10), strings(&["one", "two", "three"]));
}

#[test]
fn restore_errors_name_the_file() {
    let d = sample("errors");
    let mut s = FileSource::new(&d.0, &info(1, 2)).unwrap();
    let mut tail = Tail::new();
    s.poll_next(&mut tail, 4); // b0, "", b2, "c0 é": in f3 at offset 6
    let pos = s.position();
    let f3 = d.0.join("f3").display().to_string();

    // A file of the other subtask.
    let mut other = FileSource::new(&d.0, &info(0, 2)).unwrap();
    let err = other.restore_position(&pos).unwrap_err();
    assert!(
        err.contains(&f3) && err.contains("belongs to subtask 1 of 2"),
        "{err}"
    );

    // Not at a line boundary.
    let mut mid = pos.clone();
    let n = mid.len();
    mid[n - 8..].copy_from_slice(&5u64.to_le_bytes());
    let mut s2 = FileSource::new(&d.0, &info(1, 2)).unwrap();
    let err = s2.restore_position(&mid).unwrap_err();
    assert!(err.contains(&f3) && err.contains("offset 5"), "{err}");

    // Malformed bytes (an empty position is this format's: the splits
    // hold the position).
    s2.restore_position(&[]).unwrap();
    for bad in [&[9][..], &[1, 2, 0][..], &pos[..pos.len() - 1]] {
        let mut s2 = FileSource::new(&d.0, &info(1, 2)).unwrap();
        let err = s2.restore_position(bad).unwrap_err();
        assert!(err.contains("malformed position"), "{err}");
        assert!(err.contains(&d.0.display().to_string()), "{err}");
    }

    // The file shrank below the offset.
    let mut fresh = FileSource::new(&d.0, &info(1, 2)).unwrap();
    d.write("f3", b"c0\n");
    let err = fresh.restore_position(&pos).unwrap_err();
    assert!(
        err.contains(&f3) && err.contains("fewer than the restored offset 6"),
        "{err}"
    );

    // The file is gone.
    let mut fresh = FileSource::new(&d.0, &info(1, 2)).unwrap();
    fs::remove_file(d.0.join("f3")).unwrap();
    let err = fresh.restore_position(&pos).unwrap_err();
    assert!(err.contains(&f3), "{err}");
    let mut relisted = FileSource::new(&d.0, &info(1, 2)).unwrap();
    let err = relisted.restore_position(&pos).unwrap_err();
    assert!(err.contains(&f3) && err.contains("missing"), "{err}");
}

#[test]
fn invalid_utf8_fails_naming_the_file_and_offset() {
    let d = TempDir::new("utf8");
    d.write("a", b"fine\nab\xffcd\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    let mut tail = Tail::new();
    // The good line, then idle with the error kept for `check`: no panic.
    assert_eq!(s.poll_next(&mut tail, 10), SourcePoll::Idle { until: None });
    assert_eq!(tail.items, strings(&["fine"]));
    let msg = s.check().unwrap_err();
    assert!(msg.contains(&d.0.join("a").display().to_string()), "{msg}");
    assert!(msg.contains("byte offset 7"), "{msg}");
    assert!(
        !s.is_retryable(&msg),
        "the file will not change on a restart"
    );
}

#[test]
fn an_input_file_that_cannot_be_opened_fails_without_a_panic() {
    let d = TempDir::new("vanished");
    d.write("a", b"one\n");
    d.write("b", b"two\n");
    let mut s = FileSource::new(&d.0, &info(0, 1)).unwrap();
    fs::remove_file(d.0.join("b")).unwrap();
    let mut tail = Tail::new();
    let mut polls = 0;
    while !matches!(s.poll_next(&mut tail, 10), SourcePoll::Idle { .. }) {
        polls += 1;
        assert!(polls < 10, "the missing file is noticed");
    }
    assert_eq!(tail.items, strings(&["one"]));
    let msg = s.check().unwrap_err();
    assert!(msg.contains(&d.0.join("b").display().to_string()), "{msg}");
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

/// A checkpoint of `subtasks`' splits: every subtask's list, in subtask
/// order (what an even-split restore deals out).
fn split_checkpoint(subtasks: &mut [FileSource]) -> Vec<Vec<(Vec<u8>, u64)>> {
    subtasks
        .iter_mut()
        .map(|s| {
            s.store_splits();
            s.splits.to_vec()
        })
        .collect()
}

/// The file splits of any parallelism, restored at any other (dealt out
/// by even split, as the runtime does), replay exactly the lines not yet
/// emitted, each once, files read in part resuming at their offsets.
#[test]
fn file_splits_restored_at_another_parallelism_read_every_line_once() {
    let d = TempDir::new("splits-rescale");
    let mut all = Vec::new();
    for f in 0..7 {
        let lines: Vec<String> = (0..(5 + f * 3)).map(|l| format!("f{f}-l{l}")).collect();
        d.write(&format!("f{f}"), (lines.join("\n") + "\n").as_bytes());
        all.extend(lines);
    }
    all.sort();
    for (before, after, budget) in [(2, 3, 4), (3, 1, 7), (1, 4, 11), (4, 2, 3), (3, 3, 5)] {
        let mut olds: Vec<FileSource> = (0..before)
            .map(|i| {
                FileSource::new(&d.0, &info(i, before))
                    .unwrap()
                    .with_read_buffer(8)
            })
            .collect();
        let mut emitted = Vec::new();
        for s in &mut olds {
            let mut tail = Tail::new();
            let _ = s.poll_next(&mut tail, budget);
            emitted.extend(tail.items);
        }
        let lists = split_checkpoint(&mut olds);
        for j in 0..after {
            let mut s = FileSource::new(&d.0, &info(j, after)).unwrap();
            let share = crate::state::operator::redistribute::assigned_to(
                crate::core::Redistribution::EvenSplit,
                &lists,
                after,
                j,
            );
            s.splits.clear();
            for split in share {
                s.splits.add(split);
            }
            s.initialize_restored_state().unwrap();
            s.restore_position(&[]).unwrap();
            emitted.extend(drain(&mut s, budget));
        }
        emitted.sort();
        assert_eq!(emitted, all, "{before} -> {after}");
    }
}
