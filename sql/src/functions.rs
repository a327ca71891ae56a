//! The scalar functions' value-level work that is more than one line:
//! LIKE matching, DATE_FORMAT's Java-style patterns, EXTRACT, ROUND and
//! TRUNCATE, padding, SPLIT_INDEX, Java regular expressions on Rust's
//! `regex`, parsing with a pattern, calendar months, digests (RustCrypto's
//! `md-5`, `sha1`, `sha2`) and base64. The JSON functions are in
//! [`crate::json`].

use crate::time::{civil_from_days, days_from_civil, days_in_month, timestamp_parts, DAY_MS};

/// The character position in `pattern` of an `escape` that is last or
/// followed by anything but `_`, `%` or itself: an invalid escape
/// sequence, which Flink's LIKE refuses (Calcite's `sqlToRegexLike`).
pub fn like_bad_escape(pattern: &str, escape: char) -> Option<usize> {
    let mut it = pattern.chars().enumerate();
    while let Some((i, c)) = it.next() {
        if c == escape {
            match it.next() {
                Some((_, n)) if n == '_' || n == '%' || n == escape => {}
                _ => return Some(i),
            }
        }
    }
    None
}

/// Whether `text` matches SQL `LIKE` `pattern` (`%` any run, `_` one
/// character; `escape` makes the next character literal; see
/// [`like_bad_escape`] for the patterns this is not asked about).
pub fn like(text: &str, pattern: &str, escape: Option<char>) -> bool {
    let t: Vec<char> = text.chars().collect();
    let mut p: Vec<(char, bool)> = Vec::new(); // (char, is_literal)
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if Some(c) == escape {
            if let Some(n) = it.next() {
                p.push((n, true));
            }
        } else {
            p.push((c, false));
        }
    }
    // Iterative matching with backtracking to the last `%`.
    let (mut ti, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && !p[pi].1 && p[pi].0 == '%' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && ((!p[pi].1 && p[pi].0 == '_') || p[pi].0 == t[ti]) {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && !p[pi].1 && p[pi].0 == '%' {
        pi += 1;
    }
    pi == p.len()
}

/// A timestamp formatted with a Java `DateTimeFormatter` pattern as
/// Flink's DATE_FORMAT takes (English names): `yyyy`, `yy` (`u` as `y`),
/// `MM`, `M`, `MMM` (`Jan`), `MMMM` (`January`), `dd`, `d`, `D` (day of
/// the year), `EEE` (`Mon`), `EEEE` (`Monday`), `HH`, `H`, `hh`, `h`, `k`
/// (1..24), `K` (0..11), `mm`, `ss`, `SSS`, `a`, `Q` (quarter), text in
/// single quotes; other letters are refused when the query is planned
/// ([`check_pattern`]).
pub fn date_format(ms: i64, pattern: &str) -> String {
    let (y, mo, d, h, mi, s, milli) = timestamp_parts(ms);
    let mut out = String::with_capacity(pattern.len() + 4);
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '\'' {
                out.push(chars[j]);
                j += 1;
            }
            if j == i + 1 && j < chars.len() {
                out.push('\''); // '' is a quote
            }
            i = j + 1;
            continue;
        }
        let mut n = 1;
        while i + n < chars.len() && chars[i + n] == c {
            n += 1;
        }
        let field = |v: i64, width: usize| format!("{v:0width$}");
        match c {
            'y' | 'u' if n == 2 => out.push_str(&field(y.rem_euclid(100), 2)),
            'y' | 'u' => out.push_str(&field(y, n.max(4))),
            'M' if n >= 4 => out.push_str(MONTHS[mo as usize - 1]),
            'M' if n == 3 => out.push_str(&MONTHS[mo as usize - 1][..3]),
            'M' => out.push_str(&field(i64::from(mo), n)),
            'E' => {
                let day = DAYS[extract(TimeUnit::DayOfWeek, ms) as usize - 1];
                out.push_str(if n >= 4 { day } else { &day[..3] });
            }
            'D' => out.push_str(&field(extract(TimeUnit::DayOfYear, ms), n)),
            'Q' => out.push_str(&field(extract(TimeUnit::Quarter, ms), n)),
            'k' => out.push_str(&field(i64::from(if h == 0 { 24 } else { h }), n)),
            'K' => out.push_str(&field(i64::from(h % 12), n)),
            'd' => out.push_str(&field(i64::from(d), n)),
            'H' => out.push_str(&field(i64::from(h), n)),
            'h' => out.push_str(&field(i64::from((h + 11) % 12 + 1), n)),
            'm' => out.push_str(&field(i64::from(mi), n)),
            's' => out.push_str(&field(i64::from(s), n)),
            'S' => out.push_str(&field(i64::from(milli), 3)[..n.min(3)]),
            'a' => out.push_str(if h < 12 { "AM" } else { "PM" }),
            'w' => out.push_str(&field(us_week(ms), n)),
            // The zone: the session's, UTC.
            'X' => out.push('Z'),
            'x' => out.push_str(["+00", "+0000", "+00:00"][n.min(3) - 1]),
            'Z' if n == 4 => out.push_str("GMT"),
            'Z' if n >= 5 => out.push('Z'),
            'Z' => out.push_str("+0000"),
            'z' if n >= 4 => out.push_str("Coordinated Universal Time"),
            'z' => out.push_str("UTC"),
            _ => {
                for _ in 0..n {
                    out.push(c);
                }
            }
        }
        i += n;
    }
    out
}

/// The week of the week-based year as Java's `w` gives it in the US
/// locale Flink's JVM formats with: weeks start on Sunday and week 1 is
/// the one holding January 1st (so December's last days may be in week
/// 1 of the next year).
fn us_week(ms: i64) -> i64 {
    let days = ms.div_euclid(DAY_MS);
    // The week's Saturday decides its year (it holds January 1st of the
    // later year when the week spans two).
    let saturday = days - (days + 4).rem_euclid(7) + 6;
    let (y, _, _) = civil_from_days(saturday);
    (saturday - days_from_civil(y, 1, 1)) / 7 + 1
}

