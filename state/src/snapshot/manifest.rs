//! The checkpoint [`Manifest`]: which extents of which segments hold each
//! operator subtask's state, stored as a validated rkyv archive with a
//! checksummed trailer, and [`write_atomically`], which makes it durable.
//!
//! The layout is documented in the [parent module](super).

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rkyv::rancor;
use rkyv::util::AlignedVec;

use super::error::{Result, SnapshotError};
use super::format::{BlockKind, Extent, MAX_STATE_NAME_LEN};
use crate::key_group::KeyGroupRange;

/// Magic number of the manifest trailer: the bytes `b"WRSM"`, read as a
/// little-endian `u32`.
pub const MANIFEST_MAGIC: u32 = u32::from_le_bytes(*b"WRSM");

/// Version of the manifest format this crate writes (5: version 4 whose
/// checkpoints may name a segment of an earlier checkpoint of the same
/// directory, `../chk-<id>/<segment>`, see [`referenced_segment`]; the
/// archive is version 4's). Version 4 (version 3 and the
/// snapshot's [`SnapshotKind`]), Version 3 (version 2 and the checkpoint's
/// [`Lineage`]) and version 2 (job name, extents' state names and inline
/// state, no lineage) are still read, as checkpoints; version 1 is not.
pub const MANIFEST_VERSION: u16 = 5;

/// The oldest manifest version this crate reads.
pub const MIN_MANIFEST_VERSION: u16 = 2;

/// Bytes of the manifest trailer.
pub const MANIFEST_TRAILER_LEN: usize = 20;

/// What one checkpoint holds: every operator's subtasks and their extents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The name of the job the checkpoint belongs to.
    pub job_name: String,
    /// The checkpoint's id (increasing per job).
    pub checkpoint_id: u64,
    /// When the checkpoint was triggered, in milliseconds since the epoch.
    pub timestamp_ms: u64,
    /// The job's max parallelism (number of key groups).
    pub max_parallelism: u32,
    /// One entry per stateful operator.
    pub operators: Vec<OperatorSnapshot>,
    /// Which run wrote the checkpoint, what it follows and what its state
    /// means; `None` in a manifest of format version 2.
    pub lineage: Option<Lineage>,
    /// A checkpoint or a savepoint; a checkpoint in a manifest of format
    /// version 2 or 3.
    pub kind: SnapshotKind,
}

/// What a snapshot is for, as Flink tells them apart: a *checkpoint* is
/// the runtime's, for recovery (retention deletes it, a restore of its own
/// directory claims it); a *savepoint* is the user's (taken on request,
/// self-contained, never deleted or moved by weir, only read by a
/// restore).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SnapshotKind {
    /// A checkpoint.
    #[default]
    Checkpoint,
    /// A savepoint.
    Savepoint,
}

impl SnapshotKind {
    /// The kind's byte in the manifest.
    fn as_u8(self) -> u8 {
        match self {
            Self::Checkpoint => 0,
            Self::Savepoint => 1,
        }
    }

    fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Checkpoint),
            1 => Some(Self::Savepoint),
            _ => None,
        }
    }

    /// `"checkpoint"` or `"savepoint"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Checkpoint => "checkpoint",
            Self::Savepoint => "savepoint",
        }
    }
}

impl std::fmt::Display for SnapshotKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a checkpoint comes from: the run (job id) that wrote it, the
/// checkpoint it follows, and the fingerprint of what its state means (the
/// job's name, operators, parameters and outputs, as `(key, value)` pairs
/// the runtime chooses), so that a restore can tell its own checkpoints
/// from another job's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lineage {
    /// The id of the run that wrote the checkpoint.
    pub job_id: String,
    /// The checkpoint this one follows: the run's previous checkpoint, or
    /// the checkpoint the run restored; `None` after a fresh start.
    pub parent: Option<u64>,
    /// What the state means, as `(key, value)` pairs.
    pub fingerprint: Vec<(String, String)>,
}

/// The state of one operator in a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorSnapshot {
    /// The operator's stable uid (how restore matches operators).
    pub uid: String,
    /// The operator's parallelism when the checkpoint was taken.
    pub parallelism: u32,
    /// One entry per subtask.
    pub subtasks: Vec<SubtaskSnapshot>,
}

