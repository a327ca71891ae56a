//! Events as CSV rows: one row per event, the fields in the order of
//! [`EventKind::columns`](crate::EventKind::columns), no header.
//!
//! - Integers in decimal.
//! - Times as `yyyy-MM-dd HH:mm:ss.SSS` in UTC, Flink SQL's text form of a
//!   `TIMESTAMP(3)` (e.g. `2024-01-01 00:00:00.125`).
//! - Strings as they are, or, when one holds a comma, a double quote, a
//!   carriage return or a line feed, between double quotes with each
//!   double quote doubled (RFC 4180). The generated strings hold none of
//!   these, but the rule is part of the format.
//! - Rows end with `\n`.

use crate::model::{Auction, Bid, Event, EventKind, Person};

/// Appends the CSV row of `event` (with its `\n`) to `out`; returns its
/// kind, the table the row belongs to.
pub fn push_event(out: &mut Vec<u8>, event: &Event) -> EventKind {
    match event {
        Event::Person(p) => push_person(out, p),
        Event::Auction(a) => push_auction(out, a),
        Event::Bid(b) => push_bid(out, b),
    }
    event.kind()
}

/// Appends `id,name,email_address,credit_card,city,state,date_time,extra`.
pub fn push_person(out: &mut Vec<u8>, p: &Person) {
    push_int(out, p.id);
    for s in [&p.name, &p.email_address, &p.credit_card, &p.city, &p.state] {
        out.push(b',');
        push_str(out, s);
    }
    out.push(b',');
    push_timestamp(out, p.date_time);
    out.push(b',');
    push_str(out, &p.extra);
    out.push(b'\n');
}

/// Appends `id,item_name,description,initial_bid,reserve,date_time,expires,
/// seller,category,extra`.
pub fn push_auction(out: &mut Vec<u8>, a: &Auction) {
    push_int(out, a.id);
    out.push(b',');
    push_str(out, &a.item_name);
    out.push(b',');
    push_str(out, &a.description);
    out.push(b',');
    push_int(out, a.initial_bid);
    out.push(b',');
    push_int(out, a.reserve);
    out.push(b',');
    push_timestamp(out, a.date_time);
    out.push(b',');
    push_timestamp(out, a.expires);
    out.push(b',');
    push_int(out, a.seller);
    out.push(b',');
    push_int(out, a.category);
    out.push(b',');
    push_str(out, &a.extra);
    out.push(b'\n');
}

/// Appends `auction,bidder,price,channel,url,date_time,extra`.
pub fn push_bid(out: &mut Vec<u8>, b: &Bid) {
    push_int(out, b.auction);
    out.push(b',');
    push_int(out, b.bidder);
    out.push(b',');
    push_int(out, b.price);
    out.push(b',');
    push_str(out, &b.channel);
    out.push(b',');
    push_str(out, &b.url);
    out.push(b',');
    push_timestamp(out, b.date_time);
    out.push(b',');
    push_str(out, &b.extra);
    out.push(b'\n');
}

/// Appends a string field: as it is, or quoted if it holds a comma, a
/// double quote, a carriage return or a line feed.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if !needs_quotes(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(b'"');
    for &b in bytes {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// Whether a field holds a comma, double quote, carriage return or line
/// feed. Most fields are long letter padding, so the scan goes 16 bytes at
/// a time without a branch per byte (which the compiler turns into vector
/// compares).
fn needs_quotes(bytes: &[u8]) -> bool {
    let special = |b: u8| (b == b',') | (b == b'"') | (b == b'\n') | (b == b'\r');
    let mut chunks = bytes.chunks_exact(16);
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |found, &b| found | special(b)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| special(b))
}

/// Appends an integer in decimal.
pub fn push_int(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_digits(out, v.unsigned_abs());
}

fn push_digits(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends `width` decimal digits of `v`, zero-padded (`v < 10^width`).
fn push_padded(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut rest = v;
    for d in digits[..width].iter_mut().rev() {
        *d = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out.extend_from_slice(&digits[..width]);
}

/// Appends epoch milliseconds as `yyyy-MM-dd HH:mm:ss.SSS` in UTC. Years
/// past 9999 take more digits; years before 1 are written as their
/// astronomical number (year 0, then negative).
pub fn push_timestamp(out: &mut Vec<u8>, epoch_ms: i64) {
    let days = epoch_ms.div_euclid(86_400_000);
    let ms_of_day = epoch_ms.rem_euclid(86_400_000) as u64;
    let (year, month, day) = civil_from_days(days);
    if year < 0 {
        out.push(b'-');
    }
    push_padded(
        out,
        year.unsigned_abs(),
        4.max(digit_count(year.unsigned_abs())),
    );
    out.push(b'-');
    push_padded(out, month, 2);
    out.push(b'-');
    push_padded(out, day, 2);
    out.push(b' ');
    push_padded(out, ms_of_day / 3_600_000, 2);
    out.push(b':');
    push_padded(out, ms_of_day / 60_000 % 60, 2);
    out.push(b':');
    push_padded(out, ms_of_day / 1000 % 60, 2);
    out.push(b'.');
    push_padded(out, ms_of_day % 1000, 3);
}

/// Epoch milliseconds as `yyyy-MM-dd HH:mm:ss.SSS` in UTC.
pub fn format_timestamp(epoch_ms: i64) -> String {
    let mut out = Vec::with_capacity(23);
    push_timestamp(&mut out, epoch_ms);
    String::from_utf8(out).expect("digits and separators are ASCII")
}

fn digit_count(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// The proleptic Gregorian (year, month, day) of a day counted from
/// 1970-01-01: shift the epoch to 0000-03-01 so that leap days end each
/// year, split into 400-year eras of 146,097 days, then the year of the
/// era, the day of that March-based year, and its month by the 153-day
/// five-month cycle (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097) as u64;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era as i64 + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_flink_text_form() {
        assert_eq!(format_timestamp(0), "1970-01-01 00:00:00.000");
        assert_eq!(
            format_timestamp(crate::DEFAULT_BASE_TIME),
            "2024-01-01 00:00:00.000"
        );
        // A leap day, and the last millisecond of a day.
        assert_eq!(
            format_timestamp(1_709_164_800_000),
            "2024-02-29 00:00:00.000"
        );
        assert_eq!(
            format_timestamp(1_709_251_199_999),
            "2024-02-29 23:59:59.999"
        );
        assert_eq!(format_timestamp(951_782_400_123), "2000-02-29 00:00:00.123");
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999");
        assert_eq!(
            format_timestamp(253_402_300_799_999),
            "9999-12-31 23:59:59.999"
        );
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_previous() {
        // Walk day by day from 1900 to 2300 and check the calendar's own
        // rules: days run 1..=length of the month, then the month (and
        // year) turns.
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let length = |y: i64, m: u64| match m {
            2 if leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let mut expect = (1900, 1, 1);
        for days in -25_567..146_097 - 25_567 {
            assert_eq!(civil_from_days(days), expect, "day {days}");
            let (y, m, d) = expect;
            expect = if d < length(y, m) {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
    }

    #[test]
    fn integers() {
        for v in [0, 7, 10, 1000, -1, -1000, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            push_int(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }
}
