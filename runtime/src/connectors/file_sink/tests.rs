//! The two-phase-commit file sink: pending files, commits, aborts and
//! recovery of every state a crash can leave behind.

use super::names::{Kind, Names};
use super::state::{decode_state, encode_state};
use super::*;

static DIRS: AtomicU64 = AtomicU64::new(0);

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("weir-file-sink-{}-{test}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
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

type LineSink = TransactionalFileSink<u64, fn(&u64, &mut Vec<u8>)>;

/// Record `r` is the line `r,1,r*3` (the shape W1 writes).
fn format_line(r: &u64, out: &mut Vec<u8>) {
    writeln!(out, "{r},1,{}", r * 3).unwrap();
}

fn line(r: u64) -> String {
    format!("{r},1,{}", r * 3)
}

fn sink(dir: &Path, subtask: usize) -> LineSink {
    TransactionalFileSink::new(
        dir,
        &info(subtask, 2),
        format_line as fn(&u64, &mut Vec<u8>),
    )
}

fn feed(sink: &mut LineSink, records: std::ops::Range<u64>) {
    for r in records {
        sink.invoke(r);
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// The names of `dir` that may be committed output (not hidden).
fn visible(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect()
}

/// The files moved aside under `dir/.abandoned`: `(name, contents)`, sorted.
fn moved_aside(dir: &Path) -> Vec<(String, String)> {
    let root = dir.join(ABANDONED_DIR);
    let mut v = Vec::new();
    for rollback in fs::read_dir(&root).into_iter().flatten() {
        for f in fs::read_dir(rollback.unwrap().path()).unwrap() {
            let f = f.unwrap();
            let name = f.file_name().into_string().unwrap();
            v.push((name, fs::read_to_string(f.path()).unwrap()));
        }
    }
    v.sort();
    v
}

fn hidden(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// The lines of every committed file, sorted.
fn committed_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for name in names(dir) {
        if name.starts_with("part-") {
            let text = fs::read_to_string(dir.join(&name)).unwrap();
            assert!(text.is_empty() || text.ends_with('\n'), "{name}");
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines.sort();
    lines
}

fn expected(records: impl IntoIterator<Item = u64>) -> Vec<String> {
    let mut v: Vec<String> = records.into_iter().map(line).collect();
    v.sort();
    v
}

#[test]
fn commit_makes_output_visible_only_after_notify() {
    let d = TempDir::new("commit");
    let mut s = sink(&d.0, 1);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..100);
    assert_eq!(committed_lines(&d.0), Vec::<String>::new());
    let state = s.snapshot_state(1).unwrap();
    assert_eq!(decode_state(&state, 1).unwrap().ids, vec![1]);
    assert_eq!(names(&d.0), vec![".pending-0001-0000000001".to_string()]);
    assert_eq!(committed_lines(&d.0), Vec::<String>::new());
    s.notify_checkpoint_complete(1).unwrap();
    assert_eq!(names(&d.0), vec!["part-0001-0000000001".to_string()]);
    assert_eq!(committed_lines(&d.0), expected(0..100));
    // A repeated notification changes nothing.
    s.notify_checkpoint_complete(1).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..100));
}

#[test]
fn large_transactions_spill_to_a_hidden_file_before_the_barrier() {
    let d = TempDir::new("spill");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    let n = 50_000; // about 650 KB of lines: several buffer writes
    feed(&mut s, 0..n);
    let hidden_now = hidden(&d.0);
    assert_eq!(hidden_now.len(), 1, "{hidden_now:?}");
    assert!(hidden_now[0].starts_with(".inprogress-0000-"));
    assert!(fs::metadata(d.0.join(&hidden_now[0])).unwrap().len() >= WRITE_AT as u64);
    assert_eq!(committed_lines(&d.0), Vec::<String>::new());
    s.snapshot_state(7).unwrap();
    s.notify_checkpoint_complete(7).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..n));
    assert!(hidden(&d.0).is_empty());
}

#[test]
fn empty_transactions_create_no_file() {
    let d = TempDir::new("empty");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    let state = s.snapshot_state(1).unwrap();
    assert_eq!(decode_state(&state, 1).unwrap().ids, Vec::<u64>::new());
    assert!(names(&d.0).is_empty());
    s.notify_checkpoint_complete(1).unwrap();
    feed(&mut s, 0..3);
    s.snapshot_state(2).unwrap();
    let state = s.snapshot_state(3).unwrap(); // empty, 2 still pending
    assert_eq!(decode_state(&state, 3).unwrap().ids, vec![2]);
    s.notify_checkpoint_complete(3).unwrap();
    assert_eq!(names(&d.0), vec!["part-0000-0000000002".to_string()]);
    assert_eq!(committed_lines(&d.0), expected(0..3));
}

