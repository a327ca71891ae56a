//! The asynchronous part of a checkpoint: each worker's snapshot writer.
//!
//! Tasks hand their [`TaskSnapshot`]s (frozen views, taken synchronously at
//! the barrier) to the writer of their worker, a glommio task on the same
//! core. It serializes each keyed state per key group, appends one
//! checksummed block per non-empty key group to the worker's segment file of
//! that checkpoint (`chk-<id>/w<worker>.seg`, or in a savepoint's
//! directory, [`CheckpointStorage::snapshot_dir`]; through io_uring, O_DIRECT
//! where the device allows it), and once every task of the worker has
//! snapshotted checkpoint `n` it syncs and closes the file and acknowledges
//! each task's part to the coordinator. The worker loop keeps processing
//! records in between: the writer yields after every table block (a few
//! tens of microseconds of serialization, see `TABLE_BLOCK_CHUNKS`).

use std::cell::Cell;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use glommio::channels::local_channel::{self, LocalSender};
use weir_state::snapshot::{BlockKind, Extent, InlineState, SubtaskSnapshot};
use weir_state::KeyGroupRange;

use crate::checkpoint::coordinator::{CoordinatorMsg, TaskAck};
use crate::checkpoint::error::{CheckpointError, Result};
use crate::checkpoint::incremental::{write_table_delta, Chains};
use crate::checkpoint::segment_file::{into_io, IoMode, SegmentFile};
use crate::checkpoint::signals::CheckpointSignals;
use crate::checkpoint::stats::TaskCheckpointStats;
use crate::checkpoint::storage::CheckpointStorage;
pub(crate) use crate::checkpoint::table_block::TABLE_BLOCK_CHUNKS;
use crate::core::log::CHECKPOINT;
use crate::core::snapshot::{FrozenKeyedState, TaskSnapshot};

/// A task's handle on its worker's snapshot writer.
#[derive(Clone)]
pub struct SnapshotWriter {
    tx: Rc<LocalSender<TaskSnapshot>>,
    busy: Rc<Cell<usize>>,
}

impl SnapshotWriter {
    /// Queues a task's snapshot for writing.
    pub fn submit(&self, snapshot: TaskSnapshot) {
        self.busy.set(self.busy.get() + 1);
        if self.tx.try_send(snapshot).is_err() {
            panic!("the worker's snapshot writer has stopped");
        }
    }

    /// True while snapshots are queued or being written.
    #[inline]
    pub fn is_busy(&self) -> bool {
        self.busy.get() > 0
    }
}

/// Where and how a worker writes its snapshots.
pub struct WriterSetup {
    /// The worker's index.
    pub worker: usize,
    /// The checkpoint directory.
    pub storage: Arc<CheckpointStorage>,
    /// Tasks on this worker: each snapshots every checkpoint.
    pub tasks: usize,
    /// Direct, buffered, or direct with fallback.
    pub io_mode: IoMode,
    /// The coordinator's inbox.
    pub acks: Sender<CoordinatorMsg>,
    /// `execution.checkpointing.incremental`: write keyed tables as deltas
    /// where [`Chains::can_delta`] allows.
    pub incremental: bool,
    /// The attempt's signals: which checkpoint completed last.
    pub signals: Arc<CheckpointSignals>,
}

/// What [`write_job`] needs beyond the job: the writer's worker, whether
/// its checkpoint is incremental, the latest complete checkpoint, and the
/// tables' chains.
struct JobContext<'a> {
    worker: usize,
    incremental: bool,
    completed: u64,
    chains: &'a mut Chains,
}

struct OpenSegment {
    checkpoint: u64,
    file: SegmentFile,
    jobs: usize,
    acks: Vec<TaskAck>,
    /// Sinks' pre-committed files, synced after the segment.
    files_to_sync: Vec<PathBuf>,
    /// Sinks' pre-commits finished by their own threads.
    precommits: Vec<crate::core::completion::Completion>,
    failed: Option<CheckpointError>,
}

