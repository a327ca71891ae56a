//! What the command line prints of the library's log events: the
//! `tracing` subscriber it installs before running anything, set up again
//! from `log.level` and `log.format` once the command's config is loaded.
//!
//! Two formats (`log.format`). `plain`, the default, is for a person at a
//! terminal and prints what weir printed before it logged through
//! `tracing`: an `info` event is its message alone (`restoring checkpoint
//! 3 from ...`), a warning or error its message after `warning: ` or
//! `error: `; their fields repeat the message and are left out. `debug`
//! and `trace` events, the checkpoint trace, are prefixed with their
//! target (without `weir::`) and the milliseconds since the start, and
//! followed by their fields: `[checkpoint    12.345 ms] triggered
//! checkpoint=3 is_final=false`. `json` prints one JSON object per event
//! and line, for a log collector: `{"timestamp":"2026-12-02T15:43:49.123456Z",
//! "level":"INFO","message":"...","checkpoint":3,"target":"weir::restore"}`
//! (tracing-subscriber's JSON format with the event's fields beside the
//! message).
//!
//! Only log events change format: the command's own output on stderr
//! (progress lines, `REST endpoint: ...`, `Prometheus endpoint: ...`, the
//! final `error: ...` line that says why it exits) is its report, printed
//! as it always was, whatever the log format.
//!
//! Which events, first match wins: `RUST_LOG` when set (an `EnvFilter`,
//! read leniently: a bad directive is reported and skipped); else
//! `log.level` (a level for weir's own events, other crates at `warn`, or
//! directives; a bad one is a config error, exit 2); else its default,
//! warnings of every crate and `info` of weir's. `WEIR_TRACE_CHECKPOINTS`
//! set to anything but `0` adds `weir::checkpoint=trace` to any of them.
//! Until the config is loaded (and for commands without one) the
//! defaults apply.

use std::fmt::{self, Write as _};
use std::sync::OnceLock;
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Layer, Registry};
use weir_runtime::config::{LogFormat, LogLevel};
use weir_runtime::Config;

/// The filter and the format, as one layer that can be swapped.
type Output = Box<dyn Layer<Registry> + Send + Sync>;

/// Where [`configure`] swaps the layer [`install`] installed.
static RELOAD: OnceLock<reload::Handle<Output, Registry>> = OnceLock::new();

/// What decides which events are printed, from the environment.
struct Environment {
    rust_log: Option<String>,
    trace_checkpoints: bool,
}

impl Environment {
    fn read() -> Self {
        Self {
            rust_log: std::env::var("RUST_LOG")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            trace_checkpoints: std::env::var_os("WEIR_TRACE_CHECKPOINTS").is_some_and(|v| v != "0"),
        }
    }
}

/// Installs the subscriber with the defaults (`log.level` and
/// `log.format` unset): events to stderr in the plain format, filtered by
/// `RUST_LOG` and `WEIR_TRACE_CHECKPOINTS`.
pub(crate) fn install() {
    let env = Environment::read();
    let level = LogLevel::default();
    // The default level always parses; RUST_LOG is read leniently.
    let filter = filter(&env, &level).unwrap_or_else(|_| lenient(&filter_spec(&env, &level)));
    let (layer, handle) = reload::Layer::new(output(LogFormat::Plain, filter, std::io::stderr));
    tracing_subscriber::registry().with(layer).init();
    let _ = RELOAD.set(handle);
}

/// Applies `log.level` and `log.format` of `config` to the installed
/// subscriber. An error names the key (exit 2, as any bad config value).
pub(crate) fn configure(config: &Config) -> Result<(), String> {
    let filter = filter(&Environment::read(), &config.log_level)?;
    if let Some(handle) = RELOAD.get() {
        handle
            .reload(output(config.log_format, filter, std::io::stderr))
            .map_err(|e| format!("cannot apply log.level and log.format: {e}"))?;
    }
    Ok(())
}

/// The layer that writes events in `format` to `writer`, filtered by
/// `filter`.
fn output<W>(format: LogFormat, filter: EnvFilter, writer: W) -> Output
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let events = tracing_subscriber::fmt::layer().with_writer(writer);
    match format {
        LogFormat::Plain => filter.and_then(events.event_format(Plain::new())).boxed(),
        LogFormat::Json => filter
            .and_then(
                events
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false),
            )
            .boxed(),
    }
}

/// The filter's directives: `RUST_LOG`'s, or `log.level`'s, then the
/// checkpoint trace if asked for (it overrides their level for
/// `weir::checkpoint`).
fn filter_spec(env: &Environment, level: &LogLevel) -> String {
    let mut spec = match &env.rust_log {
        Some(s) => s.clone(),
        None => level.directives(),
    };
    if env.trace_checkpoints {
        spec.push_str(",weir::checkpoint=trace");
    }
    spec
}

