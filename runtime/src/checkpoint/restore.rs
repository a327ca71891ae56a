//! Finding, verifying and reading the checkpoint a job restarts from.
//!
//! A checkpoint is used only if it is complete (its manifest exists) and
//! verified: the manifest's trailer, checksum and archive validate, it
//! belongs to this job, every segment it names is there and long enough,
//! and every block passes its checks (header, checksums, padding) when a
//! worker loads it — in parallel with the other workers, as the pages are
//! read. `--restore latest` walks the complete checkpoints newest first;
//! a checkpoint that fails any check, including a corrupt block found while
//! loading (the attempt is then abandoned before any record is processed),
//! is reported with the file that failed and the next older one is tried
//! (Flink fails the recovery instead; weir falls back, but only to a
//! checkpoint that is complete and verified). Segments are mapped with
//! memmap2, so restoring reads them in place.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use weir_state::snapshot::{
    BlockKind, Extent, Manifest, OperatorSnapshot, PayloadCheck, SegmentReader, SubtaskSnapshot,
};
use weir_state::KeyGroupRange;

use crate::checkpoint::storage::{CheckpointStorage, METADATA_FILE};
use crate::core::subtask::SubtaskInfo;

/// A verified checkpoint, ready to restore from.
pub struct RestoredCheckpoint {
    dir: PathBuf,
    manifest: Manifest,
    segments: HashMap<String, SegmentReader>,
    state_bytes: u64,
    /// The first block that failed its checks while being restored.
    corrupt: std::sync::Mutex<Option<String>>,
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
        // Every segment the manifest names must exist and hold its blocks.
        // The blocks' checksums are checked as the workers load them, in
        // parallel and as the pages are read ([`RestoredCheckpoint::corrupt`]
        // reports a block that fails); [`RestoredCheckpoint::verify`]
        // checks them all up front.
        let mut segments: HashMap<String, SegmentReader> = HashMap::new();
        let mut state_bytes = 0;
        for op in &manifest.operators {
            for st in &op.subtasks {
                for e in &st.extents {
                    if !segments.contains_key(&e.segment) {
                        if e.segment.contains('/') || e.segment.starts_with('.') {
                            return Err(format!(
                                "{} names segment `{}` outside the checkpoint directory",
                                meta.display(),
                                e.segment
                            ));
                        }
                        let reader =
                            SegmentReader::open(dir.join(&e.segment)).map_err(|e| e.to_string())?;
                        segments.insert(e.segment.clone(), reader);
                    }
                    let reader = &segments[&e.segment];
                    if e.offset
                        .checked_add(e.length)
                        .is_none_or(|end| end > reader.len())
                    {
                        return Err(format!(
                            "{} is truncated: {} bytes, but the block at offset {} needs {}",
                            reader.path().display(),
                            reader.len(),
                            e.offset,
                            e.length
                        ));
                    }
                    state_bytes += e.length;
                }
            }
        }
        Ok(Self {
            dir,
            manifest,
            segments,
            state_bytes,
            corrupt: std::sync::Mutex::new(None),
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

    /// Bytes of its blocks (headers, payloads and padding).
    pub fn state_bytes(&self) -> u64 {
        self.state_bytes
    }

    /// Checks every block (checksums and all), one thread per segment.
    pub fn verify(&self) -> Result<(), String> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .segments
                .iter()
                .map(|(name, reader)| {
                    let extents: Vec<&Extent> = self
                        .manifest
                        .operators
                        .iter()
                        .flat_map(|o| &o.subtasks)
                        .flat_map(|s| &s.extents)
                        .filter(|e| &e.segment == name)
                        .collect();
                    scope.spawn(move || {
                        extents
                            .iter()
                            .try_for_each(|e| reader.read_block(e).map(|_| ()))
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("verifying a segment panicked".into()))
            })
        })
    }