/// Spawns the writer of a worker on the current glommio executor.
pub fn spawn_writer(setup: WriterSetup) -> SnapshotWriter {
    let (tx, rx) = local_channel::new_unbounded::<TaskSnapshot>();
    let busy = Rc::new(Cell::new(0usize));
    let busy2 = busy.clone();
    glommio::spawn_local(async move {
        // One open segment per checkpoint: with the final checkpoint (or a
        // source that skipped an older trigger) a task may snapshot an
        // older checkpoint after another task on this worker snapshotted a
        // newer one.
        let mut open: BTreeMap<u64, OpenSegment> = BTreeMap::new();
        let mut finished_up_to = 0u64;
        // Serialization buffers, kept across checkpoints (see
        // `FrozenKeyedState::serialize_key_groups`).
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut chains = Chains::default();
        while let Some(job) = rx.recv().await {
            let id = job.barrier.id;
            tracing::trace!(
                target: CHECKPOINT,
                worker = setup.worker,
                checkpoint = id,
                task = job.task.as_str(),
                "writer: snapshot received"
            );
            if id <= finished_up_to {
                let _ = setup.acks.send(CoordinatorMsg::Decline {
                    checkpoint: id,
                    task: job.task.clone(),
                    reason: "snapshot arrived after a newer checkpoint's was written".into(),
                });
                busy2.set(busy2.get() - 1);
                continue;
            }
            let seg = match open.entry(id) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(slot) => {
                    let path: PathBuf = setup
                        .storage
                        .snapshot_dir(id)
                        .join(CheckpointStorage::segment_name(setup.worker));
                    match SegmentFile::create(&path, setup.io_mode).await {
                        Ok(file) => slot.insert(OpenSegment {
                            checkpoint: id,
                            file,
                            jobs: 0,
                            acks: Vec::new(),
                            files_to_sync: Vec::new(),
                            precommits: Vec::new(),
                            failed: None,
                        }),
                        Err(e) => {
                            let _ = setup.acks.send(CoordinatorMsg::Decline {
                                checkpoint: id,
                                task: job.task.clone(),
                                reason: e.to_string(),
                            });
                            busy2.set(busy2.get() - 1);
                            continue;
                        }
                    }
                }
            };
            seg.jobs += 1;
            seg.files_to_sync.extend(job.files_to_sync.iter().cloned());
            let mut job = job;
            seg.precommits.append(&mut job.precommits);
            if seg.failed.is_none() {
                // A savepoint is always full and self-contained.
                let savepoint = setup.storage.snapshot_dir(id) != setup.storage.checkpoint_dir(id);
                let mut cx = JobContext {
                    worker: setup.worker,
                    incremental: setup.incremental && !savepoint,
                    completed: setup.signals.completed_id(),
                    chains: &mut chains,
                };
                match write_job(&mut seg.file, &mut job, &mut cx, &mut parts).await {
                    Ok(ack) => seg.acks.push(ack),
                    Err(e) => seg.failed = Some(e),
                }
            }
            tracing::debug!(
                target: CHECKPOINT,
                worker = setup.worker,
                checkpoint = id,
                task = job.task.as_str(),
                written = seg.jobs,
                of = setup.tasks,
                "writer: snapshot written"
            );
            // Whatever it still holds (all of it if the segment failed)
            // goes before the segment's sync (see `write_job`).
            drop(job);
            if seg.jobs == setup.tasks {
                let seg = open.remove(&id).expect("open");
                finish_segment(seg, setup.worker, &setup.acks).await;
                tracing::debug!(
                    target: CHECKPOINT,
                    worker = setup.worker,
                    checkpoint = id,
                    "writer: segment finished"
                );
                // Every task of this worker has passed checkpoint `id`, so
                // none will snapshot an older one any more: those were
                // abandoned (the coordinator subsumes them).
                finished_up_to = id;
                let older: Vec<u64> = open.range(..id).map(|(&k, _)| k).collect();
                for k in older {
                    if let Some(old) = open.remove(&k) {
                        let _ = old.file.close().await;
                    }
                }
            }
            busy2.set(busy2.get() - 1);
        }
    })
    .detach();
    SnapshotWriter {
        tx: Rc::new(tx),
        busy,
    }
}

