//! The names of a file sink's files, and which of them a sink subtask owns.
//!
//! Several sinks may write one directory (a SQL script with two INSERTs
//! into one filesystem table), so a sink bound to its operator's uid puts a
//! *writer* name made from the uid into every name, as Flink's FileSink
//! puts a writer's id in `part-<uuid>-<subtask>-<counter>`. A sink used
//! without a uid (built by hand) writes the names of older weir, without
//! one. Names are read from the right, so a writer name may hold dashes
//! and is never mistaken for a subtask index:
//!
//! | kind | with a writer | without (older weir) |
//! |------|---------------|----------------------|
//! | in progress | `.inprogress-{w}-{s:04}-{pid:x}.{ns:x}.{n}` | `.inprogress-{s:04}-{pid:x}-{ns:x}-{n}` |
//! | pending | `.pending-{w}-{s:04}-{id:010}` | `.pending-{s:04}-{id:010}` |
//! | committed | `part-{w}-{s:04}-{id:010}` | `part-{s:04}-{id:010}` |

use std::path::{Path, PathBuf};

/// The kinds of file names a sink writes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Kind {
    InProgress,
    Pending(u64),
    Part(u64),
}

/// Longest writer name kept verbatim; longer uids are cut and hashed.
const WRITER_MAX: usize = 96;

/// The writer name of the sink of operator `uid`: the uid itself when it
/// is made of ASCII letters, digits, `_`, `.` and `-` (and not too long);
/// otherwise its safe characters (others as `_`, cut at 96) and a hash of
/// the whole uid, so two uids never share a name.
pub(super) fn writer_name(uid: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if !uid.is_empty() && uid.len() <= WRITER_MAX && uid.chars().all(safe) {
        return uid.to_owned();
    }
    let mut name: String = uid
        .chars()
        .map(|c| if safe(c) { c } else { '_' })
        .take(WRITER_MAX)
        .collect();
    // FNV-1a: stable across runs and builds, as restored names must be.
    let hash = uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    name.push_str(&format!("-{hash:016x}"));
    name
}

/// `dir/{prefix}{writer}-{subtask:04}-{id:010}` (no writer: older weir's
/// name).
pub(super) fn transaction_path(
    dir: &Path,
    prefix: &str,
    writer: Option<&str>,
    subtask: usize,
    id: u64,
) -> PathBuf {
    dir.join(match writer {
        Some(w) => format!("{prefix}{w}-{subtask:04}-{id:010}"),
        None => format!("{prefix}{subtask:04}-{id:010}"),
    })
}

/// The in-progress file of one sink instance (`attempt`: process id, clock
/// and counter, unique to the instance).
pub(super) fn in_progress_path(
    dir: &Path,
    writer: Option<&str>,
    subtask: usize,
    (pid, nanos, instance): (u32, u128, u64),
) -> PathBuf {
    dir.join(match writer {
        Some(w) => format!(".inprogress-{w}-{subtask:04}-{pid:x}.{nanos:x}.{instance}"),
        None => format!(".inprogress-{subtask:04}-{pid:x}-{nanos:x}-{instance}"),
    })
}

/// Recognizes the file names a subtask cleans up: its writer's (or, with
/// `legacy`, also older weir's names without a writer) of every subtask
/// index `i` with `i % parallelism == subtask`.
pub(super) struct Names<'a> {
    pub(super) writer: Option<&'a str>,
    /// Whether names without a writer are this sink's too: they are when
    /// it has no writer, or restores a state older weir wrote.
    pub(super) legacy: bool,
    pub(super) subtask: usize,
    pub(super) parallelism: usize,
}

impl Names<'_> {
    /// The kind of `name` if this subtask's writer wrote it under one of
    /// this subtask's indices.
    pub(super) fn classify(&self, name: &str) -> Option<Kind> {
        let (kind, writer, index) = parse(name)?;
        let ours = match writer {
            Some(w) => self.writer == Some(w),
            None => self.writer.is_none() || self.legacy,
        };
        (ours && index % self.parallelism == self.subtask).then_some(kind)
    }
}

/// A name this sink writes: its kind, writer and subtask index.
fn parse(name: &str) -> Option<(Kind, Option<&str>, usize)> {
    if let Some(rest) = name.strip_prefix(".inprogress-") {
        let (head, attempt) = rest.rsplit_once('-')?;
        if attempt.contains('.') {
            let (writer, index) = split_writer(head)?;
            return Some((Kind::InProgress, Some(writer), index));
        }
        // Older weir: `{s}-{pid}-{ns}-{n}`.
        let (index, _) = rest.split_once('-')?;
        return Some((Kind::InProgress, None, parse_index(index)?));
    }
    let (pending, rest) = match name.strip_prefix(".pending-") {
        Some(rest) => (true, rest),
        None => (false, name.strip_prefix("part-")?),
    };
    let (head, id) = rest.rsplit_once('-')?;
    let id = parse_id(id)?;
    let kind = if pending {
        Kind::Pending(id)
    } else {
        Kind::Part(id)
    };
    if head.contains('-') {
        let (writer, index) = split_writer(head)?;
        Some((kind, Some(writer), index))
    } else {
        Some((kind, None, parse_index(head)?))
    }
}

/// `{writer}-{index}`, the writer not empty.
fn split_writer(head: &str) -> Option<(&str, usize)> {
    let (writer, index) = head.rsplit_once('-')?;
    (!writer.is_empty()).then_some(())?;
    Some((writer, parse_index(index)?))
}

fn parse_index(s: &str) -> Option<usize> {
    parse_id(s)?.try_into().ok()
}

/// A number written with ASCII digits only.
fn parse_id(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}
