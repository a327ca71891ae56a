//! [`KafkaSource`]: Flink's `KafkaSource` on weir — the worker side of one
//! source subtask, and its builder.
//!
//! The subtask's partitions are splits ([`crate::split`]) kept in union
//! list state, so a restore at any parallelism gives each partition to
//! exactly one subtask, at the offset after the last record the restored
//! checkpoint's barrier followed. Its [`fetcher`](crate::fetcher) thread
//! reads them; the worker takes the batches off the ring, deserializes and
//! emits, and records per split the next offset: that is what a barrier
//! snapshots. When a checkpoint completes, its offsets are committed to the
//! consumer group (`group.id`), for monitoring only, as Flink does.
//!
//! A record the deserializer rejects fails the job (not retried: the same
//! record would come again), naming topic, partition and offset; a
//! deserializer that skips bad records returns `Ok(None)`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::state::operator::list::UnionListState;
use weir_runtime::state::visitor::OperatorStates;
use weir_runtime::{Collector, Source, SourcePoll, SourceWakeup, SubtaskInfo};

use crate::client::{KafkaClientOptions, KafkaError};
use crate::fetcher::{self, Command, FetchEvent, FetcherHandle, PartitionOffset};
use crate::record::{Batch, KafkaRecord};
use crate::split::{owner, KafkaSplit, KAFKA_SPLITS_STATE};

/// Where a partition's reading starts when the checkpoint has no offset
/// for it (`scan.startup.mode`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StartingOffsets {
    /// `earliest-offset`.
    #[default]
    Earliest,
    /// `latest-offset`: only records written after the job started.
    Latest,
    /// `group-offsets`: the consumer group's committed offsets
    /// (`properties.auto.offset.reset` for partitions without one).
    GroupOffsets,
    /// `timestamp`: the first record at or after this time (ms).
    Timestamp(i64),
    /// `specific-offsets`: per `(topic, partition)`; earliest for others.
    Specific(BTreeMap<(String, i32), i64>),
}

/// Whether the source ends (`scan.bounded.mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BoundedMode {
    /// It never ends (the default).
    #[default]
    Unbounded,
    /// `latest-offset`: it ends at the offsets that were the latest when
    /// each partition was assigned (for tests and backfills).
    Latest,
}

/// Which topics a source reads.
#[derive(Clone, Debug)]
pub enum TopicSelection {
    /// `topic`: these topics.
    Names(Vec<String>),
    /// `topic-pattern`: every topic whose whole name matches.
    Pattern(regex::Regex),
}

impl TopicSelection {
    /// For messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Names(n) => format!("topic(s) {}", n.join(", ")),
            Self::Pattern(p) => format!("topics matching `{}`", p.as_str()),
        }
    }
}

/// Everything a source subtask's fetcher needs.
#[derive(Clone, Debug)]
pub struct SourceConfig {
    /// Client options.
    pub client: KafkaClientOptions,
    /// Topics.
    pub topics: TopicSelection,
    /// `group.id` (made up from the topics when not given).
    pub group_id: String,
    /// Starting offsets.
    pub starting: StartingOffsets,
    /// Bounded mode.
    pub bounded: BoundedMode,
    /// `scan.topic-partition-discovery.interval` (`None`: off).
    pub discovery: Option<Duration>,
}

