//! weir's configuration: the keys, their defaults, and how a TOML file and
//! `--set key=value` overrides become one validated [`Config`].
//!
//! This module owns the key names (Flink's where Flink has the concept), the
//! value formats (Flink's durations and memory sizes), the error messages a
//! user sees for a bad file, and [`KEYS`], the one list of keys from which
//! `configs/README.md` is checked so the documentation cannot drift.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// Documentation of one configuration key: its name, its default rendered in
/// config syntax (what [`Config::get`] returns for a default config), and
/// what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// The key's full dotted name, e.g. `execution.buffer-timeout`.
    pub key: &'static str,
    /// The default value, exactly as [`Config::get`] renders it.
    pub default: &'static str,
    /// One line saying what the key controls.
    pub description: &'static str,
}

/// Every configuration key, in documentation order. This is the single source
/// of truth: `configs/README.md` is tested against it, and [`Config::to_toml`]
/// writes keys in this order.
#[rustfmt::skip] // one key per entry, like the table in configs/README.md
pub const KEYS: &[KeyDoc] = &[
    KeyDoc { key: "job.name", default: "quickstart",
        description: "which built-in job `weir run` runs: quickstart, w1 or w3" },
    KeyDoc { key: "job.records", default: "unset",
        description: "N: records the bounded sources emit in total (at least 1); unset = the job's default" },
    KeyDoc { key: "job.keys", default: "unset",
        description: "K: distinct keys (at least 1); unset = the job's default" },
    KeyDoc { key: "job.rate", default: "unset",
        description: "source pacing in records/s in total over all source subtasks (at least 1); unset = unpaced" },
    KeyDoc { key: "job.warmup", default: "5s",
        description: "W3: warm-up time that is run but not recorded" },
    KeyDoc { key: "job.duration", default: "20s",
        description: "W3: recorded run time" },
    KeyDoc { key: "parallelism.default", default: "unset",
        description: "number of workers (one pinned per core) and every operator's default parallelism (at least 1); unset = every core the process may use" },
    KeyDoc { key: "pipeline.max-parallelism", default: "128",
        description: "number of key groups, 1 to 32768; must not be below `parallelism.default`" },
    KeyDoc { key: "execution.buffer-timeout", default: "100ms",
        description: "a partly filled output buffer is sent at most this long after its first record; `0ms` sends after every record" },
    KeyDoc { key: "taskmanager.memory.segment-size", default: "32kb",
        description: "capacity of one network buffer, 64b to 16mb" },
    KeyDoc { key: "taskmanager.network.memory.buffers-per-channel", default: "4",
        description: "buffers that may be in flight on one channel (the ring's credit), 1 to 1024" },
    KeyDoc { key: "taskmanager.network.memory.floating-buffers-per-gate", default: "8",
        description: "extra buffers in each worker's pool beyond those per channel, 0 to 65536" },
    KeyDoc { key: "weir.worker.pin-cores", default: "true",
        description: "pin each worker thread to its own core" },
    KeyDoc { key: "weir.worker.spin-before-park", default: "50us",
        description: "how long an idle worker spins before it parks" },
    KeyDoc { key: "weir.progress.interval", default: "1s",
        description: "interval of progress lines on stderr; `0ms` turns them off" },
];

/// The built-in jobs `weir run` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JobName {
    /// A small job that shows weir working end to end.
    #[default]
    Quickstart,
    /// Workload W1.
    W1,
    /// Workload W3 (timed: warm-up, then a recorded run).
    W3,
}

impl JobName {
    /// Every job, in the order error messages list them.
    pub const ALL: [JobName; 3] = [JobName::Quickstart, JobName::W1, JobName::W3];

    /// The job's name as written in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            JobName::Quickstart => "quickstart",
            JobName::W1 => "w1",
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

/// Why a configuration could not be loaded. Every variant names what the user
/// has to fix; the CLI maps all of them to exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", .path.display())]
    Io {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not valid TOML (or defines one key twice).
    #[error("invalid TOML in {origin}: {message}")]
    Parse {
        /// The file name.
        origin: String,
        /// The TOML parser's message, with line and column.
        message: String,
    },
    /// A key that weir does not know.
    #[error(
        "unknown config key `{key}` in {origin}; {}",
        did_you_mean(.suggestion)
    )]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The file name, or `--set`.
        origin: String,
        /// The closest known key, when one is close enough to be a typo.
        suggestion: Option<&'static str>,
    },
    /// A known key with a value that is not of its form or out of its range.
    #[error("invalid value {value:?} for key {key} in {origin}: expected {expected}")]
    InvalidValue {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// The accepted form, e.g. "a duration such as 100ms, 1s or 2min".
        expected: String,
        /// The file name, or `--set`.
        origin: String,
    },
    /// A `--set` argument without `=`.
    #[error(
        "malformed override {text:?}: expected key=value, e.g. --set execution.buffer-timeout=10ms"
    )]
    MalformedOverride {
        /// The argument as given.
        text: String,
    },
}

