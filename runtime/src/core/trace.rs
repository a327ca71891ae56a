//! `WEIR_TRACE_CHECKPOINTS=1` prints every trigger, barrier, snapshot,
//! acknowledgement, completion and failure to stderr (for diagnosing a
//! stuck checkpoint).

/// `WEIR_TRACE_CHECKPOINTS=1` prints every trigger, barrier, snapshot,
/// acknowledgement, completion and failure to stderr (for diagnosing a
/// stuck checkpoint).
pub(crate) fn trace_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("WEIR_TRACE_CHECKPOINTS").is_some_and(|v| v != "0"))
}

/// Milliseconds since the first trace line, to put on each line.
pub(crate) fn trace_ms() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::core::trace::trace_enabled() {
            eprintln!("[checkpoint {:9.3} ms] {}", $crate::core::trace::trace_ms(), format!($($arg)*));
        }
    };
}

pub(crate) use trace;