/// Month names, as Java's `DateTimeFormatter` writes `MMMM` (`MMM`: the
/// first three letters) in an English locale.
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Day names from Sunday (DAYOFWEEK 1), as `EEEE` (`EEE`: three letters).
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Why a DATE_FORMAT pattern is refused: a letter weir does not format.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    check_letters(
        pattern,
        "yuMdHhkKmsSaEDQwXxZz",
        "yyyy MM MMM MMMM dd D EEE EEEE HH hh k K mm ss SSS a Q w X x Z z",
    )
}

/// Why a pattern to read text with (TO_TIMESTAMP, TO_DATE,
/// UNIX_TIMESTAMP) is refused: a letter weir does not read, or a month's
/// name (`MMM`).
pub fn check_parse_pattern(pattern: &str) -> Result<(), String> {
    check_letters(
        pattern,
        "yMdHhmsSaXxZz",
        "yyyy MM dd HH hh mm ss SSS a X x Z z",
    )?;
    if pattern.contains("MMM") {
        return Err(format!(
            "DATE_FORMAT pattern `{pattern}`: month names (`MMM`) are not read (MM is)"
        ));
    }
    Ok(())
}

fn check_letters(pattern: &str, letters: &str, names: &str) -> Result<(), String> {
    let mut quoted = false;
    for c in pattern.chars() {
        if c == '\'' {
            quoted = !quoted;
        } else if !quoted && c.is_ascii_alphabetic() && !letters.contains(c) {
            return Err(format!(
                "DATE_FORMAT pattern `{pattern}`: the letter `{c}` is not supported ({names} are)"
            ));
        }
    }
    Ok(())
}

/// The parts EXTRACT and the time functions take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Calendar year.
    Year,
    /// Quarter 1..4.
    Quarter,
    /// Month 1..12.
    Month,
    /// ISO week of the year 1..53.
    Week,
    /// Day of the month.
    Day,
    /// Day of the week, Sunday = 1 as Flink's DAYOFWEEK.
    DayOfWeek,
    /// ISO day of the week, Monday = 1 .. Sunday = 7 (`ISODOW`).
    IsoDayOfWeek,
    /// The year of the ISO week (`ISOYEAR`): the year of its Thursday.
    IsoYear,
    /// The year divided by 10, toward zero (`DECADE`), as Calcite's.
    Decade,
    /// The century, 1 for the years 1..100 (`CENTURY`).
    Century,
    /// The millennium, 1 for the years 1..1000 (`MILLENNIUM`).
    Millennium,
    /// Day of the year 1..366.
    DayOfYear,
    /// Hour 0..23.
    Hour,
    /// Minute 0..59.
    Minute,
    /// Second 0..59.
    Second,
    /// Millisecond of the second (0..999).
    Millisecond,
    /// Microsecond of the second, as Flink's (milliseconds × 1000 here).
    Microsecond,
    /// Nanosecond of the second (milliseconds × 10^6 here).
    Nanosecond,
    /// Epoch seconds.
    Epoch,
}

/// EXTRACT(unit FROM timestamp) of epoch milliseconds.
pub fn extract(unit: TimeUnit, ms: i64) -> i64 {
    let (y, mo, d, h, mi, s, milli) = timestamp_parts(ms);
    let days = ms.div_euclid(DAY_MS);
    match unit {
        TimeUnit::Year => y,
        TimeUnit::Quarter => i64::from((mo - 1) / 3 + 1),
        TimeUnit::Month => i64::from(mo),
        TimeUnit::Day => i64::from(d),
        TimeUnit::Hour => i64::from(h),
        TimeUnit::Minute => i64::from(mi),
        TimeUnit::Second => i64::from(s),
        TimeUnit::Millisecond => i64::from(milli),
        TimeUnit::Microsecond => i64::from(milli) * 1000,
        TimeUnit::Nanosecond => i64::from(milli) * 1_000_000,
        TimeUnit::Epoch => ms.div_euclid(1000),
        // 1970-01-01 was a Thursday (5 with Sunday = 1).
        TimeUnit::DayOfWeek => (days + 4).rem_euclid(7) + 1,
        // 1970-01-01 was a Thursday (4 with Monday = 1).
        TimeUnit::IsoDayOfWeek => (days + 3).rem_euclid(7) + 1,
        TimeUnit::DayOfYear => days - crate::time::days_from_civil(y, 1, 1) + 1,
        TimeUnit::Week => {
            // ISO week: the week with the year's first Thursday is week 1.
            let thursday = iso_thursday(days);
            let (ty, _, _) = crate::time::civil_from_days(thursday);
            (thursday - crate::time::days_from_civil(ty, 1, 1)) / 7 + 1
        }
        TimeUnit::IsoYear => crate::time::civil_from_days(iso_thursday(days)).0,
        // Calcite's julianExtract: Java's division, toward zero.
        TimeUnit::Decade => y / 10,
        TimeUnit::Century if y > 0 => (y + 99) / 100,
        TimeUnit::Century => (y - 99) / 100,
        TimeUnit::Millennium if y > 0 => (y + 999) / 1000,
        TimeUnit::Millennium => (y - 999) / 1000,
    }
}

/// The Thursday of the ISO week (Monday to Sunday) holding `days`: its
/// year is the ISO week's year.
fn iso_thursday(days: i64) -> i64 {
    let wd = (days + 3).rem_euclid(7); // Monday = 0
    days - wd + 3
}

/// The calendar units FLOOR and CEIL take beyond a day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalendarUnit {
    /// A week from Sunday.
    Week,
    /// A month.
    Month,
    /// A quarter from January, April, July or October.
    Quarter,
    /// A year.
    Year,
    /// A decade: from a year divisible by 10.
    Decade,
    /// A century: from a year 1 past a multiple of 100 (2001-01-01).
    Century,
    /// A millennium: from a year 1 past a multiple of 1000.
    Millennium,
}

