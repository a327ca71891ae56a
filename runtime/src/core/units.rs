//! Flink's value formats: durations (`100ms`, `1 s`, `2min`) and memory
//! sizes (`32kb`, `1 mb`), parsed and printed.

use std::time::Duration;

/// A decimal integer with optional `_` between digits (`20_000_000`), as in
/// TOML; signs are not accepted because no key takes a negative number.
pub(crate) fn parse_uint(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits_at_ends = text.starts_with(|c: char| c.is_ascii_digit())
        && text.ends_with(|c: char| c.is_ascii_digit());
    if !digits_at_ends
        || text.contains("__")
        || !text.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// Splits Flink-style `<integer><optional whitespace><unit>` into the number
/// and the lowercased unit ("" when there is none).
pub(crate) fn split_number_unit(text: &str) -> Option<(u64, String)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 {
        return None;
    }
    let number = text[..end].parse().ok()?;
    Some((number, text[end..].trim_start().to_lowercase()))
}

/// Parses a duration in Flink's format: a non-negative integer, optional
/// whitespace, and a case-insensitive unit (`ns`, `us`/`µs`, `ms`, `s`, `min`/`m`,
/// `h`, `d` and their long forms such as `millis` or `seconds`). A bare integer
/// means milliseconds. `None` for anything else or on overflow.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (n, unit) = split_number_unit(text)?;
    let secs = |factor: u64| n.checked_mul(factor).map(Duration::from_secs);
    match unit.as_str() {
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => Some(Duration::from_nanos(n)),
        // U+00B5 is the micro sign Flink uses; U+03BC is the Greek mu it is
        // easily confused with, and what an uppercased "µS" lowercases to.
        "us" | "µs" | "μs" | "micro" | "micros" | "microsecond" | "microseconds" => {
            Some(Duration::from_micros(n))
        }
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => {
            Some(Duration::from_millis(n))
        }
        "s" | "sec" | "secs" | "second" | "seconds" => secs(1),
        "min" | "m" | "minute" | "minutes" => secs(60),
        "h" | "hour" | "hours" => secs(3600),
        "d" | "day" | "days" => secs(86400),
        _ => None,
    }
}

/// Parses a memory size in Flink's format: a non-negative integer, optional
/// whitespace, and a case-insensitive unit (`b`/`bytes`, `k`/`kb`/`kibibytes`,
/// `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`, `t`/`tb`/`tebibytes`; powers of
/// 1024). A bare integer means bytes. `None` for anything else or on overflow.
pub fn parse_memory_size(text: &str) -> Option<u64> {
    let (n, unit) = split_number_unit(text)?;
    let shift = match unit.as_str() {
        "" | "b" | "bytes" => 0,
        "k" | "kb" | "kibibytes" => 10,
        "m" | "mb" | "mebibytes" => 20,
        "g" | "gb" | "gibibytes" => 30,
        "t" | "tb" | "tebibytes" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

/// Renders a duration with the largest unit that represents it exactly, so
/// the result parses back to the same value: "100ms", "1s", "50us", "2min";
/// zero is "0ms".
pub fn format_duration(d: Duration) -> String {
    #[rustfmt::skip]
    const UNITS: [(u128, &str); 7] = [(86_400_000_000_000, "d"), (3_600_000_000_000, "h"),
        (60_000_000_000, "min"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us"), (1, "ns")];
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0ms".to_string();
    }
    let (factor, unit) = UNITS
        .into_iter()
        .find(|(factor, _)| nanos.is_multiple_of(*factor))
        .unwrap_or((1, "ns"));
    format!("{}{unit}", nanos / factor)
}

/// Renders a byte count with the largest unit that represents it exactly:
/// "32kb", "16mb", "100b"; the inverse of [`parse_memory_size`].
pub fn format_memory_size(bytes: u64) -> String {
    let (shift, unit) = [(40, "tb"), (30, "gb"), (20, "mb"), (10, "kb")]
        .into_iter()
        .find(|(shift, _)| bytes != 0 && bytes.is_multiple_of(1u64 << shift))
        .unwrap_or((0, "b"));
    format!("{}{unit}", bytes >> shift)
}
