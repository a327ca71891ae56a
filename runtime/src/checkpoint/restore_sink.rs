//! [`RestoreSink`]: what each keyed state kind gives a restore (how an
//! entry is decoded, hashed and put back), shared by the readers of full
//! blocks (`keyed_restore`) and of incremental chains (`chain_restore`).

/// Where a restore puts the entries of one keyed state: how an entry is
/// decoded, which hash decides its key group, and how it is inserted.
/// [`restore_entries`](crate::checkpoint::keyed_restore::restore_entries) does the rest (windows, checksums, key-group checks)
/// for every state kind.
pub(crate) trait RestoreSink {
    /// One decoded entry.
    type Entry;

    /// Reads one entry from the front of `bytes`; returns it and the bytes
    /// used.
    fn decode(bytes: &[u8]) -> Result<(Self::Entry, usize), weir_net::DecodeError>;

    /// The hash deciding the entry's key group (its primary key's).
    fn group_hash(entry: &Self::Entry) -> u64;

    /// Makes room for about `entries` more entries.
    fn reserve(&mut self, entries: usize);

    /// A hint that `entry` (of key-group hash `hash`) is inserted soon.
    fn prefetch(&self, entry: &Self::Entry, hash: u64) {
        let _ = (entry, hash);
    }

    /// Inserts `entry`, whose key-group hash is `hash`.
    fn insert(&mut self, entry: Self::Entry, hash: u64);

    /// Inserts every `(entry, hash)` of `batch`, in order, and empties it.
    fn insert_batch(&mut self, batch: &mut Vec<(Self::Entry, u64)>) {
        for (entry, hash) in batch.drain(..) {
            self.insert(entry, hash);
        }
    }

    /// Whether entries of a table block of a table of `2^log2_capacity`
    /// slots can go back to their slots ([`place_batch`](Self::place_batch)):
    /// only a `ValueState` of that capacity can take them.
    fn placeable(&self, log2_capacity: u8) -> bool {
        let _ = log2_capacity;
        false
    }

    /// Makes the target a table of at least `capacity` slots (before a
    /// restore of table blocks of that capacity).
    fn reserve_table(&mut self, capacity: usize) {
        let _ = capacity;
    }

    /// Stores every `(slot, entry, hash)` of `batch` at its slot where
    /// that is where an insert would put it, appends the others to
    /// `deferred` (to [`insert_batch`](Self::insert_batch) after the last
    /// table block), and empties `batch`.
    fn place_batch(
        &mut self,
        batch: &mut Vec<(usize, Self::Entry, u64)>,
        deferred: &mut Vec<(Self::Entry, u64)>,
    ) {
        deferred.extend(batch.drain(..).map(|(_, entry, hash)| (entry, hash)));
    }

    /// Called once every block was read and checked.
    fn finish(&mut self) {}

    /// Entries now held (for the trace).
    fn entry_count(&self) -> usize;
}
