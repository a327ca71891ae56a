//! Calendar arithmetic for TIMESTAMP and DATE values: epoch milliseconds
//! and days to and from Flink SQL's text forms (`yyyy-MM-dd HH:mm:ss.SSS`,
//! `yyyy-MM-dd`), in UTC, the proleptic Gregorian calendar.

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The parts of a timestamp: `(year, month, day, hour, minute, second,
/// millisecond)`.
pub fn timestamp_parts(ms: i64) -> (i64, u32, u32, u32, u32, u32, u32) {
    let days = ms.div_euclid(DAY_MS);
    let rem = ms.rem_euclid(DAY_MS);
    let (y, mo, d) = civil_from_days(days);
    let secs = rem / 1000;
    (
        y,
        mo,
        d,
        (secs / 3600) as u32,
        (secs / 60 % 60) as u32,
        (secs % 60) as u32,
        (rem % 1000) as u32,
    )
}

/// `yyyy-MM-dd HH:mm:ss.SSS`, Flink SQL's TIMESTAMP(3) text.
pub fn format_timestamp(ms: i64) -> String {
    let (y, mo, d, h, mi, s, milli) = timestamp_parts(ms);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{milli:03}")
}

/// `yyyy-MM-dd`.
pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(i64::from(days));
    format!("{y:04}-{m:02}-{d:02}")
}

fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.iter().try_fold(0u32, |n, &c| {
        n.checked_mul(10)?.checked_add(u32::from(c - b'0'))
    })
}

/// Days since the epoch of `yyyy-MM-dd` (month and day may have one digit).
pub fn parse_date(text: &str) -> Option<i32> {
    let t = text.trim().as_bytes();
    let mut parts = t.splitn(3, |&c| c == b'-');
    let y = digits(parts.next()?)?;
    let m = digits(parts.next()?)?;
    let d = digits(parts.next()?)?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(i64::from(y), m) {
        return None;
    }
    i32::try_from(days_from_civil(i64::from(y), m, d)).ok()
}

/// Days since the epoch of text CAST to a DATE, as Flink's
/// `DateTimeUtils.parseDate` reads it: what comes before the first space
/// (a timestamp's text gives its date), then `y[-m[-d]]`, each part digits
/// (blanks around them ignored), a missing month or day 1, the year
/// 0..9999.
pub fn parse_date_leniently(text: &str) -> Option<i32> {
    let t = text.trim();
    let t = t.split(' ').next().unwrap_or(t);
    let mut parts = t.splitn(3, '-');
    let mut part = |default: Option<u32>| match parts.next() {
        Some(p) => digits(p.trim().as_bytes()),
        None => default,
    };
    let y = part(None)?;
    let m = part(Some(1))?;
    let d = part(Some(1))?;
    if y > 9999 || !(1..=12).contains(&m) || d == 0 || d > days_in_month(i64::from(y), m) {
        return None;
    }
    i32::try_from(days_from_civil(i64::from(y), m, d)).ok()
}

/// The days in month `m` (1..12) of year `y`.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Epoch milliseconds of `yyyy-MM-dd[ HH:mm[:ss[.fraction]]]` (a `T` may
/// separate date and time, as ISO-8601 writes it; a trailing `Z` is
/// accepted). Digits after the third of the fraction are dropped, as
/// TIMESTAMP(3) does.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    if let Some(ms) = parse_fixed_timestamp(text.as_bytes()) {
        return Some(ms);
    }
    parse_timestamp_general(text)
}

/// [`parse_timestamp`] by splitting the text.
fn parse_timestamp_general(text: &str) -> Option<i64> {
    let t = text.trim();
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = match t.find([' ', 'T']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let days = i64::from(parse_date(date)?);
    let mut ms = days * DAY_MS;
    if let Some(time) = time {
        let (hms, frac) = match time.find('.') {
            Some(i) => (&time[..i], Some(&time[i + 1..])),
            None => (time, None),
        };
        let mut it = hms.split(':');
        let h = digits(it.next()?.as_bytes())?;
        let mi = digits(it.next()?.as_bytes())?;
        let s = match it.next() {
            Some(s) => digits(s.as_bytes())?,
            None => 0,
        };
        if it.next().is_some() || h > 23 || mi > 59 || s > 59 {
            return None;
        }
        ms += (i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s)) * 1000;
        if let Some(frac) = frac {
            let f = frac.as_bytes();
            if f.is_empty() || !f.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let mut milli = 0i64;
            for i in 0..3 {
                milli = milli * 10 + f.get(i).map_or(0, |&c| i64::from(c - b'0'));
            }
            ms += milli;
        }
    }
    Some(ms)
}

