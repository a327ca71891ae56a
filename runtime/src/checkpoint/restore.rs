//! Finding, verifying and reading the checkpoint a job restarts from.
//!
//! A checkpoint is used only if it is complete (its manifest exists) and
//! verified: the manifest's trailer, checksum and archive validate, its id
//! is its directory's, it belongs to this job and its state means what this
//! job's does (its lineage's fingerprint, [`RestoredCheckpoint::check_fits`]),
//! every segment it names is there and long enough, and every block passes
//! its checks (header, checksums, padding): up front
//! ([`RestoredCheckpoint::verify`], before a run changes anything) and
//! again as a worker loads it, where a block that is sound but says what it
//! should not (a key of another key group) is found. [`find_latest`] walks
//! the complete checkpoints of the current timeline newest first and skips
//! unusable ones with their reasons; one of another job ends the search.
//! Segments are mapped with memmap2, so restoring reads them in place.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use weir_state::snapshot::{
    BlockKind, Extent, Lineage, Manifest, OperatorSnapshot, PayloadCheck, SegmentReader,
    SnapshotKind, SubtaskSnapshot,
};
use weir_state::KeyGroupRange;

use crate::checkpoint::error::{CheckpointError, RestoreError};
use crate::checkpoint::lineage::Fingerprint;
use crate::checkpoint::storage::{
    referenced_path, CheckpointStorage, ABANDONED_DIR, METADATA_FILE, SAVEPOINT_PREFIX,
};
use crate::core::subtask::SubtaskInfo;

/// A verified checkpoint, ready to restore from.
pub struct RestoredCheckpoint {
    dir: PathBuf,
    manifest: Manifest,
    segments: HashMap<String, SegmentReader>,
    state_bytes: u64,
    /// The first error that made it unusable while being restored.
    corrupt: std::sync::Mutex<Option<RestoreError>>,
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
    /// key groups. The error names the file that is missing or corrupt, or
    /// says how the checkpoint does not fit the job.
    pub fn open(dir: &Path, job_name: &str, max_parallelism: u32) -> Result<Self, RestoreError> {
        let opened = Self::open_any(dir)?;
        let meta = opened.dir.join(METADATA_FILE);
        if opened.manifest.job_name != job_name {
            return Err(RestoreError::OtherJob {
                manifest: meta,
                found: opened.manifest.job_name,
                expected: job_name.to_owned(),
            });
        }
        if opened.manifest.max_parallelism != max_parallelism {
            return Err(RestoreError::MaxParallelism {
                manifest: meta,
                found: opened.manifest.max_parallelism,
                expected: max_parallelism,
            });
        }
        Ok(opened)
    }

