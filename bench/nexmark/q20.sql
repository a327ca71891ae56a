-- Nexmark q20, expand bid with auction: bids on auctions of category 10,
-- with the auction's columns.
CREATE TABLE nexmark_q20 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, bid_date_time TIMESTAMP(3),
  item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT, auction_date_time TIMESTAMP(3),
  expires TIMESTAMP(3), seller BIGINT, category BIGINT
) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q20
SELECT auction, bidder, price, channel, url, B.date_time, item_name, description, initial_bid, reserve,
       A.date_time, expires, seller, category
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;