#[test]
fn one_notification_commits_every_earlier_pending_transaction() {
    let d = TempDir::new("several");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..10);
    s.snapshot_state(1).unwrap();
    feed(&mut s, 10..20);
    s.snapshot_state(2).unwrap();
    feed(&mut s, 20..30);
    let state = s.snapshot_state(4).unwrap();
    assert_eq!(decode_state(&state, 4).unwrap().ids, vec![1, 2, 4]);
    feed(&mut s, 30..40);
    s.snapshot_state(5).unwrap();
    // Checkpoint 4 completes after barrier 5 was taken.
    s.notify_checkpoint_complete(4).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..30));
    assert_eq!(hidden(&d.0), vec![".pending-0000-0000000005".to_string()]);
    s.finish();
    let state = s.snapshot_state(6).unwrap();
    assert_eq!(decode_state(&state, 6).unwrap().ids, vec![5]);
    s.notify_checkpoint_complete(6).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..40));
    assert!(hidden(&d.0).is_empty());
}

#[test]
fn checkpointing_off_commits_everything_as_transaction_zero() {
    let d = TempDir::new("off");
    for run in 0..2 {
        // Running the job twice into the same directory replaces the
        // output of the first run, which is moved aside, not deleted.
        let mut s = sink(&d.0, 0);
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..25);
        s.finish();
        s.snapshot_state(0).unwrap();
        s.notify_checkpoint_complete(0).unwrap();
        assert_eq!(
            visible(&d.0),
            vec!["part-0000-0000000000".to_string()],
            "run {run}"
        );
        assert_eq!(committed_lines(&d.0), expected(0..25));
        assert_eq!(moved_aside(&d.0).len(), run, "run {run}");
    }
}

#[test]
fn subtasks_share_the_directory_without_touching_each_other() {
    let d = TempDir::new("subtasks");
    let mut a = sink(&d.0, 0);
    let mut b = sink(&d.0, 1);
    a.initialize_state(None).unwrap();
    b.initialize_state(None).unwrap();
    feed(&mut a, 0..10);
    feed(&mut b, 10..20);
    let sa = a.snapshot_state(1).unwrap();
    b.snapshot_state(1).unwrap();
    a.notify_checkpoint_complete(1).unwrap();
    b.notify_checkpoint_complete(1).unwrap();
    feed(&mut b, 20..30);
    b.snapshot_state(2).unwrap();
    b.notify_checkpoint_complete(2).unwrap();
    // Subtask 0 restarts from checkpoint 1: subtask 1's part of 2 stays.
    let mut a2 = sink(&d.0, 0);
    a2.initialize_state(Some((1, &sa))).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..30));
}

/// (a) Barrier 2 taken but checkpoint 2 never completes; restart from 1.
#[test]
fn restart_from_an_older_checkpoint_aborts_newer_transactions() {
    let d = TempDir::new("restart-a");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..10);
    let state1 = s.snapshot_state(1).unwrap();
    feed(&mut s, 10..20);
    s.snapshot_state(2).unwrap();
    s.notify_checkpoint_complete(1).unwrap(); // late, after barrier 2
                                              // In progress when the crash comes, partly written to disk.
    feed(&mut s, 20..30_000);
    drop(s);
    let before = hidden(&d.0);
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(before[0].starts_with(".inprogress-0000-"), "{before:?}");
    assert_eq!(before[1], ".pending-0000-0000000002");

    let mut s = sink(&d.0, 0);
    s.initialize_state(Some((1, &state1))).unwrap();
    assert_eq!(names(&d.0), vec!["part-0000-0000000001".to_string()]);
    // The replay starts after checkpoint 1.
    feed(&mut s, 10..30_000);
    s.finish();
    s.snapshot_state(3).unwrap();
    s.notify_checkpoint_complete(3).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..30_000));
    assert!(hidden(&d.0).is_empty());
}

/// (b) Crash after checkpoint 2 was committed; restart from 2.
#[test]
fn restart_after_commit_recommits_nothing() {
    let d = TempDir::new("restart-b");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..10);
    s.snapshot_state(1).unwrap();
    s.notify_checkpoint_complete(1).unwrap();
    feed(&mut s, 10..20);
    let state2 = s.snapshot_state(2).unwrap();
    s.notify_checkpoint_complete(2).unwrap();
    feed(&mut s, 20..23);
    s.snapshot_state(3).unwrap(); // never completes
    drop(s);

    let mut s = sink(&d.0, 0);
    s.initialize_state(Some((2, &state2))).unwrap();
    assert_eq!(
        names(&d.0),
        vec![
            "part-0000-0000000001".to_string(),
            "part-0000-0000000002".to_string()
        ]
    );
    feed(&mut s, 20..30);
    s.snapshot_state(4).unwrap();
    s.notify_checkpoint_complete(4).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..30));
    assert!(hidden(&d.0).is_empty());
}

