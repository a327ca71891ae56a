//! The channel state (in-flight records of an unaligned checkpoint) of a
//! stage's input restored at another parallelism than its checkpoint's:
//! which of every old subtask's captured records a new subtask replays,
//! and on which of its input channels.
//!
//! Each exchange into the stage says how its records follow a rescale
//! ([`InputRoute`]), as Flink's `SubtaskStateMapper`s do for the
//! in-flight data of each partitioner: a key_by exchange's by key group, a
//! round-robin exchange's whole old channels spread over the new subtasks,
//! a broadcast exchange's replicated from the same old subtask whose
//! broadcast state copy the new subtask restores. A two-input stage's gate
//! holds the first exchange's channels then the second's; its input task
//! records where the first ends ([`two_input_channels`]), since the
//! sending stages' parallelism fixes it.

use std::sync::Arc;

use weir_net::{DecodeError, Wire};
use weir_state::{key_group_for_hash, KeyHash};

use crate::build::demand::{needed, TimestampDemand};
use crate::checkpoint::error::RestoreError;
use crate::checkpoint::restore::RestoreScope;
use crate::exchange::input_task::INPUT_CHANNELS_STATE;
use crate::exchange::stamped::Stamped;

/// Splits records in their wire form (channel state) into `(key hash,
/// encoded length)` per record: how a keyed exchange's channel state is
/// redistributed by key group when the receiving stage rescales.
pub type KeyRoute =
    Arc<dyn Fn(&[u8], &mut Vec<(u64, usize)>) -> Result<(), DecodeError> + Send + Sync>;

/// The [`KeyRoute`] of a key_by exchange of `T` records keyed by `key_fn`.
pub(crate) fn key_route<T, K, KF>(key_fn: KF) -> KeyRoute
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K + Send + Sync + 'static,
{
    Arc::new(move |mut bytes: &[u8], out: &mut Vec<(u64, usize)>| {
        while !bytes.is_empty() {
            let (record, used) = T::read(bytes)?;
            out.push((key_fn(&record).key_hash(), used));
            bytes = &bytes[used..];
        }
        Ok(())
    })
}

/// The [`KeyRoute`] of a key_by exchange of `T` records keyed by `key_fn`,
/// whose records carry their timestamps if `stamped` is read downstream
/// (known once the job is built, when the route is used).
pub(crate) fn key_route_of<T, K, KF>(key_fn: KF, stamped: Option<TimestampDemand>) -> KeyRoute
where
    T: Wire,
    K: KeyHash,
    KF: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    let bare = key_route::<T, K, _>(key_fn.clone());
    let with_stamps = key_route::<Stamped<T>, K, _>(move |s: &Stamped<T>| key_fn(&s.value));
    Arc::new(move |bytes: &[u8], out: &mut Vec<(u64, usize)>| {
        if needed(&stamped) {
            with_stamps(bytes, out)
        } else {
            bare(bytes, out)
        }
    })
}

/// How the in-flight records of one exchange into a stage are
/// redistributed when the stage rescales.
#[derive(Clone)]
pub enum InputRoute {
    /// A key_by exchange: each record goes to the new owner of its key
    /// group (the only subtask that holds its key's state).
    Keyed(KeyRoute),
    /// A round-robin exchange: any subtask may take any record, so each
    /// old channel goes whole, in its order, to one new subtask.
    Rebalanced,
    /// A broadcast exchange: new subtask `i` replays old subtask `i mod
    /// P_old`'s records, the subtask whose broadcast state copy it
    /// restores, so its state and its replay are those of one old subtask
    /// and every new subtask applies each broadcast record once.
    Broadcast,
}

/// How the in-flight records of a gate's channels are redistributed: one
/// exchange's (every channel of the gate), or a two-input stage's two.
#[derive(Clone)]
pub enum GateRoutes {
    /// A single-input stage.
    One(InputRoute),
    /// A two-input stage: its gate's first `split` channels are the first
    /// exchange's, the others the second's.
    Two {
        /// The first exchange's route.
        first: InputRoute,
        /// The second exchange's route.
        second: InputRoute,
        /// The number of the gate's channels from the first exchange.
        split: usize,
    },
}

impl GateRoutes {
    /// The number of the gate's channels from the first exchange (every
    /// channel of a single-input gate).
    fn split(&self, channels: usize) -> usize {
        match self {
            GateRoutes::One(_) => channels,
            GateRoutes::Two { split, .. } => *split,
        }
    }
}

