//! Finding, verifying and reading the checkpoint a job restarts from.
//!
//! A checkpoint is used only if it is complete (its manifest exists) and
//! verified: the manifest's trailer, checksum and archive validate, it
//! belongs to this job, and every block it names is present and passes its
//! checksums. `--restore latest` walks the complete checkpoints newest first
//! and takes the first that verifies, reporting why each newer one was
//! skipped (Flink fails the recovery instead; weir falls back, but only to a
//! checkpoint that is complete and verified). Segments are mapped with
//! memmap2, so restoring reads them in place.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use weir_state::snapshot::{BlockKind, Extent, Manifest, SegmentReader, SubtaskSnapshot};
use weir_state::KeyGroupRange;

use crate::checkpoint::storage::{CheckpointStorage, METADATA_FILE};
use crate::source::SubtaskInfo;

/// A verified checkpoint, ready to restore from.
pub struct RestoredCheckpoint {
    dir: PathBuf,
    manifest: Manifest,
    segments: HashMap<String, SegmentReader>,
    /// Verified blocks: `(segment, offset)` -> payload range in the mapping.
    verified: HashMap<(String, u64), std::ops::Range<usize>>,
    state_bytes: u64,
}

impl std::fmt::Debug for RestoredCheckpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestoredCheckpoint")
            .field("dir", &self.dir)
            .field("id", &self.manifest.checkpoint_id)
            .finish()
    }
}

impl RestoredCheckpoint {
    /// Opens and verifies the checkpoint in `dir` (a `chk-<id>` directory
    /// or its `_metadata` file) for job `job_name` with `max_parallelism`
    /// key groups. The error names the file that is missing or corrupt.
    pub fn open(dir: &Path, job_name: &str, max_parallelism: u32) -> Result<Self, String> {
        let dir = if dir.file_name().is_some_and(|n| n == METADATA_FILE) {
            dir.parent().unwrap_or(Path::new(".")).to_path_buf()
        } else {
            dir.to_path_buf()
        };
        let meta = dir.join(METADATA_FILE);
        if !meta.is_file() {
            return Err(format!(
                "{} is missing: the checkpoint is incomplete",
                meta.display()
            ));
        }
        let manifest = Manifest::read(&meta).map_err(|e| e.to_string())?;
        if manifest.job_name != job_name {
            return Err(format!(
                "{} belongs to job `{}`, not `{job_name}`",
                meta.display(),
                manifest.job_name
            ));
        }
        if manifest.max_parallelism != max_parallelism {
            return Err(format!(
                "{} was taken with pipeline.max-parallelism {}, the job runs with {max_parallelism} \
                 (key groups cannot be remapped)",
                meta.display(),
                manifest.max_parallelism
            ));
        }
        // Open every segment the manifest names, then check each
        // segment's blocks on its own thread (checksums over hundreds of MB
        // are the bulk of a restore's reading).
        let mut by_segment: HashMap<String, Vec<&Extent>> = HashMap::new();
        for op in &manifest.operators {
            for st in &op.subtasks {
                for e in &st.extents {
                    if e.segment.contains('/') || e.segment.starts_with('.') {
                        return Err(format!(
                            "{} names segment `{}` outside the checkpoint directory",
                            meta.display(),
                            e.segment
                        ));
                    }
                    by_segment.entry(e.segment.clone()).or_default().push(e);
                }
            }
        }
        let mut segments: HashMap<String, SegmentReader> = HashMap::new();
        for name in by_segment.keys() {
            let reader = SegmentReader::open(dir.join(name)).map_err(|e| e.to_string())?;
            segments.insert(name.clone(), reader);
        }
        type Checked = Result<Vec<((String, u64), std::ops::Range<usize>)>, String>;
        let results: Vec<Checked> = std::thread::scope(|scope| {
            let handles: Vec<_> = by_segment
                .iter()
                .map(|(name, extents)| {
                    let reader = &segments[name];
                    scope.spawn(move || {
                        let base = reader.bytes().as_ptr() as usize;
                        extents
                            .iter()
                            .map(|e| {
                                let payload =
                                    reader.read_block(e).map_err(|err| err.to_string())?;
                                let start = payload.as_ptr() as usize - base;
                                Ok(((name.clone(), e.offset), start..start + payload.len()))
                            })
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("verifying a segment panicked".into()))
                })
                .collect()
        });
        let mut verified = HashMap::new();
        let mut state_bytes = 0;
        for checked in results {
            for (key, range) in checked? {
                state_bytes += range.len() as u64;
                verified.insert(key, range);
            }
        }
        Ok(Self {
            dir,
            manifest,
            segments,
            verified,
            state_bytes,
        })
    }

    /// The checkpoint id.
    pub fn id(&self) -> u64 {
        self.manifest.checkpoint_id
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Bytes of state payload in its blocks.
    pub fn state_bytes(&self) -> u64 {
        self.state_bytes
    }

    /// What subtask `info` of operator `uid` restores from.
    pub fn scope<'a>(&'a self, uid: &'a str, info: &SubtaskInfo) -> RestoreScope<'a> {
        RestoreScope {
            checkpoint: self,
            uid,
            info: *info,
        }
    }

    /// The payload of a block named by the manifest: verified (checksums
    /// and all) when the checkpoint was opened, so not checked again.
    fn payload(&self, e: &Extent) -> Result<&[u8], String> {
        let seg = self
            .segments
            .get(&e.segment)
            .ok_or_else(|| format!("segment {} was not opened", e.segment))?;
        match self.verified.get(&(e.segment.clone(), e.offset)) {
            Some(range) => Ok(&seg.bytes()[range.clone()]),
            None => seg.read_block(e).map_err(|err| err.to_string()),
        }
    }
}

/// The outcome of looking for the latest usable checkpoint.
#[derive(Debug, Default)]
pub struct LatestSearch {
    /// The newest complete checkpoint that verified, if any.
    pub found: Option<RestoredCheckpoint>,
    /// Newer complete checkpoints that could not be used, and why.
    pub skipped: Vec<(u64, String)>,
}

/// Walks the complete checkpoints under `storage`, newest first, and opens
/// the first that verifies.
pub fn find_latest(
    storage: &CheckpointStorage,
    job_name: &str,
    max_parallelism: u32,
) -> Result<LatestSearch, String> {
    let mut search = LatestSearch::default();
    let list = storage.list().map_err(|e| e.to_string())?;
    for c in list.into_iter().filter(|c| c.complete) {
        match RestoredCheckpoint::open(&c.dir, job_name, max_parallelism) {
            Ok(r) => {
                search.found = Some(r);
                break;
            }
            Err(why) => search.skipped.push((c.id, why)),
        }
    }
    Ok(search)
}

/// A block of keyed state to restore.
pub struct KeyedBlock<'a> {
    /// Its payload (validated).
    pub payload: &'a [u8],
    /// The key groups it holds.
    pub key_groups: KeyGroupRange,
    /// Its segment, for messages.
    pub segment: &'a str,
}

impl KeyedBlock<'_> {
    /// An error about the entry at `pos` of this block.
    pub fn describe(&self, state: &str, pos: usize, e: &dyn std::fmt::Display) -> String {
        format!(
            "state `{state}`: block of key groups {:?} in {} is malformed at payload byte {pos}: {e}",
            self.key_groups, self.segment
        )
    }
}

