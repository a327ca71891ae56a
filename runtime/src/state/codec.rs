//! How the keyed state kinds are written to and read from checkpoints:
//! frozen tables serialized per key group or as table blocks, and the
//! restore target of a plain value table.

use weir_net::Wire;
use weir_state::value_state::FrozenValueState;
use weir_state::{KeyGroupAssigner, KeyGroupRange, StateKey, StateValue};

use crate::checkpoint::error::RestoreError;
use crate::checkpoint::keyed_restore::{restore_entries, RestoreSink};
use crate::checkpoint::restore::RestoreScope;
use crate::checkpoint::table_block::{TableHeader, HEADER_LEN};
use crate::core::snapshot::{FrozenKeyedState, TableTracking};
use crate::core::wire::append_wire;
use crate::state::value::KeyedValueState;

impl<K, V> FrozenKeyedState for FrozenValueState<K, V>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
{
    fn len(&self) -> usize {
        FrozenValueState::len(self)
    }

    fn chunk_count(&self) -> usize {
        FrozenValueState::chunk_count(self)
    }

    fn estimated_bytes(&self) -> usize {
        let per_entry = self
            .iter()
            .next()
            .map_or(0, |(k, v)| k.encoded_len() + v.encoded_len());
        per_entry * self.len()
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        let share = part_share(self, range, &chunks);
        serialize_entries(
            self,
            chunks,
            share,
            max_parallelism,
            range,
            out,
            |k| k.key_hash(),
            append_entry,
        );
    }

    fn is_table(&self) -> bool {
        true
    }

    fn serialize_table_part(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) {
        let per_entry = self.estimated_bytes() / self.len().max(1);
        serialize_table_block(
            self,
            chunks,
            out,
            per_entry,
            None::<fn(&V) -> bool>,
            append_entry,
        );
    }

    fn table_part_layout(
        &self,
        chunks: std::ops::Range<usize>,
        prefix: &mut Vec<u8>,
    ) -> Option<usize> {
        let entry = K::FIXED_LEN? + V::FIXED_LEN?;
        let used = table_prefix(self, chunks, prefix);
        Some(if used == 0 {
            0
        } else {
            prefix.len() + used * entry
        })
    }

    fn write_table_entries(&self, chunks: std::ops::Range<usize>, out: &mut [u8]) {
        let (kn, vn) = match (K::FIXED_LEN, V::FIXED_LEN) {
            (Some(kn), Some(vn)) => (kn, vn),
            _ => unreachable!("write_table_entries of a table of variable-size entries"),
        };
        let mut rest = out;
        self.for_each_in_chunks(chunks, |k, v| {
            // Panics if `out` is shorter than the entries.
            let (entry, tail) = std::mem::take(&mut rest).split_at_mut(kn + vn);
            k.write(&mut entry[..kn]);
            v.write(&mut entry[kn..]);
            rest = tail;
        });
        assert!(
            rest.is_empty(),
            "table block entries left {} bytes of the payload unwritten",
            rest.len()
        );
    }

    fn release_chunks(&mut self, chunks: std::ops::Range<usize>) {
        FrozenValueState::release_chunks(self, chunks);
    }

    fn table_tracking(&self) -> Option<TableTracking> {
        Some(table_tracking(self))
    }

    fn serialize_table_delta(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) -> u64 {
        serialize_table_delta(self, chunks, out, |_| true, append_entry)
    }
}

/// What an incremental writer needs to know of `view`; asking starts the
/// table's dirty tracking (see [`FrozenKeyedState::table_tracking`]).
fn table_tracking<K, V>(view: &FrozenValueState<K, V>) -> TableTracking
where
    K: StateKey,
    V: StateValue,
{
    let tracked = view.is_tracked();
    if !tracked {
        // An incremental writer asks: the table tracks its writes from its
        // next freeze on, so the checkpoint after the next may be a delta.
        view.request_tracking();
    }
    TableTracking {
        freeze: view.freeze_ids(),
        log2_capacity: view.log2_capacity() as u8,
        dirty_slots: view.dirty_count(0..view.capacity()),
        entries: view.len(),
        capacity: view.capacity(),
        tracked,
    }
}

