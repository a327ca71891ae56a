//! What an operator harness's snapshot is: its operator's state written
//! as a checkpoint, by the checkpoint writer, and opened again by the
//! restore path (verified block by block), in a temporary directory that
//! lives as long as the snapshot.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_net::CheckpointBarrier;
use weir_state::snapshot::{
    Manifest, OperatorSnapshot as ManifestOperator, SnapshotKind, SubtaskSnapshot,
};

use crate::chain::control::ChainControl;
use crate::checkpoint::error::CheckpointError;
use crate::checkpoint::restore::RestoredCheckpoint;
use crate::checkpoint::storage::{CheckpointStorage, METADATA_FILE};
use crate::checkpoint::writer::write_task_snapshot_blocking;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::core::time::wall_ms;
use crate::testing::error::HarnessError;

/// The job name in the manifests of harness snapshots.
const HARNESS_JOB: &str = "weir-operator-harness";

/// Distinguishes the temporary directories of one process.
static DIRS: AtomicU64 = AtomicU64::new(0);

/// A directory removed when dropped.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, HarnessError> {
        let path = std::env::temp_dir().join(format!(
            "weir-harness-{}-{}",
            std::process::id(),
            DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|source| HarnessError::Io {
            what: "create snapshot directory",
            path: path.clone(),
            source,
        })?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A snapshot of an operator under test (Flink's `OperatorSubtaskState`
/// in its harnesses): the state of one or more of its subtasks, as a
/// checkpoint a restore reads. Restore it with
/// [`KeyedOperatorHarness::restore`](crate::testing::KeyedOperatorHarness::restore),
/// [`ProcessOperatorHarness::restore`](crate::testing::ProcessOperatorHarness::restore)
/// or [`HarnessSetup::restore`](crate::testing::HarnessSetup::restore);
/// [`merge`](Self::merge) the snapshots of several subtasks to restore
/// at another parallelism.
#[derive(Clone)]
pub struct OperatorSnapshot {
    /// The opened checkpoint, what a restore reads.
    checkpoint: Arc<RestoredCheckpoint>,
    /// Its `chk-<id>` directory (inside `_root`).
    dir: PathBuf,
    /// The operator's uid.
    uid: String,
    /// The operator's parallelism and the subtasks it holds.
    parallelism: u32,
    subtasks: Vec<SubtaskSnapshot>,
    max_parallelism: u32,
    _root: Arc<TempDir>,
}

impl std::fmt::Debug for OperatorSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorSnapshot")
            .field("uid", &self.uid)
            .field("checkpoint", &self.checkpoint_id())
            .field("parallelism", &self.parallelism)
            .field("subtasks", &self.subtask_indices())
            .finish()
    }
}

impl OperatorSnapshot {
    /// Snapshots operator `uid` of subtask `info`, the head of `chain`, as
    /// checkpoint `id`: walks the chain as a barrier does, writes the
    /// frozen states, writes the manifest and opens the result.
    pub(crate) fn take(
        chain: &mut impl ChainControl,
        uid: &str,
        info: &SubtaskInfo,
        id: u64,
    ) -> Result<Self, HarnessError> {
        let mut task = TaskSnapshot::new(
            CheckpointBarrier::checkpoint(id, wall_ms()),
            format!("{uid} ({}/{})", info.index + 1, info.parallelism),
            Instant::now(),
            Duration::ZERO,
        );
        chain.snapshot(&mut task);
        let root = TempDir::new()?;
        let dir = root.0.join(format!("chk-{id}"));
        std::fs::create_dir_all(&dir).map_err(|source| HarnessError::Io {
            what: "create snapshot directory",
            path: dir.clone(),
            source,
        })?;
        let segment = dir.join(CheckpointStorage::segment_name(0));
        let mut parts = write_task_snapshot_blocking(&segment, &mut task)?;
        // An operator without any state adds nothing at the barrier; its
        // snapshot still says it was there.
        let (parallelism, subtask) = match parts.iter().position(|(u, _, _)| u == uid) {
            Some(i) => {
                let (_, parallelism, subtask) = parts.swap_remove(i);
                (parallelism, subtask)
            }
            None => (
                info.parallelism as u32,
                SubtaskSnapshot {
                    index: info.index as u32,
                    key_groups: weir_state::KeyGroupRange::for_subtask(
                        info.max_parallelism,
                        info.parallelism as u32,
                        info.index as u32,
                    ),
                    extents: Vec::new(),
                    inline_state: Vec::new(),
                },
            ),
        };
        Self::open(
            Arc::new(root),
            dir,
            id,
            uid,
            parallelism,
            vec![subtask],
            info.max_parallelism,
        )
    }

