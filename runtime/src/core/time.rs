//! Small helpers about time shared by every layer: deadlines, wall-clock
//! milliseconds, processing-time timers' instants.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The earlier of two optional instants.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Milliseconds since the Unix epoch, by the system clock.
pub fn system_time_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The instant at which processing time `ts` (ms) is reached, given that
/// it is `now_ms` at `now` (`None` if beyond what an `Instant` holds).
pub(crate) fn processing_deadline(now: Instant, now_ms: i64, ts: i64) -> Option<Instant> {
    let wait = u64::try_from(ts.saturating_sub(now_ms)).unwrap_or(0);
    now.checked_add(Duration::from_millis(wait))
}

/// Milliseconds since the epoch.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