    /// Opens the checkpoint or savepoint in `dir` whatever job it is of
    /// (for inspection): its manifest reads and validates, its id is its
    /// `chk-<id>` directory's, and every segment it names is there, inside
    /// it, and long enough.
    pub fn open_any(dir: &Path) -> Result<Self, RestoreError> {
        let given = dir;
        let not_a_checkpoint = |what: &str| RestoreError::NotACheckpoint {
            path: given.to_path_buf(),
            what: what.to_owned(),
        };
        if !given.exists() {
            // A checkpoint a later restore abandoned: say where it went.
            let aside = given
                .parent()
                .zip(given.file_name())
                .map(|(root, name)| root.join(ABANDONED_DIR).join(name))
                .filter(|aside| aside.is_dir());
            if let Some(aside) = aside {
                return Err(not_a_checkpoint(&format!(
                    "no such checkpoint: a run that restored an older checkpoint abandoned it and \
                     moved it to {}; name it there to go back to its timeline",
                    aside.display()
                )));
            }
            return Err(not_a_checkpoint("no such file or directory"));
        }
        let dir = if given.is_file() {
            if given.file_name().is_some_and(|n| n == METADATA_FILE) {
                given.parent().unwrap_or(Path::new(".")).to_path_buf()
            } else {
                return Err(not_a_checkpoint(
                    "is a file, not a checkpoint: name a chk-<id> directory or its _metadata",
                ));
            }
        } else {
            given.to_path_buf()
        };
        let meta = dir.join(METADATA_FILE);
        if !meta.is_file() {
            let holds = |prefix: &str| {
                std::fs::read_dir(&dir).is_ok_and(|entries| {
                    entries
                        .flatten()
                        .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
                })
            };
            if holds("chk-") {
                return Err(not_a_checkpoint(
                    "is a checkpoint directory's root: name a chk-<id> in it, or use --restore \
                     latest",
                ));
            }
            if holds(SAVEPOINT_PREFIX) {
                return Err(not_a_checkpoint(
                    "is a savepoint directory's root: name a savepoint-<job>-<id> in it",
                ));
            }
            let savepoint = dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(SAVEPOINT_PREFIX));
            return Err(RestoreError::Incomplete {
                manifest: meta,
                savepoint,
            });
        }
        let manifest = Manifest::read(&meta)?;
        if let Some(named) = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("chk-"))
            .and_then(|n| n.parse::<u64>().ok())
        {
            if named != manifest.checkpoint_id {
                return Err(RestoreError::IdMismatch {
                    manifest: meta,
                    found: manifest.checkpoint_id,
                    expected: named,
                });
            }
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
                        // An incremental checkpoint's manifest (format 5)
                        // names earlier checkpoints' segments
                        // `../chk-<id>/<segment>`; the parser refused
                        // them elsewhere.
                        let path = match weir_state::snapshot::referenced_segment(&e.segment) {
                            // Only an earlier checkpoint of the same
                            // directory, never this one or a later one.
                            Some((id, segment)) if id < manifest.checkpoint_id => {
                                match referenced_path(&dir, id, segment) {
                                    Some(path) => path,
                                    None => {
                                        return Err(RestoreError::SegmentOutside {
                                            manifest: meta,
                                            segment: e.segment.clone(),
                                        })
                                    }
                                }
                            }
                            Some(_) => {
                                return Err(RestoreError::SegmentOutside {
                                    manifest: meta,
                                    segment: e.segment.clone(),
                                })
                            }
                            None if e.segment.contains('/') || e.segment.starts_with('.') => {
                                return Err(RestoreError::SegmentOutside {
                                    manifest: meta,
                                    segment: e.segment.clone(),
                                });
                            }
                            None => dir.join(&e.segment),
                        };
                        let reader = SegmentReader::open_as(path, e.segment.clone())?;
                        segments.insert(e.segment.clone(), reader);
                    }
                    let reader = &segments[&e.segment];
                    if e.offset
                        .checked_add(e.length)
                        .is_none_or(|end| end > reader.len())
                    {
                        return Err(RestoreError::Truncated {
                            segment: reader.path().to_path_buf(),
                            len: reader.len(),
                            offset: e.offset,
                            needed: e.length,
                        });
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

    /// Where it comes from; `None` for a checkpoint of the previous format.
    pub fn lineage(&self) -> Option<&Lineage> {
        self.manifest.lineage.as_ref()
    }

    /// Whether its state means what the state of a job with `fingerprint`
    /// means ([`Fingerprint::mismatch`]); a checkpoint without lineage (the
    /// previous format) cannot be checked and passes.
    pub fn check_fits(&self, fingerprint: &Fingerprint) -> Result<(), RestoreError> {
        self.check_fits_allowing(fingerprint, false).map(|_| ())
    }

    /// [`RestoredCheckpoint::check_fits`], where state of operators this
    /// job does not have is refused naming them
    /// ([`RestoreError::NonRestoredState`]) or, with
    /// `allow_non_restored_state` (Flink's `--allow-non-restored-state`),
    /// skipped: their uids are returned. Everything else of the
    /// fingerprint must match, for a checkpoint as for a savepoint.
    pub fn check_fits_allowing(
        &self,
        fingerprint: &Fingerprint,
        allow_non_restored_state: bool,
    ) -> Result<Vec<String>, RestoreError> {
        let Some(lineage) = self.lineage() else {
            return Ok(Vec::new());
        };
        let manifest = self.dir.join(METADATA_FILE);
        let stored = Fingerprint::new(lineage.fingerprint.iter().cloned());
        let missing = fingerprint.missing_operators(&stored);
        if let Some(what) = fingerprint.mismatch_but_operators(&stored, !missing.is_empty()) {
            return Err(RestoreError::Foreign { manifest, what });
        }
        if !missing.is_empty() && !allow_non_restored_state {
            return Err(RestoreError::NonRestoredState {
                manifest,
                uids: missing,
            });
        }
        Ok(missing)
    }

    /// A checkpoint or a savepoint.
    pub fn kind(&self) -> SnapshotKind {
        self.manifest.kind
    }

    /// Checks every block (checksums and all), one thread per segment.
    pub fn verify(&self) -> Result<(), RestoreError> {
        let verify_segment = |name: &str, reader: &SegmentReader| {
            self.manifest
                .operators
                .iter()
                .flat_map(|o| &o.subtasks)
                .flat_map(|s| &s.extents)
                .filter(|e| e.segment == name)
                .try_for_each(|e| match reader.read_block(e) {
                    Ok(_) => Ok(()),
                    Err(err) => Err(RestoreError::Block {
                        state: e.state.clone(),
                        source: Arc::new(err),
                    }),
                })
        };
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .segments
                .iter()
                .map(|(name, reader)| (reader, scope.spawn(move || verify_segment(name, reader))))
                .collect();
            handles.into_iter().try_for_each(|(reader, verified)| {
                verified.join().unwrap_or_else(|_| {
                    Err(RestoreError::VerifyPanicked {
                        segment: reader.path().to_path_buf(),
                    })
                })
            })
        })
    }

    /// The first error that made the checkpoint unusable
    /// ([`RestoreError::unusable`]) while it was being restored, if any.
    pub fn corrupt(&self) -> Option<RestoreError> {
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
    /// [`SegmentReader::read_block_deferred`]).
    fn payload_deferred(&self, e: &Extent) -> Result<(&[u8], PayloadCheck), RestoreError> {
        let seg = self
            .segments
            .get(&e.segment)
            .ok_or_else(|| RestoreError::SegmentNotOpened {
                segment: e.segment.clone(),
            })?;
        seg.read_block_deferred(e)
            .map_err(|err| RestoreError::Block {
                state: e.state.clone(),
                source: Arc::new(err),
            })
    }

    /// Records `e`, found while restoring, as what makes the checkpoint
    /// unusable (the first one recorded is kept).
    fn mark_corrupt(&self, e: &RestoreError) {
        self.corrupt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| e.clone());
    }
}