/// (c) Crash between pre-commit and commit of checkpoint 2, which is
/// complete; restart from 2 commits it.
#[test]
fn restart_commits_the_pending_transactions_of_the_restored_checkpoint() {
    let d = TempDir::new("restart-c");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..10);
    s.snapshot_state(1).unwrap();
    feed(&mut s, 10..20);
    let state2 = s.snapshot_state(2).unwrap();
    assert_eq!(decode_state(&state2, 2).unwrap().ids, vec![1, 2]);
    feed(&mut s, 20..24);
    drop(s);
    assert_eq!(committed_lines(&d.0), Vec::<String>::new());

    let mut s = sink(&d.0, 0);
    s.initialize_state(Some((2, &state2))).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..20));
    assert!(hidden(&d.0).is_empty());
    feed(&mut s, 20..30);
    s.snapshot_state(3).unwrap();
    s.notify_checkpoint_complete(3).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..30));
}

/// (d) Checkpoint 2 was committed but is found corrupt; restart from 1
/// moves its part file aside, and the replay writes its records again.
#[test]
fn restart_from_before_a_committed_checkpoint_moves_its_output_aside() {
    let d = TempDir::new("restart-d");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..10);
    let state1 = s.snapshot_state(1).unwrap();
    s.notify_checkpoint_complete(1).unwrap();
    feed(&mut s, 10..20);
    s.snapshot_state(2).unwrap();
    s.notify_checkpoint_complete(2).unwrap();
    drop(s);
    let part2 = fs::read_to_string(d.0.join("part-0000-0000000002")).unwrap();

    let mut s = sink(&d.0, 0);
    s.initialize_state(Some((1, &state1))).unwrap();
    assert_eq!(visible(&d.0), vec!["part-0000-0000000001".to_string()]);
    assert_eq!(
        moved_aside(&d.0),
        vec![("part-0000-0000000002".to_string(), part2)],
        "the rolled-back part is kept, unchanged"
    );
    feed(&mut s, 10..30);
    s.snapshot_state(3).unwrap();
    s.notify_checkpoint_complete(3).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..30));
}

#[test]
fn a_fresh_start_moves_all_earlier_output_of_the_subtask_aside() {
    let d = TempDir::new("fresh");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..10);
    s.snapshot_state(1).unwrap();
    s.notify_checkpoint_complete(1).unwrap();
    feed(&mut s, 10..15);
    s.snapshot_state(2).unwrap();
    drop(s);
    // Nothing restorable: the whole input is replayed.
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    assert!(visible(&d.0).is_empty());
    let moved: Vec<String> = moved_aside(&d.0).into_iter().map(|m| m.0).collect();
    assert_eq!(moved, vec!["part-0000-0000000001".to_string()]);
    feed(&mut s, 0..15);
    s.snapshot_state(3).unwrap();
    s.notify_checkpoint_complete(3).unwrap();
    assert_eq!(committed_lines(&d.0), expected(0..15));
}

#[test]
fn committed_output_is_never_overwritten() {
    let d = TempDir::new("both");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..5);
    s.snapshot_state(1).unwrap();
    let part = s.part_path(1);
    fs::write(&part, "someone else's\n").unwrap();
    let err = s.notify_checkpoint_complete(1).unwrap_err();
    assert!(err.contains(".pending-0000-0000000001"), "{err}");
    assert!(err.contains(&part.display().to_string()), "{err}");
    assert_eq!(fs::read_to_string(&part).unwrap(), "someone else's\n");
}

