-- Nexmark q9, winning bids: each auction's highest bid made while it was
-- open (the earliest of equal ones): a regular join of auctions and bids,
-- then a Top-1 per auction (ROW_NUMBER() ordered by price, descending,
-- bounded to 1). An updating result.
CREATE TABLE nexmark_q9 (
  id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra STRING,
  auction BIGINT, bidder BIGINT, price BIGINT, bid_date_time TIMESTAMP(3), bid_extra STRING
) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q9
SELECT
  id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra,
  auction, bidder, price, bid_date_time, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time, B.extra AS bid_extra,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
)
WHERE rownum <= 1;
