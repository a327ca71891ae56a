//! The I/O thread of one Kafka source subtask: it owns the librdkafka
//! consumer, does every call that waits for a broker (metadata, offset
//! lookups, commits), and hands what it fetched to the worker as
//! [`FetchEvent`]s through weir's SPSC ring, ringing the worker's doorbell.
//!
//! It assigns partitions itself (no consumer-group rebalancing, as Flink's
//! `KafkaSource`): the splits restored from the checkpoint at their
//! offsets, then the partitions of the topics that this subtask owns
//! ([`crate::split::owner`]) and does not have yet — at a fresh start from
//! the starting offsets, later (discovery, or a partition missing from a
//! restored checkpoint) from the earliest offset. Every starting offset is
//! resolved to a number before the split is handed over, so a checkpoint
//! never holds "latest", which would mean another offset after a restore.
//!
//! When the ring is full the thread waits (the worker is behind: that is
//! backpressure; librdkafka then stops fetching once its own queue is full).

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError as RdError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use weir_runtime::{SourceWakeup, SubtaskInfo};

use crate::client::{client_error, KafkaError};
use crate::record::Batch;
use crate::source::{BoundedMode, SourceConfig, StartingOffsets, TopicSelection};
use crate::split::{owner, KafkaSplit, NO_STOP};

/// What the fetcher hands the worker, in order.
pub enum FetchEvent {
    /// A split is assigned; splits are numbered in the order they come.
    Assigned(KafkaSplit),
    /// Every split known at the start was handed over.
    Ready,
    /// Records of assigned splits.
    Batch(Batch),
    /// Split `.0` reached its stopping offset (bounded mode).
    Ended(u32),
    /// Every split ended and no more will come (bounded mode).
    AllEnded,
    /// The fetcher failed; nothing follows.
    Failed {
        /// What happened.
        message: String,
        /// Whether a restart may help (a broker that is down) or not (a
        /// bad option, a missing topic).
        retryable: bool,
    },
}

/// `(topic, partition, next offset)`.
pub type PartitionOffset = (String, i32, i64);

/// What the worker asks of its fetcher.
pub enum Command {
    /// Commit these offsets to the consumer group (a checkpoint
    /// completed; monitoring only).
    Commit(Vec<PartitionOffset>),
}

