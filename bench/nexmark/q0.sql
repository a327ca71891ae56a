-- Nexmark q0, pass through: every bid's columns, as they are.
CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3), extra STRING)
WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q0 SELECT auction, bidder, price, date_time, extra FROM bid;
