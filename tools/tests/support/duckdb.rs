//! What the tests that check weir SQL against DuckDB share
//! (`sql_duckdb.rs`, `nexmark_duckdb.rs`): DuckDB's python, a query run in
//! it, a `weir sql` run with two workers, and the comparison of two final
//! result sets as sorted rows of text (DOUBLEs to nine significant digits).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use super::{repo, Scratch, WEIR};

/// The venv python with `duckdb`: `WEIR_DUCKDB_PYTHON`, or what
/// `tools/duckdb/setup.sh` prints. Panics saying how to set it up.
pub fn duckdb_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        super::venv_python(
            "WEIR_DUCKDB_PYTHON",
            "tools/duckdb/setup.sh",
            "import duckdb",
            "DuckDB is needed to check weir SQL against it: run \
             `tools/duckdb/setup.sh` (it makes a venv with duckdb from PyPI under \
             ~/.cache/weir and prints its python) and set WEIR_DUCKDB_PYTHON to what \
             it prints, as .ci/run does",
        )
    })
}

/// A result set: its DuckDB column types (DOUBLE columns compare with a
/// tolerance) and its rows as text, NULL as `NULL`.
pub struct ResultSet {
    pub types: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Runs `sql` (statements separated by `;`, the last a query) in DuckDB
/// after `setup` (`tools/duckdb/query.py`: values as weir prints them).
pub fn duckdb(s: &Scratch, name: &str, setup: &str, sql: &str) -> ResultSet {
    let (setup_file, query_file) = (
        s.join(&format!("{name}.setup.duck.sql")),
        s.join(&format!("{name}.duck.sql")),
    );
    fs::write(&setup_file, setup).unwrap();
    fs::write(&query_file, sql).unwrap();
    let out = Command::new(duckdb_python())
        .arg("-I")
        .arg(repo().join("tools/duckdb/query.py"))
        .args([&setup_file, &query_file])
        .stdin(Stdio::null())
        .output()
        .expect("run DuckDB's python");
    assert!(
        out.status.success(),
        "{name}: DuckDB failed on\n{sql}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("query.py's JSON");
    let types = json["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    let rows = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap_or("NULL").to_owned())
                .collect()
        })
        .collect();
    ResultSet { types, rows }
}

/// Runs `weir sql script` with two workers (not pinned: tests share the
/// cores) and `args`.
pub fn weir_sql(script: &Path, args: &[&str]) -> Output {
    Command::new(WEIR)
        .arg("sql")
        .arg(script)
        .args(["--workers", "2", "--set", "weir.worker.pin-cores=false"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run weir sql")
}

/// Rows as compared: DOUBLE columns (by DuckDB's type) rounded to nine
/// significant digits, FLOAT (4-byte) columns read as `f32` and written
/// to seven, all else text as is; sorted.
pub fn normalized(types: &[String], rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| {
            row.into_iter()
                .zip(types)
                .map(|(v, t)| match v.parse::<f64>() {
                    Ok(d) if t == "DOUBLE" => format!("{d:.8e}"),
                    Ok(d) if t == "FLOAT" => format!("{:.6e}", d as f32),
                    _ => v,
                })
                .collect()
        })
        .collect();
    rows.sort();
    rows
}

/// The rows of sorted `a` that sorted `b` lacks, repeats counted (a row
/// twice in `a` and once in `b` is once in the answer).
fn sorted_minus<'r>(a: &'r [Vec<String>], b: &[Vec<String>]) -> Vec<&'r Vec<String>> {
    let mut rest = b.iter().peekable();
    let mut only = Vec::new();
    for row in a {
        while rest.next_if(|r| *r < row).is_some() {}
        if rest.next_if(|r| *r == row).is_none() {
            only.push(row);
        }
    }
    only
}

/// Equal result sets (as multisets of rows), or a panic naming the first
/// rows only one side has.
pub fn same_rows(name: &str, weir: Vec<Vec<String>>, duck: ResultSet, queries: &str) {
    if let (Some(w), Some(d)) = (weir.first(), duck.rows.first()) {
        assert_eq!(
            w.len(),
            d.len(),
            "{name}: weir has {} columns, DuckDB {}",
            w.len(),
            d.len()
        );
    }
    let weir = normalized(&duck.types, weir);
    let duck_rows = normalized(&duck.types, duck.rows);
    if weir == duck_rows {
        eprintln!("{name}: {} rows equal", weir.len());
        return;
    }
    let missing = sorted_minus(&duck_rows, &weir);
    let extra = sorted_minus(&weir, &duck_rows);
    panic!(
        "{name}: weir gave {} rows, DuckDB {} ({:?});\n  only DuckDB's ({}, first 5): {:?}\n  \
         only weir's ({}, first 5): {:?}\n{queries}",
        weir.len(),
        duck_rows.len(),
        duck.types,
        missing.len(),
        &missing[..missing.len().min(5)],
        extra.len(),
        &extra[..extra.len().min(5)],
    );
}