/// The worker's end of a fetcher thread.
pub struct FetcherHandle {
    /// Events from the thread.
    pub events: weir_net::Consumer<FetchEvent>,
    /// Commands to it.
    pub commands: mpsc::Sender<Command>,
    closed: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for FetcherHandle {
    fn drop(&mut self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Events the ring holds; with batches of up to [`BATCH_RECORDS`] records
/// that is at most a few MiB in flight per subtask.
const RING_CAPACITY: usize = 64;
/// Records per batch at most.
const BATCH_RECORDS: usize = 4096;
/// Bytes per batch, about (a batch is closed once it holds more).
const BATCH_BYTES: usize = 1 << 20;

/// Starts the fetcher of subtask `info` with the splits it restored
/// (`None`: a fresh start).
pub fn spawn(
    cfg: Arc<SourceConfig>,
    info: SubtaskInfo,
    restored: Option<Vec<KafkaSplit>>,
    wake: SourceWakeup,
) -> FetcherHandle {
    let (tx, rx) = weir_net::ring(RING_CAPACITY);
    let (ctx, crx) = mpsc::channel();
    let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = closed.clone();
    let thread = std::thread::Builder::new()
        .name(format!("weir-kafka-src-{}", info.index))
        .spawn(move || {
            let mut f = Fetcher {
                out: tx,
                wake,
                closed: flag,
            };
            if let Err(e) = f.run(&cfg, info, restored, crx) {
                let retryable = matches!(e, KafkaError::Client(_));
                f.send(FetchEvent::Failed {
                    message: e.to_string(),
                    retryable,
                });
            }
        })
        .expect("spawn the Kafka fetcher thread");
    FetcherHandle {
        events: rx,
        commands: ctx,
        closed,
        thread: Some(thread),
    }
}

struct Fetcher {
    out: weir_net::Producer<FetchEvent>,
    wake: SourceWakeup,
    closed: Arc<std::sync::atomic::AtomicBool>,
}

/// A split being read.
struct Live {
    split: KafkaSplit,
    ended: bool,
}

impl Fetcher {
    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Hands `event` over, waiting while the ring is full; false once the
    /// worker has gone.
    fn send(&mut self, mut event: FetchEvent) -> bool {
        loop {
            match self.out.push(event) {
                Ok(()) => {
                    self.wake.wake();
                    return true;
                }
                Err(back) => {
                    if self.is_closed() {
                        return false;
                    }
                    event = back;
                    self.wake.wake();
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }

    fn run(
        &mut self,
        cfg: &SourceConfig,
        info: SubtaskInfo,
        restored: Option<Vec<KafkaSplit>>,
        commands: mpsc::Receiver<Command>,
    ) -> Result<(), KafkaError> {
        let group = cfg.group_id.clone();
        let consumer: BaseConsumer = cfg
            .client
            .client_config(&[
                ("group.id", group.as_str()),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("enable.partition.eof", "true"),
                ("auto.offset.reset", "earliest"),
            ])
            .create()
            .map_err(|e| KafkaError::Config(format!("cannot create the consumer: {e}")))?;
        let timeout = cfg.client.timeout();
        let fresh = restored.is_none();
        let mut live: Vec<Live> = Vec::new();
        let mut index: HashMap<(String, i32), u32> = HashMap::new();
        let mut assign = TopicPartitionList::new();
        for split in restored.unwrap_or_default() {
            self.add(&mut live, &mut index, &mut assign, split);
        }
        let found = discover(&consumer, cfg, info, timeout)?;
        if found.is_empty() && live.is_empty() && cfg.discovery.is_none() {
            return Err(KafkaError::Config(format!(
                "no partition to read: {} (create the topic first, or set \
                 'scan.topic-partition-discovery.interval' to wait for it)",
                cfg.topics.describe()
            )));
        }
        for (topic, partition) in found {
            if index.contains_key(&(topic.clone(), partition)) {
                continue;
            }
            let mode = if fresh {
                &cfg.starting
            } else {
                &StartingOffsets::Earliest
            };
            let split = resolve(&consumer, cfg, &topic, partition, mode, timeout)?;
            self.add(&mut live, &mut index, &mut assign, split);
        }
        consumer
            .assign(&assign)
            .map_err(|e| client_error("assign partitions", e))?;
        if !self.send(FetchEvent::Ready) {
            return Ok(());
        }
        let mut next_discovery = cfg.discovery.map(|d| Instant::now() + d);
        let mut all_ended_sent = false;
        let mut batch = Batch::with_capacity(BATCH_RECORDS, BATCH_BYTES);
        while !self.is_closed() {
            while let Ok(cmd) = commands.try_recv() {
                match cmd {
                    Command::Commit(offsets) => commit(&consumer, &offsets),
                }
            }
            if let Some(at) = next_discovery {
                if Instant::now() >= at {
                    next_discovery = cfg.discovery.map(|d| Instant::now() + d);
                    let mut more = TopicPartitionList::new();
                    for (topic, partition) in discover(&consumer, cfg, info, timeout)? {
                        if index.contains_key(&(topic.clone(), partition)) {
                            continue;
                        }
                        let split = resolve(
                            &consumer,
                            cfg,
                            &topic,
                            partition,
                            &StartingOffsets::Earliest,
                            timeout,
                        )?;
                        tracing::info!(
                            topic,
                            partition,
                            offset = split.next,
                            "kafka: new partition"
                        );
                        self.add(&mut live, &mut index, &mut more, split);
                    }
                    if more.count() > 0 {
                        consumer
                            .incremental_assign(&more)
                            .map_err(|e| client_error("assign new partitions", e))?;
                    }
                }
            }
            let bounded = live.iter().all(|l| l.split.stop != NO_STOP) && cfg.discovery.is_none();
            if bounded && live.iter().all(|l| l.ended) {
                if !all_ended_sent {
                    all_ended_sent = true;
                    if !self.send(FetchEvent::AllEnded) {
                        return Ok(());
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            // Wait for the first record, then take what is there.
            let mut wait = Duration::from_millis(100);
            loop {
                match consumer.poll(wait) {
                    None => break,
                    Some(Ok(m)) => {
                        wait = Duration::ZERO;
                        let Some(&i) = index.get(&(m.topic().to_owned(), m.partition())) else {
                            continue;
                        };
                        let l = &mut live[i as usize];
                        if m.offset() >= l.split.stop || l.ended {
                            continue;
                        }
                        l.split.next = m.offset() + 1;
                        let headers = m.headers();
                        let hs = headers
                            .into_iter()
                            .flat_map(|h| h.iter())
                            .map(|h| (h.key, h.value));
                        batch.push(
                            i,
                            m.offset(),
                            m.timestamp().to_millis(),
                            m.key(),
                            m.payload(),
                            hs,
                        );
                        if l.split.next >= l.split.stop {
                            l.ended = true;
                            if !self.flush(&mut batch) || !self.send(FetchEvent::Ended(i)) {
                                return Ok(());
                            }
                        }
                        if batch.slots.len() >= BATCH_RECORDS || batch.bytes.len() >= BATCH_BYTES {
                            break;
                        }
                    }
                    Some(Err(RdError::PartitionEOF(p))) => {
                        wait = Duration::ZERO;
                        // The end of a partition: a bounded split whose
                        // stopping offset lies behind only transaction
                        // markers ends here.
                        if !self.flush(&mut batch) {
                            return Ok(());
                        }
                        for (i, l) in live.iter_mut().enumerate() {
                            if l.split.partition != p || l.ended || l.split.stop == NO_STOP {
                                continue;
                            }
                            let position = position(&consumer, &l.split.topic, p);
                            if position.is_some_and(|pos| pos >= l.split.stop) {
                                l.ended = true;
                                l.split.next = l.split.stop;
                                if !self.send(FetchEvent::Ended(i as u32)) {
                                    return Ok(());
                                }
                            }
                        }
                    }
                    Some(Err(e)) => {
                        if e.rdkafka_error_code().is_some_and(is_fatal) {
                            return Err(client_error("consume", e));
                        }
                        tracing::warn!(error = %e, "kafka source: client error (retrying)");
                        break;
                    }
                }
            }
            if !self.flush(&mut batch) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Hands over the batch if it holds records.
    fn flush(&mut self, batch: &mut Batch) -> bool {
        if batch.slots.is_empty() {
            return true;
        }
        let full = std::mem::replace(batch, Batch::with_capacity(BATCH_RECORDS, BATCH_BYTES));
        self.send(FetchEvent::Batch(full))
    }

    fn add(
        &mut self,
        live: &mut Vec<Live>,
        index: &mut HashMap<(String, i32), u32>,
        assign: &mut TopicPartitionList,
        split: KafkaSplit,
    ) {
        let i = live.len() as u32;
        index.insert((split.topic.clone(), split.partition), i);
        let ended = split.is_finished();
        if !ended {
            let _ = assign.add_partition_offset(
                &split.topic,
                split.partition,
                Offset::Offset(split.next),
            );
        }
        self.send(FetchEvent::Assigned(split.clone()));
        if ended {
            self.send(FetchEvent::Ended(i));
        }
        live.push(Live { split, ended });
    }
}

/// Errors after which the consumer cannot go on.
fn is_fatal(code: rdkafka::types::RDKafkaErrorCode) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        code,
        C::Fatal | C::TopicAuthorizationFailed | C::GroupAuthorizationFailed | C::OffsetOutOfRange
    )
}

/// The application position of a partition (the next offset it will get).
fn position(consumer: &BaseConsumer, topic: &str, partition: i32) -> Option<i64> {
    let tpl = consumer.position().ok()?;
    match tpl.find_partition(topic, partition)?.offset() {
        Offset::Offset(o) => Some(o),
        _ => None,
    }
}

fn commit(consumer: &BaseConsumer, offsets: &[PartitionOffset]) {
    let mut tpl = TopicPartitionList::new();
    for (t, p, o) in offsets {
        let _ = tpl.add_partition_offset(t, *p, Offset::Offset(*o));
    }
    if tpl.count() > 0 {
        if let Err(e) = consumer.commit(&tpl, CommitMode::Async) {
            tracing::debug!(error = %e, "kafka source: committing offsets to the group failed");
        }
    }
}

/// The partitions of the selected topics that subtask `info` owns.
fn discover(
    consumer: &BaseConsumer,
    cfg: &SourceConfig,
    info: SubtaskInfo,
    timeout: Duration,
) -> Result<Vec<(String, i32)>, KafkaError> {
    let mut out = Vec::new();
    let topics: Vec<(String, Vec<i32>)> = match &cfg.topics {
        TopicSelection::Names(names) => {
            let mut v = Vec::new();
            for name in names {
                let md = consumer
                    .fetch_metadata(Some(name), timeout)
                    .map_err(|e| client_error(format!("metadata of topic `{name}`"), e))?;
                for t in md.topics() {
                    if t.error().is_some() {
                        // Not there (yet): discovery may find it later.
                        continue;
                    }
                    v.push((
                        t.name().to_owned(),
                        t.partitions().iter().map(|p| p.id()).collect(),
                    ));
                }
            }
            v
        }
        TopicSelection::Pattern(re) => {
            let md = consumer
                .fetch_metadata(None, timeout)
                .map_err(|e| client_error("metadata of the cluster's topics", e))?;
            md.topics()
                .iter()
                .filter(|t| {
                    t.error().is_none() && !t.name().starts_with("__") && re.is_match(t.name())
                })
                .map(|t| {
                    (
                        t.name().to_owned(),
                        t.partitions().iter().map(|p| p.id()).collect(),
                    )
                })
                .collect()
        }
    };
    for (topic, partitions) in topics {
        for p in partitions {
            if owner(&topic, p, info.parallelism) == info.index {
                out.push((topic.clone(), p));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A new split of partition `partition` of `topic`, its starting offset
/// resolved to a number under `mode`, its stopping offset under the
/// source's bounded mode.
fn resolve(
    consumer: &BaseConsumer,
    cfg: &SourceConfig,
    topic: &str,
    partition: i32,
    mode: &StartingOffsets,
    timeout: Duration,
) -> Result<KafkaSplit, KafkaError> {
    let (low, high) = consumer
        .fetch_watermarks(topic, partition, timeout)
        .map_err(|e| client_error(format!("offsets of `{topic}` partition {partition}"), e))?;
    let next = match mode {
        StartingOffsets::Earliest => low,
        StartingOffsets::Latest => high,
        StartingOffsets::Timestamp(ts) => {
            let mut tpl = TopicPartitionList::new();
            let _ = tpl.add_partition_offset(topic, partition, Offset::Offset(*ts));
            let found = consumer.offsets_for_times(tpl, timeout).map_err(|e| {
                client_error(
                    format!("offset at time {ts} of `{topic}` partition {partition}"),
                    e,
                )
            })?;
            match found.find_partition(topic, partition).map(|e| e.offset()) {
                Some(Offset::Offset(o)) if o >= 0 => o,
                _ => high,
            }
        }
        StartingOffsets::GroupOffsets => {
            let mut tpl = TopicPartitionList::new();
            let _ = tpl.add_partition(topic, partition);
            let committed = consumer.committed_offsets(tpl, timeout).map_err(|e| {
                client_error(format!("committed offset of group `{}`", cfg.group_id), e)
            })?;
            match committed
                .find_partition(topic, partition)
                .map(|e| e.offset())
            {
                Some(Offset::Offset(o)) if o >= 0 => o,
                _ => match cfg
                    .client
                    .properties
                    .get("auto.offset.reset")
                    .map(String::as_str)
                {
                    Some("latest") => high,
                    Some("earliest") | Some("smallest") | Some("beginning") => low,
                    _ => {
                        return Err(KafkaError::Config(format!(
                        "group `{}` has no committed offset for `{topic}` partition {partition}: \
                             set 'properties.auto.offset.reset' to 'earliest' or 'latest'",
                        cfg.group_id
                    )))
                    }
                },
            }
        }
        StartingOffsets::Specific(map) => map
            .get(&(topic.to_owned(), partition))
            .copied()
            .unwrap_or(low),
    };
    let stop = match cfg.bounded {
        BoundedMode::Unbounded => NO_STOP,
        BoundedMode::Latest => high,
    };
    Ok(KafkaSplit {
        topic: topic.to_owned(),
        partition,
        next: next.clamp(low, high.max(low)),
        stop,
    })
}
