//! The parameters of the built-in jobs, as configuration keys beside
//! weir's own: which job `weir run` runs (`job.name`) and its size, pace and
//! run times (`job.records`, `job.keys`, `job.rate`, `job.warmup`,
//! `job.duration`), and the TTL job's time to live and wait (`job.ttl`,
//! `job.wait`). They belong to the benchmark jobs, not to the runtime,
//! so they live here and reach the runtime's loader as a
//! [`KeySet`](weir_runtime::config::KeySet).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use weir_runtime::config::{Key, KeySet};
use weir_runtime::core::units::format_duration;

/// The built-in jobs `weir run` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JobName {
    /// A small job that shows weir working end to end.
    #[default]
    Quickstart,
    /// Workload W1.
    W1,
    /// Workload W2 (event-time tumbling window).
    W2,
    /// Workload W3 (timed: warm-up, then a recorded run).
    W3,
}

/// What `job.name` accepts, for error messages.
const JOB_EXPECTED: &str = "one of quickstart, w1, w2, w3";

impl JobName {
    /// Every job, in the order error messages list them.
    pub const ALL: [JobName; 4] = [JobName::Quickstart, JobName::W1, JobName::W2, JobName::W3];

    /// The job's name as written in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            JobName::Quickstart => "quickstart",
            JobName::W1 => "w1",
            JobName::W2 => "w2",
            JobName::W3 => "w3",
        }
    }
}

impl fmt::Display for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`JobName`] from text that names no job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job {0:?}: expected {JOB_EXPECTED}")]
pub struct UnknownJobName(pub String);

impl FromStr for JobName {
    type Err = UnknownJobName;

    /// Exact lowercase names only, so a file means the same on every system.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobName::ALL
            .into_iter()
            .find(|job| job.as_str() == s)
            .ok_or_else(|| UnknownJobName(s.to_string()))
    }
}

/// The type of the quickstart's user ids (`job.key-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyType {
    /// `u64` ids.
    #[default]
    Integer,
    /// `String` ids (`user-<n>`), variable-size keys on the heap.
    String,
    /// `CompactString` ids (`user-<n>`): variable-size keys that live
    /// inline up to 24 bytes.
    CompactString,
}

/// What `job.key-type` accepts, for error messages.
const KEY_TYPE_EXPECTED: &str = "integer, string or compact-string";

impl KeyType {
    /// The name `job.key-type` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Integer => "integer",
            KeyType::String => "string",
            KeyType::CompactString => "compact-string",
        }
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KeyType {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        [KeyType::Integer, KeyType::String, KeyType::CompactString]
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(())
    }
}

/// The built-in jobs' parameters (the `job.*` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobParams {
    /// `job.name`: which built-in job `weir run` runs.
    pub job: JobName,
    /// `job.records`: records the bounded sources emit in total; `None` = the job's default.
    pub records: Option<u64>,
    /// `job.keys`: distinct keys; `None` = the job's default.
    pub keys: Option<u64>,
    /// `job.rate`: records/s over all source subtasks; `None` = unpaced.
    pub rate: Option<u64>,
    /// `job.key-type`: the quickstart's user id type.
    pub key_type: KeyType,
    /// `job.warmup`: W3's warm-up, not recorded.
    pub warmup: Duration,
    /// `job.duration`: W3's recorded run time; W4's source run time.
    pub duration: Duration,
    /// `job.ttl`: the TTL job's state time-to-live.
    pub ttl: Duration,
    /// `job.wait`: how long the TTL job waits after its last key before
    /// it measures.
    pub wait: Duration,
    /// `job.sql-file`: a Flink SQL script `weir run` runs instead of a
    /// built-in job (relative paths from the working directory).
    pub sql_file: Option<std::path::PathBuf>,
}

