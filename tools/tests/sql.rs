//! `weir sql` end to end, as a user runs it: scripts over CSV and JSON
//! files and generated rows, results compared with references computed
//! here in plain Rust; a SIGKILL mid-run and `--restore latest` must give
//! the uninterrupted result exactly once; bad scripts exit 2 with an error
//! naming the problem and start nothing. A filesystem source watching its
//! directory (`source.monitor-interval`) streams files published while it
//! runs, across a stop and a restore, once each; a malformed line names
//! its file, line and column, or is skipped and counted.

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use support::duckdb::weir_sql;
use support::{committed_rows, csv_copy_script, splitmix64, Proc, Scratch, FINISH, WEIR};

/// `weir sql SCRIPT --workers W` with unpinned workers, to spawn.
fn sql_command(script: &Path, workers: &str) -> Command {
    let mut c = Command::new(WEIR);
    c.arg("sql")
        .arg(script)
        .args(["--workers", workers, "--set", "weir.worker.pin-cores=false"]);
    c
}

/// [`sql_command`] checkpointing every 100 ms into `s`'s `ck`, with
/// savepoints into its `sp`.
fn checkpointed_sql_command(s: &Scratch, script: &Path, workers: &str) -> Command {
    let mut c = sql_command(script, workers);
    c.arg("--set")
        .arg(format!("state.checkpoints.dir={}", s.join("ck").display()))
        .arg("--set")
        .arg(format!("state.savepoints.dir={}", s.join("sp").display()))
        .args(["--set", "execution.checkpointing.interval=100ms"])
        .env_remove("RUST_LOG");
    c
}