/// FLOOR (or CEIL) of a day (days since the epoch) to a calendar unit, as
/// Flink's `DateTimeUtils.julianDateFloor` (Calcite's), which FLOOR and
/// CEIL of a TIMESTAMP (its day) and a DATE call: a week starts on a
/// Sunday; CEIL moves to the next unit's first day unless the day is
/// already one (for QUARTER unless it is January 1st: Calcite's CEIL of
/// April 1st TO QUARTER is July 1st).
pub fn floor_days(days: i64, unit: CalendarUnit, ceil: bool) -> i64 {
    let (y, m, d) = civil_from_days(days);
    // The first day of month `m` (1.., past 12 into the next years).
    let first = |y: i64, m: u32| days_from_civil(y + i64::from((m - 1) / 12), (m - 1) % 12 + 1, 1);
    match unit {
        CalendarUnit::Year => first(y + i64::from(ceil && (m > 1 || d > 1)), 1),
        CalendarUnit::Month => first(y, m + u32::from(ceil && d > 1)),
        CalendarUnit::Quarter => {
            let q = m.div_ceil(3) + u32::from(ceil && (m > 1 || d > 1));
            first(y, q * 3 - 2)
        }
        // Calcite's julianDateFloor: CEIL moves to the next unit even from
        // the first day of one, and its years divide toward zero.
        CalendarUnit::Decade => {
            let dy = y / 10 + i64::from(ceil);
            days_from_civil(10 * dy, 1, 1)
        }
        CalendarUnit::Century => {
            let c = 100 * ((y + 99) / 100);
            days_from_civil(if ceil { c + 1 } else { c - 99 }, 1, 1)
        }
        CalendarUnit::Millennium => {
            let c = 1000 * ((y + 999) / 1000);
            days_from_civil(if ceil { c + 1 } else { c - 999 }, 1, 1)
        }
        CalendarUnit::Week => {
            // 1970-01-01 was a Thursday: 4 days after a Sunday.
            let dow = (days + 4).rem_euclid(7);
            days - dow + if ceil && dow > 0 { 7 } else { 0 }
        }
    }
}

/// A DECIMAL's unscaled `v` of scale `scale` rounded (half away from
/// zero, Java's `HALF_UP`) or truncated (toward zero) to `digits` digits
/// after the point (before it when negative), as Flink's ROUND and
/// TRUNCATE: the result is unscaled at scale `max(digits, 0)` when
/// `digits` is below `scale`, else `v` unchanged.
pub fn round_decimal(v: i128, scale: u8, digits: i32, trunc: bool) -> i128 {
    let s = i32::from(scale);
    if digits >= s {
        return v;
    }
    let Some(p) = 10i128.checked_pow((s - digits) as u32) else {
        return 0;
    };
    let (q, r) = (v / p, v % p);
    let q = if !trunc && r.unsigned_abs() * 2 >= p.unsigned_abs() {
        q + v.signum()
    } else {
        q
    };
    if digits < 0 {
        q.saturating_mul(10i128.pow((-digits) as u32))
    } else {
        q
    }
}

/// An integer rounded (half away from zero) or truncated to `digits`
/// digits after the point: unchanged unless `digits` is negative.
pub fn round_int(v: i64, digits: i32, trunc: bool) -> i64 {
    if digits >= 0 {
        return v;
    }
    i64::try_from(round_decimal(i128::from(v), 0, digits, trunc)).unwrap_or(0)
}

/// A double rounded (half away from zero) or truncated to `digits`
/// digits after the point as Flink does it: on the double's shortest
/// decimal text (Java's `BigDecimal.valueOf`), so that `ROUND(2.675, 2)`
/// is 2.68 although the double is slightly below 2.675. A zero result is
/// `0.0`, never `-0.0`: a `BigDecimal` has no negative zero, so Flink's
/// `ROUND(-0.1, 0)` is 0.0.
pub fn round_double(x: f64, digits: i32, trunc: bool) -> f64 {
    if x == 0.0 {
        return 0.0;
    }
    if !x.is_finite() {
        return x;
    }
    // `d.ddddde±N`: the digits, and the exponent of the first one.
    let text = format!("{:e}", x.abs());
    let (mantissa, exp) = text.split_once('e').expect("`{:e}` has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let all: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    // Digits kept: those before the point (exp + 1) and `digits` after.
    let keep = exp + 1 + digits;
    if keep >= all.len() as i32 {
        return x;
    }
    let mut kept: i128 = 0;
    for &c in &all[..keep.max(0) as usize] {
        kept = kept * 10 + i128::from(c - b'0');
    }
    if !trunc && keep >= 0 && all[keep as usize] >= b'5' {
        kept += 1;
    }
    if kept == 0 {
        return 0.0;
    }
    let v: f64 = format!("{kept}e{}", -digits).parse().unwrap_or(0.0);
    v.copysign(x)
}

/// The longest string a function builds (REPEAT, LPAD, RPAD, REPLACE,
/// CONCAT, CONCAT_WS, `||`), in bytes.
/// Flink's are Java strings, which stop at 2^31 - 1 characters and fail
/// the job past them (an OutOfMemoryError or NegativeArraySizeException);
/// weir fails the job past 1 GiB, before allocating it.
pub const MAX_STRING_BYTES: usize = 1 << 30;

/// Fails the job if `function` would build a string of `bytes` bytes,
/// over [`MAX_STRING_BYTES`]: called before the string is allocated.
pub fn check_length(function: &str, bytes: usize) {
    if bytes > MAX_STRING_BYTES {
        weir_runtime::fail_task(format!(
            "{function}: the result would be {bytes} bytes long, over the limit of {MAX_STRING_BYTES} bytes (1 GiB)"
        ))
    }
}

/// LPAD (`left`) or RPAD: `s` padded with repeats of `pad` to `len`
/// characters, or cut to its first `len`; NULL (`None`) for a negative
/// `len` or an empty `pad`, as Flink's. A result over
/// [`MAX_STRING_BYTES`] fails the job.
pub fn pad(s: &str, len: i64, pad: &str, left: bool) -> Option<String> {
    if len < 0 || pad.is_empty() {
        return None;
    }
    let len = usize::try_from(len).ok()?;
    let n = s.chars().count();
    if n >= len {
        return Some(s.chars().take(len).collect());
    }
    let (fill, pad_chars) = (len - n, pad.chars().count());
    let bytes = (fill / pad_chars)
        .saturating_mul(pad.len())
        .saturating_add(pad.chars().take(fill % pad_chars).map(char::len_utf8).sum())
        .saturating_add(s.len());
    check_length(if left { "LPAD" } else { "RPAD" }, bytes);
    let fill: String = pad.chars().cycle().take(len - n).collect();
    Some(if left { fill + s } else { format!("{s}{fill}") })
}

/// The 1-based character position of `needle` in `hay` at or after
/// character `from` (below 1 counts as 1), 0 if it is not there; an empty
/// `needle` is at 1 wherever it is looked for (Flink's LOCATE and
/// POSITION, on `BinaryStringData.indexOf`).
pub fn locate(needle: &str, hay: &str, from: i64) -> i64 {
    if needle.is_empty() {
        return 1;
    }
    let skip = usize::try_from(from - 1).unwrap_or(0);
    let Some((at, _)) = hay.char_indices().nth(skip) else {
        return 0;
    };
    match hay[at..].find(needle) {
        Some(b) => (skip + hay[at..at + b].chars().count() + 1) as i64,
        None => 0,
    }
}

/// INSTR(s, sub, start, nth) as Flink's: the position of the `nth`
/// occurrence of `sub` from character `start` on, or, for a negative
/// `start`, counting from the end backwards; 0 if there is none or
/// `start` is 0. `None` for an `nth` below 1 (Flink fails the job).
pub fn instr(s: &str, sub: &str, start: i64, nth: i64) -> Option<i64> {
    if nth <= 0 {
        return None;
    }
    if start == 0 {
        return Some(0);
    }
    if start > 0 {
        let (mut from, mut index) = (start, 0);
        for _ in 0..nth {
            index = locate(sub, s, from);
            if index == 0 {
                return Some(0);
            }
            from = index + 1;
        }
        return Some(index);
    }
    let (rs, rsub): (String, String) = (s.chars().rev().collect(), sub.chars().rev().collect());
    let pos = instr(&rs, &rsub, -start, nth)?;
    Some(if pos == 0 {
        0
    } else {
        s.chars().count() as i64 + 2 - pos - sub.chars().count() as i64
    })
}

/// OVERLAY(s PLACING r FROM from FOR len) as Flink's: `s` unchanged when
/// `from` is outside it; otherwise its first `from - 1` characters, `r`,
/// and the characters from `from + len` on only when they exist and
/// `len` is positive.
pub fn overlay(s: &str, r: &str, from: i64, len: i64) -> String {
    let n = s.chars().count() as i64;
    if from <= 0 || from > n {
        return s.to_owned();
    }
    let mut out: String = s.chars().take((from - 1) as usize).collect();
    out.push_str(r);
    if from.saturating_add(len) <= n && len > 0 {
        out.extend(s.chars().skip((from - 1 + len) as usize));
    }
    out
}

/// `s` without the leading and/or trailing characters that are in
/// `chars`.
pub fn trim_chars<'a>(s: &'a str, chars: &str, leading: bool, trailing: bool) -> &'a str {
    let is = |c: char| chars.contains(c);
    let s = if leading { s.trim_start_matches(is) } else { s };
    if trailing {
        s.trim_end_matches(is)
    } else {
        s
    }
}

