//! The job's REST endpoint as the `weir` command serves it: `weir run` and
//! `weir sql` on `rest.port` (8081 when unset, as Flink), `weir bench` only
//! when `rest.port` is set (so that benchmark runs side by side do not
//! collide). A port in use fails the command at start (exit 2), as Flink's
//! does: a job nobody can reach the way its config says is a mistake to
//! fix, not to work around. The chosen address is printed on stderr as
//! `REST endpoint: http://ADDR:PORT` (what `rest.port = 0` needs).
//!
//! After the job ends, the endpoint stays up a few seconds if a savepoint
//! asked for through it has a final status nobody read yet, so that
//! `weir stop` learns where the stop's savepoint is.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use weir_rest::{RestServer, RestSettings};
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
    match RestServer::start(&settings, handle.clone()) {
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