/// `weir sql`'s stdout, after checking that it succeeded (its stderr in
/// the failure message).
fn weir_sql_ok(script: &Path, args: &[&str]) -> String {
    let out = weir_sql(script, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`weir_sql_ok`] on one worker: one source subtask reads every file, so
/// the watermarks it makes decide alone which rows are late.
fn weir_sql_ok_on_one_worker(script: &Path) -> String {
    let out = sql_command(script, "1").output().expect("run weir sql");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Milliseconds since the day's start of `yyyy-MM-dd HH:mm:ss.SSS`.
/// The rows of a bare SELECT's printed table, each as its cells joined by
/// one space; the header is the line holding `header`.
fn table_rows(stdout: &str, header: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains(header))
        .map(|l| {
            l.split_whitespace()
                .filter(|w| *w != "|")
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn ms_of_day(text: &str) -> i64 {
    let t = &text[11..];
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().unwrap();
    ((n(0..2) * 60 + n(3..5)) * 60 + n(6..8)) * 1000 + n(9..12)
}

/// `yyyy-MM-dd HH:mm:ss.SSS` of epoch milliseconds (UTC).
fn ts(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    // 2024-01-01 is day 19723; the tests stay within January 2024.
    let d = days - 19_723 + 1;
    assert!((1..=31).contains(&d), "tests stay in January 2024");
    format!(
        "2024-01-{d:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

const JAN_1: i64 = 1_704_067_200_000;

/// Clicks of users 1..=9 over six hours, out of order by up to 3 s, in
/// three files with a header line.
fn write_clicks(dir: &Path) -> Vec<(u64, i64)> {
    fs::create_dir_all(dir).unwrap();
    let mut clicks = Vec::new();
    for f in 0..3 {
        let mut text = String::from("user_id,url,ts\n");
        for i in 0..4000u64 {
            let h = splitmix64(f * 10_000 + i);
            let user = 1 + h % 9;
            // Each file covers its own two hours, in order but for up to
            // 3 s of disorder (less than the watermark's 5 s): a subtask
            // reading two files reads the later one second, so no click
            // is ever late.
            let t = JAN_1 + 3_600_000 + f as i64 * 7_200_000 + (i as i64) * 1_800
                - (h >> 20) as i64 % 3_000;
            text.push_str(&format!("{user},/p/{},{}\n", h % 4, ts(t)));
            clicks.push((user, t));
        }
        fs::write(dir.join(format!("clicks-{f}.csv")), text).unwrap();
    }
    clicks
}

fn clicks_script(s: &Scratch) -> std::path::PathBuf {
    clicks_script_over(s, &s.join("clicks"))
}

/// The clicks script reading `input` (the clicks directory or one file).
fn clicks_script_over(s: &Scratch, input: &Path) -> std::path::PathBuf {
    let script = s.join("clicks.sql");
    fs::write(
        &script,
        format!(
            "-- clicks per user per ten minutes, exactly once
CREATE TABLE clicks (
  user_id BIGINT,
  url STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
  'csv.ignore-first-line' = 'true'
);
CREATE TABLE counts (user_id BIGINT, window_start TIMESTAMP(3), clicks BIGINT)
WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
INSERT INTO counts
SELECT user_id, window_start, COUNT(*)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY user_id, window_start, window_end;
",
            input.display(),
            s.join("counts").display()
        ),
    )
    .unwrap();
    script
}

fn clicks_reference(clicks: &[(u64, i64)]) -> Vec<String> {
    let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
    for &(u, t) in clicks {
        *counts
            .entry((u, t.div_euclid(600_000) * 600_000))
            .or_default() += 1;
    }
    let mut lines: Vec<String> = counts
        .iter()
        .map(|(&(u, w), n)| format!("{u},{},{n}", ts(w)))
        .collect();
    lines.sort();
    lines
}

#[test]
fn clicks_per_user_per_ten_minutes_equal_a_reference() {
    let s = Scratch::new("sql", "clicks");
    let clicks = write_clicks(&s.join("clicks"));
    weir_sql_ok(&clicks_script(&s), &[]);
    same_lines(committed_rows(&s.join("counts")), clicks_reference(&clicks));
}

/// `'path'` naming one CSV file reads that file alone (Flink's filesystem
/// source takes a file or a directory), not the other files beside it.
#[test]
fn one_csv_file_as_the_path_is_read_alone() {
    let s = Scratch::new("sql", "one-file");
    let clicks = write_clicks(&s.join("clicks"));
    weir_sql_ok(
        &clicks_script_over(&s, &s.join("clicks").join("clicks-1.csv")),
        &[],
    );
    // The second file's 4,000 clicks (`write_clicks` writes them in order).
    same_lines(
        committed_rows(&s.join("counts")),
        clicks_reference(&clicks[4000..8000]),
    );
}

/// A `file://` URI as the `'path'` (Flink's docs write them so) names the
/// local directory: the rows are read from it and committed into the
/// sink's, run from another working directory. It was taken as a relative
/// path: the source failed with "No such file or directory" and the sink
/// wrote into `./file:/...` under the working directory. Another file
/// system's URI is refused naming it.
#[test]
fn a_file_uri_path_names_the_local_directory() {
    let s = Scratch::new("sql", "file-uri");
    let (input, out, cwd) = (s.join("my in"), s.join("out"), s.join("cwd"));
    fs::create_dir_all(&input).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(input.join("a.csv"), "1,a\n2,b\n").unwrap();
    let script = s.join("uri.sql");
    let write = |sink: &str| {
        fs::write(
            &script,
            format!(
                "CREATE TABLE src (id BIGINT, name STRING)
                 WITH ('connector' = 'filesystem', 'path' = 'file://{}', 'format' = 'csv');
                 CREATE TABLE dst (id BIGINT, name STRING)
                 WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'csv');
                 INSERT INTO dst SELECT id, name FROM src;",
                input.display().to_string().replace(' ', "%20"),
            ),
        )
        .unwrap();
    };
    write(&format!("file:{}", out.display()));
    let run = sql_command(&script, "2")
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut rows = committed_rows(&out);
    rows.sort();
    assert_eq!(rows, ["1,a", "2,b"]);
    assert_eq!(
        fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing under ./file:"
    );

    write("s3://bucket/out");
    let run = weir_sql(&script, &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "table `dst`: 'path' = 's3://bucket/out': the 's3' file system is not supported"
        ),
        "{err}"
    );
}

/// A CSV table with `csv.escape-character` reads back what its sink
/// wrote: the backslashes in `C:\temp\` were written bare and vanished on
/// reading (`C:temp`); now each is escaped, and with the quote character
/// disabled so is the delimiter.
#[test]
fn csv_with_an_escape_character_reads_back_its_own_output() {
    let s = Scratch::new("sql", "csv-escape");
    for (name, quote) in [
        ("quoted", ""),
        ("bare", ", 'csv.disable-quote-character' = 'true'"),
    ] {
        let dir = s.join(name);
        let table = format!(
            r"CREATE TABLE t (id BIGINT, s STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.escape-character' = '\'{quote});",
            dir.display()
        );
        let write = s.join(&format!("write-{name}.sql"));
        fs::write(
            &write,
            format!(
                r"{table}
                 INSERT INTO t VALUES (1, 'C:\temp\'), (2, 'a,b'), (3, 'x\,y'), (4, 'plain');"
            ),
        )
        .unwrap();
        weir_sql_ok(&write, &[]);
        let read = s.join(&format!("read-{name}.sql"));
        fs::write(
            &read,
            format!("{table}\nSELECT id, '[' || s || ']' AS v FROM t;"),
        )
        .unwrap();
        let mut rows = table_rows(&weir_sql_ok(&read, &[]), "id");
        rows.sort();
        assert_eq!(
            rows,
            [r"1 [C:\temp\]", "2 [a,b]", r"3 [x\,y]", "4 [plain]"],
            "{name}: {:?}",
            committed_rows(&dir)
        );
    }
}

/// `csv.ignore-first-line` skips each file's first line whatever it holds
/// (Flink's, FLINK-20746): a header naming the columns otherwise, or in
/// another case, is not read as a row.
#[test]
fn ignore_first_line_skips_each_files_first_line() {
    let s = Scratch::new("sql", "first-line");
    let dir = s.join("people");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("a.csv"), "Name,City\nann,oslo\nbob,rome\n").unwrap();
    fs::write(dir.join("b.csv"), "who,town\ncy,kyiv\n").unwrap();
    fs::write(dir.join("c.csv"), "\u{feff}\"NAME\",\"TOWN\"\ndee,lima\n").unwrap();
    let script = s.join("people.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE people (who STRING, town STRING) WITH ('connector' = 'filesystem',
               'path' = '{}', 'format' = 'csv', 'csv.ignore-first-line' = 'true');
             SELECT who, town FROM people ORDER BY who;",
            dir.display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    let rows: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        rows,
        [
            "| who | town |",
            "| ann | oslo |",
            "| bob | rome |",
            "| cy | kyiv |",
            "| dee | lima |"
        ],
        "{stdout}"
    );
}

/// Equal line lists, or a short account of the difference.
fn same_lines(got: Vec<String>, want: Vec<String>) {
    if got == want {
        return;
    }
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains(l)).take(5).collect();
    let extra: Vec<&String> = got.iter().filter(|l| !want.contains(l)).take(5).collect();
    panic!(
        "{} lines, {} expected; missing (first 5): {missing:?}; unexpected (first 5): {extra:?}",
        got.len(),
        want.len()
    );
}

#[test]
fn the_same_script_through_weir_run_and_job_sql_file() {
    let s = Scratch::new("sql", "run-config");
    let clicks = write_clicks(&s.join("clicks"));
    let script = clicks_script(&s);
    let config = s.join("job.toml");
    fs::write(
        &config,
        format!(
            "[job]\nsql-file = \"{}\"\n[weir.worker]\npin-cores = false\n",
            script.display()
        ),
    )
    .unwrap();
    let out = Command::new(WEIR)
        .args(["run", "--workers", "2", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    same_lines(committed_rows(&s.join("counts")), clicks_reference(&clicks));
}

/// A bare SELECT whose reader closes stdout early (`weir sql q.sql |
/// head`): no panic, exit 0 (printing the table panicked on the broken
/// pipe).
#[test]
fn a_bare_select_into_a_closed_pipe_ends_quietly() {
    let s = Scratch::new("sql", "closed-pipe");
    let dir = s.join("numbers");
    fs::create_dir_all(&dir).unwrap();
    let text: String = (0..50_000).map(|i| format!("{i},row-{i}\n")).collect();
    fs::write(dir.join("n.csv"), text).unwrap();
    let script = s.join("select.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE numbers (n BIGINT, label STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             SELECT n, label FROM numbers;",
            dir.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(WEIR)
        .args(["sql", "--workers", "1"])
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_bare_select_prints_the_final_result_of_an_updating_query() {
    let s = Scratch::new("sql", "select");
    let dir = s.join("orders");
    fs::create_dir_all(&dir).unwrap();
    // JSON orders, one malformed line skipped by json.ignore-parse-errors.
    let mut text = String::new();
    let mut totals: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    for i in 0..500i64 {
        let h = splitmix64(i as u64);
        let item = ["apple", "pear", "plum"][(h % 3) as usize];
        let qty = (h >> 8) as i64 % 10;
        let price = format!("{}.{:02}", (h >> 16) % 50, (h >> 24) % 100);
        let cents = ((h >> 16) % 50 * 100 + (h >> 24) % 100) as i64;
        text.push_str(&format!(
            "{{\"id\": {i}, \"item\": \"{item}\", \"qty\": {qty}, \"price\": {price}}}\n"
        ));
        if qty > 2 {
            let t = totals.entry(item.into()).or_default();
            t.0 += 1;
            t.1 += qty * cents;
            t.2 = t.2.max(cents);
        }
        if i == 250 {
            text.push_str("{not json\n");
        }
    }
    fs::write(dir.join("orders.json"), text).unwrap();
    let script = s.join("select.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE orders (id BIGINT, item STRING, qty INT, price DECIMAL(10, 2))
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'json',
                   'json.ignore-parse-errors' = 'true');
             CREATE VIEW big AS SELECT item, qty * price AS amount, price FROM orders WHERE qty > 2;
             EXPLAIN SELECT item, COUNT(*) FROM big GROUP BY item;
             SELECT UPPER(item) AS item, COUNT(*) AS n, SUM(amount) AS total, MAX(price) AS top
             FROM big GROUP BY item;",
            dir.display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    assert!(
        stdout.contains("GroupAggregate"),
        "EXPLAIN prints the plan: {stdout}"
    );
    assert!(stdout.contains("Exchange: HASH[item]"), "{stdout}");
    for (item, (n, total, top)) in &totals {
        let row = format!(
            "| {:>5} | {n:>3} | {:>8}.{:02} | {:>5}.{:02} |",
            item.to_uppercase(),
            total / 100,
            total % 100,
            top / 100,
            top % 100
        );
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == row.split_whitespace().collect::<Vec<_>>()),
            "expected {row} in\n{stdout}"
        );
    }
    assert!(stdout.contains("3 rows in set"), "{stdout}");
}

/// Generated rows (datagen, paced), a computed event time, a window
/// aggregation into the exactly-once file sink with checkpoints: killed
/// after a checkpoint, restored with `--restore latest`, the committed
/// output equals the reference exactly once.
#[test]
fn a_sigkill_and_restore_latest_commit_every_window_exactly_once() {
    windows_killed_and_restored(
        "crash",
        "TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
        ("2", "2"),
        |ts| vec![ts.div_euclid(10_000) * 10_000 + 10_000],
    );
}

/// The same with sliding windows (HOP 10 s every 2 s, COUNT and SUM:
/// each row folds into one 2 s slice and a window merges its 5 slices
/// when it fires), killed after a checkpoint and restored on 3 workers instead
/// of 2: the committed windows equal the reference exactly once.
#[test]
fn sliced_hop_windows_commit_exactly_once_across_a_kill_and_a_rescaled_restore() {
    windows_killed_and_restored(
        "hop-crash",
        "HOP(TABLE gen, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)",
        ("2", "3"),
        |ts| {
            // Windows [s, s + 10 s) with s a multiple of 2 s holding ts.
            let first = ts.div_euclid(2_000) * 2_000;
            (0..5).map(|k| first - k * 2_000 + 10_000).collect()
        },
    );
}

/// A job counting and summing 60,000 generated ids per user (id % 7) in
/// the windows of `tvf` (over `gen`) into the exactly-once file sink,
/// run on `workers.0`, killed after two checkpoints, restored with
/// `--restore latest` on `workers.1`: the committed rows equal the
/// reference, where `window_ends(ts)` are the ends of the windows of a
/// row at `ts` ms.
fn windows_killed_and_restored(
    name: &str,
    tvf: &str,
    workers: (&str, &str),
    window_ends: fn(i64) -> Vec<i64>,
) {
    let s = Scratch::new("sql", name);
    const N: u64 = 60_000;
    let script = s.join("gen.sql");
    fs::write(
        &script,
        format!(
            "SET 'execution.checkpointing.interval' = '200ms';
             SET 'state.checkpoints.dir' = '{}';
             CREATE TABLE gen (
               id BIGINT,
               user_id AS id % 7,
               ts AS TO_TIMESTAMP_LTZ(id * 10, 3),
               WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
             ) WITH ('connector' = 'datagen', 'rows-per-second' = '15000',
                     'fields.id.kind' = 'sequence', 'fields.id.start' = '0',
                     'fields.id.end' = '{}');
             CREATE TABLE sums (user_id BIGINT, window_end TIMESTAMP(3), n BIGINT, total BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO sums
             SELECT user_id, window_end, COUNT(*), SUM(id)
             FROM TABLE({tvf})
             GROUP BY user_id, window_start, window_end;",
            s.join("chk").display(),
            N - 1,
            s.join("sums").display()
        ),
    )
    .unwrap();
    let cmd = |workers: &str| sql_command(&script, workers);
    support::killed_then_restored(&s, &s.join("chk"), cmd(workers.0), cmd(workers.1), FINISH);
    let mut expect: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
    for id in 0..N {
        for end in window_ends(id as i64 * 10) {
            let e = expect.entry((id % 7, end)).or_default();
            e.0 += 1;
            e.1 += id;
        }
    }
    let mut lines: Vec<String> = expect
        .iter()
        .map(|(&(u, w), &(n, t))| format!("{u},{},{n},{t}", ts_1970(w)))
        .collect();
    lines.sort();
    same_lines(committed_rows(&s.join("sums")), lines);
}

/// Bare SELECTs (a window aggregation, and a group aggregation whose
/// first keys are final long before the end) with checkpoints, killed
/// after two of them on 2 workers and resumed with `--restore latest` on
/// 3: the tables printed at the end hold every row, once. The collecting
/// sink kept no state, so the rows it had taken before the checkpoint
/// were gone from the table (a window once fired, a key no longer
/// updated), and a restart in the process would have kept the rows taken
/// after the checkpoint twice.
#[test]
fn bare_selects_killed_and_restored_at_another_parallelism_print_every_row_once() {
    let s = Scratch::new("sql", "select-crash");
    const N: u64 = 30_000;
    let script = s.join("select.sql");
    fs::write(
        &script,
        format!(
            "SET 'execution.checkpointing.interval' = '100ms';
             SET 'state.checkpoints.dir' = '{}';
             CREATE TABLE gen (
               id BIGINT,
               ts AS TO_TIMESTAMP_LTZ(id * 10, 3),
               WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
             ) WITH ('connector' = 'datagen', 'rows-per-second' = '5000',
                     'fields.id.kind' = 'sequence', 'fields.id.start' = '0',
                     'fields.id.end' = '{}');
             SELECT id % 7 AS w_user, window_end, COUNT(*) AS w_n, SUM(id) AS w_total
             FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' SECOND))
             GROUP BY id % 7, window_start, window_end;
             SELECT id / 1000 AS g_block, COUNT(*) AS g_n, MAX(id) AS g_top
             FROM gen GROUP BY id / 1000;",
            s.join("chk").display(),
            N - 1,
        ),
    )
    .unwrap();
    let second = support::killed_then_restored(
        &s,
        &s.join("chk"),
        sql_command(&script, "2"),
        sql_command(&script, "3"),
        FINISH,
    );
    assert!(
        second.stderr().contains("restoring checkpoint"),
        "{}",
        second.stderr()
    );
    let stdout = fs::read_to_string(s.join("second.stdout")).unwrap();
    let mut windows: BTreeMap<(u64, i64), (u64, u64)> = BTreeMap::new();
    let mut blocks: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for id in 0..N {
        let w = windows
            .entry((id % 7, (id as i64 * 10).div_euclid(1000) * 1000 + 1000))
            .or_default();
        w.0 += 1;
        w.1 += id;
        let b = blocks.entry(id / 1000).or_default();
        b.0 += 1;
        b.1 = b.1.max(id);
    }
    let (window_table, block_table) = stdout
        .split_once("| g_block")
        .expect("the second SELECT's table");
    let mut want: Vec<String> = windows
        .iter()
        .map(|(&(u, end), &(n, t))| format!("{u} {} {n} {t}", ts_1970(end)))
        .collect();
    want.sort();
    let mut got = table_rows(window_table, "w_user");
    got.sort();
    same_lines(got, want);
    let mut want: Vec<String> = blocks
        .iter()
        .map(|(b, (n, top))| format!("{b} {n} {top}"))
        .collect();
    want.sort();
    let mut got = table_rows(block_table, "g_n");
    got.sort();
    same_lines(got, want);
}

fn ts_1970(ms: i64) -> String {
    format!(
        "1970-01-01 {:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

#[test]
fn bad_scripts_exit_2_name_the_problem_and_start_nothing() {
    let s = Scratch::new("sql", "errors");
    fs::create_dir_all(s.join("in")).unwrap();
    let file = s.join("a-file.csv");
    fs::write(&file, "1,a\n").unwrap();
    let table = format!(
        "CREATE TABLE t (a BIGINT, b STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
         CREATE TABLE o (a BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        s.join("in").display(),
        s.join("out").display()
    );
    let cases: &[(&str, &str)] = &[
        ("SELEC a FROM t;", "Line: 5, Column: 1"),
        ("SELECT nope FROM t;", "unknown column `nope`"),
        ("SELECT a FROM missing;", "unknown table `missing`"),
        ("SELECT FROB(a) FROM t;", "unknown function `FROB`"),
        ("SELECT a + b FROM t;", "type mismatch"),
        ("INSERT INTO o SELECT a, COUNT(*) FROM t GROUP BY a;", "append-only"),
        ("INSERT INTO o SELECT b, a FROM t;", "column `a` is BIGINT"),
        (
            "INSERT INTO o SELECT a, CAST(a AS DOUBLE) FROM t;",
            "column `n` is BIGINT, the query gives DOUBLE",
        ),
        ("SELECT a, b FROM t GROUP BY a;", "neither in GROUP BY nor in an aggregate"),
        (
            "CREATE TABLE x (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp', 'format' = 'csv', 'csv.bogus' = '1');",
            "unsupported options for connector 'filesystem': 'csv.bogus'",
        ),
        ("CREATE TABLE y (a INT) WITH ('connector' = 'nope');", "unknown connector 'nope'"),
        (
            &format!(
                "CREATE TABLE f (a BIGINT, b STRING) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
                 INSERT INTO f SELECT a, b FROM t;",
                file.display()
            ),
            "is a file: the filesystem sink writes its part files into a directory",
        ),
        (
            "CREATE TABLE w (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp', 'format' = 'csv', 'source.monitor-interval' = '0 s');",
            "'source.monitor-interval' = '0 s' is not a positive duration",
        ),
        (
            "CREATE TABLE r (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp', 'format' = 'csv', 'sink.rolling-policy.file-size' = 'big');",
            "'sink.rolling-policy.file-size' = 'big' is not a positive size",
        ),
        (
            "CREATE TABLE r (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp', 'format' = 'csv', 'sink.rolling-policy.rollover-interval' = '0 s');",
            "'sink.rolling-policy.rollover-interval' = '0 s' is not a positive duration",
        ),
        (
            "SELECT * FROM t t1 JOIN t t2 USING (nope);",
            "unknown column `nope`",
        ),
        (
            "SELECT * FROM t t1 WHERE (a, a) NOT IN (SELECT a, a FROM t);",
            "NOT IN of a row",
        ),
        (
            "SELECT CAST(ts AS BIGINT) FROM t;",
            "TIMESTAMP type to NUMERIC type",
        ),
        (
            "SELECT a, b, COUNT(*) FROM TABLE(SESSION(TABLE t PARTITION BY a, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY a, b, window_start, window_end;",
            "SESSION's PARTITION BY (a)",
        ),
        (
            "SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE t PARTITION BY a, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
            "PARTITION BY in TUMBLE",
        ),
        ("SELECT * FROM t JOIN t ON t.a = t.a;", "give one an alias"),
        (
            "SET 'table.exec.state.ttl' = 'soon';\nSELECT * FROM t t1 JOIN t t2 ON t1.a = t2.a;",
            "table.exec.state.ttl",
        ),
    ];
    for (i, (sql, want)) in cases.iter().enumerate() {
        let script = s.join(&format!("bad-{i}.sql"));
        fs::write(&script, format!("{table}\n{sql}")).unwrap();
        let out = weir_sql(&script, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sql}: {err}");
        assert!(err.contains(want), "{sql}: expected `{want}` in: {err}");
        assert!(err.starts_with("error: "), "{sql}: one error line: {err}");
    }
    assert!(!s.join("out").exists(), "nothing started");
    let missing = weir_sql(&s.join("no-such.sql"), &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read SQL file"));
}

/// A LEFT JOIN with `table.exec.state.ttl` set in the script: EXPLAIN
/// shows the join, the bare SELECT prints the changelog applied (every
/// order once, NULLs for the ones without a customer).
#[test]
fn a_left_join_prints_its_final_table() {
    let s = Scratch::new("sql", "join");
    let (orders, customers) = (s.join("orders"), s.join("customers"));
    fs::create_dir_all(&orders).unwrap();
    fs::create_dir_all(&customers).unwrap();
    fs::write(orders.join("a.csv"), "1,10\n2,11\n3,12\n").unwrap();
    fs::write(orders.join("b.csv"), "4,10\n5,99\n").unwrap();
    fs::write(customers.join("c.csv"), "10,ann\n11,bob\n12,cy\n").unwrap();
    let script = s.join("join.sql");
    fs::write(
        &script,
        format!(
            "SET 'table.exec.state.ttl' = '1 h';
             CREATE TABLE orders (id BIGINT, customer INT)
               WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE customers (cid INT, name STRING)
               WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             EXPLAIN SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON o.customer = c.cid;
             SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON o.customer = c.cid;",
            orders.display(),
            customers.display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    assert!(stdout.contains("Join(joinType=[LeftOuterJoin]"), "{stdout}");
    let mut rows: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains("name"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            "| 1 | ann |",
            "| 2 | bob |",
            "| 3 | cy |",
            "| 4 | ann |",
            "| 5 | NULL |"
        ],
        "{stdout}"
    );
    assert!(stdout.contains("5 rows in set"), "{stdout}");
}

/// The README's example, run as the README says (from the repository's
/// root, here a copy of its `examples/sql`): its committed counts equal
/// counts made here from the same CSV files.
#[test]
fn the_readme_example_counts_every_click_once() {
    let s = Scratch::new("sql", "readme");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = repo.join("examples/sql");
    let dst = s.join("examples/sql");
    fs::create_dir_all(dst.join("clicks")).unwrap();
    fs::copy(src.join("clicks.sql"), dst.join("clicks.sql")).unwrap();
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in fs::read_dir(src.join("clicks")).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, dst.join("clicks").join(p.file_name().unwrap())).unwrap();
        for line in fs::read_to_string(&p).unwrap().lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            // ten-minute window start: `yyyy-MM-dd HH:m` + `0:00.000`
            let start = format!("{}0:00.000", &f[2][..15]);
            *want.entry((f[0].to_owned(), start)).or_default() += 1;
        }
    }
    let out = Command::new(WEIR)
        .current_dir(&s.0)
        .args([
            "sql",
            "examples/sql/clicks.sql",
            "--set",
            "weir.worker.pin-cores=false",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: BTreeMap<(String, String), u64> = committed_rows(&s.join("target/clicks-per-user"))
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            ((f[0].to_owned(), f[1].to_owned()), f[3].parse().unwrap())
        })
        .collect();
    assert_eq!(got, want);
}

/// `weir bench nexmark`: q2 over generated events selects exactly the bids
/// the generator itself says it should, and the JSON line says so.
#[test]
fn nexmark_q2_is_verified_against_the_generator() {
    let out = Command::new(WEIR)
        .args([
            "bench",
            "nexmark",
            "--query",
            "q2",
            "--events",
            "100000",
            "--workers",
            "2",
            "--quiet",
        ])
        .args(["--set", "weir.worker.pin-cores=false"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(json["query"], "q2");
    assert_eq!(json["events"], 100_000);
    assert_eq!(json["verified"], true, "{json}");
    assert!(json["results"].as_u64().unwrap() > 0, "{json}");
    assert!(json["events_per_s_per_core"].as_f64().unwrap() > 0.0);
    let missing = Command::new(WEIR)
        .args(["bench", "nexmark", "--query", "q6", "--events", "10"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("README.md lists the queries"));
}

/// Every Nexmark query `weir bench nexmark` has a reference count for
/// gives that count: q21 (REGEXP_EXTRACT of the channel id from the URL),
/// q22 (SPLIT_INDEX of the URL's directories), the joins, and q15-q17,
/// whose changelogs into the blackhole sink carry no update-before rows
/// (a stale reference once counted them, and the bench exited 1).
#[test]
fn nexmark_queries_with_a_reference_are_verified_against_the_generator() {
    for q in [
        "q0", "q1", "q3", "q7", "q8", "q10", "q15", "q16", "q17", "q20", "q21", "q22",
    ] {
        let out = Command::new(WEIR)
            .args(["bench", "nexmark", "--query", q, "--events", "30000"])
            .args(["--workers", "2", "--quiet"])
            .args(["--set", "weir.worker.pin-cores=false"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{q}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(json["verified"], true, "{q}: {json}");
        assert!(json["results"].as_u64().unwrap() > 0, "{q}: {json}");
    }
}

/// CUMULATE: per user, running counts every ten minutes that start over
/// every hour, equal to counts made here.
#[test]
fn cumulate_windows_report_running_counts_that_start_over_each_period() {
    let s = Scratch::new("sql", "cumulate");
    let clicks = write_clicks(&s.join("clicks"));
    let script = s.join("cumulate.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE clicks (user_id BIGINT, url STRING, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.ignore-first-line' = 'true');
             CREATE TABLE running (user_id BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO running
             SELECT user_id, window_start, window_end, COUNT(*)
             FROM TABLE(CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '1' HOUR))
             GROUP BY user_id, window_start, window_end;",
            s.join("clicks").display(),
            s.join("running").display()
        ),
    )
    .unwrap();
    weir_sql_ok(&script, &[]);
    let mut want: BTreeMap<(u64, i64, i64), u64> = BTreeMap::new();
    for &(u, t) in &clicks {
        let start = t.div_euclid(3_600_000) * 3_600_000;
        for k in 1..=6 {
            let end = start + k * 600_000;
            if end > t {
                *want.entry((u, start, end)).or_default() += 1;
            }
        }
    }
    let mut lines: Vec<String> = want
        .iter()
        .map(|(&(u, s, e), n)| format!("{u},{},{},{n}", ts(s), ts(e)))
        .collect();
    lines.sort();
    same_lines(committed_rows(&s.join("running")), lines);
}

/// Processing time: `PROCTIME()` columns and windows on the wall clock.
/// Rows generated over about two seconds fall into several one-second
/// windows; each row counts once (the end of the input fires the last
/// window).
#[test]
fn processing_time_windows_count_every_row_once() {
    let s = Scratch::new("sql", "proctime");
    let script = s.join("proctime.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE gen (id BIGINT, k AS id % 3, pt AS PROCTIME())
             WITH ('connector' = 'datagen', 'rows-per-second' = '2500',
                   'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '4999');
             CREATE TABLE per_second (k BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO per_second
             SELECT k, window_start, window_end, COUNT(*)
             FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(pt), INTERVAL '1' SECOND))
             GROUP BY k, window_start, window_end;",
            s.join("out").display()
        ),
    )
    .unwrap();
    weir_sql_ok(&script, &[]);
    let mut per_key: BTreeMap<u64, u64> = BTreeMap::new();
    let mut windows = std::collections::BTreeSet::new();
    for line in committed_rows(&s.join("out")) {
        let f: Vec<&str> = line.split(',').collect();
        *per_key.entry(f[0].parse().unwrap()).or_default() += f[3].parse::<u64>().unwrap();
        windows.insert(f[1].to_owned());
        // Each window is one second long, aligned to the second.
        let length = (ms_of_day(f[2]) - ms_of_day(f[1])).rem_euclid(86_400_000);
        assert_eq!(length, 1_000, "{line}");
        assert_eq!(ms_of_day(f[1]) % 1_000, 0, "{line}");
    }
    assert_eq!(per_key, BTreeMap::from([(0, 1667), (1, 1667), (2, 1666)]));
    assert!(
        windows.len() >= 2,
        "rows over ~2 s fill several windows: {windows:?}"
    );
}

/// The integer fields of each `+I` and `+U` row a print sink wrote to
/// `out`, in order (after the printing subtask's `N> `, as Flink's print
/// sink writes): the last of a key is its final row.
fn inserted_or_updated(out: &str) -> impl Iterator<Item = Vec<u64>> + '_ {
    out.lines().filter_map(|line| {
        let line = line.split_once("> ").map_or(line, |(_, row)| row);
        let row = line.strip_prefix("+I[").or(line.strip_prefix("+U["))?;
        Some(
            row.trim_end_matches(']')
                .split(", ")
                .map(|v| v.parse().unwrap())
                .collect(),
        )
    })
}

/// One firing far larger than every buffer an exchange may own: 100,000
/// ids in one processing-time window of a bounded input all fire at its
/// end into an exchange (to a grouping by `id % 10`) whose consumer on the
/// same worker cannot run until the firing is done, through 256-byte
/// buffers (~1,000 at most: ~260 KB against ~1.5 MB of rows per worker).
/// The job failed ("one record's output filled the whole buffer pool", as
/// Nexmark q5 did at 4 M events); now it completes with every id counted
/// once.
#[test]
fn a_firing_larger_than_the_buffer_pool_completes() {
    let s = Scratch::new("sql", "huge-firing");
    let script = s.join("huge.sql");
    fs::write(
        &script,
        "SET 'taskmanager.memory.segment-size' = '256b';
         CREATE TABLE gen (id BIGINT, pt AS PROCTIME())
         WITH ('connector' = 'datagen', 'number-of-rows' = '100000',
               'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99999');
         CREATE TABLE per_m (m BIGINT, c BIGINT, n BIGINT) WITH ('connector' = 'print');
         CREATE VIEW per_id AS
         SELECT id, COUNT(*) AS n
         FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(pt), INTERVAL '1' HOUR))
         GROUP BY id, window_start, window_end;
         INSERT INTO per_m SELECT id % 10, COUNT(*), SUM(n) FROM per_id GROUP BY id % 10;",
    )
    .unwrap();
    let out = weir_sql_ok(&script, &[]);
    // The last insert or update-after of each m is its final row (after
    // the printing subtask's `N> `, as Flink's print sink writes).
    let mut last: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for f in inserted_or_updated(&out) {
        last.insert(f[0], (f[1], f[2]));
    }
    // (A run across the hour would split ids between two windows: more
    // rows, the same sum.)
    assert_eq!(last.len(), 10, "{last:?}");
    for (m, (rows, ids)) in &last {
        assert_eq!(*ids, 10_000, "m = {m}: every id once");
        assert!((10_000..=20_000).contains(rows), "m = {m}: {rows} rows");
    }
}

/// A record larger than a network buffer (a 100,000-character text in a
/// CSV row, grouped by, so it crosses an exchange) failed the job with
/// "does not fit in a network buffer" unless the user raised the segment
/// size; Flink splits such a record across buffers. It ships in a buffer
/// of its own now, and its group counts like any other.
#[test]
fn a_row_larger_than_a_network_buffer_crosses_an_exchange() {
    let s = Scratch::new("sql", "big-row");
    let input = s.join("in");
    fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    for i in 0..30 {
        let len = if i % 10 == 4 { 100_000 } else { 5 };
        text.push_str(&format!("{},{}\n", i % 3, "y".repeat(len)));
    }
    fs::write(input.join("part.csv"), text).unwrap();
    let script = s.join("big.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE t (k INT, s STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE o (k INT, n BIGINT, len INT) WITH ('connector' = 'print');
             INSERT INTO o SELECT k, COUNT(*), CHAR_LENGTH(s) FROM t GROUP BY k, s;",
            input.display()
        ),
    )
    .unwrap();
    let out = weir_sql_ok(&script, &[]);
    // Final (k, len) -> count: the last +I/+U of each group.
    let mut last: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for f in inserted_or_updated(&out) {
        last.insert((f[0], f[2]), f[1]);
    }
    // Rows 4, 14, 24 (k = 1, 2, 0) are long; of the 27 short ones, 9, 9, 9.
    let want = BTreeMap::from([
        ((0, 5), 9),
        ((1, 5), 9),
        ((2, 5), 9),
        ((0, 100_000), 1),
        ((1, 100_000), 1),
        ((2, 100_000), 1),
    ]);
    assert_eq!(last, want);
}

/// A directory of gzip-compressed CSV files (`.csv.gz`, one of two
/// concatenated members) beside a plain one is read as Flink's
/// filesystem source reads it: decompressed, every row once. (Its sink
/// declares Flink's rolling policy, taken with a note.)
#[test]
fn gzip_compressed_csv_files_are_read_decompressed() {
    use std::io::Write;
    let s = Scratch::new("sql", "gzip");
    let input = s.join("in");
    fs::create_dir_all(&input).unwrap();
    let gz = |text: &str| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let mut want = Vec::new();
    let mut texts = Vec::new();
    for f in 0..3 {
        let mut text = String::new();
        for i in 0..500 {
            text.push_str(&format!("{f},row-{f}-{i}\n"));
            want.push(format!("{f},row-{f}-{i}"));
        }
        texts.push(text);
    }
    fs::write(input.join("a.csv.gz"), gz(&texts[0])).unwrap();
    let (x, y) = texts[1].split_at(texts[1].len() / 2);
    fs::write(input.join("b.csv.gz"), [gz(x), gz(y)].concat()).unwrap();
    fs::write(input.join("c.csv"), &texts[2]).unwrap();
    // Flink's rolling-policy options are taken, with a note.
    let (out, got) = copy_csv_table(
        &s,
        &input,
        ", 'sink.rolling-policy.file-size' = '1MB', 'sink.rolling-policy.rollover-interval' = '15 min'",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'sink.rolling-policy.file-size'")
            && err.contains("one part file per subtask"),
        "{err}"
    );
    want.sort();
    assert_eq!(got, want);
}

/// A directory laid out in partition subdirectories (`dt=../part-*`,
/// with `_SUCCESS` markers and a `_temporary` directory as other engines
/// leave them) is read recursively, as Flink's file source enumerates it:
/// it read nothing of it before (a bounded job ended with no rows).
#[test]
fn csv_files_in_subdirectories_are_read_skipping_underscore_and_dot_names() {
    let s = Scratch::new("sql", "nested");
    let input = s.join("in");
    let mut want = Vec::new();
    for day in 1..=3 {
        let part = input.join(format!("dt=2024-01-0{day}"));
        fs::create_dir_all(&part).unwrap();
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!("{day},r{i}\n"));
            want.push(format!("{day},r{i}"));
        }
        fs::write(part.join("part-0.csv"), text).unwrap();
        fs::write(part.join("_SUCCESS"), "").unwrap();
        fs::write(part.join(".part-1.csv.crc"), "garbage\n").unwrap();
    }
    fs::create_dir_all(input.join("_temporary")).unwrap();
    fs::write(input.join("_temporary").join("x.csv"), "9,never\n").unwrap();
    let (_, got) = copy_csv_table(&s, &input, "");
    want.sort();
    assert_eq!(got, want);
}

/// Runs a script copying the CSV table `(INT, STRING)` at `input` into a
/// filesystem table under `s/out` (with `sink_options` appended to its
/// WITH clause); checks it succeeded and returns its output and the
/// committed rows, sorted.
fn copy_csv_table(s: &Scratch, input: &Path, sink_options: &str) -> (Output, Vec<String>) {
    let script = s.join("copy.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE t (a INT, b STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE o (a INT, b STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'{sink_options});
             INSERT INTO o SELECT a, b FROM t;",
            input.display(),
            s.join("out").display()
        ),
    )
    .unwrap();
    let out = weir_sql(&script, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows = committed_rows(&s.join("out"));
    rows.sort();
    (out, rows)
}

/// A window join (Flink's form: two windowing TVFs read as tables, joined
/// on their keys and window bounds) and a HOP TVF read as a table, each
/// equal to pairs and windows counted here.
#[test]
fn window_joins_and_window_tables_equal_a_reference() {
    let s = Scratch::new("sql", "window-join");
    let mut sides = Vec::new();
    for (name, seed) in [("a", 1u64), ("b", 2u64)] {
        let dir = s.join(name);
        fs::create_dir_all(&dir).unwrap();
        let mut rows = Vec::new();
        let mut text = String::new();
        for i in 0..300u64 {
            let h = splitmix64(seed * 1_000 + i);
            let user = h % 4;
            let t = JAN_1 + 3_600_000 + i as i64 * 7_000 + (h >> 20) as i64 % 2_000;
            text.push_str(&format!("{user},{}{i},{}\n", name, ts(t)));
            rows.push((user, format!("{name}{i}"), t));
        }
        fs::write(dir.join("part.csv"), text).unwrap();
        sides.push(rows);
    }
    let script = s.join("join.sql");
    let table = |n: &str| {
        format!(
            "CREATE TABLE {n} (user_id BIGINT, tag STRING, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
            s.join(n).display()
        )
    };
    fs::write(
        &script,
        format!(
            "{}{}
             CREATE TABLE pairs (user_id BIGINT, window_start TIMESTAMP(3), l STRING, r STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE hops (tag STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3))
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO pairs
             SELECT L.user_id, L.window_start, L.tag, R.tag
             FROM (SELECT * FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) L
             JOIN (SELECT * FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '5' MINUTES))) R
             ON L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
             INSERT INTO hops
             SELECT tag, window_start, window_end
             FROM TABLE(HOP(TABLE a, DESCRIPTOR(ts), INTERVAL '1' MINUTES, INTERVAL '3' MINUTES))
             WHERE user_id = 1;",
            table("a"),
            table("b"),
            s.join("pairs").display(),
            s.join("hops").display()
        ),
    )
    .unwrap();
    weir_sql_ok(&script, &[]);
    const W: i64 = 300_000;
    let mut pairs = Vec::new();
    for (lu, lt, lts) in &sides[0] {
        for (ru, rt, rts) in &sides[1] {
            if lu == ru && lts.div_euclid(W) == rts.div_euclid(W) {
                pairs.push(format!("{lu},{},{lt},{rt}", ts(lts.div_euclid(W) * W)));
            }
        }
    }
    pairs.sort();
    same_lines(committed_rows(&s.join("pairs")), pairs);
    let mut hops = Vec::new();
    for (u, tag, t) in &sides[0] {
        if *u != 1 {
            continue;
        }
        let last = t.div_euclid(60_000) * 60_000;
        for k in 0..3 {
            let start = last - k * 60_000;
            hops.push(format!("{tag},{},{}", ts(start), ts(start + 180_000)));
        }
    }
    hops.sort();
    same_lines(committed_rows(&s.join("hops")), hops);
}

/// Rows `id,name` for ids `from..to`, as CSV, under a hidden name renamed
/// into `dir` (how a producer hands a continuous source a complete file).
fn publish_rows(dir: &Path, name: &str, ids: std::ops::Range<u64>) -> Vec<String> {
    let rows: Vec<String> = ids
        .map(|i| format!("{i},n{}", splitmix64(i) % 1000))
        .collect();
    let hidden = dir.join(format!(".{name}.tmp"));
    fs::write(&hidden, rows.join("\n") + "\n").unwrap();
    fs::rename(&hidden, dir.join(name)).unwrap();
    rows
}

/// SIGTERM: the job stops with a savepoint; returns its path.
fn stop_with_savepoint(s: &Scratch, p: &mut Proc) -> std::path::PathBuf {
    let ok = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .is_ok_and(|st| st.success());
    assert!(ok, "kill -TERM");
    let status = p.wait(FINISH);
    assert!(
        status.success(),
        "SIGTERM stops gracefully: {status}\n{}",
        p.stderr()
    );
    let stdout = fs::read_to_string(s.join(&format!("{}.stdout", p.label))).unwrap();
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("stopped with a savepoint: "))
        .map(|p| std::path::PathBuf::from(p.trim()))
        .unwrap_or_else(|| panic!("no savepoint line\n{stdout}\n{}", p.stderr()))
}

/// `source.monitor-interval`: the filesystem source keeps watching its
/// directory. Files there at the start and files published while the job
/// runs all reach the committed output; SIGTERM stops the never-ending
/// job with a savepoint; restored from it on 3 workers instead of 2, the
/// job reads only files published since, and every row is committed
/// exactly once.
#[test]
fn a_monitored_directory_streams_new_files_exactly_once_across_a_stop_and_restore() {
    let s = Scratch::new("sql", "monitor");
    let (input, out) = (s.join("in"), s.join("out"));
    fs::create_dir_all(&input).unwrap();
    fs::create_dir_all(&out).unwrap();
    let script = s.join("watch.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE src (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'source.monitor-interval' = '20 ms');
             CREATE TABLE dst (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO dst SELECT id, name FROM src WHERE id >= 0;",
            input.display(),
            out.display()
        ),
    )
    .unwrap();
    let cmd = |workers: &str| checkpointed_sql_command(&s, &script, workers);
    let mut want = publish_rows(&input, "a.csv", 0..5_000);
    let mut first = Proc::spawn(&s, "first", cmd("2"));
    let arrived = |want: &[String]| {
        let got = committed_rows(&out);
        got.len() >= want.len()
    };
    assert!(first.wait_until("the first file's rows", || arrived(&want)));
    want.extend(publish_rows(&input, "b.csv", 5_000..9_000));
    want.extend(publish_rows(&input, "c.csv", 9_000..9_001));
    assert!(first.wait_until("the new files' rows", || arrived(&want)));
    let savepoint = stop_with_savepoint(&s, &mut first);
    let mut sorted_want = want.clone();
    sorted_want.sort();
    same_lines(committed_rows(&out), sorted_want);

    // A file published while the job is stopped, and one after the
    // restore: each read once, the old ones not again.
    want.extend(publish_rows(&input, "d.csv", 9_001..12_000));
    let mut c = cmd("3");
    c.arg("--restore").arg(&savepoint);
    let mut second = Proc::spawn(&s, "second", c);
    assert!(second.wait_until("the stopped-time file's rows", || arrived(&want)));
    want.extend(publish_rows(&input, "e.csv", 12_000..12_500));
    assert!(second.wait_until("the last file's rows", || arrived(&want)));
    stop_with_savepoint(&s, &mut second);
    want.sort();
    same_lines(committed_rows(&out), want);
}

/// A relative input `'path'` names the directory under the working
/// directory: a checkpoint of the job run in `a/` (reading `a/in`) is
/// refused when restored from `b/` (whose `in` holds other files), naming
/// both directories, and restores from `a/` again, every row once. It was
/// taken as the same job's (the checkpoint recorded `in` as written): the
/// restore resumed `a/in`'s byte ranges in `b/in`'s files, failing as "not
/// the start of a line", or with lines of one length, mixing two inputs.
#[test]
fn a_relative_input_path_is_the_directory_under_the_working_directory() {
    let s = Scratch::new("sql", "relative-input");
    let (a, b, out) = (s.join("a"), s.join("b"), s.join("out"));
    fs::create_dir_all(a.join("in")).unwrap();
    fs::create_dir_all(b.join("in")).unwrap();
    let script = s.join("watch.sql");
    fs::write(
        &script,
        csv_copy_script("in", &out.display().to_string(), WATCH_20MS),
    )
    .unwrap();
    let mut want = publish_rows(&a.join("in"), "x.csv", 0..2_000);
    publish_rows(&b.join("in"), "x.csv", 5_000..7_000);
    let arrived = |want: &[String]| committed_rows(&out).len() >= want.len();
    let mut first = checkpointed_sql_command(&s, &script, "2");
    first.current_dir(&a);
    let mut first = Proc::spawn(&s, "first", first);
    assert!(first.wait_until("a/in's rows", || arrived(&want)));
    assert!(first.kill());

    let mut elsewhere = checkpointed_sql_command(&s, &script, "2");
    elsewhere.current_dir(&b).args(["--restore", "latest"]);
    // Refused, it ends at once (taken, the watching job would run on).
    let mut elsewhere = Proc::spawn(&s, "elsewhere", elsewhere);
    let status = elsewhere.wait(FINISH);
    let err = elsewhere.stderr();
    assert!(!status.success(), "{err}");
    let named = format!(
        "parameter input-src: {} in the checkpoint, {} in this job",
        a.join("in").display(),
        b.join("in").display()
    );
    assert!(err.contains(&named), "expected `{named}` in: {err}");

    want.extend(publish_rows(&a.join("in"), "y.csv", 2_000..3_000));
    let mut again = checkpointed_sql_command(&s, &script, "3");
    again.current_dir(&a).args(["--restore", "latest"]);
    let mut again = Proc::spawn(&s, "again", again);
    assert!(
        again.wait_until("a/in's new rows", || arrived(&want)),
        "{}",
        again.stderr()
    );
    stop_with_savepoint(&s, &mut again);
    want.sort();
    same_lines(committed_rows(&out), want);
}

/// `state.checkpoints.dir` or `state.savepoints.dir` inside the directory
/// a filesystem source reads is refused before anything starts, naming
/// the key and the table: the watching source read the first checkpoint's
/// segments as input and failed ("invalid UTF-8" in `ck/chk-1/w000.seg`).
/// One the source skips (`_ck`) is apart and runs.
#[test]
fn checkpoints_inside_the_directory_a_source_reads_are_refused() {
    let s = Scratch::new("sql", "checkpoints-in-source");
    let (input, out) = (s.join("in"), s.join("out"));
    fs::create_dir_all(&input).unwrap();
    fs::write(input.join("a.csv"), "1,a\n2,b\n").unwrap();
    let script = s.join("job.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE src (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE dst (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO dst SELECT id, name FROM src;",
            input.display(),
            out.display()
        ),
    )
    .unwrap();
    let set = |key: &str, dir: &Path| format!("{key}={}", dir.display());
    for (key, dir) in [
        ("state.checkpoints.dir", input.join("ck")),
        ("state.savepoints.dir", input.join("sub/sp")),
    ] {
        let run = weir_sql(&script, &["--set", &set(key, &dir)]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{key}: {err}");
        let want = format!(
            "table `src`: {key} '{}' lies inside the directory this table reads",
            dir.display()
        );
        assert!(err.contains(&want), "{key}: expected `{want}` in: {err}");
        assert!(!dir.exists() && !out.exists(), "{key}: nothing started");
    }
    let hidden = input.join("_ck");
    weir_sql_ok(
        &script,
        &[
            "--set",
            &set("state.checkpoints.dir", &hidden),
            "--set",
            "execution.checkpointing.interval=50ms",
        ],
    );
    let mut rows = committed_rows(&out);
    rows.sort();
    assert_eq!(rows, ["1,a", "2,b"]);
}

/// The same directories written another way (`in/`, `out/./`) are the same
/// job's: a script edited so is restored with `--restore latest` after a
/// SIGKILL, every row committed once. The restore was refused ("written
/// by another job (output: .../out in the checkpoint, .../out/ in this
/// job)"), and so was a fresh start into the output directory.
#[test]
fn a_path_written_with_a_trailing_slash_is_the_same_jobs() {
    let s = Scratch::new("sql", "same-path");
    let (input, out) = (s.join("in"), s.join("out"));
    fs::create_dir_all(&input).unwrap();
    let script = s.join("watch.sql");
    let write = |source: String, sink: String| {
        fs::write(&script, csv_copy_script(&source, &sink, WATCH_20MS)).unwrap();
    };
    write(input.display().to_string(), out.display().to_string());
    let mut want = publish_rows(&input, "a.csv", 0..3_000);
    let arrived = |want: &[String]| committed_rows(&out).len() >= want.len();
    let mut first = Proc::spawn(&s, "first", checkpointed_sql_command(&s, &script, "2"));
    assert!(first.wait_until("the first file's rows", || arrived(&want)));
    assert!(first.kill());

    write(
        format!("{}/", input.display()),
        format!("{}/./", out.display()),
    );
    want.extend(publish_rows(&input, "b.csv", 3_000..5_000));
    let mut c = checkpointed_sql_command(&s, &script, "3");
    c.args(["--restore", "latest"]);
    let mut second = Proc::spawn(&s, "second", c);
    assert!(
        second.wait_until("the new file's rows", || arrived(&want)),
        "{}",
        second.stderr()
    );
    stop_with_savepoint(&s, &mut second);
    want.sort();
    same_lines(committed_rows(&out), want);
}

/// Two filesystem tables of one script writing one directory, one of
/// them through a symbolic link to it: each INSERT's rows are committed
/// there once. The second table's lock of the directory was refused as
/// "in use by process <this one>: two jobs cannot share it".
#[test]
fn two_tables_writing_one_directory_through_a_link_share_it() {
    let s = Scratch::new("sql", "one-dir-two-ways");
    let (input, out, link) = (s.join("in"), s.join("out"), s.join("link"));
    fs::create_dir_all(&input).unwrap();
    fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&out, &link).unwrap();
    fs::write(input.join("a.csv"), "1,a\n2,b\n").unwrap();
    let script = s.join("two.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE src (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE a (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE b (id BIGINT, name STRING)
             WITH ('connector' = 'filesystem', 'path' = '{}/', 'format' = 'csv');
             INSERT INTO a SELECT id, name FROM src;
             INSERT INTO b SELECT id + 10, name FROM src;",
            input.display(),
            out.display(),
            link.display()
        ),
    )
    .unwrap();
    weir_sql_ok(&script, &[]);
    let mut rows = committed_rows(&out);
    rows.sort();
    assert_eq!(rows, ["1,a", "11,a", "12,b", "2,b"]);
}

