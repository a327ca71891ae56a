-- Nexmark q19, auction Top-10 price: the ten highest bids of each auction
-- with their rank (Top-N: ROW_NUMBER() ordered by price, descending,
-- bounded to 10). An updating result: each bid entering an auction's top
-- ten moves the bids below it down one rank (-U/+U per rank).
CREATE TABLE nexmark_q19 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  date_time TIMESTAMP(3), extra STRING, rank_number BIGINT
) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q19
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 10;
