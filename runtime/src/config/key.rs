//! A configuration key (its name, what it means, how its value is read
//! and rendered, named once) and how sets of keys are loaded from TOML text
//! and `--set` overrides.
//!
//! weir's own keys are [`Config`](crate::config::settings::Config)'s
//! ([`KEYS`](crate::config::keys::KEYS)); a program adds its own set beside
//! them (the `weir` binary's built-in jobs take `job.*`) by implementing
//! [`KeySet`]. Either way an unknown key is an error that suggests the
//! closest known one.

use std::collections::BTreeSet;

use crate::config::error::ConfigError;
use crate::config::value::{Setting, OVERRIDE_ORIGIN};

/// One configuration key of a settings type `C`.
pub struct Key<C: 'static> {
    /// The key's full dotted name, e.g. `execution.buffer-timeout`.
    pub name: &'static str,
    /// One line saying what the key controls.
    pub description: &'static str,
    /// The current value in config syntax (what `set` accepts); `unset`
    /// for an unset optional.
    pub get: fn(&C) -> String,
    /// Applies a value to the key.
    pub set: fn(&mut C, &Setting<'_>) -> Result<(), ConfigError>,
}

impl<C: Default> Key<C> {
    /// The key's default, in config syntax.
    pub fn default_value(&self) -> String {
        (self.get)(&C::default())
    }
}

/// A set of configuration keys with the settings they fill in.
pub trait KeySet: Default + Sized + 'static {
    /// Every key, in documentation order.
    fn keys() -> &'static [Key<Self>];

    /// Checks that involve more than one key, after every value was
    /// applied.
    fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The key named `name`.
    fn key(name: &str) -> Option<&'static Key<Self>> {
        Self::keys().iter().find(|k| k.name == name)
    }
}

/// No keys: what [`Config::load`](crate::config::settings::Config::load)
/// adds to weir's own.
impl KeySet for () {
    fn keys() -> &'static [Key<()>] {
        &[]
    }
}

/// Two sets of keys filled in together, from one file and one list of
/// overrides: a key belongs to the first set that has it.
pub struct Loader<'a, A, B> {
    /// The first set (weir's own keys).
    pub first: &'a mut A,
    /// The second set (a program's keys).
    pub second: &'a mut B,
}

impl<A: KeySet, B: KeySet> Loader<'_, A, B> {
    /// Parses TOML text and applies each leaf, without the checks across
    /// keys. `origin` names the text's source (usually the file path).
    pub fn apply_toml(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
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

    /// Applies one `key=value` override.
    pub fn apply_override(&mut self, text: &str) -> Result<(), ConfigError> {
        let (key, value) = text
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty())
            .ok_or_else(|| ConfigError::MalformedOverride {
                text: text.to_string(),
            })?;
        self.set(key.trim(), value)
    }

    /// Applies one `--set` value. `value` is the raw text after `=`;
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

    /// Sets one key from one value.
    pub fn apply(
        &mut self,
        key: &str,
        value: &toml::Value,
        origin: &str,
    ) -> Result<(), ConfigError> {
        let setting = Setting { key, value, origin };
        if let Some(k) = A::key(key) {
            return (k.set)(self.first, &setting);
        }
        if let Some(k) = B::key(key) {
            return (k.set)(self.second, &setting);
        }
        let names = A::keys().iter().map(|k| k.name);
        let names = names.chain(B::keys().iter().map(|k| k.name));
        Err(ConfigError::UnknownKey {
            key: key.to_string(),
            origin: origin.to_string(),
            suggestion: suggest(key, names),
        })
    }

    /// Runs both sets' checks across keys.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.first.validate()?;
        self.second.validate()
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
fn suggest(key: &str, names: impl Iterator<Item = &'static str> + Clone) -> Option<&'static str> {
    if let Some(name) = names.clone().find(|n| n.ends_with(&format!(".{key}"))) {
        return Some(name);
    }
    let (distance, best) = names
        .map(|n| (edit_distance(key, n), n))
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