/// A restored checkpoint's transaction whose pending and part files are
/// both gone was committed before and its part taken since (a downstream
/// process that moves committed files away, while the job crashed before
/// its next checkpoint): the restore goes on, as Flink's committers do on
/// recovery, and does not write its records again.
#[test]
fn a_restored_transaction_whose_part_was_taken_away_is_not_committed_again() {
    let d = TempDir::new("taken");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..5);
    let state = s.snapshot_state(1).unwrap();
    s.notify_checkpoint_complete(1).unwrap();
    feed(&mut s, 5..8);
    // The crash, before checkpoint 2; then the downstream process takes
    // the committed part (deleted here).
    drop(s);
    fs::remove_file(d.0.join("part-0000-0000000001")).unwrap();
    let mut s = sink(&d.0, 0);
    s.initialize_state(Some((1, &state))).unwrap();
    assert!(visible(&d.0).is_empty(), "{:?}", names(&d.0));
    assert!(hidden(&d.0).is_empty(), "{:?}", hidden(&d.0));
    feed(&mut s, 5..10);
    s.snapshot_state(2).unwrap();
    s.notify_checkpoint_complete(2).unwrap();
    assert_eq!(committed_lines(&d.0), expected(5..10));
}

/// At a live commit the pending file was pre-committed by the same
/// attempt: its loss is an error naming both files.
#[test]
fn a_pending_file_lost_before_its_live_commit_is_an_error() {
    let d = TempDir::new("lost");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    feed(&mut s, 0..5);
    s.snapshot_state(1).unwrap();
    fs::remove_file(d.0.join(".pending-0000-0000000001")).unwrap();
    let err = s.notify_checkpoint_complete(1).unwrap_err();
    assert!(err.contains(".pending-0000-0000000001"), "{err}");
    assert!(err.contains("part-0000-0000000001"), "{err}");
}

#[test]
fn malformed_states_are_rejected_with_the_reason() {
    let d = TempDir::new("malformed");
    let dir = d.0.display().to_string();
    let cases: [(&[u8], &str); 7] = [
        (&[], "empty"),
        (&[3, 0], "version 3"),
        (&[1], "count is truncated"),
        (&[1, 3, 1], "3 transactions"),
        (&[1, 2, 1, 0], "not increasing"),
        (&[1, 1, 9], "transaction 9, newer"),
        (&[1, 1, 1, 0], "1 unexpected bytes"),
    ];
    for (bytes, why) in cases {
        let mut s = sink(&d.0, 0);
        let err = s.initialize_state(Some((5, bytes))).unwrap_err();
        assert!(err.contains(&dir) && err.contains(why), "{bytes:?}: {err}");
    }
    let mut s = sink(&d.0, 0);
    let too_big = [
        1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ];
    let err = s.initialize_state(Some((5, &too_big))).unwrap_err();
    assert!(err.contains("64 bits"), "{err}");
}

#[test]
fn state_encoding_round_trips_and_is_compact() {
    for ids in [
        vec![],
        vec![0],
        vec![1, 2, 3],
        vec![7, 300, 1 << 40, u64::MAX],
    ] {
        let bytes = encode_state(None, &ids);
        assert_eq!(decode_state(&bytes, u64::MAX).unwrap().ids, ids);
    }
    assert_eq!(encode_state(None, &[1000, 1001]), vec![1, 2, 0xe8, 0x07, 1]);
}

#[test]
fn checkpoint_ids_must_increase() {
    let d = TempDir::new("ids");
    let mut s = sink(&d.0, 0);
    let err = s.snapshot_state(1).unwrap_err();
    assert!(err.contains("before initialize_state"), "{err}");
    s.initialize_state(Some((4, &[1, 0]))).unwrap();
    let err = s.snapshot_state(4).unwrap_err();
    assert!(
        err.contains("checkpoint id 4 is not above the previous one, 4"),
        "{err}"
    );
    s.snapshot_state(5).unwrap();
    assert!(s.snapshot_state(5).is_err());
    assert!(s.initialize_state(None).unwrap_err().contains("twice"));
}

/// Subtask 3 of 10 cleans up the names of indices 3, 13, 23, ...: its
/// own, and those of old subtasks no new subtask has.
#[test]
fn only_the_names_of_this_subtasks_indices_are_recognized() {
    let n = Names {
        writer: None,
        legacy: false,
        subtask: 3,
        parallelism: 10,
    };
    assert_eq!(
        n.classify(".inprogress-0003-1a-2b-0"),
        Some(Kind::InProgress)
    );
    assert_eq!(
        n.classify(".pending-0003-0000000042"),
        Some(Kind::Pending(42))
    );
    assert_eq!(n.classify("part-0003-0000000042"), Some(Kind::Part(42)));
    assert_eq!(n.classify("part-0013-0000000042"), Some(Kind::Part(42)));
    assert_eq!(
        n.classify(".pending-0023-0000000007"),
        Some(Kind::Pending(7))
    );
    assert_eq!(n.classify("part-0004-0000000042"), None);
    assert_eq!(n.classify("part-00031-0000000042"), None);
    assert_eq!(n.classify("part-0003-00042.txt"), None);
    assert_eq!(n.classify("part-0003-"), None);
    assert_eq!(n.classify("part-0003--1"), None);
    assert_eq!(n.classify("part--0003-1"), None);
    assert_eq!(n.classify("other-0003-1"), None);
    let wide = Names {
        writer: None,
        legacy: false,
        subtask: 12345,
        parallelism: 20000,
    };
    assert_eq!(wide.classify("part-12345-7"), Some(Kind::Part(7)));
}

