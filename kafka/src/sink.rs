//! [`KafkaSink`]: Flink's `KafkaSink` on weir — the worker side of one sink
//! subtask, and its builder.
//!
//! - `none`: records are produced as they come; nothing waits.
//! - `at-least-once`: the same, and each checkpoint's barrier flushes the
//!   producer (on the sink's I/O thread; the checkpoint is acknowledged
//!   only once every record before the barrier is acknowledged by the
//!   broker).
//! - `exactly-once`: the records between two barriers are kept (and stored
//!   in the checkpoint) and produced in one Kafka transaction when that
//!   checkpoint completes; see [`crate::committer`] for why and how a
//!   restore commits or skips the transactions it finds.
//!
//! The worker never waits for the broker: `produce` only enqueues (a full
//! client queue keeps records in the sink until it drains), and every
//! waiting call runs on the sink's I/O thread.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use weir_runtime::core::completion::{completion, Completion};
use weir_runtime::{rescaled_share, Sink, SubtaskInfo};

use crate::client::{KafkaClientOptions, KafkaError};
use crate::committer::{self, CommitterHandle, Job, TransactionalSetup};

/// `sink.delivery-guarantee`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// `none`.
    None,
    /// `at-least-once` (the default, as Flink's).
    #[default]
    AtLeastOnce,
    /// `exactly-once`.
    ExactlyOnce,
}

/// `sink.partitioner`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Partitioner {
    /// `default`: Kafka's (murmur2 of the key; records without a key are
    /// spread).
    #[default]
    Default,
    /// `fixed`: sink subtask `i` writes partition `i mod partitions`
    /// (Flink's `FlinkFixedPartitioner`).
    Fixed,
    /// `round-robin`: each record to the next partition.
    RoundRobin,
}

/// What a serializer wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Serialized {
    /// The record has a key (the key buffer).
    pub key: bool,
    /// The record has a value (the value buffer); `false` writes a
    /// tombstone.
    pub value: bool,
}

impl Serialized {
    /// A record with a value and, if `key`, a key.
    pub fn value(key: bool) -> Self {
        Self { key, value: true }
    }
}

/// A serializer: writes a record's key and value into the buffers and says
/// which it wrote.
pub type Serializer<T> =
    Arc<dyn Fn(&T, &mut Vec<u8>, &mut Vec<u8>) -> Result<Serialized, String> + Send + Sync>;

/// The first error the client's threads met, for the worker to fail with.
#[derive(Clone, Default)]
pub struct SharedErrors(Arc<Mutex<Option<String>>>);

impl SharedErrors {
    /// Keeps `e` unless an error is kept already.
    pub fn set(&self, e: String) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert(e);
    }

    /// Takes the kept error.
    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn peek(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Delivery reports of a non-transactional producer: the first failure
/// is kept.
pub struct DeliveryContext {
    errors: SharedErrors,
}

impl ClientContext for DeliveryContext {}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = result {
            self.errors.set(format!("a record was not delivered: {e}"));
        }
    }
}

/// Builds a [`KafkaSink`].
pub struct KafkaSinkBuilder<T> {
    client: KafkaClientOptions,
    topic: Option<String>,
    guarantee: DeliveryGuarantee,
    prefix: Option<String>,
    partitioner: Partitioner,
    serializer: Option<Serializer<T>>,
}