    /// The first block that failed its checks while being restored, if any:
    /// the checkpoint is then unusable.
    pub fn corrupt(&self) -> Option<String> {
        self.corrupt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What subtask `info` of operator `uid` restores from.
    pub fn scope<'a>(&'a self, uid: &'a str, info: &SubtaskInfo) -> RestoreScope<'a> {
        RestoreScope {
            checkpoint: self,
            uid,
            info: *info,
        }
    }

    /// The payload of a block named by the manifest, its header, lengths
    /// and padding checked, the checksum left to the caller (see
    /// [`SegmentReader::read_block_deferred`]); a failure marks the
    /// checkpoint corrupt.
    fn payload_deferred(&self, e: &Extent) -> Result<(&[u8], PayloadCheck), String> {
        let seg = self
            .segments
            .get(&e.segment)
            .ok_or_else(|| format!("segment {} was not opened", e.segment))?;
        seg.read_block_deferred(e)
            .map_err(|err| self.mark_corrupt(err.to_string()))
    }

    /// Records that a block failed its checks; returns the message.
    pub(crate) fn mark_corrupt(&self, message: String) -> String {
        self.corrupt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| message.clone());
        message
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
    below: Option<u64>,
) -> Result<LatestSearch, String> {
    let mut search = LatestSearch::default();
    let list = storage.list().map_err(|e| e.to_string())?;
    for c in list
        .into_iter()
        .filter(|c| c.complete && below.is_none_or(|b| c.id < b))
    {
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
    /// Its payload: everything but the checksum validated; feed it through
    /// `check` and finish that before trusting what was decoded.
    pub payload: &'a [u8],
    /// The payload's checksum, to compute while decoding.
    pub check: PayloadCheck,
    /// The key groups it holds.
    pub key_groups: KeyGroupRange,
    /// What it holds (entries per key group, or a table in slot order).
    pub kind: BlockKind,
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

    /// The operator's uid.
    pub fn uid(&self) -> &'a str {
        self.uid
    }

    /// This operator's entry in the manifest, if it has one.
    fn operator(&self) -> Option<&'a OperatorSnapshot> {
        self.checkpoint
            .manifest
            .operators
            .iter()
            .find(|o| o.uid == self.uid)
    }

    /// Records that a block failed its checks (the checkpoint is unusable).
    pub fn mark_corrupt(&self, message: String) -> String {
        self.checkpoint.mark_corrupt(message)
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

    /// The extents of keyed state `state` of this operator whose key
    /// groups overlap the subtask's (from any subtask of the checkpoint, so
    /// keyed state follows its key groups when the parallelism changes), in
    /// file order (segment, offset). Reads nothing: open each with
    /// [`open_block`](Self::open_block) when it is needed, so that decoding
    /// follows the device's sequential read-ahead instead of waiting for it.
    pub fn keyed_extents(&self, state: &str) -> Vec<&'a Extent> {
        let mine = self.key_groups();
        let Some(op) = self.operator() else {
            return Vec::new();
        };
        let mut extents: Vec<&'a Extent> = op
            .subtasks
            .iter()
            .flat_map(|st| st.extents.iter())
            .filter(|e| matches!(e.kind, BlockKind::KeyedState | BlockKind::KeyedTable))
            .filter(|e| e.state == state)
            .filter(|e| e.key_groups.end() > mine.start() && e.key_groups.start() < mine.end())
            .collect();
        extents.sort_by(|a, b| (&a.segment, a.offset).cmp(&(&b.segment, b.offset)));
        extents
    }

    /// The subtask restoring.
    pub fn subtask_info(&self) -> SubtaskInfo {
        self.info
    }

    /// The blocks of operator (non-keyed) state `state` of every subtask of
    /// this operator in the checkpoint, with the parallelism it had: per old
    /// subtask index, its extents in the order they were written. `None`
    /// if the operator is not in the checkpoint. Any parallelism: the
    /// caller redistributes (see [`crate::operator_state`]).
    pub fn operator_state_extents(&self, state: &str) -> Option<(u32, Vec<SubtaskExtents<'a>>)> {
        let op = self.operator()?;
        let mut subtasks: Vec<SubtaskExtents<'a>> = op
            .subtasks
            .iter()
            .map(|st| {
                let extents = st
                    .extents
                    .iter()
                    .filter(|e| e.kind == BlockKind::OperatorState && e.state == state)
                    .collect();
                (st.index, extents)
            })
            .collect();
        subtasks.sort_by_key(|(index, _)| *index);
        Some((op.parallelism, subtasks))
    }

    /// Starts reading the blocks of `extents` (of one segment, in file
    /// order) from the device: a hint for the window after the one being
    /// decoded.
    pub fn will_need(&self, extents: &[&Extent]) {
        let (Some(first), Some(last)) = (extents.first(), extents.last()) else {
            return;
        };
        if let Some(seg) = self.checkpoint.segments.get(&first.segment) {
            let end = last.offset.saturating_add(last.length);
            seg.will_need(first.offset, end.saturating_sub(first.offset));
        }
    }

