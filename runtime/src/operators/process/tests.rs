//! The non-keyed process operator: its operator state through a
//! snapshot, and its end of input run once across restores.

use std::time::{Duration, Instant};

use weir_net::CheckpointBarrier;

use super::*;
use crate::chain::testing::VecTail;
use crate::core::snapshot::Redistribution;
use crate::core::snapshot::TaskSnapshot;
use crate::state::operator::list::OperatorListState;

/// Emits the sum of every 3 records; keeps the records of an unfinished
/// group in `pending` (a field) and copies them to list state at each
/// checkpoint, as Flink's buffering sink example does.
struct Triples {
    pending: Vec<u64>,
    state: OperatorListState<u64>,
    ended: usize,
}

impl ProcessFunction for Triples {
    type In = u64;
    type Out = u64;

    fn process<C: Collector<u64>>(&mut self, _ctx: &ProcessContext, value: u64, out: &mut C) {
        self.pending.push(value);
        if self.pending.len() == 3 {
            out.collect(self.pending.drain(..).sum());
        }
    }

    fn on_end_of_input<C: Collector<u64>>(&mut self, out: &mut C) {
        self.ended += 1;
        if !self.pending.is_empty() {
            out.collect(self.pending.drain(..).sum());
        }
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.list(&mut self.state);
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) {
        self.state.update(self.pending.iter().copied());
    }
}

fn info() -> SubtaskInfo {
    SubtaskInfo {
        index: 1,
        parallelism: 2,
        worker: 0,
        max_parallelism: 128,
    }
}

/// The operator runs the function per record, freezes its states after
/// `snapshot_state` at a barrier (what it had then, not what came later),
/// records its end of input in the snapshot and runs `on_end_of_input`
/// once, whatever `end_input` calls follow.
#[test]
fn a_snapshot_freezes_the_state_after_snapshot_state() {
    let func = Triples {
        pending: Vec::new(),
        state: OperatorListState::new("pending"),
        ended: 0,
    };
    let mut op = ProcessOp::new(func, VecTail::default(), "triples", &info(), false);
    for v in 1..=5 {
        op.collect(v);
    }
    let barrier = CheckpointBarrier::checkpoint(7, 0);
    let mut snap = TaskSnapshot::new(barrier, "t".into(), Instant::now(), Duration::ZERO);
    op.snapshot(&mut snap);
    op.collect(6);
    op.collect(7);
    assert_eq!(op.output().items, vec![6, 15]);
    {
        let part = &snap.operators[0];
        assert_eq!(part.uid, "triples");
        assert_eq!(part.info.index, 1);
        assert_eq!(part.operator_lists.len(), 1);
        let (name, frozen) = &part.operator_lists[0];
        assert_eq!(name, "pending");
        assert_eq!(
            frozen.len(),
            2,
            "records 4 and 5 were pending at the barrier"
        );
        assert_eq!(frozen.redistribution(), Redistribution::EvenSplit);
        assert!(part.inline.is_empty(), "the input had not ended");
    }
    op.end_input();
    op.end_input();
    assert_eq!(op.function().ended, 1);
    assert_eq!(op.output().items, vec![6, 15, 7]);
    let mut snap = TaskSnapshot::new(
        CheckpointBarrier::checkpoint(8, 0),
        "t".into(),
        Instant::now(),
        Duration::ZERO,
    );
    op.snapshot(&mut snap);
    assert_eq!(
        snap.operators[0].inline,
        vec![(PROCESS_INPUT_ENDED_STATE.to_owned(), vec![1])]
    );
}

/// Advancing watermarks pass through and show in the context.
#[test]
fn the_context_has_the_watermark_and_subtask() {
    struct Stamp;
    impl ProcessFunction for Stamp {
        type In = u64;
        type Out = (u64, i64, usize, usize);
        fn process<C: Collector<Self::Out>>(&mut self, ctx: &ProcessContext, v: u64, out: &mut C) {
            out.collect((
                v,
                ctx.current_watermark(),
                ctx.subtask_index(),
                ctx.parallelism(),
            ));
        }
    }
    let mut op = ProcessOp::new(Stamp, VecTail::default(), "stamp", &info(), false);
    op.collect(1);
    op.on_watermark(40);
    op.on_watermark(30);
    op.collect(2);
    assert_eq!(op.output().items, vec![(1, i64::MIN, 1, 2), (2, 40, 1, 2)]);
    assert_eq!(op.output().watermarks, vec![40]);
}
