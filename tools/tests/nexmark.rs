//! `weir nexmark generate` end to end: the real binary writes the three
//! tables with the rows of each kind, refuses to write over them without
//! `--force`, and names a directory it cannot write.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

fn weir(args: &[&str]) -> Output {
    Command::new(WEIR)
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run the weir binary")
}

/// A directory for one test, removed at the end unless it failed.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("weir-nexmark-cli-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create a scratch directory");
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

fn lines(dir: &Path, table: &str) -> usize {
    let text = fs::read_to_string(dir.join(table).join("part-0.csv")).expect("a table file");
    assert!(text.ends_with('\n'), "{table}: the last row ends its line");
    text.lines().count()
}

fn generate(dir: &Path, events: &str, extra: &[&str]) -> Output {
    let mut args = vec!["nexmark", "generate", "--events", events, "--out"];
    args.push(dir.to_str().expect("a UTF-8 path"));
    args.extend_from_slice(extra);
    weir(&args)
}

#[test]
fn generate_writes_one_file_per_table_with_the_suites_proportions() {
    let scratch = Scratch::new("generate");
    let dir = scratch.0.join("nested/out");
    let out = generate(&dir, "100000", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains("person 2000, auction 6000, bid 92000"),
        "{stdout}"
    );
    assert_eq!(lines(&dir, "person"), 2000);
    assert_eq!(lines(&dir, "auction"), 6000);
    assert_eq!(lines(&dir, "bid"), 92_000);
    let first = fs::read_to_string(dir.join("person/part-0.csv")).unwrap();
    let first = first.lines().next().unwrap();
    assert!(first.starts_with("1000,"), "{first}");
    assert!(first.contains(",2024-01-01 00:00:00.000,"), "{first}");

    // The same command makes the same files; another seed other ones, with
    // the same rows per table.
    let again = scratch.0.join("again");
    assert!(generate(&again, "100000", &[]).status.success());
    for table in ["person", "auction", "bid"] {
        let a = fs::read(dir.join(table).join("part-0.csv")).unwrap();
        let b = fs::read(again.join(table).join("part-0.csv")).unwrap();
        assert!(a == b, "{table} differs between two runs");
    }
    let seeded = scratch.0.join("seeded");
    assert!(
        generate(&seeded, "100000", &["--seed", "3", "--rate", "1000"])
            .status
            .success()
    );
    assert_eq!(lines(&seeded, "bid"), 92_000);
    let bids = fs::read_to_string(seeded.join("bid/part-0.csv")).unwrap();
    // At 1,000 events/s the last event (99,999) is 99.999 s after the start.
    assert!(
        bids.lines()
            .last()
            .unwrap()
            .contains(",2024-01-01 00:01:39.999,"),
        "{}",
        bids.lines().last().unwrap()
    );
}

#[test]
fn existing_tables_are_refused_without_force() {
    let scratch = Scratch::new("force");
    let dir = scratch.0.join("out");
    assert!(generate(&dir, "1000", &[]).status.success());

    let out = generate(&dir, "500", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains("person/part-0.csv already exists"),
        "{stderr}"
    );
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(lines(&dir, "bid"), 920, "the first run's tables are kept");

    let out = generate(&dir, "500", &["--force"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lines(&dir, "person"), 10);
    assert_eq!(lines(&dir, "auction"), 30);
    assert_eq!(lines(&dir, "bid"), 460);
}

#[test]
fn a_directory_that_cannot_be_written_exits_2_naming_it() {
    let scratch = Scratch::new("unwritable");
    let file = scratch.0.join("not-a-dir");
    fs::write(&file, "").unwrap();
    let out = generate(&file, "100", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: cannot create the directory"),
        "{stderr}"
    );
    assert!(stderr.contains("not-a-dir/person"), "{stderr}");
    assert!(out.stdout.is_empty());
}
