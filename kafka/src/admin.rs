//! Small blocking helpers over the client, for tools, tests and
//! benchmarks that prepare or inspect topics: create a topic, produce
//! records, read a topic to its end.

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

use crate::client::{client_error, KafkaClientOptions, KafkaError};

fn options(bootstrap: &str) -> KafkaClientOptions {
    KafkaClientOptions {
        bootstrap_servers: bootstrap.to_owned(),
        properties: Default::default(),
    }
}

/// Creates `topic` with `partitions` partitions (one replica); an existing
/// topic is an error.
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<(), KafkaError> {
    let admin: AdminClient<DefaultClientContext> = options(bootstrap)
        .client_config(&[])
        .create()
        .map_err(|e| client_error("admin client", e))?;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let results = futures_lite::future::block_on(admin.create_topics([&new], &opts))
        .map_err(|e| client_error(format!("create topic `{topic}`"), e))?;
    for r in results {
        if let Err((name, code)) = r {
            return Err(KafkaError::Client(format!("create topic `{name}`: {code}")));
        }
    }
    // Wait until the topic's metadata shows every partition.
    let c: BaseConsumer = options(bootstrap)
        .client_config(&[])
        .create()
        .map_err(|e| client_error("consumer", e))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(md) = c.fetch_metadata(Some(topic), Duration::from_secs(5)) {
            if md
                .topics()
                .iter()
                .any(|t| t.error().is_none() && t.partitions().len() == partitions as usize)
            {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(KafkaError::Client(format!(
                "topic `{topic}` did not appear"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Produces `records` (`(key, value)`) to `topic` and waits until all are
/// acknowledged.
pub fn produce<'a>(
    bootstrap: &str,
    topic: &str,
    records: impl IntoIterator<Item = (Option<&'a [u8]>, &'a [u8])>,
) -> Result<u64, KafkaError> {
    let p: BaseProducer = options(bootstrap)
        .client_config(&[
            ("linger.ms", "5"),
            ("queue.buffering.max.messages", "1000000"),
        ])
        .create()
        .map_err(|e| client_error("producer", e))?;
    let mut n = 0;
    for (k, v) in records {
        let mut rec = BaseRecord::<[u8], [u8]>::to(topic).payload(v);
        if let Some(k) = k {
            rec = rec.key(k);
        }
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((e, back)) => {
                    if e.rdkafka_error_code() != Some(rdkafka::types::RDKafkaErrorCode::QueueFull) {
                        return Err(client_error(format!("produce to `{topic}`"), e));
                    }
                    rec = back;
                    p.poll(Duration::from_millis(10));
                }
            }
        }
        n += 1;
        if n % 10_000 == 0 {
            p.poll(Duration::ZERO);
        }
    }
    p.flush(Duration::from_secs(60))
        .map_err(|e| client_error(format!("flush to `{topic}`"), e))?;
    Ok(n)
}

/// One record read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRecord {
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Key.
    pub key: Option<Vec<u8>>,
    /// Value (`None`: a tombstone).
    pub value: Option<Vec<u8>>,
}

/// Reads every partition of `topic` from the start to its end as it is
/// now, with `isolation.level` = `read_committed` if `committed`.
pub fn read_all(
    bootstrap: &str,
    topic: &str,
    committed: bool,
) -> Result<Vec<ReadRecord>, KafkaError> {
    let level = if committed {
        "read_committed"
    } else {
        "read_uncommitted"
    };
    let c: BaseConsumer = options(bootstrap)
        .client_config(&[
            ("group.id", "weir-read-all"),
            ("enable.auto.commit", "false"),
            ("enable.partition.eof", "false"),
            ("isolation.level", level),
        ])
        .create()
        .map_err(|e| client_error("consumer", e))?;
    let timeout = Duration::from_secs(30);
    let md = c
        .fetch_metadata(Some(topic), timeout)
        .map_err(|e| client_error(format!("metadata of `{topic}`"), e))?;
    let parts: Vec<i32> = md
        .topics()
        .iter()
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    let mut tpl = TopicPartitionList::new();
    let mut ends = Vec::new();
    for &p in &parts {
        let (low, high) = c
            .fetch_watermarks(topic, p, timeout)
            .map_err(|e| client_error("watermarks", e))?;
        if high > low {
            let _ = tpl.add_partition_offset(topic, p, Offset::Offset(low));
            ends.push((p, high));
        }
    }
    c.assign(&tpl).map_err(|e| client_error("assign", e))?;
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = |c: &BaseConsumer| -> bool {
        ends.iter().all(|&(p, high)| {
            c.position()
                .ok()
                .and_then(|t| t.find_partition(topic, p).map(|e| e.offset()))
                .is_some_and(|o| matches!(o, Offset::Offset(x) if x >= high))
        })
    };
    let mut idle = 0;
    while !ends.is_empty() && !done(&c) {
        match c.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                idle = 0;
                out.push(ReadRecord {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    value: m.payload().map(<[u8]>::to_vec),
                })
            }
            Some(Err(e)) => return Err(client_error(format!("read `{topic}`"), e)),
            None => {
                // Committed reads skip the transaction markers at the end,
                // so the position may stay below the high watermark.
                idle += 1;
                if committed && idle >= 10 {
                    break;
                }
            }
        }
        if Instant::now() > deadline {
            return Err(KafkaError::Client(format!(
                "reading `{topic}` took too long"
            )));
        }
    }
    Ok(out)
}
