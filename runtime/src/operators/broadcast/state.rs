//! Broadcast state: one map per subtask, the same on every subtask that
//! sees the same broadcast records in the same order.

use weir_net::{DecodeError, Wire};
use weir_state::{StateKey, StateValue, ValueState};

/// Name of the broadcast state in an operator's inline state.
pub const BROADCAST_STATE: &str = "broadcast-state";

/// Flink's `BroadcastState<K, V>`: a map every subtask of the operator
/// holds a copy of, written only from broadcast records.
pub struct BroadcastState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    table: ValueState<K, V>,
}

impl<K, V> Default for BroadcastState<K, V>
where
    K: StateKey,
    V: StateValue,
{
    fn default() -> Self {
        Self {
            table: ValueState::new(BROADCAST_STATE),
        }
    }
}

impl<K, V> BroadcastState<K, V>
where
    K: StateKey + Wire,
    V: StateValue + Wire,
{
    /// The value of `key`, if any.
    pub fn get(&self, key: &K) -> Option<V> {
        self.table.get(key).cloned()
    }

    /// Whether `key` has a value.
    pub fn contains(&self, key: &K) -> bool {
        self.table.get(key).is_some()
    }

    /// Sets the value of `key`.
    pub fn put(&mut self, key: K, value: V) {
        self.table.put(key, value);
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.table.remove(key)
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.table.clear();
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.table.iter().map(|(k, v)| (k.clone(), v.clone()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True if there is no entry.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The entries as inline checkpoint state: a `u64` count, then each
    /// `key, value` in its [`Wire`] form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = (self.len() as u64).to_le_bytes().to_vec();
        for (k, v) in self.iter() {
            for part in [&k as &dyn WireBytes, &v] {
                part.append_to(&mut out);
            }
        }
        out
    }

    /// Replaces the entries with those of `bytes` (from [`encode`](Self::encode)).
    pub fn decode_into(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        let (n, mut pos) = u64::read(bytes)?;
        self.clear();
        for _ in 0..n {
            let (k, a) = K::read(&bytes[pos..])?;
            pos += a;
            let (v, b) = V::read(&bytes[pos..])?;
            pos += b;
            self.put(k, v);
        }
        Ok(())
    }
}

/// A value appended in its [`Wire`] form (so keys and values go through
/// one loop).
trait WireBytes {
    fn append_to(&self, out: &mut Vec<u8>);
}

impl<T: Wire> WireBytes for T {
    fn append_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + self.encoded_len(), 0);
        self.write(&mut out[at..]);
    }
}