impl<T: 'static> KafkaSinkBuilder<T> {
    /// `bootstrap.servers`.
    pub fn bootstrap_servers(mut self, servers: &str) -> Self {
        self.client.bootstrap_servers = servers.to_owned();
        self
    }

    /// The topic written.
    pub fn topic(mut self, topic: &str) -> Self {
        self.topic = Some(topic.to_owned());
        self
    }

    /// `sink.delivery-guarantee`.
    pub fn delivery_guarantee(mut self, g: DeliveryGuarantee) -> Self {
        self.guarantee = g;
        self
    }

    /// `sink.transactional-id-prefix` (required for `exactly-once`; unique
    /// per job writing to the cluster).
    pub fn transactional_id_prefix(mut self, prefix: &str) -> Self {
        self.prefix = Some(prefix.to_owned());
        self
    }

    /// `sink.partitioner`.
    pub fn partitioner(mut self, p: Partitioner) -> Self {
        self.partitioner = p;
        self
    }

    /// Any librdkafka property.
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.client
            .properties
            .insert(key.to_owned(), value.to_owned());
        self
    }

    /// How a record becomes a key and a value.
    pub fn serializer(
        mut self,
        f: impl Fn(&T, &mut Vec<u8>, &mut Vec<u8>) -> Result<Serialized, String> + Send + Sync + 'static,
    ) -> Self {
        self.serializer = Some(Arc::new(f));
        self
    }

    /// Checks the options.
    pub fn build(self) -> Result<KafkaSink<T>, KafkaError> {
        self.client.check()?;
        let topic = self
            .topic
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| KafkaError::Config("'topic' is required for a Kafka sink".into()))?;
        if self.client.properties.contains_key("transactional.id") {
            return Err(KafkaError::Config(
                "set 'sink.transactional-id-prefix', not 'properties.transactional.id'".into(),
            ));
        }
        let prefix = match (self.guarantee, self.prefix) {
            (DeliveryGuarantee::ExactlyOnce, None) => return Err(KafkaError::Config(
                "'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'"
                    .into(),
            )),
            (_, p) => p.unwrap_or_default(),
        };
        let serializer = self
            .serializer
            .ok_or_else(|| KafkaError::Config("a serializer (format) is required".into()))?;
        Ok(KafkaSink {
            client: self.client,
            topic,
            guarantee: self.guarantee,
            prefix,
            partitioner: self.partitioner,
            serializer,
        })
    }
}

/// A Kafka sink: make one subtask's writer with [`KafkaSink::writer`] in
/// the job's sink factory.
pub struct KafkaSink<T> {
    client: KafkaClientOptions,
    topic: String,
    guarantee: DeliveryGuarantee,
    prefix: String,
    partitioner: Partitioner,
    serializer: Serializer<T>,
}

impl<T> Clone for KafkaSink<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            topic: self.topic.clone(),
            guarantee: self.guarantee,
            prefix: self.prefix.clone(),
            partitioner: self.partitioner,
            serializer: self.serializer.clone(),
        }
    }
}

impl<T: 'static> KafkaSink<T> {
    /// A builder.
    pub fn builder() -> KafkaSinkBuilder<T> {
        KafkaSinkBuilder {
            client: KafkaClientOptions::default(),
            topic: None,
            guarantee: DeliveryGuarantee::default(),
            prefix: None,
            partitioner: Partitioner::default(),
            serializer: None,
        }
    }

    /// The writer of subtask `info`.
    pub fn writer(&self, info: &SubtaskInfo) -> KafkaWriter<T> {
        KafkaWriter {
            sink: self.clone(),
            info: *info,
            errors: SharedErrors::default(),
            producer: None,
            committer: None,
            partitions: 0,
            next_partition: info.index,
            key: Vec::new(),
            value: Vec::new(),
            overflow: VecDeque::new(),
            epoch: Epoch::default(),
            pending: Vec::new(),
            precommit: None,
            failure: None,
        }
    }
}

/// Records of one checkpoint interval, kept for a transaction: `(partition
/// or -1, key or none, value or none)` encoded back to back.
#[derive(Clone, Debug, Default)]
pub struct Epoch {
    bytes: Vec<u8>,
    count: u32,
}

/// One record of an [`Epoch`].
pub struct EpochRecord<'a> {
    /// Fixed partition, if any.
    pub partition: Option<i32>,
    /// Key.
    pub key: Option<&'a [u8]>,
    /// Value (`None`: a tombstone).
    pub value: Option<&'a [u8]>,
}

impl Epoch {
    fn push(&mut self, partition: Option<i32>, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.bytes
            .extend_from_slice(&partition.unwrap_or(-1).to_le_bytes());
        for part in [key, value] {
            match part {
                Some(k) => {
                    self.bytes
                        .extend_from_slice(&(k.len() as u32).to_le_bytes());
                    self.bytes.extend_from_slice(k);
                }
                None => self.bytes.extend_from_slice(&u32::MAX.to_le_bytes()),
            }
        }
        self.count += 1;
    }

    /// The records, in order (`None` ends early on malformed bytes, which
    /// [`decode_pending`] has ruled out).
    pub fn records(&self) -> impl Iterator<Item = EpochRecord<'_>> {
        let mut rest: &[u8] = &self.bytes;
        std::iter::from_fn(move || {
            let mut take = |n: usize| -> Option<&[u8]> {
                (rest.len() >= n).then(|| {
                    let (a, b) = rest.split_at(n);
                    rest = b;
                    a
                })
            };
            let p = i32::from_le_bytes(take(4)?.try_into().ok()?);
            let kl = u32::from_le_bytes(take(4)?.try_into().ok()?);
            let key = if kl == u32::MAX {
                None
            } else {
                Some(take(kl as usize)?)
            };
            let vl = u32::from_le_bytes(take(4)?.try_into().ok()?);
            let value = if vl == u32::MAX {
                None
            } else {
                Some(take(vl as usize)?)
            };
            Some(EpochRecord {
                partition: (p >= 0).then_some(p),
                key,
                value,
            })
        })
    }
}

