//! Inspecting checkpoints and savepoints without a job (`weir checkpoints
//! list|verify|describe`): what a snapshot holds, read from its manifest
//! alone ([`describe`]), whether every block passes the checks a restore
//! makes ([`verify`]), and which snapshots a directory holds ([`find`]):
//! a checkpoint directory (`chk-<id>`, and `abandoned/chk-<id>`), a
//! savepoints directory (`savepoint-<job>-<id>`), or one snapshot.

use std::path::{Path, PathBuf};

pub use weir_state::snapshot::{Manifest, SnapshotKind};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoredCheckpoint;
use crate::checkpoint::storage::{ABANDONED_DIR, METADATA_FILE, SAVEPOINT_PREFIX};

/// What one snapshot holds, from its manifest.
#[derive(Clone, Debug)]
pub struct SnapshotDescription {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest, read and validated (`None`: incomplete, no manifest).
    pub manifest: Option<Manifest>,
}

impl SnapshotDescription {
    /// The snapshot's id, from the manifest or else the directory's name.
    pub fn id(&self) -> Option<u64> {
        self.manifest
            .as_ref()
            .map(|m| m.checkpoint_id)
            .or_else(|| id_of_name(self.dir.file_name()?.to_str()?))
    }

    /// A checkpoint or a savepoint (from the manifest, else the name).
    pub fn kind(&self) -> SnapshotKind {
        match &self.manifest {
            Some(m) => m.kind,
            None if self
                .dir
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(SAVEPOINT_PREFIX)) =>
            {
                SnapshotKind::Savepoint
            }
            None => SnapshotKind::Checkpoint,
        }
    }

    /// The parallelism of the job that wrote it: the largest operator
    /// parallelism.
    pub fn parallelism(&self) -> u32 {
        self.manifest
            .iter()
            .flat_map(|m| &m.operators)
            .map(|o| o.parallelism)
            .max()
            .unwrap_or(0)
    }

    /// Bytes of its blocks (headers, payloads and padding).
    pub fn state_bytes(&self) -> u64 {
        self.manifest
            .iter()
            .flat_map(|m| &m.operators)
            .flat_map(|o| &o.subtasks)
            .flat_map(|s| &s.extents)
            .map(|e| e.length)
            .sum()
    }

    /// Whether it sits under `abandoned/` of a checkpoint directory.
    pub fn abandoned(&self) -> bool {
        self.dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == ABANDONED_DIR)
    }
}

/// The id in a `chk-<id>[.n]` or `savepoint-<job>-<id>` name.
fn id_of_name(name: &str) -> Option<u64> {
    if let Some(rest) = name.strip_prefix("chk-") {
        return rest.split('.').next()?.parse().ok();
    }
    name.strip_prefix(SAVEPOINT_PREFIX)?
        .rsplit('-')
        .next()?
        .parse()
        .ok()
}

fn is_snapshot_name(name: &str) -> bool {
    id_of_name(name).is_some()
}

/// Reads the snapshot in `dir` (a snapshot's directory or its
/// `_metadata`): its manifest, or `None` if it has none (incomplete). A
/// manifest that does not read or validate is an error naming it.
pub fn describe(dir: &Path) -> Result<SnapshotDescription, RestoreError> {
    let dir = snapshot_dir(dir);
    let meta = dir.join(METADATA_FILE);
    if !dir.is_dir() {
        return Err(RestoreError::NotACheckpoint {
            path: dir,
            what: "no such directory".into(),
        });
    }
    let manifest = if meta.is_file() {
        Some(Manifest::read(&meta)?)
    } else {
        None
    };
    Ok(SnapshotDescription { dir, manifest })
}

/// Checks the snapshot in `dir` as a restore does before it changes
/// anything: the manifest, its id, every segment it names, and every
/// block's header, padding and checksums. The error names the file.
pub fn verify(dir: &Path) -> Result<(), RestoreError> {
    RestoredCheckpoint::open_any(&snapshot_dir(dir))?.verify()
}

/// `dir` itself, or its parent if `dir` is a `_metadata` file.
fn snapshot_dir(dir: &Path) -> PathBuf {
    if dir.is_file() && dir.file_name().is_some_and(|n| n == METADATA_FILE) {
        dir.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// The snapshots `dir` holds, newest id first: `dir` itself if it is one
/// (it has a `_metadata`, or a snapshot's name); else every `chk-<id>` and
/// `savepoint-<job>-<id>` directory in it and in its `abandoned/`. A
/// directory that is none of these, or does not exist, is an error.
pub fn find(dir: &Path) -> Result<Vec<PathBuf>, RestoreError> {
    let dir = snapshot_dir(dir);
    let not_one = |what: &str| RestoreError::NotACheckpoint {
        path: dir.clone(),
        what: what.to_owned(),
    };
    if !dir.exists() {
        return Err(not_one("no such file or directory"));
    }
    if !dir.is_dir() {
        return Err(not_one(
            "is a file: name a checkpoint or savepoints directory, a snapshot or its _metadata",
        ));
    }
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_snapshot_name);
    if dir.join(METADATA_FILE).is_file() || named {
        return Ok(vec![dir]);
    }
    let mut found: Vec<(u64, PathBuf)> = Vec::new();
    for root in [dir.clone(), dir.join(ABANDONED_DIR)] {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let id = e.file_name().to_str().and_then(id_of_name);
            if let (Some(id), true) = (id, path.is_dir()) {
                found.push((id, path));
            }
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_checkpoint_and_savepoint_names() {
        assert_eq!(id_of_name("chk-12"), Some(12));
        assert_eq!(id_of_name("chk-4.1"), Some(4));
        assert_eq!(id_of_name("savepoint-a1b2c3-7"), Some(7));
        assert_eq!(id_of_name("savepoint-x"), None);
        assert_eq!(id_of_name("checkpoint-history.json"), None);
    }

    /// Probe 13: `weir checkpoints list FILE` said "--restore FILE: ...",
    /// naming an option the inspector was not given.
    #[test]
    fn a_path_that_is_no_snapshot_is_named_without_restore() {
        let root = std::env::temp_dir().join(format!("weir-inspect-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let file = root.join("afile");
        std::fs::write(&file, b"x").unwrap();
        for path in [file.clone(), root.join("missing")] {
            let e = find(&path).unwrap_err().to_string();
            assert!(!e.contains("--restore"), "{e}");
            assert!(e.starts_with(&path.display().to_string()), "{e}");
        }
        let e = describe(&root.join("missing")).unwrap_err().to_string();
        assert!(!e.contains("--restore"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
