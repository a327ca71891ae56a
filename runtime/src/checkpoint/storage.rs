//! The checkpoint directory (`state.checkpoints.dir`): one `chk-<id>`
//! directory per checkpoint, holding each worker's segment file
//! (`w<worker>.seg`) and, once the checkpoint is complete, its manifest
//! `_metadata` (written atomically: temp file, fsync, rename, fsync of the
//! directory). A `chk-<id>` without `_metadata` is incomplete. The file
//! `checkpoint-history.json` keeps the statistics of recent checkpoints.
//!
//! Every checkpoint is a full snapshot whose segments live in its own
//! directory, so deleting a checkpoint (retention, failure, incomplete at
//! start) deletes exactly the segments nobody else references.

use std::path::{Path, PathBuf};
use std::{fs, io};

use crate::checkpoint::error::{CheckpointError, Result};

/// Name of a checkpoint's manifest inside its directory (as in Flink).
pub const METADATA_FILE: &str = "_metadata";
/// Name of the statistics history file.
pub const HISTORY_FILE: &str = "checkpoint-history.json";

/// The layout of a checkpoint directory.
#[derive(Clone, Debug)]
pub struct CheckpointStorage {
    root: PathBuf,
}

/// A `chk-<id>` directory found in the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// The checkpoint id.
    pub id: u64,
    /// Its directory.
    pub dir: PathBuf,
    /// True if its manifest exists (the checkpoint completed).
    pub complete: bool,
}

impl CheckpointStorage {
    /// The layout under `root` (created if missing).
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root)
            .map_err(|e| CheckpointError::io("create checkpoint directory", &root, e))?;
        Ok(Self { root })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Directory of checkpoint `id`.
    pub fn checkpoint_dir(&self, id: u64) -> PathBuf {
        self.root.join(format!("chk-{id}"))
    }

    /// Segment file name of `worker` (relative to the checkpoint's directory).
    pub fn segment_name(worker: usize) -> String {
        format!("w{worker:03}.seg")
    }

    /// The statistics history file.
    pub fn history_path(&self) -> PathBuf {
        self.root.join(HISTORY_FILE)
    }

    /// Every `chk-<id>` directory, newest first.
    pub fn list(&self) -> Result<Vec<StoredCheckpoint>> {
        let op = "list checkpoint directory";
        let mut found = Vec::new();
        let entries =
            fs::read_dir(&self.root).map_err(|e| CheckpointError::io(op, &self.root, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| CheckpointError::io(op, &self.root, e))?;
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_prefix("chk-"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            let dir = entry.path();
            let file_type = entry
                .file_type()
                .map_err(|e| CheckpointError::io("inspect", &dir, e))?;
            if !file_type.is_dir() {
                continue;
            }
            let complete = dir.join(METADATA_FILE).is_file();
            found.push(StoredCheckpoint { id, dir, complete });
        }
        found.sort_by_key(|c| std::cmp::Reverse(c.id));
        Ok(found)
    }

    /// The largest id of any checkpoint directory (complete or not), 0 if
    /// none: new checkpoints are numbered above it.
    pub fn max_id(&self) -> Result<u64> {
        Ok(self.list()?.first().map_or(0, |c| c.id))
    }

    /// Deletes every incomplete checkpoint directory; returns their ids.
    pub fn clean_incomplete(&self) -> Result<Vec<u64>> {
        let mut removed = Vec::new();
        for c in self.list()? {
            if !c.complete {
                self.delete(c.id)?;
                removed.push(c.id);
            }
        }
        Ok(removed)
    }

    /// Deletes checkpoint `id`'s directory (manifest first, so a crash in
    /// between leaves an incomplete checkpoint, never a manifest naming
    /// deleted segments).
    pub fn delete(&self, id: u64) -> Result<()> {
        let dir = self.checkpoint_dir(id);
        let manifest = dir.join(METADATA_FILE);
        match fs::remove_file(&manifest) {
            Ok(()) => sync_dir(&dir).map_err(|e| CheckpointError::io("fsync", &dir, e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::io("delete", manifest, e)),
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(CheckpointError::io("delete", dir, e)),
        }
    }

    /// Keeps the newest `retained` complete checkpoints and deletes the
    /// older complete ones; returns the deleted ids.
    pub fn retain(&self, retained: usize) -> Result<Vec<u64>> {
        let mut removed = Vec::new();
        let complete: Vec<u64> = self
            .list()?
            .into_iter()
            .filter(|c| c.complete)
            .map(|c| c.id)
            .collect();
        for &id in complete.iter().skip(retained) {
            self.delete(id)?;
            removed.push(id);
        }
        Ok(removed)
    }
}

/// fsyncs a directory (makes renames and deletions in it durable).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weir-storage-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn lists_cleans_and_retains() {
        let root = temp_root("list");
        let s = CheckpointStorage::open(&root).unwrap();
        for id in [1, 2, 3, 5] {
            fs::create_dir_all(s.checkpoint_dir(id)).unwrap();
            fs::write(s.checkpoint_dir(id).join("w000.seg"), b"x").unwrap();
        }
        for id in [1, 2, 3] {
            fs::write(s.checkpoint_dir(id).join(METADATA_FILE), b"m").unwrap();
        }
        fs::write(root.join("chk-x"), b"not a checkpoint").unwrap();
        let ids: Vec<(u64, bool)> = s
            .list()
            .unwrap()
            .iter()
            .map(|c| (c.id, c.complete))
            .collect();
        assert_eq!(ids, vec![(5, false), (3, true), (2, true), (1, true)]);
        assert_eq!(s.max_id().unwrap(), 5);
        assert_eq!(s.clean_incomplete().unwrap(), vec![5]);
        assert_eq!(s.retain(2).unwrap(), vec![1]);
        let ids: Vec<u64> = s.list().unwrap().iter().map(|c| c.id).collect();
        assert_eq!(ids, vec![3, 2]);
        fs::remove_dir_all(&root).unwrap();
    }
}
