//! The values DISTINCT aggregates have seen, counted, so that a value
//! folds into its aggregate once however often it comes, and leaves it
//! (on a retraction) when its last row does: Flink's `MapView` of a
//! distinct aggregate, keyed by the value, one count per FILTER variant.
//!
//! The aggregates of one grouping that are DISTINCT over the same argument
//! share one set ([`DistinctSet`]): each value has one count per such
//! aggregate (they differ by FILTER), as Flink's distinct views hold a
//! count per filter.
//!
//! Where the counts live decides what a checkpoint holds:
//!
//! - a **group aggregation** keeps them in keyed map state
//!   ([`DistinctState`]): one entry per `(group key, set, value)`, keyed by
//!   the group key, so it is checkpointed (an incremental checkpoint writes
//!   only the entries that changed), restored and rescaled with the key
//!   group of its key like every keyed state, and a record costs one map
//!   lookup per set however many values the group has seen. A set inside
//!   the accumulator would be rewritten whole into every checkpoint after
//!   any change, and copied whole by the copy-on-write of a frozen
//!   snapshot, for a set that grows without bound (a day's bidders).
//! - a **window aggregation** keeps them inside the window's accumulator
//!   ([`DistinctValues`], sorted by value): weir's window operator holds
//!   exactly one accumulator per key and window (its panes and merging
//!   session windows move them), so the set is checkpointed, restored and
//!   rescaled as part of it and dies with the window when it fires.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use smallvec::SmallVec;
use weir_runtime::{DecodeError, KeyContext, KeyedMapState, Wire};

use crate::value::{Key, Row, Value, Values};

/// The DISTINCT aggregates over one argument column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistinctSet {
    /// The argument's column in the aggregation's input.
    pub arg: usize,
    /// The aggregates (indexes into the grouping's calls), one count each.
    pub calls: Vec<usize>,
}

/// A value's counts in a set: one per aggregate of the set.
pub type Counts = SmallVec<[i64; 4]>;

/// Where an aggregation keeps the counts of its distinct values.
pub trait DistinctStore {
    /// Applies `f` to the counts of `value` in set `set` (`width` zeros for
    /// a value not seen); the value is forgotten once all are zero.
    fn update(&mut self, set: usize, value: &Value, width: usize, f: &mut dyn FnMut(&mut [i64]));

    /// The largest (`max`) or smallest value of set `set` whose count for
    /// aggregate `call` (its place in the set) is not zero; NULL if none:
    /// what a MIN or MAX over an updating input becomes when its value is
    /// retracted (Flink's `MaxWithRetractAggFunction` scans its map too).
    fn extreme(&mut self, set: usize, call: usize, max: bool) -> Value;
}

/// The larger (`max`) or smaller of `best` and `v`.
fn keep_extreme(best: Option<Value>, v: &Value, max: bool) -> Option<Value> {
    match best {
        Some(b) => {
            let o = v.total_cmp(&b);
            let better = if max {
                o == Ordering::Greater
            } else {
                o == Ordering::Less
            };
            Some(if better { v.clone() } else { b })
        }
        None => Some(v.clone()),
    }
}

/// No DISTINCT aggregate: nothing to keep.
pub struct NoDistinct;

impl DistinctStore for NoDistinct {
    fn update(&mut self, _: usize, _: &Value, _: usize, _: &mut dyn FnMut(&mut [i64])) {}

    fn extreme(&mut self, _: usize, _: usize, _: bool) -> Value {
        Value::Null
    }
}

/// A value ordered by [`Value::total_cmp`], as a set's key.
#[derive(Clone, Debug)]
pub struct Ordered(pub Value);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The distinct values of a window's accumulator: per set, each value
/// seen with its counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistinctValues(pub Vec<BTreeMap<Ordered, Counts>>);

impl DistinctValues {
    /// Empty sets, `n` of them.
    pub fn new(n: usize) -> Self {
        Self(vec![BTreeMap::new(); n])
    }
}

impl DistinctStore for DistinctValues {
    fn update(&mut self, set: usize, value: &Value, width: usize, f: &mut dyn FnMut(&mut [i64])) {
        if self.0.len() <= set {
            self.0.resize(set + 1, BTreeMap::new());
        }
        let map = &mut self.0[set];
        let key = Ordered(value.clone());
        let counts = map
            .entry(key.clone())
            .or_insert_with(|| SmallVec::from_elem(0, width));
        f(counts);
        if counts.iter().all(|&c| c == 0) {
            map.remove(&key);
        }
    }

    fn extreme(&mut self, set: usize, call: usize, max: bool) -> Value {
        let Some(map) = self.0.get(set) else {
            return Value::Null;
        };
        let counted = |(v, c): (&Ordered, &Counts)| (c.get(call) > Some(&0)).then(|| v.0.clone());
        let found = if max {
            map.iter().rev().find_map(counted)
        } else {
            map.iter().find_map(counted)
        };
        found.unwrap_or(Value::Null)
    }
}