/// The outcome of looking for the latest usable checkpoint.
#[derive(Debug, Default)]
pub struct LatestSearch {
    /// The newest complete checkpoint that verified, if any.
    pub found: Option<RestoredCheckpoint>,
    /// Newer complete checkpoints that are unusable, and why.
    pub skipped: Vec<(u64, RestoreError)>,
}

/// Walks the complete checkpoints of the current timeline under `storage`,
/// newest first (below `below` if given), and opens the first that
/// verifies and fits the job of `fingerprint`. An unusable checkpoint
/// ([`RestoreError::unusable`]) is skipped with its reason; one that does
/// not fit the job (another job, another max parallelism, another
/// fingerprint) ends the search with that error: the directory holds
/// another job's checkpoints, and falling back would hide it.
pub fn find_latest(
    storage: &CheckpointStorage,
    job_name: &str,
    max_parallelism: u32,
    fingerprint: &Fingerprint,
    below: Option<u64>,
) -> Result<Result<LatestSearch, RestoreError>, CheckpointError> {
    find_latest_allowing(
        storage,
        job_name,
        max_parallelism,
        fingerprint,
        below,
        false,
    )
}

/// [`find_latest`], with state of operators the job does not have skipped
/// if `allow_non_restored_state` ([`RestoredCheckpoint::check_fits_allowing`]).
pub fn find_latest_allowing(
    storage: &CheckpointStorage,
    job_name: &str,
    max_parallelism: u32,
    fingerprint: &Fingerprint,
    below: Option<u64>,
    allow_non_restored_state: bool,
) -> Result<Result<LatestSearch, RestoreError>, CheckpointError> {
    let mut search = LatestSearch::default();
    let list = storage.list()?;
    for c in list
        .into_iter()
        .filter(|c| c.complete && below.is_none_or(|b| c.id < b))
    {
        let opened = RestoredCheckpoint::open(&c.dir, job_name, max_parallelism).and_then(|r| {
            r.check_fits_allowing(fingerprint, allow_non_restored_state)
                .map(|_| r)
        });
        match opened {
            Ok(r) => {
                search.found = Some(r);
                break;
            }
            Err(why) if why.unusable() => search.skipped.push((c.id, why)),
            Err(why) => return Ok(Err(why)),
        }
    }
    Ok(Ok(search))
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
    /// Its offset in the segment, for messages.
    pub offset: u64,
}

impl KeyedBlock<'_> {
    /// The error of state `state`'s block whose payload is malformed at
    /// byte `pos`: `what` says how.
    pub fn malformed(&self, state: &str, pos: usize, what: impl std::fmt::Display) -> RestoreError {
        RestoreError::MalformedBlock {
            state: state.to_owned(),
            kind: self.kind,
            key_groups: self.key_groups,
            segment: self.segment.to_owned(),
            offset: self.offset,
            pos,
            what: what.to_string(),
        }
    }

    /// The error of state `state`'s block holding a `entry` (`"key"`,
    /// `"timer"`) of key group `key_group`, which it should not.
    pub fn misplaced(&self, state: &str, entry: &'static str, key_group: u32) -> RestoreError {
        RestoreError::MisplacedEntry {
            state: state.to_owned(),
            entry,
            key_group,
            kind: self.kind,
            key_groups: self.key_groups,
            segment: self.segment.to_owned(),
            offset: self.offset,
        }
    }
}

