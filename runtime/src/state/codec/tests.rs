//! The keyed state codecs through the snapshot writer: a value table as
//! table blocks in slot order, written in place or serialized, a
//! composite kind's table as table blocks without its expired entries,
//! and a state that is no table in parts, one block per key group and
//! part; in [`chain`], incremental chains restored.

mod chain;

use std::collections::HashMap;

use weir_net::Wire;
use weir_state::snapshot::{BlockKind, Extent, SegmentReader};
use weir_state::value_state::ValueState;
use weir_state::{KeyGroupAssigner, KeyHash};

use super::*;
use crate::checkpoint::segment_file::*;
use crate::checkpoint::table_block::TableBlock;
use crate::checkpoint::writer::{write_keyed_state, TABLE_BLOCK_CHUNKS};
use crate::state::codec::FrozenTable;

/// A frozen 200 k-entry state (while the live one keeps changing),
/// written part by part with `write_keyed_state` as `frozen` makes it:
/// the frozen entries, the extents and the segment to read them from.
/// Also checks that the writer let go of every chunk it wrote: while the
/// view is still alive, writing every entry again copies no chunk.
fn write_in_parts(
    tag: &str,
    frozen: impl FnOnce(&ValueState<u64, (u64, u64)>) -> Box<dyn FrozenKeyedState> + Send + 'static,
    check: impl FnOnce(&HashMap<u64, (u64, u64)>, &[Extent], &SegmentReader, usize) + Send + 'static,
) {
    let dir = std::env::temp_dir().join(format!("weir-writer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w0.seg");
    let path2 = path.clone();
    glommio::LocalExecutorBuilder::default()
        .spawn(move || async move {
            let (max_parallelism, range) = (128, KeyGroupRange::new(0, 64));
            let groups = KeyGroupAssigner::new(max_parallelism, 1);
            let mut live: ValueState<u64, (u64, u64)> = ValueState::new("totals");
            let mut want = HashMap::new();
            for i in 0..200_000u64 {
                let key = i * 7 + 1;
                if range.contains(groups.key_group(key.key_hash())) {
                    live.put(key, (i, i * 3));
                    want.insert(key, (i, i * 3));
                }
            }
            let mut frozen = frozen(&live);
            for (k, v) in want.iter().take(1_000) {
                live.put(*k, (v.0 + 1, 0));
            }
            live.put(u64::MAX, (0, 0));
            let mut file = SegmentFile::create(&path2, IoMode::Auto).await.unwrap();
            let (mut parts, mut extents) = (Vec::new(), Vec::new());
            let part_bytes = 256 << 10;
            let bytes = write_keyed_state(
                &mut file,
                &mut *frozen,
                ("totals", max_parallelism, range),
                part_bytes,
                &mut parts,
                1,
                &mut extents,
            )
            .await
            .unwrap();
            file.close().await.unwrap();
            let copied = live.cow_stats().chunks_copied;
            assert!(copied > 0, "the writes before the writer copied no chunk");
            for (k, v) in &want {
                live.put(*k, (v.0 + 2, 1));
            }
            assert_eq!(
                live.cow_stats().chunks_copied,
                copied,
                "chunks copied after the writer had written them"
            );
            drop(frozen);
            assert_eq!(bytes, extents.iter().map(|e| e.length).sum::<u64>());
            let n = (want.len() * 24).div_ceil(part_bytes);
            assert!(n > 4, "{n} parts");
            let reader = SegmentReader::open(&path2).unwrap();
            check(&want, &extents, &reader, n);
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Appends one `(u64, (u64, u64))` entry, as a composite kind's table
/// writes its entries (the writer [`FrozenTable`] is given).
fn write(buf: &mut Vec<u8>, k: &u64, v: &(u64, u64)) {
    crate::core::wire::append_wire(buf, k);
    crate::core::wire::append_wire(buf, v);
}

/// Reads one `(u64, (u64, u64))` entry from the front of `bytes`.
fn entry(bytes: &mut &[u8]) -> (u64, (u64, u64)) {
    let (k, a) = u64::read(bytes).unwrap();
    let (v, b) = <(u64, u64)>::read(&bytes[a..]).unwrap();
    *bytes = &bytes[a + b..];
    (k, v)
}

/// Checks that `extents` are table blocks of at most `TABLE_BLOCK_CHUNKS`
/// chunks of a table of `len` entries, written in at least `n` parts: the
/// slots in table order with their occupancy, together exactly `want`,
/// each block's slots following the last block's up to the capacity.
fn check_table_blocks(
    want: &HashMap<u64, (u64, u64)>,
    len: usize,
    extents: &[Extent],
    reader: &SegmentReader,
    n: usize,
) {
    let mut got = HashMap::new();
    let mut next_slot = 0;
    assert!(extents.len() >= n, "{} blocks for {n} parts", extents.len());
    for e in extents {
        assert_eq!(e.kind, BlockKind::KeyedTable);
        assert_eq!(e.key_groups, KeyGroupRange::new(0, 64));
        let payload = reader.read_block(e).unwrap();
        let table = TableBlock::parse(payload).unwrap();
        assert_eq!(table.header.table_len, len as u64);
        assert_eq!(table.header.first_slot, next_slot);
        let most = (TABLE_BLOCK_CHUNKS * weir_state::arena::CHUNK_LEN) as u64;
        assert!(table.header.slot_count <= most);
        next_slot += table.header.slot_count;
        let mut bytes = table.entries;
        let mut last = None;
        for pos in table.positions() {
            assert!(last < Some(pos));
            last = Some(pos);
            let (k, v) = entry(&mut bytes);
            assert!(got.insert(k, v).is_none(), "key {k} twice");
        }
        assert!(bytes.is_empty());
    }
    assert_eq!(
        next_slot,
        1 << extents.first().map_or(0, |e| {
            TableBlock::parse(reader.read_block(e).unwrap())
                .unwrap()
                .header
                .log2_capacity
        })
    );
    assert_eq!(&got, want);
}

/// A `ValueState` is written as table blocks in slot order.
#[test]
fn a_value_state_is_written_as_table_blocks_in_slot_order() {
    write_in_parts(
        "table",
        |live| Box::new(live.freeze()),
        |want, extents, reader, n| check_table_blocks(want, want.len(), extents, reader, n),
    );
}

/// The table of a composite state kind (map, list, reducing, aggregating)
/// is written as table blocks too, each entry as the kind writes it; with
/// a TTL, the entries expired when it was frozen are left out and their
/// slots marked empty.
#[test]
fn a_composite_states_table_is_written_as_table_blocks_without_expired_entries() {
    // An entry's stamp is its `i % 4`: at 2 with a TTL of 1, those of
    // stamp 0 and 1 have expired, half of them, spread over every block.
    let stamp = |v: &(u64, u64)| v.0 % 4;
    write_in_parts(
        "composite-table",
        move |live| {
            Box::new(FrozenTable::new(
                live.freeze(),
                |k| k.key_hash(),
                write,
                stamp,
                Some((2, 1)),
            ))
        },
        move |want, extents, reader, n| {
            let live: HashMap<u64, (u64, u64)> = want
                .iter()
                .filter(|(_, v)| stamp(v) >= 2)
                .map(|(k, v)| (*k, *v))
                .collect();
            assert!(live.len() * 3 < want.len() * 2 && live.len() * 3 > want.len());
            check_table_blocks(&live, want.len(), extents, reader, n);
        },
    );
}

/// The writer writes a table block of fixed-size entries straight into
/// the I/O buffer: the bytes must be those `serialize_table_part`
/// makes, whatever the reused buffer held before, and a part without
/// entries must have no block.
#[test]
fn a_table_block_written_in_place_has_the_serialized_bytes() {
    use crate::core::snapshot::FrozenKeyedState;
    let mut live: ValueState<u64, (u64, u64)> = ValueState::new("t");
    // Keys in a narrow hash range leave most chunks empty.
    let mut k = 0u64;
    while live.len() < 3000 {
        if k.key_hash() >> 61 == 0 {
            live.put(k, (k, k * 3));
        }
        k += 1;
    }
    let frozen = live.freeze();
    let mut prefix = Vec::new();
    let (mut empty, mut full) = (0, 0);
    for first in 0..frozen.chunk_count() {
        for n in [1, 2, 5] {
            let chunks = first..(first + n).min(frozen.chunk_count());
            let mut want = Vec::new();
            frozen.serialize_table_part(chunks.clone(), &mut want);
            let len = frozen
                .table_part_layout(chunks.clone(), &mut prefix)
                .expect("fixed-size entries");
            assert_eq!(len, want.len(), "chunks {chunks:?}");
            if len == 0 {
                empty += 1;
                continue;
            }
            full += 1;
            let mut got = vec![0xA5u8; len];
            got[..prefix.len()].copy_from_slice(&prefix);
            frozen.write_table_entries(chunks, &mut got[prefix.len()..]);
            assert_eq!(got, want);
        }
    }
    assert!(empty > 0 && full > 0, "{empty} empty and {full} used parts");
}

/// Entries whose size varies have no in-place layout: the writer falls
/// back to serializing them first.
#[test]
fn a_table_of_variable_size_entries_has_no_in_place_layout() {
    use crate::core::snapshot::FrozenKeyedState;
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Short(u8);
    impl Wire for Short {
        fn encoded_len(&self) -> usize {
            1 + usize::from(self.0 > 9)
        }
        fn write(&self, out: &mut [u8]) {
            out.fill(self.0);
        }
        fn read(input: &[u8]) -> Result<(Self, usize), weir_net::DecodeError> {
            let b = *input.first().ok_or(weir_net::DecodeError {
                what: "Short",
                needed: 1,
                available: 0,
            })?;
            Ok((Short(b), 1 + usize::from(b > 9)))
        }
    }
    let mut live: ValueState<u64, Short> = ValueState::new("v");
    for k in 0..100 {
        live.put(k, Short((k % 20) as u8));
    }
    let frozen = live.freeze();
    let mut prefix = Vec::new();
    assert_eq!(frozen.table_part_layout(0..1, &mut prefix), None);
    let mut bytes = Vec::new();
    frozen.serialize_table_part(0..1, &mut bytes);
    assert!(TableBlock::parse(&bytes).is_ok());
}

/// A frozen state written per key group (as window panes and timers
/// are): `.0`'s entries, whatever `.0` says of tables.
struct PerKeyGroup(Box<dyn FrozenKeyedState>);

impl FrozenKeyedState for PerKeyGroup {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn chunk_count(&self) -> usize {
        self.0.chunk_count()
    }

    fn estimated_bytes(&self) -> usize {
        self.0.estimated_bytes()
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        self.0.serialize_part(max_parallelism, range, chunks, out);
    }

    fn release_chunks(&mut self, chunks: std::ops::Range<usize>) {
        self.0.release_chunks(chunks);
    }
}

/// A state that is no table is written as one block per key group and
/// part, each block holding only its key group's entries.
#[test]
fn a_state_written_in_parts_is_one_block_per_key_group_and_part() {
    write_in_parts(
        "groups",
        |live| {
            Box::new(PerKeyGroup(Box::new(FrozenTable::new(
                live.freeze(),
                |k| k.key_hash(),
                write,
                |_| 0,
                None,
            ))))
        },
        |want, extents, reader, n| {
            let groups = KeyGroupAssigner::new(128, 1);
            let mut got = HashMap::new();
            let mut blocks_per_group = vec![0usize; 64];
            for e in extents {
                assert_eq!(e.kind, BlockKind::KeyedState);
                assert_eq!(e.key_groups.len(), 1);
                let kg = e.key_groups.start();
                blocks_per_group[kg as usize] += 1;
                let mut payload = reader.read_block(e).unwrap();
                while !payload.is_empty() {
                    let (k, v) = entry(&mut payload);
                    assert_eq!(groups.key_group(k.key_hash()), kg);
                    assert!(got.insert(k, v).is_none(), "key {k} twice");
                }
            }
            assert_eq!(&got, want);
            assert!(
                blocks_per_group.iter().all(|&b| b == n),
                "{blocks_per_group:?}"
            );
        },
    );
}
