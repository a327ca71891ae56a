//! Software prefetch, for loops that know the addresses they will touch a
//! few iterations ahead: a restore inserting millions of entries at
//! random table positions, and a keyed operator whose table is far larger
//! than the caches ([`crate::ValueState::prefetch_pays`]). For a table in
//! cache the CPU already overlaps independent misses, and measurements on
//! W1's keyed lookups there showed a loss, so nothing prefetches then.

/// Asks the CPU to bring the cache line holding `value` closer. A hint: it
/// never faults and has no effect on program semantics.
#[inline(always)]
pub fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it
        // is part of the baseline target); a prefetch of any address never
        // faults, and this one is of a live reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
