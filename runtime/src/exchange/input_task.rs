//! The task at the head of a stage fed by an exchange: its input gate
//! drives the chain, and it snapshots once per aligned barrier.

use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Instant;

use crate::chain::control::{ChainControl, Collector};
use crate::chain::error::TaskError;
use crate::chain::task::{ChainHead, InputStep, Task, TaskPoll};
use crate::checkpoint::task::TaskCheckpointing;
use crate::core::snapshot::TaskSnapshot;
use crate::core::subtask::SubtaskInfo;
use crate::exchange::alignment::ChannelState;
use crate::exchange::decoder::{RecordDecoder, WireDecoder};
use crate::exchange::gate::{GateStatus, InputGate};
use crate::metrics::subtask::SubtaskMetrics;

/// Records and events an input task moves per poll before the worker looks
/// at its other tasks.
const INPUT_BUDGET: usize = 8192;

/// Drives one subtask of a stage fed by an exchange (or two: `D` decodes
/// the records of each channel).
pub struct InputTask<T, C, D = WireDecoder<T>> {
    name: String,
    gate: InputGate,
    head: ChainHead<C>,
    checkpointing: Option<Rc<TaskCheckpointing>>,
    /// Where its channel state goes in a snapshot: (uid, subtask).
    channel_state_of: (String, SubtaskInfo),
    /// Inline state stored beside non-empty channel state (a two-input
    /// gate's number of channels from each input, see
    /// [`INPUT_CHANNELS_STATE`]).
    channel_layout: Option<Vec<u8>>,
    /// An unaligned snapshot waiting for its channel state.
    held: Option<TaskSnapshot>,
    metrics: SubtaskMetrics,
    decoder: D,
    _record: PhantomData<fn(T)>,
}

impl<T, C> InputTask<T, C> {
    /// A task pumping `gate` into `out`, counting the records it reads
    /// into `metrics`; an unaligned snapshot stores the gate's channel
    /// state under operator `uid` for subtask `info`.
    pub fn new(
        name: String,
        gate: InputGate,
        out: C,
        checkpointing: Option<Rc<TaskCheckpointing>>,
        state_of: (String, SubtaskInfo),
        metrics: SubtaskMetrics,
    ) -> Self {
        InputTask::with_decoder(
            name,
            gate,
            out,
            checkpointing,
            state_of,
            metrics,
            WireDecoder::default(),
        )
    }
}

impl<T, C, D> InputTask<T, C, D> {
    /// [`new`](InputTask::new) with the records of each channel read by
    /// `decoder`.
    pub fn with_decoder(
        name: String,
        gate: InputGate,
        out: C,
        checkpointing: Option<Rc<TaskCheckpointing>>,
        (uid, info): (String, SubtaskInfo),
        metrics: SubtaskMetrics,
        decoder: D,
    ) -> Self {
        Self {
            name,
            gate,
            head: ChainHead::new(out, checkpointing.clone()),
            checkpointing,
            channel_state_of: (uid, info),
            channel_layout: None,
            held: None,
            metrics,
            decoder,
            _record: PhantomData,
        }
    }
}

impl<T, C, D> InputTask<T, C, D> {
    /// Stores `layout` as inline state [`INPUT_CHANNELS_STATE`] with every
    /// snapshot that holds channel state: what a restore at another
    /// parallelism needs to know which input each channel belongs to.
    pub fn with_channel_layout(mut self, layout: Vec<u8>) -> Self {
        self.channel_layout = Some(layout);
        self
    }
}

impl<T, C: ChainControl, D> InputTask<T, C, D> {
    /// Completes a held unaligned snapshot once the gate captured its
    /// channel state (or drops it if the gate gave the checkpoint up).
    fn complete_held(&mut self) -> bool {
        let Some(outcome) = self.gate.take_channel_state() else {
            return false;
        };
        let held_id = self.held.as_ref().map(TaskSnapshot::checkpoint_id);
        match outcome {
            Ok(state) if held_id == Some(state.checkpoint) => {
                tracing::trace!(
                    target: crate::core::log::CHECKPOINT,
                    checkpoint = state.checkpoint,
                    task = self.name.as_str(),
                    "channel state complete"
                );
                let mut snapshot = self.held.take().expect("held");
                add_channel_state(
                    &mut snapshot,
                    &self.channel_state_of,
                    self.channel_layout.as_deref(),
                    state,
                );
                self.submit(snapshot);
            }
            Err(id) if held_id == Some(id) => {
                tracing::trace!(
                    target: crate::core::log::CHECKPOINT,
                    checkpoint = id,
                    task = self.name.as_str(),
                    "unaligned snapshot abandoned"
                );
                self.held = None;
            }
            _ => {}
        }
        true
    }

