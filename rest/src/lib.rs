//! The REST endpoint of a running weir job, in the shapes of Flink's REST
//! API (the subset docs/REST.md lists).
//!
//! It serves one job's [`JobHandle`]: views of the job read from the
//! handle, and the control actions (savepoint, stop with a savepoint,
//! cancel) handed to it. It runs on a thread of its own
//! (`weir-rest`, a current-thread tokio runtime), never on a worker core,
//! and never touches a worker: the handle is read from atomics the tasks
//! publish anyway.
//!
//! Safety by default: it binds `127.0.0.1` unless `rest.bind-address`
//! says otherwise, and refuses to start on any other address without a
//! bearer token (`rest.auth-token`, [`RestError::TokenRequired`]). Request
//! bodies are capped at [`MAX_BODY`], each request at [`REQUEST_TIMEOUT`];
//! a malformed request gets a 4xx and changes nothing.
//!
//! Modules: [`error`] (why an endpoint could not start), [`shapes`] (the
//! JSON of each view), [`routes`] (paths, methods, token, limits),
//! [`dashboard`] (the web dashboard at `/`, its files embedded),
//! [`prometheus`] (the job's metrics for Prometheus to scrape, on a port
//! and thread of their own), `server` (the thread each endpoint runs on).

pub mod dashboard;
pub mod error;
pub mod prometheus;
pub mod routes;
mod server;
pub mod shapes;

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::time::Duration;

use weir_runtime::{Config, JobHandle};

pub use error::RestError;
pub use prometheus::{PrometheusServer, PrometheusSettings};

use server::ServerThread;

/// Flink's default REST port, what `weir run` and `weir sql` use when
/// `rest.port` is unset.
pub const DEFAULT_PORT: u16 = 8081;

/// Largest request body taken (a savepoint's JSON is a few hundred bytes).
pub const MAX_BODY: usize = 64 * 1024;

/// Longest time a request may take (none of ours waits on the job).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how the endpoint serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestSettings {
    /// `rest.bind-address`.
    pub address: IpAddr,
    /// `rest.port` (`0`: a free one).
    pub port: u16,
    /// `rest.auth-token`.
    pub token: Option<String>,
}

impl RestSettings {
    /// The settings of `config`; `default_port` when `rest.port` is unset
    /// (`None`: no endpoint, as for `weir bench`).
    pub fn from_config(config: &Config, default_port: Option<u16>) -> Option<Self> {
        let port = config.rest_port.or(default_port)?;
        Some(Self {
            address: config
                .rest_bind_address
                .parse()
                .unwrap_or(IpAddr::from([127, 0, 0, 1])),
            port,
            token: config.rest_auth_token.clone(),
        })
    }
}

/// The running endpoint; dropping it stops it.
pub struct RestServer {
    addr: SocketAddr,
    _thread: ServerThread,
}

impl RestServer {
    /// Binds (at once, so a busy port or a refused address is an error
    /// here, before the job starts) and serves `handle` from a thread of
    /// its own.
    pub fn start(settings: &RestSettings, handle: JobHandle) -> Result<Self, RestError> {
        if !settings.address.is_loopback() && settings.token.is_none() {
            return Err(RestError::TokenRequired {
                address: settings.address,
            });
        }
        let addr = SocketAddr::new(settings.address, settings.port);
        let listener =
            TcpListener::bind(addr).map_err(|source| RestError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| RestError::Bind { addr, source })?;
        let app = routes::router(handle, settings.token.clone());
        let thread = ServerThread::spawn("weir-rest", listener, app).map_err(RestError::Runtime)?;
        Ok(Self {
            addr: local,
            _thread: thread,
        })
    }

    /// The address it serves on (with the port chosen for `rest.port = 0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The line the `weir` command prints: `REST endpoint: http://ADDR:PORT`.
    pub fn endpoint_line(&self) -> String {
        format!("REST endpoint: http://{}", self.addr)
    }
}
