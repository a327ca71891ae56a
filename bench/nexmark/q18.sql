-- Nexmark q18, find last bid: each bidder's last bid on each auction
-- (deduplication: ROW_NUMBER() ordered by the time attribute, descending,
-- bounded to 1). An updating result: +I for a pair's first bid, -U/+U
-- for each later one.
CREATE TABLE nexmark_q18 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  date_time TIMESTAMP(3), extra STRING
) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;
