//! Records with their event timestamp on the wire: the form of a
//! timestamped exchange's records (a stream with event time keeps each
//! record's timestamp across a key_by, a rebalance or a union, as Flink's
//! `StreamRecord` does).
//!
//! The sender wraps each record with the current record timestamp
//! ([`crate::core::timestamp`]) into a [`Stamped`]: 8 more bytes per record.
//! The receiver's [`StampedDecoder`] reads it back and sets the current
//! timestamp as it hands the record on. Exchanges of streams without event
//! time carry the bare record: this module costs them nothing.

use std::marker::PhantomData;

use weir_net::{DecodeError, Wire};

use crate::chain::control::{forward_chain_control, ChainControl, Collector};
use crate::core::timestamp::{current_record_timestamp, set_record_timestamp};
use crate::exchange::decoder::RecordDecoder;

/// A record and its event timestamp ([`crate::core::timestamp::NO_TIMESTAMP`]
/// if it has none), as a timestamped exchange carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stamped<T> {
    /// The event timestamp (ms).
    pub timestamp: i64,
    /// The record.
    pub value: T,
}

impl<T: Wire> Wire for Stamped<T> {
    const FIXED_LEN: Option<usize> = match T::FIXED_LEN {
        Some(n) => Some(n + 8),
        None => None,
    };

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        8 + self.value.encoded_len()
    }

    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.timestamp.to_le_bytes());
        self.value.write(&mut out[8..]);
    }

    #[inline(always)]
    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let Some(ts) = input.get(..8) else {
            return Err(DecodeError {
                what: "record timestamp",
                needed: 8,
                available: input.len(),
            });
        };
        let timestamp = i64::from_le_bytes(ts.try_into().expect("8 bytes"));
        let (value, n) = T::read(&input[8..])?;
        Ok((Self { timestamp, value }, n + 8))
    }
}

/// Decodes a timestamped exchange's records: hands on the record and sets
/// its timestamp as the current one.
pub struct StampedDecoder<T>(PhantomData<fn() -> T>);

impl<T> Default for StampedDecoder<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: Wire> RecordDecoder for StampedDecoder<T> {
    type Record = T;
    #[inline(always)]
    fn read(&self, _channel: usize, bytes: &[u8]) -> Result<(T, usize), DecodeError> {
        let (s, n) = Stamped::<T>::read(bytes)?;
        set_record_timestamp(s.timestamp);
        Ok((s.value, n))
    }
}

/// The sending side of a timestamped exchange: wraps each record with the
/// current timestamp for `out`.
pub struct StampOutput<C> {
    pub(crate) out: C,
}

forward_chain_control!(StampOutput<C> where C: ChainControl);

impl<T, C: Collector<Stamped<T>>> Collector<T> for StampOutput<C> {
    #[inline]
    fn collect(&mut self, value: T) {
        self.out.collect(Stamped {
            timestamp: current_record_timestamp(),
            value,
        })
    }

    /// Hands the run on to the exchange's own loop, each record stamped as
    /// it is pulled (after the link above set its timestamp).
    #[inline]
    fn collect_many<I: Iterator<Item = T>>(&mut self, records: &mut I, limit: usize) -> usize {
        let mut stamped = records.by_ref().map(|value| Stamped {
            timestamp: current_record_timestamp(),
            value,
        });
        self.out.collect_many(&mut stamped, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::testing::VecTail;

    #[test]
    fn a_stamped_record_round_trips_and_sets_the_current_timestamp() {
        let mut out = StampOutput {
            out: VecTail::<Stamped<(u64, u64)>>::default(),
        };
        set_record_timestamp(1_234);
        out.collect((7, 8));
        set_record_timestamp(-5);
        out.collect((9, 10));
        let mut bytes = Vec::new();
        for s in &out.out.items {
            let mut b = vec![0; s.encoded_len()];
            s.write(&mut b);
            bytes.extend(b);
        }
        assert_eq!(Stamped::<(u64, u64)>::FIXED_LEN, Some(24));
        let d = StampedDecoder::<(u64, u64)>::default();
        let (r, n) = d.read(0, &bytes).unwrap();
        assert_eq!((r, n, current_record_timestamp()), ((7, 8), 24, 1_234));
        let (r, _) = d.read(0, &bytes[n..]).unwrap();
        assert_eq!((r, current_record_timestamp()), ((9, 10), -5));
        assert!(d.read(0, &bytes[..5]).is_err());
    }
}
