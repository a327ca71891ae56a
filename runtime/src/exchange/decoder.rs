//! How a gate reads records out of a buffer: the record decoders of
//! single-input and two-input stages.

use std::marker::PhantomData;

use weir_net::{DecodeError, Wire};

/// How a gate turns the bytes of a channel into records.
pub trait RecordDecoder {
    /// The records it produces.
    type Record;
    /// Reads one record of input channel `channel` from the front of
    /// `bytes`; returns it and the bytes used.
    fn read(&self, channel: usize, bytes: &[u8]) -> Result<(Self::Record, usize), DecodeError>;
}

/// The records of one buffer of input `channel` from `pos` on, decoded as
/// they are taken. A corrupt buffer panics (it fails the job), naming the
/// channel.
pub(crate) struct Decoded<'a, D> {
    pub(crate) decoder: &'a D,
    pub(crate) channel: usize,
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<D: RecordDecoder> Iterator for Decoded<'_, D> {
    type Item = D::Record;

    #[inline(always)]
    fn next(&mut self) -> Option<D::Record> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        match self.decoder.read(self.channel, &self.bytes[self.pos..]) {
            Ok((record, n)) => {
                self.pos += n;
                Some(record)
            }
            Err(e) => corrupt_buffer(self.channel, e),
        }
    }
}

#[cold]
#[inline(never)]
fn corrupt_buffer(channel: usize, e: DecodeError) -> ! {
    panic!("channel {channel} delivered a corrupt buffer: {e}")
}

/// Every channel carries `T` in its [`Wire`] form (single-input stages).
pub struct WireDecoder<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Default for WireDecoder<T> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<T: Wire> RecordDecoder for WireDecoder<T> {
    type Record = T;
    #[inline(always)]
    fn read(&self, _channel: usize, bytes: &[u8]) -> Result<(T, usize), DecodeError> {
        T::read(bytes)
    }
}

/// A record of a two-input operator: from its first or its second input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoInput<A, B> {
    /// A record of the first input (`connect`'s receiver).
    First(A),
    /// A record of the second input (`connect`'s argument).
    Second(B),
}

/// Decodes the channels of a two-input gate: channels below `split` carry
/// the first input's records, the others the second's.
pub struct CoInputDecoder<A, B> {
    split: usize,
    /// Whether each input's records cross with their timestamps
    /// ([`crate::exchange::stamped::Stamped`]).
    stamps: (bool, bool),
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B> CoInputDecoder<A, B> {
    /// A decoder whose first `split` channels belong to the first input.
    pub fn new(split: usize) -> Self {
        Self {
            split,
            stamps: (false, false),
            _types: PhantomData,
        }
    }

    /// Reads (and sets as the current one) each record's timestamp on the
    /// inputs `stamps` says (first, second).
    pub fn with_stamps(mut self, stamps: (bool, bool)) -> Self {
        self.stamps = stamps;
        self
    }
}

/// Reads a timestamp from the front of `bytes` if `stamped`, sets it as the
/// current record timestamp and returns the bytes it took.
#[inline(always)]
fn read_stamp(stamped: bool, bytes: &[u8]) -> Result<usize, DecodeError> {
    if !stamped {
        return Ok(0);
    }
    match bytes.get(..8) {
        Some(ts) => {
            let ts = i64::from_le_bytes(ts.try_into().expect("8 bytes"));
            crate::core::timestamp::set_record_timestamp(ts);
            Ok(8)
        }
        None => Err(DecodeError {
            what: "record timestamp",
            needed: 8,
            available: bytes.len(),
        }),
    }
}

impl<A: Wire, B: Wire> RecordDecoder for CoInputDecoder<A, B> {
    type Record = CoInput<A, B>;
    #[inline(always)]
    fn read(&self, channel: usize, bytes: &[u8]) -> Result<(CoInput<A, B>, usize), DecodeError> {
        if channel < self.split {
            let at = read_stamp(self.stamps.0, bytes)?;
            A::read(&bytes[at..]).map(|(a, n)| (CoInput::First(a), n + at))
        } else {
            let at = read_stamp(self.stamps.1, bytes)?;
            B::read(&bytes[at..]).map(|(b, n)| (CoInput::Second(b), n + at))
        }
    }
}