fn did_you_mean(suggestion: &Option<&'static str>) -> String {
    match suggestion {
        Some(key) => format!("did you mean `{key}`? All keys are listed in configs/README.md"),
        None => "all keys are listed in configs/README.md".to_string(),
    }
}

/// Origin of values given with `--set`.
const OVERRIDE_ORIGIN: &str = "--set";
const JOB_EXPECTED: &str = "one of quickstart, w1, w3";
const DURATION_EXPECTED: &str = "a duration such as 100ms, 1s or 2min (a non-negative integer \
     and a unit: ns, us, ms, s, min, h or d; a bare integer means milliseconds)";
const SIZE_EXPECTED: &str = "a memory size from 64b to 16mb such as 32kb (an integer and a \
     unit: b, kb, mb or gb; a bare integer means bytes)";
const BOOL_EXPECTED: &str = "true or false";
const POSITIVE_OR_UNSET: &str = "an integer of at least 1, or unset";

/// weir's whole configuration. Build it with [`Config::load`]; `Default` is
/// the documented defaults of [`KEYS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `job.name`: which built-in job `weir run` runs.
    pub job: JobName,
    /// `job.records`: records the bounded sources emit in total; `None` = the job's default.
    pub records: Option<u64>,
    /// `job.keys`: distinct keys; `None` = the job's default.
    pub keys: Option<u64>,
    /// `job.rate`: records/s over all source subtasks; `None` = unpaced.
    pub rate: Option<u64>,
    /// `job.warmup`: W3's warm-up, not recorded.
    pub warmup: Duration,
    /// `job.duration`: W3's recorded run time.
    pub duration: Duration,
    /// `parallelism.default`: workers and default operator parallelism; `None` = every usable core.
    pub parallelism: Option<usize>,
    /// `pipeline.max-parallelism`: number of key groups.
    pub max_parallelism: u32,
    /// `execution.buffer-timeout`: longest time a partly filled buffer waits; zero = flush every record.
    pub buffer_timeout: Duration,
    /// `taskmanager.memory.segment-size`: bytes in one network buffer.
    pub segment_size: usize,
    /// `taskmanager.network.memory.buffers-per-channel`: in-flight buffers (credit) per channel.
    pub buffers_per_channel: u32,
    /// `taskmanager.network.memory.floating-buffers-per-gate`: extra buffers per worker pool.
    pub floating_buffers_per_gate: u32,
    /// `weir.worker.pin-cores`: pin each worker to a core.
    pub pin_cores: bool,
    /// `weir.worker.spin-before-park`: idle spin time before a worker parks.
    pub spin_before_park: Duration,
    /// `weir.progress.interval`: interval of stderr progress lines; zero = off.
    pub progress_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            job: JobName::Quickstart,
            records: None,
            keys: None,
            rate: None,
            warmup: Duration::from_secs(5),
            duration: Duration::from_secs(20),
            parallelism: None,
            max_parallelism: 128,
            buffer_timeout: Duration::from_millis(100),
            segment_size: 32 * 1024,
            buffers_per_channel: 4,
            floating_buffers_per_gate: 8,
            pin_cores: true,
            spin_before_park: Duration::from_micros(50),
            progress_interval: Duration::from_secs(1),
        }
    }
}

/// One value being applied to one key. Values are TOML values because TOML
/// keeps integers and booleans typed; `--set` text arrives as a TOML string.
struct Setting<'a> {
    key: &'a str,
    value: &'a toml::Value,
    origin: &'a str,
}