/// A filesystem sink writing into the directory a filesystem source reads
/// (or a subdirectory of it) is refused before anything starts, naming
/// both tables and paths: the watching source read the sink's committed
/// part files back as input, forever (3 input rows grew to 75 in 4 s),
/// and a bounded one run again listed the last run's part files and
/// failed when the sink moved them aside. A sink directory the source
/// skips (`_out`) is apart and runs.
#[test]
fn a_sink_inside_the_directory_a_source_reads_is_refused_unless_the_source_skips_it() {
    let s = Scratch::new("sql", "sink-in-source");
    let input = s.join("in");
    fs::create_dir_all(&input).unwrap();
    fs::write(input.join("a.csv"), "1,a\n2,b\n3,c\n").unwrap();
    let script = |name: &str, watch: &str, sink: &Path, source: &str| {
        let path = s.join(name);
        fs::write(
            &path,
            format!(
                "CREATE TABLE src (id BIGINT, name STRING)
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'{watch});
                 CREATE TABLE dst (id BIGINT, name STRING)
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
                 INSERT INTO dst SELECT id, name FROM {source};",
                input.display(),
                sink.display()
            ),
        )
        .unwrap();
        path
    };
    let watch = ", 'source.monitor-interval' = '20 ms'";
    let inside = input.join("out");
    for (name, watch, sink, source, want) in [
        (
            "watching.sql",
            watch,
            &inside,
            "src",
            "lies inside the directory",
        ),
        (
            "bounded.sql",
            "",
            &inside,
            "src",
            "lies inside the directory",
        ),
        ("itself.sql", "", &input, "dst", "is the directory"),
        // Through `..`: the same directory resolved.
        (
            "dotdot.sql",
            "",
            &input.join("x/../out"),
            "src",
            "lies inside",
        ),
    ] {
        let out = weir_sql(&script(name, watch, sink, source), &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.starts_with("error: "), "{name}: one error line: {err}");
        for part in [
            "table `dst`".to_owned(),
            want.to_owned(),
            format!("('path' = '{}')", input.display()),
            "starts with '_' or '.'".to_owned(),
        ] {
            assert!(err.contains(&part), "{name}: expected `{part}` in: {err}");
        }
    }
    assert!(!inside.exists(), "nothing started");
    let hidden = input.join("_out");
    weir_sql_ok(&script("hidden.sql", "", &hidden, "src"), &[]);
    let mut rows = committed_rows(&hidden);
    rows.sort();
    assert_eq!(rows, ["1,a", "2,b", "3,c"]);
}