/// Syncs and closes a worker's segment of one checkpoint, syncs the sinks'
/// pre-committed files, then acknowledges every task's part (or declines
/// them all if anything failed).
///
/// The segment goes first: the state is then durable, and its persist time
/// does not include flushing the sinks' output, which competes for the
/// same device (both are synced before the acknowledgement).
async fn finish_segment(mut seg: OpenSegment, worker: usize, acks: &Sender<CoordinatorMsg>) {
    if seg.failed.is_none() {
        if let Err(e) = seg.file.sync().await {
            seg.failed = Some(e.into());
        }
    }
    let persisted = Instant::now();
    let direct = seg.file.is_direct();
    tracing::debug!(
        target: CHECKPOINT,
        worker,
        checkpoint = seg.checkpoint,
        "writer: segment synced"
    );
    if let Err(e) = seg.file.close().await {
        seg.failed.get_or_insert(e.into());
    }
    if seg.failed.is_none() {
        if let Err(e) = sync_files(&seg.files_to_sync).await {
            seg.failed = Some(e);
        }
    }
    for precommit in std::mem::take(&mut seg.precommits) {
        if let Err(e) = precommit.await {
            seg.failed.get_or_insert(CheckpointError::Precommit(e));
        }
    }
    match seg.failed {
        None => {
            for mut ack in seg.acks {
                ack.stats.persist_ms = persisted
                    .saturating_duration_since(ack.async_started)
                    .as_secs_f64()
                    * 1e3;
                ack.stats.async_ms = ack.async_started.elapsed().as_secs_f64() * 1e3;
                ack.stats.direct_io = direct;
                let _ = acks.send(CoordinatorMsg::Ack(ack));
            }
        }
        Some(e) => {
            let _ = acks.send(CoordinatorMsg::Decline {
                checkpoint: seg.checkpoint,
                task: format!("snapshot writer of checkpoint {}", seg.checkpoint),
                reason: e.to_string(),
            });
        }
    }
}

fn wall_ms_of(at: Instant) -> f64 {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3);
    now_ms - at.elapsed().as_secs_f64() * 1e3
}

/// Serialized bytes per part of a large keyed state: the writer writes one
/// part's blocks while it serializes the next, so the device and the core
/// work at the same time (see [`write_keyed_state`]).
const PART_BYTES: usize = 16 << 20;