/// Sets `out` to the delta block of the slots of the arena chunks
/// `chunks` of `view` written or emptied since its previous freeze (see
/// [`FrozenKeyedState::serialize_table_delta`]): an entry `live` says is
/// gone (its TTL expired) is recorded as an emptied slot, the others are
/// appended by `write`. Returns the record count.
fn serialize_table_delta<K, V>(
    view: &FrozenValueState<K, V>,
    chunks: std::ops::Range<usize>,
    out: &mut Vec<u8>,
    live: impl Fn(&V) -> bool,
    write: impl Fn(&mut Vec<u8>, &K, &V),
) -> u64
where
    K: StateKey,
    V: StateValue,
{
    use crate::checkpoint::table_delta;
    out.clear();
    let slots = view.chunk_slots(chunks);
    table_delta::start(&table_header(view, &slots), out);
    let mut records = 0;
    let first = slots.start;
    view.for_each_dirty(slots, |pos, entry| {
        let offset = u32::try_from(pos - first).expect("a part has fewer than 2^32 slots");
        let entry = entry.filter(|(_, v)| live(v));
        table_delta::push_record(
            out,
            offset,
            entry.map(|(k, v)| |o: &mut Vec<u8>| write(o, k, v)),
        );
        records += 1;
    });
    table_delta::finish(out, records);
    records
}

/// Sets `out` to the table block of the arena chunks `chunks` of `view`
/// (see [`FrozenKeyedState::serialize_table_part`]), about `per_entry`
/// bytes per entry, each appended by `write`; or empties it if they hold
/// no entry. With `live`, an entry it says is gone (its TTL expired) is
/// left out and its slot marked empty in the occupancy.
fn serialize_table_block<K, V>(
    view: &FrozenValueState<K, V>,
    chunks: std::ops::Range<usize>,
    out: &mut Vec<u8>,
    per_entry: usize,
    live: Option<impl Fn(&V) -> bool>,
    write: impl Fn(&mut Vec<u8>, &K, &V),
) where
    K: StateKey,
    V: StateValue,
{
    let used = table_prefix(view, chunks.clone(), out);
    if used == 0 {
        out.clear();
        return;
    }
    out.reserve(used * per_entry + per_entry);
    let Some(live) = live else {
        view.for_each_in_chunks(chunks, |k, v| write(out, k, v));
        return;
    };
    // The entries come in slot order, as the occupancy's set bits: the
    // cursor walks the bits alongside and clears those of gone entries.
    let bitmap = HEADER_LEN..out.len();
    let word_at = |out: &[u8], w: usize| {
        let at = bitmap.start + w * 8;
        u64::from_le_bytes(out[at..at + 8].try_into().expect("8 bytes"))
    };
    let (mut w, mut bits) = (0, word_at(out, 0));
    let mut kept = 0;
    view.for_each_in_chunks(chunks, |k, v| {
        while bits == 0 {
            w += 1;
            bits = word_at(out, w);
        }
        let bit = bits & bits.wrapping_neg();
        bits &= bits - 1;
        if live(v) {
            write(out, k, v);
            kept += 1;
        } else {
            let at = bitmap.start + w * 8;
            let cleared = word_at(out, w) & !bit;
            out[at..at + 8].copy_from_slice(&cleared.to_le_bytes());
        }
    });
    if kept == 0 {
        out.clear();
    }
}

/// Sets `out` to the header and occupancy bitmap of the table block of
/// the arena chunks `chunks` of `view`; returns the entries they hold.
fn table_prefix<K, V>(
    view: &FrozenValueState<K, V>,
    chunks: std::ops::Range<usize>,
    out: &mut Vec<u8>,
) -> usize
where
    K: StateKey,
    V: StateValue,
{
    out.clear();
    let slots = view.chunk_slots(chunks);
    table_header(view, &slots).write(out);
    view.occupancy(slots, out)
}

/// The header of a table or delta block of the positions `slots` of
/// `view`.
fn table_header<K, V>(view: &FrozenValueState<K, V>, slots: &std::ops::Range<usize>) -> TableHeader
where
    K: StateKey,
    V: StateValue,
{
    TableHeader {
        log2_capacity: view.log2_capacity() as u8,
        table_len: view.len() as u64,
        first_slot: slots.start as u64,
        slot_count: slots.len() as u64,
    }
}

