//! The values of the keys that say how a job is watched from outside:
//! `metrics.reporter.prom.port` (a port or Flink's port range), and
//! `log.level` and `log.format` (how the `weir` command prints the
//! library's `tracing` events). The runtime only reads and checks them;
//! the endpoint and the subscriber live in weir-rest and the command line.

use std::fmt;
use std::str::FromStr;

/// What `metrics.reporter.prom.port` takes.
pub(crate) const PORT_RANGE_EXPECTED: &str =
    "a port from 0 to 65535 (0 picks a free one), a range of ports such as 9250-9260 \
     (the first free one is taken), or unset (no endpoint)";
/// What `log.level` takes.
pub(crate) const LOG_LEVEL_EXPECTED: &str =
    "a level (off, error, warn, info, debug or trace) or a list of tracing filter \
     directives such as warn,weir::checkpoint=debug";
/// What `log.format` takes.
pub(crate) const LOG_FORMAT_EXPECTED: &str = "plain or json";

/// Ports to bind, tried in order: one port (`first == last`; `0` = a free
/// one) or Flink's range syntax `9250-9260`, which lets several jobs on one
/// host each take the next free port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    /// The first port tried.
    pub first: u16,
    /// The last port tried (`first` for a single port).
    pub last: u16,
}

impl PortRange {
    /// One port.
    pub fn single(port: u16) -> Self {
        Self {
            first: port,
            last: port,
        }
    }

    /// The ports in the order they are tried.
    pub fn ports(self) -> impl Iterator<Item = u16> {
        self.first..=self.last
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

impl FromStr for PortRange {
    type Err = ();

    /// `9249`, `0`, or `9250-9260` (ascending, without port 0).
    fn from_str(s: &str) -> Result<Self, ()> {
        let port = |t: &str| t.trim().parse::<u16>().map_err(|_| ());
        match s.split_once('-') {
            None => port(s).map(Self::single),
            Some((a, b)) => {
                let (first, last) = (port(a)?, port(b)?);
                if first == 0 || first > last {
                    return Err(());
                }
                Ok(Self { first, last })
            }
        }
    }
}

/// A level name, as Flink's log configuration and `tracing` spell them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LevelName {
    /// Nothing.
    Off,
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// What a job says as it runs (restores, stops).
    Info,
    /// The checkpoint trace's summary lines.
    Debug,
    /// Everything.
    Trace,
}

impl LevelName {
    const ALL: [LevelName; 6] = [
        LevelName::Off,
        LevelName::Error,
        LevelName::Warn,
        LevelName::Info,
        LevelName::Debug,
        LevelName::Trace,
    ];

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LevelName::Off => "off",
            LevelName::Error => "error",
            LevelName::Warn => "warn",
            LevelName::Info => "info",
            LevelName::Debug => "debug",
            LevelName::Trace => "trace",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

/// The value of `log.level`: a level, or filter directives as `RUST_LOG`
/// takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogLevel {
    /// One level for weir's own events; other crates' events at most
    /// `warn` (their `info` and below are their own business).
    Level(LevelName),
    /// Directives (`warn,weir::checkpoint=debug`), as written.
    Directives(String),
}

impl Default for LogLevel {
    /// `info`: what weir printed before it logged through `tracing`.
    fn default() -> Self {
        LogLevel::Level(LevelName::Info)
    }
}

impl LogLevel {
    /// The filter directives this level stands for (an `EnvFilter`
    /// string): a level `L` is `L` for weir's targets and the more severe
    /// of `L` and `warn` for every other crate.
    pub fn directives(&self) -> String {
        match self {
            LogLevel::Level(l) if *l <= LevelName::Warn => l.as_str().to_owned(),
            LogLevel::Level(l) => format!("warn,weir={}", l.as_str()),
            LogLevel::Directives(d) => d.clone(),
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogLevel::Level(l) => f.write_str(l.as_str()),
            LogLevel::Directives(d) => f.write_str(d),
        }
    }
}

impl FromStr for LogLevel {
    type Err = ();

