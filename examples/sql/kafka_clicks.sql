-- Kafka in and out, exactly once: generated clicks are written to the topic
-- `clicks`; the same job reads that topic back, counts clicks per user per
-- ten seconds of processing time, and writes the counts to
-- `clicks_per_user` in Kafka transactions (read them with a read_committed
-- consumer). Start a broker first (README, "Kafka"):
--   tools/kafka/broker.sh start
--   cargo run --release -- sql examples/sql/kafka_clicks.sql
-- It runs until stopped: Ctrl-C stops it gracefully (a savepoint).
SET 'execution.checkpointing.interval' = '1s';
SET 'state.checkpoints.dir' = 'target/kafka-clicks-checkpoints';

CREATE TABLE generated (
  user_id BIGINT,
  url_id BIGINT
) WITH (
  'connector' = 'datagen', 'rows-per-second' = '1000',
  'fields.user_id.kind' = 'random', 'fields.user_id.min' = '1', 'fields.user_id.max' = '20',
  'fields.url_id.kind' = 'random', 'fields.url_id.min' = '1', 'fields.url_id.max' = '100'
);

CREATE TABLE clicks (
  user_id BIGINT,
  url_id BIGINT,
  pt AS PROCTIME()
) WITH (
  'connector' = 'kafka', 'topic' = 'clicks',
  'properties.bootstrap.servers' = '127.0.0.1:9092',
  'properties.group.id' = 'weir-example',
  'scan.startup.mode' = 'earliest-offset',
  'scan.topic-partition-discovery.interval' = '1s',
  'format' = 'json'
);

CREATE TABLE clicks_per_user (
  user_id BIGINT,
  window_end TIMESTAMP(3),
  clicks BIGINT
) WITH (
  'connector' = 'kafka', 'topic' = 'clicks_per_user',
  'properties.bootstrap.servers' = '127.0.0.1:9092',
  'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'weir-example-clicks'
);

INSERT INTO clicks SELECT user_id, url_id FROM generated;

INSERT INTO clicks_per_user
SELECT user_id, window_end, COUNT(*)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(pt), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end;