/// Bytes each key group's buffer should reserve for serializing the
/// arena chunks `chunks` of `view`: keys spread evenly over chunks and key
/// groups.
fn part_share(
    view: &dyn FrozenKeyedState,
    range: KeyGroupRange,
    chunks: &std::ops::Range<usize>,
) -> usize {
    let all = view.chunk_count().max(1);
    view.estimated_bytes() * chunks.len().min(all) / all / range.len().max(1) as usize
}

/// Serializes the entries of `view` stored in the arena chunks `chunks`
/// into `out` per key group of `range` (see
/// [`FrozenKeyedState::serialize_part`]): `group_hash` gives the hash that
/// decides an entry's key group (its primary key's), `write` appends the
/// entry's bytes (or nothing, to leave it out). Each buffer reserves
/// `share` bytes (with 1/8 slack), so they do not grow entry by entry.
#[inline]
#[allow(clippy::too_many_arguments)]
fn serialize_entries<KK: StateKey, VV: StateValue>(
    view: &FrozenValueState<KK, VV>,
    chunks: std::ops::Range<usize>,
    share: usize,
    max_parallelism: u32,
    range: KeyGroupRange,
    out: &mut Vec<Vec<u8>>,
    group_hash: impl Fn(&KK) -> u64,
    mut write: impl FnMut(&mut Vec<u8>, &KK, &VV),
) {
    out.resize_with(range.len() as usize, Vec::new);
    for buf in out.iter_mut() {
        buf.clear();
        buf.reserve(share + share / 8 + 64);
    }
    // A mask instead of a division when the key groups are a power of
    // two (the default 128).
    let groups = KeyGroupAssigner::new(max_parallelism, 1);
    let start = range.start();
    view.for_each_in_chunks(chunks, |k, v| {
        let kg = groups.key_group(group_hash(k));
        debug_assert!(range.contains(kg), "a key outside the subtask's range");
        write(&mut out[(kg - start) as usize], k, v);
    });
}

/// A frozen table of one of the composite keyed states (map, list,
/// reducing, aggregating; see [`crate::state`]), with how its
/// entries are written: the hash of an entry's *primary* key, which alone
/// decides its key group (a map entry `(key, user key)` belongs to `key`'s
/// group, so a restore at another parallelism finds it), the entry's
/// bytes, and its TTL timestamp. With TTL the snapshot is also the full
/// cleanup: entries expired when the view was taken are not written.
pub struct FrozenTable<KK, VV>
where
    KK: StateKey,
    VV: StateValue,
{
    view: FrozenValueState<KK, VV>,
    group_hash: fn(&KK) -> u64,
    write: fn(&mut Vec<u8>, &KK, &VV),
    stamp: fn(&VV) -> u64,
    /// `(now, ttl)` in milliseconds, when expired entries are left out.
    expiry: Option<(u64, u64)>,
}

impl<KK, VV> FrozenTable<KK, VV>
where
    KK: StateKey,
    VV: StateValue,
{
    /// `view` written entry by entry with `write`, into the key group of
    /// `group_hash`; with `expiry = Some((now, ttl))` an entry whose
    /// `stamp + ttl <= now` is left out.
    pub fn new(
        view: FrozenValueState<KK, VV>,
        group_hash: fn(&KK) -> u64,
        write: fn(&mut Vec<u8>, &KK, &VV),
        stamp: fn(&VV) -> u64,
        expiry: Option<(u64, u64)>,
    ) -> Self {
        Self {
            view,
            group_hash,
            write,
            stamp,
            expiry,
        }
    }

    fn live(&self, v: &VV) -> bool {
        self.expiry
            .is_none_or(|(now, ttl)| (self.stamp)(v).saturating_add(ttl) > now)
    }
}

