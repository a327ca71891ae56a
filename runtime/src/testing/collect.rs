//! A sink that collects what every subtask received, for tests of whole
//! jobs (Flink's `CollectSink` of its test utilities).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::core::subtask::SubtaskInfo;
use crate::operators::sink::Sink;

/// What every subtask of a [`CollectSink`] received, handed over when its
/// input ended: shared between the test and the sink subtasks (they run
/// on the workers' threads).
pub struct Collected<T> {
    parts: Mutex<Vec<(SubtaskInfo, Vec<T>)>>,
    finishes: AtomicUsize,
}

impl<T> Collected<T> {
    /// Nothing collected yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            parts: Mutex::new(Vec::new()),
            finishes: AtomicUsize::new(0),
        })
    }

    /// How many times a sink subtask finished (its input ended): after a
    /// restart, subtasks of the failed attempt did not.
    pub fn finishes(&self) -> usize {
        self.finishes.load(Ordering::SeqCst)
    }

    /// Each finished subtask with the records it received, in the order
    /// it received them (subtasks in the order they finished); what was
    /// taken is gone.
    pub fn take_parts(&self) -> Vec<(SubtaskInfo, Vec<T>)> {
        std::mem::take(&mut *self.parts.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every record of every finished subtask: each subtask's in the
    /// order it received them, subtasks in the order they finished.
    pub fn take_all(&self) -> Vec<T> {
        self.take_parts()
            .into_iter()
            .flat_map(|(_, records)| records)
            .collect()
    }

    /// Every record of every finished subtask, sorted: what to compare
    /// with a reference when the order across subtasks does not matter.
    pub fn take_sorted(&self) -> Vec<T>
    where
        T: Ord,
    {
        let mut all = self.take_all();
        all.sort();
        all
    }

    fn push(&self, info: SubtaskInfo, records: Vec<T>) {
        self.finishes.fetch_add(1, Ordering::SeqCst);
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((info, records));
    }
}

/// A sink that keeps every record of its subtask and hands them to a
/// [`Collected`] when its input ends. Its records are not checkpointed:
/// after a restart the new attempt's subtasks collect again from the
/// restored position, so with restarts collect what a checkpointed sink
/// would count, or use the file sink.
pub struct CollectSink<T> {
    info: SubtaskInfo,
    records: Vec<T>,
    into: Arc<Collected<T>>,
}

impl<T> CollectSink<T> {
    /// The sink of subtask `info`, collecting into `into`.
    pub fn new(info: &SubtaskInfo, into: &Arc<Collected<T>>) -> Self {
        Self {
            info: *info,
            records: Vec::new(),
            into: into.clone(),
        }
    }
}

impl<T: 'static> Sink for CollectSink<T> {
    type In = T;

    fn invoke(&mut self, record: T) {
        self.records.push(record);
    }

    fn finish(&mut self) {
        self.into.push(self.info, std::mem::take(&mut self.records));
    }
}

/// The sink factory of [`Stream::sink`](crate::api::stream::Stream::sink)
/// collecting into `into`:
/// `stream.sink("collect", collect_into(&collected))`.
pub fn collect_into<T: Send + 'static>(
    into: &Arc<Collected<T>>,
) -> impl Fn(&SubtaskInfo) -> CollectSink<T> + Send + Sync + 'static {
    let into = into.clone();
    move |info: &SubtaskInfo| CollectSink::new(info, &into)
}