/// A deserializer: a record to `Some(out)`, `None` to skip it, or an error
/// that fails the job.
pub type Deserializer<T> = Arc<dyn Fn(&KafkaRecord<'_>) -> Result<Option<T>, String> + Send + Sync>;

/// Builds a [`KafkaSource`] (Flink's `KafkaSource.builder()`).
pub struct KafkaSourceBuilder<T> {
    client: KafkaClientOptions,
    topics: Option<TopicSelection>,
    group_id: Option<String>,
    starting: StartingOffsets,
    bounded: BoundedMode,
    discovery: Option<Duration>,
    deserializer: Option<Deserializer<T>>,
    error: Option<KafkaError>,
}

impl<T: 'static> KafkaSourceBuilder<T> {
    /// `bootstrap.servers`.
    pub fn bootstrap_servers(mut self, servers: &str) -> Self {
        self.client.bootstrap_servers = servers.to_owned();
        self
    }

    /// Reads these topics.
    pub fn topics<S: AsRef<str>>(mut self, topics: impl IntoIterator<Item = S>) -> Self {
        self.topics = Some(TopicSelection::Names(
            topics.into_iter().map(|t| t.as_ref().to_owned()).collect(),
        ));
        self
    }

    /// Reads every topic whose whole name matches `pattern` (a regular
    /// expression).
    pub fn topic_pattern(mut self, pattern: &str) -> Self {
        match regex::Regex::new(&format!("^(?:{pattern})$")) {
            Ok(re) => self.topics = Some(TopicSelection::Pattern(re)),
            Err(e) => {
                self.error = Some(KafkaError::Config(format!(
                    "'topic-pattern' = '{pattern}' is not a regular expression: {e}"
                )))
            }
        }
        self
    }

    /// `group.id`: the consumer group offsets are committed to.
    pub fn group_id(mut self, group: &str) -> Self {
        self.group_id = Some(group.to_owned());
        self
    }

    /// Where partitions without a checkpointed offset start.
    pub fn starting_offsets(mut self, starting: StartingOffsets) -> Self {
        self.starting = starting;
        self
    }

    /// Whether and where the source ends.
    pub fn bounded(mut self, bounded: BoundedMode) -> Self {
        self.bounded = bounded;
        self
    }

    /// Looks for new partitions (and topics matching the pattern) every
    /// `interval`.
    pub fn partition_discovery(mut self, interval: Duration) -> Self {
        self.discovery = Some(interval);
        self
    }

    /// Any librdkafka property (`isolation.level`, `fetch.max.bytes`, ...).
    pub fn property(mut self, key: &str, value: &str) -> Self {
        self.client
            .properties
            .insert(key.to_owned(), value.to_owned());
        self
    }

    /// How records become `T`.
    pub fn deserializer(
        mut self,
        f: impl Fn(&KafkaRecord<'_>) -> Result<Option<T>, String> + Send + Sync + 'static,
    ) -> Self {
        self.deserializer = Some(Arc::new(f));
        self
    }

    /// Checks the options.
    pub fn build(self) -> Result<KafkaSource<T>, KafkaError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.client.check()?;
        let topics = self.topics.ok_or_else(|| {
            KafkaError::Config("one of 'topic' or 'topic-pattern' is required".into())
        })?;
        if let TopicSelection::Names(n) = &topics {
            if n.is_empty() || n.iter().any(|t| t.trim().is_empty()) {
                return Err(KafkaError::Config("'topic' names no topic".into()));
            }
        }
        if self.bounded != BoundedMode::Unbounded && self.discovery.is_some() {
            return Err(KafkaError::Config(
                "a bounded source ('scan.bounded.mode') does not discover partitions: unset \
                 'scan.topic-partition-discovery.interval'"
                    .into(),
            ));
        }
        let deserializer = self
            .deserializer
            .ok_or_else(|| KafkaError::Config("a deserializer (format) is required".into()))?;
        let group_id = self
            .group_id
            .unwrap_or_else(|| format!("weir-{}", topics.describe().replace(' ', "-")));
        Ok(KafkaSource {
            config: Arc::new(SourceConfig {
                client: self.client,
                topics,
                group_id,
                starting: self.starting,
                bounded: self.bounded,
                discovery: self.discovery,
            }),
            deserializer,
        })
    }
}

/// A Kafka source: make one subtask's reader with [`KafkaSource::reader`]
/// in the job's source factory.
pub struct KafkaSource<T> {
    config: Arc<SourceConfig>,
    deserializer: Deserializer<T>,
}

impl<T> Clone for KafkaSource<T> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            deserializer: self.deserializer.clone(),
        }
    }
}