/// Writes one task's snapshot; returns its acknowledgement (without the
/// final async duration, which includes the segment's sync). The sinks'
/// files are synced later, after the segment ([`finish_segment`]).
async fn write_job(
    file: &mut SegmentFile,
    job: &mut TaskSnapshot,
    cx: &mut JobContext<'_>,
    parts: &mut Vec<Vec<u8>>,
) -> Result<TaskAck> {
    let worker = cx.worker;
    let async_started = job.timing.sync_started + job.timing.sync;
    let mut bytes = 0u64;
    let mut inflight_bytes = 0u64;
    let mut entries = 0u64;
    let mut operators = Vec::with_capacity(job.operators.len());
    for op in &mut job.operators {
        let range = op.key_groups();
        let mut extents = Vec::new();
        // Each frozen view is dropped as soon as it is written: while a
        // view is alive, the live state's first write into each of its
        // arena chunks copies the chunk, and the rest of the checkpoint
        // (other states, the segment's sync) can take as long again.
        for (name, mut frozen) in std::mem::take(&mut op.keyed) {
            entries += frozen.len() as u64;
            let t0 = Instant::now();
            let id = job.barrier.id;
            let key = (op.uid.clone(), op.info.index as u32, name.clone());
            // Asked only when incremental: asking starts the table's
            // dirty tracking, which costs every later write a little.
            let tracking = if cx.incremental {
                frozen.table_tracking()
            } else {
                None
            };
            let delta =
                tracking.filter(|t| t.tracked && cx.chains.can_delta(&key, t, cx.completed));
            let written = if let Some(t) = delta {
                if parts.is_empty() {
                    parts.push(Vec::new());
                }
                let mut new = Vec::new();
                let written =
                    write_table_delta(file, &*frozen, (&name, range), &mut parts[0], id, &mut new)
                        .await?;
                extents.extend(cx.chains.record_delta(&key, id, &t, &new));
                written
            } else {
                let start = extents.len();
                let written = write_keyed_state(
                    file,
                    &mut *frozen,
                    (&name, op.info.max_parallelism, range),
                    PART_BYTES,
                    parts,
                    id,
                    &mut extents,
                )
                .await?;
                match tracking {
                    Some(t) => cx.chains.record_full(key, id, &t, &extents[start..]),
                    None => cx.chains.forget(&key),
                }
                written
            };
            bytes += written;
            tracing::debug!(
                target: CHECKPOINT,
                worker,
                checkpoint = job.barrier.id,
                task = job.task.as_str(),
                state = name.as_str(),
                entries = frozen.len(),
                bytes = written,
                delta = delta.is_some(),
                dirty_slots = tracking.map_or(0, |t| t.dirty_slots),
                slots = tracking.map_or(0, |t| t.capacity),
                elapsed = ?t0.elapsed(),
                "writer: state written"
            );
        }
        for (name, list) in &op.operator_lists {
            entries += list.len() as u64;
            bytes += crate::checkpoint::operator_list::write_operator_list(
                file,
                name,
                &**list,
                range,
                &mut extents,
            )
            .await?;
        }
        for (name, records) in &op.channel {
            let extent = file
                .append_block(BlockKind::ChannelState, range, name, records)
                .await?;
            bytes += extent.length;
            inflight_bytes += extent.length;
            extents.push(extent);
        }
        let inline_state: Vec<InlineState> = op
            .inline
            .iter()
            .map(|(name, b)| InlineState {
                name: name.clone(),
                bytes: b.clone(),
            })
            .collect();
        bytes += inline_state
            .iter()
            .map(|i| i.bytes.len() as u64)
            .sum::<u64>();
        operators.push((
            op.uid.clone(),
            op.info.parallelism as u32,
            SubtaskSnapshot {
                index: op.info.index as u32,
                key_groups: range,
                extents,
                inline_state,
            },
        ));
    }
    Ok(TaskAck {
        checkpoint: job.barrier.id,
        task: job.task.clone(),
        operators,
        async_started,
        stats: TaskCheckpointStats {
            task: job.task.clone(),
            worker,
            first_barrier_ms: wall_ms_of(job.timing.first_barrier_at),
            alignment_ms: job.timing.alignment.as_secs_f64() * 1e3,
            sync_ms: job.timing.sync.as_secs_f64() * 1e3,
            async_ms: 0.0,
            persist_ms: 0.0,
            bytes,
            inflight_bytes,
            entries,
            direct_io: false,
        },
    })
}