/// Bytes of blocks read ahead at a time ([`next_window`]).
const READ_WINDOW: u64 = 16 << 20;

/// How many of the extents `rest` (in file order) make the next window
/// to read: about [`READ_WINDOW`] bytes of one segment.
pub(crate) fn next_window(rest: &[&Extent]) -> usize {
    let mut bytes = 0;
    rest.iter()
        .take_while(|e| {
            let more = bytes < READ_WINDOW && e.segment == rest[0].segment;
            bytes += e.length;
            more
        })
        .count()
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

    /// Returns `e`, an error of this subtask's restore, after recording it
    /// on the checkpoint if it makes the checkpoint unusable
    /// ([`RestoreError::unusable`]): the attempt is then abandoned and an
    /// older checkpoint tried. Every error found while loading passes
    /// through here; its type decides.
    pub fn reject(&self, e: RestoreError) -> RestoreError {
        if e.unusable() {
            self.checkpoint.mark_corrupt(&RestoreError::Operator {
                uid: self.uid.to_owned(),
                subtask: self.info.index,
                source: Box::new(e.clone()),
            });
        }
        e
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

    /// The chains of keyed state `state` written incrementally (see
    /// `checkpoint::incremental`), one per old subtask whose key groups
    /// overlap ours: its table and delta blocks in manifest order (the
    /// full checkpoint's first, then each delta, oldest first). Empty if
    /// the state holds no delta block.
    pub fn keyed_chains(&self, state: &str) -> Vec<Vec<&'a Extent>> {
        let mine = self.key_groups();
        let Some(op) = self.operator() else {
            return Vec::new();
        };
        let chain = |st: &'a weir_state::snapshot::SubtaskSnapshot| -> Vec<&'a Extent> {
            st.extents
                .iter()
                .filter(|e| matches!(e.kind, BlockKind::KeyedTable | BlockKind::KeyedTableDelta))
                .filter(|e| e.state == state)
                .filter(|e| e.key_groups.end() > mine.start() && e.key_groups.start() < mine.end())
                .collect()
        };
        let chains: Vec<Vec<&'a Extent>> = op.subtasks.iter().map(chain).collect();
        if !chains
            .iter()
            .flatten()
            .any(|e| e.kind == BlockKind::KeyedTableDelta)
        {
            return Vec::new();
        }
        chains.into_iter().filter(|c| !c.is_empty()).collect()
    }

    /// The subtask restoring.
    pub fn subtask_info(&self) -> SubtaskInfo {
        self.info
    }

    /// The blocks of operator (non-keyed) state `state` of every subtask of
    /// this operator in the checkpoint, with the parallelism it had: per old
    /// subtask index, its extents in the order they were written. `None`
    /// if the operator is not in the checkpoint. Any parallelism: the
    /// caller redistributes (see `state::operator`, above this layer).
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
    pub fn open_block(&self, extent: &'a Extent) -> Result<KeyedBlock<'a>, RestoreError> {
        let (payload, check) = self
            .checkpoint
            .payload_deferred(extent)
            .map_err(|e| self.reject(e))?;
        Ok(KeyedBlock {
            payload,
            check,
            key_groups: extent.key_groups,
            kind: extent.kind,
            segment: &extent.segment,
            offset: extent.offset,
        })
    }

    /// Finishes the checksum `check` of the block of state `state`.
    pub fn finish_check(&self, state: &str, check: PayloadCheck) -> Result<(), RestoreError> {
        check.finish().map_err(|err| {
            self.reject(RestoreError::Block {
                state: state.to_owned(),
                source: Arc::new(err),
            })
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
    ) -> Result<Vec<Vec<u8>>, RestoreError> {
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
                return Err(self.reject(RestoreError::ChannelInputs {
                    checkpoint: self.checkpoint.id(),
                    channel: e.state.clone(),
                    uid: self.uid.to_owned(),
                    subtask: self.info.index,
                    inputs: channels,
                }));
            };
            let (payload, mut check) = self
                .checkpoint
                .payload_deferred(e)
                .map_err(|e| self.reject(e))?;
            check.update(payload);
            self.finish_check(&e.state, check)?;
            out[c].extend_from_slice(payload);
        }
        Ok(out)
    }

    /// The channel state of every old subtask of this operator (any
    /// parallelism), read and fully checked: `(old subtask, state name,
    /// records)` in subtask order, then in the order written. For a
    /// restore at another parallelism, which redistributes the records.
    pub fn channel_state_of_every_subtask(
        &self,
    ) -> Result<Vec<SubtaskChannelState<'a>>, RestoreError> {
        let Some(op) = self.operator() else {
            return Ok(Vec::new());
        };
        let mut subtasks: Vec<&SubtaskSnapshot> = op.subtasks.iter().collect();
        subtasks.sort_by_key(|s| s.index);
        let mut out = Vec::new();
        for st in subtasks {
            for e in st
                .extents
                .iter()
                .filter(|e| e.kind == BlockKind::ChannelState)
            {
                let (payload, mut check) = self
                    .checkpoint
                    .payload_deferred(e)
                    .map_err(|e| self.reject(e))?;
                check.update(payload);
                self.finish_check(&e.state, check)?;
                out.push((st.index, e, payload.to_vec()));
            }
        }
        Ok(out)
    }

    /// The parallelism of this operator in the checkpoint, if it is there.
    pub fn old_parallelism(&self) -> Option<u32> {
        self.operator().map(|op| op.parallelism)
    }

    /// This subtask's entry, if the operator is in the checkpoint. Inline
    /// (non-keyed) state belongs to a subtask index, so it needs the same
    /// parallelism as when it was taken.
    pub fn subtask(&self) -> Result<Option<&'a SubtaskSnapshot>, RestoreError> {
        let Some(op) = self.operator() else {
            return Ok(None);
        };
        if op.parallelism as usize != self.info.parallelism {
            return Err(self.reject(RestoreError::Rescale {
                uid: self.uid.to_owned(),
                checkpoint: self.checkpoint.id(),
                was: op.parallelism,
                now: self.info.parallelism,
            }));
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
    pub fn flag(&self, name: &str) -> Result<bool, RestoreError> {
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
    pub fn inline_unless_empty(&self, name: &str) -> Result<Option<&'a [u8]>, RestoreError> {
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

    /// Inline state `name` of every subtask of the checkpoint, indexed by
    /// old subtask (empty where one stored none), if the operator is in
    /// it: what a new subtask needs to take its share of per-subtask
    /// state at another parallelism (a sink's transactions, say). Its
    /// length is the old parallelism.
    pub fn inline_of_every_subtask(&self, name: &str) -> Option<Vec<&'a [u8]>> {
        let op = self.operator()?;
        let mut out = vec![&[][..]; op.parallelism as usize];
        for s in &op.subtasks {
            if let (Some(slot), Some(bytes)) = (out.get_mut(s.index as usize), s.inline(name)) {
                *slot = bytes;
            }
        }
        Some(out)
    }

    /// Rejects `what` found at byte `pos` of the block of `extent`: a
    /// malformed block makes the checkpoint unusable.
    pub fn malformed(&self, extent: &Extent, pos: usize, what: String) -> RestoreError {
        self.reject(RestoreError::MalformedBlock {
            state: extent.state.clone(),
            kind: extent.kind,
            key_groups: extent.key_groups,
            segment: extent.segment.clone(),
            offset: extent.offset,
            pos,
            what,
        })
    }

    /// Whether the checkpoint holds this operator at another parallelism
    /// than the restoring subtask's.
    pub fn rescaled(&self) -> bool {
        self.operator()
            .is_some_and(|op| op.parallelism as usize != self.info.parallelism)
    }

    /// Inline state `name` that every subtask holds a copy of (broadcast
    /// state): this subtask's at the checkpoint's parallelism, else that of
    /// old subtask `index % old parallelism`, so at any parallelism every
    /// new subtask gets a copy, as in Flink.
    pub fn inline_replicated(&self, name: &str) -> Result<Option<&'a [u8]>, RestoreError> {
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
    pub fn inline(&self, name: &str) -> Result<Option<&'a [u8]>, RestoreError> {
        Ok(self.subtask()?.and_then(|s| {
            s.inline_state
                .iter()
                .find(|i| i.name == name)
                .map(|i| i.bytes.as_slice())
        }))
    }
}

/// An old subtask's index, the extent of one of its channel states, and
/// the records it holds.
pub type SubtaskChannelState<'a> = (u32, &'a Extent, Vec<u8>);

/// An old subtask's index and its extents of one state.
pub type SubtaskExtents<'a> = (u32, Vec<&'a Extent>);

/// Shared by every worker of an attempt.
pub type SharedRestore = Option<Arc<RestoredCheckpoint>>;
