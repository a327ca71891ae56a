-- Nexmark q11, user sessions: bids per bidder per session of activity
-- (a 10 s gap), with the session's bounds.
CREATE TABLE nexmark_q11 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q11
SELECT bidder, COUNT(*), window_start, window_end
FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
