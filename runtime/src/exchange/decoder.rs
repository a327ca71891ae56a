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
    _types: PhantomData<fn() -> (A, B)>,
}

impl<A, B> CoInputDecoder<A, B> {
    /// A decoder whose first `split` channels belong to the first input.
    pub fn new(split: usize) -> Self {
        Self {
            split,
            _types: PhantomData,
        }
    }
}

impl<A: Wire, B: Wire> RecordDecoder for CoInputDecoder<A, B> {
    type Record = CoInput<A, B>;
    #[inline(always)]
    fn read(&self, channel: usize, bytes: &[u8]) -> Result<(CoInput<A, B>, usize), DecodeError> {
        if channel < self.split {
            A::read(bytes).map(|(a, n)| (CoInput::First(a), n))
        } else {
            B::read(bytes).map(|(b, n)| (CoInput::Second(b), n))
        }
    }
}