/// A transaction waiting for its checkpoint: the records subtask `origin`
/// received before checkpoint `checkpoint`'s barrier (and after the
/// previous one's).
#[derive(Clone, Debug)]
pub struct Pending {
    /// The subtask that received them.
    pub origin: usize,
    /// The checkpoint whose barrier closed them.
    pub checkpoint: u64,
    /// The records.
    pub epoch: Epoch,
}

impl Pending {
    /// The records.
    pub fn records(&self) -> impl Iterator<Item = EpochRecord<'_>> {
        self.epoch.records()
    }
}

/// Version byte of a sink state.
const STATE_VERSION: u8 = 1;

/// Encodes pending transactions: version, count (`u32`), then per
/// transaction origin (`u32`), checkpoint (`u64`), record count (`u32`),
/// byte length (`u64`) and the records' bytes, all little-endian.
pub fn encode_pending(pending: &[Pending]) -> Vec<u8> {
    let mut out = vec![STATE_VERSION];
    out.extend_from_slice(&(pending.len() as u32).to_le_bytes());
    for p in pending {
        out.extend_from_slice(&(p.origin as u32).to_le_bytes());
        out.extend_from_slice(&p.checkpoint.to_le_bytes());
        out.extend_from_slice(&p.epoch.count.to_le_bytes());
        out.extend_from_slice(&(p.epoch.bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&p.epoch.bytes);
    }
    out
}

/// Decodes [`encode_pending`]'s bytes, checking every record's framing.
pub fn decode_pending(bytes: &[u8]) -> Result<Vec<Pending>, String> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let bad = |what: &str| format!("Kafka sink state: {what}");
    if bytes[0] != STATE_VERSION {
        return Err(bad(&format!("unknown version {}", bytes[0])));
    }
    let mut rest = &bytes[1..];
    let mut take = |n: usize| -> Result<&[u8], String> {
        if rest.len() < n {
            return Err(bad("truncated"));
        }
        let (a, b) = rest.split_at(n);
        rest = b;
        Ok(a)
    };
    let n = u32::from_le_bytes(take(4)?.try_into().expect("4"));
    let mut out = Vec::new();
    for _ in 0..n {
        let origin = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
        let checkpoint = u64::from_le_bytes(take(8)?.try_into().expect("8"));
        let count = u32::from_le_bytes(take(4)?.try_into().expect("4"));
        let len = u64::from_le_bytes(take(8)?.try_into().expect("8"));
        let len = usize::try_from(len).map_err(|_| bad("length out of range"))?;
        let epoch = Epoch {
            bytes: take(len)?.to_vec(),
            count,
        };
        if epoch.records().count() != count as usize {
            return Err(bad(&format!(
                "transaction of checkpoint {checkpoint} does not hold its {count} records"
            )));
        }
        out.push(Pending {
            origin,
            checkpoint,
            epoch,
        });
    }
    if !rest.is_empty() {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

/// A record the client's full queue handed back: partition, key, value.
type Overflowed = (Option<i32>, Option<Vec<u8>>, Option<Vec<u8>>);

/// One subtask of a [`KafkaSink`].
pub struct KafkaWriter<T> {
    sink: KafkaSink<T>,
    info: SubtaskInfo,
    errors: SharedErrors,
    /// The producer (not `exactly-once`: that one lives on the I/O thread).
    producer: Option<Arc<ThreadedProducer<DeliveryContext>>>,
    committer: Option<CommitterHandle>,
    /// Partitions of the topic (for `fixed` and `round-robin`).
    partitions: i32,
    next_partition: usize,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Records the client's full queue handed back, sent first.
    overflow: VecDeque<Overflowed>,
    /// `exactly-once`: the records since the last barrier.
    epoch: Epoch,
    /// `exactly-once`: closed intervals whose checkpoint has not completed.
    pending: Vec<Pending>,
    precommit: Option<Completion>,
    failure: Option<String>,
}

impl<T: 'static> KafkaWriter<T> {
    fn exactly_once(&self) -> bool {
        self.sink.guarantee == DeliveryGuarantee::ExactlyOnce
    }

    /// Starts the client and the I/O thread; `recover` are restored
    /// pending transactions, `fence` the old subtasks whose ids to fence.
    fn start(&mut self, recover: Vec<Pending>, fence: Vec<usize>) -> Result<(), String> {
        let timeout = self.sink.client.timeout();
        if self.sink.partitioner != Partitioner::Default {
            self.partitions = partition_count(&self.sink.client, &self.sink.topic)?;
        }
        if self.exactly_once() {
            self.committer = Some(committer::spawn_transactional(
                TransactionalSetup {
                    client: self.sink.client.clone(),
                    topic: self.sink.topic.clone(),
                    prefix: self.sink.prefix.clone(),
                    subtask: self.info.index,
                    fence,
                    recover,
                },
                self.errors.clone(),
            ));
        } else {
            let producer: ThreadedProducer<DeliveryContext> = self
                .sink
                .client
                .client_config(&[
                    ("partitioner", "murmur2_random"),
                    ("linger.ms", "5"),
                    ("queue.buffering.max.messages", "1000000"),
                ])
                .create_with_context(DeliveryContext {
                    errors: self.errors.clone(),
                })
                .map_err(|e| format!("Kafka sink: cannot create the producer: {e}"))?;
            let producer = Arc::new(producer);
            self.committer = Some(committer::spawn_flusher(
                producer.clone(),
                self.info.index,
                self.errors.clone(),
                timeout,
            ));
            self.producer = Some(producer);
        }
        Ok(())
    }

    fn partition(&mut self) -> Option<i32> {
        match self.sink.partitioner {
            Partitioner::Default => None,
            Partitioner::Fixed => Some((self.info.index % self.partitions.max(1) as usize) as i32),
            Partitioner::RoundRobin => {
                let p = self.next_partition % self.partitions.max(1) as usize;
                self.next_partition = self.next_partition.wrapping_add(1);
                Some(p as i32)
            }
        }
    }

    /// Sends the overflow while the client takes it.
    fn drain_overflow(&mut self) {
        let Some(producer) = &self.producer else {
            return;
        };
        while let Some((p, k, v)) = self.overflow.pop_front() {
            let mut rec = BaseRecord::<[u8], [u8]>::to(&self.sink.topic);
            if let Some(v) = &v {
                rec = rec.payload(v);
            }
            if let Some(k) = &k {
                rec = rec.key(k);
            }
            if let Some(p) = p {
                rec = rec.partition(p);
            }
            match producer.send(rec) {
                Ok(()) => {}
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    self.overflow.push_front((p, k, v));
                    return;
                }
                Err((e, _)) => {
                    self.failure.get_or_insert(format!("produce: {e}"));
                    return;
                }
            }
        }
    }
}

