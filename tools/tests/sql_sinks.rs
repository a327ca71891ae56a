//! Several INSERTs of one `weir sql` script into one filesystem table, as
//! Flink runs them: one statement set, each INSERT its own sink writing its
//! own part files into the table's directory, every row committed exactly
//! once, also across a SIGKILL and `--restore latest`.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use support::{committed_rows, Scratch, FINISH, WEIR};

fn weir_sql(script: &Path) -> Command {
    let mut c = Command::new(WEIR);
    c.arg("sql")
        .arg(script)
        .args(["--workers", "2", "--set", "weir.worker.pin-cores=false"])
        .stdin(Stdio::null());
    c
}

/// The committed (`part-*`) files of `dir`, by name.
fn parts(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("part-"))
        .collect();
    names.sort();
    names
}

/// The writer part of `part-{writer}-{subtask}-{checkpoint}`.
fn writer(part: &str) -> &str {
    let rest = part.strip_prefix("part-").unwrap();
    let (rest, _) = rest.rsplit_once('-').unwrap();
    rest.rsplit_once('-').unwrap().0
}

/// Two INSERTs into one filesystem table, each taking half of a CSV
/// table's rows, at parallelism 2: the job succeeds and the table holds
/// every row once, in the part files of two writers.
#[test]
fn two_inserts_into_one_filesystem_table_commit_both() {
    let s = Scratch::new("sql_sinks", "bounded");
    let input = s.join("users");
    fs::create_dir_all(&input).unwrap();
    let mut rows = String::from("uid,uname,tier\n");
    for uid in 0..500 {
        rows.push_str(&format!("{uid},user{uid},{}\n", uid % 3));
    }
    fs::write(input.join("users.csv"), rows).unwrap();
    let out = s.join("out");
    let script = s.join("two.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE u (uid INT, uname STRING, tier INT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.ignore-first-line' = 'true');
             CREATE TABLE o (uid INT, uname STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO o SELECT uid, uname FROM u WHERE tier > 1;
             INSERT INTO o SELECT uid, uname FROM u WHERE tier <= 1;",
            input.display(),
            out.display()
        ),
    )
    .unwrap();
    let run = weir_sql(&script).output().expect("run weir sql");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let mut want: Vec<String> = (0..500).map(|uid| format!("{uid},user{uid}")).collect();
    want.sort();
    assert_eq!(committed_rows(&out), want);
    // Run again, as after an upgrade: one of the first run's files under
    // older weir's name (no writer). A fresh run replays everything, so it
    // moves every earlier part aside, that one too, rather than add its
    // rows beside them.
    let first = parts(&out);
    let old = &first[0];
    let (rest, id) = old.rsplit_once('-').unwrap();
    let subtask = rest.rsplit_once('-').unwrap().1;
    let legacy = format!("part-{subtask}-{id}");
    fs::rename(out.join(old), out.join(&legacy)).unwrap();
    let run = weir_sql(&script).output().expect("run weir sql again");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(committed_rows(&out), want);
    let aside: Vec<String> = fs::read_dir(out.join(".abandoned"))
        .unwrap()
        .flat_map(|run| fs::read_dir(run.unwrap().path()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(aside.len(), first.len(), "{aside:?}");
    assert!(aside.contains(&legacy), "{aside:?}");
    let names = parts(&out);
    let writers: BTreeSet<&str> = names.iter().map(|p| writer(p)).collect();
    assert_eq!(writers.len(), 2, "{names:?}");
    let hidden: Vec<String> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".pending-") || n.starts_with(".inprogress-"))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}

/// Two INSERTs of generated rows into one filesystem table with
/// checkpoints: killed after two complete checkpoints, restored with
/// `--restore latest`, each writer commits its own pending files and no
/// other's, and the table holds every row exactly once.
#[test]
fn two_inserts_into_one_table_survive_a_sigkill_and_restore() {
    let s = Scratch::new("sql_sinks", "crash");
    const N: u64 = 40_000;
    let out = s.join("out");
    let script = s.join("gen.sql");
    fs::write(
        &script,
        format!(
            "SET 'execution.checkpointing.interval' = '200ms';
             SET 'state.checkpoints.dir' = '{}';
             CREATE TABLE gen (id BIGINT)
             WITH ('connector' = 'datagen', 'rows-per-second' = '10000',
                   'fields.id.kind' = 'sequence', 'fields.id.start' = '0',
                   'fields.id.end' = '{}');
             CREATE TABLE o (id BIGINT, side STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO o SELECT id, 'even' FROM gen WHERE id % 2 = 0;
             INSERT INTO o SELECT id, 'odd' FROM gen WHERE id % 2 = 1;",
            s.join("chk").display(),
            N - 1,
            out.display()
        ),
    )
    .unwrap();
    support::killed_then_restored(
        &s,
        &s.join("chk"),
        weir_sql(&script),
        weir_sql(&script),
        FINISH,
    );
    let mut want: Vec<String> = (0..N)
        .map(|id| format!("{id},{}", if id % 2 == 0 { "even" } else { "odd" }))
        .collect();
    want.sort();
    let got = committed_rows(&out);
    assert_eq!(got.len(), want.len(), "rows committed");
    assert!(got == want, "the committed rows differ from every id once");
    let names = parts(&out);
    let writers: BTreeSet<&str> = names.iter().map(|p| writer(p)).collect();
    assert_eq!(writers.len(), 2, "{names:?}");
}
