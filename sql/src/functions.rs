//! The scalar functions' value-level work that is more than one line:
//! LIKE matching, DATE_FORMAT's Java-style patterns, EXTRACT.

use crate::time::{timestamp_parts, DAY_MS};

/// Whether `text` matches SQL `LIKE` `pattern` (`%` any run, `_` one
/// character; `escape` makes the next character literal).
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

/// A timestamp formatted with a Java `SimpleDateFormat`-style pattern as
/// Flink's DATE_FORMAT takes: `yyyy`, `yy`, `MM`, `M`, `dd`, `d`, `HH`,
/// `H`, `hh`, `mm`, `ss`, `SSS`, `a`, text in single quotes; other
/// letters are refused when the query is planned ([`check_pattern`]).
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
            'y' if n == 2 => out.push_str(&field(y.rem_euclid(100), 2)),
            'y' => out.push_str(&field(y, n.max(4))),
            'M' => out.push_str(&field(i64::from(mo), n)),
            'd' => out.push_str(&field(i64::from(d), n)),
            'H' => out.push_str(&field(i64::from(h), n)),
            'h' => out.push_str(&field(i64::from((h + 11) % 12 + 1), n)),
            'm' => out.push_str(&field(i64::from(mi), n)),
            's' => out.push_str(&field(i64::from(s), n)),
            'S' => out.push_str(&field(i64::from(milli), 3)[..n.min(3)]),
            'a' => out.push_str(if h < 12 { "AM" } else { "PM" }),
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

/// Why a DATE_FORMAT pattern is refused: a letter weir does not format.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    let mut quoted = false;
    for c in pattern.chars() {
        if c == '\'' {
            quoted = !quoted;
        } else if !quoted && c.is_ascii_alphabetic() && !"yMdHhmsSa".contains(c) {
            return Err(format!(
                "DATE_FORMAT pattern `{pattern}`: the letter `{c}` is not supported (yyyy MM dd HH hh mm ss SSS a are)"
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
        TimeUnit::Epoch => ms.div_euclid(1000),
        // 1970-01-01 was a Thursday (5 with Sunday = 1).
        TimeUnit::DayOfWeek => (days + 4).rem_euclid(7) + 1,
        TimeUnit::DayOfYear => days - crate::time::days_from_civil(y, 1, 1) + 1,
        TimeUnit::Week => {
            // ISO week: the week with the year's first Thursday is week 1.
            let wd = (days + 3).rem_euclid(7); // Monday = 0
            let thursday = days - wd + 3;
            let (ty, _, _) = crate::time::civil_from_days(thursday);
            (thursday - crate::time::days_from_civil(ty, 1, 1)) / 7 + 1
        }
    }
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
    fn date_format_and_extract() {
        let ts = parse_timestamp("2024-03-05 14:07:09.045").unwrap();
        assert_eq!(
            date_format(ts, "yyyy-MM-dd HH:mm:ss.SSS"),
            "2024-03-05 14:07:09.045"
        );
        assert_eq!(date_format(ts, "yy/M/d 'at' hh a"), "24/3/5 at 02 PM");
        assert_eq!(extract(TimeUnit::DayOfWeek, ts), 3); // a Tuesday
        assert_eq!(extract(TimeUnit::DayOfYear, ts), 65);
        assert_eq!(extract(TimeUnit::Week, ts), 10);
        assert_eq!(extract(TimeUnit::Quarter, ts), 1);
        assert!(check_pattern("yyyy-MM-dd").is_ok());
        assert!(check_pattern("EEE").is_err());
    }
}
