//! SIGTERM and SIGINT stop a running job gracefully, as Flink's
//! stop-with-savepoint: the first one asks the run to stop
//! ([`StopRequest`]); the run takes a savepoint, its sinks commit, and the
//! command prints the savepoint's path and exits 0. A second one while the
//! stop is under way aborts at once, as SIGKILL would (exit 128 + the
//! signal's number): the job then recovers from its last complete
//! checkpoint, exactly once, as after any crash; the stop's savepoint, if
//! its directory exists and is incomplete, is removed first. A first signal
//! that finds a stop already asked for through the REST endpoint (`weir
//! stop`) lets that stop go on: only a second signal aborts.
//!
//! The signals are taken by a thread of their own (`signal-hook`'s
//! iterator, so no code runs inside a signal handler); it only flips the
//! request's atomic, which the run's control thread reads on its tick:
//! no worker core is ever interrupted or blocked by it.

use std::io;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use weir_runtime::StopRequest;

/// Starts the thread that turns SIGTERM and SIGINT into `request`.
pub fn install(request: StopRequest) -> io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("weir-signals".into())
        .spawn(move || {
            let mut signalled = false;
            for signal in signals.forever() {
                let name = if signal == SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                let first = !std::mem::replace(&mut signalled, true);
                if request.request() {
                    eprintln!(
                        "{name}: stopping with a savepoint (sources stop, sinks commit); \
                         {name} again aborts at once"
                    );
                } else if first {
                    // Asked for through the endpoint: a supervisor's
                    // SIGTERM meanwhile is no reason to throw it away.
                    eprintln!(
                        "{name}: a stop with a savepoint is already under way (weir stop); \
                         {name} again aborts at once"
                    );
                } else {
                    eprintln!(
                        "error: {name} again: aborting without a savepoint; the next run \
                         restores the last complete checkpoint (--restore latest)"
                    );
                    if let Some(dir) = request.abort() {
                        eprintln!(
                            "removed the incomplete {} {}",
                            snapshot_kind(&dir),
                            dir.display()
                        );
                    }
                    std::process::exit(128 + signal);
                }
            }
        })?;
    Ok(())
}

/// What a stop's snapshot directory holds: a final checkpoint (`chk-<id>`,
/// when `state.savepoints.dir` is unset) or a savepoint.
fn snapshot_kind(dir: &std::path::Path) -> &'static str {
    let name = dir.file_name().map(|n| n.to_string_lossy());
    match name.as_deref().and_then(|n| n.strip_prefix("chk-")) {
        Some(id) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => "final checkpoint",
        _ => "savepoint",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::snapshot_kind;

    #[test]
    fn an_aborted_stop_names_what_it_removed() {
        assert_eq!(snapshot_kind(Path::new("/ck/chk-12")), "final checkpoint");
        assert_eq!(
            snapshot_kind(Path::new("/sp/savepoint-0a1b2c-12")),
            "savepoint"
        );
        assert_eq!(snapshot_kind(Path::new("/sp/chk-notes")), "savepoint");
    }
}
