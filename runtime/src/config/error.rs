//! What can be wrong with a configuration, each error naming what the user
//! has to fix.

use std::path::PathBuf;

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
    /// Keys whose values are each valid but do not fit together. The
    /// message names every key involved and their values.
    #[error("inconsistent configuration: {message}")]
    Conflict {
        /// The keys involved.
        keys: Vec<&'static str>,
        /// What is wrong and how to fix it.
        message: String,
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
