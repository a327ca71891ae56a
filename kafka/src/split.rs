//! A Kafka partition as a split of the source, as Flink's
//! `KafkaPartitionSplit`: topic, partition, the next offset to read and,
//! in bounded mode, the offset to stop at; and which subtask owns it.
//!
//! **Ownership.** Partition `p` of topic `t` belongs to subtask
//! `(start(t) + p) mod P` with `start(t)` a stable hash of the topic's name
//! (Flink's enumerator spreads partitions the same way), so every subtask
//! decides alone which partitions are its own, at a fresh start, when it
//! discovers new partitions and after a restore at any parallelism.
//!
//! **In checkpoints.** The splits are union list state
//! [`KAFKA_SPLITS_STATE`]: each subtask stores its own; a restore hands
//! every subtask all of them and each keeps those it owns under the new
//! parallelism. Offsets in the checkpoint are the source of truth; the
//! consumer group's committed offsets are only written for monitoring.

use weir_runtime::Wire;

/// Name of the union list state holding a Kafka source's splits.
pub const KAFKA_SPLITS_STATE: &str = "kafka-splits";

/// A split's stopping offset when it has none (unbounded).
pub const NO_STOP: i64 = i64::MAX;

/// One partition as a split (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Wire)]
pub struct KafkaSplit {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the next record to emit.
    pub next: i64,
    /// Stop before this offset ([`NO_STOP`]: never).
    pub stop: i64,
}

impl KafkaSplit {
    /// Whether every record before the stopping offset was emitted.
    pub fn is_finished(&self) -> bool {
        self.next >= self.stop
    }
}

/// FNV-1a of the topic's name: stable across processes and versions.
fn topic_hash(topic: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in topic.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The subtask (of `parallelism`) that reads partition `partition` of
/// `topic`.
pub fn owner(topic: &str, partition: i32, parallelism: usize) -> usize {
    let p = parallelism.max(1) as u64;
    ((topic_hash(topic) % p + partition.max(0) as u64) % p) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partitions_of_a_topic_spread_over_every_subtask() {
        for parallelism in 1..6 {
            let mut seen = vec![0; parallelism];
            for p in 0..(parallelism as i32 * 3) {
                seen[owner("orders", p, parallelism)] += 1;
            }
            assert!(seen.iter().all(|&n| n == 3), "{seen:?}");
        }
        assert_eq!(owner("orders", 5, 4), owner("orders", 5, 4));
    }
}
