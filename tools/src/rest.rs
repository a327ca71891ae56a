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
//! After the job ends, the endpoint stays up a few seconds if a savepoint
//! asked for through it has a final status nobody read yet, so that
//! `weir stop` learns where the stop's savepoint is.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use weir_rest::{RestError, RestServer, RestSettings};
use weir_runtime::config::KEYS;
use weir_runtime::{Config, JobHandle};

/// Longest wait, after the job ended, for the statuses of savepoints
/// asked for through the endpoint to be read.
const LINGER: Duration = Duration::from_secs(5);

/// The endpoint of one job (none if not asked for).
pub struct Served {
    server: Option<RestServer>,
    handle: JobHandle,
}

/// Starts the endpoint `config` asks for (`default_port` when `rest.port`
/// is unset; `None`: none). Exit 2 if it cannot start.
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
    let Some(settings) = RestSettings::from_config(config, default_port) else {
        return Ok(Served {
            server: None,
            handle,
        });
    };
    let mut started = RestServer::start(&settings, handle.clone());
    if let Err(RestError::Bind { source, addr }) = &started {
        if config.rest_port.is_none() && source.kind() == std::io::ErrorKind::AddrInUse {
            eprintln!(
                "warning: {addr} is in use (another job?): serving the REST endpoint on a free \
                 port instead; set rest.port to choose one"
            );
            let any = RestSettings {
                port: 0,
                ..settings
            };
            started = RestServer::start(&any, handle.clone());
        }
    }
    match started {
        Ok(server) => {
            eprintln!("{}", server.endpoint_line());
            Ok(Served {
                server: Some(server),
                handle,
            })
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
