//! The job's metrics for Prometheus to scrape: `GET /metrics` on
//! `metrics.reporter.prom.port` (Flink's `PrometheusReporter` key), in the
//! Prometheus text format 0.0.4, or OpenMetrics 1.0 when the scraper asks
//! for it (`Accept: application/openmetrics-text`, as Prometheus does),
//! encoded by the `prometheus-client` crate.
//!
//! Nothing is collected ahead of a scrape: each scrape takes one
//! [`JobView`](weir_runtime::JobView) from the [`JobHandle`] (the atomics
//! the tasks publish anyway, and what the control thread recorded) and
//! writes its [`families`]. The workers pay nothing for it, however often
//! it is scraped.
//!
//! It serves from a thread of its own (`weir-prom`, a current-thread tokio
//! runtime), never a worker core, whether or not the REST endpoint runs
//! (`weir bench` serves REST only when asked). Flink's reporter binds
//! every interface; weir binds `rest.bind-address` (loopback unless
//! configured) and holds it to the REST endpoint's rule: beyond loopback
//! it refuses to start without `rest.auth-token`, and with a token every
//! scrape must carry it (Prometheus's `authorization` scrape option).

pub mod families;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::{prometheus_text, text};
use prometheus_client::registry::Registry;
use weir_runtime::config::PortRange;
use weir_runtime::{Config, JobHandle};

use crate::error::RestError;
use crate::routes::{authorize, time_limit};
use crate::server::ServerThread;

pub use families::JobCollector;

/// The `Content-Type` of an OpenMetrics 1.0 scrape.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Where the endpoint serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrometheusSettings {
    /// `rest.bind-address`.
    pub address: IpAddr,
    /// `metrics.reporter.prom.port`: tried in order.
    pub ports: PortRange,
    /// `rest.auth-token`.
    pub token: Option<String>,
}

impl PrometheusSettings {
    /// The settings of `config`; `None` when `metrics.reporter.prom.port`
    /// is unset (no endpoint, the default).
    pub fn from_config(config: &Config) -> Option<Self> {
        Some(Self {
            address: config
                .rest_bind_address
                .parse()
                .unwrap_or(IpAddr::from([127, 0, 0, 1])),
            ports: config.prom_port?,
            token: config.rest_auth_token.clone(),
        })
    }
}

/// The running endpoint; dropping it stops it.
pub struct PrometheusServer {
    addr: SocketAddr,
    _thread: ServerThread,
}

impl PrometheusServer {
    /// Binds the first free port of the range (at once, so that an
    /// endpoint that cannot serve is an error before the job starts) and
    /// serves `handle`'s metrics from a thread of its own.
    pub fn start(settings: &PrometheusSettings, handle: JobHandle) -> Result<Self, RestError> {
        if !settings.address.is_loopback() && settings.token.is_none() {
            return Err(RestError::PrometheusTokenRequired {
                address: settings.address,
            });
        }
        let listener = bind_first(settings.address, settings.ports)?;
        let addr = listener
            .local_addr()
            .map_err(|source| RestError::PrometheusBind {
                address: settings.address,
                ports: settings.ports,
                source,
            })?;
        let app = router(handle, settings.token.clone());
        let thread = ServerThread::spawn("weir-prom", listener, app)
            .map_err(RestError::PrometheusRuntime)?;
        Ok(Self {
            addr,
            _thread: thread,
        })
    }

    /// The address it serves on (with the port it took).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The line the `weir` command prints:
    /// `Prometheus endpoint: http://ADDR:PORT/metrics`.
    pub fn endpoint_line(&self) -> String {
        format!("Prometheus endpoint: http://{}/metrics", self.addr)
    }
}

/// The first port of `ports` that binds; a port in use moves on to the
/// next (Flink's port ranges), any other error ends the search.
fn bind_first(address: IpAddr, ports: PortRange) -> Result<TcpListener, RestError> {
    let mut ports_left = ports.ports().peekable();
    while let Some(port) = ports_left.next() {
        match TcpListener::bind((address, port)) {
            Ok(listener) => return Ok(listener),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && ports_left.peek().is_some() => {}
            Err(source) => {
                return Err(RestError::PrometheusBind {
                    address,
                    ports,
                    source,
                })
            }
        }
    }
    unreachable!("a port range holds at least one port")
}

/// `GET /metrics` (and `HEAD`); with `token`, every request must carry
/// `Authorization: Bearer <token>`. Any other path is 404.
pub fn router(handle: JobHandle, token: Option<String>) -> Router {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(JobCollector::new(handle)));
    Router::new()
        .route("/metrics", get(scrape))
        .fallback(not_found)
        .with_state(Arc::new(registry))
        .layer(middleware::from_fn_with_state(token, authorize))
        .layer(middleware::from_fn(time_limit))
}

/// Whether the scraper asked for OpenMetrics.
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"))
}

/// The exposition of `registry`: OpenMetrics (ending in `# EOF`) or the
/// Prometheus text format, with its content type.
pub fn exposition(
    registry: &Registry,
    openmetrics: bool,
) -> Result<(String, &'static str), std::fmt::Error> {
    let mut body = String::new();
    if openmetrics {
        text::encode(&mut body, registry)?;
        Ok((body, OPENMETRICS_CONTENT_TYPE))
    } else {
        prometheus_text::encode(&mut body, registry)?;
        Ok((body, prometheus_text::CONTENT_TYPE))
    }
}

async fn scrape(State(registry): State<Arc<Registry>>, headers: HeaderMap) -> Response {
    match exposition(&registry, wants_openmetrics(&headers)) {
        Ok((body, content_type)) => ([(header::CONTENT_TYPE, content_type)], body).into_response(),
        // Only a collector's own error gets here; a partial body would
        // read as missing series, so none is sent.
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the metrics could not be encoded\n",
        )
            .into_response(),
    }
}

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "Not found: the Prometheus endpoint serves GET /metrics (see docs/METRICS.md)\n",
    )
}