/// INITCAP as Flink's (Calcite's): the first ASCII letter or digit of
/// each run of them upper-cased, the run's other letters lower-cased;
/// other characters untouched.
pub fn initcap(s: &str) -> String {
    let mut start = true;
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                let c = if start {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                };
                start = false;
                c
            } else {
                start = true;
                c
            }
        })
        .collect()
}

/// SPLIT_INDEX(s, sep, index): the `index`-th (0-based) piece of `s` split
/// at every `sep` (empty pieces kept; an empty `sep` splits at
/// whitespace), or `None` past the last piece, for a negative index or
/// an empty `s` (Flink's, on commons-lang's
/// `splitByWholeSeparatorPreserveAllTokens`).
pub fn split_index<'a>(s: &'a str, sep: &str, index: i64) -> Option<&'a str> {
    if index < 0 || s.is_empty() {
        return None;
    }
    let i = usize::try_from(index).ok()?;
    if sep.is_empty() {
        s.split(char::is_whitespace).nth(i)
    } else {
        s.split(sep).nth(i)
    }
}

/// A Java regular expression as Rust's `regex` reads it: `\d`, `\w`,
/// `\s` (and their negations) are ASCII classes as in Java, not Unicode
/// ones. Patterns with backreferences or look-around, which `regex` does
/// not have, are an error.
pub fn java_regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('s') => out.push_str("[\\t\\n\\x0B\\f\\r ]"),
            Some('S') => out.push_str("[^\\t\\n\\x0B\\f\\r ]"),
            Some(n) => {
                out.push('\\');
                out.push(n);
            }
            None => out.push('\\'),
        }
    }
    regex::Regex::new(&out)
}