    /// A level name in any case, or comma-separated directives each of
    /// the form `level` or `target=level`, where a target is a module path
    /// (`weir::checkpoint`) optionally followed by a span filter in
    /// brackets. A bare target (`RUST_LOG`'s shorthand for
    /// `target=trace`) is refused: as the whole value it is far more
    /// likely a misspelt level (`degub`). The command line parses the
    /// directives once more with `tracing`'s own parser, which has the
    /// last word.
    fn from_str(s: &str) -> Result<Self, ()> {
        let s = s.trim();
        if let Some(l) = LevelName::parse(s) {
            return Ok(LogLevel::Level(l));
        }
        let directive_ok = |d: &str| {
            // `=` inside a span filter (`[span{field=1}]`) is not the level's.
            let Some((target, level)) = d.rsplit_once('=').filter(|(_, l)| !l.contains(']')) else {
                return false;
            };
            let path = target.split('[').next().unwrap_or_default();
            let path_ok = !path.is_empty()
                && path
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_:-.".contains(c));
            let span_ok = target.len() == path.len() || target.ends_with(']');
            path_ok && span_ok && LevelName::parse(level).is_some()
        };
        let directives: Vec<&str> = s.split(',').map(str::trim).collect();
        if directives
            .iter()
            .all(|d| LevelName::parse(d).is_some() || directive_ok(d))
        {
            Ok(LogLevel::Directives(directives.join(",")))
        } else {
            Err(())
        }
    }
}

/// The value of `log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// For a person at a terminal: a message as it reads, warnings and
    /// errors after `warning: ` / `error: `.
    #[default]
    Plain,
    /// One JSON object per event and line (for log collectors).
    Json,
}

impl LogFormat {
    /// The key's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Plain => "plain",
            LogFormat::Json => "json",
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LogFormat {
    type Err = ();

    /// `plain` or `json`, in any case.
    fn from_str(s: &str) -> Result<Self, ()> {
        [LogFormat::Plain, LogFormat::Json]
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_and_flink_ranges_parse_and_print_back() {
        for (text, first, last) in [
            ("9249", 9249, 9249),
            ("0", 0, 0),
            ("9250-9260", 9250, 9260),
            (" 9250 - 9250 ", 9250, 9250),
            ("65535", 65535, 65535),
        ] {
            let r: PortRange = text.parse().unwrap_or_else(|()| panic!("{text}"));
            assert_eq!((r.first, r.last), (first, last), "{text}");
            assert_eq!(r.to_string().parse::<PortRange>(), Ok(r));
        }
        assert_eq!(
            "9250-9252"
                .parse::<PortRange>()
                .unwrap()
                .ports()
                .collect::<Vec<_>>(),
            vec![9250, 9251, 9252]
        );
        for bad in [
            "abc",
            "",
            "-",
            "65536",
            "9260-9250",
            "0-10",
            "1-2-3",
            "-1",
            "9250-",
        ] {
            assert_eq!(bad.parse::<PortRange>(), Err(()), "{bad}");
        }
    }

    #[test]
    fn a_level_is_weirs_and_other_crates_stay_at_warn() {
        let level = |s: &str| s.parse::<LogLevel>().unwrap();
        assert_eq!(LogLevel::default().directives(), "warn,weir=info");
        assert_eq!(level("DEBUG").directives(), "warn,weir=debug");
        assert_eq!(level("trace").directives(), "warn,weir=trace");
        assert_eq!(level("warn").directives(), "warn");
        assert_eq!(level("error").directives(), "error");
        assert_eq!(level("off").directives(), "off");
        assert_eq!(level(" Info ").to_string(), "info");
    }

    #[test]
    fn directives_are_taken_as_written_and_nonsense_is_refused() {
        for ok in [
            "warn,weir::checkpoint=debug",
            "weir=trace",
            "info, glommio=off",
            "weir[checkpoint{id=3}]=trace",
            "axum::rejection=TRACE",
        ] {
            let l: LogLevel = ok.parse().unwrap_or_else(|()| panic!("{ok}"));
            assert!(matches!(l, LogLevel::Directives(_)), "{ok}");
        }
        assert_eq!(
            "info, glommio=off"
                .parse::<LogLevel>()
                .unwrap()
                .directives(),
            "info,glommio=off"
        );
        for bad in [
            "",
            "verbose=",
            "weir=loud",
            "loud level",
            "weir=debug,,",
            "a b=info",
            "weir[x",
            "degub",
            "weir_runtime",
        ] {
            assert_eq!(bad.parse::<LogLevel>(), Err(()), "{bad}");
        }
    }

    #[test]
    fn formats_parse_in_any_case() {
        assert_eq!("JSON".parse(), Ok(LogFormat::Json));
        assert_eq!("plain".parse(), Ok(LogFormat::Plain));
        assert_eq!("text".parse::<LogFormat>(), Err(()));
        assert_eq!(LogFormat::default().to_string(), "plain");
    }
}