/// `yyyy-MM-dd HH:mm:ss[.SSS]` (or with a `T`) exactly, the form weir
/// and Flink write: read by position, without splitting. `None` for any
/// other text, which [`parse_timestamp`] then reads the general way.
#[inline]
fn parse_fixed_timestamp(b: &[u8]) -> Option<i64> {
    if !(b.len() == 19 || b.len() == 23)
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
        || (b.len() == 23 && b[19] != b'.')
    {
        return None;
    }
    let d = |i: usize| {
        let c = b[i].wrapping_sub(b'0');
        (c < 10).then_some(u32::from(c))
    };
    let d2 = |i: usize| Some(d(i)? * 10 + d(i + 1)?);
    let (y, m, day) = (d2(0)? * 100 + d2(2)?, d2(5)?, d2(8)?);
    let (h, mi, s) = (d2(11)?, d2(14)?, d2(17)?);
    let milli = if b.len() == 23 {
        d(20)? * 100 + d2(21)?
    } else {
        0
    };
    if !(1..=12).contains(&m)
        || day == 0
        || day > days_in_month(i64::from(y), m)
        || h > 23
        || mi > 59
        || s > 59
    {
        return None;
    }
    let secs = i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s);
    Some(days_from_civil(i64::from(y), m, day) * DAY_MS + secs * 1000 + i64::from(milli))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_round_trip() {
        for z in (-800_000..800_000).step_by(37) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn timestamps_format_and_parse() {
        let ms = parse_timestamp("2024-02-29 23:59:58.123").unwrap();
        assert_eq!(format_timestamp(ms), "2024-02-29 23:59:58.123");
        assert_eq!(parse_timestamp("1970-01-01 00:00:00"), Some(0));
        assert_eq!(parse_timestamp("1969-12-31 23:59:59.9"), Some(-100));
        assert_eq!(format_timestamp(-100), "1969-12-31 23:59:59.900");
        assert_eq!(
            parse_timestamp("2024-01-01T10:00:00Z"),
            parse_timestamp("2024-01-01 10:00")
        );
        assert_eq!(parse_timestamp("2023-02-29 00:00:00"), None);
        assert_eq!(parse_timestamp("2023-01-01 24:00:00"), None);
        assert_eq!(parse_timestamp("x"), None);
        assert_eq!(parse_timestamp("2024-01-01 10:00:00.00x"), None);
        assert_eq!(
            parse_date("2024-1-5").map(format_date).as_deref(),
            Some("2024-01-05")
        );
    }

    /// The fixed-position reading agrees with the general one wherever it
    /// reads, and leaves everything else to it.
    #[test]
    fn the_fixed_form_reads_as_the_general_path_does() {
        for ms in (-3_000_000_000_000i64..5_000_000_000_000).step_by(7_777_777_777) {
            let text = format_timestamp(ms);
            assert_eq!(parse_fixed_timestamp(text.as_bytes()), Some(ms), "{text}");
            assert_eq!(parse_timestamp_general(&text), Some(ms), "{text}");
            let iso = text.replace(' ', "T");
            let seconds = &iso.as_bytes()[..19];
            assert_eq!(
                parse_fixed_timestamp(seconds),
                parse_timestamp_general(&iso[..19])
            );
        }
        for bad in [
            "2023-02-29 00:00:00",
            "2024-13-01 00:00:00.000",
            "2024-01-01 24:00:00.000",
            "2024-01-01 00:60:00",
            "2024-01-01 00:00:60.000",
            "2024-01-01 00:00:00,000",
            "2024-01-01x00:00:00",
            "+024-01-01 00:00:00",
        ] {
            assert_eq!(parse_fixed_timestamp(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(
            parse_fixed_timestamp(b"2024-01-01 00:00"),
            None,
            "left to the general path"
        );
    }
}