/// Waits until `run` has taken a checkpoint of its own (so SIGTERM finds
/// its handler) and committed as many rows as `want` has, stops it with a
/// savepoint, and checks the committed rows are exactly `want`.
fn stop_when_caught_up(s: &Scratch, run: &mut Proc, out: &Path, mut want: Vec<String>) {
    let taken = last_checkpoint(s);
    assert!(run.wait_until("every published row", || {
        last_checkpoint(s) > taken && committed_rows(out).len() >= want.len()
    }));
    stop_with_savepoint(s, run);
    want.sort();
    same_lines(committed_rows(out), want);
}

/// Options of a source that watches its directory every 20 ms.
const WATCH_20MS: &str = ", 'source.monitor-interval' = '20 ms'";

/// The id of the newest complete checkpoint in `s`'s `ck` (0: none).
fn last_checkpoint(s: &Scratch) -> u64 {
    support::complete_checkpoints(&s.join("ck"))
        .last()
        .copied()
        .unwrap_or(0)
}

/// A watching filesystem source into the file sink, SIGKILLed at seeded
/// random moments while files (plain, gzip, in a subdirectory) are
/// published, each run restored with `--restore latest` on another number
/// of workers (1, 3, 2, 1): every published row is committed exactly once,
/// as in an uninterrupted run.
#[test]
fn a_monitored_directory_killed_at_random_and_rescaled_commits_every_row_once() {
    let s = Scratch::new("sql", "monitor-kill");
    let (input, out) = (s.join("in"), s.join("out"));
    fs::create_dir_all(input.join("sub")).unwrap();
    let script = s.join("watch.sql");
    fs::write(
        &script,
        csv_copy_script(
            &input.display().to_string(),
            &out.display().to_string(),
            WATCH_20MS,
        ),
    )
    .unwrap();
    let mut want = Vec::new();
    let mut next = 0u64;
    let mut files = 0u64;
    let mut publish = |want: &mut Vec<String>, rows: u64| {
        let dir = if files % 4 == 3 {
            input.join("sub")
        } else {
            input.clone()
        };
        let name = format!("f{files:03}.csv");
        let count = rows;
        let rows = if files % 3 == 2 {
            // Gzipped, written under a hidden name and renamed in.
            let rows: Vec<String> = (next..next + count)
                .map(|i| format!("{i},n{}", splitmix64(i) % 1000))
                .collect();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            std::io::Write::write_all(&mut gz, (rows.join("\n") + "\n").as_bytes()).unwrap();
            let hidden = dir.join(format!(".{name}.gz"));
            fs::write(&hidden, gz.finish().unwrap()).unwrap();
            fs::rename(&hidden, dir.join(format!("{name}.gz"))).unwrap();
            rows
        } else {
            publish_rows(&dir, &name, next..next + count)
        };
        want.extend(rows);
        next += count;
        files += 1;
    };
    publish(&mut want, 3_000);
    let mut seed = 20;
    for (round, workers) in ["2", "1", "3", "2"].into_iter().enumerate() {
        let mut c = checkpointed_sql_command(&s, &script, workers);
        if round > 0 {
            c.args(["--restore", "latest"]);
        }
        let mut run = Proc::spawn(&s, &format!("run-{round}"), c);
        seed = splitmix64(seed);
        let publishes = 2 + seed % 5;
        for i in 0..publishes {
            publish(
                &mut want,
                [1, 40, 700, 2_500][((seed >> (8 * i)) % 4) as usize],
            );
            std::thread::sleep(std::time::Duration::from_millis(20 + (seed >> i) % 120));
        }
        // Killed after a checkpoint of its own (at a random moment of
        // the next one's interval), so that every run restores one.
        let taken = last_checkpoint(&s);
        assert!(run.wait_until("a checkpoint", || { last_checkpoint(&s) > taken }));
        std::thread::sleep(std::time::Duration::from_millis(seed % 100));
        assert!(
            run.kill(),
            "run {round} ended before the kill\n{}",
            run.stderr()
        );
        if round > 0 {
            assert!(
                run.stderr().contains("restoring checkpoint"),
                "{}",
                run.stderr()
            );
        }
    }
    let mut last = checkpointed_sql_command(&s, &script, "1");
    last.args(["--restore", "latest"]);
    let mut last = Proc::spawn(&s, "last", last);
    stop_when_caught_up(&s, &mut last, &out, want);
}