/// Wire form: the number of sets (u32), then per set its number of
/// values (u32) and per value the value, its number of counts (u16) and
/// the counts (i64 each).
impl Wire for DistinctValues {
    fn encoded_len(&self) -> usize {
        4 + self
            .0
            .iter()
            .map(|m| {
                4 + m
                    .iter()
                    .map(|(v, c)| v.0.encoded_len() + 2 + 8 * c.len())
                    .sum::<usize>()
            })
            .sum::<usize>()
    }

    fn write(&self, out: &mut [u8]) {
        let mut at = 0;
        let mut put = |bytes: &[u8], at: &mut usize| {
            out[*at..*at + bytes.len()].copy_from_slice(bytes);
            *at += bytes.len();
        };
        let n = u32::try_from(self.0.len()).expect("fewer than 2^32 distinct sets");
        put(&n.to_le_bytes(), &mut at);
        for m in &self.0 {
            let n = u32::try_from(m.len()).expect("fewer than 2^32 distinct values");
            put(&n.to_le_bytes(), &mut at);
            for (v, counts) in m {
                let len = v.0.encoded_len();
                let mut buf = vec![0u8; len];
                v.0.write(&mut buf);
                put(&buf, &mut at);
                let w = u16::try_from(counts.len()).expect("fewer than 65536 counts");
                put(&w.to_le_bytes(), &mut at);
                for c in counts {
                    put(&c.to_le_bytes(), &mut at);
                }
            }
        }
    }

    fn read(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let mut at = 0;
        let sets = u32::read(input)?.0 as usize;
        at += 4;
        let mut out = Vec::with_capacity(sets.min(1024));
        for _ in 0..sets {
            let n = u32::read(&input[at..])?.0 as usize;
            at += 4;
            let mut m = BTreeMap::new();
            for _ in 0..n {
                let (v, used) = Value::read(&input[at..])?;
                at += used;
                let w = usize::from(u16::read(&input[at..])?.0);
                at += 2;
                let mut counts = Counts::with_capacity(w);
                for _ in 0..w {
                    counts.push(i64::read(&input[at..])?.0);
                    at += 8;
                }
                m.insert(Ordered(v), counts);
            }
            out.push(m);
        }
        Ok((DistinctValues(out), at))
    }
}

/// The distinct values of a group aggregation's current key, in keyed map
/// state: user key `[set, value]`, value the counts (BIGINTs).
pub struct DistinctState<'a> {
    /// The state (keyed by the group key).
    pub state: &'a mut KeyedMapState<Key, Row, Row>,
    /// The current key.
    pub ctx: &'a KeyContext<Key>,
}

impl DistinctStore for DistinctState<'_> {
    fn update(&mut self, set: usize, value: &Value, width: usize, f: &mut dyn FnMut(&mut [i64])) {
        let user_key = Row::of([Value::Int(set as i32), value.clone()]);
        let mut zero = false;
        self.state.upsert_then(
            self.ctx,
            user_key.clone(),
            |old| {
                let mut counts: Counts = match &old {
                    Some(r) => r.values.iter().map(|v| v.as_i64().unwrap_or(0)).collect(),
                    None => SmallVec::from_elem(0, width),
                };
                counts.resize(width, 0);
                f(&mut counts);
                zero = counts.iter().all(|&c| c == 0);
                Row::new(counts.iter().map(|&c| Value::BigInt(c)).collect::<Values>())
            },
            |_| (),
        );
        if zero {
            self.state.remove(self.ctx, &user_key);
        }
    }

    fn extreme(&mut self, set: usize, call: usize, max: bool) -> Value {
        let mut best = None;
        for (user_key, counts) in self.state.entries(self.ctx) {
            let counted = counts.values.get(call).and_then(Value::as_i64) > Some(0);
            if counted
                && matches!(user_key.values.first(), Some(Value::Int(s)) if *s as usize == set)
            {
                best = keep_extreme(best, &user_key.values[1], max);
            }
        }
        best.unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_values_round_trip_through_the_wire_form() {
        let mut d = DistinctValues::new(2);
        d.update(0, &Value::BigInt(7), 2, &mut |c| c[0] += 1);
        d.update(0, &Value::Null, 2, &mut |c| c[1] += 3);
        d.update(
            1,
            &Value::Str("a long string of more than 24 bytes".into()),
            1,
            &mut |c| c[0] += 1,
        );
        let mut buf = vec![0u8; d.encoded_len()];
        d.write(&mut buf);
        let (back, used) = DistinctValues::read(&buf).unwrap();
        assert_eq!(used, buf.len());
        assert_eq!(back, d);
        for cut in 0..buf.len() {
            assert!(DistinctValues::read(&buf[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_value_is_forgotten_when_its_counts_reach_zero() {
        let mut d = DistinctValues::new(1);
        d.update(0, &Value::Int(1), 1, &mut |c| c[0] += 1);
        d.update(0, &Value::Int(1), 1, &mut |c| c[0] -= 1);
        assert!(d.0[0].is_empty());
    }
}
