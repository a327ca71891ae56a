//! Why the REST or the Prometheus endpoint could not start.

use std::net::{IpAddr, SocketAddr};

use weir_runtime::config::PortRange;

use thiserror::Error;

/// Why an endpoint could not start (the `weir` command exits 2).
#[derive(Debug, Error)]
pub enum RestError {
    /// A bind beyond loopback without a token: anyone who reaches the
    /// address could stop or cancel the job.
    #[error(
        "rest.bind-address = {address} is reachable from other hosts: set rest.auth-token \
         (at least 16 characters; clients send `Authorization: Bearer <token>`), or bind \
         127.0.0.1"
    )]
    TokenRequired {
        /// The address.
        address: IpAddr,
    },
    /// The address could not be bound (a port in use, an address not of
    /// this host).
    #[error(
        "cannot serve the REST endpoint on {addr}: {source} (set rest.port to another port, \
         or 0 for a free one)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Its thread or runtime could not be made.
    #[error("cannot start the REST endpoint's thread: {0}")]
    Runtime(std::io::Error),
    /// The Prometheus endpoint beyond loopback without a token: anyone who
    /// reaches the address could read the job's names and figures.
    #[error(
        "metrics.reporter.prom.port is set and rest.bind-address = {address} is reachable \
         from other hosts: set rest.auth-token (at least 16 characters; Prometheus sends it \
         with `authorization: {{credentials: <token>}}` in its scrape config), or bind \
         127.0.0.1"
    )]
    PrometheusTokenRequired {
        /// The address.
        address: IpAddr,
    },
    /// No port of `metrics.reporter.prom.port` could be bound.
    #[error(
        "cannot serve the Prometheus endpoint on {address} port {ports}: {source} (set \
         metrics.reporter.prom.port to another port, a range such as 9250-9260, or 0 for a \
         free one)"
    )]
    PrometheusBind {
        /// The address.
        address: IpAddr,
        /// The port or ports tried.
        ports: PortRange,
        /// Why the last one could not be bound.
        source: std::io::Error,
    },
    /// Its thread or runtime could not be made.
    #[error("cannot start the Prometheus endpoint's thread: {0}")]
    PrometheusRuntime(std::io::Error),
}