/// What one operator subtask restores from.
pub struct RestoreScope<'a> {
    checkpoint: &'a RestoredCheckpoint,
    uid: &'a str,
    info: SubtaskInfo,
}

impl<'a> RestoreScope<'a> {
    /// The checkpoint id.
    pub fn checkpoint_id(&self) -> u64 {
        self.checkpoint.id()
    }

    /// The job's number of key groups.
    pub fn max_parallelism(&self) -> u32 {
        self.info.max_parallelism
    }

    /// The key groups of the restoring subtask.
    pub fn key_groups(&self) -> KeyGroupRange {
        KeyGroupRange::for_subtask(
            self.info.max_parallelism,
            self.info.parallelism as u32,
            self.info.index as u32,
        )
    }

    /// Every block of keyed state `state` of this operator whose key groups
    /// overlap the subtask's (from any subtask of the checkpoint, so keyed
    /// state follows its key groups when the parallelism changes).
    pub fn keyed_blocks(&self, state: &str) -> Result<Vec<KeyedBlock<'a>>, String> {
        let mine = self.key_groups();
        let mut blocks = Vec::new();
        let Some(op) = self
            .checkpoint
            .manifest
            .operators
            .iter()
            .find(|o| o.uid == self.uid)
        else {
            return Ok(blocks);
        };
        for st in &op.subtasks {
            for e in &st.extents {
                if e.kind != BlockKind::KeyedState || e.state != state {
                    continue;
                }
                if e.key_groups.end() <= mine.start() || e.key_groups.start() >= mine.end() {
                    continue;
                }
                blocks.push(KeyedBlock {
                    payload: self.checkpoint.payload(e)?,
                    key_groups: e.key_groups,
                    segment: &e.segment,
                });
            }
        }
        Ok(blocks)
    }

    /// This subtask's entry, if the operator is in the checkpoint. Inline
    /// (non-keyed) state belongs to a subtask index, so it needs the same
    /// parallelism as when it was taken.
    pub fn subtask(&self) -> Result<Option<&'a SubtaskSnapshot>, String> {
        let Some(op) = self
            .checkpoint
            .manifest
            .operators
            .iter()
            .find(|o| o.uid == self.uid)
        else {
            return Ok(None);
        };
        if op.parallelism as usize != self.info.parallelism {
            return Err(format!(
                "operator `{}` had parallelism {} in checkpoint {}, now {}: its non-keyed state \
                 cannot be redistributed yet",
                self.uid,
                op.parallelism,
                self.checkpoint.id(),
                self.info.parallelism
            ));
        }
        Ok(op
            .subtasks
            .iter()
            .find(|s| s.index as usize == self.info.index))
    }

    /// The inline state `name` of this subtask, if stored.
    pub fn inline(&self, name: &str) -> Result<Option<&'a [u8]>, String> {
        Ok(self.subtask()?.and_then(|s| {
            s.inline_state
                .iter()
                .find(|i| i.name == name)
                .map(|i| i.bytes.as_slice())
        }))
    }
}

/// Shared by every worker of an attempt.
pub type SharedRestore = Option<Arc<RestoredCheckpoint>>;