/// A bounded filesystem source's job, run to its end, then given
/// `source.monitor-interval` and restored with `--restore latest`: it reads
/// only the files published since, every row committed once. The
/// watching restore read every file again (1 M rows committed twice):
/// bounded checkpoints kept no record of the files they had listed.
#[test]
fn a_bounded_job_restored_watching_reads_only_new_files() {
    let s = Scratch::new("sql", "bounded-then-watching");
    let (input, out) = (s.join("in"), s.join("out"));
    fs::create_dir_all(&input).unwrap();
    let script = s.join("job.sql");
    let write = |watch: &str| {
        let (input, out) = (input.display().to_string(), out.display().to_string());
        fs::write(&script, csv_copy_script(&input, &out, watch)).unwrap();
    };
    let mut want = publish_rows(&input, "a.csv", 0..20_000);
    want.extend(publish_rows(&input, "b.csv", 20_000..30_000));
    write("");
    let mut bounded = Proc::spawn(&s, "bounded", checkpointed_sql_command(&s, &script, "2"));
    assert!(bounded.wait(FINISH).success(), "{}", bounded.stderr());
    assert!(!support::complete_checkpoints(&s.join("ck")).is_empty());

    write(WATCH_20MS);
    want.extend(publish_rows(&input, "c.csv", 30_000..31_000));
    let mut c = checkpointed_sql_command(&s, &script, "3");
    c.args(["--restore", "latest"]);
    let mut watching = Proc::spawn(&s, "watching", c);
    stop_when_caught_up(&s, &mut watching, &out, want);
}