/// The filter: `RUST_LOG` leniently, as env_logger reads it (a bad
/// directive is reported and skipped, never a reason not to run the job);
/// `log.level` strictly, as every config value.
fn filter(env: &Environment, level: &LogLevel) -> Result<EnvFilter, String> {
    let spec = filter_spec(env, level);
    if env.rust_log.is_some() {
        return Ok(lenient(&spec));
    }
    EnvFilter::builder().parse(&spec).map_err(|e| {
        format!(
            "invalid value {:?} for key log.level: {e} (expected {})",
            level.to_string(),
            "a level (off, error, warn, info, debug or trace) or tracing filter directives \
             such as warn,weir::checkpoint=debug"
        )
    })
}

fn lenient(spec: &str) -> EnvFilter {
    EnvFilter::builder().parse_lossy(spec)
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
    /// `RUST_LOG` and `WEIR_TRACE_CHECKPOINTS` as given and `log.level`
    /// and `log.format` at their defaults.
    fn printed(rust_log: Option<&str>, trace_checkpoints: bool, emit: impl FnOnce()) -> String {
        let env = Environment {
            rust_log: rust_log.filter(|s| !s.trim().is_empty()).map(str::to_owned),
            trace_checkpoints,
        };
        printed_with(&env, &LogLevel::default(), LogFormat::Plain, emit)
    }

    /// The same, with `log.level` and `log.format` as given.
    fn printed_with(
        env: &Environment,
        level: &LogLevel,
        format: LogFormat,
        emit: impl FnOnce(),
    ) -> String {
        let out = Captured::default();
        let sink = out.clone();
        let layer = output(format, filter(env, level).unwrap(), move || sink.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    fn no_env() -> Environment {
        Environment {
            rust_log: None,
            trace_checkpoints: false,
        }
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
    }

    #[test]
    fn log_level_sets_weirs_level_and_rust_log_wins_over_it() {
        let debug: LogLevel = "debug".parse().unwrap();
        let text = printed_with(&no_env(), &debug, LogFormat::Plain, some_events);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[2].ends_with(" ms] completed checkpoint=3"), "{text}");
        assert!(
            !text.contains("not weir's"),
            "other crates stay at warn: {text}"
        );
        let error: LogLevel = "error".parse().unwrap();
        assert_eq!(
            printed_with(&no_env(), &error, LogFormat::Plain, some_events),
            ""
        );
        let directives: LogLevel = "off,glommio=info".parse().unwrap();
        assert_eq!(
            printed_with(&no_env(), &directives, LogFormat::Plain, some_events),
            "not weir's\n"
        );
        let env = Environment {
            rust_log: Some("weir::restore=info".into()),
            trace_checkpoints: false,
        };
        assert_eq!(
            printed_with(
                &env,
                &"trace".parse().unwrap(),
                LogFormat::Plain,
                some_events
            ),
            "restoring checkpoint 3 from /tmp/c/chk-3\n"
        );
    }

    #[test]
    fn a_level_tracing_refuses_is_an_error_naming_the_key() {
        let err = filter(&no_env(), &LogLevel::Directives("weir=[".into())).unwrap_err();
        assert!(
            err.starts_with("invalid value \"weir=[\" for key log.level: "),
            "{err}"
        );
        // RUST_LOG is read leniently: its mistakes do not stop a job.
        let env = Environment {
            rust_log: Some("weir=[".into()),
            trace_checkpoints: false,
        };
        assert!(filter(&env, &LogLevel::default()).is_ok());
    }

    #[test]
    fn json_lines_carry_timestamp_level_target_message_and_fields() {
        let text = printed_with(
            &no_env(),
            &"trace".parse().unwrap(),
            LogFormat::Json,
            some_events,
        );
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), 4, "{text}");
        let restore = &lines[0];
        assert_eq!(restore["level"], "INFO");
        assert_eq!(restore["target"], "weir::restore");
        assert_eq!(
            restore["message"],
            "restoring checkpoint 3 from /tmp/c/chk-3"
        );
        assert_eq!(restore["checkpoint"], 3);
        let ts = restore["timestamp"].as_str().unwrap();
        assert!(
            ts.len() >= 20 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
            "{ts}"
        );
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["message"], "4 workers on 2 cores");
        assert_eq!(lines[3]["level"], "TRACE");
        assert_eq!(lines[3]["task"], "w1-source (1/2)");
    }
}
