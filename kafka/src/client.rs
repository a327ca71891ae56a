//! What a Kafka source and sink share: the client options (Flink's
//! `properties.bootstrap.servers` and `properties.*`) and the errors that
//! name what is wrong.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;

/// An error of a Kafka connector, naming the option, topic or broker.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum KafkaError {
    /// An option is missing or has a bad value.
    #[error("kafka: {0}")]
    Config(String),
    /// The client failed (the broker could not be reached, a topic is
    /// missing, a transaction was fenced, ...).
    #[error("kafka: {0}")]
    Client(String),
}

/// How long a blocking client call (metadata, offsets, transactions) may
/// wait, unless `properties.default.api.timeout.ms` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Properties weir reads itself rather than passing them to librdkafka
/// (which does not know them): `default.api.timeout.ms`, the Java
/// client's bound on blocking calls, bounds weir's.
const WEIR_PROPERTIES: &[&str] = &["default.api.timeout.ms"];

/// The client options a source or sink is built with.
#[derive(Clone, Debug, Default)]
pub struct KafkaClientOptions {
    /// `bootstrap.servers`: `host:port[,host:port...]`.
    pub bootstrap_servers: String,
    /// Any other librdkafka property (`properties.*` in SQL, without the
    /// prefix), passed through as given.
    pub properties: BTreeMap<String, String>,
}

impl KafkaClientOptions {
    /// Checks that the bootstrap servers are set.
    pub fn check(&self) -> Result<(), KafkaError> {
        if self.bootstrap_servers.trim().is_empty() {
            return Err(KafkaError::Config(
                "'properties.bootstrap.servers' is required (host:port of a broker)".into(),
            ));
        }
        Ok(())
    }

    /// A librdkafka configuration with the bootstrap servers, `defaults`
    /// (what weir needs, unless the user set the same key) and the user's
    /// properties.
    pub fn client_config(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap_servers);
        for (k, v) in defaults {
            if !self.properties.contains_key(*k) {
                c.set(*k, *v);
            }
        }
        for (k, v) in &self.properties {
            if !WEIR_PROPERTIES.contains(&k.as_str()) {
                c.set(k, v);
            }
        }
        c
    }

    /// The timeout of blocking calls.
    pub fn timeout(&self) -> Duration {
        self.properties
            .get("default.api.timeout.ms")
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TIMEOUT)
    }
}

/// Turns a client error into a [`KafkaError`] saying what was being done.
pub fn client_error(what: impl std::fmt::Display, e: rdkafka::error::KafkaError) -> KafkaError {
    KafkaError::Client(format!("{what}: {e}"))
}