impl<KK, VV> FrozenKeyedState for FrozenTable<KK, VV>
where
    KK: StateKey,
    VV: StateValue,
{
    fn len(&self) -> usize {
        self.view.len()
    }

    fn chunk_count(&self) -> usize {
        self.view.chunk_count()
    }

    fn release_chunks(&mut self, chunks: std::ops::Range<usize>) {
        self.view.release_chunks(chunks);
    }

    fn estimated_bytes(&self) -> usize {
        let mut one = Vec::new();
        if let Some((k, v)) = self.view.iter().next() {
            (self.write)(&mut one, k, v);
        }
        one.len() * self.view.len()
    }

    fn is_table(&self) -> bool {
        true
    }

    fn serialize_table_part(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) {
        let per_entry = self.estimated_bytes() / self.len().max(1);
        serialize_table_block(
            &self.view,
            chunks,
            out,
            per_entry,
            self.expiry.map(|_| |v: &VV| self.live(v)),
            self.write,
        );
    }

    fn table_tracking(&self) -> Option<TableTracking> {
        Some(table_tracking(&self.view))
    }

    fn serialize_table_delta(&self, chunks: std::ops::Range<usize>, out: &mut Vec<u8>) -> u64 {
        serialize_table_delta(&self.view, chunks, out, |v| self.live(v), self.write)
    }

    fn serialize_part(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        chunks: std::ops::Range<usize>,
        out: &mut Vec<Vec<u8>>,
    ) {
        let share = part_share(self, range, &chunks);
        serialize_entries(
            &self.view,
            chunks,
            share,
            max_parallelism,
            range,
            out,
            self.group_hash,
            |buf, k, v| {
                if self.live(v) {
                    (self.write)(buf, k, v);
                }
            },
        );
    }
}

/// Appends an entry's key and value, in one copy when both are small (the
/// snapshot writer's per-entry step).
#[inline(always)]
fn append_entry<K: Wire, V: Wire>(buf: &mut Vec<u8>, k: &K, v: &V) {
    let (n, m) = (k.encoded_len(), v.encoded_len());
    if n + m <= 64 {
        let mut tmp = [0u8; 64];
        k.write(&mut tmp[..n]);
        v.write(&mut tmp[n..n + m]);
        buf.extend_from_slice(&tmp[..n + m]);
    } else {
        append_wire(buf, k);
        append_wire(buf, v);
    }
}

/// A keyed `ValueState`'s table as a restore target: entries `(key, value)`.
pub(crate) struct ValueSink<'s, K, V>(pub(crate) &'s mut weir_state::ValueState<K, V>)
where
    K: StateKey,
    V: StateValue;

impl<K, V> RestoreSink for ValueSink<'_, K, V>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
{
    type Entry = (K, V);

    #[inline]
    fn decode(bytes: &[u8]) -> Result<((K, V), usize), weir_net::DecodeError> {
        let (k, n) = K::read(bytes)?;
        let (v, m) = V::read(&bytes[n..])?;
        Ok(((k, v), n + m))
    }

    #[inline]
    fn group_hash(entry: &(K, V)) -> u64 {
        entry.0.key_hash()
    }

    fn reserve(&mut self, entries: usize) {
        self.0.reserve(entries);
    }

    #[inline]
    fn prefetch(&self, _entry: &(K, V), hash: u64) {
        self.0.prefetch_hashed(hash);
    }

    #[inline(always)]
    fn insert(&mut self, (k, v): (K, V), hash: u64) {
        self.0.load_hashed(k, hash, v);
    }

    #[inline]
    fn insert_batch(&mut self, batch: &mut Vec<((K, V), u64)>) {
        self.0.load_batch(batch);
        batch.clear();
    }

    fn placeable(&self, log2_capacity: u8) -> bool {
        u32::from(log2_capacity) < usize::BITS && self.0.capacity() == 1 << log2_capacity
    }

    fn reserve_table(&mut self, capacity: usize) {
        self.0.reserve_capacity(capacity);
    }

    #[inline]
    fn place_batch(
        &mut self,
        batch: &mut Vec<(usize, (K, V), u64)>,
        deferred: &mut Vec<((K, V), u64)>,
    ) {
        self.0.load_placed_batch(batch, deferred);
        batch.clear();
    }

    fn entry_count(&self) -> usize {
        self.0.len()
    }
}

pub(crate) fn restore_value_state<K, V>(
    scope: &RestoreScope<'_>,
    state: &mut KeyedValueState<K, V>,
) -> Result<(), RestoreError>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
{
    let name = state.name().to_owned();
    restore_entries(scope, &name, &mut ValueSink(state.inner_mut()))
}

#[cfg(test)]
mod tests;
