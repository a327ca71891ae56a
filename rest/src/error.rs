//! Why the REST endpoint could not start.

use std::net::{IpAddr, SocketAddr};

use thiserror::Error;

/// Why the REST endpoint could not start (the `weir` command exits 2).
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
}