    /// Writes the manifest of `subtasks` of operator `uid` into `dir`
    /// (which holds their segments) and opens it as a restore does.
    fn open(
        root: Arc<TempDir>,
        dir: PathBuf,
        id: u64,
        uid: &str,
        parallelism: u32,
        mut subtasks: Vec<SubtaskSnapshot>,
        max_parallelism: u32,
    ) -> Result<Self, HarnessError> {
        subtasks.sort_by_key(|s| s.index);
        let manifest = Manifest {
            job_name: HARNESS_JOB.to_owned(),
            checkpoint_id: id,
            timestamp_ms: wall_ms(),
            max_parallelism,
            operators: vec![ManifestOperator {
                uid: uid.to_owned(),
                parallelism,
                subtasks: subtasks.clone(),
            }],
            lineage: None,
            kind: SnapshotKind::Checkpoint,
        };
        manifest
            .write(&dir, METADATA_FILE)
            .map_err(CheckpointError::from)?;
        let checkpoint = RestoredCheckpoint::open(&dir, HARNESS_JOB, max_parallelism)?;
        checkpoint.verify()?;
        Ok(Self {
            checkpoint: Arc::new(checkpoint),
            dir,
            uid: uid.to_owned(),
            parallelism,
            subtasks,
            max_parallelism,
            _root: root,
        })
    }

    /// Merges the snapshots of several subtasks of one operator (taken at
    /// the same parallelism, each subtask once) into one, as a checkpoint
    /// of the whole operator holds them: restore it into harnesses at any
    /// parallelism to test rescaling (keyed state follows its key groups,
    /// operator state is redistributed). The checkpoint id is the largest
    /// of theirs.
    pub fn merge(parts: &[&OperatorSnapshot]) -> Result<Self, HarnessError> {
        let first = parts
            .first()
            .ok_or_else(|| HarnessError::Merge("no snapshot to merge".into()))?;
        let mut seen = Vec::new();
        for p in parts {
            if p.uid != first.uid
                || p.parallelism != first.parallelism
                || p.max_parallelism != first.max_parallelism
            {
                return Err(HarnessError::Merge(format!(
                    "operator `{}` at parallelism {} of {} key groups and operator `{}` at \
                     parallelism {} of {} key groups",
                    first.uid,
                    first.parallelism,
                    first.max_parallelism,
                    p.uid,
                    p.parallelism,
                    p.max_parallelism
                )));
            }
            for s in &p.subtasks {
                if seen.contains(&s.index) {
                    return Err(HarnessError::Merge(format!(
                        "subtask {} of operator `{}` is in two snapshots",
                        s.index, p.uid
                    )));
                }
                seen.push(s.index);
            }
        }
        let id = parts.iter().map(|p| p.checkpoint_id()).max().unwrap_or(1);
        let root = TempDir::new()?;
        let dir = root.0.join(format!("chk-{id}"));
        std::fs::create_dir_all(&dir).map_err(|source| HarnessError::Io {
            what: "create snapshot directory",
            path: dir.clone(),
            source,
        })?;
        // Each part's segments are copied under names of their own, and
        // its extents renamed to match.
        let mut subtasks = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            for s in &p.subtasks {
                let mut s = s.clone();
                for e in &mut s.extents {
                    let renamed = format!("p{i:03}-{}", e.segment);
                    let target = dir.join(&renamed);
                    if !target.exists() {
                        let source = p.dir.join(&e.segment);
                        std::fs::copy(&source, &target).map_err(|source| HarnessError::Io {
                            what: "copy snapshot segment",
                            path: target.clone(),
                            source,
                        })?;
                    }
                    e.segment = renamed;
                }
                subtasks.push(s);
            }
        }
        Self::open(
            Arc::new(root),
            dir,
            id,
            &first.uid,
            first.parallelism,
            subtasks,
            first.max_parallelism,
        )
    }

    /// The checkpoint id.
    pub fn checkpoint_id(&self) -> u64 {
        self.checkpoint.id()
    }

    /// The operator's uid.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The operator's parallelism when the snapshot was taken.
    pub fn parallelism(&self) -> usize {
        self.parallelism as usize
    }

    /// The subtasks whose state the snapshot holds.
    pub fn subtask_indices(&self) -> Vec<usize> {
        self.subtasks.iter().map(|s| s.index as usize).collect()
    }

    /// The number of key groups of the job it was taken in.
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// Bytes of state the snapshot holds (its blocks).
    pub fn state_bytes(&self) -> u64 {
        self.subtasks
            .iter()
            .flat_map(|s| &s.extents)
            .map(|e| e.length)
            .sum()
    }

    /// The names of the states it holds (keyed, operator and timers;
    /// not the small inline ones), sorted, each once.
    pub fn state_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .subtasks
            .iter()
            .flat_map(|s| &s.extents)
            .map(|e| e.state.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The checkpoint's directory (`chk-<id>` with `_metadata` and the
    /// segments), which `weir checkpoints describe` reads; removed when
    /// the last clone of the snapshot is dropped.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The checkpoint a restore reads.
    pub(crate) fn checkpoint(&self) -> &RestoredCheckpoint {
        &self.checkpoint
    }
}