impl Default for JobParams {
    fn default() -> Self {
        Self {
            job: JobName::Quickstart,
            records: None,
            keys: None,
            rate: None,
            key_type: KeyType::Integer,
            warmup: Duration::from_secs(5),
            duration: Duration::from_secs(20),
            ttl: Duration::from_secs(10),
            wait: Duration::from_secs(60),
            sql_file: None,
        }
    }
}

/// An optional count in config syntax (`unset` when absent).
fn opt(n: Option<u64>) -> String {
    n.map_or_else(|| "unset".to_string(), |n| n.to_string())
}

impl KeySet for JobParams {
    fn keys() -> &'static [Key<JobParams>] {
        JOB_KEYS
    }
}

/// The `job.*` keys, in documentation order.
pub const JOB_KEYS: &[Key<JobParams>] = &[
    Key {
        name: "job.name",
        description: "which built-in job `weir run` runs: quickstart, w1, w2 or w3",
        get: |p| p.job.to_string(),
        set: |p, s| {
            let job = s.text().and_then(|t| t.parse().ok());
            p.job = s.check(job, JOB_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "job.records",
        description: "N: records the bounded sources emit in total (at least 1); for a SQL job, the rows of each generated source in place of its table's (datagen's number-of-rows, nexmark's events.num); unset = the job's default",
        get: |p| opt(p.records),
        set: |p, s| {
            p.records = s.positive_or_unset()?;
            Ok(())
        },
    },
    Key {
        name: "job.keys",
        description: "K: distinct keys (at least 1); unset = the job's default",
        get: |p| opt(p.keys),
        set: |p, s| {
            p.keys = s.positive_or_unset()?;
            Ok(())
        },
    },
    Key {
        name: "job.rate",
        description: "source pacing in records/s in total over all source subtasks (at least 1); for a SQL job, each generated source's rate in place of its table's (datagen's rows-per-second, nexmark's tps); unset = unpaced (SQL: the tables' own)",
        get: |p| opt(p.rate),
        set: |p, s| {
            p.rate = s.positive_or_unset()?;
            Ok(())
        },
    },
    Key {
        name: "job.key-type",
        description: "the quickstart's user ids: integer (u64), string (`user-<n>` as `String`) or compact-string (`user-<n>` as `CompactString`, inline up to 24 bytes): variable-size keys in state and checkpoints",
        get: |p| p.key_type.to_string(),
        set: |p, s| {
            let t = s.text().and_then(|t| t.parse().ok());
            p.key_type = s.check(t, KEY_TYPE_EXPECTED)?;
            Ok(())
        },
    },
    Key {
        name: "job.warmup",
        description: "W3: warm-up time that is run but not recorded",
        get: |p| format_duration(p.warmup),
        set: |p, s| {
            p.warmup = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "job.duration",
        description: "W3: recorded run time; W4: how long the source runs (`weir bench w4` runs 60s unless `--duration` or `--set job.duration` says otherwise)",
        get: |p| format_duration(p.duration),
        set: |p, s| {
            p.duration = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "job.ttl",
        description: "`weir bench ttl`: the processing-time TTL of its keyed state",
        get: |p| format_duration(p.ttl),
        set: |p, s| {
            p.ttl = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "job.wait",
        description: "`weir bench ttl`: how long after its last key it measures the state and RSS",
        get: |p| format_duration(p.wait),
        set: |p, s| {
            p.wait = s.duration()?;
            Ok(())
        },
    },
    Key {
        name: "job.sql-file",
        description: "a Flink SQL script (.sql) that `weir run` runs with the rest of the config, as `weir sql FILE` does; unset = job.name's built-in job",
        get: |p| {
            p.sql_file
                .as_ref()
                .map_or_else(|| "unset".to_string(), |f| f.display().to_string())
        },
        set: |p, s| {
            let t = s.check(s.text().filter(|t| !t.trim().is_empty()), "the path of a .sql file")?;
            p.sql_file = if t == "unset" { None } else { Some(t.into()) };
            Ok(())
        },
    },
];

#[cfg(test)]
mod tests;