/// Epoch milliseconds of `text` read with a Java date pattern (the
/// letters DATE_FORMAT takes: `yyyy MM dd HH hh mm ss SSS a`, quoted
/// text, other characters literally). `strict` (TO_TIMESTAMP, TO_DATE,
/// as Java's `DateTimeFormatter`): the whole text, fields in range;
/// otherwise (UNIX_TIMESTAMP, as `SimpleDateFormat`) text after the
/// pattern is ignored and fields out of range roll over.
pub fn parse_with_pattern(text: &str, pattern: &str, strict: bool) -> Option<i64> {
    let t: Vec<char> = text.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    let (mut y, mut mo, mut d, mut h, mut mi, mut s, mut ms) =
        (1970i64, 1i64, 1i64, 0i64, 0i64, 0i64, 0i64);
    let mut pm: Option<bool> = None;
    let mut twelve = false;
    let mut offset: Option<i64> = None;
    let (mut ti, mut pi) = (0usize, 0usize);
    while pi < p.len() {
        let c = p[pi];
        if c == '\'' {
            let mut j = pi + 1;
            if j < p.len() && p[j] == '\'' {
                (t.get(ti) == Some(&'\'')).then_some(())?;
                ti += 1;
                pi += 2;
                continue;
            }
            while j < p.len() && p[j] != '\'' {
                (t.get(ti) == Some(&p[j])).then_some(())?;
                ti += 1;
                j += 1;
            }
            pi = j + 1;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            (t.get(ti) == Some(&c)).then_some(())?;
            ti += 1;
            pi += 1;
            continue;
        }
        let mut n = 1;
        while pi + n < p.len() && p[pi + n] == c {
            n += 1;
        }
        if "XxZz".contains(c) {
            offset = Some(parse_zone(&t, &mut ti, c)?);
            pi += n;
            continue;
        }
        if c == 'a' {
            let rest: String = t[ti..]
                .iter()
                .take(2)
                .collect::<String>()
                .to_ascii_uppercase();
            pm = Some(match rest.as_str() {
                "AM" => false,
                "PM" => true,
                _ => return None,
            });
            ti += 2;
            pi += n;
            continue;
        }
        // A field adjacent to another numeric field takes exactly its
        // width of digits; otherwise all the digits there are.
        let next_numeric = p.get(pi + n).is_some_and(|q| "yMdHhmsS".contains(*q));
        let start = ti;
        while ti < t.len() && t[ti].is_ascii_digit() && (!next_numeric || ti - start < n) {
            ti += 1;
        }
        // Strict widths, as `DateTimeFormatter`'s: `MM` exactly two
        // digits, `M` one or more, `yyyy` four or more, `yy` two.
        let width = ti - start;
        let bad_width = match c {
            'y' if n == 2 => width != 2,
            'y' => width < n,
            _ => n >= 2 && width != n,
        };
        if ti == start || (strict && (bad_width || (next_numeric && width != n))) {
            return None;
        }
        let digits: String = t[start..ti].iter().collect();
        let v: i64 = digits.parse().ok()?;
        match c {
            'y' if n == 2 && ti - start == 2 => y = 2000 + v,
            'y' => y = v,
            'M' => mo = v,
            'd' => d = v,
            'H' => h = v,
            'h' => {
                h = v;
                twelve = true;
            }
            'm' => mi = v,
            's' => s = v,
            'S' => {
                // Digits of the fraction: the first three are milliseconds.
                let f: String = digits.chars().chain("000".chars()).take(3).collect();
                ms = f.parse().ok()?;
            }
            _ => return None,
        }
        pi += n;
    }
    if twelve {
        if strict && !(1..=12).contains(&h) {
            return None;
        }
        h = h % 12 + if pm == Some(true) { 12 } else { 0 };
    } else if pm == Some(true) && h < 12 {
        h += 12;
    }
    if strict
        && (ti != t.len()
            || !(1..=12).contains(&mo)
            || d < 1
            || d > i64::from(days_in_month(y, mo as u32))
            || h > 23
            || mi > 59
            || s > 59)
    {
        return None;
    }
    // Lenient: months past 12 roll into years, days past the month's into
    // the next, as `SimpleDateFormat` does.
    let months = y.checked_mul(12)?.checked_add(mo - 1)?;
    let first = days_from_civil(months.div_euclid(12), (months.rem_euclid(12) + 1) as u32, 1);
    let days = first.checked_add(d - 1)?;
    let local = days
        .checked_mul(DAY_MS)?
        .checked_add(((h * 60 + mi) * 60 + s) * 1000 + ms)?;
    // A zone read: `SimpleDateFormat` (UNIX_TIMESTAMP) takes the time as
    // that zone's; Flink's TO_TIMESTAMP and TO_DATE keep the wall clock
    // and drop the zone (its `fromTemporalAccessor` reads the local
    // fields).
    match offset {
        Some(o) if !strict => local.checked_sub(o),
        _ => Some(local),
    }
}

/// A zone's offset from UTC in milliseconds, read at `t[*ti..]` for
/// pattern letter `c`, as Java's parsers take it: `Z` (UTC) or `+HH`,
/// `+HHMM`, `+HH:MM` for `X` and `x`, `+HHMM` or `+HH:MM` for `Z`, and
/// for `z` the names `UTC`, `GMT`, `UT` or `Z`, optionally followed by
/// such an offset (other names are not read).
fn parse_zone(t: &[char], ti: &mut usize, c: char) -> Option<i64> {
    let rest: String = t[*ti..].iter().collect();
    if c == 'z' {
        let name = ["UTC", "GMT", "UT", "Z"]
            .into_iter()
            .find(|n| rest.starts_with(n))?;
        *ti += name.len();
        if !matches!(t.get(*ti), Some('+' | '-')) {
            return Some(0);
        }
    } else if (c == 'X' || c == 'Z') && rest.starts_with('Z') {
        *ti += 1;
        return Some(0);
    }
    let sign = match t.get(*ti)? {
        '+' => 1,
        '-' => -1,
        _ => return None,
    };
    let digit = |i: usize| t.get(i).and_then(|d| d.to_digit(10)).map(i64::from);
    let hours = digit(*ti + 1)? * 10 + digit(*ti + 2)?;
    *ti += 3;
    let mut minutes = 0;
    let colon = t.get(*ti) == Some(&':');
    let at = *ti + usize::from(colon);
    if let (Some(a), Some(b)) = (digit(at), digit(at + 1)) {
        minutes = a * 10 + b;
        *ti = at + 2;
    } else if colon || c == 'Z' {
        return None;
    }
    if hours > 18 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 60 + minutes) * 60_000)
}

/// Days since the epoch `months` calendar months after `days`, the day of
/// the month cut to the target month's last (Jan 31 + 1 month = Feb 28/29).
pub fn add_months_days(days: i64, months: i64) -> i64 {
    let (y, m, d) = civil_from_days(days);
    // (held to ±10^10 years, far past any timestamp, so that the civil
    // arithmetic below cannot overflow whatever `months` is)
    const LIMIT: i64 = 12 * 10_000_000_000;
    let total = (y * 12 + i64::from(m) - 1)
        .saturating_add(months)
        .clamp(-LIMIT, LIMIT);
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    days_from_civil(ny, nm, d.min(days_in_month(ny, nm)))
}

/// A timestamp (epoch ms) `months` calendar months later.
pub fn add_months(ms: i64, months: i64) -> i64 {
    // (wrapping past the BIGINT range, as Java's long arithmetic in
    // Calcite's `DateTimeUtils.addMonths` does, rather than panicking)
    add_months_days(ms.div_euclid(DAY_MS), months)
        .wrapping_mul(DAY_MS)
        .wrapping_add(ms.rem_euclid(DAY_MS))
}