/// The number of partitions of `topic`, asked once when a sink starts.
fn partition_count(client: &KafkaClientOptions, topic: &str) -> Result<i32, String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let c: BaseConsumer = client
        .client_config(&[])
        .create()
        .map_err(|e| format!("Kafka sink: {e}"))?;
    let md = c
        .fetch_metadata(Some(topic), client.timeout())
        .map_err(|e| format!("Kafka sink: metadata of topic `{topic}`: {e}"))?;
    let n = md
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .map_or(0, |t| t.partitions().len());
    if n == 0 {
        return Err(format!(
            "Kafka sink: topic `{topic}` has no partitions (does it exist?)"
        ));
    }
    Ok(n as i32)
}

impl<T: 'static> Sink for KafkaWriter<T> {
    type In = T;

    fn invoke(&mut self, record: T) {
        if self.failure.is_some() {
            return;
        }
        self.key.clear();
        self.value.clear();
        let written = match (self.sink.serializer)(&record, &mut self.key, &mut self.value) {
            Ok(w) => w,
            Err(e) => {
                self.failure = Some(format!("Kafka sink: a record cannot be serialized: {e}"));
                return;
            }
        };
        let partition = self.partition();
        let has_key = written.key;
        if self.exactly_once() {
            let key = has_key.then_some(&self.key[..]);
            let value = written.value.then_some(&self.value[..]);
            self.epoch.push(partition, key, value);
            return;
        }
        if !self.overflow.is_empty() {
            self.drain_overflow();
        }
        let Some(producer) = &self.producer else {
            return;
        };
        if self.overflow.is_empty() {
            let mut rec = BaseRecord::<[u8], [u8]>::to(&self.sink.topic);
            if written.value {
                rec = rec.payload(&self.value[..]);
            }
            if has_key {
                rec = rec.key(&self.key[..]);
            }
            if let Some(p) = partition {
                rec = rec.partition(p);
            }
            match producer.send(rec) {
                Ok(()) => return,
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {}
                Err((e, _)) => {
                    self.failure = Some(format!("Kafka sink: produce: {e}"));
                    return;
                }
            }
        }
        self.overflow.push_back((
            partition,
            has_key.then(|| self.key.clone()),
            written.value.then(|| self.value.clone()),
        ));
    }

    fn check(&mut self) -> Result<(), String> {
        if !self.overflow.is_empty() {
            self.drain_overflow();
        }
        if let Some(e) = self.failure.clone().or_else(|| self.errors.peek()) {
            return Err(format!("Kafka sink (topic `{}`): {e}", self.sink.topic));
        }
        Ok(())
    }

    fn initialize_state(&mut self, restored: Option<(u64, &[u8])>) -> Result<(), String> {
        let pending = match restored {
            Some((_, bytes)) => decode_pending(bytes)?,
            None => Vec::new(),
        };
        self.start(pending, vec![self.info.index])
    }

    fn initialize_rescaled_state(
        &mut self,
        _checkpoint_id: u64,
        states: &[&[u8]],
    ) -> Option<Result<(), String>> {
        let share: Vec<usize> = rescaled_share(&self.info, states.len()).collect();
        let mut pending = Vec::new();
        for &k in &share {
            match decode_pending(states[k]) {
                Ok(p) => pending.extend(p),
                Err(e) => return Some(Err(e)),
            }
        }
        let mut fence = share;
        fence.push(self.info.index);
        fence.sort_unstable();
        fence.dedup();
        Some(self.start(pending, fence))
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, String> {
        self.check()?;
        if self.committer.is_none() {
            // Never started: no checkpointing and no restore call.
            self.start(Vec::new(), vec![self.info.index])?;
        }
        if self.exactly_once() {
            let epoch = std::mem::take(&mut self.epoch);
            if epoch.count > 0 {
                self.pending.push(Pending {
                    origin: self.info.index,
                    checkpoint: checkpoint_id,
                    epoch,
                });
            }
            return Ok(encode_pending(&self.pending));
        }
        if self.sink.guarantee == DeliveryGuarantee::AtLeastOnce {
            // Hand the overflow to the client first: the flush covers it.
            while !self.overflow.is_empty() {
                self.drain_overflow();
                if self.failure.is_some() {
                    break;
                }
                if !self.overflow.is_empty() {
                    std::thread::yield_now();
                }
            }
            let (done, wait) = completion();
            if let Some(c) = &self.committer {
                c.submit(Job::Flush(done));
            }
            self.precommit = Some(wait);
        }
        Ok(Vec::new())
    }

    fn take_precommit(&mut self) -> Option<Completion> {
        self.precommit.take()
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), String> {
        if !self.exactly_once() {
            return Ok(());
        }
        let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.checkpoint <= checkpoint_id);
        self.pending = keep;
        if !done.is_empty() {
            if let Some(c) = &self.committer {
                c.submit(Job::Commit(done));
            }
        }
        Ok(())
    }
}

