//! Time zones for CONVERT_TZ, as Java's `TimeZone.getTimeZone` names
//! them: a region (`Asia/Shanghai`, `America/New_York`) read from the
//! system's tz database (`/usr/share/zoneinfo`, TZif files: their
//! transitions, then the POSIX rule at their end), a custom
//! `GMT[+-]h[h][[:]mm]`, and UTC for `UTC`, `GMT` and any name Java does
//! not know (as `getTimeZone` gives GMT for it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::time::days_from_civil;

const ZONEINFO: &str = "/usr/share/zoneinfo";

/// A zone's UTC offsets over time.
#[derive(Debug, Default, PartialEq)]
pub struct Zone {
    /// The offset before the first transition (seconds east of UTC).
    initial: i32,
    /// (UTC seconds from which, offset) in time order.
    transitions: Vec<(i64, i32)>,
    /// The POSIX rule after the last transition.
    rule: Option<Rule>,
}

/// A POSIX TZ rule: standard offset, and daylight saving between two
/// yearly moments.
#[derive(Debug, PartialEq)]
struct Rule {
    std: i32,
    dst: Option<(i32, Moment, Moment)>,
}

/// `Mm.w.d/time`: day `d` (0 Sunday) of week `w` (5: the last) of month
/// `m`, at `time` seconds of local time.
#[derive(Debug, PartialEq, Clone, Copy)]
struct Moment {
    month: u32,
    week: u32,
    day: u32,
    time: i64,
}

/// The zone Java's `TimeZone.getTimeZone(id)` gives (cached per name).
pub fn zone(id: &str) -> Arc<Zone> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Zone>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(z) = cache.lock().expect("zone cache").get(id) {
        return z.clone();
    }
    let z = Arc::new(load(id));
    cache
        .lock()
        .expect("zone cache")
        .insert(id.to_owned(), z.clone());
    z
}

fn load(id: &str) -> Zone {
    if let Some(offset) = id.strip_prefix("GMT").and_then(custom_offset) {
        return Zone {
            initial: offset,
            ..Zone::default()
        };
    }
    let region = !id.is_empty()
        && !id.starts_with('/')
        && id
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..");
    if region {
        if let Some(z) = std::fs::read(format!("{ZONEINFO}/{id}"))
            .ok()
            .and_then(|b| tzif(&b))
        {
            return z;
        }
    }
    Zone::default() // UTC
}

/// Java's custom zone after `GMT`: `+8`, `-08`, `+0530`, `+05:30`.
fn custom_offset(s: &str) -> Option<i32> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty();
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) if h.len() <= 2 && m.len() == 2 && digits(h) && digits(m) => (h, m),
        None if digits(rest) && rest.len() <= 2 => (rest, "0"),
        None if digits(rest) && rest.len() == 4 => (&rest[..2], &rest[2..]),
        _ => return None,
    };
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 23 && m <= 59).then_some(sign * (h * 3600 + m * 60))
}

/// A TZif file's version 2+ (64-bit) data and footer rule, or version
/// 1's data.
fn tzif(b: &[u8]) -> Option<Zone> {
    let header = |at: usize| -> Option<[usize; 6]> {
        if b.get(at..at + 4)? != b"TZif" {
            return None;
        }
        let mut counts = [0usize; 6];
        for (i, c) in counts.iter_mut().enumerate() {
            let o = at + 20 + 4 * i;
            *c = u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?) as usize;
        }
        Some(counts)
    };
    let [isut, isstd, leap, time, types, chars] = header(0)?;
    let v1_len = time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
    let (at, size) = if b[4] >= b'2' {
        (44 + v1_len, 8)
    } else {
        (0, 4)
    };
    let [isut, isstd, leap, time, types, chars] = header(at)?;
    let mut p = at + 44;
    let times: Vec<i64> = (0..time)
        .map(|i| {
            let o = p + i * size;
            Some(if size == 8 {
                i64::from_be_bytes(b.get(o..o + 8)?.try_into().ok()?)
            } else {
                i64::from(i32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?))
            })
        })
        .collect::<Option<_>>()?;
    p += time * size;
    let idx = b.get(p..p + time)?.to_vec();
    p += time;
    let offsets: Vec<(i32, bool)> = (0..types)
        .map(|i| {
            let o = p + i * 6;
            Some((
                i32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?),
                *b.get(o + 4)? != 0,
            ))
        })
        .collect::<Option<_>>()?;
    p += types * 6 + chars + leap * (size + 4) + isstd + isut;
    // The first standard-time type, or the first, before any transition.
    let initial = offsets
        .iter()
        .find(|o| !o.1)
        .or(offsets.first())
        .map_or(0, |o| o.0);
    let transitions = times
        .into_iter()
        .zip(idx)
        .map(|(t, i)| Some((t, offsets.get(usize::from(i))?.0)))
        .collect::<Option<_>>()?;
    let rule = if size == 8 {
        std::str::from_utf8(b.get(p..)?)
            .ok()
            .and_then(|s| s.trim_matches('\n').lines().next().map(str::to_owned))
            .and_then(|s| posix_rule(&s))
    } else {
        None
    };
    Some(Zone {
        initial,
        transitions,
        rule,
    })
}

