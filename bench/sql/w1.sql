-- W1 keyed-count in SQL (WORKLOADS.md's W1 over a datagen source):
-- COUNT and SUM of the value per key, every change of a key's totals out
-- (a changelog: +I, then -U/+U per record) into a blackhole sink.
--   weir sql bench/sql/w1.sql --workers 2
-- Keys are datagen's uniform random 0..K-1 (K = 100,000), values the row
-- number; N = 20,000,000 rows, unpaced.
CREATE TABLE w1_source (
  k BIGINT,
  v BIGINT
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '0',
  'number-of-rows' = '20000000',
  'fields.k.kind' = 'random', 'fields.k.min' = '0', 'fields.k.max' = '99999',
  'fields.v.kind' = 'sequence', 'fields.v.start' = '0', 'fields.v.end' = '19999999'
);
CREATE TABLE w1_sink (k BIGINT, cnt BIGINT, total BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO w1_sink SELECT k, COUNT(*), SUM(v) FROM w1_source GROUP BY k;