impl<T> Drop for KafkaWriter<T> {
    fn drop(&mut self) {
        // Let queued commits finish: a job that ends right after its last
        // checkpoint completed still commits it.
        if let Some(mut c) = self.committer.take() {
            c.close();
        }
        if let Some(p) = &self.producer {
            let _ = p.flush(self.sink.client.timeout());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_transactions_round_trip_and_bad_bytes_are_refused() {
        let mut e = Epoch::default();
        e.push(Some(2), Some(b"k"), Some(b"v"));
        e.push(None, None, None);
        let p = vec![Pending {
            origin: 3,
            checkpoint: 9,
            epoch: e,
        }];
        let bytes = encode_pending(&p);
        let back = decode_pending(&bytes).unwrap();
        assert_eq!((back[0].origin, back[0].checkpoint), (3, 9));
        let r: Vec<_> = back[0]
            .records()
            .map(|r| {
                (
                    r.partition,
                    r.key.map(<[u8]>::to_vec),
                    r.value.map(<[u8]>::to_vec),
                )
            })
            .collect();
        assert_eq!(
            r,
            vec![
                (Some(2), Some(b"k".to_vec()), Some(b"v".to_vec())),
                (None, None, None)
            ]
        );
        for cut in 1..bytes.len() {
            assert!(decode_pending(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut wrong = bytes.clone();
        wrong[0] = 7;
        assert!(decode_pending(&wrong).unwrap_err().contains("version"));
        assert!(decode_pending(&[]).unwrap().is_empty());
    }
}