impl Setting<'_> {
    fn check<T>(&self, parsed: Option<T>, expected: &str) -> Result<T, ConfigError> {
        parsed.ok_or_else(|| ConfigError::InvalidValue {
            key: self.key.to_string(),
            value: match self.value {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            expected: expected.to_string(),
            origin: self.origin.to_string(),
        })
    }

    fn text(&self) -> Option<&str> {
        self.value.as_str().map(str::trim)
    }

    /// A number: a non-negative TOML integer through `from_int`, or text
    /// through `parse`; floats, booleans and arrays are never numbers.
    fn number<T>(&self, from_int: fn(u64) -> T, parse: fn(&str) -> Option<T>) -> Option<T> {
        match self.value {
            toml::Value::Integer(i) => u64::try_from(*i).ok().map(from_int),
            toml::Value::String(s) => parse(s),
            _ => None,
        }
    }

    fn boolean(&self) -> Option<bool> {
        match (self.value, self.text()) {
            (toml::Value::Boolean(b), _) => Some(*b),
            (_, Some(t)) if t.eq_ignore_ascii_case("true") => Some(true),
            (_, Some(t)) if t.eq_ignore_ascii_case("false") => Some(false),
            _ => None,
        }
    }

    fn int_in(&self, min: u64, max: u64) -> Result<u64, ConfigError> {
        let parsed = self.number(|n| n, parse_uint);
        let parsed = parsed.filter(|n| (min..=max).contains(n));
        self.check(parsed, &format!("an integer from {min} to {max}"))
    }

    /// An optional count: "unset" clears it, otherwise an integer of at least 1.
    fn positive_or_unset(&self) -> Result<Option<u64>, ConfigError> {
        if self.text().is_some_and(|t| t.eq_ignore_ascii_case("unset")) {
            return Ok(None);
        }
        let parsed = self.number(|n| n, parse_uint).filter(|n| *n >= 1);
        self.check(parsed, POSITIVE_OR_UNSET).map(Some)
    }

    fn duration(&self) -> Result<Duration, ConfigError> {
        // A bare TOML integer means milliseconds, as in Flink.
        let parsed = self.number(Duration::from_millis, parse_duration);
        self.check(parsed, DURATION_EXPECTED)
    }
}

