//! weir's configuration: the keys, their defaults, and how a TOML file and
//! `--set key=value` overrides become one validated [`Config`].
//!
//! This module owns the key names (Flink's where Flink has the concept), the
//! value formats (Flink's durations and memory sizes), the error messages a
//! user sees for a bad file, and [`KEYS`], the one list of keys from which
//! `configs/README.md` is checked so the documentation cannot drift.

pub mod error;
pub mod key;
pub mod keys;
pub mod load;
pub mod observe;
pub mod options;
pub mod settings;
pub mod value;

pub use error::ConfigError;
pub use key::{Key, KeySet};
pub use keys::KEYS;
pub use observe::{LevelName, LogFormat, LogLevel, PortRange};
pub use settings::{CheckpointingMode, Config};
pub use value::Setting;

#[cfg(test)]
mod tests;