/// A POSIX TZ string (`EST5EDT,M3.2.0,M11.1.0`, `<+08>-8`, `CET-1CEST,
/// M3.5.0,M10.5.0/3`); `None` for the forms not read (`Jn`, `n` days).
fn posix_rule(s: &str) -> Option<Rule> {
    let mut rest = s;
    let name = |r: &mut &str| -> Option<()> {
        if let Some(t) = r.strip_prefix('<') {
            let end = t.find('>')?;
            *r = &t[end + 1..];
        } else {
            let n = r.bytes().take_while(u8::is_ascii_alphabetic).count();
            if n == 0 {
                return None;
            }
            *r = &r[n..];
        }
        Some(())
    };
    name(&mut rest)?;
    let (std_west, r) = posix_time(rest)?;
    rest = r;
    let std = -(std_west as i32);
    if rest.is_empty() {
        return Some(Rule { std, dst: None });
    }
    name(&mut rest)?;
    let dst_offset = match rest.strip_prefix(',') {
        Some(_) => std + 3600,
        None => {
            let (west, r) = posix_time(rest)?;
            rest = r;
            -(west as i32)
        }
    };
    let mut parts = rest.strip_prefix(',')?.split(',');
    let (start, end) = (moment(parts.next()?)?, moment(parts.next()?)?);
    Some(Rule {
        std,
        dst: Some((dst_offset, start, end)),
    })
}