impl Config {
    /// Parses a whole TOML config over the defaults and validates the result.
    /// `origin` names the text's source (usually the file path) in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        config.apply_toml(text, origin)?;
        config.validate()?;
        Ok(config)
    }

    /// Builds the configuration weir runs with: the defaults, then the file at
    /// `path` (if any), then each `key=value` override in order, so later
    /// overrides win. Checks across keys run once, at the end, so the order of
    /// overrides never matters for them.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(path) = path {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            config.apply_toml(&text, &path.display().to_string())?;
        }
        for text in overrides {
            let (key, value) = text
                .split_once('=')
                .filter(|(key, _)| !key.trim().is_empty())
                .ok_or_else(|| ConfigError::MalformedOverride { text: text.clone() })?;
            config.set(key.trim(), value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Applies one `--set` override. `value` is the raw text after `=`;
    /// surrounding whitespace and one pair of double quotes are dropped, so a
    /// value copied from a TOML file works too. Optional keys accept `unset`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        let value = toml::Value::String(value.to_string());
        self.apply(key, &value, OVERRIDE_ORIGIN)
    }

    /// The current value of `key` in config syntax (what [`Config::set`]
    /// accepts), `"unset"` for an unset optional, `None` for an unknown key.
    pub fn get(&self, key: &str) -> Option<String> {
        let dur = format_duration;
        let opt = |n: Option<u64>| n.map_or_else(|| "unset".to_string(), |n| n.to_string());
        Some(match key {
            "job.name" => self.job.to_string(),
            "job.records" => opt(self.records),
            "job.keys" => opt(self.keys),
            "job.rate" => opt(self.rate),
            "job.warmup" => dur(self.warmup),
            "job.duration" => dur(self.duration),
            "parallelism.default" => opt(self.parallelism.map(|p| p as u64)),
            "pipeline.max-parallelism" => self.max_parallelism.to_string(),
            "execution.buffer-timeout" => dur(self.buffer_timeout),
            "taskmanager.memory.segment-size" => format_memory_size(self.segment_size as u64),
            "taskmanager.network.memory.buffers-per-channel" => {
                self.buffers_per_channel.to_string()
            }
            "taskmanager.network.memory.floating-buffers-per-gate" => {
                self.floating_buffers_per_gate.to_string()
            }
            "weir.worker.pin-cores" => self.pin_cores.to_string(),
            "weir.worker.spin-before-park" => dur(self.spin_before_park),
            "weir.progress.interval" => dur(self.progress_interval),
            _ => return None,
        })
    }

    /// Every key with its current value as a TOML file that
    /// [`Config::from_toml_str`] reads back to an equal `Config`. Unset
    /// optional keys are written as comments.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# weir configuration: every key with its value. Keys and defaults: configs/README.md\n",
        );
        for doc in KEYS {
            out.push_str(&format!(
                "\n# {} (default: {})\n",
                doc.description, doc.default
            ));
            let value = self.get(doc.key).unwrap_or_default();
            // Integers and booleans stay bare so the file reads like a hand-written
            // one; durations, sizes and names are TOML strings.
            let bare = value == "true"
                || value == "false"
                || (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()));
            out.push_str(&match value.as_str() {
                "unset" => format!("# {} is unset\n", doc.key),
                _ if bare => format!("{} = {value}\n", doc.key),
                _ => format!("{} = \"{value}\"\n", doc.key),
            });
        }
        out
    }

    /// Checks that involve more than one key. Called after every source is
    /// applied, because a single `--set` may be fixed by a later one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.parallelism {
            // Flink rejects this too: every subtask needs at least one key group.
            Some(p) if p > self.max_parallelism as usize => Err(ConfigError::InvalidValue {
                key: "parallelism.default".to_string(),
                value: p.to_string(),
                expected: format!(
                    "an integer from 1 to pipeline.max-parallelism ({})",
                    self.max_parallelism
                ),
                // No single source is to blame when two keys disagree.
                origin: "the final configuration".to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Parses TOML and applies each leaf, without the checks across keys.
    fn apply_toml(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                origin: origin.to_string(),
                message: e.to_string().trim_end().to_string(),
            })?;
        let mut leaves = Vec::new();
        flatten("", &table, &mut leaves);
        // `"job.name" = ..` and `job.name = ..` are different TOML keys, so TOML
        // itself cannot see that both set the same weir key.
        let mut seen = BTreeSet::new();
        for (key, _) in &leaves {
            if !seen.insert(key.as_str()) {
                return Err(ConfigError::Parse {
                    origin: origin.to_string(),
                    message: format!("key {key} is defined more than once"),
                });
            }
        }
        for (key, value) in &leaves {
            self.apply(key, value, origin)?;
        }
        Ok(())
    }

    /// Sets one key from one value. The key list here must match [`KEYS`];
    /// a test checks that it does.
    fn apply(&mut self, key: &str, value: &toml::Value, origin: &str) -> Result<(), ConfigError> {
        let s = Setting { key, value, origin };
        match key {
            "job.name" => {
                let job = s.text().and_then(|t| t.parse().ok());
                self.job = s.check(job, JOB_EXPECTED)?;
            }
            "job.records" => self.records = s.positive_or_unset()?,
            "job.keys" => self.keys = s.positive_or_unset()?,
            "job.rate" => self.rate = s.positive_or_unset()?,
            "job.warmup" => self.warmup = s.duration()?,
            "job.duration" => self.duration = s.duration()?,
            "parallelism.default" => {
                let p = s.positive_or_unset()?.map(usize::try_from).transpose();
                self.parallelism = s.check(p.ok(), POSITIVE_OR_UNSET)?;
            }
            "pipeline.max-parallelism" => self.max_parallelism = s.int_in(1, 32768)? as u32,
            "execution.buffer-timeout" => self.buffer_timeout = s.duration()?,
            "taskmanager.memory.segment-size" => {
                let size = s
                    .number(|n| n, parse_memory_size)
                    .filter(|n| (64..=16 << 20).contains(n));
                self.segment_size = s.check(size, SIZE_EXPECTED)? as usize;
            }
            "taskmanager.network.memory.buffers-per-channel" => {
                self.buffers_per_channel = s.int_in(1, 1024)? as u32;
            }
            "taskmanager.network.memory.floating-buffers-per-gate" => {
                self.floating_buffers_per_gate = s.int_in(0, 65536)? as u32;
            }
            "weir.worker.pin-cores" => self.pin_cores = s.check(s.boolean(), BOOL_EXPECTED)?,
            "weir.worker.spin-before-park" => self.spin_before_park = s.duration()?,
            "weir.progress.interval" => self.progress_interval = s.duration()?,
            _ => {
                return Err(ConfigError::UnknownKey {
                    key: key.to_string(),
                    origin: origin.to_string(),
                    suggestion: suggest(key),
                })
            }
        }
        Ok(())
    }
}

/// Turns nested tables into dotted key paths, so `[execution]` tables, dotted
/// keys and quoted flat keys all name a setting the same way.
fn flatten<'a>(prefix: &str, table: &'a toml::Table, out: &mut Vec<(String, &'a toml::Value)>) {
    for (name, value) in table {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&path, inner, out),
            leaf => out.push((path, leaf)),
        }
    }
}