    /// Opens the block of `extent`: checks its header against the extent
    /// (the payload's checksum is left to the returned block's `check`).
    pub fn open_block(&self, extent: &'a Extent) -> Result<KeyedBlock<'a>, String> {
        let (payload, check) = self.checkpoint.payload_deferred(extent)?;
        Ok(KeyedBlock {
            payload,
            check,
            key_groups: extent.key_groups,
            kind: extent.kind,
            segment: &extent.segment,
        })
    }

    /// The channel state of this subtask's `channels` inputs (records an
    /// unaligned checkpoint's barrier overtook, per input; empty where there
    /// were none), read and fully checked. Channel state belongs to a
    /// subtask and its senders, so it needs the parallelism it was taken
    /// with.
    pub fn channel_state(
        &self,
        channels: usize,
        name_of: impl Fn(usize) -> String,
    ) -> Result<Vec<Vec<u8>>, String> {
        let mut out = vec![Vec::new(); channels];
        let Some(subtask) = self.subtask()? else {
            return Ok(out);
        };
        for e in subtask
            .extents
            .iter()
            .filter(|e| e.kind == BlockKind::ChannelState)
        {
            let Some(c) = (0..channels).find(|&c| name_of(c) == e.state) else {
                return Err(format!(
                    "checkpoint {} holds channel state `{}` of operator `{}` subtask {}, which has \
                     only {channels} inputs now",
                    self.checkpoint.id(),
                    e.state,
                    self.uid,
                    self.info.index
                ));
            };
            let (payload, mut check) = self.checkpoint.payload_deferred(e)?;
            check.update(payload);
            check
                .finish()
                .map_err(|err| self.mark_corrupt(err.to_string()))?;
            out[c].extend_from_slice(payload);
        }
        Ok(out)
    }

    /// This subtask's entry, if the operator is in the checkpoint. Inline
    /// (non-keyed) state belongs to a subtask index, so it needs the same
    /// parallelism as when it was taken.
    pub fn subtask(&self) -> Result<Option<&'a SubtaskSnapshot>, String> {
        let Some(op) = self.operator() else {
            return Ok(None);
        };
        if op.parallelism as usize != self.info.parallelism {
            return Err(format!(
                "operator `{}` had parallelism {} in checkpoint {}, now {}: its per-subtask state \
                 (a source position, a sink's transactions, channel state) cannot be \
                 redistributed; only keyed state and operator list state can",
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

    /// A flag kept as inline state `name` (present = set). At the
    /// parallelism the checkpoint was taken with, this subtask's; at
    /// another (a keyed operator rescaled), set only if every subtask of
    /// the checkpoint had it set: a flag such as "the input ended" holds
    /// for the new subtasks only if it held for all the old ones.
    pub fn flag(&self, name: &str) -> Result<bool, String> {
        let Some(op) = self.operator() else {
            return Ok(false);
        };
        if op.parallelism as usize == self.info.parallelism {
            return Ok(self.inline(name)?.is_some());
        }
        Ok(!op.subtasks.is_empty()
            && op
                .subtasks
                .iter()
                .all(|s| s.inline_state.iter().any(|i| i.name == name)))
    }

    /// Like [`inline`](Self::inline), but an operator whose old subtasks
    /// all stored nothing under `name` (empty) may change parallelism: it
    /// has no state to redistribute (a stateless sink, say).
    pub fn inline_unless_empty(&self, name: &str) -> Result<Option<&'a [u8]>, String> {
        if let Some(op) = self.operator() {
            let empty = op.subtasks.iter().all(|s| {
                s.inline_state
                    .iter()
                    .all(|i| i.name != name || i.bytes.is_empty())
            });
            if empty && op.parallelism as usize != self.info.parallelism {
                return Ok(None);
            }
        }
        self.inline(name)
    }

    /// Inline state `name` that every subtask holds a copy of (broadcast
    /// state): this subtask's at the checkpoint's parallelism, else that of
    /// old subtask `index % old parallelism`, so at any parallelism every
    /// new subtask gets a copy, as in Flink.
    pub fn inline_replicated(&self, name: &str) -> Result<Option<&'a [u8]>, String> {
        let Some(op) = self.operator() else {
            return Ok(None);
        };
        if op.parallelism as usize == self.info.parallelism {
            return self.inline(name);
        }
        let from = self.info.index % (op.parallelism as usize).max(1);
        Ok(op
            .subtasks
            .iter()
            .find(|s| s.index as usize == from)
            .and_then(|s| s.inline_state.iter().find(|i| i.name == name))
            .map(|i| i.bytes.as_slice()))
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

/// An old subtask's index and its extents of one state.
pub type SubtaskExtents<'a> = (u32, Vec<&'a Extent>);

/// Shared by every worker of an attempt.
pub type SharedRestore = Option<Arc<RestoredCheckpoint>>;
