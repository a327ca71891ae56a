//! Writing a frozen operator list state as blocks of a segment.

use weir_state::snapshot::{BlockKind, Extent};
use weir_state::KeyGroupRange;

use crate::checkpoint::error::Result;
use crate::checkpoint::segment_file::SegmentFile;
use crate::core::snapshot::FrozenOperatorList;

/// Serialized bytes per block of a large list: the writer writes one block
/// while it serializes the next.
pub const PART_BYTES: usize = 16 << 20;

/// Writes `list` (operator state `name` of the subtask owning `key_groups`)
/// as blocks of at most about [`PART_BYTES`] each, in element order;
/// nothing for an empty list. Returns the bytes written; pushes the
/// extents.
pub(crate) async fn write_operator_list(
    file: &mut SegmentFile,
    name: &str,
    list: &dyn FrozenOperatorList,
    key_groups: KeyGroupRange,
    extents: &mut Vec<Extent>,
) -> Result<u64> {
    let len = list.len();
    if len == 0 {
        return Ok(0);
    }
    let parts = (len * list.element_bytes())
        .div_ceil(PART_BYTES)
        .clamp(1, len);
    let mut payload = Vec::new();
    let mut bytes = 0;
    for part in 0..parts {
        list.serialize(len * part / parts..len * (part + 1) / parts, &mut payload);
        let extent = file
            .append_block(BlockKind::OperatorState, key_groups, name, &payload)
            .await?;
        bytes += extent.length;
        extents.push(extent);
    }
    Ok(bytes)
}