/// Writes a frozen keyed state part by part (about `part_bytes`
/// serialized at a time, split at arena chunks; the state is named by its
/// name, the job's max parallelism and the subtask's key groups): a keyed
/// state kept in one table (value, map, list, reducing, aggregating) as
/// table blocks of [`TABLE_BLOCK_CHUNKS`] arena chunks (its slots in table
/// order, see [`super::table_block`]), every other kind (window panes and
/// slices, timers) as blocks of one key group each, a key group having
/// one block per part that holds any of its entries. After appending a
/// part's blocks the writer lets the executor submit their writes before
/// it serializes the next part, so serialization and the device overlap. Returns the bytes written;
/// pushes the extents.
pub(crate) async fn write_keyed_state(
    file: &mut SegmentFile,
    frozen: &mut dyn FrozenKeyedState,
    (name, max_parallelism, range): (&str, u32, KeyGroupRange),
    part_bytes: usize,
    parts: &mut Vec<Vec<u8>>,
    checkpoint: u64,
    extents: &mut Vec<Extent>,
) -> Result<u64> {
    let chunks = frozen.chunk_count();
    let n = frozen
        .estimated_bytes()
        .div_ceil(part_bytes.max(1))
        .clamp(1, chunks.max(1));
    let mut bytes = 0;
    for part in 0..n {
        let part_chunks = chunks * part / n..chunks * (part + 1) / n;
        if frozen.is_table() {
            // Blocks of TABLE_BLOCK_CHUNKS chunks each, small enough to be
            // packed into the segment's reused I/O buffers (a buffer of
            // its own per block would be fresh memory each time, a page
            // fault per page). Entries of fixed size are written straight
            // into the I/O buffer; others are serialized first, then copied.
            if parts.is_empty() {
                parts.push(Vec::new());
            }
            for first in part_chunks.clone().step_by(TABLE_BLOCK_CHUNKS) {
                let chunks = first..(first + TABLE_BLOCK_CHUNKS).min(part_chunks.end);
                let scratch = &mut parts[0];
                let appended = match frozen.table_part_layout(chunks.clone(), scratch) {
                    Some(0) => {
                        frozen.release_chunks(chunks);
                        continue;
                    }
                    Some(len) => {
                        let prefix = &*scratch;
                        let appended = file
                            .append_block_filled(BlockKind::KeyedTable, range, name, len, |out| {
                                let (head, entries) = out.split_at_mut(prefix.len());
                                head.copy_from_slice(prefix);
                                frozen.write_table_entries(chunks.clone(), entries);
                            })
                            .await;
                        frozen.release_chunks(chunks);
                        appended
                    }
                    None => {
                        // Serialized: the block's bytes are in `scratch`.
                        frozen.serialize_table_part(chunks.clone(), scratch);
                        frozen.release_chunks(chunks);
                        if scratch.is_empty() {
                            continue;
                        }
                        file.append_block(BlockKind::KeyedTable, range, name, scratch)
                            .await
                    }
                };
                let extent = appended?;
                bytes += extent.length;
                extents.push(extent);
                crate::core::failpoint::hit("snapshot-write", checkpoint);
                // An append returns at once while the segment's I/O buffers
                // have room: step aside after each block, so the worker's
                // records wait for one block's serialization at most.
                futures_lite::future::yield_now().await;
            }
        } else {
            frozen.serialize_part(max_parallelism, range, part_chunks.clone(), parts);
            // Serialized into `parts`: the chunks may be written in place
            // while the blocks are appended.
            frozen.release_chunks(part_chunks);
            for (kg, payload) in (range.start()..range.end()).zip(parts.iter()) {
                if payload.is_empty() {
                    continue;
                }
                let extent = file
                    .append_block(
                        BlockKind::KeyedState,
                        KeyGroupRange::new(kg, kg + 1),
                        name,
                        payload,
                    )
                    .await?;
                bytes += extent.length;
                extents.push(extent);
                crate::core::failpoint::hit("snapshot-write", checkpoint);
            }
        }
        // The blocks' writes are tasks of their own: give them (and the
        // worker's processing) a turn, so the reactor submits them before
        // the next part is serialized.
        glommio::timer::sleep(std::time::Duration::from_micros(1)).await;
    }
    Ok(bytes)
}

/// Writes one task's snapshot into a new segment file at `path` as a
/// worker's writer does (the same blocks, through the same code), on a
/// glommio executor of its own on the calling thread, and returns once the
/// segment is synced and closed: each operator's part `(uid, parallelism,
/// subtask snapshot)`, what a manifest lists. Full, never incremental; the
/// sinks' files are not synced. For the operator test harnesses of the
/// `testing` feature, which snapshot an operator without a running job.
#[cfg(feature = "testing")]
pub fn write_task_snapshot_blocking(
    path: &std::path::Path,
    snapshot: &mut TaskSnapshot,
) -> Result<Vec<(String, u32, SubtaskSnapshot)>> {
    let executor = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .name("weir-harness-writer")
        .io_memory(1 << 20)
        .make()
        .map_err(|e| CheckpointError::io("start a glommio executor for", path, into_io(e)))?;
    executor.run(async {
        let mut file = SegmentFile::create(path, IoMode::Buffered).await?;
        let mut chains = Chains::default();
        let mut cx = JobContext {
            worker: 0,
            incremental: false,
            completed: 0,
            chains: &mut chains,
        };
        let ack = write_job(&mut file, snapshot, &mut cx, &mut Vec::new()).await?;
        file.close().await?;
        Ok(ack.operators)
    })
}

/// Syncs sinks' pre-committed files (opened by path: the sink has closed
/// them).
async fn sync_files(paths: &[PathBuf]) -> Result<()> {
    for path in paths {
        let failed = |op: &'static str| {
            move |e: glommio::GlommioError<()>| CheckpointError::io(op, path, into_io(e))
        };
        let f = glommio::io::BufferedFile::open(path)
            .await
            .map_err(failed("open for fsync"))?;
        f.fdatasync().await.map_err(failed("fsync"))?;
        f.close().await.map_err(failed("close after fsync"))?;
    }
    Ok(())
}