/// The state of one operator subtask in a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtaskSnapshot {
    /// The subtask's index.
    pub index: u32,
    /// The key groups the subtask owned.
    pub key_groups: KeyGroupRange,
    /// The blocks holding the subtask's state (possibly in segments of
    /// earlier checkpoints, for incremental checkpoints).
    pub extents: Vec<Extent>,
    /// Small states kept in the manifest itself rather than in a segment
    /// (a source's position, a sink's pending transactions, a task's
    /// end-of-input flag); names are unique within the subtask.
    pub inline_state: Vec<InlineState>,
}

impl SubtaskSnapshot {
    /// The bytes of the inline state named `name`, if there is one.
    pub fn inline(&self, name: &str) -> Option<&[u8]> {
        self.inline_state
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.bytes.as_slice())
    }
}

/// A small named state stored in the manifest itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineState {
    /// The state's name: not empty, at most [`MAX_STATE_NAME_LEN`] bytes,
    /// unique within its subtask.
    pub name: String,
    /// The state's bytes, opaque here.
    pub bytes: Vec<u8>,
}

// The archived form: plain integers and strings, so bytecheck can validate
// any input; semantic checks happen when converting back.

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireManifest {
    job_name: String,
    checkpoint_id: u64,
    timestamp_ms: u64,
    max_parallelism: u32,
    operators: Vec<WireOperator>,
    lineage: Option<WireLineage>,
    kind: u8,
}

/// Format version 3: without the kind (a checkpoint).
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireManifestV3 {
    job_name: String,
    checkpoint_id: u64,
    timestamp_ms: u64,
    max_parallelism: u32,
    operators: Vec<WireOperator>,
    lineage: Option<WireLineage>,
}