/// A write error inside `invoke`, which cannot return it, is reported by
/// `check` and by the next pre-commit (the broken file is never
/// pre-committed), without a panic; an error that may pass is retryable.
#[test]
fn a_write_error_in_invoke_is_reported_by_check_and_the_pre_commit() {
    let d = TempDir::new("invoke-error");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    assert_eq!(s.check(), Ok(()));
    // The directory vanishes behind the sink's back: the in-progress file
    // cannot be created.
    fs::remove_dir_all(&d.0).unwrap();
    feed(&mut s, 0..50_000);
    let err = s.check().unwrap_err();
    assert!(
        err.contains("cannot create in-progress file") && err.contains(".inprogress-0000-"),
        "{err}"
    );
    assert!(s.is_retryable(&err), "a missing file may be back: {err}");
    assert_eq!(s.check().unwrap_err(), err, "the error stays");
    assert_eq!(s.snapshot_state(1).unwrap_err(), err);
    assert!(!d.0.exists(), "nothing was pre-committed");
}

/// An output directory that became a regular file is an error no restart
/// cures: the sink says so.
#[test]
fn a_directory_that_is_a_file_is_not_retryable() {
    let d = TempDir::new("dir-is-file");
    let mut s = sink(&d.0, 0);
    s.initialize_state(None).unwrap();
    fs::remove_dir_all(&d.0).unwrap();
    fs::write(&d.0, b"not a directory").unwrap();
    feed(&mut s, 0..50_000);
    let err = s.check().unwrap_err();
    assert!(err.contains("Not a directory"), "{err}");
    assert!(!s.is_retryable(&err), "{err}");
    fs::remove_file(&d.0).unwrap();

    let mut fresh = sink(&d.0, 0);
    fs::write(&d.0, b"not a directory").unwrap();
    let err = fresh.initialize_state(None).unwrap_err();
    assert!(err.contains("cannot create sink directory"), "{err}");
    assert!(!fresh.is_retryable(&err), "{err}");
    fs::remove_file(&d.0).unwrap();
}

/// A restored state the sink cannot read stays unreadable on a restart.
#[test]
fn a_malformed_restored_state_is_not_retryable() {
    let d = TempDir::new("malformed-retry");
    let mut s = sink(&d.0, 0);
    let err = s.initialize_state(Some((3, &[9]))).unwrap_err();
    assert!(err.contains("unknown state version 9"), "{err}");
    assert!(!s.is_retryable(&err), "{err}");
}

fn sink_of(dir: &Path, subtask: usize, parallelism: usize) -> LineSink {
    TransactionalFileSink::new(
        dir,
        &info(subtask, parallelism),
        format_line as fn(&u64, &mut Vec<u8>),
    )
}

/// Old subtask `k`'s records of transaction `t` (1-based): 1,000 apart.
fn records(k: usize, t: u64) -> std::ops::Range<u64> {
    let base = (k as u64 * 10 + t) * 1_000;
    base..base + 10 + k as u64
}