/// `[+-]h[:mm[:ss]]` at the start of `s` in seconds, and the rest.
fn posix_time(s: &str) -> Option<(i64, &str)> {
    let (sign, t) = match s.as_bytes().first()? {
        b'-' => (-1, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let n = t
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b':')
        .count();
    let mut secs = 0i64;
    for (i, part) in t[..n].split(':').enumerate().take(3) {
        secs += part.parse::<i64>().ok()? * [3600, 60, 1][i];
    }
    Some((sign * secs, &t[n..]))
}

fn moment(s: &str) -> Option<Moment> {
    let (date, time) = match s.split_once('/') {
        Some((d, t)) => (d, posix_time(t)?.0),
        None => (s, 7200),
    };
    let mut f = date.strip_prefix('M')?.split('.');
    let mut num = || f.next()?.parse::<u32>().ok();
    let (month, week, day) = (num()?, num()?, num()?);
    ((1..=12).contains(&month) && (1..=5).contains(&week) && day <= 6).then_some(Moment {
        month,
        week,
        day,
        time,
    })
}

impl Moment {
    /// Local seconds of this moment in `year`.
    fn in_year(self, year: i64) -> i64 {
        let first = days_from_civil(year, self.month, 1);
        let next = if self.month == 12 {
            days_from_civil(year + 1, 1, 1)
        } else {
            days_from_civil(year, self.month + 1, 1)
        };
        // 1970-01-01 was a Thursday (4 with Sunday 0).
        let weekday = (first + 4).rem_euclid(7);
        let mut day =
            first + (i64::from(self.day) - weekday).rem_euclid(7) + 7 * (i64::from(self.week) - 1);
        while day >= next {
            day -= 7;
        }
        day * 86_400 + self.time
    }
}

impl Rule {
    fn offset_at(&self, utc: i64) -> i32 {
        let Some((dst, start, end)) = self.dst else {
            return self.std;
        };
        let year = crate::time::civil_from_days((utc + i64::from(self.std)).div_euclid(86_400)).0;
        // Start in standard local time, end in daylight local time.
        let on = start.in_year(year) - i64::from(self.std);
        let off = end.in_year(year) - i64::from(dst);
        let in_dst = if on < off {
            utc >= on && utc < off
        } else {
            utc >= on || utc < off // the southern hemisphere
        };
        if in_dst {
            dst
        } else {
            self.std
        }
    }
}

impl Zone {
    /// The offset (seconds east of UTC) at `utc` seconds.
    pub fn offset_at(&self, utc: i64) -> i32 {
        match self.transitions.partition_point(|t| t.0 <= utc) {
            0 => self.initial,
            n if n == self.transitions.len() && self.rule.is_some() => {
                self.rule.as_ref().expect("checked").offset_at(utc)
            }
            n => self.transitions[n - 1].1,
        }
    }

    /// The UTC seconds of wall-clock `local` seconds here: the offset in
    /// force then (in a gap, the one before it, so the time moves on; in
    /// an overlap, the earlier).
    pub fn to_utc(&self, local: i64) -> i64 {
        let guess = self.offset_at(local);
        let second = self.offset_at(local - i64::from(guess));
        if self.offset_at(local - i64::from(second)) == second {
            local - i64::from(second)
        } else {
            local - i64::from(guess)
        }
    }
}

/// CONVERT_TZ's work: wall-clock epoch milliseconds `local_ms` in zone
/// `from`, as wall-clock milliseconds in zone `to`.
pub fn convert(local_ms: i64, from: &str, to: &str) -> i64 {
    let (secs, ms) = (local_ms.div_euclid(1000), local_ms.rem_euclid(1000));
    let utc = zone(from).to_utc(secs);
    (utc + i64::from(zone(to).offset_at(utc))) * 1000 + ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{format_timestamp, parse_timestamp};

    fn conv(t: &str, from: &str, to: &str) -> String {
        format_timestamp(convert(parse_timestamp(t).unwrap(), from, to))
    }

    #[test]
    fn custom_and_unknown_zones() {
        assert_eq!(custom_offset("+8"), Some(8 * 3600));
        assert_eq!(custom_offset("-05:30"), Some(-(5 * 3600 + 1800)));
        assert_eq!(custom_offset("+0530"), Some(5 * 3600 + 1800));
        assert_eq!(custom_offset("+5:3"), None);
        assert_eq!(
            conv("2024-01-01 00:00:00", "UTC", "GMT+08:00"),
            "2024-01-01 08:00:00.000"
        );
        // Java's getTimeZone gives GMT for a name it does not know.
        assert_eq!(
            conv("2024-01-01 00:00:00", "Nowhere/City", "UTC+8"),
            "2024-01-01 00:00:00.000"
        );
    }

    #[test]
    fn posix_rules_switch_on_their_days() {
        let r = posix_rule("EST5EDT,M3.2.0,M11.1.0").unwrap();
        assert_eq!(r.std, -5 * 3600);
        let t = |s: &str| parse_timestamp(s).unwrap() / 1000;
        // 2024: DST from March 10th 07:00 UTC to November 3rd 06:00 UTC.
        assert_eq!(r.offset_at(t("2024-03-10 06:59:59")), -5 * 3600);
        assert_eq!(r.offset_at(t("2024-03-10 07:00:00")), -4 * 3600);
        assert_eq!(r.offset_at(t("2024-11-03 05:59:59")), -4 * 3600);
        assert_eq!(r.offset_at(t("2024-11-03 06:00:00")), -5 * 3600);
        let r = posix_rule("<+08>-8").unwrap();
        assert_eq!(r.std, 8 * 3600);
        let r = posix_rule("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(r.offset_at(t("2024-07-01 00:00:00")), 7200);
        assert_eq!(r.offset_at(t("2024-12-01 00:00:00")), 3600);
    }

    /// With the system's tz database (skipped where it is missing).
    #[test]
    fn regions_from_the_tz_database() {
        if !std::path::Path::new(ZONEINFO)
            .join("America/New_York")
            .exists()
        {
            return;
        }
        // 02:30 does not exist on March 10th in New York: it moves on to
        // 03:30 daylight time; 01:30 on November 3rd is there twice: the
        // earlier.
        for (at, from, to, expected) in [
            (
                "2024-01-01 12:00:00",
                "Asia/Shanghai",
                "UTC",
                "2024-01-01 04:00:00.000",
            ),
            (
                "2024-07-01 12:00:00",
                "UTC",
                "America/New_York",
                "2024-07-01 08:00:00.000",
            ),
            (
                "2024-01-01 12:00:00",
                "UTC",
                "America/New_York",
                "2024-01-01 07:00:00.000",
            ),
            (
                "2024-03-10 02:30:00",
                "America/New_York",
                "UTC",
                "2024-03-10 07:30:00.000",
            ),
            (
                "2024-11-03 01:30:00",
                "America/New_York",
                "UTC",
                "2024-11-03 05:30:00.000",
            ),
            (
                "2050-07-01 12:00:00",
                "America/New_York",
                "Europe/Berlin",
                "2050-07-01 18:00:00.000",
            ),
        ] {
            assert_eq!(conv(at, from, to), expected, "{at} from {from} to {to}");
        }
    }
}
