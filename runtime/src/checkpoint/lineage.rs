//! Lineage: which run wrote a checkpoint, which checkpoint it follows, and
//! what its state means, so that a restore can tell a checkpoint of this
//! job's timeline from an abandoned one or another job's.
//!
//! Every run of a job gets a [`new_job_id`]; every checkpoint it writes
//! records that id, its parent (the run's previous checkpoint, or the one
//! the run restored) and the job's [`Fingerprint`]: the job's name, max
//! parallelism, operator uids, declared parameters and output directories.
//! A restore compares the checkpoint's fingerprint with the job's before
//! anything is changed ([`Fingerprint::mismatch`]); a value holding a `/`
//! is compared as a path, the same however it is written (`/data/out/`
//! and `/data/./out` are `/data/out`). Which checkpoints of the directory
//! belong to the current timeline is the checkpoint directory's
//! `_timeline` ([`crate::checkpoint::storage::Timeline`]).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

/// Fingerprint key of the job's name.
pub const JOB: &str = "job";
/// Fingerprint key of the job's max parallelism.
pub const MAX_PARALLELISM: &str = "max-parallelism";
/// Fingerprint key of an operator uid (one entry per operator).
pub const OPERATOR: &str = "operator";
/// Fingerprint key prefix of a declared parameter (`parameter <name>`).
pub const PARAMETER: &str = "parameter";
/// Fingerprint key of a declared output directory (one entry each).
pub const OUTPUT: &str = "output";

/// What a job's state means: `(key, value)` pairs, sorted, without
/// duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint(Vec<(String, String)>);

impl Fingerprint {
    /// The fingerprint of these entries (sorted, duplicates dropped).
    pub fn new(entries: impl IntoIterator<Item = (String, String)>) -> Self {
        let set: BTreeSet<(String, String)> = entries.into_iter().collect();
        Self(set.into_iter().collect())
    }

    /// The entries, sorted.
    pub fn entries(&self) -> &[(String, String)] {
        &self.0
    }

    fn values(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn keys(&self) -> BTreeSet<&str> {
        self.0.iter().map(|(k, _)| k.as_str()).collect()
    }

    /// What differs between a checkpoint whose state means `stored` and
    /// this job, or `None` when the checkpoint's state fits it: the same
    /// name, max parallelism, parameters and outputs, and every operator of
    /// the checkpoint in this job (a new operator starts empty, as in
    /// Flink).
    pub fn mismatch(&self, stored: &Fingerprint) -> Option<String> {
        self.mismatch_with(stored, "the checkpoint")
    }

    /// [`Self::mismatch`], naming where `stored` was read as `there` (an
    /// output directory's lineage is no checkpoint).
    pub fn mismatch_with(&self, stored: &Fingerprint, there: &str) -> Option<String> {
        let mut what: Vec<String> = self
            .missing_operators(stored)
            .iter()
            .map(|uid| format!("operator `{uid}` of {there} is not in this job"))
            .collect();
        what.extend(self.differences(stored, false, there));
        (!what.is_empty()).then(|| what.join("; "))
    }

    /// The operator uids of a checkpoint whose state means `stored` that
    /// this job does not have: the state Flink's
    /// `--allow-non-restored-state` skips.
    pub fn missing_operators(&self, stored: &Fingerprint) -> Vec<String> {
        let here = self.values(OPERATOR);
        stored
            .values(OPERATOR)
            .into_iter()
            .filter(|uid| !here.contains(uid))
            .map(str::to_owned)
            .collect()
    }

    /// What differs besides operators (name, max parallelism, parameters,
    /// outputs), or `None`: what must match for any restore, of a
    /// checkpoint or a savepoint, with or without
    /// `--allow-non-restored-state`. With `outputs_may_go` (operators of
    /// the snapshot are missing from the job, and their state is skipped),
    /// the snapshot may declare outputs the job no longer writes (those of
    /// a removed sink); every output of the job must still be the
    /// snapshot's.
    pub fn mismatch_but_operators(
        &self,
        stored: &Fingerprint,
        outputs_may_go: bool,
    ) -> Option<String> {
        self.differences(stored, outputs_may_go, "the checkpoint")
    }

    fn differences(
        &self,
        stored: &Fingerprint,
        outputs_may_go: bool,
        read_from: &str,
    ) -> Option<String> {
        let mut what = Vec::new();
        let keys: BTreeSet<&str> = self.keys().union(&stored.keys()).copied().collect();
        for key in keys {
            let (here, there) = (self.values(key), stored.values(key));
            if key == OPERATOR {
                continue;
            }
            let (paths_here, paths_there) = (as_paths(&here), as_paths(&there));
            if key == OUTPUT && outputs_may_go && paths_here.is_subset(&paths_there) {
                continue;
            }
            if paths_here != paths_there && !made_absolute(&here, &there) {
                let show = |v: &[&str]| match v {
                    [] => "none".to_string(),
                    [one] => one.to_string(),
                    many => many.join(", "),
                };
                what.push(format!(
                    "{key}: {} in {read_from}, {} in this job",
                    show(&there),
                    show(&here)
                ));
            }
        }
        (!what.is_empty()).then(|| what.join("; "))
    }
}

/// Whether a parameter's one value `there`, a relative path as older weir
/// recorded a SQL table's input directory, is the absolute path `here`
/// this job records (`in` and `/jobs/a/in`): a checkpoint that did not
/// say which directory it was relative to restores as before. (A
/// checkpoint recording the absolute path tells another working
/// directory's `in` apart.)
fn made_absolute(here: &[&str], there: &[&str]) -> bool {
    let ([here], [there]) = (here, there) else {
        return false;
    };
    let (here, there) = (std::path::Path::new(here), std::path::Path::new(there));
    here.is_absolute()
        && there.is_relative()
        && !there.as_os_str().is_empty()
        && !there
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        && here.ends_with(there)
}

/// `values` compared as what they name: a value holding a `/` is a path,
/// the same path however it is written (`/data/out/` and `/data/./out`
/// are `/data/out`), as a job run again with its directory written another
/// way is the same job; others as they are.
fn as_paths(values: &[&str]) -> BTreeSet<String> {
    values
        .iter()
        .map(|v| {
            if v.contains('/') {
                let path: std::path::PathBuf = std::path::Path::new(v).components().collect();
                path.to_string_lossy().into_owned()
            } else {
                (*v).to_owned()
            }
        })
        .collect()
}

/// A new job id: 32 hex digits, random (from the kernel), unique per run.
pub fn new_job_id() -> String {
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if random.is_err() {
        // No /dev/urandom: the clock and the process id, mixed.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = nanos ^ (u128::from(std::process::id()) << 96);
        bytes = mix(seed).to_le_bytes();
    }
    let mut id = String::with_capacity(32);
    for b in bytes {
        let _ = write!(id, "{b:02x}");
    }
    id
}

/// splitmix64 over both halves of `x`.
fn mix(x: u128) -> u128 {
    let half = |z: u64| {
        let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (u128::from(half((x >> 64) as u64)) << 64) | u128::from(half(x as u64))
}

#[cfg(test)]
mod tests;