/// Format version 2: without lineage.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireManifestV2 {
    job_name: String,
    checkpoint_id: u64,
    timestamp_ms: u64,
    max_parallelism: u32,
    operators: Vec<WireOperator>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireLineage {
    job_id: String,
    parent: Option<u64>,
    fingerprint: Vec<(String, String)>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireOperator {
    uid: String,
    parallelism: u32,
    subtasks: Vec<WireSubtask>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireSubtask {
    index: u32,
    key_group_start: u32,
    key_group_end: u32,
    extents: Vec<WireExtent>,
    inline_state: Vec<WireInline>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireInline {
    name: String,
    bytes: Vec<u8>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WireExtent {
    segment: String,
    offset: u64,
    length: u64,
    key_group_start: u32,
    key_group_end: u32,
    kind: u16,
    payload_crc32c: u32,
    state: String,
}

impl Manifest {
    /// The manifest file's bytes: the rkyv archive followed by the trailer.
    /// Fails, saying why, on a manifest that [`Manifest::from_bytes`] would
    /// refuse (a bad segment or state name, duplicate inline state names).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.check()
            .map_err(|e| SnapshotError::manifest(format!("cannot write: {e}")))?;
        let archive = rkyv::to_bytes::<rancor::Error>(&self.to_wire())
            .map_err(|e| SnapshotError::manifest(format!("cannot archive: {e}")))?;
        let mut out = Vec::with_capacity(archive.len() + MANIFEST_TRAILER_LEN);
        out.extend_from_slice(&archive);
        out.extend_from_slice(&MANIFEST_MAGIC.to_le_bytes());
        out.extend_from_slice(&MANIFEST_VERSION.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(archive.len() as u64).to_le_bytes());
        out.extend_from_slice(&manifest_crc(&archive, MANIFEST_VERSION).to_le_bytes());
        Ok(out)
    }

    /// Parses a manifest file's bytes, checking the trailer, the checksum,
    /// the archive (rkyv's checked access) and the values. Any input that
    /// is not a valid manifest is an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (archive, version) = check_trailer(bytes).map_err(SnapshotError::manifest)?;
        // rkyv reads the archive in place and needs it aligned; the input
        // slice may be anywhere.
        let mut aligned = AlignedVec::<16>::with_capacity(archive.len());
        aligned.extend_from_slice(archive);
        let invalid = |e: rancor::Error| SnapshotError::manifest(format!("invalid archive: {e}"));
        let wire = if version == 2 {
            let w = rkyv::from_bytes::<WireManifestV2, rancor::Error>(&aligned).map_err(invalid)?;
            WireManifest {
                job_name: w.job_name,
                checkpoint_id: w.checkpoint_id,
                timestamp_ms: w.timestamp_ms,
                max_parallelism: w.max_parallelism,
                operators: w.operators,
                lineage: None,
                kind: SnapshotKind::Checkpoint.as_u8(),
            }
        } else if version == 3 {
            let w = rkyv::from_bytes::<WireManifestV3, rancor::Error>(&aligned).map_err(invalid)?;
            WireManifest {
                job_name: w.job_name,
                checkpoint_id: w.checkpoint_id,
                timestamp_ms: w.timestamp_ms,
                max_parallelism: w.max_parallelism,
                operators: w.operators,
                lineage: w.lineage,
                kind: SnapshotKind::Checkpoint.as_u8(),
            }
        } else {
            rkyv::from_bytes::<WireManifest, rancor::Error>(&aligned).map_err(invalid)?
        };
        let manifest = Self::from_wire(wire).map_err(SnapshotError::manifest)?;
        // Only checkpoints of format 5 on refer to other checkpoints'
        // segments; a savepoint is self-contained.
        if version < 5 || manifest.kind == SnapshotKind::Savepoint {
            if let Some(e) = manifest.referenced_extents().next() {
                return Err(SnapshotError::manifest(format!(
                    "a {} of format {version} cannot refer to segment {:?} of another \
                     checkpoint",
                    manifest.kind, e.segment
                )));
            }
        }
        Ok(manifest)
    }

    /// Every extent in a segment of another checkpoint (see
    /// [`referenced_segment`]).
    pub fn referenced_extents(&self) -> impl Iterator<Item = &Extent> + '_ {
        self.operators
            .iter()
            .flat_map(|o| o.subtasks.iter())
            .flat_map(|t| t.extents.iter())
            .filter(|e| referenced_segment(&e.segment).is_some())
    }

    /// The ids of the earlier checkpoints whose segments this one refers
    /// to, in increasing order (empty for a full checkpoint).
    pub fn referenced_checkpoints(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .referenced_extents()
            .filter_map(|e| referenced_segment(&e.segment).map(|(id, _)| id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Reads and parses the manifest file at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = fs::read(path).map_err(|e| SnapshotError::io("read manifest", path, e))?;
        Self::from_bytes(&bytes).map_err(|e| match e {
            SnapshotError::Manifest { what } => {
                SnapshotError::manifest(format!("{}: {what}", path.display()))
            }
            other => other,
        })
    }

    /// Writes the manifest to `dir/file_name` with [`write_atomically`].
    pub fn write(&self, dir: impl AsRef<Path>, file_name: &str) -> Result<PathBuf> {
        write_atomically(dir, file_name, &self.to_bytes()?)
    }

    /// Checks what the types do not: names of segments and states.
    fn check(&self) -> Result<(), String> {
        for o in &self.operators {
            for t in &o.subtasks {
                t.check()
                    .map_err(|e| format!("operator {:?}: subtask {}: {e}", o.uid, t.index))?;
            }
        }
        Ok(())
    }

    fn to_wire(&self) -> WireManifest {
        WireManifest {
            job_name: self.job_name.clone(),
            checkpoint_id: self.checkpoint_id,
            timestamp_ms: self.timestamp_ms,
            max_parallelism: self.max_parallelism,
            operators: self
                .operators
                .iter()
                .map(|o| WireOperator {
                    uid: o.uid.clone(),
                    parallelism: o.parallelism,
                    subtasks: o.subtasks.iter().map(SubtaskSnapshot::to_wire).collect(),
                })
                .collect(),
            lineage: self.lineage.as_ref().map(|l| WireLineage {
                job_id: l.job_id.clone(),
                parent: l.parent,
                fingerprint: l.fingerprint.clone(),
            }),
            kind: self.kind.as_u8(),
        }
    }

    fn from_wire(w: WireManifest) -> Result<Self, String> {
        let kind = SnapshotKind::from_u8(w.kind)
            .ok_or_else(|| format!("unknown snapshot kind {}", w.kind))?;
        let operators = w
            .operators
            .into_iter()
            .map(|o| {
                let subtasks = o
                    .subtasks
                    .into_iter()
                    .map(SubtaskSnapshot::from_wire)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("operator {:?}: {e}", o.uid))?;
                Ok(OperatorSnapshot {
                    uid: o.uid,
                    parallelism: o.parallelism,
                    subtasks,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Self {
            job_name: w.job_name,
            checkpoint_id: w.checkpoint_id,
            timestamp_ms: w.timestamp_ms,
            max_parallelism: w.max_parallelism,
            operators,
            lineage: w.lineage.map(|l| Lineage {
                job_id: l.job_id,
                parent: l.parent,
                fingerprint: l.fingerprint,
            }),
            kind,
        })
    }
}

impl SubtaskSnapshot {
    /// Checks the extents' segment and state names and the inline states'
    /// names.
    fn check(&self) -> Result<(), String> {
        for e in &self.extents {
            check_extent_segment(&e.segment).map_err(|e| format!("extent: {e}"))?;
            check_state_name(&e.state).map_err(|e| format!("extent: {e}"))?;
        }
        let mut names = HashSet::with_capacity(self.inline_state.len());
        for s in &self.inline_state {
            if s.name.is_empty() {
                return Err("inline state with an empty name".into());
            }
            check_state_name(&s.name).map_err(|e| format!("inline {e}"))?;
            if !names.insert(s.name.as_str()) {
                return Err(format!("two inline states named {:?}", s.name));
            }
        }
        Ok(())
    }

    fn to_wire(&self) -> WireSubtask {
        WireSubtask {
            index: self.index,
            key_group_start: self.key_groups.start(),
            key_group_end: self.key_groups.end(),
            extents: self
                .extents
                .iter()
                .map(|e| WireExtent {
                    segment: e.segment.clone(),
                    offset: e.offset,
                    length: e.length,
                    key_group_start: e.key_groups.start(),
                    key_group_end: e.key_groups.end(),
                    kind: e.kind.as_u16(),
                    payload_crc32c: e.payload_crc32c,
                    state: e.state.clone(),
                })
                .collect(),
            inline_state: self
                .inline_state
                .iter()
                .map(|s| WireInline {
                    name: s.name.clone(),
                    bytes: s.bytes.clone(),
                })
                .collect(),
        }
    }

    fn from_wire(w: WireSubtask) -> Result<Self, String> {
        let index = w.index;
        let key_groups = range(w.key_group_start, w.key_group_end)
            .map_err(|e| format!("subtask {index}: {e}"))?;
        let extents = w
            .extents
            .into_iter()
            .map(|e| {
                Ok(Extent {
                    kind: BlockKind::from_u16(e.kind)
                        .ok_or_else(|| format!("unknown block kind {}", e.kind))?,
                    key_groups: range(e.key_group_start, e.key_group_end)?,
                    segment: e.segment,
                    offset: e.offset,
                    length: e.length,
                    payload_crc32c: e.payload_crc32c,
                    state: e.state,
                })
            })
            .collect::<Result<_, String>>()
            .map_err(|e| format!("subtask {index}: extent: {e}"))?;
        let inline_state = w
            .inline_state
            .into_iter()
            .map(|s| InlineState {
                name: s.name,
                bytes: s.bytes,
            })
            .collect();
        let subtask = Self {
            index,
            key_groups,
            extents,
            inline_state,
        };
        subtask
            .check()
            .map_err(|e| format!("subtask {index}: {e}"))?;
        Ok(subtask)
    }
}

/// A key-group range, or why `[start, end)` is not one.
fn range(start: u32, end: u32) -> Result<KeyGroupRange, String> {
    if start > end {
        return Err(format!("bad key-group range: start {start} > end {end}"));
    }
    Ok(KeyGroupRange::new(start, end))
}

/// Segment names are plain file names: restore joins them to a directory,
/// so they must not reach outside it.
/// The checkpoint and segment a segment name of an incremental
/// checkpoint refers to: `../chk-<id>/<segment>` names segment `segment`
/// of checkpoint `id`, a sibling directory of the manifest's; `None` for a
/// plain name (a segment of the manifest's own directory) or anything
/// else.
pub fn referenced_segment(name: &str) -> Option<(u64, &str)> {
    let rest = name.strip_prefix("../chk-")?;
    let (id, segment) = rest.split_once('/')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || id.len() > 19 {
        return None;
    }
    check_segment_name(segment).ok()?;
    Some((id.parse().ok()?, segment))
}

fn check_extent_segment(name: &str) -> Result<(), String> {
    if referenced_segment(name).is_some() {
        return Ok(());
    }
    check_segment_name(name)
}

fn check_segment_name(name: &str) -> Result<(), String> {
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(())
    } else {
        Err(format!("bad segment name {name:?}"))
    }
}

/// State names are short: at most [`MAX_STATE_NAME_LEN`] bytes.
fn check_state_name(name: &str) -> Result<(), String> {
    if name.len() <= MAX_STATE_NAME_LEN {
        Ok(())
    } else {
        Err(format!(
            "state name {name:?} is {} bytes long, more than {MAX_STATE_NAME_LEN}",
            name.len()
        ))
    }
}

/// The archive bytes of a manifest file and its format version, after
/// checking its trailer and checksum; the error says what is wrong.
fn check_trailer(bytes: &[u8]) -> Result<(&[u8], u16), String> {
    let Some(archive_len) = bytes.len().checked_sub(MANIFEST_TRAILER_LEN) else {
        return Err(format!(
            "truncated: {} bytes, shorter than the {MANIFEST_TRAILER_LEN}-byte trailer",
            bytes.len()
        ));
    };
    let (archive, t) = bytes.split_at(archive_len);
    let u16_at = |i: usize| u16::from_le_bytes([t[i], t[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
    let magic = u32_at(0);
    if magic != MANIFEST_MAGIC {
        return Err(format!(
            "bad trailer magic (expected {MANIFEST_MAGIC:#010x} \"WRSM\", found {magic:#010x})"
        ));
    }
    let version = u16_at(4);
    if !(MIN_MANIFEST_VERSION..=MANIFEST_VERSION).contains(&version) {
        return Err(format!(
            "unsupported manifest version {version} (this build reads versions \
             {MIN_MANIFEST_VERSION} to {MANIFEST_VERSION})"
        ));
    }
    let reserved = u16_at(6);
    if reserved != 0 {
        return Err(format!("reserved trailer field is {reserved:#06x}, not 0"));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&t[8..16]);
    let length = u64::from_le_bytes(len);
    if length != archive_len as u64 {
        return Err(format!(
            "length mismatch: trailer says {length} archive bytes, file has {archive_len}"
        ));
    }
    let stored = u32_at(16);
    let computed = manifest_crc(archive, version);
    if stored != computed {
        return Err(format!(
            "checksum mismatch (expected {stored:#010x}, found {computed:#010x})"
        ));
    }
    Ok((archive, version))
}

/// The trailer's checksum of `archive` in a manifest of format `version`:
/// from format 5 on it covers the version too, so that a flipped version
/// bit cannot turn an incremental checkpoint's manifest into a format-4
/// one with the same archive (which would then be refused for its
/// references, not reported as corrupt).
fn manifest_crc(archive: &[u8], version: u16) -> u32 {
    let crc = crc32c::crc32c(archive);
    if version >= 5 {
        crc32c::crc32c_append(crc, &version.to_le_bytes())
    } else {
        crc
    }
}

/// Distinguishes the temporary files of concurrent writers in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Makes `dir/file_name` hold exactly `bytes`, all or nothing, durably:
/// writes a temporary file in `dir`, fsyncs it, renames it to `file_name`
/// and fsyncs `dir`. A crash leaves either no file or the whole file (and
/// perhaps a stray `.*.tmp.*` file to clean up). Returns the final path.
pub fn write_atomically(dir: impl AsRef<Path>, file_name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let dir = dir.as_ref();
    let target = dir.join(file_name);
    if check_segment_name(file_name).is_err() {
        let e = std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the file name must be a plain name inside the directory",
        );
        return Err(SnapshotError::io("write", target, e));
    }
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{file_name}.tmp.{}.{n}", std::process::id()));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| SnapshotError::io("create", &temp, e))?;
        f.write_all(bytes)
            .map_err(|e| SnapshotError::io("write", &temp, e))?;
        f.sync_all()
            .map_err(|e| SnapshotError::io("fsync", &temp, e))?;
        fs::rename(&temp, &target).map_err(|e| SnapshotError::io("rename into place", &target, e))
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SnapshotError::io("fsync directory", dir, e))?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_is_wrsm_on_disk() {
        assert_eq!(&MANIFEST_MAGIC.to_le_bytes(), b"WRSM");
    }

    #[test]
    fn trailer_errors_say_what_is_wrong() {
        let m = Manifest {
            job_name: "job".into(),
            checkpoint_id: 1,
            timestamp_ms: 2,
            max_parallelism: 128,
            operators: vec![],
            lineage: None,
            kind: SnapshotKind::Checkpoint,
        };
        let good = m.to_bytes().unwrap();
        let n = good.len();
        let what = |b: &[u8]| match Manifest::from_bytes(b) {
            Err(SnapshotError::Manifest { what }) => what,
            other => panic!("expected a manifest error, got {other:?}"),
        };
        assert!(what(&good[..5]).starts_with("truncated"));
        let flip = |i: usize| {
            let mut b = good.clone();
            b[i] ^= 1;
            what(&b)
        };
        assert!(flip(n - 20).starts_with("bad trailer magic"));
        // Version 4 with bit 4 flipped is 20: no version this build reads
        // (bit 0 would give 5, bit 1 6: not read either, but bit 4 is the
        // flip this test has always made).
        let mut unsupported = good.clone();
        unsupported[n - 16] ^= 0x10;
        assert!(what(&unsupported).starts_with("unsupported manifest version"));
        assert!(flip(n - 14).starts_with("reserved trailer field"));
        assert!(flip(n - 12).starts_with("length mismatch"));
        assert!(flip(n - 4).starts_with("checksum mismatch"));
        assert!(flip(0).starts_with("checksum mismatch"));
    }

    #[test]
    fn bad_values_in_a_valid_archive_are_rejected() {
        let extent = |segment: &str, start, end, kind| WireExtent {
            segment: segment.into(),
            offset: 0,
            length: 4096,
            key_group_start: start,
            key_group_end: end,
            kind,
            payload_crc32c: 0,
            state: "count".into(),
        };
        let inline = |names: &[&str]| {
            names
                .iter()
                .map(|&n| WireInline {
                    name: n.into(),
                    bytes: vec![1, 2],
                })
                .collect::<Vec<_>>()
        };
        let wire_with = |kg: (u32, u32), e: WireExtent, inline_state| WireManifest {
            job_name: "job".into(),
            checkpoint_id: 1,
            timestamp_ms: 1,
            max_parallelism: 8,
            operators: vec![WireOperator {
                uid: "op".into(),
                parallelism: 1,
                subtasks: vec![WireSubtask {
                    index: 0,
                    key_group_start: kg.0,
                    key_group_end: kg.1,
                    extents: vec![e],
                    inline_state,
                }],
            }],
            lineage: None,
            kind: 0,
        };
        let wire = |kg, e| wire_with(kg, e, inline(&["position", "done"]));
        let parse = |w: &WireManifest| {
            let archive = rkyv::to_bytes::<rancor::Error>(w).unwrap();
            let mut bytes = archive.to_vec();
            bytes.extend_from_slice(&MANIFEST_MAGIC.to_le_bytes());
            bytes.extend_from_slice(&MANIFEST_VERSION.to_le_bytes());
            bytes.extend_from_slice(&0u16.to_le_bytes());
            bytes.extend_from_slice(&(archive.len() as u64).to_le_bytes());
            bytes.extend_from_slice(&manifest_crc(&archive, MANIFEST_VERSION).to_le_bytes());
            Manifest::from_bytes(&bytes).map_err(|e| e.to_string())
        };
        assert!(parse(&wire((0, 8), extent("s", 0, 8, 1))).is_ok());
        for (w, what) in [
            (wire((5, 4), extent("s", 0, 8, 1)), "bad key-group range"),
            (wire((0, 8), extent("s", 3, 2, 1)), "bad key-group range"),
            (wire((0, 8), extent("s", 0, 8, 0)), "unknown block kind 0"),
            (wire((0, 8), extent("s", 0, 8, 9)), "unknown block kind 9"),
            (wire((0, 8), extent("../s", 0, 8, 1)), "bad segment name"),
            (wire((0, 8), extent("", 0, 8, 1)), "bad segment name"),
            (wire((0, 8), extent("..", 0, 8, 1)), "bad segment name"),
            (
                wire(
                    (0, 8),
                    WireExtent {
                        state: "s".repeat(256),
                        ..extent("s", 0, 8, 1)
                    },
                ),
                "is 256 bytes long, more than 255",
            ),
            (
                wire_with((0, 8), extent("s", 0, 8, 1), inline(&["a", "b", "a"])),
                "two inline states named \"a\"",
            ),
            (
                wire_with((0, 8), extent("s", 0, 8, 1), inline(&[""])),
                "inline state with an empty name",
            ),
            (
                wire_with((0, 8), extent("s", 0, 8, 1), inline(&[&"n".repeat(256)])),
                "inline state name",
            ),
        ] {
            let err = parse(&w).unwrap_err();
            assert!(
                err.contains(what) && err.contains("operator \"op\""),
                "{err}"
            );
        }
        let savepoint = WireManifest {
            kind: 1,
            ..wire((0, 8), extent("s", 0, 8, 1))
        };
        assert_eq!(parse(&savepoint).unwrap().kind, SnapshotKind::Savepoint);
        let unknown = WireManifest {
            kind: 2,
            ..wire((0, 8), extent("s", 0, 8, 1))
        };
        assert!(parse(&unknown)
            .unwrap_err()
            .contains("unknown snapshot kind 2"));
    }

    #[test]
    fn invalid_manifests_are_not_written() {
        let subtask = |extent_state: &str, inline: &[&str]| SubtaskSnapshot {
            index: 3,
            key_groups: KeyGroupRange::new(0, 4),
            extents: vec![Extent {
                segment: "seg".into(),
                offset: 0,
                length: 4096,
                key_groups: KeyGroupRange::new(0, 4),
                kind: BlockKind::KeyedState,
                payload_crc32c: 0,
                state: extent_state.into(),
            }],
            inline_state: inline
                .iter()
                .map(|&n| InlineState {
                    name: n.into(),
                    bytes: vec![],
                })
                .collect(),
        };
        let manifest = |t| Manifest {
            job_name: "j".into(),
            checkpoint_id: 1,
            timestamp_ms: 1,
            max_parallelism: 4,
            operators: vec![OperatorSnapshot {
                uid: "agg".into(),
                parallelism: 1,
                subtasks: vec![t],
            }],
            lineage: None,
            kind: SnapshotKind::Savepoint,
        };
        let ok = manifest(subtask(&"s".repeat(255), &["x", "y"]));
        assert_eq!(Manifest::from_bytes(&ok.to_bytes().unwrap()).unwrap(), ok);
        assert_eq!(ok.operators[0].subtasks[0].inline("y"), Some(&[][..]));
        assert_eq!(ok.operators[0].subtasks[0].inline("z"), None);
        for (t, what) in [
            (subtask(&"s".repeat(256), &[]), "more than 255"),
            (subtask("", &["x", "x"]), "two inline states named \"x\""),
            (subtask("", &[""]), "inline state with an empty name"),
        ] {
            let err = manifest(t).to_bytes().unwrap_err().to_string();
            assert!(
                err.contains(what) && err.contains("cannot write: operator \"agg\": subtask 3: "),
                "{err}"
            );
        }
    }
}
