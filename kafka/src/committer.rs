//! The I/O thread of one Kafka sink subtask: every call that waits for the
//! broker — flushes, and for `exactly-once` the transactions — runs here,
//! never on the worker.
//!
//! # Exactly-once: transactions with a write-ahead copy
//!
//! Flink's `KafkaSink` opens a transaction per checkpoint, flushes it at the
//! barrier and, after a crash, *resumes* a pre-committed transaction of the
//! dead producer to commit it (by setting the Java client's producer id and
//! epoch through reflection). librdkafka cannot resume another producer's
//! transaction: starting a producer with the same transactional id aborts
//! it. So weir keeps the records of a checkpoint's transaction in that
//! checkpoint (the sink's state, written with the rest of the snapshot)
//! and produces them in a Kafka transaction once the checkpoint completes.
//! Each transaction also commits a *marker*: the checkpoint id as the
//! offset of partition 0 of the output topic in the consumer group
//! `<transactional-id-prefix>-<subtask>-marker`, atomically with the
//! records (`send_offsets_to_transaction`). After a restore the sink first
//! fences its transactional ids (`init_transactions` aborts whatever a dead
//! producer left open, or waits for a commit the coordinator already
//! decided), then reads the marker: a restored transaction whose id is not
//! above the marker is committed already and skipped; any other is produced
//! and committed again. So every record reaches a `read_committed` reader
//! exactly once, whatever moment the process died at.
//!
//! The cost: the records of each checkpoint interval are written to the
//! checkpoint as well, and reach the broker only when the checkpoint
//! completes (which is also when Flink's become visible to
//! `read_committed` readers).

use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use weir_runtime::core::completion::Completer;

use crate::client::{client_error, KafkaClientOptions, KafkaError};
use crate::sink::{DeliveryContext, Pending, SharedErrors};

/// What the worker asks of its committer.
pub enum Job {
    /// Flush what was produced (at-least-once pre-commit), then complete.
    Flush(Completer),
    /// Commit these pending transactions (exactly-once).
    Commit(Vec<Pending>),
}

/// What an exactly-once committer needs.
pub struct TransactionalSetup {
    /// Client options.
    pub client: KafkaClientOptions,
    /// The topic.
    pub topic: String,
    /// `sink.transactional-id-prefix`.
    pub prefix: String,
    /// This subtask.
    pub subtask: usize,
    /// Old subtasks whose transactional ids this subtask fences after a
    /// restore (its share of a rescale, itself included).
    pub fence: Vec<usize>,
    /// Restored pending transactions to finish first.
    pub recover: Vec<Pending>,
}

/// The transactional id of subtask `s`.
pub fn transactional_id(prefix: &str, s: usize) -> String {
    format!("{prefix}-{s}")
}

/// The consumer group holding subtask `s`'s commit marker.
pub fn marker_group(prefix: &str, s: usize) -> String {
    format!("{prefix}-{s}-marker")
}

/// The worker's end of a committer thread.
pub struct CommitterHandle {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl CommitterHandle {
    /// Queues `job`.
    pub fn submit(&self, job: Job) {
        if let Some(j) = &self.jobs {
            let _ = j.send(job);
        }
    }