    /// Hands `snapshot` to the writer, unless the chain failed (a sink's
    /// pre-commit): then it is dropped, its checkpoint never completes, and
    /// the task fails after this poll.
    fn submit(&self, snapshot: TaskSnapshot) {
        if self.head.failure().is_some() {
            return;
        }
        match &self.checkpointing {
            Some(cp) => cp.writer.submit(snapshot),
            None => panic!(
                "{} received checkpoint barrier {} but checkpointing is off",
                self.name,
                snapshot.checkpoint_id()
            ),
        }
    }
}

/// The name of input channel `channel`'s state in a snapshot.
pub fn channel_state_name(channel: usize) -> String {
    format!("input-{channel}")
}

/// The inline state, beside a two-input stage's channel state, saying how
/// many of its gate's channels come from each input (the sending stages'
/// parallelism, which a restore may change).
pub const INPUT_CHANNELS_STATE: &str = "input-channels";

/// Adds `state` (and `layout`, if any and the state is not empty) to the
/// input's operator in `snapshot`.
fn add_channel_state(
    snapshot: &mut TaskSnapshot,
    (uid, info): &(String, SubtaskInfo),
    layout: Option<&[u8]>,
    state: ChannelState,
) {
    if state.channels.iter().all(Vec::is_empty) {
        return;
    }
    let op = snapshot.operator(uid, info);
    if let Some(layout) = layout {
        op.inline
            .push((INPUT_CHANNELS_STATE.to_owned(), layout.to_vec()));
    }
    for (c, bytes) in state.channels.into_iter().enumerate() {
        if !bytes.is_empty() {
            op.channel.push((channel_state_name(c), bytes));
        }
    }
}

impl<T, C: Collector<D::Record>, D: RecordDecoder> Task for InputTask<T, C, D> {
    fn poll(&mut self, now: Instant) -> TaskPoll {
        let mut progressed = self.complete_held();
        let (gate, name, held) = (&mut self.gate, &self.name, &mut self.held);
        let decoder = &self.decoder;
        let mut ready: Option<TaskSnapshot> = None;
        let mut poll = self.head.poll(now, |out| {
            match gate.pump_decoded(decoder, out, INPUT_BUDGET) {
                GateStatus::Moved(n) => InputStep {
                    progressed: n > 0,
                    more: !gate.drained(),
                    deadline: gate.deadline(),
                    ..InputStep::default()
                },
                GateStatus::Barrier(b) => {
                    let mut snapshot =
                        TaskSnapshot::new(b.barrier, name.clone(), b.first_at, b.alignment);
                    snapshot.unaligned = b.unaligned;
                    out.snapshot(&mut snapshot);
                    snapshot.end_sync();
                    gate.barrier_done();
                    if b.unaligned {
                        tracing::trace!(
                            target: crate::core::log::CHECKPOINT,
                            checkpoint = b.barrier.id,
                            task = name.as_str(),
                            "unaligned snapshot taken"
                        );
                        *held = Some(snapshot);
                    } else {
                        ready = Some(snapshot);
                    }
                    InputStep {
                        progressed: true,
                        more: true,
                        ..InputStep::default()
                    }
                }
                GateStatus::DataEnded => InputStep {
                    progressed: true,
                    data_ended: true,
                    more: true,
                    ..InputStep::default()
                },
                GateStatus::Ended => InputStep {
                    progressed: true,
                    data_ended: true,
                    ended: true,
                    ..InputStep::default()
                },
            }
        });
        if let Some(snapshot) = ready {
            self.submit(snapshot);
        }
        progressed |= self.complete_held();
        poll.progressed |= progressed;
        self.gate.publish(&self.metrics);
        poll
    }

    fn failure(&self) -> Option<&TaskError> {
        self.head.failure()
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}
