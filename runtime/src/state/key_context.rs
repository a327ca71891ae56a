//! The key of the record being processed, with its precomputed hash: the
//! scope every keyed state is read and written in.

use weir_state::KeyHash;

/// The key of the record being processed, with its precomputed hash, and
/// the operator's current event time.
#[derive(Clone, Copy, Debug)]
pub struct KeyContext<K> {
    pub(crate) key: K,
    pub(crate) hash: u64,
    watermark: i64,
}

impl<K: KeyHash> KeyContext<K> {
    /// The context for `key`, before any watermark (`i64::MIN`).
    #[inline]
    pub fn new(key: K) -> Self {
        Self::with_watermark(key, i64::MIN)
    }

    /// The context for `key` in an operator whose watermark is `watermark`.
    /// Always inlined: a call returns the context, key and all, through
    /// memory (measured with `CompactString` keys, whose hash made the
    /// compiler keep it a call).
    ///
    /// The key is moved into the context first and hashed there: hashed
    /// before, the compiler copied it into the context afterwards with
    /// loads wider than the stores that had just written it (a
    /// `CompactString`'s three words as one 16-byte and one 8-byte
    /// move), which the processor cannot forward from its store buffer.
    #[inline(always)]
    pub fn with_watermark(key: K, watermark: i64) -> Self {
        let mut ctx = Self {
            key,
            hash: 0,
            watermark,
        };
        ctx.hash = ctx.key.key_hash();
        ctx
    }

    /// The key, given back (the keyed operator's loop moves it into the
    /// next record's context: `KeySelector::key_into`).
    #[inline(always)]
    pub(crate) fn into_key(self) -> K {
        self.key
    }
}

impl<K> KeyContext<K> {
    /// The current key.
    #[inline]
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The current key's stable hash (decides its key group).
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The operator's current watermark (ms): the minimum over its active
    /// inputs of their watermarks, as Flink's
    /// `TimerService::currentWatermark`; `i64::MIN` before the first one
    /// and in jobs without event time, `i64::MAX` once every input ended.
    #[inline]
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The event timestamp of the record being processed, or of the timer
    /// firing (event-time timers; Flink's `ctx.timestamp()`): `None` if it
    /// has none (its stream has no event time, a processing-time timer).
    #[inline]
    pub fn timestamp(&self) -> Option<i64> {
        let ts = crate::core::timestamp::current_record_timestamp();
        (ts != crate::core::timestamp::NO_TIMESTAMP).then_some(ts)
    }
}
