//! Loading a [`Config`]: the defaults, then a TOML file, then `--set`
//! overrides in order, then the checks across keys; reading a key's value
//! back, and writing the whole configuration as TOML.

use std::path::Path;

use crate::config::error::ConfigError;
use crate::config::key::{KeySet, Loader};
use crate::config::keys::{ALIASES, KEYS};
use crate::config::settings::Config;

impl Config {
    /// Parses a whole TOML config over the defaults and validates the result.
    /// `origin` names the text's source (usually the file path) in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        Self::from_toml_str_with::<()>(text, origin).map(|(config, ())| config)
    }

    /// As [`Config::from_toml_str`], with a program's own keys `E` (see
    /// [`Config::load_with`]).
    pub fn from_toml_str_with<E: KeySet>(
        text: &str,
        origin: &str,
    ) -> Result<(Config, E), ConfigError> {
        let mut config = Config::default();
        let mut extra = E::default();
        let mut loader = Loader {
            first: &mut config,
            second: &mut extra,
        };
        loader.apply_toml(text, origin)?;
        loader.validate()?;
        Ok((config, extra))
    }

    /// Builds the configuration weir runs with: the defaults, then the file at
    /// `path` (if any), then each `key=value` override in order, so later
    /// overrides win. Checks across keys run once, at the end, so the order of
    /// overrides never matters for them.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        Self::load_with::<()>(path, overrides).map(|(config, ())| config)
    }

    /// As [`Config::load`], with a program's own keys `E` beside weir's (the
    /// `weir` binary's job parameters): a key is weir's or `E`'s, else it
    /// is unknown.
    pub fn load_with<E: KeySet>(
        path: Option<&Path>,
        overrides: &[String],
    ) -> Result<(Config, E), ConfigError> {
        let mut config = Config::default();
        let mut extra = E::default();
        let mut loader = Loader {
            first: &mut config,
            second: &mut extra,
        };
        if let Some(path) = path {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            loader.apply_toml(&text, &path.display().to_string())?;
        }
        for text in overrides {
            loader.apply_override(text)?;
        }
        loader.validate()?;
        Ok((config, extra))
    }

    /// Applies one `--set` override. `value` is the raw text after `=`;
    /// surrounding whitespace and one pair of double quotes are dropped, so a
    /// value copied from a TOML file works too. Optional keys accept `unset`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let mut none = ();
        Loader {
            first: self,
            second: &mut none,
        }
        .set(key, value)
    }

    /// The current value of `key` in config syntax (what [`Config::set`]
    /// accepts), `"unset"` for an unset optional, `None` for an unknown key.
    pub fn get(&self, key: &str) -> Option<String> {
        Config::key(key).map(|k| (k.get)(self))
    }

    /// Every key with its current value as a TOML file that
    /// [`Config::from_toml_str`] reads back to an equal `Config`. Unset
    /// optional keys are written as comments.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# weir configuration: every key with its value. Keys and defaults: configs/README.md\n",
        );
        for key in KEYS {
            out.push_str(&format!(
                "\n# {} (default: {})\n",
                key.description,
                key.default_value()
            ));
            // An older name a newer key's table would clash with in TOML
            // (`execution.buffer-timeout` beside `execution.buffer-timeout.interval`):
            // the newer one holds the value.
            if ALIASES.contains(&key.name) {
                out.push_str(&format!("# {} is set through its newer name\n", key.name));
                continue;
            }
            let value = (key.get)(self);
            // Numbers and booleans stay bare so the file reads like a hand-written
            // one; durations, sizes, names and paths are TOML strings (escaped,
            // as a path may hold quotes or backslashes).
            let number = value.bytes().any(|b| b.is_ascii_digit())
                && value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            // A path, an address or a token is text even when it looks
            // like a number.
            let text_only = matches!(
                key.name,
                "state.checkpoints.dir" | "rest.bind-address" | "rest.auth-token"
            );
            let bare = !text_only && (value == "true" || value == "false" || number);
            out.push_str(&match value.as_str() {
                "unset" => format!("# {} is unset\n", key.name),
                _ if bare => format!("{} = {value}\n", key.name),
                _ => format!("{} = {}\n", key.name, toml::Value::String(value)),
            });
        }
        out
    }
}
