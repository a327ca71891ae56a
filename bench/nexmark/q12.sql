-- Nexmark q12, processing-time windows: bids per bidder per 10 s of wall
-- clock.
CREATE TABLE nexmark_q12 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
WITH ('connector' = 'blackhole');
CREATE VIEW bid_p AS SELECT *, PROCTIME() AS p_time FROM bid;
INSERT INTO nexmark_q12
SELECT bidder, COUNT(*), window_start, window_end
FROM TABLE(TUMBLE(TABLE bid_p, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