/// The known key a mistyped `key` most likely meant: one whose last part is
/// exactly `key`, else the nearest by edit distance if it is a plausible typo.
fn suggest(key: &str) -> Option<&'static str> {
    if let Some(doc) = KEYS.iter().find(|d| d.key.ends_with(&format!(".{key}"))) {
        return Some(doc.key);
    }
    let (distance, best) = KEYS
        .iter()
        .map(|d| (edit_distance(key, d.key), d.key))
        .min_by_key(|(distance, _)| *distance)?;
    // A third of the key's length allows a few typos in long keys without
    // suggesting something unrelated for short ones.
    (distance <= 3.max(key.chars().count() / 3) && distance < best.len()).then_some(best)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A decimal integer with optional `_` between digits (`20_000_000`), as in
/// TOML; signs are not accepted because no key takes a negative number.
fn parse_uint(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits_at_ends = text.starts_with(|c: char| c.is_ascii_digit())
        && text.ends_with(|c: char| c.is_ascii_digit());
    if !digits_at_ends
        || text.contains("__")
        || !text.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// Splits Flink-style `<integer><optional whitespace><unit>` into the number
/// and the lowercased unit ("" when there is none).
fn split_number_unit(text: &str) -> Option<(u64, String)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 {
        return None;
    }
    let number = text[..end].parse().ok()?;
    Some((number, text[end..].trim_start().to_lowercase()))
}

/// Parses a duration in Flink's format: a non-negative integer, optional
/// whitespace, and a case-insensitive unit (`ns`, `us`/`µs`, `ms`, `s`, `min`/`m`,
/// `h`, `d` and their long forms such as `millis` or `seconds`). A bare integer
/// means milliseconds. `None` for anything else or on overflow.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (n, unit) = split_number_unit(text)?;
    let secs = |factor: u64| n.checked_mul(factor).map(Duration::from_secs);
    match unit.as_str() {
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => Some(Duration::from_nanos(n)),
        // U+00B5 is the micro sign Flink uses; U+03BC is the Greek mu it is
        // easily confused with, and what an uppercased "µS" lowercases to.
        "us" | "µs" | "μs" | "micro" | "micros" | "microsecond" | "microseconds" => {
            Some(Duration::from_micros(n))
        }
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => {
            Some(Duration::from_millis(n))
        }
        "s" | "sec" | "secs" | "second" | "seconds" => secs(1),
        "min" | "m" | "minute" | "minutes" => secs(60),
        "h" | "hour" | "hours" => secs(3600),
        "d" | "day" | "days" => secs(86400),
        _ => None,
    }
}