/// A line that does not parse fails the job naming the file, the line
/// and the column; with `csv.ignore-parse-errors` a field that does not
/// parse is NULL (Flink's "fields are set to null in case of errors"), a
/// line of fewer fields than columns is a row with the missing ones NULL
/// (as Flink's CSV converter reads it), a line of more fields is skipped,
/// the other rows arrive, and a warning counts it. An empty file gives no
/// rows.
#[test]
fn a_malformed_line_names_file_line_and_column_or_is_skipped_and_counted() {
    let s = Scratch::new("sql", "malformed");
    let input = s.join("in");
    fs::create_dir_all(&input).unwrap();
    fs::write(
        input.join("a.csv"),
        "1,2024-01-01 00:00:00\n2,2024-01-01 00:00:01\n3,yesterday\n4,2024-01-01 00:00:03\n\
         5,2024-01-01 00:00:04,extra\n6\n",
    )
    .unwrap();
    fs::write(input.join("b.csv"), "").unwrap();
    let script = |name: &str, options: &str| {
        let path = s.join(&format!("{name}.sql"));
        fs::write(
            &path,
            format!(
                "CREATE TABLE t (id BIGINT, ts TIMESTAMP(3))
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv'{options});
                 SELECT id, ts IS NULL AS bad FROM t;",
                input.display()
            ),
        )
        .unwrap();
        path
    };
    let out = weir_sql(&script("strict", ""), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let want = format!(
        "input file {}, line 3 (byte offset 44), column 3: column `ts`: `yesterday` is not a valid TIMESTAMP(3) (set 'csv.ignore-parse-errors' = 'true' to skip such lines)",
        input.join("a.csv").display()
    );
    assert!(err.contains(&want), "expected `{want}` in: {err}");

    let out = weir_sql(
        &script("lenient", ", 'csv.ignore-parse-errors' = 'true'"),
        &[],
    );
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(stdout.contains("5 rows in set"), "{stdout}");
    assert!(stdout.contains("|  3 |  true |"), "{stdout}");
    assert!(stdout.contains("|  6 |  true |"), "{stdout}");
    assert!(
        err.contains("skipped 1 line of") && err.contains("line 5 (byte offset 78)"),
        "{err}"
    );
}

/// Text that does not parse fails the job in a CAST, naming the text and
/// the type, as Flink's CAST does; TRY_CAST makes it NULL and the job
/// goes on.
#[test]
fn cast_of_text_that_does_not_parse_fails_the_job_and_try_cast_gives_null() {
    let s = Scratch::new("sql", "cast");
    let input = s.join("in.csv");
    fs::write(&input, "1,42\n2, 7 \n3,abc\n4,1.9\n").unwrap();
    let script = |cast: &str| {
        let path = s.join(&format!("{cast}.sql"));
        fs::write(
            &path,
            format!(
                "CREATE TABLE t (id BIGINT, n STRING)
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
                 SELECT id, {cast}(n AS INT) AS n FROM t;",
                input.display()
            ),
        )
        .unwrap();
        path
    };
    let out = weir_sql(&script("CAST"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("CAST('abc' AS INT) failed: not an integer (TRY_CAST gives NULL instead)"),
        "{err}"
    );
    // The job's error, not a panic's report.
    assert!(!err.contains("panicked"), "{err}");

    let out = weir_sql(&script("TRY_CAST"), &[]);
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(stdout.contains("4 rows in set"), "{stdout}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains(" id "))
        .map(|l| {
            l.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let mut rows = rows;
    rows.sort();
    assert_eq!(
        rows,
        [["1", "42"], ["2", "7"], ["3", "NULL"], ["4", "1"]],
        "{stdout}"
    );
}

/// Flink's implicit casts, in the rows written: an INT window SUM into a
/// BIGINT column, a DECIMAL into a wider one, an INT into a DOUBLE, a
/// UNION ALL of INT and BIGINT and of two DECIMALs, VALUES with NULLs;
/// every value exact in the column's type.
#[test]
fn inserts_and_unions_widen_values_exactly_to_the_columns_types() {
    let s = Scratch::new("sql", "widen");
    let input = s.join("in.csv");
    fs::write(
        &input,
        "a,2147483647,12.25,2024-01-01 00:00:01\n\
         a,-5,0.10,2024-01-01 00:00:02\n\
         b,7,99999999.99,2024-01-01 00:00:03\n",
    )
    .unwrap();
    let script = s.join("widen.sql");
    let dir = |name: &str| s.join(name).display().to_string();
    fs::write(
        &script,
        format!(
            "CREATE TABLE t (k STRING, n INT, p DECIMAL(10, 2), ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE sums (k STRING, total BIGINT, top DECIMAL(14, 4), x DOUBLE)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE both_sides (id BIGINT, d DECIMAL(12, 3))
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE lits (a BIGINT, c DECIMAL(10, 2), x DOUBLE)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO sums
               SELECT k, SUM(n), MAX(p), MIN(n)
               FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR))
               GROUP BY k, window_start, window_end;
             INSERT INTO both_sides
               SELECT n, p FROM t
               UNION ALL SELECT CAST(n AS BIGINT) * 3, CAST(p AS DECIMAL(5, 1)) FROM t WHERE k = 'a'
               UNION ALL SELECT n, NULL FROM t WHERE k = 'b';
             INSERT INTO lits VALUES (1, 1.5, 2), (NULL, NULL, NULL), (3000000000, 7, 0.25);",
            input.display(),
            dir("sums"),
            dir("both_sides"),
            dir("lits"),
        ),
    )
    .unwrap();
    weir_sql_ok(&script, &[]);
    // SUM of an INT is an INT, into a BIGINT column; MAX of a
    // DECIMAL(10, 2) into DECIMAL(14, 4); MIN of an INT into a DOUBLE.
    assert_eq!(
        committed_rows(&s.join("sums")),
        ["a,2147483642,12.2500,-5.0", "b,7,99999999.9900,7.0"]
    );
    assert_eq!(
        committed_rows(&s.join("both_sides")),
        [
            "-15,0.100",
            "-5,0.100",
            "2147483647,12.250",
            "6442450941,12.300",
            "7,",
            "7,99999999.990",
        ]
    );
    assert_eq!(
        committed_rows(&s.join("lits")),
        [",,", "1,1.50,2.0", "3000000000,7.00,0.25"]
    );
}

/// ORDER BY / LIMIT: a bare SELECT prints its final table in that order;
/// in an INSERT, ORDER BY .. LIMIT is a Top-N, and ORDER BY or LIMIT
/// alone is refused naming what to write.
#[test]
fn order_by_and_limit_order_a_bare_select_and_are_a_top_n_in_a_stream() {
    let s = Scratch::new("sql", "order-limit");
    let ddl = "CREATE TABLE t (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '50',
                 'rows-per-second' = '0', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
                 'fields.id.end' = '50');";
    let script = s.join("select.sql");
    fs::write(
        &script,
        format!(
            "{ddl}
             WITH odd AS (SELECT id, id % 7 AS m FROM t WHERE id % 2 = 1)
             SELECT id, m FROM odd ORDER BY m DESC, id LIMIT 4 OFFSET 1;"
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    let ids: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .map(|l| l.split('|').next().unwrap().trim())
        .filter(|c| c.parse::<u64>().is_ok())
        .collect();
    // Odd ids with id % 7 = 6: 13, 27, 41; then % 7 = 5: 5, 19, 33, 47.
    assert_eq!(ids, ["27", "41", "5", "19"], "{stdout}");

    let sink = s.join("top.sql");
    fs::write(
        &sink,
        format!(
            "{ddl}
             CREATE TABLE p (id BIGINT) WITH ('connector' = 'print');
             INSERT INTO p SELECT id FROM t ORDER BY id DESC LIMIT 3;"
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&sink, &[]);
    let mut live: Vec<String> = Vec::new();
    for l in stdout.lines() {
        // `n> ` names the printing subtask at parallelism > 1.
        let l = l.split_once("> ").map_or(l, |(_, rest)| rest);
        if let Some(v) = l.strip_prefix("+I[").and_then(|r| r.strip_suffix(']')) {
            live.push(v.to_owned());
        } else if let Some(v) = l.strip_prefix("-D[").and_then(|r| r.strip_suffix(']')) {
            let i = live
                .iter()
                .position(|x| x == v)
                .expect("a delete of a live row");
            live.remove(i);
        }
    }
    live.sort();
    assert_eq!(live, ["48", "49", "50"], "{stdout}");

    for (query, needle) in [
        ("SELECT id FROM t ORDER BY id", "ORDER BY without LIMIT"),
        ("SELECT id FROM t LIMIT 3", "LIMIT without ORDER BY"),
    ] {
        fs::write(
            &sink,
            format!("{ddl} CREATE TABLE p (id BIGINT) WITH ('connector' = 'print'); INSERT INTO p {query};"),
        )
        .unwrap();
        let out = weir_sql(&sink, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}

/// Rows without an event time belong to no window: every window
/// aggregation drops them, as Flink's window operators do (a NULL time
/// once overflowed aligning its TUMBLE or CUMULATE window, failing the
/// job, and made a SESSION window at the smallest timestamp).
#[test]
fn window_aggregations_drop_rows_without_an_event_time() {
    let s = Scratch::new("sql", "null-time-windows");
    fs::create_dir_all(s.join("ev")).unwrap();
    fs::write(
        s.join("ev/ev.csv"),
        "1,NULL\n2,2024-01-01 00:00:01.000\n3,2024-01-01 00:00:02.000\n\
         4,NULL\n5,2024-01-01 00:00:12.000\n",
    )
    .unwrap();
    let script = s.join("w.sql");
    let agg = |tvf: &str| {
        format!(
            "SELECT '{}' AS w, DATE_FORMAT(window_start, 'ss') AS s,
                    DATE_FORMAT(window_end, 'ss') AS e, COUNT(*) AS n, SUM(id) AS ids
             FROM TABLE({tvf}) GROUP BY window_start, window_end",
            &tvf[..1]
        )
    };
    fs::write(
        &script,
        format!(
            "CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.null-literal' = 'NULL');
             {} UNION ALL {} UNION ALL {} UNION ALL {} ORDER BY w, s, e;",
            s.join("ev").display(),
            agg("TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND)"),
            agg("HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)"),
            agg("CUMULATE(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)"),
            agg("SESSION(TABLE ev, DESCRIPTOR(ts), INTERVAL '3' SECOND)"),
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    let rows = table_rows(&stdout, " w ");
    assert_eq!(
        rows,
        [
            "C 00 05 2 5",
            "C 00 10 2 5",
            "C 10 15 1 5",
            "C 10 20 1 5",
            "H 00 10 2 5",
            "H 05 15 1 5",
            "H 10 20 1 5",
            "H 55 05 2 5",
            "S 01 05 2 5",
            "S 12 15 1 5",
            "T 00 10 2 5",
            "T 10 20 1 5",
        ],
        "{stdout}"
    );
}

/// Sessions that a row bridges merge in time order, so FIRST_VALUE and
/// LAST_VALUE keep the order rows came in when the earlier session's rows
/// came first (the merge once kept the later session's accumulator and
/// merged the earlier one's into it: FIRST_VALUE 2). LISTAGG lists the
/// earlier session's values, then the later one's.
#[test]
fn merged_sessions_keep_the_order_rows_came_in() {
    let s = Scratch::new("sql", "session-order");
    fs::create_dir_all(s.join("ev")).unwrap();
    // One file, read in order: 1 and 2 open two sessions, 7 grows the
    // first, 10 bridges them (none late: a 5 s delay).
    fs::write(
        s.join("ev/ev.csv"),
        "a,1,2024-01-01 00:00:00.000\na,2,2024-01-01 00:00:04.999\n\
         a,7,2024-01-01 00:00:01.000\na,10,2024-01-01 00:00:03.000\n",
    )
    .unwrap();
    let script = s.join("s.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE ev (k STRING, v INT, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             SELECT FIRST_VALUE(v) AS f, LAST_VALUE(v) AS l,
                    LISTAGG(CAST(v AS STRING)) AS vs, COUNT(*) AS n
             FROM TABLE(SESSION(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL '3' SECOND))
             GROUP BY k, window_start, window_end;",
            s.join("ev").display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    assert!(stdout.contains("| 1 | 10 | 1,7,2,10 | 4 |"), "{stdout}");
}

/// A declared watermark is `ts - delay` and goes out right behind a row
/// that moves it more than the watermark interval, as Flink's SQL
/// watermark assigner does: a row behind a window it already fired is
/// dropped however fast the file is read. (Made only on the clock, every
/// 200 ms, no watermark came before the end of this file and no row was
/// late; made one less, 07.999 did not fire [0 s, 5 s).)
///
/// On one worker: with two, the file's rows go through one source subtask
/// while the window's watermark is also the other's, which reads nothing
/// and whose end may come after the rows (as in Flink, the late rows
/// then depend on timing).
#[test]
fn rows_behind_a_declared_watermark_are_late_however_fast_the_file_is_read() {
    let s = Scratch::new("sql", "late-rows");
    fs::create_dir_all(s.join("ev")).unwrap();
    fs::write(
        s.join("ev/ev.csv"),
        "a,1,2024-01-01 00:00:01.000\na,2,2024-01-01 00:00:07.999\n\
         a,3,2024-01-01 00:00:04.000\na,4,2024-01-01 00:00:06.000\n\
         a,5,2024-01-01 00:00:04.999\na,6,2024-01-01 00:00:05.000\n",
    )
    .unwrap();
    let script = s.join("s.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE ev (k STRING, v INT, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '3' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             SELECT 'w' AS q, EXTRACT(SECOND FROM window_start) AS s, COUNT(*) AS n, SUM(v) AS total
             FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND))
             GROUP BY window_start, window_end;
             SELECT 'o' AS q, v, COUNT(*) OVER (PARTITION BY k ORDER BY ts) AS n FROM ev;",
            s.join("ev").display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok_on_one_worker(&script);
    let mut rows = table_rows(&stdout, " q ");
    rows.sort();
    assert_eq!(
        rows,
        ["o 1 1", "o 2 4", "o 4 3", "o 6 2", "w 0 1 1", "w 5 3 12"],
        "{stdout}"
    );
}

/// An OVER aggregation drops late rows as Flink's functions do: with a
/// bounded frame a row is late only if its key already emitted a row of
/// its time or later (Flink's last triggering time per key), so `b`'s row
/// at 5 s behind the 10 s watermark is computed in order; with the
/// default unbounded frame any row at or behind the watermark is late.
/// (Every row behind the watermark was dropped, `b`'s at 5 s too.)
#[test]
fn a_bounded_over_frame_drops_only_rows_behind_their_keys_last_output() {
    let s = Scratch::new("sql", "late-over");
    fs::create_dir_all(s.join("ev")).unwrap();
    fs::write(
        s.join("ev/ev.csv"),
        "a,1,2024-01-01 00:00:01.000\nb,2,2024-01-01 00:00:02.000\n\
         a,3,2024-01-01 00:00:10.000\nb,4,2024-01-01 00:00:05.000\n\
         a,5,2024-01-01 00:00:06.000\nb,6,2024-01-01 00:00:01.500\n\
         a,7,2024-01-01 00:00:20.000\n",
    )
    .unwrap();
    let script = s.join("s.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE ev (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             SELECT 'r' AS q, v, SUM(v) OVER (PARTITION BY k ORDER BY ts
               RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS s FROM ev;
             SELECT 'n' AS q, v, SUM(v) OVER (PARTITION BY k ORDER BY ts
               ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM ev;
             SELECT 'z' AS q, v, SUM(v) OVER (PARTITION BY k ORDER BY ts
               ROWS BETWEEN CURRENT ROW AND CURRENT ROW) AS s FROM ev;
             SELECT 'u' AS q, v, COUNT(*) OVER (PARTITION BY k ORDER BY ts) AS s FROM ev;",
            s.join("ev").display()
        ),
    )
    .unwrap();
    // One worker: see the test above.
    let stdout = weir_sql_ok_on_one_worker(&script);
    let mut rows = table_rows(&stdout, " q ");
    rows.sort();
    let bounded =
        |q: &str| [(1, 1), (2, 2), (3, 4), (4, 6), (7, 10)].map(|(v, s)| format!("{q} {v} {s}"));
    let mut expected: Vec<String> = [bounded("n"), bounded("r")].concat();
    expected.extend(["u 1 1", "u 2 1", "u 3 2", "u 7 3"].map(String::from));
    expected.extend(["z 1 1", "z 2 2", "z 3 3", "z 4 4", "z 7 7"].map(String::from));
    expected.sort();
    assert_eq!(rows, expected, "{stdout}");
}

/// An INSERT's `ORDER BY ts` (its event-time attribute ascending, no
/// LIMIT) is Flink's temporal sort: rows leave in time order as the
/// watermark passes them, and a row at or behind the watermark when it
/// arrives is late and dropped (Flink's `RowTimeSortOperator`). Rows of
/// one time leave ordered by the next ORDER BY key. One worker: see
/// above. (It was refused as an ORDER BY without LIMIT.)
#[test]
fn an_insert_ordered_by_its_time_attribute_sorts_the_stream_and_drops_late_rows() {
    let s = Scratch::new("sql", "temporal-sort");
    fs::create_dir_all(s.join("ev")).unwrap();
    fs::write(
        s.join("ev/ev.csv"),
        "1,2024-01-01 00:00:01.000\n2,2024-01-01 00:00:07.999\n\
         3,2024-01-01 00:00:04.000\n4,2024-01-01 00:00:06.000\n\
         5,2024-01-01 00:00:04.999\n6,2024-01-01 00:00:05.000\n\
         7,2024-01-01 00:00:06.000\n",
    )
    .unwrap();
    let script = s.join("s.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE ev (v INT, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '3' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             CREATE TABLE out (v INT, ts TIMESTAMP(3)) WITH ('connector' = 'print');
             INSERT INTO out SELECT v, ts FROM ev ORDER BY ts, v;",
            s.join("ev").display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok_on_one_worker(&script);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("+I[")).collect();
    assert_eq!(
        rows,
        [
            "+I[1, 2024-01-01 00:00:01.000]",
            "+I[6, 2024-01-01 00:00:05.000]",
            "+I[4, 2024-01-01 00:00:06.000]",
            "+I[7, 2024-01-01 00:00:06.000]",
            "+I[2, 2024-01-01 00:00:07.999]",
        ],
        "{stdout}"
    );
}

/// An event-time temporal join: each order with the rate valid at its
/// time (several versions per currency, one order before any version).
#[test]
fn a_temporal_join_picks_the_version_valid_at_each_rows_time() {
    let s = Scratch::new("sql", "temporal");
    fs::create_dir_all(s.join("orders")).unwrap();
    fs::create_dir_all(s.join("rates")).unwrap();
    fs::write(
        s.join("orders/o.csv"),
        "1,EUR,2024-01-01 00:00:01.000\n2,EUR,2024-01-01 00:00:05.000\n\
         3,USD,2024-01-01 00:00:06.000\n4,EUR,2024-01-01 00:00:12.000\n\
         5,GBP,2024-01-01 00:00:13.000\n6,USD,2023-12-31 23:59:59.000\n\
         7,NULL,2024-01-01 00:00:06.000\n8,EUR,NULL\n",
    )
    .unwrap();
    fs::write(
        s.join("rates/r.csv"),
        "EUR,1.10,2024-01-01 00:00:00.000\nUSD,1.00,2024-01-01 00:00:00.000\n\
         EUR,1.20,2024-01-01 00:00:05.000\nEUR,1.30,2024-01-01 00:00:10.000\n\
         USD,0.90,2024-01-01 00:00:07.000\nNULL,9.99,2024-01-01 00:00:00.000\n",
    )
    .unwrap();
    let script = s.join("t.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE orders (id INT, cur STRING, ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts - INTERVAL '10' SECOND)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.null-literal' = 'NULL');
             CREATE TABLE rates (cur STRING, rate DECIMAL(5, 2), ts TIMESTAMP(3),
               WATERMARK FOR ts AS ts, PRIMARY KEY (cur) NOT ENFORCED)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'csv.null-literal' = 'NULL');
             SELECT o.id, r.rate FROM orders AS o
             LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur
             ORDER BY o.id;",
            s.join("orders").display(),
            s.join("rates").display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    let rows = table_rows(&stdout, "id");
    assert_eq!(
        rows,
        // A NULL key matches no version, not the NULL key's (it once did),
        // and a row without a time none: both padded (an inner join drops
        // them).
        ["1 1.10", "2 1.20", "3 1.00", "4 1.30", "5 NULL", "6 NULL", "7 NULL", "8 NULL"],
        "{stdout}"
    );
}

/// A script written for Flink's SQL client runs as it is: its client and
/// planner options are taken with a note, `pipeline.name` names the job,
/// SHOW TABLES / SHOW VIEWS / DESCRIBE print the catalog.
#[test]
fn flink_sql_client_statements_and_options_are_taken() {
    let s = Scratch::new("sql", "client");
    let script = s.join("c.sql");
    fs::write(
        &script,
        "SET 'sql-client.execution.result-mode' = 'tableau';
         SET 'execution.runtime-mode' = 'batch';
         SET 'table.exec.mini-batch.enabled' = 'true';
         SET 'pipeline.name' = 'client-job';
         CREATE TABLE t (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts,
                         PRIMARY KEY (id) NOT ENFORCED)
         WITH ('connector' = 'datagen', 'number-of-rows' = '3', 'rows-per-second' = '0',
               'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3');
         CREATE VIEW v AS SELECT id FROM t;
         SHOW TABLES; SHOW VIEWS; DESCRIBE t;
         SELECT COUNT(*) AS n FROM v;",
    )
    .unwrap();
    let out = weir_sql(&script, &[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("note: SET").count(), 3, "{stderr}");
    assert!(
        stdout.contains("| table name |") && stdout.contains("| view name |"),
        "{stdout}"
    );
    // SHOW TABLES lists the view too, as Flink's catalog lists tables;
    // SHOW VIEWS the view alone.
    let tables_at = stdout.find("| table name |").unwrap();
    let views_at = stdout.find("| view name |").unwrap();
    let tables = &stdout[tables_at..views_at];
    let cell = |name: &str| {
        tables
            .lines()
            .any(|l| l.trim_end().ends_with(&format!(" {name} |")))
    };
    assert!(cell("t") && cell("v"), "{stdout}");
    let ts = stdout
        .lines()
        .find(|l| l.contains(" ts "))
        .unwrap_or_default();
    assert!(
        ts.contains("TIMESTAMP(3)") && ts.contains("*ROWTIME*"),
        "{stdout}"
    );
    let id = stdout
        .lines()
        .find(|l| l.contains(" id ") && l.contains("BIGINT"))
        .unwrap();
    assert!(id.contains("PRI"), "{stdout}");
    assert!(stdout.contains("| 3 |"), "{stdout}");
    let bad = s.join("bad.sql");
    fs::write(&bad, "SET 'execution.runtime-mode' = 'sometimes';").unwrap();
    let out = weir_sql(&bad, &[]);
    assert_eq!(out.status.code(), Some(2));
}

/// `table.exec.source.idle-timeout`: a watched directory with one file
/// read by two subtasks; the subtask without a file has no watermark, so
/// the windows fire only when it is marked idle.
#[test]
fn an_idle_source_subtask_does_not_hold_windows_back_with_an_idle_timeout() {
    let s = Scratch::new("sql", "idle");
    let (input, out) = (s.join("in"), s.join("out"));
    fs::create_dir_all(&input).unwrap();
    fs::create_dir_all(&out).unwrap();
    const JAN_1: i64 = 1_704_067_200_000;
    let rows: String = (0..20)
        .map(|i| format!("{i},{}\n", ts(JAN_1 + i * 1_000)))
        .collect();
    fs::write(input.join("a.csv"), rows).unwrap();
    let script = s.join("idle.sql");
    fs::write(
        &script,
        format!(
            "SET 'table.exec.source.idle-timeout' = '200 ms';
             SET 'execution.checkpointing.interval' = '100 ms';
             SET 'state.checkpoints.dir' = '{}';
             SET 'state.savepoints.dir' = '{}';
             CREATE TABLE src (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                   'source.monitor-interval' = '50 ms');
             CREATE TABLE dst (window_start TIMESTAMP(3), n BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO dst SELECT window_start, COUNT(*)
             FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '5' SECOND))
             GROUP BY window_start, window_end;",
            s.join("ck").display(),
            s.join("sp").display(),
            input.display(),
            out.display()
        ),
    )
    .unwrap();
    let mut run = Proc::spawn(&s, "idle", sql_command(&script, "2"));
    // The watermark reaches 19 s: the windows up to 15 s fire.
    assert!(run.wait_until("three windows", || committed_rows(&out).len() >= 3));
    let mut got = committed_rows(&out);
    got.sort();
    let want: Vec<String> = (0..3)
        .map(|w| format!("{},5", ts(JAN_1 + w * 5_000)))
        .collect();
    assert_eq!(got, want);
}

/// Windows over an unbounded Nexmark person table at two workers fire
/// while it runs: persons are every 50th event, so the strided source
/// gives none to the odd subtask, whose watermark held every window back
/// for as long as the input lasted (forever, unbounded); event time now
/// comes from every event the subtask generates. Each 1 s window of
/// event time holds 1,000 events, 20 of them persons.
#[test]
fn nexmark_person_windows_fire_at_an_even_parallelism() {
    let s = Scratch::new("sql", "nexmark-person-watermarks");
    let out = s.join("out");
    let script = s.join("persons.sql");
    fs::write(
        &script,
        format!(
            "SET 'state.checkpoints.dir' = '{}';
             SET 'execution.checkpointing.interval' = '200 ms';
             CREATE TABLE person (id BIGINT, date_time TIMESTAMP(3),
               WATERMARK FOR date_time AS date_time)
             WITH ('connector' = 'nexmark', 'nexmark.table.type' = 'person',
                   'first-event.rate' = '1000', 'tps' = '20000');
             CREATE TABLE dst (window_start TIMESTAMP(3), n BIGINT)
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
             INSERT INTO dst SELECT window_start, COUNT(*)
             FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '1' SECOND))
             GROUP BY window_start, window_end;",
            s.join("ck").display(),
            out.display()
        ),
    )
    .unwrap();
    let mut run = Proc::spawn(&s, "persons", sql_command(&script, "2"));
    assert!(run.wait_until("three windows", || committed_rows(&out).len() >= 3));
    run.kill();
    let rows = committed_rows(&out);
    for row in &rows {
        assert!(row.ends_with(",20"), "a window of 1,000 events: {rows:?}");
    }
}

/// A GROUP BY into a blackhole makes one row per input row (`+I`, then
/// `+U`): no `-U`, as Flink's planner leaves them out for a sink that
/// drops them, and EXPLAIN says so. Into `print` every change is `-U` and
/// `+U`.
#[test]
fn a_grouped_count_into_a_blackhole_makes_no_update_before_rows() {
    let s = Scratch::new("sql", "update-before");
    let run = |sink: &str| {
        let script = s.join(&format!("{sink}.sql"));
        fs::write(
            &script,
            format!(
                "CREATE TABLE t (id BIGINT, k AS id % 10)
                 WITH ('connector' = 'datagen', 'rows-per-second' = '0',
                       'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '999');
                 CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = '{sink}');
                 EXPLAIN INSERT INTO out SELECT k, COUNT(*) FROM t GROUP BY k;
                 INSERT INTO out SELECT k, COUNT(*) FROM t GROUP BY k;"
            ),
        )
        .unwrap();
        let out = weir_sql(&script, &[]);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "{stderr}");
        (stdout, stderr)
    };
    // 10 keys: 10 inserts, then 990 updates of one row each.
    let (stdout, stderr) = run("blackhole");
    assert!(
        stdout.contains("emits changelog (+I, +U, -D; no -U: no consumer takes them)"),
        "{stdout}"
    );
    assert!(stderr.contains("done: 1000 rows written"), "{stderr}");
    // ... and two rows per update into print.
    let (stdout, stderr) = run("print");
    assert!(
        stdout.contains("emits changelog (+I, -U, +U, -D)"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().filter(|l| l.contains("-U[")).count(), 990);
    assert!(stderr.contains("done: 1990 rows written"), "{stderr}");
}

/// A savepoint restored into a script whose aggregation now keeps other
/// accumulator slots (SUM turned into AVG, same uids otherwise) is refused
/// at once with exit code 2, naming the operator whose state has no place
/// in the job, instead of failing a worker with an index out of bounds
/// (and retrying for ever) or reading a sum as something else; with
/// `--allow-non-restored-state` the aggregation starts afresh.
#[test]
fn a_savepoint_into_a_changed_aggregation_is_refused_not_misread() {
    let s = Scratch::new("sql", "changed-agg");
    let script = |aggs: &str, out: &str| {
        // One file name for all: the job's name comes from it.
        let dir = s.join(&format!("v-{}-{out}", aggs.len()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("job.sql");
        fs::write(
            &path,
            format!(
                "CREATE TABLE gen (id BIGINT, k AS id % 5, ts AS TO_TIMESTAMP_LTZ(id, 3),
                   WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                 WITH ('connector' = 'datagen', 'rows-per-second' = '20000',
                   'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99999');
                 CREATE TABLE out (k BIGINT, ws TIMESTAMP(3), a BIGINT, n BIGINT)
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
                 INSERT INTO out SELECT k, window_start, {aggs} FROM TABLE(TUMBLE(TABLE gen,
                   DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;",
                s.join(out).display()
            ),
        )
        .unwrap();
        path
    };
    let cmd = |path: &Path| checkpointed_sql_command(&s, path, "1");
    let mut first = Proc::spawn(&s, "first", cmd(&script("SUM(id), COUNT(*)", "out")));
    assert!(
        first.wait_until("a first window's row", || !committed_rows(&s.join("out"))
            .is_empty())
    );
    let savepoint = stop_with_savepoint(&s, &mut first);
    let changed = script("AVG(id),  COUNT(*)", "out");
    let started = std::time::Instant::now();
    let refused = cmd(&changed)
        .arg("--restore")
        .arg(&savepoint)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "refused at once"
    );
    assert!(
        stderr.contains("window-aggregate-") && stderr.contains("--allow-non-restored-state"),
        "{stderr}"
    );
    // (the old output moved away first, as the error about it says: the
    // directory holds committed output of the job before the change)
    fs::rename(s.join("out"), s.join("out.before")).unwrap();
    let mut allowed = cmd(&changed);
    allowed
        .arg("--restore")
        .arg(&savepoint)
        .arg("--allow-non-restored-state");
    let allowed = allowed.output().unwrap();
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
}

/// Flink's JSON functions over a CSV table, through `weir sql`: IS JSON,
/// JSON_OBJECT (a nested JSON_ARRAY as JSON, NULL ON NULL), JSON_ARRAY
/// (ABSENT ON NULL), JSON_STRING and JSON_QUERY with its clauses; an
/// unsupported form is refused naming it.
#[test]
fn json_functions_build_and_query_json_text() {
    let s = Scratch::new("sql", "json");
    let dir = s.join("docs");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("docs.csv"),
        "1,\"{\"\"a\"\":{\"\"b\"\":[1,2]}}\",x\n2,not json,\n",
    )
    .unwrap();
    let script = s.join("json.sql");
    fs::write(
        &script,
        format!(
            "CREATE TABLE docs (id INT, doc STRING, tag STRING) WITH ('connector' = 'filesystem',
               'path' = '{}', 'format' = 'csv', 'csv.null-literal' = '');
             SELECT id, doc IS JSON OBJECT AS obj,
               JSON_OBJECT('id' VALUE id, 'tag' VALUE tag, 'l' VALUE JSON_ARRAY(id, tag)) AS o,
               JSON_STRING(tag) AS js,
               JSON_QUERY(doc, 'lax $.a' EMPTY ARRAY ON EMPTY EMPTY OBJECT ON ERROR) AS q,
               JSON_QUERY(doc, '$.a.b' WITH UNCONDITIONAL ARRAY WRAPPER) AS w
             FROM docs ORDER BY id LIMIT 10;",
            dir.display()
        ),
    )
    .unwrap();
    let stdout = weir_sql_ok(&script, &[]);
    let rows: Vec<Vec<String>> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .map(|l| l.split(" |").map(|c| c.trim().to_string()).collect())
        .filter(|r: &Vec<String>| r[0].parse::<u32>().is_ok())
        .collect();
    let want = [
        [
            "1",
            "true",
            r#"{"id":1,"tag":"x","l":[1,"x"]}"#,
            r#""x""#,
            r#"{"b":[1,2]}"#,
            "[[1,2]]",
        ],
        [
            "2",
            "false",
            r#"{"id":2,"tag":null,"l":[2]}"#,
            "NULL",
            "{}",
            "NULL",
        ],
    ];
    assert_eq!(rows.len(), 2, "{stdout}");
    for (got, want) in rows.iter().zip(want) {
        assert_eq!(&got[..6], want, "{stdout}");
    }

    let bad = s.join("bad.sql");
    fs::write(
        &bad,
        "SELECT JSON_QUERY('[1]', '$' RETURNING ARRAY<STRING>);",
    )
    .unwrap();
    let out = weir_sql(&bad, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only RETURNING STRING"), "{err}");
}
