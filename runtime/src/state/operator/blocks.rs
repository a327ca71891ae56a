//! Operator list state in checkpoints: the frozen views, the blocks' payload
//! (mode tag, u32 count, elements' wire bytes) and the restore that reads
//! every old subtask's blocks back and takes this subtask's share.

use std::ops::Range;

use weir_net::Wire;
use weir_state::snapshot::Extent;
use weir_state::{FrozenArena, StateValue};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::core::snapshot::{FrozenOperatorList, Redistribution};
use crate::core::wire::append_wire;

/// The frozen view of an [`ArenaList`].
pub(crate) struct FrozenList<T: StateValue> {
    pub(super) slots: FrozenArena<T>,
    pub(super) len: usize,
    pub(super) mode: Redistribution,
}

impl<T: StateValue + Wire> FrozenOperatorList for FrozenList<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn redistribution(&self) -> Redistribution {
        self.mode
    }

    fn element_bytes(&self) -> usize {
        if self.len == 0 {
            0
        } else {
            self.slots.get(0).encoded_len()
        }
    }

    fn serialize(&self, elements: Range<usize>, out: &mut Vec<u8>) {
        debug_assert!(elements.end <= self.len);
        out.clear();
        out.reserve(PAYLOAD_HEADER + elements.len() * self.element_bytes());
        out.push(self.mode.tag());
        let count = u32::try_from(elements.len()).expect("a block holds under 2^32 elements");
        out.extend_from_slice(&count.to_le_bytes());
        for i in elements {
            append_wire(out, self.slots.get(i));
        }
    }
}

/// Bytes before the elements of a block's payload: the tag and the count.
const PAYLOAD_HEADER: usize = 5;

/// Appends the elements of the block of `extent` to `into`, after checking
/// its checksum, then its payload ([`decode_payload`]).
pub(crate) fn decode_block<T: Wire>(
    scope: &RestoreScope<'_>,
    name: &str,
    extent: &Extent,
    mode: Redistribution,
    into: &mut Vec<T>,
) -> Result<(), RestoreError> {
    let mut block = scope.open_block(extent)?;
    let payload = block.payload;
    block.check.update(payload);
    scope.finish_check(name, block.check)?;
    decode_payload(payload, mode, into).map_err(|e| {
        scope.reject(match e {
            PayloadError::Mode(stored) => RestoreError::Redistribution {
                state: name.to_owned(),
                stored,
                declared: mode,
            },
            PayloadError::Malformed(what) => RestoreError::MalformedListBlock {
                state: name.to_owned(),
                segment: extent.segment.clone(),
                offset: extent.offset,
                what,
            },
        })
    })
}

/// Why a block's payload was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PayloadError {
    /// It was written by a state of the other mode.
    Mode(Redistribution),
    /// It does not hold what its header says.
    Malformed(String),
}

/// Appends the elements of a block's payload (see
/// [`FrozenOperatorList::serialize`]) to `into`: its mode must be `mode`,
/// and it must hold exactly its count of elements.
pub(super) fn decode_payload<T: Wire>(
    payload: &[u8],
    mode: Redistribution,
    into: &mut Vec<T>,
) -> Result<(), PayloadError> {
    if payload.len() < PAYLOAD_HEADER {
        return Err(PayloadError::Malformed(format!(
            "{} bytes of payload",
            payload.len()
        )));
    }
    let stored = Redistribution::from_tag(payload[0]).ok_or_else(|| {
        PayloadError::Malformed(format!("unknown redistribution mode {}", payload[0]))
    })?;
    if stored != mode {
        return Err(PayloadError::Mode(stored));
    }
    let count = u32::from_le_bytes(payload[1..PAYLOAD_HEADER].try_into().expect("4 bytes"));
    let mut at = PAYLOAD_HEADER;
    // Not trusting the count for the allocation: a payload holds at most
    // one element per byte.
    into.reserve((count as usize).min(payload.len()));
    for i in 0..count {
        let (v, n) = T::read(&payload[at..])
            .map_err(|e| PayloadError::Malformed(format!("element {i} of {count}: {e}")))?;
        into.push(v);
        at += n;
    }
    if at != payload.len() {
        return Err(PayloadError::Malformed(format!(
            "{} bytes after its {count} elements",
            payload.len() - at
        )));
    }
    Ok(())
}