impl<T: 'static> KafkaSource<T> {
    /// A builder.
    pub fn builder() -> KafkaSourceBuilder<T> {
        KafkaSourceBuilder {
            client: KafkaClientOptions::default(),
            topics: None,
            group_id: None,
            starting: StartingOffsets::default(),
            bounded: BoundedMode::default(),
            discovery: None,
            deserializer: None,
            error: None,
        }
    }

    /// The options.
    pub fn config(&self) -> &SourceConfig {
        &self.config
    }

    /// The reader of subtask `info`: `job.source("kafka", move |info|
    /// source.reader(info))`.
    pub fn reader(&self, info: &SubtaskInfo) -> KafkaReader<T> {
        KafkaReader {
            config: self.config.clone(),
            deserializer: self.deserializer.clone(),
            info: *info,
            state: UnionListState::new(KAFKA_SPLITS_STATE),
            restored: None,
            splits: Vec::new(),
            fetcher: None,
            batch: None,
            ended: false,
            failure: None,
            pending_commits: VecDeque::new(),
            snapshots: 0,
        }
    }
}

/// One subtask of a [`KafkaSource`].
pub struct KafkaReader<T> {
    config: Arc<SourceConfig>,
    deserializer: Deserializer<T>,
    info: SubtaskInfo,
    state: UnionListState<KafkaSplit>,
    /// The splits a restore gave this subtask.
    restored: Option<Vec<KafkaSplit>>,
    /// Assigned splits, numbered as the fetcher numbers them; `next` is
    /// the offset after the last emitted record.
    splits: Vec<KafkaSplit>,
    fetcher: Option<FetcherHandle>,
    /// The batch being emitted and the next record in it.
    batch: Option<(Batch, usize)>,
    ended: bool,
    failure: Option<(String, bool)>,
    /// Offsets of snapshots not yet known complete: `(order, offsets)`.
    pending_commits: VecDeque<(u64, Vec<PartitionOffset>)>,
    snapshots: u64,
}

impl<T: 'static> KafkaReader<T> {
    fn fail(&mut self, message: String, retryable: bool) {
        if self.failure.is_none() {
            self.failure = Some((message, retryable));
        }
    }

    /// Takes one event off the ring; false if there was none.
    fn take_event(&mut self) -> bool {
        let Some(f) = self.fetcher.as_mut() else {
            return false;
        };
        let Some(event) = f.events.pop() else {
            return false;
        };
        match event {
            FetchEvent::Assigned(split) => self.splits.push(split),
            FetchEvent::Ready => {}
            FetchEvent::Batch(b) => self.batch = Some((b, 0)),
            FetchEvent::Ended(i) => {
                if let Some(s) = self.splits.get_mut(i as usize) {
                    s.next = s.next.max(s.stop);
                }
            }
            FetchEvent::AllEnded => self.ended = true,
            FetchEvent::Failed { message, retryable } => self.fail(message, retryable),
        }
        true
    }
}

