-- Clicks per user per ten minutes, from a directory of CSV files into
-- committed CSV files, exactly once.
--   cargo run --release -- sql examples/sql/clicks.sql
-- (paths are relative to the directory you run it from)

SET 'execution.checkpointing.interval' = '1s';
SET 'state.checkpoints.dir' = 'target/clicks-checkpoints';

CREATE TABLE clicks (
  user_id STRING,
  url     STRING,
  ts      TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = 'examples/sql/clicks',
  'format' = 'csv',
  'csv.ignore-first-line' = 'true'
);

CREATE TABLE clicks_per_user (
  user_id      STRING,
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  clicks       BIGINT
) WITH (
  'connector' = 'filesystem',
  'path' = 'target/clicks-per-user',
  'format' = 'csv'
);

INSERT INTO clicks_per_user
SELECT user_id, window_start, window_end, COUNT(*)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY user_id, window_start, window_end;
