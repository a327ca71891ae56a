//! The position of a strided generator as splits in union list state, so
//! that it can rescale: [`StridedSplits`].
//!
//! Every WORKLOADS.md source, the quickstart's and [`SequenceSource`]
//! partition a sequence `0..end` by stride: at a fresh start subtask `s` of
//! `P` emits `s, s + P, s + 2P, ...`. That is one *split* per subtask, a
//! `(next, step, end)` triple: the records `next, next + step, ...` below
//! `end`. A subtask's position is its splits, kept in union list state
//! `strided-splits` (each element also records which subtask of which
//! parallelism stored it), as Flink keeps a source reader's splits in
//! operator state.
//!
//! **Restore.** Every new subtask gets every old split (union
//! redistribution) and takes its share, the same function of the same
//! list on every subtask, so the shares are disjoint and cover every old
//! split:
//!
//! - at the parallelism of the checkpoint, its own splits (the ones it
//!   stored), so nothing moves;
//! - at another, with `m` old splits and `P` new subtasks, split `i` of
//!   the old list (in subtask order) goes to subtask `i mod P`; when
//!   `m < P`, every split is first cut into `k = ceil(P / m)` strided
//!   pieces — `(next, step, end)` becomes `(next + j * step, k * step,
//!   end)` for `j < k` — so that no new subtask stays idle. A piece holds
//!   exactly the records of its split congruent to its first one, so the
//!   pieces partition the split: no record is lost and none repeats.
//!
//! Every split of a job has the same step and end (a fresh start gives all
//! step `P`; a cut multiplies every step by the same `k`), and a subtask
//! emits the records of all its splits in increasing order
//! ([`StridedSplits::emit`]): the splits within one step of the smallest
//! are read interleaved, the others wait for their turn. A subtask's
//! records thus keep the order of the sequence after any rescale, so event
//! time stays monotone per subtask and no record turns late. With one
//! split — every fresh start, and every restore at the same parallelism
//! — the per-record loop is the plain strided one.
//!
//! [`SequenceSource`]: crate::operators::source::sequence::SequenceSource

use crate::chain::control::Collector;
use crate::core::subtask::SubtaskInfo;
use crate::operators::source::function::decode_strided_position;
use crate::state::operator::list::UnionListState;
use crate::state::visitor::OperatorStates;

/// Name of the union list state holding a strided source's splits.
pub const STRIDED_SPLITS_STATE: &str = "strided-splits";

/// One stored split: `(next, step, end, origin)`, `origin` being the
/// storing subtask as `parallelism << 32 | index`.
pub type StoredSplit = (u64, u64, u64, u64);

/// The splits of one subtask of a strided generator (see the [module](self)
/// docs): what to emit next, and its union list state.
pub struct StridedSplits {
    /// The next record of each unfinished split, ascending (all below
    /// `end`); empty when the subtask is done.
    nexts: Vec<u64>,
    /// The common step of the splits (at least 1).
    step: u64,
    /// The common end: records are below it.
    end: u64,
    index: usize,
    parallelism: usize,
    state: UnionListState<StoredSplit>,
}

impl StridedSplits {
    /// Subtask `info`'s split of `0..end` at a fresh start: `index, index +
    /// parallelism, ...`.
    pub fn new(info: &SubtaskInfo, end: u64) -> Self {
        let first = info.index as u64;
        let mut splits = Self {
            nexts: Vec::with_capacity(1),
            step: info.parallelism.max(1) as u64,
            end,
            index: info.index,
            parallelism: info.parallelism.max(1),
            state: UnionListState::new(STRIDED_SPLITS_STATE),
        };
        if first < end {
            splits.nexts.push(first);
        }
        splits.store();
        splits
    }

    /// True once every split is done.
    #[inline]
    pub fn is_finished(&self) -> bool {
        self.nexts.is_empty()
    }

    /// The next record this subtask emits, if any.
    #[inline]
    pub fn next_record(&self) -> Option<u64> {
        self.nexts.first().copied()
    }

    /// The unfinished splits `(next, step, end)`, in the order they are
    /// read.
    pub fn splits(&self) -> Vec<(u64, u64, u64)> {
        self.nexts
            .iter()
            .map(|&n| (n, self.step, self.end))
            .collect()
    }

    /// Emits up to `limit` records `make(i)` into `out` while it is
    /// available, in increasing `i`; returns how many.
    #[inline]
    pub fn emit<T, C: Collector<T>>(
        &mut self,
        make: &mut impl FnMut(u64) -> T,
        out: &mut C,
        limit: usize,
    ) -> usize {
        if let [first] = self.nexts[..] {
            // One split: the records left, each made as the chain takes it
            // (a run: see `Collector::collect_many`).
            let step = self.step;
            let left = (self.end - first).div_ceil(step);
            let mut records = (0..left).map(|j| make(first + j * step));
            let n = out.collect_many(&mut records, limit.min(left as usize));
            let next = first + n as u64 * step;
            if next >= self.end {
                self.nexts.clear();
            } else {
                self.nexts[0] = next;
            }
            n
        } else if self.nexts.is_empty() {
            0
        } else {
            self.emit_merged(make, out, limit)
        }
    }