fn subtract_months_days(d0: i64, d1: i64) -> i64 {
    if d0 < d1 {
        return -subtract_months_days(d1, d0);
    }
    // No month has more than 31 days: the estimate is not above the answer.
    let mut m = (d0 - d1) / 31;
    loop {
        if add_months_days(d1, m) >= d0 || add_months_days(d1, m + 1) > d0 {
            return m;
        }
        m += 1;
    }
}

/// Whole calendar months from `t1` to `t0` (epoch ms), as Calcite's
/// `subtractMonths` that Flink's TIMESTAMPDIFF(MONTH, t1, t0) is.
pub fn subtract_months(t0: i64, t1: i64) -> i64 {
    let (d0, ms0) = (t0.div_euclid(DAY_MS), t0.rem_euclid(DAY_MS));
    let (d1, ms1) = (t1.div_euclid(DAY_MS), t1.rem_euclid(DAY_MS));
    let mut x = subtract_months_days(d0, d1);
    if add_months_days(d1, x) == d0 && ms0 < ms1 {
        x -= 1;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_timestamp;

    #[test]
    fn like_patterns() {
        assert!(like("hello", "h%o", None));
        assert!(like("hello", "_ello", None));
        assert!(!like("hello", "h_o", None));
        assert!(like("a%b", "a\\%b", Some('\\')));
        assert!(!like("axb", "a\\%b", Some('\\')));
        assert!(like("", "%", None));
        assert!(like("abcabc", "%abc", None));
    }

    #[test]
    fn floor_and_ceil_to_calendar_units_as_calcite() {
        let day = |y, m, d| days_from_civil(y, m, d);
        let cases = [
            // (date, unit, floor, ceil)
            (
                (2024, 1, 31),
                CalendarUnit::Week,
                (2024, 1, 28),
                (2024, 2, 4),
            ),
            (
                (2024, 1, 28),
                CalendarUnit::Week,
                (2024, 1, 28),
                (2024, 1, 28),
            ),
            (
                (2024, 2, 29),
                CalendarUnit::Month,
                (2024, 2, 1),
                (2024, 3, 1),
            ),
            (
                (2024, 12, 15),
                CalendarUnit::Month,
                (2024, 12, 1),
                (2025, 1, 1),
            ),
            (
                (2024, 3, 1),
                CalendarUnit::Month,
                (2024, 3, 1),
                (2024, 3, 1),
            ),
            (
                (2024, 5, 20),
                CalendarUnit::Quarter,
                (2024, 4, 1),
                (2024, 7, 1),
            ),
            (
                (2024, 4, 1),
                CalendarUnit::Quarter,
                (2024, 4, 1),
                (2024, 7, 1),
            ),
            (
                (2024, 11, 2),
                CalendarUnit::Quarter,
                (2024, 10, 1),
                (2025, 1, 1),
            ),
            (
                (2024, 1, 1),
                CalendarUnit::Quarter,
                (2024, 1, 1),
                (2024, 1, 1),
            ),
            (
                (2023, 3, 15),
                CalendarUnit::Year,
                (2023, 1, 1),
                (2024, 1, 1),
            ),
            ((2023, 1, 1), CalendarUnit::Year, (2023, 1, 1), (2023, 1, 1)),
            (
                (1969, 12, 31),
                CalendarUnit::Week,
                (1969, 12, 28),
                (1970, 1, 4),
            ),
        ];
        for ((y, m, d), unit, (fy, fm, fd), (cy, cm, cd)) in cases {
            let at = day(y, m, d);
            assert_eq!(
                floor_days(at, unit, false),
                day(fy, fm, fd),
                "FLOOR {y}-{m}-{d} {unit:?}"
            );
            assert_eq!(
                floor_days(at, unit, true),
                day(cy, cm, cd),
                "CEIL {y}-{m}-{d} {unit:?}"
            );
        }
    }

    #[test]
    fn rounding() {
        assert_eq!(round_decimal(-255, 2, 1, false), -26);
        assert_eq!(round_decimal(-255, 2, 1, true), -25);
        assert_eq!(round_decimal(123_456, 2, -2, false), 1200);
        assert_eq!(round_decimal(125_000, 2, -3, false), 1000);
        assert_eq!(round_decimal(150_000, 2, -3, false), 2000);
        assert_eq!(round_decimal(5, 2, -40, false), 0);
        assert_eq!(round_decimal(5, 2, 3, false), 5);
        assert_eq!(round_int(i64::MAX, -1, false), 0);
        assert_eq!(round_int(-15, -1, false), -20);
        assert_eq!(round_double(2.675, 2, false), 2.68);
        assert_eq!(round_double(1.005, 2, false), 1.01);
        assert_eq!(round_double(-1.5, 0, false), -2.0);
        assert_eq!(round_double(0.4, 0, false), 0.0);
        assert_eq!(round_double(0.04, -1, false), 0.0);
        assert_eq!(round_double(1234.5678, -2, false), 1200.0);
        assert_eq!(round_double(1e300, 2, false), 1e300);
        assert_eq!(round_double(123.456, 1, true), 123.4);
        // No negative zero, as Java's BigDecimal has none.
        for (x, d, trunc) in [(-0.1, 0, false), (-0.4, 0, false), (-0.04, -1, false)]
            .into_iter()
            .chain([(-0.9, 0, true), (-0.0, 2, false), (-0.0, 2, true)])
        {
            let r = round_double(x, d, trunc);
            assert!(r == 0.0 && r.is_sign_positive(), "{x} {d} {trunc}: {r}");
        }
        assert!(round_double(f64::NAN, 1, false).is_nan());
    }

    #[test]
    fn padding_splitting_and_regexes() {
        assert_eq!(pad("hi", 4, "??", true).as_deref(), Some("??hi"));
        assert_eq!(pad("hi", 1, "??", true).as_deref(), Some("h"));
        assert_eq!(pad("hi", 5, "ab", false).as_deref(), Some("hiaba"));
        assert_eq!(pad("hi", 0, "ab", false).as_deref(), Some(""));
        assert_eq!(pad("hi", 3, "", false), None);
        assert_eq!(initcap("aBC dEF"), "Abc Def");
        assert_eq!(split_index("https://www.x.com/a/b/c", "/", 3), Some("a"));
        assert_eq!(split_index("", "/", 0), None);
        assert_eq!(split_index("a b", "", 1), Some("b"));
        assert_eq!(trim_chars("xyaxy", "xy", true, true), "a");
        let r = java_regex(r"[\d-]+\s\w").unwrap();
        assert!(r.is_match("1-2 x"));
        assert!(!r.is_match("١ x"));
        assert!(java_regex(r"(a)\1").is_err());
        assert!(java_regex(r"a(?!b)").is_err());
        assert!(java_regex(r"\\d").unwrap().is_match("\\d"));
    }

    #[test]
    fn patterns_and_months() {
        let ts = |t: &str| parse_timestamp(t).unwrap();
        let p = |t: &str, f: &str, strict: bool| parse_with_pattern(t, f, strict);
        assert_eq!(
            p("2024-01-02 03:04:05", "yyyy-MM-dd HH:mm:ss", true),
            Some(ts("2024-01-02 03:04:05"))
        );
        assert_eq!(
            p(
                "2024-01-02 03:04:05.123 trailing",
                "yyyy-MM-dd HH:mm:ss",
                false
            ),
            Some(ts("2024-01-02 03:04:05"))
        );
        assert_eq!(
            p("2024-01-02 03:04:05 x", "yyyy-MM-dd HH:mm:ss", true),
            None
        );
        // A zone: TO_TIMESTAMP (strict) keeps the wall clock, as Flink's
        // `fromTemporalAccessor`; UNIX_TIMESTAMP's `SimpleDateFormat`
        // takes the time as the zone's.
        let iso = "yyyy-MM-dd'T'HH:mm:ssXXX";
        assert_eq!(
            p("2024-01-02T03:04:05+02:00", iso, true),
            Some(ts("2024-01-02 03:04:05"))
        );
        assert_eq!(
            p("2024-01-02T03:04:05+02:00", iso, false),
            Some(ts("2024-01-02 01:04:05"))
        );
        assert_eq!(
            p("2024-01-02T03:04:05Z", iso, false),
            Some(ts("2024-01-02 03:04:05"))
        );
        assert_eq!(
            p("2024-01-02 03:04:05 -0130", "yyyy-MM-dd HH:mm:ss Z", false),
            Some(ts("2024-01-02 04:34:05"))
        );
        assert_eq!(
            p(
                "2024-01-02 03:04:05 GMT+01:00",
                "yyyy-MM-dd HH:mm:ss z",
                false
            ),
            Some(ts("2024-01-02 02:04:05"))
        );
        assert_eq!(
            p("2024-01-02 03:04:05 PST", "yyyy-MM-dd HH:mm:ss z", false),
            None
        );
        assert_eq!(p("2024-01-02T03:04:05+2", iso, true), None);
        assert_eq!(
            p("20240102 0304", "yyyyMMdd HHmm", true),
            Some(ts("2024-01-02 03:04"))
        );
        assert_eq!(
            p("02.01.24 03:04 PM", "dd.MM.yy hh:mm a", true),
            Some(ts("2024-01-02 15:04"))
        );
        assert_eq!(
            p("2024-01-02T03:04:05.6", "yyyy-MM-dd'T'HH:mm:ss.S", true),
            Some(ts("2024-01-02 03:04:05.600"))
        );
        // Lenient: the 32nd of January is February 1st.
        assert_eq!(p("2024-01-32", "yyyy-MM-dd", false), Some(ts("2024-02-01")));
        assert_eq!(p("2024-01-32", "yyyy-MM-dd", true), None);
        assert_eq!(p("2024/01", "yyyy-MM", false), None);
        assert_eq!(p("2024-1-5", "yyyy-MM-dd", true), None);
        assert_eq!(p("2024-1-5", "yyyy-M-d", true), Some(ts("2024-01-05")));
        assert_eq!(p("2024-1-5", "yyyy-MM-dd", false), Some(ts("2024-01-05")));
        assert_eq!(
            add_months(ts("2024-01-31 10:00:00"), 1),
            ts("2024-02-29 10:00:00")
        );
        assert_eq!(
            add_months(ts("2024-03-31 00:00:00"), -13),
            ts("2023-02-28 00:00:00")
        );
        // Far past any timestamp: no overflow (it panicked in debug builds
        // on `TIMESTAMPADD(YEAR, 2147483647, ts)`).
        let _ = add_months(ts("2024-01-01 00:00:00"), 12 * i64::from(i32::MAX));
        let _ = add_months(ts("2024-01-01 00:00:00"), i64::MIN);
        let _ = add_months(i64::MAX, i64::MAX);
        assert_eq!(subtract_months(ts("2024-02-29"), ts("2024-01-31")), 1);
        assert_eq!(subtract_months(ts("2024-02-28"), ts("2024-01-29")), 0);
        assert_eq!(subtract_months(ts("2024-01-31"), ts("2024-02-29")), -1);
        assert_eq!(
            subtract_months(ts("2024-03-15 09:00"), ts("2024-01-15 10:00")),
            1
        );
    }

    #[test]
    fn date_format_and_extract() {
        let ts = parse_timestamp("2024-03-05 14:07:09.045").unwrap();
        assert_eq!(
            date_format(ts, "yyyy-MM-dd HH:mm:ss.SSS"),
            "2024-03-05 14:07:09.045"
        );
        assert_eq!(date_format(ts, "yy/M/d 'at' hh a"), "24/3/5 at 02 PM");
        // `w` as Java's in the US locale (Sunday first, week 1 holds
        // January 1st), and the zone letters of the session's UTC; they
        // were refused.
        let w = |t: &str| date_format(parse_timestamp(t).unwrap(), "ww");
        assert_eq!(w("2024-03-05 00:00:00"), "10");
        assert_eq!(w("2024-12-31 00:00:00"), "01");
        assert_eq!(w("2022-01-01 00:00:00"), "01");
        assert_eq!(w("2022-01-02 00:00:00"), "02");
        assert_eq!(w("2021-12-31 00:00:00"), "01");
        assert_eq!(w("2023-12-30 00:00:00"), "52");
        assert_eq!(
            date_format(ts, "yyyy-MM-dd'T'HH:mm:ssX|XXX|Z|z|x"),
            "2024-03-05T14:07:09Z|Z|+0000|UTC|+00"
        );
        assert!(check_pattern("yyyy-MM-dd'T'HH:mm:ssXXX w z").is_ok());
        assert_eq!(extract(TimeUnit::DayOfWeek, ts), 3); // a Tuesday
        assert_eq!(extract(TimeUnit::DayOfYear, ts), 65);
        assert_eq!(extract(TimeUnit::Week, ts), 10);
        assert_eq!(extract(TimeUnit::Quarter, ts), 1);
        assert_eq!(
            date_format(ts, "EEE, d MMM yyyy; EEEE MMMM D Q k K"),
            "Tue, 5 Mar 2024; Tuesday March 65 1 14 2"
        );
        let midnight = parse_timestamp("2023-12-31 00:30:00").unwrap();
        assert_eq!(
            date_format(midnight, "EEEE MMM k K h"),
            "Sunday Dec 24 0 12"
        );
        assert!(check_pattern("yyyy-MM-dd EEE MMMM").is_ok());
        assert!(check_pattern("GGG").is_err());
    }

    #[test]
    fn extract_iso_and_long_units_as_calcite() {
        let ts = |t: &str| parse_timestamp(t).unwrap();
        let cases = [
            // (timestamp, unit, Flink's EXTRACT)
            ("2024-03-03 10:00:00", TimeUnit::IsoDayOfWeek, 7), // a Sunday
            ("2024-03-04 10:00:00", TimeUnit::IsoDayOfWeek, 1),
            ("2024-12-30 00:00:00", TimeUnit::IsoYear, 2025), // ISO week 1 of 2025
            ("2021-01-03 00:00:00", TimeUnit::IsoYear, 2020), // ISO week 53 of 2020
            ("2024-06-01 00:00:00", TimeUnit::IsoYear, 2024),
            ("2024-01-01 00:00:00", TimeUnit::Decade, 202),
            ("2000-01-01 00:00:00", TimeUnit::Century, 20),
            ("2001-01-01 00:00:00", TimeUnit::Century, 21),
            ("2000-12-31 00:00:00", TimeUnit::Millennium, 2),
            ("2001-01-01 00:00:00", TimeUnit::Millennium, 3),
        ];
        for (t, unit, want) in cases {
            assert_eq!(extract(unit, ts(t)), want, "EXTRACT({unit:?} FROM {t})");
        }
    }

    #[test]
    fn floor_and_ceil_to_decades_centuries_and_millennia_as_calcite() {
        let day = |y, m, d| days_from_civil(y, m, d);
        let cases = [
            // (date, unit, floor, ceil): CEIL moves on even from a unit's first day
            (
                (2024, 5, 6),
                CalendarUnit::Decade,
                (2020, 1, 1),
                (2030, 1, 1),
            ),
            (
                (2020, 1, 1),
                CalendarUnit::Decade,
                (2020, 1, 1),
                (2030, 1, 1),
            ),
            (
                (2024, 5, 6),
                CalendarUnit::Century,
                (2001, 1, 1),
                (2101, 1, 1),
            ),
            (
                (2000, 5, 6),
                CalendarUnit::Century,
                (1901, 1, 1),
                (2001, 1, 1),
            ),
            (
                (2024, 5, 6),
                CalendarUnit::Millennium,
                (2001, 1, 1),
                (3001, 1, 1),
            ),
        ];
        for ((y, m, d), unit, (fy, fm, fd), (cy, cm, cd)) in cases {
            let at = day(y, m, d);
            assert_eq!(
                floor_days(at, unit, false),
                day(fy, fm, fd),
                "FLOOR {unit:?}"
            );
            assert_eq!(floor_days(at, unit, true), day(cy, cm, cd), "CEIL {unit:?}");
        }
    }
}

/// A digest function: MD5, SHA1 or one of SHA-2's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    /// MD5
    Md5,
    /// SHA1
    Sha1,
    /// SHA224
    Sha224,
    /// SHA256
    Sha256,
    /// SHA384
    Sha384,
    /// SHA512
    Sha512,
}