/// Parses a memory size in Flink's format: a non-negative integer, optional
/// whitespace, and a case-insensitive unit (`b`/`bytes`, `k`/`kb`/`kibibytes`,
/// `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`, `t`/`tb`/`tebibytes`; powers of
/// 1024). A bare integer means bytes. `None` for anything else or on overflow.
pub fn parse_memory_size(text: &str) -> Option<u64> {
    let (n, unit) = split_number_unit(text)?;
    let shift = match unit.as_str() {
        "" | "b" | "bytes" => 0,
        "k" | "kb" | "kibibytes" => 10,
        "m" | "mb" | "mebibytes" => 20,
        "g" | "gb" | "gibibytes" => 30,
        "t" | "tb" | "tebibytes" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

/// Renders a duration with the largest unit that represents it exactly, so
/// the result parses back to the same value: "100ms", "1s", "50us", "2min";
/// zero is "0ms".
pub fn format_duration(d: Duration) -> String {
    #[rustfmt::skip]
    const UNITS: [(u128, &str); 7] = [(86_400_000_000_000, "d"), (3_600_000_000_000, "h"),
        (60_000_000_000, "min"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")];
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0ms".to_string();
    }
    let (factor, unit) = UNITS
        .into_iter()
        .find(|(factor, _)| nanos.is_multiple_of(*factor))
        .unwrap_or((1, "ns"));
    format!("{}{unit}", nanos / factor)
}

/// Renders a byte count with the largest unit that represents it exactly:
/// "32kb", "16mb", "100b"; the inverse of [`parse_memory_size`].
pub fn format_memory_size(bytes: u64) -> String {
    let (shift, unit) = [(40, "tb"), (30, "gb"), (20, "mb"), (10, "kb")]
        .into_iter()
        .find(|(shift, _)| bytes != 0 && bytes.is_multiple_of(1u64 << shift))
        .unwrap_or((0, "b"));
    format!("{}{unit}", bytes >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn toml(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, "test.toml")
    }

    fn sets(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Every default, checked through `get` against the table in [`KEYS`]
    /// (which the README test ties to the documentation).
    #[test]
    fn defaults_match_the_table() {
        let c = Config::default();
        let mut set_back = c.clone();
        for (i, doc) in KEYS.iter().enumerate() {
            assert!(KEYS[..i].iter().all(|d| d.key != doc.key), "{}", doc.key);
            assert_eq!(c.get(doc.key).as_deref(), Some(doc.default), "{}", doc.key);
            set_back.set(doc.key, doc.default).unwrap();
        }
        assert_eq!(set_back, c);
        assert_eq!(c.get("no.such.key"), None);
        assert_eq!(toml("").unwrap(), c);
        assert_eq!(Config::load(None, &[]).unwrap(), c);
        assert_eq!(c.segment_size, 32768);
        assert_eq!(c.spin_before_park, Duration::from_micros(50));
    }

    #[test]
    #[rustfmt::skip]
    fn flat_dotted_and_table_keys_mean_the_same() {
        let expected = Config { buffer_timeout: ms(10), job: JobName::W3, buffers_per_channel: 2, ..Config::default() };
        let styles = [
            "\"execution.buffer-timeout\" = \"10ms\"\n\"job.name\" = \"w3\"\n\"taskmanager.network.memory.buffers-per-channel\" = 2",
            "execution.buffer-timeout = \"10ms\"\njob.name = \"w3\"\ntaskmanager.network.memory.buffers-per-channel = 2",
            "[execution]\nbuffer-timeout = \"10ms\"\n[job]\nname = \"w3\"\n[taskmanager.network]\nmemory.buffers-per-channel = 2",
        ];
        for text in styles {
            assert_eq!(toml(text).unwrap(), expected, "{text}");
        }
        // Different TOML keys that name one weir key: TOML cannot see it, weir must.
        let err = toml("\"job.name\" = \"w1\"\n[job]\nname = \"w3\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Parse { .. }) && err.to_string().contains("job.name"), "{err}");
    }

    #[test]
    #[rustfmt::skip]
    fn duration_and_size_forms() {
        let (us, ns) = (Duration::from_micros, Duration::from_nanos);
        let durations = [
            ("0", ms(0)), ("250", ms(250)), ("7ns", ns(7)), ("5us", us(5)), ("5µs", us(5)),
            ("5 micros", us(5)), ("10ms", ms(10)), ("10 milli", ms(10)), ("10millis", ms(10)),
            ("10 millisecond", ms(10)), ("10 milliseconds", ms(10)), ("10MS", ms(10)),
            ("3s", ms(3000)), ("3 sec", ms(3000)), ("3secs", ms(3000)), ("3 second", ms(3000)),
            ("3 Seconds", ms(3000)), ("2min", ms(120_000)), ("2m", ms(120_000)),
            ("2 minute", ms(120_000)), ("2 minutes", ms(120_000)), ("1h", ms(3_600_000)),
            ("1 hour", ms(3_600_000)), ("2 hours", ms(7_200_000)), ("1d", ms(86_400_000)),
            ("1 day", ms(86_400_000)), ("2 DAYS", ms(172_800_000)), ("  4 s  ", ms(4000)),
        ];
        for (text, expected) in durations {
            assert_eq!(parse_duration(text), Some(expected), "{text}");
        }
        for bad in ["", "ms", "-5ms", "1.5s", "10 parsecs", "5 s s", "1_000ms", "+3s",
                    "18446744073709551615d", "99999999999999999999ms"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        let sizes = [
            ("0", 0), ("100", 100), ("100b", 100), ("100 bytes", 100), ("2k", 2048), ("2kb", 2048),
            ("2 KB", 2048), ("2 kibibytes", 2048), ("1m", 1 << 20), ("1mb", 1 << 20),
            ("1 mebibytes", 1 << 20), ("1g", 1 << 30), ("1GB", 1 << 30), ("1 gibibytes", 1 << 30),
        ];
        for (text, expected) in sizes {
            assert_eq!(parse_memory_size(text), Some(expected), "{text}");
        }
        for bad in ["", "kb", "-1kb", "1.5mb", "3 parsecs", "99999999999 gb"] {
            assert_eq!(parse_memory_size(bad), None, "{bad}");
        }
        let formatted = [(ms(0), "0ms"), (ms(100), "100ms"), (ms(1000), "1s"), (ms(1500), "1500ms"),
            (us(50), "50us"), (ns(3), "3ns"), (ms(120_000), "2min"), (ms(90_000), "90s"),
            (ms(7_200_000), "2h"), (ms(86_400_000), "1d")];
        for (d, text) in formatted {
            assert_eq!((format_duration(d).as_str(), parse_duration(text)), (text, Some(d)));
        }
        for (n, text) in [(0, "0b"), (64, "64b"), (32 * 1024, "32kb"), (1536, "1536b"), (16 << 20, "16mb")] {
            assert_eq!((format_memory_size(n).as_str(), parse_memory_size(text)), (text, Some(n)));
        }
    }

    #[test]
    #[rustfmt::skip]
    fn bare_integers_strings_and_separators() {
        let c = toml("job.warmup = 250\njob.duration = \"1500\"\ntaskmanager.memory.segment-size = 4096\n\
                      job.records = \"20_000_000\"\njob.keys = 1_000\njob.rate = \"7\"\n\
                      parallelism.default = 2\nweir.worker.pin-cores = \"FALSE\"\n").unwrap();
        assert_eq!((c.warmup, c.duration, c.segment_size), (ms(250), ms(1500), 4096));
        assert_eq!((c.records, c.keys, c.rate), (Some(20_000_000), Some(1000), Some(7)));
        assert_eq!((c.parallelism, c.pin_cores), (Some(2), false));
        for bad in ["\"_1\"", "\"1_\"", "\"1__0\"", "\"0x10\"", "\"-1\"", "-1", "0", "\"\""] {
            assert!(toml(&format!("job.records = {bad}")).is_err(), "{bad}");
        }
        // Range boundaries are inclusive.
        let c = toml("taskmanager.memory.segment-size = 64\npipeline.max-parallelism = 32768\n\
                      taskmanager.network.memory.floating-buffers-per-gate = 0\n").unwrap();
        assert_eq!((c.segment_size, c.max_parallelism, c.floating_buffers_per_gate), (64, 32768, 0));
    }

    #[test]
    #[rustfmt::skip]
    fn invalid_values_name_the_key_and_the_expected_form() {
        let err = toml("execution.buffer-timeout = \"10 parsecs\"").unwrap_err();
        let start = "invalid value \"10 parsecs\" for key execution.buffer-timeout in test.toml: \
                     expected a duration such as 100ms, 1s or 2min";
        assert!(err.to_string().starts_with(start), "{err}");
        let cases = [
            ("job.warmup = -5", "job.warmup", "a duration such as"),
            ("job.duration = 1.5", "job.duration", "a duration such as"),
            ("weir.progress.interval = [1]", "weir.progress.interval", "a duration such as"),
            ("weir.worker.spin-before-park = \"\"", "weir.worker.spin-before-park", "a duration"),
            ("job.name = \"W1\"", "job.name", "one of quickstart, w1, w3"),
            ("job.name = 1", "job.name", "one of quickstart, w1, w3"),
            ("pipeline.max-parallelism = 32769", "pipeline.max-parallelism", "an integer from 1 to 32768"),
            ("pipeline.max-parallelism = 0", "pipeline.max-parallelism", "an integer from 1 to 32768"),
            ("taskmanager.network.memory.buffers-per-channel = 1025",
             "taskmanager.network.memory.buffers-per-channel", "an integer from 1 to 1024"),
            ("taskmanager.network.memory.floating-buffers-per-gate = 65537",
             "taskmanager.network.memory.floating-buffers-per-gate", "an integer from 0 to 65536"),
            ("taskmanager.memory.segment-size = \"32b\"", "taskmanager.memory.segment-size", "a memory size from 64b to 16mb"),
            ("taskmanager.memory.segment-size = \"17mb\"", "taskmanager.memory.segment-size", "a memory size from 64b to 16mb"),
            ("weir.worker.pin-cores = \"yes\"", "weir.worker.pin-cores", "true or false"),
            ("weir.worker.pin-cores = 1", "weir.worker.pin-cores", "true or false"),
            ("job.records = 0", "job.records", "an integer of at least 1, or unset"),
            ("parallelism.default = true", "parallelism.default", "an integer of at least 1, or unset"),
        ];
        for (text, key, expected) in cases {
            let err = toml(text).unwrap_err();
            assert!(matches!(&err, ConfigError::InvalidValue { key: k, .. } if k == key), "{err:?}");
            let named = format!("for key {key} in test.toml: expected {expected}");
            assert!(err.to_string().contains(&named), "{err}");
        }
    }

    #[test]
    fn unknown_keys_suggest_the_closest_known_key() {
        let err = toml("execution.bufer-timeout = \"10ms\"").unwrap_err();
        let expected = "unknown config key `execution.bufer-timeout` in test.toml; \
            did you mean `execution.buffer-timeout`? All keys are listed in configs/README.md";
        assert_eq!(err.to_string(), expected);
        let mut c = Config::default();
        let err = c.set("buffer-timeout", "1ms").unwrap_err().to_string();
        assert!(err.contains("in --set; did you mean `execution.buffer-timeout`?"));
        let err = c.set("completely.different", "1").unwrap_err();
        let err = err.to_string();
        assert!(err.contains("configs/README.md") && !err.contains("did you mean"));
        // A table where a value belongs leaves an unknown key below it.
        let err = toml("[job.name]\nx = 1").unwrap_err();
        assert!(matches!(err, ConfigError::UnknownKey { .. }), "{err:?}");
    }

    #[test]
    fn parse_io_and_override_errors() {
        let err = toml("job.name = ").unwrap_err();
        assert!(matches!(err, ConfigError::Parse { .. }), "{err:?}");
        assert!(err.to_string().starts_with("invalid TOML in test.toml: "));
        let err = Config::load(Some(Path::new("/nonexistent/weir.toml")), &[]).unwrap_err();
        let err = err.to_string();
        assert!(err.starts_with("cannot read config file /nonexistent/weir.toml: "));
        for text in ["job.name", "=w1", ""] {
            let err = Config::load(None, &sets(&[text])).unwrap_err();
            assert!(
                matches!(err, ConfigError::MalformedOverride { .. }),
                "{err:?}"
            );
            assert!(err.to_string().contains("expected key=value"), "{err}");
        }
    }

    #[test]
    fn overrides_win_over_the_file_in_order() {
        let name = format!("weir-config-test-{}.toml", std::process::id());
        let path = std::env::temp_dir().join(name);
        let file = "job.name = \"w1\"\nexecution.buffer-timeout = \"5ms\"\njob.records = 10\n";
        std::fs::write(&path, file).expect("write temp config");
        let later = [
            "execution.buffer-timeout=7ms",
            "job.name = w3",
            "job.records=unset",
        ];
        let ok = Config::load(Some(&path), &sets(&later));
        let bad = Config::load(Some(&path), &sets(&["job.rate=fast"]));
        std::fs::remove_file(&path).ok();
        let c = ok.unwrap();
        assert_eq!(c.job, JobName::W3);
        assert_eq!(c.buffer_timeout, ms(7));
        assert_eq!(c.records, None);
        let err = bad.unwrap_err().to_string();
        assert!(err.contains("for key job.rate in --set"), "{err}");
        let last = ["job.warmup=1s", "job.warmup = \"2s\""];
        assert_eq!(Config::load(None, &sets(&last)).unwrap().warmup, ms(2000));
        // Checks across keys wait for the last override.
        let err = Config::load(None, &sets(&["parallelism.default=200"])).unwrap_err();
        assert!(
            err.to_string().contains("pipeline.max-parallelism (128)"),
            "{err}"
        );
        let both = sets(&["parallelism.default=200", "pipeline.max-parallelism=256"]);
        assert_eq!(Config::load(None, &both).unwrap().parallelism, Some(200));
    }

    #[test]
    #[rustfmt::skip]
    fn to_toml_round_trips() {
        let custom = Config {
            job: JobName::W3, records: Some(1_000_000), keys: None, rate: Some(5), warmup: ms(1500),
            duration: ms(60_000), parallelism: Some(2), max_parallelism: 4096, buffer_timeout: ms(0),
            segment_size: 1 << 20, buffers_per_channel: 16, floating_buffers_per_gate: 0,
            pin_cores: false, spin_before_park: Duration::from_nanos(500), progress_interval: ms(250),
        };
        for config in [Config::default(), custom] {
            let text = config.to_toml();
            assert_eq!(toml(&text).unwrap(), config, "{text}");
            assert!(KEYS.iter().all(|doc| text.contains(doc.key)), "{text}");
        }
    }

    #[test]
    fn readme_documents_every_key_with_its_default() {
        let readme = include_str!("../../configs/README.md");
        for doc in KEYS {
            let row = format!("| `{}` | `{}` |", doc.key, doc.default);
            assert!(readme.lines().any(|l| l.starts_with(&row)), "no {row}");
        }
        let rows = readme.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, KEYS.len(), "README's table has keys that KEYS lacks");
    }

    #[test]
    fn job_names_parse_and_display() {
        for job in JobName::ALL {
            assert_eq!(job.to_string().parse::<JobName>(), Ok(job));
        }
        let err = "Quickstart".parse::<JobName>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown job \"Quickstart\": expected one of quickstart, w1, w3"
        );
    }
}