/// The pending transactions of a checkpoint taken at one parallelism are
/// committed at any other, each by exactly one new subtask, under their
/// old names; what the checkpoint does not cover (a newer pending file, a
/// part committed after it, an in-progress file) is aborted or moved
/// aside whichever subtask wrote it; the new subtasks then write on
/// without a clash.
#[test]
fn pending_transactions_are_committed_once_at_any_other_parallelism() {
    for old_p in 1..=4 {
        for new_p in 1..=4 {
            let d = TempDir::new(&format!("rescale-{old_p}-{new_p}"));
            let mut olds: Vec<LineSink> = (0..old_p).map(|k| sink_of(&d.0, k, old_p)).collect();
            let mut state2 = Vec::new();
            for (k, s) in olds.iter_mut().enumerate() {
                s.initialize_state(None).unwrap();
                feed(s, records(k, 1));
                s.snapshot_state(1).unwrap();
                s.notify_checkpoint_complete(1).unwrap();
                // Checkpoint 2 completes, but no subtask hears of it.
                feed(s, records(k, 2));
                state2.push(s.snapshot_state(2).unwrap());
                // Checkpoint 3: pre-committed everywhere, committed by
                // subtask 0 only before the crash (so the restore of 2 is
                // a fallback past a committed checkpoint).
                feed(s, records(k, 3));
                s.snapshot_state(3).unwrap();
                // Records after checkpoint 3, spilled to an in-progress
                // file.
                feed(s, 1_000_000..1_040_000);
            }
            olds[0].notify_checkpoint_complete(3).unwrap();
            drop(olds);

            let states: Vec<&[u8]> = state2.iter().map(Vec::as_slice).collect();
            let mut news: Vec<LineSink> = (0..new_p).map(|j| sink_of(&d.0, j, new_p)).collect();
            for (j, s) in news.iter_mut().enumerate() {
                if old_p == new_p {
                    s.initialize_state(Some((2, states[j]))).unwrap();
                } else {
                    s.initialize_rescaled_state(2, &states)
                        .expect("the file sink rescales")
                        .unwrap();
                }
            }
            let context = format!("{old_p} -> {new_p}");
            let want = (0..old_p).flat_map(|k| records(k, 1).chain(records(k, 2)));
            assert_eq!(committed_lines(&d.0), expected(want), "{context}");
            assert_eq!(hidden(&d.0), vec![ABANDONED_DIR.to_string()], "{context}");
            let moved: Vec<String> = moved_aside(&d.0).into_iter().map(|m| m.0).collect();
            assert_eq!(moved, vec!["part-0000-0000000003".to_string()], "{context}");

            // The new subtasks go on: transaction 4 of each, committed.
            for (j, s) in news.iter_mut().enumerate() {
                feed(s, records(j + 10, 4));
                s.snapshot_state(4).unwrap();
                s.notify_checkpoint_complete(4).unwrap();
            }
            let want = (0..old_p)
                .flat_map(|k| records(k, 1).chain(records(k, 2)))
                .chain((0..new_p).flat_map(|j| records(j + 10, 4)));
            assert_eq!(committed_lines(&d.0), expected(want), "{context}");
        }
    }
}

/// Each old state goes to exactly one new subtask: `k % P`.
#[test]
fn every_old_state_has_exactly_one_new_owner() {
    for old_p in 1..9 {
        for new_p in 1..9 {
            let mut owners = vec![0; old_p];
            for j in 0..new_p {
                for k in crate::operators::sink::rescaled_share(&info(j, new_p), old_p) {
                    owners[k] += 1;
                    assert_eq!(k % new_p, j);
                }
            }
            assert!(owners.iter().all(|&n| n == 1), "{old_p} -> {new_p}");
        }
    }
}

/// A sink bound to operator `uid`, as the runtime builds it.
fn bound(dir: &Path, subtask: usize, parallelism: usize, uid: &str) -> LineSink {
    let mut s = TransactionalFileSink::new(
        dir,
        &info(subtask, parallelism),
        format_line as fn(&u64, &mut Vec<u8>),
    );
    s.bind_uid(uid);
    s
}

/// Two sinks (two INSERTs into one table) write one directory: the same
/// subtask and the same transaction ids, yet each commits its own files
/// and neither touches the other's, also when one is restored while the
/// other's transaction is still pending.
#[test]
fn two_writers_into_one_directory_commit_each_their_own_files() {
    let d = TempDir::new("two-writers");
    let mut a = bound(&d.0, 0, 1, "sink-o-5");
    let mut b = bound(&d.0, 0, 1, "sink-o-6");
    a.initialize_state(None).unwrap();
    b.initialize_state(None).unwrap();
    feed(&mut a, 0..3);
    feed(&mut b, 10..12);
    a.snapshot_state(1).unwrap();
    let b_state = b.snapshot_state(1).unwrap();
    a.notify_checkpoint_complete(1).unwrap();
    assert_eq!(
        names(&d.0),
        vec![
            ".pending-sink-o-6-0000-0000000001".to_string(),
            "part-sink-o-5-0000-0000000001".to_string(),
        ]
    );
    // `b` crashes before its commit; its restore commits its pending file
    // and leaves `a`'s (committed, and a new in-progress one) alone.
    feed(&mut a, 3..4);
    a.snapshot_state(2).unwrap();
    drop(b);
    let mut b = bound(&d.0, 0, 1, "sink-o-6");
    b.initialize_state(Some((1, &b_state))).unwrap();
    assert_eq!(
        names(&d.0),
        vec![
            ".pending-sink-o-5-0000-0000000002".to_string(),
            "part-sink-o-5-0000-0000000001".to_string(),
            "part-sink-o-6-0000-0000000001".to_string(),
        ]
    );
    a.notify_checkpoint_complete(2).unwrap();
    let mut want: Vec<String> = (0..4).chain(10..12).map(line).collect();
    want.sort();
    assert_eq!(committed_lines(&d.0), want);
    // A fresh start of `b` moves aside its own committed files only.
    drop(b);
    let mut b = bound(&d.0, 0, 1, "sink-o-6");
    b.initialize_state(None).unwrap();
    assert_eq!(
        visible(&d.0),
        vec![
            "part-sink-o-5-0000-0000000001".to_string(),
            "part-sink-o-5-0000-0000000002".to_string(),
        ]
    );
}

