//! The event timestamp of the record being processed (Flink's
//! `StreamRecord` timestamp), carried beside the record rather than in it.
//!
//! A worker runs a record through its chain synchronously: nothing else
//! runs on that thread between the head handing the record over and the
//! chain being done with it. So the record's timestamp is kept in one cell
//! per worker thread: whoever gives records a timestamp sets it (the
//! timestamps link from its extractor, the input of a timestamped
//! exchange from the wire, a timer as it fires, a window as it emits its
//! result at its end), whoever needs it reads it (a window assigner given
//! [`record_timestamp`], a function's context, the output of a
//! timestamped exchange), and every link in between leaves it alone, as
//! Flink's operators keep their input's timestamp. Streams without event
//! time never touch it: their cost is nothing.
//!
//! [`NO_TIMESTAMP`] means the record has none; the heads of stages without
//! event time set it once per poll, so a function there reads `None`.

use std::cell::Cell;

/// The timestamp of a record that has none (Flink's `hasTimestamp() ==
/// false`).
pub const NO_TIMESTAMP: i64 = i64::MIN;

thread_local! {
    static CURRENT: Cell<i64> = const { Cell::new(NO_TIMESTAMP) };
}

/// Sets the timestamp of the record about to be handed down the chain.
#[inline(always)]
pub fn set_record_timestamp(timestamp: i64) {
    CURRENT.with(|c| c.set(timestamp));
}

/// The timestamp of the record being processed ([`NO_TIMESTAMP`] if it
/// has none).
#[inline(always)]
pub fn current_record_timestamp() -> i64 {
    CURRENT.with(|c| c.get())
}

/// The event timestamp of the record being processed, as a window
/// assigner's timestamp function: `TumblingEventTimeWindows::of(size,
/// record_timestamp)` windows records by the timestamps
/// `assign_timestamps_and_watermarks` gave them, wherever the stream went
/// since (Flink's `element.getTimestamp()`).
///
/// # Panics
///
/// If the record has no timestamp (its stream never had event time): an
/// event-time window of such records would put them all at `i64::MIN`.
#[inline]
pub fn record_timestamp<T>(_record: &T) -> i64 {
    let ts = current_record_timestamp();
    if ts == NO_TIMESTAMP {
        no_timestamp();
    }
    ts
}

/// Whether `F`, a timestamp function of `T` records, is
/// [`record_timestamp`] (a window assigner given it reads the records'
/// own timestamps, which its stream must then carry).
pub fn is_record_timestamp<T: 'static, F: 'static>() -> bool {
    fn type_of<G: 'static>(_: &G) -> std::any::TypeId {
        std::any::TypeId::of::<G>()
    }
    std::any::TypeId::of::<F>() == type_of(&record_timestamp::<T>)
}

#[cold]
#[inline(never)]
fn no_timestamp() -> ! {
    panic!(
        "a record has no event timestamp: give its stream event time with \
         assign_timestamps_and_watermarks before an operator that reads it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_timestamp_is_per_thread_and_starts_unset() {
        set_record_timestamp(42);
        assert_eq!(current_record_timestamp(), 42);
        assert_eq!(record_timestamp(&()), 42);
        let other = std::thread::spawn(current_record_timestamp).join().unwrap();
        assert_eq!(other, NO_TIMESTAMP);
        set_record_timestamp(NO_TIMESTAMP);
        assert!(std::panic::catch_unwind(|| record_timestamp(&())).is_err());
    }

    #[test]
    fn record_timestamp_is_told_from_other_timestamp_functions() {
        fn is<T: 'static, F: Fn(&T) -> i64 + 'static>(_: F) -> bool {
            is_record_timestamp::<T, F>()
        }
        assert!(is::<(u64, i64), _>(record_timestamp));
        assert!(!is::<(u64, i64), _>(|r: &(u64, i64)| r.1));
    }
}
