//! What a Kafka source hands its deserializer ([`KafkaRecord`], a borrowed
//! view of one record) and the [`Batch`]es its fetcher thread fills: the
//! records of one poll copied into one byte arena, so that crossing to the
//! worker costs one allocation per batch, not one per record.

use std::ops::Range;

/// One Kafka record, borrowed from a batch.
#[derive(Clone, Copy, Debug)]
pub struct KafkaRecord<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The partition.
    pub partition: i32,
    /// The record's offset in its partition.
    pub offset: i64,
    /// The record's timestamp (ms since the epoch), if it has one.
    pub timestamp: Option<i64>,
    /// The key, if any.
    pub key: Option<&'a [u8]>,
    /// The value (payload), if any (`None` is a tombstone).
    pub value: Option<&'a [u8]>,
    headers: &'a [u8],
}

impl<'a> KafkaRecord<'a> {
    /// A record made by hand (tests, a deserializer's own tests).
    pub fn new(
        topic: &'a str,
        partition: i32,
        offset: i64,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
    ) -> Self {
        Self {
            topic,
            partition,
            offset,
            timestamp: None,
            key,
            value,
            headers: &[],
        }
    }

    /// The record's headers, in order: name and value (`None`: a header
    /// without a value).
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        HeaderIter { rest: self.headers }
    }
}

/// Headers are stored as: name length (`u32` LE), name, value length (`u32`
/// LE, `u32::MAX` for none), value.
struct HeaderIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a str, Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.len() < 4 {
            return None;
        }
        let take = |rest: &mut &'a [u8], n: usize| -> &'a [u8] {
            let (a, b) = rest.split_at(n.min(rest.len()));
            *rest = b;
            a
        };
        let n = u32::from_le_bytes(take(&mut self.rest, 4).try_into().ok()?) as usize;
        let name = std::str::from_utf8(take(&mut self.rest, n)).unwrap_or("");
        let m = u32::from_le_bytes(take(&mut self.rest, 4).try_into().ok()?);
        let value = (m != u32::MAX).then(|| take(&mut self.rest, m as usize));
        Some((name, value))
    }
}

/// Where one record of a batch lies in its arena.
#[derive(Clone, Debug)]
pub struct Slot {
    /// Index of the record's split in the fetcher's assignment.
    pub split: u32,
    /// Offset in the partition.
    pub offset: i64,
    /// Timestamp, `i64::MIN` if none.
    pub timestamp: i64,
    /// Key bytes (`None`: no key).
    pub key: Option<Range<u32>>,
    /// Value bytes (`None`: no value).
    pub value: Option<Range<u32>>,
    /// Encoded headers.
    pub headers: Range<u32>,
}

/// Records of one or more partitions, copied out of the client into one
/// arena.
#[derive(Debug, Default)]
pub struct Batch {
    /// The records, in the order the client delivered them.
    pub slots: Vec<Slot>,
    /// Their bytes.
    pub bytes: Vec<u8>,
}

impl Batch {
    /// An empty batch with room for `records` and `bytes`.
    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        Self {
            slots: Vec::with_capacity(records),
            bytes: Vec::with_capacity(bytes),
        }
    }

    fn put(&mut self, data: &[u8]) -> Range<u32> {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(data);
        start..self.bytes.len() as u32
    }

    /// Appends one record.
    pub fn push<'h>(
        &mut self,
        split: u32,
        offset: i64,
        timestamp: Option<i64>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: impl Iterator<Item = (&'h str, Option<&'h [u8]>)>,
    ) {
        let key = key.map(|k| self.put(k));
        let value = value.map(|v| self.put(v));
        let start = self.bytes.len() as u32;
        for (name, v) in headers {
            self.bytes
                .extend_from_slice(&(name.len() as u32).to_le_bytes());
            self.bytes.extend_from_slice(name.as_bytes());
            match v {
                Some(v) => {
                    self.bytes
                        .extend_from_slice(&(v.len() as u32).to_le_bytes());
                    self.bytes.extend_from_slice(v);
                }
                None => self.bytes.extend_from_slice(&u32::MAX.to_le_bytes()),
            }
        }
        let headers = start..self.bytes.len() as u32;
        self.slots.push(Slot {
            split,
            offset,
            timestamp: timestamp.unwrap_or(i64::MIN),
            key,
            value,
            headers,
        });
    }

    /// Record `i` as seen by a deserializer, `topic` and `partition` being
    /// its split's.
    pub fn record<'a>(&'a self, i: usize, topic: &'a str, partition: i32) -> KafkaRecord<'a> {
        let s = &self.slots[i];
        let range = |r: &Range<u32>| &self.bytes[r.start as usize..r.end as usize];
        KafkaRecord {
            topic,
            partition,
            offset: s.offset,
            timestamp: (s.timestamp != i64::MIN).then_some(s.timestamp),
            key: s.key.as_ref().map(range),
            value: s.value.as_ref().map(range),
            headers: range(&s.headers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_gives_back_what_was_pushed() {
        let mut b = Batch::default();
        b.push(
            0,
            7,
            Some(1000),
            Some(b"k"),
            Some(b"v1"),
            std::iter::empty(),
        );
        b.push(
            1,
            8,
            None,
            None,
            None,
            [("h", Some(&b"x"[..])), ("n", None)].into_iter(),
        );
        let r = b.record(0, "t", 3);
        assert_eq!(
            (r.offset, r.timestamp, r.key, r.value),
            (7, Some(1000), Some(&b"k"[..]), Some(&b"v1"[..]))
        );
        assert_eq!(r.headers().count(), 0);
        let r = b.record(1, "t", 4);
        assert_eq!(
            (r.partition, r.timestamp, r.key, r.value),
            (4, None, None, None)
        );
        let h: Vec<_> = r.headers().collect();
        assert_eq!(h, vec![("h", Some(&b"x"[..])), ("n", None)]);
    }
}