    /// [`emit`](Self::emit) with several splits: the *group* of splits
    /// whose next record is within one step of the smallest is read
    /// interleaved (its records, in order, repeat the group's offsets
    /// every step) up to the next record of the first split outside it.
    #[inline(never)]
    fn emit_merged<T, C: Collector<T>>(
        &mut self,
        make: &mut impl FnMut(u64) -> T,
        out: &mut C,
        limit: usize,
    ) -> usize {
        let (step, end) = (self.step, self.end);
        let reach = self.nexts[0].saturating_add(step);
        let g = self.nexts.iter().take_while(|&&n| n < reach).count();
        let bound = self.nexts.get(g).copied().unwrap_or(end);
        let below: u64 = self.nexts[..g]
            .iter()
            .map(|&n| (bound - n).div_ceil(step))
            .sum();
        let group = &self.nexts[..g];
        let mut records = Interleaved {
            group,
            step,
            at: 0,
            add: 0,
        }
        .map(&mut *make);
        let n = out.collect_many(&mut records, limit.min(below as usize));
        // The first `n % g` members of the group moved one step more.
        let (rounds, extra) = ((n / g) as u64, n % g);
        for (at, next) in self.nexts[..g].iter_mut().enumerate() {
            *next += (rounds + u64::from(at < extra)) * step;
        }
        self.nexts.retain(|&n| n < end);
        self.nexts.sort_unstable();
        n
    }

    /// Hands the splits' state to `states`, after writing the splits into
    /// it (a snapshot stores them; a restore overwrites them, see
    /// [`restored`](Self::restored)).
    pub fn visit(&mut self, states: &mut OperatorStates<'_>) {
        self.store();
        states.union_list(&mut self.state);
    }

    /// Writes the splits into the state, as this subtask's.
    fn store(&mut self) {
        let origin = (self.parallelism as u64) << 32 | self.index as u64;
        let (step, end) = (self.step, self.end);
        self.state.clear();
        for i in 0..self.nexts.len() {
            let next = self.nexts[i];
            self.state.add((next, step, end, origin));
        }
    }

    /// A restore filled the state with every old subtask's splits: takes
    /// this subtask's share (see the [module](self) docs). The error says
    /// what is wrong with splits that cannot be this source's.
    pub fn restored(&mut self) -> Result<(), String> {
        let stored = self.state.to_vec();
        let Some(&(_, step, end, _)) = stored.first() else {
            self.nexts.clear();
            return Ok(());
        };
        if step == 0 {
            return Err("a restored split has step 0".into());
        }
        if let Some(other) = stored.iter().find(|s| (s.1, s.2) != (step, end)) {
            return Err(format!(
                "the restored splits do not share one step and end: ({step}, {end}) and ({}, {})",
                other.1, other.2
            ));
        }
        let share = share(&stored, self.parallelism, self.index);
        self.step = share.step;
        self.end = end;
        self.nexts = share.nexts;
        self.nexts.retain(|&n| n < end);
        self.nexts.sort_unstable();
        self.store();
        Ok(())
    }

    /// Rewinds to a position of the format before splits (the next
    /// record's index, 8 bytes, of a subtask at the same parallelism),
    /// so that a checkpoint written by an earlier version still restores.
    /// An empty position (this format's) changes nothing.
    pub fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        if position.is_empty() {
            return Ok(());
        }
        let step = self.parallelism as u64;
        let next = decode_strided_position(position, self.index as u64, step)?;
        self.step = step;
        self.nexts.clear();
        if next < self.end {
            self.nexts.push(next);
        }
        self.store();
        Ok(())
    }
}

/// A subtask's share of the stored splits: the next records and their
/// common step.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Share {
    pub(crate) nexts: Vec<u64>,
    pub(crate) step: u64,
}

/// Subtask `index` of `parallelism`'s share of `stored` (every old
/// subtask's splits, in subtask order, one step and end; see the
/// [module](self) docs).
pub(crate) fn share(stored: &[StoredSplit], parallelism: usize, index: usize) -> Share {
    let origin = |s: &StoredSplit| ((s.3 >> 32) as usize, (s.3 & u64::from(u32::MAX)) as usize);
    let Some(&(_, step, end, _)) = stored.first() else {
        return Share {
            nexts: Vec::new(),
            step: parallelism as u64,
        };
    };
    if stored.iter().all(|s| origin(s).0 == parallelism) {
        return Share {
            nexts: stored
                .iter()
                .filter(|s| origin(s).1 == index)
                .map(|s| s.0)
                .collect(),
            step,
        };
    }
    let m = stored.len();
    let cuts = if m >= parallelism {
        1
    } else {
        parallelism.div_ceil(m) as u64
    };
    let (cuts, new_step) = match step.checked_mul(cuts) {
        Some(s) => (cuts, s),
        None => (1, step),
    };
    let pieces = stored.iter().flat_map(|s| {
        (0..cuts)
            .filter_map(move |j| j.checked_mul(step).and_then(|o| s.0.checked_add(o)))
            .filter(move |&n| n < end)
    });
    Share {
        nexts: pieces
            .enumerate()
            .filter(|(i, _)| i % parallelism == index)
            .map(|(_, n)| n)
            .collect(),
        step: new_step,
    }
}

/// The records of a group of splits with one step whose next records lie
/// within one step: the group's next records in order, then each plus a
/// step, and so on (unbounded; the caller takes as many as lie below its
/// bound).
struct Interleaved<'a> {
    group: &'a [u64],
    step: u64,
    at: usize,
    add: u64,
}

impl Iterator for Interleaved<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        let i = self.group[self.at] + self.add;
        self.at += 1;
        if self.at == self.group.len() {
            self.at = 0;
            self.add += self.step;
        }
        Some(i)
    }
}

#[cfg(test)]
mod tests;
