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
//!
//! The directory holds one **timeline**: the checkpoints of the latest run
//! and those it started from. `_timeline` ([`Timeline`]) names the latest
//! run, the checkpoint it started from and every checkpoint a run
//! abandoned: a run that starts from checkpoint `x` abandons every newer
//! one, a fresh start all of them. Abandoned checkpoints are recorded
//! first, then moved to `abandoned/` ([`CheckpointStorage::start_timeline`]):
//! never deleted by weir, never listed, never restored by `latest`. New
//! checkpoint ids are above every id the directory ever held
//! ([`CheckpointStorage::max_id`]): `_timeline` also records an id at or
//! above every id a run triggered ([`Timeline::last_id`], written before the
//! snapshot's directory is created, a minute's worth of ids ahead), so an
//! id stays used after its `chk-<id>` is gone
//! (an incomplete one deleted by hand, a failed one deleted by weir, a
//! savepoint's, whose directory is elsewhere).
//!
//! A **savepoint** (a stop's, or one triggered while the job runs) goes
//! elsewhere: `state.savepoints.dir` or the directory its trigger named,
//! one `savepoint-<first 6 digits of the job id>-<id>` directory each, laid out
//! as a checkpoint (segments and `_metadata`, which names them relative to
//! its directory), so it can be moved or copied. Nothing here lists,
//! retains, abandons or deletes savepoints, except the directory of a
//! savepoint that failed while being taken.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::{fs, io};

use serde::{Deserialize, Serialize};
use weir_state::snapshot::{write_atomically, Manifest};

use crate::checkpoint::error::{CheckpointError, Result, MAX_CHECKPOINT_ID};

/// Name of a checkpoint's manifest inside its directory (as in Flink).
pub const METADATA_FILE: &str = "_metadata";
/// Name of the statistics history file.
pub const HISTORY_FILE: &str = "checkpoint-history.json";
/// Name of the timeline file in the root.
pub const TIMELINE_FILE: &str = "_timeline";
/// Name of the directory abandoned checkpoints are moved to.
pub const ABANDONED_DIR: &str = "abandoned";
/// Prefix of a savepoint's directory name.
pub const SAVEPOINT_PREFIX: &str = "savepoint-";
/// What a checkpoint retention let go of is renamed to (before `chk-<id>`)
/// until it is deleted ([`CheckpointStorage::retire_for_retention`]).
pub const RETIRED_PREFIX: &str = ".retired-";

/// The checkpoint directory's timeline: the latest run and what every run
/// abandoned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// The job id of the latest run.
    pub job_id: String,
    /// The checkpoint the latest run started from; `None` for a fresh start.
    pub started_from: Option<u64>,
    /// Every checkpoint a run of this directory abandoned.
    pub abandoned: BTreeSet<u64>,
    /// At or above the largest id a run of this directory triggered,
    /// checkpoint or savepoint: ids are recorded ahead
    /// ([`CheckpointStorage::record_id`]); 0 in a `_timeline` of
    /// older weir, which did not record it (its ids are then known only
    /// from the directories).
    #[serde(default)]
    pub last_id: u64,
    /// The snapshot the latest run started from when it is not one of
    /// this directory's checkpoints (a savepoint, or another directory's
    /// checkpoint), as an absolute path: `--restore latest` resumes from
    /// it while the run has taken no checkpoint of its own yet, as Flink
    /// resumes from the savepoint a job was started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_from_dir: Option<PathBuf>,
}

