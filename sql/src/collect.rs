//! Where a bare SELECT's rows go: a sink whose subtasks each keep the rows
//! they took, in the checkpoint too, so that the table printed when the
//! job ends holds every row exactly once however the job got there.
//!
//! Each subtask owns one slot of a [`Collected`], shared with the caller.
//! It fills its slot as rows arrive, and its checkpointed state is the
//! slot's rows (a [`RowList`]). When it starts it replaces its slot with
//! what it restores (nothing on a fresh start): after a restart in the
//! process the rows the failed attempt took after the checkpoint are not
//! kept twice, and after `--restore` in a new process the rows taken
//! before the checkpoint are not lost (the replay makes only the later
//! ones again). At another parallelism a new subtask takes the rows of the
//! old subtasks [`rescaled_share`] gives it. A row's retraction may then
//! sit in another slot than its insertion: [`crate::session::format_table`]
//! applies the changelog as a multiset, in any order of the slots.

use std::sync::{Arc, Mutex, MutexGuard};

use weir_runtime::{rescaled_share, Sink, SubtaskInfo, Wire};

use crate::value::{Row, RowList};

/// The rows a bare SELECT's sink subtasks took, one slot per subtask.
#[derive(Clone, Debug, Default)]
pub struct Collected(Arc<Mutex<Vec<Vec<Row>>>>);

impl Collected {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Vec<Row>>> {
        self.0.lock().expect("collected rows poisoned")
    }

    /// Every slot's rows, slot after slot (a subtask's in the order it
    /// took them).
    pub fn rows(&self) -> Vec<Row> {
        self.slots().iter().flatten().cloned().collect()
    }

    /// [`Collected::rows`], leaving the collection empty.
    pub fn take(&self) -> Vec<Row> {
        std::mem::take(&mut *self.slots())
            .into_iter()
            .flatten()
            .collect()
    }

    /// The sink of subtask `info`, writing into this collection.
    pub fn sink(&self, info: &SubtaskInfo) -> CollectSink {
        CollectSink {
            out: self.clone(),
            info: *info,
        }
    }

    /// Replaces subtask `index`'s rows with `rows`.
    fn set(&self, index: usize, rows: Vec<Row>) {
        let mut slots = self.slots();
        if slots.len() <= index {
            slots.resize_with(index + 1, Vec::new);
        }
        slots[index] = rows;
    }
}

/// One subtask's sink of a [`Collected`] (see the module documentation).
pub struct CollectSink {
    out: Collected,
    info: SubtaskInfo,
}

impl CollectSink {
    fn decode(state: &[u8]) -> Result<Vec<Row>, String> {
        if state.is_empty() {
            // (a checkpoint of older weir, whose collecting sink kept no state)
            return Ok(Vec::new());
        }
        let (RowList(rows), used) = RowList::read(state)
            .map_err(|e| format!("the collected rows of a bare SELECT do not decode: {e}"))?;
        if used != state.len() {
            return Err(format!(
                "the collected rows of a bare SELECT do not decode: {} bytes after them",
                state.len() - used
            ));
        }
        Ok(rows)
    }
}

impl Sink for CollectSink {
    type In = Row;

    fn invoke(&mut self, row: Row) {
        let mut slots = self.out.slots();
        let i = self.info.index;
        if slots.len() <= i {
            slots.resize_with(i + 1, Vec::new);
        }
        slots[i].push(row);
    }

    fn is_retryable(&self, _error: &str) -> bool {
        // Only a restored state that does not decode fails: it will not
        // decode on a restart either.
        false
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let rows = match restored {
            None => Vec::new(),
            Some((_, state)) => Self::decode(state)?,
        };
        self.out.set(self.info.index, rows);
        Ok(())
    }

    fn initialize_rescaled_state(
        &mut self,
        _checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        let mut rows = Vec::new();
        for k in rescaled_share(&self.info, states.len()) {
            match Self::decode(states[k]) {
                Ok(r) => rows.extend(r),
                Err(e) => return Some(Err(e)),
            }
        }
        self.out.set(self.info.index, rows);
        Some(Ok(()))
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, String> {
        let slots = self.out.slots();
        let rows = slots.get(self.info.index).map_or(&[][..], Vec::as_slice);
        // (RowList's encoding, written from the slot without cloning it)
        let n = u32::try_from(rows.len()).map_err(|_| "2^32 rows or more collected".to_owned())?;
        let mut out = vec![0; 4 + rows.iter().map(Wire::encoded_len).sum::<usize>()];
        out[..4].copy_from_slice(&n.to_le_bytes());
        let mut at = 4;
        for r in rows {
            let len = r.encoded_len();
            r.write(&mut out[at..at + len]);
            at += len;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
