//! Operator list state: the lists, their blocks, the checks of their names
//! and their redistribution at another parallelism.

use proptest::prelude::*;
use weir_state::snapshot::BlockKind;
use weir_state::KeyGroupRange;

use super::blocks::{decode_payload, PayloadError};
use super::*;
use crate::checkpoint::operator_list::write_operator_list;
use crate::checkpoint::operator_list::PART_BYTES;
use crate::core::snapshot::FrozenOperatorList;
use crate::core::snapshot::Redistribution;
use crate::state::registry::{check_state_names, StateKind};

/// Old subtasks' lists with distinct elements `(old subtask, position)`,
/// so that a lost or duplicated element shows.
fn numbered(lengths: &[usize]) -> Vec<Vec<(u32, u32)>> {
    lengths
        .iter()
        .enumerate()
        .map(|(s, &n)| (0..n as u32).map(|i| (s as u32, i)).collect())
        .collect()
}

proptest! {
    /// Even split over any old and new parallelism: the new lists,
    /// concatenated in subtask order, are exactly the old ones
    /// concatenated (nothing lost, nothing duplicated, order kept); their
    /// lengths differ by at most one, the longer ones first; at the same
    /// parallelism every subtask keeps its own list.
    #[test]
    fn even_split_loses_and_duplicates_nothing(
        lengths in proptest::collection::vec(0usize..40, 1..9),
        new_parallelism in 1usize..9,
    ) {
        let old = numbered(&lengths);
        let new = redistribute(Redistribution::EvenSplit, &old, new_parallelism);
        prop_assert_eq!(new.len(), new_parallelism);
        let before: Vec<_> = old.iter().flatten().copied().collect();
        if new_parallelism == old.len() {
            prop_assert_eq!(&new, &old);
        } else {
            let after: Vec<_> = new.iter().flatten().copied().collect();
            prop_assert_eq!(&after, &before);
            let total = before.len();
            for (i, part) in new.iter().enumerate() {
                let want = total / new_parallelism + usize::from(i < total % new_parallelism);
                prop_assert_eq!(part.len(), want, "subtask {}", i);
            }
        }
    }

    /// Union over any old and new parallelism (the same one too): every new
    /// subtask gets every element of every old subtask, once each.
    #[test]
    fn union_gives_every_subtask_everything(
        lengths in proptest::collection::vec(0usize..40, 1..9),
        new_parallelism in 1usize..9,
    ) {
        let old = numbered(&lengths);
        let all: Vec<_> = old.iter().flatten().copied().collect();
        for part in redistribute(Redistribution::Union, &old, new_parallelism) {
            prop_assert_eq!(&part, &all);
        }
    }

    /// An arena list behaves like a `Vec` under any sequence of adds,
    /// updates, sets, truncations, swap-removes and clears, across chunk
    /// boundaries and growth.
    #[test]
    fn an_arena_list_is_a_vec(ops in proptest::collection::vec((0u8..10, 0u64..2_000), 0..60)) {
        let mut list = OperatorListState::<u64>::new("l");
        let mut want: Vec<u64> = Vec::new();
        for (op, n) in ops {
            match op {
                0 => {
                    list.clear();
                    want.clear();
                }
                1 => {
                    let values: Vec<u64> = (0..n % 700).map(|i| i * 3 + n).collect();
                    list.update(values.iter().copied());
                    want = values;
                }
                2 if !want.is_empty() => {
                    let i = n as usize % want.len();
                    list.set(i, n + 7);
                    want[i] = n + 7;
                }
                3 => {
                    list.truncate(n as usize % 900);
                    want.truncate(n as usize % 900);
                }
                4 if !want.is_empty() => {
                    let i = n as usize % want.len();
                    prop_assert_eq!(list.swap_remove(i), want.swap_remove(i));
                }
                _ => {
                    let values: Vec<u64> = (0..n).map(|i| i ^ n).collect();
                    list.add_all(values.iter().copied());
                    want.extend(values);
                }
            }
            prop_assert_eq!(list.len(), want.len());
        }
        prop_assert_eq!(list.to_vec(), want.clone());
        prop_assert_eq!(list.get(want.len()), None);
        if let Some(&last) = want.last() {
            prop_assert_eq!(list.get(want.len() - 1), Some(last));
        }
    }
}

/// Flink's own example of even-split redistribution: 5 elements on 2 old
/// subtasks to 3 new ones are split 2, 2, 1, contiguously.
#[test]
fn even_split_cuts_contiguous_parts_longer_first() {
    let old = vec![vec![1, 2, 3], vec![4, 5]];
    assert_eq!(
        redistribute(Redistribution::EvenSplit, &old, 3),
        vec![vec![1, 2], vec![3, 4], vec![5]]
    );
    assert_eq!(
        redistribute(Redistribution::EvenSplit, &old, 1),
        vec![vec![1, 2, 3, 4, 5]]
    );
    assert_eq!(even_split_range(7, 3, 0), 0..3);
    assert_eq!(even_split_range(7, 3, 1), 3..5);
    assert_eq!(even_split_range(7, 3, 2), 5..7);
    assert_eq!(even_split_range(0, 4, 3), 0..0);
}

