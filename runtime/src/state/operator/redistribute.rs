//! Where operator list state goes on restore: Flink's even-split and
//! union redistribution, as pure functions of the old subtasks' lists.

use std::ops::Range;

use weir_state::StateValue;

use crate::core::snapshot::Redistribution;

/// The range of the `total` concatenated elements that new subtask `index`
/// of `parallelism` gets under even-split redistribution: contiguous parts
/// of `total / parallelism` elements, one more for the first
/// `total % parallelism` subtasks.
///
/// # Panics
///
/// If `index >= parallelism`.
pub fn even_split_range(total: usize, parallelism: usize, index: usize) -> Range<usize> {
    assert!(
        index < parallelism,
        "subtask {index} of parallelism {parallelism}"
    );
    let (base, extra) = (total / parallelism, total % parallelism);
    let start = index * base + index.min(extra);
    start..start + base + usize::from(index < extra)
}

/// The elements new subtask `index` of `new_parallelism` restores from the
/// lists `old` of the old subtasks (indexed by old subtask), under `mode`.
/// Even split at the old parallelism gives each subtask its own list; at
/// another, the contiguous part [`even_split_range`] of the concatenation.
/// Union gives every subtask the concatenation.
///
/// # Panics
///
/// If `index >= new_parallelism`.
pub fn assigned_to<T: StateValue>(
    mode: Redistribution,
    old: &[Vec<T>],
    new_parallelism: usize,
    index: usize,
) -> Vec<T> {
    assert!(
        index < new_parallelism,
        "subtask {index} of parallelism {new_parallelism}"
    );
    match mode {
        Redistribution::EvenSplit if old.len() == new_parallelism => old[index].clone(),
        Redistribution::EvenSplit => {
            let total: usize = old.iter().map(Vec::len).sum();
            let range = even_split_range(total, new_parallelism, index);
            old.iter()
                .flatten()
                .skip(range.start)
                .take(range.len())
                .cloned()
                .collect()
        }
        Redistribution::Union => old.iter().flatten().cloned().collect(),
    }
}

/// What every new subtask of `new_parallelism` restores (see
/// [`assigned_to`]).
pub fn redistribute<T: StateValue>(
    mode: Redistribution,
    old: &[Vec<T>],
    new_parallelism: usize,
) -> Vec<Vec<T>> {
    (0..new_parallelism)
        .map(|i| assigned_to(mode, old, new_parallelism, i))
        .collect()
}