/// A checkpoint of older weir (state version 1, names without a writer)
/// restores: the bound sink commits the old pending file under its old
/// name, cleans up the old names, and writes its own from then on.
#[test]
fn a_bound_sink_restores_the_names_of_older_weir() {
    let d = TempDir::new("legacy");
    let mut old = sink(&d.0, 0);
    old.initialize_state(None).unwrap();
    feed(&mut old, 0..2);
    old.snapshot_state(1).unwrap();
    old.notify_checkpoint_complete(1).unwrap();
    feed(&mut old, 2..3);
    let state = old.snapshot_state(2).unwrap();
    assert_eq!(state[0], 1, "an unbound sink writes older weir's state");
    feed(&mut old, 3..4);
    old.snapshot_state(3).unwrap(); // never completes
    drop(old);

    let mut s = bound(&d.0, 0, 2, "sink");
    s.initialize_state(Some((2, &state))).unwrap();
    assert_eq!(
        names(&d.0),
        vec![
            "part-0000-0000000001".to_string(),
            "part-0000-0000000002".to_string(),
        ]
    );
    feed(&mut s, 4..5);
    let state = s.snapshot_state(3).unwrap();
    assert_eq!(state[0], 2, "a bound sink names its writer in its state");
    s.notify_checkpoint_complete(3).unwrap();
    assert_eq!(
        visible(&d.0).last().map(String::as_str),
        Some("part-sink-0000-0000000003")
    );
    assert_eq!(
        committed_lines(&d.0),
        [0, 1, 2, 4].map(line).into_iter().collect::<Vec<_>>()
    );
    let decoded = decode_state(&state, 3).unwrap();
    assert_eq!(decoded.writer.as_deref(), Some("sink"));
    assert_eq!(decoded.ids, vec![3]);
}

/// Older weir's part files in the directory (names without a writer) are
/// moved aside by a bound sink when the whole job starts fresh (its replay
/// would write their records again), and left alone by a sink that is only
/// new to a restored job (another sink may be restoring them).
#[test]
fn a_fresh_job_moves_older_weirs_parts_aside_a_new_sink_in_a_restored_job_does_not() {
    for fresh in [true, false] {
        let d = TempDir::new("legacy-fresh");
        let mut old = sink(&d.0, 0);
        old.initialize_state(None).unwrap();
        feed(&mut old, 0..2);
        old.snapshot_state(1).unwrap();
        old.notify_checkpoint_complete(1).unwrap();
        drop(old);
        assert_eq!(visible(&d.0), vec!["part-0000-0000000001".to_string()]);

        let mut s = bound(&d.0, 0, 1, "sink");
        if fresh {
            s.job_starts_fresh();
        }
        s.initialize_state(None).unwrap();
        feed(&mut s, 0..2);
        s.snapshot_state(1).unwrap();
        s.notify_checkpoint_complete(1).unwrap();
        if fresh {
            assert_eq!(visible(&d.0), vec!["part-sink-0000-0000000001".to_string()]);
            assert_eq!(committed_lines(&d.0), expected(0..2));
            assert_eq!(moved_aside(&d.0).len(), 1, "{:?}", moved_aside(&d.0));
        } else {
            assert_eq!(
                visible(&d.0),
                vec![
                    "part-0000-0000000001".to_string(),
                    "part-sink-0000-0000000001".to_string()
                ]
            );
            assert!(moved_aside(&d.0).is_empty());
        }
    }
}

