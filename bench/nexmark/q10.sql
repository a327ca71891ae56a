-- Nexmark q10, log to file system: every bid with its day and minute
-- (the suite writes files partitioned by them; here a blackhole takes the
-- rows, so that the figure measures the query, not the disk).
CREATE TABLE nexmark_q10 (auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3), extra STRING, dt STRING, hm STRING)
WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q10
SELECT auction, bidder, price, date_time, extra, DATE_FORMAT(date_time, 'yyyy-MM-dd'), DATE_FORMAT(date_time, 'HH:mm')
FROM bid;
