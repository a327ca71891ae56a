//! `weir checkpoints list|verify|describe DIR`: what checkpoints and
//! savepoints hold, and whether they would restore, without running a job.
//!
//! DIR is a checkpoint directory (`state.checkpoints.dir`: its `chk-<id>`
//! and `abandoned/chk-<id>`), a savepoints directory (its
//! `savepoint-<job>-<id>`), or one snapshot (its directory or `_metadata`).
//! Every snapshot shown is verified as a restore verifies it (manifest,
//! segments, every block's checksum). `list` shows one line per snapshot,
//! `describe` one snapshot's operators and state sizes per key-group
//! range, `verify` only the verification; `--json` prints the same as one
//! JSON value. Exit 2 for a missing or foreign DIR, and for `verify` (or
//! `describe`) of a corrupt or incomplete snapshot, naming the file and the
//! reason.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{json, Value};
use weir_runtime::checkpoint::inspect::{self, SnapshotDescription};
use weir_runtime::checkpoint::stats::human_bytes;

/// What `weir checkpoints` does.
#[derive(Subcommand)]
pub enum Action {
    /// Every checkpoint and savepoint in DIR, newest first, verified.
    List {
        /// A checkpoint or savepoints directory, or one snapshot.
        dir: PathBuf,
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Checks every block's checksum of every snapshot in DIR, as a restore
    /// does; exit 2 naming the file if one is corrupt.
    Verify {
        /// A checkpoint or savepoints directory, or one snapshot.
        dir: PathBuf,
        /// JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// One snapshot in full: its job, operators and state per key-group
    /// range, and its verification.
    Describe {
        /// One snapshot's directory (or its `_metadata`).
        dir: PathBuf,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// One snapshot as shown: its description and verification.
struct Shown {
    desc: SnapshotDescription,
    /// `Ok` if it verified; the reason otherwise (incomplete, corrupt).
    verified: Result<(), String>,
    /// It has a `_metadata` that does not read (truncated, empty, not a
    /// manifest): corrupt, not incomplete.
    unreadable: bool,
}

impl Shown {
    fn of(dir: &Path) -> Result<Self, String> {
        let desc = inspect::describe(dir).map_err(|e| e.to_string())?;
        let verified = if desc.manifest.is_none() {
            Err("incomplete: no _metadata (never completed, or being written)".into())
        } else {
            inspect::verify(&desc.dir).map_err(|e| e.to_string())
        };
        Ok(Self {
            desc,
            verified,
            unreadable: false,
        })
    }

    /// Whether it has a `_metadata` (read or not): a snapshot that
    /// completed, and a restore tries (and refuses if it does not read).
    fn has_manifest(&self) -> bool {
        self.desc.manifest.is_some() || self.unreadable
    }

    /// Like [`Shown::of`], a manifest that does not read counting as a
    /// failed verification (so that a listing shows it).
    fn listed(dir: &Path) -> Self {
        Self::of(dir).unwrap_or_else(|why| Self {
            desc: SnapshotDescription {
                dir: dir.to_path_buf(),
                manifest: None,
            },
            verified: Err(why),
            unreadable: dir_of(dir).join("_metadata").exists(),
        })
    }

    fn status(&self) -> &str {
        match &self.verified {
            Ok(()) => "verified",
            Err(_) if !self.has_manifest() => "incomplete",
            Err(_) => "CORRUPT",
        }
    }

    fn to_json(&self) -> Value {
        let d = &self.desc;
        let mut v = json!({
            "path": d.dir.display().to_string(),
            "id": d.id(),
            "kind": d.kind().as_str(),
            "complete": self.has_manifest(),
            "abandoned": d.abandoned(),
            "state_bytes": d.state_bytes(),
            "verified": self.verified.is_ok(),
            "incremental": {"full": true, "references": []},
        });
        if let Err(why) = &self.verified {
            v["error"] = json!(why);
        }
        let Some(m) = &d.manifest else {
            return v;
        };
        // An incremental checkpoint names the earlier checkpoints whose
        // segments hold part of its state.
        let (blocks, bytes) = referenced_share(m);
        v["incremental"] = json!({
            "full": blocks == 0,
            "references": m.referenced_checkpoints(),
            "referenced_blocks": blocks,
            "referenced_bytes": bytes,
        });
        v["timestamp_ms"] = json!(m.timestamp_ms);
        v["time"] = json!(utc(m.timestamp_ms));
        v["job_name"] = json!(m.job_name);
        v["job_id"] = json!(m.lineage.as_ref().map(|l| l.job_id.clone()));
        v["parent"] = json!(m.lineage.as_ref().and_then(|l| l.parent));
        v["parallelism"] = json!(d.parallelism());
        v["max_parallelism"] = json!(m.max_parallelism);
        v["operators"] = m
            .operators
            .iter()
            .map(|o| {
                json!({
                    "uid": o.uid,
                    "parallelism": o.parallelism,
                    "subtasks": o.subtasks.iter().map(|s| {
                        let mut states = serde_json::Map::new();
                        for e in &s.extents {
                            let name = if e.state.is_empty() { "(unnamed)" } else { &e.state };
                            let n = states.get(name).and_then(Value::as_u64).unwrap_or(0);
                            states.insert(name.to_owned(), json!(n + e.length));
                        }
                        json!({
                            "index": s.index,
                            "key_groups": [s.key_groups.start(), s.key_groups.end()],
                            "bytes": s.extents.iter().map(|e| e.length).sum::<u64>(),
                            "blocks": s.extents.len(),
                            "states": states,
                            "inline": s.inline_state.iter()
                                .map(|i| (i.name.clone(), json!(i.bytes.len())))
                                .collect::<serde_json::Map<_, _>>(),
                        })
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        v
    }
}

/// Runs `weir checkpoints ...`.
pub fn run(action: &Action) -> ExitCode {
    match action {
        Action::List { dir, json } => list(dir, *json),
        Action::Verify { dir, json } => verify(dir, *json),
        Action::Describe { dir, json } => describe(dir, *json),
    }
}

fn found(dir: &Path) -> Result<Vec<PathBuf>, ExitCode> {
    inspect::find(dir).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

fn list(dir: &Path, as_json: bool) -> ExitCode {
    let dirs = match found(dir) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let shown: Vec<Shown> = dirs.iter().map(|d| Shown::listed(d)).collect();
    if as_json {
        println!(
            "{}",
            Value::Array(shown.iter().map(Shown::to_json).collect())
        );
        return ExitCode::SUCCESS;
    }
    if shown.is_empty() {
        println!("no checkpoints or savepoints in {}", dir.display());
        return ExitCode::SUCCESS;
    }
    let mut rows = vec![[
        "ID",
        "KIND",
        "STATUS",
        "TIME (UTC)",
        "JOB",
        "JOB ID",
        "P",
        "MAX P",
        "STATE",
        "PATH",
    ]
    .map(String::from)];
    for s in &shown {
        let d = &s.desc;
        let m = d.manifest.as_ref();
        let kind = if d.abandoned() {
            format!("{} (abandoned)", d.kind())
        } else {
            d.kind().to_string()
        };
        rows.push([
            d.id().map_or("?".into(), |i| i.to_string()),
            kind,
            s.status().to_owned(),
            m.map_or("-".into(), |m| utc(m.timestamp_ms)),
            m.map_or("-".into(), |m| m.job_name.clone()),
            m.and_then(|m| m.lineage.as_ref())
                .map_or("-".into(), |l| l.job_id.chars().take(8).collect()),
            m.map_or("-".into(), |_| d.parallelism().to_string()),
            m.map_or("-".into(), |m| m.max_parallelism.to_string()),
            m.map_or("-".into(), |_| human_bytes(d.state_bytes())),
            d.dir.display().to_string(),
        ]);
    }
    print!("{}", table(&rows));
    for s in &shown {
        if let (Err(why), true) = (&s.verified, s.has_manifest()) {
            println!("{}: {why}", s.desc.dir.display());
        }
    }
    ExitCode::SUCCESS
}

fn verify(dir: &Path, as_json: bool) -> ExitCode {
    let dirs = match found(dir) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let single = dirs.len() == 1 && dirs[0] == dir_of(dir);
    let shown: Vec<Shown> = dirs.iter().map(|d| Shown::listed(d)).collect();
    // In a directory, incomplete checkpoints are left-overs restore ignores;
    // named alone, an incomplete one cannot be restored.
    let failed = shown
        .iter()
        .filter(|s| s.verified.is_err() && (single || s.has_manifest()))
        .count();
    if as_json {
        let v: Vec<Value> = shown
            .iter()
            .map(|s| {
                json!({
                    "path": s.desc.dir.display().to_string(),
                    "id": s.desc.id(),
                    "kind": s.desc.kind().as_str(),
                    "status": s.status(),
                    "error": s.verified.as_ref().err(),
                })
            })
            .collect();
        println!("{}", Value::Array(v));
    } else {
        for s in &shown {
            match &s.verified {
                Ok(()) => println!(
                    "{} {}: verified ({} of state, every block's checksum correct)",
                    s.desc.kind(),
                    s.desc.dir.display(),
                    human_bytes(s.desc.state_bytes())
                ),
                Err(why) if !s.has_manifest() && !single => {
                    println!("{} {}: {why}", s.desc.kind(), s.desc.dir.display())
                }
                Err(why) => eprintln!("error: {} {}: {why}", s.desc.kind(), s.desc.dir.display()),
            }
        }
        if shown.is_empty() {
            println!("no checkpoints or savepoints in {}", dir.display());
        }
    }
    if failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

fn describe(dir: &Path, as_json: bool) -> ExitCode {
    let dirs = match found(dir) {
        Ok(d) => d,
        Err(code) => return code,
    };
    if !(dirs.len() == 1 && dirs[0] == dir_of(dir)) {
        eprintln!(
            "error: {} holds {} snapshots: describe takes one (`weir checkpoints list {}` shows \
             them)",
            dir.display(),
            dirs.len(),
            dir.display()
        );
        return ExitCode::from(2);
    }
    let shown = match Shown::of(&dirs[0]) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::from(2);
        }
    };
    if as_json {
        println!("{}", shown.to_json());
    } else {
        print!("{}", text(&shown));
    }
    match &shown.verified {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("error: {}: {why}", shown.desc.dir.display());
            ExitCode::from(2)
        }
    }
}

/// `dir`, or its parent for a `_metadata` file (as the library takes it).
fn dir_of(dir: &Path) -> PathBuf {
    if dir.is_file() && dir.file_name().is_some_and(|n| n == "_metadata") {
        dir.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// `describe`'s text.
fn text(s: &Shown) -> String {
    let d = &s.desc;
    let mut out = String::new();
    let id = d.id().map_or("?".into(), |i| i.to_string());
    let _ = writeln!(out, "{} {id}: {}", d.kind(), d.dir.display());
    let Some(m) = &d.manifest else {
        let _ = writeln!(out, "status: incomplete (no _metadata)");
        return out;
    };
    let _ = writeln!(out, "time: {} (UTC)", utc(m.timestamp_ms));
    let _ = writeln!(out, "job: {}", m.job_name);
    if let Some(l) = &m.lineage {
        let _ = writeln!(out, "job id: {}", l.job_id);
        let _ = writeln!(
            out,
            "parent: {}",
            l.parent
                .map_or("none (a fresh start)".into(), |p| p.to_string())
        );
    }
    let _ = writeln!(
        out,
        "parallelism: {}, max parallelism: {} (key groups)",
        d.parallelism(),
        m.max_parallelism
    );
    let _ = writeln!(out, "state: {}", human_bytes(d.state_bytes()));
    let refs = m.referenced_checkpoints();
    if refs.is_empty() {
        let _ = writeln!(out, "incremental chain: none (a full snapshot)");
    } else {
        let (blocks, bytes) = referenced_share(m);
        let ids: Vec<String> = refs.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "incremental chain: refers to checkpoints {} ({blocks} blocks, {} of its state, \
             are in their segments; they are kept while this one is)",
            ids.join(", "),
            human_bytes(bytes)
        );
    }
    let _ = writeln!(out, "operators:");
    for o in &m.operators {
        let _ = writeln!(out, "  {} (parallelism {})", o.uid, o.parallelism);
        for st in &o.subtasks {
            let bytes: u64 = st.extents.iter().map(|e| e.length).sum();
            let mut states: Vec<(String, u64)> = Vec::new();
            for e in &st.extents {
                let name = if e.state.is_empty() {
                    "(unnamed)".to_owned()
                } else {
                    e.state.clone()
                };
                match states.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, b)) => *b += e.length,
                    None => states.push((name, e.length)),
                }
            }
            let mut line = format!(
                "    subtask {} key groups {}: {} in {} blocks",
                st.index,
                st.key_groups,
                human_bytes(bytes),
                st.extents.len()
            );
            if !states.is_empty() {
                let parts: Vec<String> = states
                    .iter()
                    .map(|(n, b)| format!("{n} {}", human_bytes(*b)))
                    .collect();
                let _ = write!(line, " ({})", parts.join(", "));
            }
            if !st.inline_state.is_empty() {
                let parts: Vec<String> = st
                    .inline_state
                    .iter()
                    .map(|i| format!("{} {} B", i.name, i.bytes.len()))
                    .collect();
                let _ = write!(line, "; inline: {}", parts.join(", "));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = match &s.verified {
        Ok(()) => writeln!(out, "verification: every block's checksum correct"),
        Err(why) => writeln!(out, "verification: FAILED: {why}"),
    };
    out
}

/// Left-aligned columns, two spaces apart.
fn table(rows: &[[String; 10]]) -> String {
    let mut widths = [0usize; 10];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// Epoch milliseconds as `YYYY-MM-DD HH:MM:SS.mmm` (UTC).
fn utc(ms: u64) -> String {
    let (days, rem) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// The blocks and bytes of `m`'s state in segments of earlier checkpoints
/// (an incremental checkpoint's chain).
fn referenced_share(m: &inspect::Manifest) -> (u64, u64) {
    m.referenced_extents()
        .fold((0, 0), |(n, b), e| (n + 1, b + e.length))
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_times_read_as_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00.000");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14 22:13:20.123");
    }
}