    /// Waits until every queued job is done.
    pub fn close(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for CommitterHandle {
    fn drop(&mut self) {
        self.close();
    }
}

/// A committer that only flushes (`none`, `at-least-once`).
pub fn spawn_flusher(
    producer: Arc<ThreadedProducer<DeliveryContext>>,
    subtask: usize,
    errors: SharedErrors,
    timeout: Duration,
) -> CommitterHandle {
    let (tx, rx) = mpsc::channel::<Job>();
    let thread = std::thread::Builder::new()
        .name(format!("weir-kafka-sink-{subtask}"))
        .spawn(move || {
            for job in rx {
                if let Job::Flush(done) = job {
                    let r = producer
                        .flush(timeout)
                        .map_err(|e| format!("flush: {e}"))
                        .and_then(|()| errors.take().map_or(Ok(()), Err));
                    done.complete(r);
                }
            }
        })
        .expect("spawn the Kafka sink thread");
    CommitterHandle {
        jobs: Some(tx),
        thread: Some(thread),
    }
}

/// A transactional committer: fences and recovers first, then commits what
/// the worker hands it.
pub fn spawn_transactional(setup: TransactionalSetup, errors: SharedErrors) -> CommitterHandle {
    let (tx, rx) = mpsc::channel::<Job>();
    let thread = std::thread::Builder::new()
        .name(format!("weir-kafka-txn-{}", setup.subtask))
        .spawn(move || {
            let mut c = match Transactional::start(&setup) {
                Ok(c) => c,
                Err(e) => {
                    errors.set(e.to_string());
                    return;
                }
            };
            let recover = std::mem::take(&mut c.recover);
            if let Err(e) = c.recover(recover) {
                errors.set(e.to_string());
                return;
            }
            for job in rx {
                if let Job::Commit(pending) = job {
                    if let Err(e) = c.commit(pending) {
                        errors.set(e.to_string());
                        return;
                    }
                }
            }
        })
        .expect("spawn the Kafka transaction thread");
    CommitterHandle {
        jobs: Some(tx),
        thread: Some(thread),
    }
}

struct Transactional {
    client: KafkaClientOptions,
    topic: String,
    prefix: String,
    producer: BaseProducer,
    timeout: Duration,
    recover: Vec<Pending>,
    /// Marker consumers by origin subtask, made once.
    markers: std::collections::HashMap<usize, BaseConsumer>,
}

impl Transactional {
    fn producer(client: &KafkaClientOptions, id: &str) -> Result<BaseProducer, KafkaError> {
        client
            .client_config(&[
                ("transactional.id", id),
                ("enable.idempotence", "true"),
                ("partitioner", "murmur2_random"),
                ("linger.ms", "5"),
                ("queue.buffering.max.messages", "1000000"),
            ])
            .create()
            .map_err(|e| KafkaError::Config(format!("cannot create the producer: {e}")))
    }

    fn start(setup: &TransactionalSetup) -> Result<Self, KafkaError> {
        let timeout = setup.client.timeout();
        // Fence the old subtasks' ids this one takes over: aborts what they
        // left open (or lets a decided commit finish).
        for &k in &setup.fence {
            if k == setup.subtask {
                continue;
            }
            let id = transactional_id(&setup.prefix, k);
            let p = Self::producer(&setup.client, &id)?;
            p.init_transactions(timeout)
                .map_err(|e| client_error(format!("fence transactional id `{id}`"), e))?;
        }
        let id = transactional_id(&setup.prefix, setup.subtask);
        let producer = Self::producer(&setup.client, &id)?;
        producer
            .init_transactions(timeout)
            .map_err(|e| client_error(format!("init transactions of `{id}`"), e))?;
        Ok(Self {
            client: setup.client.clone(),
            topic: setup.topic.clone(),
            prefix: setup.prefix.clone(),
            producer,
            timeout,
            recover: setup.recover.clone(),
            markers: std::collections::HashMap::new(),
        })
    }

    /// The consumer of subtask `origin`'s marker group (made once).
    fn marker_consumer(&mut self, origin: usize) -> Result<&BaseConsumer, KafkaError> {
        if !self.markers.contains_key(&origin) {
            let group = marker_group(&self.prefix, origin);
            let c: BaseConsumer = self
                .client
                .client_config(&[
                    ("group.id", group.as_str()),
                    ("enable.auto.commit", "false"),
                    ("isolation.level", "read_committed"),
                ])
                .create()
                .map_err(|e| {
                    KafkaError::Config(format!("cannot create the marker consumer: {e}"))
                })?;
            self.markers.insert(origin, c);
        }
        Ok(&self.markers[&origin])
    }

    /// The id of `origin`'s last committed transaction (0: none).
    fn marker(&mut self, origin: usize) -> Result<u64, KafkaError> {
        let (topic, timeout) = (self.topic.clone(), self.timeout);
        let group = marker_group(&self.prefix, origin);
        let c = self.marker_consumer(origin)?;
        let mut tpl = TopicPartitionList::new();
        let _ = tpl.add_partition(&topic, 0);
        let got = c
            .committed_offsets(tpl, timeout)
            .map_err(|e| client_error(format!("read commit marker of `{group}`"), e))?;
        Ok(
            match got.find_partition(&self.topic, 0).map(|e| e.offset()) {
                Some(Offset::Offset(o)) if o > 0 => o as u64,
                _ => 0,
            },
        )
    }

    fn recover(&mut self, pending: Vec<Pending>) -> Result<(), KafkaError> {
        let mut redo = Vec::new();
        let mut markers = std::collections::HashMap::new();
        for p in pending {
            let m = match markers.get(&p.origin) {
                Some(&m) => m,
                None => {
                    let m = self.marker(p.origin)?;
                    markers.insert(p.origin, m);
                    m
                }
            };
            if p.checkpoint > m {
                redo.push(p);
            } else {
                tracing::info!(
                    subtask = p.origin,
                    checkpoint = p.checkpoint,
                    "kafka sink: restored transaction was committed before the restart"
                );
            }
        }
        if !redo.is_empty() {
            tracing::info!(
                transactions = redo.len(),
                "kafka sink: committing restored transactions"
            );
        }
        self.commit(redo)
    }

    /// Commits `pending`, one transaction per origin subtask.
    fn commit(&mut self, mut pending: Vec<Pending>) -> Result<(), KafkaError> {
        pending.sort_by_key(|p| (p.origin, p.checkpoint));
        let mut i = 0;
        while i < pending.len() {
            let origin = pending[i].origin;
            let j = pending[i..]
                .iter()
                .position(|p| p.origin != origin)
                .map_or(pending.len(), |k| i + k);
            self.transaction(origin, &pending[i..j])?;
            i = j;
        }
        Ok(())
    }

    fn transaction(&mut self, origin: usize, pending: &[Pending]) -> Result<(), KafkaError> {
        let last = pending.last().map_or(0, |p| p.checkpoint);
        let what = format!("transaction of checkpoint {last} (subtask {origin})");
        self.producer
            .begin_transaction()
            .map_err(|e| client_error(format!("begin {what}"), e))?;
        for p in pending {
            for r in p.records() {
                let mut rec = BaseRecord::<[u8], [u8]>::to(&self.topic);
                if let Some(v) = r.value {
                    rec = rec.payload(v);
                }
                if let Some(k) = r.key {
                    rec = rec.key(k);
                }
                if let Some(part) = r.partition {
                    rec = rec.partition(part);
                }
                loop {
                    match self.producer.send(rec) {
                        Ok(()) => break,
                        Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                            rec = back;
                            self.producer.poll(Duration::from_millis(5));
                        }
                        Err((e, _)) => return Err(client_error(format!("produce in {what}"), e)),
                    }
                }
            }
        }
        let mut offsets = TopicPartitionList::new();
        let _ = offsets.add_partition_offset(&self.topic, 0, Offset::Offset(last as i64));
        let meta = self
            .marker_consumer(origin)?
            .group_metadata()
            .ok_or_else(|| KafkaError::Client("no group metadata for the commit marker".into()))?;
        self.producer
            .send_offsets_to_transaction(&offsets, &meta, self.timeout)
            .map_err(|e| client_error(format!("commit marker of {what}"), e))?;
        self.producer
            .commit_transaction(self.timeout)
            .map_err(|e| client_error(format!("commit {what}"), e))?;
        Ok(())
    }
}
