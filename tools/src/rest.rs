//! The job's REST endpoint as the `weir` command serves it: `weir run` and
//! `weir sql` on `rest.port` (8081 when unset, as Flink), `weir bench` only
//! when `rest.port` is set (so that benchmark runs side by side do not
//! collide). A port set with `rest.port` that is in use fails the command
//! at start (exit 2), as Flink's does: a job nobody can reach where its
//! config says is a mistake to fix. The default port is a preference: when
//! 8081 is taken (another job on the machine), the endpoint warns and
//! serves on a free port instead, as Flink's port ranges let it. The
//! chosen address is printed on stderr as `REST endpoint: http://ADDR:PORT`
//! (what `rest.port = 0` and the fallback need).
//!
//! The Prometheus endpoint (docs/METRICS.md) serves when
//! `metrics.reporter.prom.port` is set, for every command that serves
//! REST (`weir bench` too, with or without `rest.port`); its address is
//! printed as `Prometheus endpoint: http://ADDR:PORT/metrics`. A port (or
//! every port of a range) in use fails the command at start (exit 2).
//!
//! After the job ends, the endpoint stays up a few seconds if a savepoint
//! asked for through it has a final status nobody read yet, so that
//! `weir stop` learns where the stop's savepoint is.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use weir_rest::{PrometheusServer, PrometheusSettings, RestError, RestServer, RestSettings};
use weir_runtime::config::KEYS;
use weir_runtime::{Config, JobHandle};

/// Longest wait, after the job ended, for the statuses of savepoints
/// asked for through the endpoint to be read.
const LINGER: Duration = Duration::from_secs(5);

/// The endpoints of one job (none if not asked for).
pub struct Served {
    server: Option<RestServer>,
    _prometheus: Option<PrometheusServer>,
    handle: JobHandle,
}

/// Starts the endpoints `config` asks for: REST on `rest.port`
/// (`default_port` when it is unset; `None`: none), Prometheus on
/// `metrics.reporter.prom.port` (none when it is unset). Exit 2 if one
/// cannot start.
pub fn serve(config: &Config, default_port: Option<u16>) -> Result<Served, ExitCode> {
    let handle = JobHandle::new();
    handle.set_config(
        KEYS.iter()
            .map(|k| {
                let v = (k.get)(config);
                let v = if k.name == "rest.auth-token" && v != "unset" {
                    "<hidden>".to_owned()
                } else {
                    v
                };
                (k.name.to_owned(), v)
            })
            .collect(),
    );
    let server = match RestSettings::from_config(config, default_port) {
        Some(settings) => Some(serve_rest(config, &settings, &handle)?),
        None => None,
    };
    let prometheus = match PrometheusSettings::from_config(config) {
        Some(settings) => match PrometheusServer::start(&settings, handle.clone()) {
            Ok(p) => {
                eprintln!("{}", p.endpoint_line());
                Some(p)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return Err(ExitCode::from(2));
            }
        },
        None => None,
    };
    Ok(Served {
        server,
        _prometheus: prometheus,
        handle,
    })
}

/// The REST endpoint on `settings`, or on a free port if the default one
/// is taken.
fn serve_rest(
    config: &Config,
    settings: &RestSettings,
    handle: &JobHandle,
) -> Result<RestServer, ExitCode> {
    let mut started = RestServer::start(settings, handle.clone());
    if let Err(RestError::Bind { source, addr }) = &started {
        if config.rest_port.is_none() && source.kind() == std::io::ErrorKind::AddrInUse {
            eprintln!(
                "warning: {addr} is in use (another job?): serving the REST endpoint on a free \
                 port instead; set rest.port to choose one"
            );
            let any = RestSettings {
                port: 0,
                ..settings.clone()
            };
            started = RestServer::start(&any, handle.clone());
        }
    }
    match started {
        Ok(server) => {
            eprintln!("{}", server.endpoint_line());
            Ok(server)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(ExitCode::from(2))
        }
    }
}

impl Served {
    /// The handle the run publishes into.
    pub fn handle(&self) -> JobHandle {
        self.handle.clone()
    }

    /// The job ended: waits (at most [`LINGER`]) until every savepoint
    /// status asked for through the endpoint was read, then stops it.
    pub fn finish(self) {
        if self.server.is_some() {
            let until = Instant::now() + LINGER;
            while !self.handle.all_results_read() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}