/// A rescaled restore commits every old subtask's pending files under the
/// writer its state names, whatever its share.
#[test]
fn a_bound_sink_rescales_under_its_writer() {
    let d = TempDir::new("rescale-writer");
    let mut states = Vec::new();
    for subtask in 0..3 {
        let mut s = bound(&d.0, subtask, 3, "files");
        s.initialize_state(None).unwrap();
        feed(&mut s, subtask as u64 * 10..subtask as u64 * 10 + 2);
        states.push(s.snapshot_state(4).unwrap());
    }
    let mut other = bound(&d.0, 0, 1, "other");
    other.initialize_state(None).unwrap();
    feed(&mut other, 100..101);
    other.snapshot_state(4).unwrap();
    let states: Vec<&[u8]> = states.iter().map(Vec::as_slice).collect();
    for subtask in 0..2 {
        let mut s = bound(&d.0, subtask, 2, "files");
        s.initialize_rescaled_state(4, &states).unwrap().unwrap();
    }
    assert_eq!(
        hidden(&d.0),
        vec![".pending-other-0000-0000000004".to_string()]
    );
    let want: Vec<String> = [0, 1, 10, 11, 20, 21].map(line).into_iter().collect();
    assert_eq!(committed_lines(&d.0), want);
}

/// A writer's names are told from every other writer's and from older
/// weir's, whatever dashes its name holds.
#[test]
fn names_with_a_writer_are_told_apart() {
    let n = Names {
        writer: Some("sink-o-5"),
        legacy: false,
        subtask: 1,
        parallelism: 2,
    };
    assert_eq!(
        n.classify("part-sink-o-5-0001-0000000007"),
        Some(Kind::Part(7))
    );
    assert_eq!(
        n.classify(".pending-sink-o-5-0003-0000000007"),
        Some(Kind::Pending(7))
    );
    assert_eq!(
        n.classify(".inprogress-sink-o-5-0001-1a.2b.0"),
        Some(Kind::InProgress)
    );
    for other in [
        "part-sink-o-5-0002-0000000007",
        "part-sink-o-6-0001-0000000007",
        "part-sink-o-5-7-0001-0000000007",
        "part-o-5-0001-0000000007",
        ".inprogress-sink-o-5-7-0001-1a.2b.0",
        ".inprogress-sink-o-6-0001-1a.2b.0",
        "part-0001-0000000007",
        ".pending-0001-0000000007",
        ".inprogress-0001-1a-2b-0",
    ] {
        assert_eq!(n.classify(other), None, "{other}");
    }
    let legacy = Names { legacy: true, ..n };
    assert_eq!(legacy.classify("part-0001-0000000007"), Some(Kind::Part(7)));
    assert_eq!(
        legacy.classify(".inprogress-0001-1a-2b-0"),
        Some(Kind::InProgress)
    );
    assert_eq!(legacy.classify("part-sink-o-6-0001-0000000007"), None);
    let unbound = Names {
        writer: None,
        legacy: false,
        subtask: 1,
        parallelism: 2,
    };
    assert_eq!(unbound.classify("part-sink-o-5-0001-0000000007"), None);
    assert_eq!(unbound.classify(".inprogress-1-sink-0001-1a.2b.0"), None);
}

/// A uid that is not a safe file name part is kept readable and made
/// unique by a stable hash.
#[test]
fn writer_names_are_file_name_parts() {
    assert_eq!(names::writer_name("sink-o_5.x"), "sink-o_5.x");
    let odd = names::writer_name("sink-a/b c");
    assert!(odd.starts_with("sink-a_b_c-"), "{odd}");
    assert_eq!(odd.len(), "sink-a_b_c-".len() + 16);
    assert_ne!(odd, names::writer_name("sink-a b/c"));
    assert_eq!(odd, names::writer_name("sink-a/b c"));
    assert!(!names::writer_name("").is_empty());
    assert!(names::writer_name(&"x".repeat(500)).len() < 120);
}

/// A version 2 state names its writer; a malformed name is refused.
#[test]
fn states_with_a_writer_round_trip_and_refuse_bad_names() {
    let bytes = encode_state(Some("sink-o-5"), &[3, 9]);
    let decoded = decode_state(&bytes, 9).unwrap();
    assert_eq!(decoded.writer.as_deref(), Some("sink-o-5"));
    assert_eq!(decoded.ids, vec![3, 9]);
    let d = TempDir::new("bad-writer");
    let dir = d.0.display().to_string();
    let cases: [(&[u8], &str); 4] = [
        (&[2], "writer name's length is truncated"),
        (&[2, 0, 0], "writer name is 0 bytes long"),
        (
            &[2, 5, b'a', 0],
            "writer name is 5 bytes long but 2 bytes follow",
        ),
        (&[2, 3, b'a', b'/', b'b', 0], "not a file name part"),
    ];
    for (bytes, why) in cases {
        let mut s = bound(&d.0, 0, 1, "x");
        let err = s.initialize_state(Some((5, bytes))).unwrap_err();
        assert!(err.contains(&dir) && err.contains(why), "{bytes:?}: {err}");
    }
}