/// The inline state a two-input stage's input task stores beside its
/// channel state: its number of input channels from each exchange (first,
/// second), each a little-endian `u32`.
pub(crate) fn two_input_channels(first: usize, second: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(8);
    bytes.extend_from_slice(&(first as u32).to_le_bytes());
    bytes.extend_from_slice(&(second as u32).to_le_bytes());
    bytes
}

/// Reads [`two_input_channels`].
fn read_two_input_channels(bytes: &[u8]) -> Option<(usize, usize)> {
    let first = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?);
    let second = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
    (bytes.len() == 8).then_some((first as usize, second as usize))
}

/// The channels of one side of a gate: the first of them and how many.
#[derive(Clone, Copy)]
struct Side {
    start: usize,
    len: usize,
}

impl Side {
    /// The side's channel for the records of its old channel `c`: `c mod
    /// len` (per old sender, so one sender's records stay in order).
    fn channel(self, c: usize) -> usize {
        self.start + c % self.len.max(1)
    }
}

/// The channel state of this subtask (of a gate with `channels` inputs)
/// restored
/// at another parallelism than its checkpoint's: every old subtask's
/// captured records, each old channel's taken by `routes` (its side's
/// [`InputRoute`]) and queued, in their order, on the new channel of the
/// same side `old channel mod side's channels` (all of them processed
/// before what the channel delivers; event time waits for every input).
/// Each record is replayed exactly once by the subtask its route names.
/// A two-input stage's checkpoint without [`two_input_channels`] (written
/// before they were recorded) refuses: [`RestoreError::ChannelStateRescale`].
pub(crate) fn restore_rescaled_channel_state(
    scope: &RestoreScope<'_>,
    channels: usize,
    routes: &GateRoutes,
) -> Result<Vec<Vec<u8>>, RestoreError> {
    let mut out = vec![Vec::new(); channels];
    let all = scope.channel_state_of_every_subtask()?;
    if all.iter().all(|(_, _, records)| records.is_empty()) {
        return Ok(out);
    }
    let info = scope.subtask_info();
    let was = scope.old_parallelism().unwrap_or(0);
    let old_splits = match routes {
        GateRoutes::One(_) => Vec::new(),
        GateRoutes::Two { .. } => scope
            .inline_of_every_subtask(INPUT_CHANNELS_STATE)
            .unwrap_or_default(),
    };
    let first_channels = routes.split(channels).min(channels);
    let new_sides = [
        Side {
            start: 0,
            len: first_channels,
        },
        Side {
            start: first_channels,
            len: channels - first_channels,
        },
    ];
    let mine = scope.key_groups();
    let mut split = Vec::new();
    for (old, extent, records) in &all {
        let old = *old as usize;
        let c = extent
            .state
            .strip_prefix("input-")
            .and_then(|c| c.parse::<usize>().ok())
            .ok_or_else(|| {
                scope.malformed(extent, 0, "not the channel state of an input".into())
            })?;
        // The side of old channel `c`, the channel within that side, and
        // the side's number of old channels.
        let (route, side, c, old_len) = match routes {
            GateRoutes::One(route) => (route, new_sides[0], c, channels),
            GateRoutes::Two { first, second, .. } => {
                let recorded = old_splits.get(old).copied().unwrap_or_default();
                let Some((n1, n2)) = read_two_input_channels(recorded) else {
                    return Err(RestoreError::ChannelStateRescale {
                        uid: scope.uid().to_owned(),
                        checkpoint: scope.checkpoint_id(),
                        was,
                        now: info.parallelism,
                    });
                };
                if c < n1 {
                    (first, new_sides[0], c, n1)
                } else if c < n1 + n2 {
                    (second, new_sides[1], c - n1, n2)
                } else {
                    let what = format!("input {c} of a gate with inputs {n1} + {n2}");
                    return Err(scope.malformed(extent, 0, what));
                }
            }
        };
        let into = &mut out[side.channel(c)];
        match route {
            InputRoute::Keyed(route) => {
                split.clear();
                route(records, &mut split).map_err(|e| {
                    let at = split.iter().map(|(_, len)| len).sum();
                    scope.malformed(extent, at, format!("a record does not decode: {e}"))
                })?;
                let mut at = 0;
                for &(hash, len) in &split {
                    let group = key_group_for_hash(hash, info.max_parallelism);
                    if mine.contains(group) {
                        into.extend_from_slice(&records[at..at + len]);
                    }
                    at += len;
                }
            }
            InputRoute::Rebalanced => {
                if (old * old_len + c) % info.parallelism.max(1) == info.index {
                    into.extend_from_slice(records);
                }
            }
            InputRoute::Broadcast => {
                if info.index % (was as usize).max(1) == old {
                    into.extend_from_slice(records);
                }
            }
        }
    }
    Ok(out)
}