impl<T: 'static> Source for KafkaReader<T> {
    type Out = T;

    fn poll_next<C: Collector<T>>(&mut self, out: &mut C, budget: usize) -> SourcePoll {
        let mut emitted = 0;
        while emitted < budget && self.failure.is_none() {
            let Some((batch, at)) = self.batch.as_mut() else {
                if self.take_event() {
                    continue;
                }
                break;
            };
            while *at < batch.slots.len() && emitted < budget {
                if !out.is_available() {
                    return SourcePoll::Emitted(emitted);
                }
                let slot = &batch.slots[*at];
                let split = &mut self.splits[slot.split as usize];
                let record = batch.record(*at, &split.topic, split.partition);
                *at += 1;
                split.next = record.offset + 1;
                match (self.deserializer)(&record) {
                    Ok(Some(v)) => {
                        out.collect(v);
                        emitted += 1;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        let message = format!(
                            "topic `{}` partition {} offset {}: {e}",
                            record.topic, record.partition, record.offset
                        );
                        self.failure = Some((message, false));
                        return SourcePoll::Idle { until: None };
                    }
                }
            }
            if *at >= batch.slots.len() {
                self.batch = None;
            }
        }
        if emitted > 0 {
            return SourcePoll::Emitted(emitted);
        }
        if self.failure.is_none() && self.ended && self.batch.is_none() {
            // Drain what follows the end (nothing but late `Ended`s).
            while self.take_event() {}
            if self.batch.is_none() {
                return SourcePoll::Finished;
            }
        }
        SourcePoll::Idle { until: None }
    }

    fn snapshot_position(&mut self) -> Vec<u8> {
        // The splits are the position: stored in `visit_state`, which the
        // task calls right after this.
        self.state.update(self.splits.iter().cloned());
        self.snapshots += 1;
        let offsets = self
            .splits
            .iter()
            .map(|s| (s.topic.clone(), s.partition, s.next))
            .collect();
        self.pending_commits.push_back((self.snapshots, offsets));
        if self.pending_commits.len() > 16 {
            self.pending_commits.pop_front();
        }
        Vec::new()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<(), String> {
        if position.is_empty() {
            Ok(())
        } else {
            Err("a Kafka source keeps its position in its splits, not in a position".into())
        }
    }

    fn visit_state(&mut self, states: &mut OperatorStates<'_>) {
        states.union_list(&mut self.state);
    }

    fn initialize_restored_state(&mut self) -> Result<(), String> {
        let mine: Vec<KafkaSplit> = self
            .state
            .iter()
            .filter(|s| owner(&s.topic, s.partition, self.info.parallelism) == self.info.index)
            .collect();
        self.state.update(mine.iter().cloned());
        self.restored = Some(mine);
        Ok(())
    }

    fn open(&mut self, wakeup: SourceWakeup) {
        let mut handle =
            fetcher::spawn(self.config.clone(), self.info, self.restored.take(), wakeup);
        // Wait for the initial assignment, so that the first checkpoint
        // holds every split with its resolved starting offset. This runs
        // while the job is built, before any task runs.
        let deadline = std::time::Instant::now() + self.config.client.timeout() * 2;
        loop {
            match handle.events.pop() {
                Some(FetchEvent::Assigned(s)) => self.splits.push(s),
                Some(FetchEvent::Ready) => break,
                Some(FetchEvent::Ended(i)) => {
                    if let Some(s) = self.splits.get_mut(i as usize) {
                        s.next = s.next.max(s.stop);
                    }
                }
                Some(FetchEvent::Failed { message, retryable }) => {
                    self.fail(message, retryable);
                    break;
                }
                Some(FetchEvent::AllEnded) => self.ended = true,
                Some(FetchEvent::Batch(b)) => self.batch = Some((b, 0)),
                None => {
                    if std::time::Instant::now() > deadline {
                        self.fail(
                            format!(
                                "no answer from the Kafka cluster at {} within {:?}",
                                self.config.client.bootstrap_servers,
                                self.config.client.timeout() * 2
                            ),
                            true,
                        );
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        self.state.update(self.splits.iter().cloned());
        self.fetcher = Some(handle);
    }

    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) {
        // The newest snapshot taken is the completed checkpoint's at most;
        // commit the latest offsets known complete.
        if let Some((_, offsets)) = self.pending_commits.pop_back() {
            self.pending_commits.clear();
            if let Some(f) = &self.fetcher {
                let _ = f.commands.send(Command::Commit(offsets));
            }
        }
    }

    fn check(&mut self) -> Result<(), String> {
        match &self.failure {
            Some((m, _)) => Err(format!(
                "Kafka source ({}): {m}",
                self.config.topics.describe()
            )),
            None => Ok(()),
        }
    }

    fn is_retryable(&self, _error: &str) -> bool {
        self.failure.as_ref().is_none_or(|(_, r)| *r)
    }
}