impl Digest {
    /// The function `name` (upper case) computes, if it is one.
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "MD5" => Self::Md5,
            "SHA1" => Self::Sha1,
            "SHA224" => Self::Sha224,
            "SHA256" => Self::Sha256,
            "SHA384" => Self::Sha384,
            "SHA512" => Self::Sha512,
            _ => return None,
        })
    }
}

/// The digest of `s`'s UTF-8 bytes in lower-case hex, as Flink's MD5,
/// SHA1, SHA2 and SHA-n functions give it.
pub fn hex_digest(kind: Digest, s: &str) -> String {
    use sha2::Digest as _;
    let bytes = s.as_bytes();
    let out: Vec<u8> = match kind {
        Digest::Md5 => md5::Md5::digest(bytes).to_vec(),
        Digest::Sha1 => sha1::Sha1::digest(bytes).to_vec(),
        Digest::Sha224 => sha2::Sha224::digest(bytes).to_vec(),
        Digest::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
        Digest::Sha384 => sha2::Sha384::digest(bytes).to_vec(),
        Digest::Sha512 => sha2::Sha512::digest(bytes).to_vec(),
    };
    let mut hex = String::with_capacity(out.len() * 2);
    for b in out {
        use std::fmt::Write;
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// TO_BASE64: the standard alphabet with padding, of the UTF-8 bytes.
pub fn to_base64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

/// FROM_BASE64: the decoded bytes as text (an invalid UTF-8 sequence
/// becomes U+FFFD, as Java's decoding of the bytes does); `None` (NULL)
/// for text that is not base64.
pub fn from_base64(s: &str) -> Option<String> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine as _;
    // Java's `Base64.getDecoder()`: the `=` padding may be left out (but
    // not be wrong), and the unused low bits of the last character are
    // not checked (`YQ` and `YR` are both `a`).
    const JAVA: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    // (but padding there must complete the last group of four, as Java's)
    if s.contains('=') && !s.len().is_multiple_of(4) {
        return None;
    }
    let bytes = JAVA.decode(s).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
