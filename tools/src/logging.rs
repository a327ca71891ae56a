//! What the command line prints of the library's log events: the
//! `tracing` subscriber it installs before running anything.
//!
//! The format is plain, for a person at a terminal, and prints what weir
//! printed before it logged through `tracing`: an `info` event is its
//! message alone (`restoring checkpoint 3 from ...`), a warning or error
//! its message after `warning: ` or `error: `; their fields repeat the
//! message and are left out. `debug` and `trace` events, the checkpoint
//! trace, are prefixed with their target (without `weir::`) and the
//! milliseconds since the start, and followed by their fields:
//! `[checkpoint    12.345 ms] triggered checkpoint=3 is_final=false`.
//!
//! Which events: `RUST_LOG` as usual (an `EnvFilter`), and when it is not
//! set warnings of every crate and `info` of weir's. `WEIR_TRACE_CHECKPOINTS`
//! set to anything but `0` adds `weir::checkpoint=trace`.

use std::fmt::{self, Write as _};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// What is logged when `RUST_LOG` is not set: what weir printed before.
const DEFAULT_FILTER: &str = "warn,weir=info";

/// Installs the subscriber: events to stderr in the plain format, filtered
/// by `RUST_LOG` and `WEIR_TRACE_CHECKPOINTS`.
pub(crate) fn install() {
    let rust_log = std::env::var("RUST_LOG").ok();
    let trace_checkpoints = std::env::var_os("WEIR_TRACE_CHECKPOINTS").is_some_and(|v| v != "0");
    tracing_subscriber::fmt()
        .with_env_filter(filter(rust_log.as_deref(), trace_checkpoints))
        .with_writer(std::io::stderr)
        .event_format(Plain::new())
        .init();
}

/// The filter's directives: `RUST_LOG`'s, or the default, then the
/// checkpoint trace if asked for (it overrides `RUST_LOG`'s level for
/// `weir::checkpoint`).
fn filter_spec(rust_log: Option<&str>, trace_checkpoints: bool) -> String {
    let mut spec = match rust_log {
        Some(s) if !s.trim().is_empty() => s.to_owned(),
        _ => DEFAULT_FILTER.to_owned(),
    };
    if trace_checkpoints {
        spec.push_str(",weir::checkpoint=trace");
    }
    spec
}

fn filter(rust_log: Option<&str>, trace_checkpoints: bool) -> EnvFilter {
    // Lossy as env_logger is: a bad directive is reported and skipped,
    // never a reason not to run the job.
    EnvFilter::builder().parse_lossy(filter_spec(rust_log, trace_checkpoints))
}

/// The plain event format (see the module's doc).
struct Plain {
    start: Instant,
}

impl Plain {
    /// Times trace lines from now.
    fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let diagnostic = match *meta.level() {
            Level::ERROR => {
                writer.write_str("error: ")?;
                false
            }
            Level::WARN => {
                writer.write_str("warning: ")?;
                false
            }
            Level::INFO => false,
            _ => {
                let target = meta.target();
                let label = target.strip_prefix("weir::").unwrap_or(target);
                let ms = self.start.elapsed().as_secs_f64() * 1e3;
                write!(writer, "[{label} {ms:9.3} ms] ")?;
                true
            }
        };
        let mut fields = PlainFields {
            message: String::new(),
            rest: String::new(),
            with_fields: diagnostic,
        };
        event.record(&mut fields);
        writeln!(writer, "{}{}", fields.message, fields.rest)
    }
}

/// Collects an event's message, and its other fields as ` name=value`
/// if they are wanted.
struct PlainFields {
    message: String,
    rest: String,
    with_fields: bool,
}

impl Visit for PlainFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else if self.with_fields {
            // Quoted: task names hold spaces (`w1-source (1/2)`).
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else if self.with_fields {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};

    /// Everything the subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// What the command line prints of the events `emit` logs, with
    /// `RUST_LOG` and `WEIR_TRACE_CHECKPOINTS` as given.
    fn printed(rust_log: Option<&str>, trace_checkpoints: bool, emit: impl FnOnce()) -> String {
        let out = Captured::default();
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter(rust_log, trace_checkpoints))
            .with_writer(move || sink.clone())
            .event_format(Plain::new())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    fn some_events() {
        tracing::info!(
            target: "weir::restore",
            checkpoint = 3,
            "restoring checkpoint {} from {}",
            3,
            "/tmp/c/chk-3"
        );
        tracing::warn!(target: "weir::workers", workers = 4, "4 workers on 2 cores");
        tracing::debug!(target: "weir::checkpoint", checkpoint = 3, "completed");
        tracing::trace!(
            target: "weir::checkpoint",
            checkpoint = 3,
            task = "w1-source (1/2)",
            "source: barrier injected"
        );
        tracing::info!(target: "glommio", "not weir's");
    }

    #[test]
    fn by_default_messages_print_as_they_read_and_the_trace_is_off() {
        assert_eq!(
            printed(None, false, some_events),
            "restoring checkpoint 3 from /tmp/c/chk-3\n\
             warning: 4 workers on 2 cores\n"
        );
    }

    #[test]
    fn weir_trace_checkpoints_adds_the_trace_with_times_and_fields() {
        let text = printed(None, true, some_events);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[0], "restoring checkpoint 3 from /tmp/c/chk-3");
        assert!(lines[2].starts_with("[checkpoint "), "{text}");
        assert!(lines[2].ends_with(" ms] completed checkpoint=3"), "{text}");
        assert!(
            lines[3]
                .ends_with(" ms] source: barrier injected checkpoint=3 task=\"w1-source (1/2)\""),
            "{text}"
        );
    }

    #[test]
    fn rust_log_replaces_the_default_and_the_trace_adds_to_it() {
        assert_eq!(
            printed(Some("weir::checkpoint=debug"), false, some_events)
                .lines()
                .count(),
            1
        );
        let text = printed(Some("weir::workers=off,info"), true, some_events);
        assert!(!text.contains("workers"), "{text}");
        assert!(text.contains("not weir's"), "{text}");
        assert!(text.contains("barrier injected"), "{text}");
        assert_eq!(filter_spec(Some(" "), false), DEFAULT_FILTER);
    }
}
