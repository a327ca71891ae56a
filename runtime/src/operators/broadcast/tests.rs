//! The broadcast operators: broadcast records reach the state, keyed
//! records read it.

use super::*;
use crate::chain::control::Collector;
use crate::chain::testing::VecTail;
use crate::core::subtask::SubtaskInfo;
use crate::exchange::decoder::CoInput;
use crate::state::key_context::KeyContext;

#[test]
fn broadcast_state_round_trips_through_its_checkpoint_bytes() {
    let mut s: BroadcastState<u64, (u32, i64)> = BroadcastState::default();
    for k in 0..100u64 {
        s.put(k, (k as u32 * 3, -(k as i64)));
    }
    s.remove(&7);
    s.put(3, (9, 9));
    let bytes = s.encode();
    let mut r: BroadcastState<u64, (u32, i64)> = BroadcastState::default();
    r.put(1_000, (1, 1)); // replaced by the restore
    r.decode_into(&bytes).unwrap();
    let mut got: Vec<_> = r.iter().collect();
    got.sort_unstable();
    let mut want: Vec<_> = s.iter().collect();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(r.len(), 99);
    assert!(!r.contains(&7) && r.get(&3) == Some((9, 9)));
    // A truncated copy is an error, not a partial state.
    assert!(r.decode_into(&bytes[..bytes.len() - 3]).is_err());
}

/// Scales keyed values by the broadcast factor of their key's class
/// (`key % 2`), 1 when there is none.
struct Scale;

impl KeyedBroadcastProcessFunction for Scale {
    type Key = u64;
    type In = (u64, u64);
    type Broadcast = (u64, u64);
    type Out = (u64, u64);
    type StateKey = u64;
    type StateValue = u64;

    fn process_element<C: Collector<(u64, u64)>>(
        &mut self,
        ctx: &KeyContext<u64>,
        (k, v): (u64, u64),
        state: &BroadcastState<u64, u64>,
        out: &mut C,
    ) {
        assert_eq!(*ctx.key(), k);
        out.collect((k, v * state.get(&(k % 2)).unwrap_or(1)));
    }

    fn process_broadcast_element<C: Collector<(u64, u64)>>(
        &mut self,
        (class, factor): (u64, u64),
        state: &mut BroadcastState<u64, u64>,
        _out: &mut C,
    ) {
        state.put(class, factor);
    }
}

#[test]
fn keyed_records_read_the_state_broadcast_records_wrote_before_them() {
    let info = SubtaskInfo {
        index: 0,
        parallelism: 1,
        worker: 0,
        max_parallelism: 128,
    };
    let mut op = KeyedBroadcastProcessOp::new(
        Scale,
        |r: &(u64, u64)| r.0,
        VecTail::default(),
        BroadcastState::default(),
        "scale",
        &info,
    );
    op.collect(CoInput::First((1, 5)));
    op.collect(CoInput::Second((1, 10)));
    op.collect(CoInput::First((1, 5)));
    op.collect(CoInput::First((2, 5)));
    op.collect(CoInput::Second((0, 3)));
    op.collect(CoInput::First((2, 5)));
    op.collect(CoInput::Second((1, 2)));
    op.collect(CoInput::First((3, 5)));
    assert_eq!(op.broadcast_state().len(), 2);
    let mut tail = VecTail::default();
    std::mem::swap(&mut tail, op.output_mut());
    assert_eq!(tail.items, vec![(1, 5), (1, 50), (2, 5), (2, 15), (3, 10)]);
}