/// The layout of a checkpoint directory.
#[derive(Clone, Debug)]
pub struct CheckpointStorage {
    root: PathBuf,
    /// `state.savepoints.dir` and the run's job id, if savepoints are on.
    savepoints: Option<(PathBuf, String)>,
    /// The id of the savepoint being taken (0: none): its segments go to
    /// its directory instead of `chk-<id>`.
    savepoint_id: Arc<AtomicU64>,
    /// The directory of the savepoint being taken; written by the
    /// coordinator before it publishes the trigger, read by the writers
    /// only for the id `savepoint_id` names (once per snapshot).
    savepoint_target: Arc<Mutex<Option<PathBuf>>>,
    /// The run's job id (names savepoint directories).
    job_id: String,
    /// Ids up to this one are recorded in `_timeline` by this process
    /// ([`Self::record_id`]); never above what the file holds, so a stale
    /// value costs a write, never an unrecorded id.
    recorded: Arc<AtomicU64>,
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
        if root.exists() && !root.is_dir() {
            return Err(CheckpointError::NotADirectory {
                what: "state.checkpoints.dir",
                path: root,
            });
        }
        fs::create_dir_all(&root)
            .map_err(|e| CheckpointError::io("create checkpoint directory", &root, e))?;
        Ok(Self {
            root,
            savepoints: None,
            savepoint_id: Arc::new(AtomicU64::new(0)),
            savepoint_target: Arc::new(Mutex::new(None)),
            job_id: String::new(),
            recorded: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Savepoints go to `dir` (`state.savepoints.dir`), named after run
    /// `job_id`; with `None`, a stop takes a checkpoint.
    pub fn with_savepoints(mut self, dir: Option<PathBuf>, job_id: &str) -> Self {
        self.savepoints = dir.map(|d| (d, job_id.to_owned()));
        self.job_id = job_id.to_owned();
        self
    }

    /// `state.savepoints.dir`, if set.
    pub fn savepoints_dir(&self) -> Option<&Path> {
        self.savepoints.as_ref().map(|(d, _)| d.as_path())
    }

    /// The directory savepoint `id` is written to:
    /// `<state.savepoints.dir>/savepoint-<job id's first 6 digits>-<id>`.
    pub fn savepoint_dir(&self, id: u64) -> Option<PathBuf> {
        self.savepoints.as_ref().map(|(dir, job)| {
            let short: String = job.chars().take(6).collect();
            dir.join(format!("{SAVEPOINT_PREFIX}{short}-{id}"))
        })
    }

    /// Makes `id` a savepoint if savepoints are on (`None` if not):
    /// creates its directory (a new one: an existing directory of that name
    /// is an error, never written into) and from then on
    /// [`CheckpointStorage::snapshot_dir`] of `id` is it.
    pub fn begin_savepoint(&self, id: u64) -> Result<Option<PathBuf>> {
        match self.savepoints_dir().map(Path::to_path_buf) {
            Some(parent) => self.begin_savepoint_in(id, &parent).map(Some),
            None => Ok(None),
        }
    }

    /// Makes `id` a savepoint into `parent` (`state.savepoints.dir`, or
    /// the directory a trigger named): creates
    /// `<parent>/savepoint-<job id's first 6 digits>-<id>` (a new one) and
    /// from then on [`CheckpointStorage::snapshot_dir`] of `id` is it.
    pub fn begin_savepoint_in(&self, id: u64, parent: &Path) -> Result<PathBuf> {
        let short: String = self.job_id.chars().take(6).collect();
        let dir = parent.join(format!("{SAVEPOINT_PREFIX}{short}-{id}"));
        if parent.exists() && !parent.is_dir() {
            return Err(CheckpointError::NotADirectory {
                what: "the savepoint directory",
                path: parent.to_path_buf(),
            });
        }
        fs::create_dir_all(parent)
            .map_err(|e| CheckpointError::io("create savepoint directory", parent, e))?;
        fs::create_dir(&dir).map_err(|e| CheckpointError::io("create savepoint", &dir, e))?;
        sync_dir(parent).map_err(|e| CheckpointError::io("fsync", parent, e))?;
        *self
            .savepoint_target
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(dir.clone());
        self.savepoint_id.store(id, Ordering::Release);
        Ok(dir)
    }

    /// Where snapshot `id`'s segments and manifest go: its savepoint
    /// directory if it is the savepoint being taken, else `chk-<id>`.
    pub fn snapshot_dir(&self, id: u64) -> PathBuf {
        if id != 0 && self.savepoint_id.load(Ordering::Acquire) == id {
            let target = self
                .savepoint_target
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(dir) = target.as_ref() {
                return dir.clone();
            }
        }
        self.checkpoint_dir(id)
    }

    /// The directory's timeline, if a run recorded one.
    pub fn timeline(&self) -> Result<Option<Timeline>> {
        let path = self.root.join(TIMELINE_FILE);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CheckpointError::io("read", path, e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| CheckpointError::Timeline {
                path,
                what: e.to_string(),
            })
    }

    /// Starts the timeline of run `job_id` from checkpoint `from` (`None`:
    /// a fresh start): every checkpoint of the root newer than `from` (all
    /// of them for a fresh start) is abandoned. The abandoned ids are
    /// recorded in `_timeline` first (durably), then their directories are
    /// moved to `abandoned/`, newest first, so that a crash at any point
    /// leaves `latest` with a checkpoint of the new timeline. Returns the
    /// ids abandoned now.
    pub fn start_timeline(
        &self,
        job_id: &str,
        from: Option<u64>,
        from_elsewhere: Option<&Path>,
    ) -> Result<Vec<u64>> {
        let mut timeline = self.timeline()?.unwrap_or_default();
        let newer: Vec<u64> = self
            .list()?
            .iter()
            .map(|c| c.id)
            .filter(|&id| from.is_none_or(|x| id > x))
            .collect();
        timeline.job_id = job_id.to_owned();
        timeline.started_from = from;
        timeline.started_from_dir = from_elsewhere.map(crate::core::paths::resolved);
        timeline.abandoned.extend(&newer);
        self.write_timeline(&timeline)?;
        for &id in timeline.abandoned.iter().rev() {
            self.move_aside(id)?;
        }
        Ok(newer)
    }

    /// Records in `_timeline` (durably) that snapshot `id` may have been
    /// triggered, before anything of it is written: once its `chk-<id>` is
    /// gone (an incomplete one deleted by hand or after a crash, a failed
    /// one, a savepoint's elsewhere) the id is still below
    /// [`CheckpointStorage::max_id`], so no later run uses it again.
    ///
    /// Ids are recorded `ahead` at a time (at least 1): when `id` is past
    /// what this process recorded, `_timeline` gets `id + ahead - 1`, and
    /// the next `ahead - 1` triggers write nothing. The durable write (two
    /// fsyncs and a rename) is then rare: at each trigger it cost ~0.5 ms
    /// of CPU on the control thread, taken from a worker's core on a
    /// machine with no spare one (bench/RESULTS.md, "W3's tail: ..."). A
    /// later run numbers its checkpoints above the recorded id, so a run
    /// that ends early leaves a gap in the ids, never a reuse.
    pub fn record_id(&self, id: u64, ahead: u64) -> Result<()> {
        if id <= self.recorded.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut timeline = self.timeline()?.unwrap_or_default();
        if timeline.last_id < id {
            timeline.last_id = id
                .saturating_add(ahead.max(1) - 1)
                .min(MAX_CHECKPOINT_ID)
                .max(id);
            self.write_timeline(&timeline)?;
        }
        self.recorded.fetch_max(timeline.last_id, Ordering::AcqRel);
        Ok(())
    }

    fn write_timeline(&self, timeline: &Timeline) -> Result<()> {
        let json = serde_json::to_vec_pretty(timeline).expect("a timeline serializes");
        write_atomically(&self.root, TIMELINE_FILE, &json)?;
        Ok(())
    }

    /// Moves checkpoint `id`'s directory, if it is still in the root, to
    /// `abandoned/` (beside an earlier one of the same name if needed).
    fn move_aside(&self, id: u64) -> Result<()> {
        let dir = self.checkpoint_dir(id);
        if !dir.is_dir() {
            return Ok(());
        }
        let aside = self.root.join(ABANDONED_DIR);
        fs::create_dir_all(&aside)
            .map_err(|e| CheckpointError::io("create directory", &aside, e))?;
        let mut to = aside.join(format!("chk-{id}"));
        let mut n = 1;
        while to.exists() {
            to = aside.join(format!("chk-{id}.{n}"));
            n += 1;
        }
        fs::rename(&dir, &to).map_err(|e| CheckpointError::io("move aside", &dir, e))?;
        sync_dir(&self.root).map_err(|e| CheckpointError::io("fsync", &self.root, e))?;
        sync_dir(&aside).map_err(|e| CheckpointError::io("fsync", &aside, e))
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory under the root that weir deletes or moves (a
    /// checkpoint's `chk-<id>`, once subsumed or incomplete, or one that
    /// does not exist yet and a later checkpoint will make; `abandoned/`)
    /// that `path` is or lies inside, if any (links and `..` resolved).
    pub fn managed_dir_containing(&self, path: &Path) -> Option<PathBuf> {
        let root = crate::core::paths::resolved(&self.root);
        let path = crate::core::paths::resolved(path);
        let first = path.strip_prefix(&root).ok()?.components().next()?;
        let name = first.as_os_str().to_str()?;
        (name.starts_with("chk-") || name == ABANDONED_DIR).then(|| root.join(name))
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

    /// Every `chk-<id>` directory of the current timeline, newest first
    /// (abandoned checkpoints not yet moved aside are left out).
    pub fn list(&self) -> Result<Vec<StoredCheckpoint>> {
        let abandoned = self.timeline()?.map(|t| t.abandoned).unwrap_or_default();
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
            if !file_type.is_dir() || abandoned.contains(&id) {
                continue;
            }
            let complete = dir.join(METADATA_FILE).is_file();
            found.push(StoredCheckpoint { id, dir, complete });
        }
        found.sort_by_key(|c| std::cmp::Reverse(c.id));
        Ok(found)
    }

    /// The largest id the directory ever held, 0 if none: of a checkpoint
    /// directory (complete or not), a stray file named like one, an
    /// abandoned checkpoint, a snapshot a run triggered
    /// ([`Timeline::last_id`]). New checkpoints are numbered above it, so
    /// an id is never used twice.
    pub fn max_id(&self) -> Result<u64> {
        let mut max = self
            .timeline()?
            .map(|t| t.abandoned.last().copied().unwrap_or(0).max(t.last_id))
            .unwrap_or(0);
        for dir in [self.root.clone(), self.root.join(ABANDONED_DIR)] {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(CheckpointError::io("list checkpoint directory", dir, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| CheckpointError::io("list", &dir, e))?;
                let id = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("chk-"))
                    .and_then(|n| n.split('.').next())
                    .and_then(|n| n.parse::<u64>().ok());
                max = max.max(id.unwrap_or(0));
            }
        }
        Ok(max)
    }

    /// The id of the next checkpoint of a run that restored `restored` (0
    /// for none): above every id the directory ever held ([`Self::max_id`])
    /// and above `restored`. An id past [`MAX_CHECKPOINT_ID`] is refused
    /// (no run of weir wrote it) instead of overflowing.
    pub fn next_id(&self, restored: u64) -> Result<u64> {
        let max = self.max_id()?.max(restored);
        if max >= MAX_CHECKPOINT_ID {
            return Err(CheckpointError::IdsExhausted {
                dir: self.root.clone(),
                id: max,
            });
        }
        Ok(max + 1)
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
    /// deleted segments); for the savepoint being taken (failed), its
    /// directory.
    pub fn delete(&self, id: u64) -> Result<()> {
        let dir = self.snapshot_dir(id);
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

    /// Keeps the newest `retained` complete checkpoints and every
    /// checkpoint whose segments a kept one, or an abandoned one (in
    /// `abandoned/`, which a user may still restore), refers to (an
    /// incremental checkpoint's chain, read from the manifests each time:
    /// no reference count is stored that could go out of sync), and
    /// deletes the other complete ones; returns the deleted ids. A
    /// manifest that cannot be read (I/O) keeps every older checkpoint (its
    /// references are unknown); one that does not parse needs nothing. A checkpoint kept only for its segments is
    /// not itself restorable once the checkpoints it referred to are gone
    /// (references are not followed transitively, or nothing would ever be
    /// deleted).
    pub fn retain(&self, retained: usize) -> Result<Vec<u64>> {
        let victims = self.retention_victims(retained)?;
        for &id in &victims {
            self.delete(id)?;
        }
        Ok(victims)
    }

    /// [`retain`](Self::retain) that deletes nothing itself: each
    /// checkpoint it lets go of is renamed out of the directory's listing
    /// (`chk-<id>` to `.retired-chk-<id>`, one rename: from then on it is
    /// neither restorable nor listed) and its new path returned, for a
    /// [`Deleter`](crate::checkpoint::deleter::Deleter) to empty
    /// without taking a worker's core in one burst. A crash before that
    /// leaves the renamed directory, which [`retired`](Self::retired)
    /// finds.
    pub fn retire_for_retention(&self, retained: usize) -> Result<Vec<(u64, PathBuf)>> {
        let mut retired = Vec::new();
        for id in self.retention_victims(retained)? {
            let dir = self.checkpoint_dir(id);
            let to = self.root.join(format!("{RETIRED_PREFIX}chk-{id}"));
            match fs::rename(&dir, &to) {
                Ok(()) => retired.push((id, to)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(CheckpointError::io("retire", dir, e)),
            }
        }
        Ok(retired)
    }

    /// Directories of retired checkpoints still in the root (a crash came
    /// before their deletion).
    pub fn retired(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(RETIRED_PREFIX))
                    && e.file_type().is_ok_and(|t| t.is_dir())
            })
            .map(|e| e.path())
            .collect()
    }

    /// The complete checkpoints retention lets go of: all but the newest
    /// `retained` and those a kept or abandoned one refers to (see
    /// [`retain`](Self::retain)).
    fn retention_victims(&self, retained: usize) -> Result<Vec<u64>> {
        let mut victims = Vec::new();
        let complete: Vec<u64> = self
            .list()?
            .into_iter()
            .filter(|c| c.complete)
            .map(|c| c.id)
            .collect();
        let mut referenced = std::collections::HashSet::new();
        // Below `floor`, a checkpoint is kept whatever refers to it.
        let mut floor = 0;
        for &id in complete.iter().take(retained) {
            match Manifest::read(self.checkpoint_dir(id).join(METADATA_FILE)) {
                Ok(m) => referenced.extend(m.referenced_checkpoints()),
                // Its references are unknown; keep everything older.
                Err(weir_state::snapshot::SnapshotError::Io { .. }) => floor = floor.max(id),
                // A manifest that does not parse cannot be restored: it
                // needs nothing.
                Err(_) => {}
            }
        }
        let aside = self.root.join(ABANDONED_DIR);
        match fs::read_dir(&aside) {
            Ok(entries) => {
                for entry in entries {
                    let entry = entry.map_err(|e| CheckpointError::io("list", &aside, e))?;
                    let Some(id) = entry
                        .file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("chk-"))
                        .and_then(|n| n.split('.').next())
                        .and_then(|n| n.parse::<u64>().ok())
                    else {
                        continue;
                    };
                    let meta = entry.path().join(METADATA_FILE);
                    if !meta.is_file() {
                        continue;
                    }
                    match Manifest::read(&meta) {
                        Ok(m) => referenced.extend(m.referenced_checkpoints()),
                        // It refers to older checkpoints only.
                        Err(weir_state::snapshot::SnapshotError::Io { .. }) => {
                            floor = floor.max(id);
                        }
                        Err(_) => {}
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::io("list", aside, e)),
        }
        for &id in complete.iter().skip(retained) {
            if id < floor || referenced.contains(&id) {
                continue;
            }
            victims.push(id);
        }
        Ok(victims)
    }
}

/// Where segment `segment` of checkpoint `id` is, for an incremental
/// checkpoint in `dir` that refers to it (`../chk-<id>/<segment>`): the
/// sibling `chk-<id>`; for a checkpoint a restore abandoned (moved to
/// `abandoned/`), the sibling if it was abandoned too, else the
/// checkpoint directory's own `chk-<id>` (ids are never reused, so that is
/// the one it wrote against). `None` if `dir` has no parent.
pub fn referenced_path(dir: &Path, id: u64, segment: &str) -> Option<PathBuf> {
    let parent = dir.parent()?;
    let sibling = parent.join(format!("chk-{id}")).join(segment);
    if !sibling.exists() && parent.file_name().is_some_and(|n| n == ABANDONED_DIR) {
        if let Some(root) = parent.parent() {
            let kept = root.join(format!("chk-{id}")).join(segment);
            if kept.exists() {
                return Some(kept);
            }
        }
    }
    Some(sibling)
}

/// fsyncs a directory (makes renames and deletions in it durable).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    mod retention;

    fn temp_root(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weir-storage-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn checkpoint_and_abandoned_directories_are_managed_the_rest_is_not() {
        let root = temp_root("managed");
        fs::create_dir_all(root.join("chk-3")).unwrap();
        let s = CheckpointStorage::open(&root).unwrap();
        for (path, managed) in [
            ("chk-3", Some("chk-3")),
            ("chk-3/sp", Some("chk-3")),
            ("chk-99/sp", Some("chk-99")),
            ("abandoned/x", Some(ABANDONED_DIR)),
            ("elsewhere/../chk-3/sp", Some("chk-3")),
            ("savepoints", None),
            ("", None),
        ] {
            assert_eq!(
                s.managed_dir_containing(&root.join(path)),
                managed.map(|m| crate::core::paths::resolved(&root).join(m)),
                "{path}"
            );
        }
        assert_eq!(s.managed_dir_containing(&temp_root("managed-other")), None);
        fs::remove_dir_all(&root).unwrap();
    }

    /// Probe 13: an abandoned `chk-18446744073709551615` made the next
    /// run panic ("attempt to add with overflow"; in a release build the
    /// ids would have wrapped to 0). Refused, naming the directory and id.
    #[test]
    fn an_id_too_large_to_count_past_is_refused() {
        let root = temp_root("id-too-large");
        let s = CheckpointStorage::open(&root).unwrap();
        assert_eq!(s.next_id(0).unwrap(), 1);
        assert_eq!(s.next_id(7).unwrap(), 8);
        fs::create_dir_all(root.join(ABANDONED_DIR).join(format!("chk-{}", u64::MAX))).unwrap();
        let e = s.next_id(0).unwrap_err();
        assert!(
            matches!(e, CheckpointError::IdsExhausted { id: u64::MAX, .. }),
            "{e:?}"
        );
        assert!(!e.retryable(), "{e}");
        assert!(e.to_string().contains(&root.display().to_string()), "{e}");
        fs::remove_dir_all(root.join(ABANDONED_DIR)).unwrap();
        let last = MAX_CHECKPOINT_ID - 1;
        fs::create_dir_all(root.join(ABANDONED_DIR).join(format!("chk-{last}"))).unwrap();
        assert_eq!(s.next_id(0).unwrap(), MAX_CHECKPOINT_ID);
        fs::remove_dir_all(&root).unwrap();
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

    #[test]
    fn retiring_renames_what_retention_lets_go_of_out_of_every_listing() {
        let root = temp_root("retire");
        let s = CheckpointStorage::open(&root).unwrap();
        complete(&s, &[1, 2, 3]);
        fs::write(s.checkpoint_dir(1).join("w000.seg"), b"x").unwrap();
        let retired = s.retire_for_retention(1).unwrap();
        let expected: Vec<(u64, PathBuf)> = [2, 1]
            .into_iter()
            .map(|id| (id, root.join(format!("{RETIRED_PREFIX}chk-{id}"))))
            .collect();
        assert_eq!(retired, expected);
        let ids: Vec<u64> = s.list().unwrap().iter().map(|c| c.id).collect();
        assert_eq!(ids, vec![3]);
        assert_eq!(s.max_id().unwrap(), 3);
        let mut found = s.retired();
        found.sort();
        let mut dirs: Vec<PathBuf> = expected.into_iter().map(|(_, d)| d).collect();
        dirs.sort();
        assert_eq!(found, dirs);
        let one = root.join(format!("{RETIRED_PREFIX}chk-1"));
        assert!(one.join("w000.seg").is_file(), "kept until deleted");
        for dir in &dirs {
            crate::checkpoint::deleter::remove_sliced(dir).unwrap();
        }
        assert!(s.retired().is_empty());
        fs::remove_dir_all(&root).unwrap();
    }

    /// Makes complete checkpoints `ids` under `s`.
    fn complete(s: &CheckpointStorage, ids: &[u64]) {
        for &id in ids {
            fs::create_dir_all(s.checkpoint_dir(id)).unwrap();
            fs::write(s.checkpoint_dir(id).join(METADATA_FILE), b"m").unwrap();
        }
    }

    fn listed(s: &CheckpointStorage) -> Vec<u64> {
        s.list().unwrap().iter().map(|c| c.id).collect()
    }

    #[test]
    fn a_timeline_started_from_a_checkpoint_abandons_every_newer_one() {
        let root = temp_root("timeline");
        let s = CheckpointStorage::open(&root).unwrap();
        complete(&s, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(s.timeline().unwrap(), None);

        assert_eq!(
            s.start_timeline("run-a", Some(3), None).unwrap(),
            vec![6, 5, 4]
        );
        assert_eq!(listed(&s), vec![3, 2, 1]);
        let t = s.timeline().unwrap().unwrap();
        assert_eq!(t.job_id, "run-a");
        assert_eq!(t.started_from, Some(3));
        assert_eq!(t.abandoned, BTreeSet::from([4, 5, 6]));
        for id in [4, 5, 6] {
            let aside = root.join(ABANDONED_DIR).join(format!("chk-{id}"));
            assert!(aside.join(METADATA_FILE).is_file(), "{id} kept, intact");
        }
        // Ids are never used twice: the next is above the abandoned ones.
        assert_eq!(s.max_id().unwrap(), 6);

        // A fresh start abandons everything; a second abandoned chk-4 (ids
        // are never reused, but a copied-in directory may be) goes beside
        // the first.
        complete(&s, &[4]);
        assert_eq!(listed(&s), vec![3, 2, 1], "chk-4 is of the old timeline");
        assert_eq!(
            s.start_timeline("run-b", None, None).unwrap(),
            vec![3, 2, 1]
        );
        assert!(listed(&s).is_empty());
        assert!(!s.checkpoint_dir(4).exists());
        assert!(root.join(ABANDONED_DIR).join("chk-4.1").is_dir());
        let t = s.timeline().unwrap().unwrap();
        assert_eq!((t.job_id.as_str(), t.started_from), ("run-b", None));
        assert_eq!(t.abandoned, (1..=6).collect());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_abandonment_recorded_but_not_yet_moved_is_not_listed() {
        // A crash between writing `_timeline` and moving the directories.
        let root = temp_root("recorded");
        let s = CheckpointStorage::open(&root).unwrap();
        complete(&s, &[1, 2, 3]);
        let t = Timeline {
            job_id: "run".into(),
            started_from: Some(1),
            abandoned: BTreeSet::from([2, 3]),
            last_id: 0,
            started_from_dir: None,
        };
        fs::write(root.join(TIMELINE_FILE), serde_json::to_vec(&t).unwrap()).unwrap();
        assert_eq!(listed(&s), vec![1]);
        assert_eq!(s.max_id().unwrap(), 3);
        // The next run finishes the move.
        assert!(s.start_timeline("next", Some(1), None).unwrap().is_empty());
        assert!(root.join(ABANDONED_DIR).join("chk-3").is_dir());
        assert!(root.join(ABANDONED_DIR).join("chk-2").is_dir());
        fs::remove_dir_all(&root).unwrap();
    }

    /// Probe 16: an incomplete `chk-<n>` deleted by hand (or a failed
    /// one, or a savepoint's elsewhere) left no trace, so the next run
    /// used `n` again. The timeline records every id triggered; a timeline
    /// of older weir without the field still reads.
    #[test]
    fn a_triggered_id_stays_used_after_its_directory_is_gone() {
        let root = temp_root("recorded-id");
        let s = CheckpointStorage::open(&root).unwrap();
        complete(&s, &[1, 2]);
        s.start_timeline("run", None, None).unwrap();
        s.record_id(3, 1).unwrap();
        s.record_id(2, 1).unwrap();
        assert_eq!(s.timeline().unwrap().unwrap().last_id, 3, "never lowered");
        assert_eq!(s.next_id(1).unwrap(), 4);
        // The next run's timeline keeps it.
        s.start_timeline("next", None, None).unwrap();
        assert_eq!(s.next_id(0).unwrap(), 4);

        let old = r#"{"job_id": "old", "started_from": 1, "abandoned": [5]}"#;
        fs::write(root.join(TIMELINE_FILE), old).unwrap();
        let t = s.timeline().unwrap().unwrap();
        assert_eq!((t.last_id, t.started_from), (0, Some(1)));
        assert_eq!(s.next_id(0).unwrap(), 6);
        fs::remove_dir_all(&root).unwrap();
    }

    /// Ids recorded ahead: one durable write for `ahead` triggers, and the
    /// next run numbers above all of them.
    #[test]
    fn ids_are_recorded_ahead_and_never_used_again() {
        let root = temp_root("ids-ahead");
        let s = CheckpointStorage::open(&root).unwrap();
        s.start_timeline("run", None, None).unwrap();
        s.record_id(1, 10).unwrap();
        assert_eq!(s.timeline().unwrap().unwrap().last_id, 10);
        // Ids 2..=10 are recorded already: `_timeline` is not written again.
        fs::remove_file(root.join(TIMELINE_FILE)).unwrap();
        for id in 2..=10 {
            s.record_id(id, 10).unwrap();
        }
        assert!(s.timeline().unwrap().is_none(), "no write for recorded ids");
        s.record_id(11, 10).unwrap();
        assert_eq!(s.timeline().unwrap().unwrap().last_id, 20);
        // A later run (another process: nothing cached) numbers above them.
        let later = CheckpointStorage::open(&root).unwrap();
        assert_eq!(later.next_id(11).unwrap(), 21);
        later.record_id(21, 1).unwrap();
        assert_eq!(later.timeline().unwrap().unwrap().last_id, 21);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn ids_stay_above_stray_files_and_abandoned_checkpoints() {
        let root = temp_root("max-id");
        let s = CheckpointStorage::open(&root).unwrap();
        fs::write(root.join("chk-5"), b"a plain file").unwrap();
        assert!(listed(&s).is_empty(), "a file is not a checkpoint");
        assert_eq!(s.max_id().unwrap(), 5);
        fs::create_dir_all(root.join(ABANDONED_DIR).join("chk-9.2")).unwrap();
        assert_eq!(s.max_id().unwrap(), 9);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_damaged_timeline_is_an_error_naming_it() {
        let root = temp_root("bad-timeline");
        let s = CheckpointStorage::open(&root).unwrap();
        fs::write(root.join(TIMELINE_FILE), b"{ not json").unwrap();
        let e = s.list().unwrap_err().to_string();
        assert!(e.contains(TIMELINE_FILE), "{e}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_file_as_the_root_is_refused_naming_it() {
        let root = temp_root("file-root");
        fs::write(&root, b"x").unwrap();
        let e = CheckpointStorage::open(&root).unwrap_err();
        assert!(e.to_string().contains(&root.display().to_string()), "{e}");
        assert_eq!(fs::read(&root).unwrap(), b"x");
        fs::remove_file(&root).unwrap();
    }
}