/// A frozen list serializes exactly what it held at the freeze, although
/// the live list was cleared, refilled and grown past its arena since; the
/// payload decodes back to those elements.
#[test]
fn a_frozen_list_keeps_the_barriers_elements() {
    let mut list = UnionListState::<(u64, u32)>::new("pairs");
    let before: Vec<(u64, u32)> = (0..1_000u64).map(|i| (i * 7, i as u32)).collect();
    list.add_all(before.iter().copied());
    let frozen = list.frozen(Redistribution::Union);
    list.clear();
    list.add_all((0..3_000u64).map(|i| (i, 0)));
    assert_eq!(list.len(), 3_000);
    assert_eq!(frozen.len(), 1_000);
    assert_eq!(frozen.element_bytes(), 12);

    let mut payload = Vec::new();
    let mut back: Vec<(u64, u32)> = Vec::new();
    for part in [0..400, 400..1_000] {
        frozen.serialize(part, &mut payload);
        decode_payload(&payload, Redistribution::Union, &mut back).unwrap();
    }
    assert_eq!(back, before);
}

/// A block is refused when read as the other mode, when its count does not
/// match its bytes, and when it is too short for its header.
#[test]
fn a_wrong_mode_or_malformed_payload_is_refused() {
    let mut list = OperatorListState::<u64>::new("l");
    list.add_all([1, 2, 3]);
    let frozen = list.frozen(Redistribution::EvenSplit);
    let mut payload = Vec::new();
    frozen.serialize(0..3, &mut payload);
    let mut into: Vec<u64> = Vec::new();
    assert_eq!(
        decode_payload(&payload, Redistribution::Union, &mut into),
        Err(PayloadError::Mode(Redistribution::EvenSplit))
    );
    let mut short = payload.clone();
    short.pop();
    assert!(matches!(
        decode_payload(&short, Redistribution::EvenSplit, &mut into),
        Err(PayloadError::Malformed(m)) if m.contains("element 2 of 3")
    ));
    let mut long = payload.clone();
    long.push(0);
    assert!(matches!(
        decode_payload(&long, Redistribution::EvenSplit, &mut into),
        Err(PayloadError::Malformed(m)) if m.contains("1 bytes after its 3 elements")
    ));
    assert!(matches!(
        decode_payload(
            &payload[..3],
            Redistribution::EvenSplit,
            &mut Vec::<u64>::new()
        ),
        Err(PayloadError::Malformed(_))
    ));
}

/// The start-up check names the state that is duplicated, badly named or
/// not visited.
#[test]
fn state_names_are_checked() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(check_state_names(StateKind::Operator, s(&["a", "b"]), s(&["b", "a"]), &[]).is_ok());
    let dup = check_state_names(StateKind::Operator, s(&["a", "a"]), s(&["a", "a"]), &[])
        .unwrap_err()
        .to_string();
    assert!(dup.contains("two operator states named `a`"), "{dup}");
    let missing = check_state_names(StateKind::Operator, s(&["a", "b"]), s(&["a"]), &[])
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("creates operator state `b` but its visit_state does not visit it"),
        "{missing}"
    );
    let empty = check_state_names(StateKind::Operator, s(&[""]), s(&[""]), &[])
        .unwrap_err()
        .to_string();
    assert!(empty.contains("names must be 1 to 255 bytes"), "{empty}");
}

/// A list larger than a block's part size is written as several blocks in
/// element order, each a whole number of elements; read back in extent
/// order they hold exactly the frozen list, although the live list
/// changed while they were written. An empty list writes nothing.
#[test]
fn a_large_list_is_written_in_ordered_blocks() {
    use crate::checkpoint::segment_file::{IoMode, SegmentFile};
    use weir_state::snapshot::SegmentReader;

    let dir = std::env::temp_dir().join(format!("weir-opstate-blocks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w0.seg");
    let path2 = path.clone();
    glommio::LocalExecutorBuilder::default()
        .spawn(move || async move {
            let n = 3 * PART_BYTES / 8 + 123;
            let mut list = OperatorListState::<u64>::new("big");
            list.add_all((0..n as u64).map(|i| i * 5 + 1));
            let frozen = list.frozen(Redistribution::EvenSplit);
            list.update([7, 8, 9]);
            let empty = OperatorListState::<u64>::new("empty").frozen(Redistribution::Union);
            let range = KeyGroupRange::new(0, 128);
            let mut file = SegmentFile::create(&path2, IoMode::Auto).await.unwrap();
            let mut extents = Vec::new();
            let none = write_operator_list(&mut file, "empty", &empty, range, &mut extents)
                .await
                .unwrap();
            assert_eq!((none, extents.len()), (0, 0));
            let bytes = write_operator_list(&mut file, "big", &frozen, range, &mut extents)
                .await
                .unwrap();
            file.close().await.unwrap();
            assert_eq!(
                extents.len(),
                4,
                "{n} elements of 8 bytes in parts of 16 MiB"
            );
            assert_eq!(bytes, extents.iter().map(|e| e.length).sum::<u64>());
            let reader = SegmentReader::open(&path2).unwrap();
            let mut back: Vec<u64> = Vec::new();
            for e in &extents {
                assert_eq!(e.kind, BlockKind::OperatorState);
                assert_eq!(e.state, "big");
                let payload = reader.read_block(e).unwrap();
                decode_payload(payload, Redistribution::EvenSplit, &mut back).unwrap();
            }
            assert_eq!(back, (0..n as u64).map(|i| i * 5 + 1).collect::<Vec<_>>());
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
