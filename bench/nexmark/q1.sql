-- Nexmark q1, currency conversion: every bid's price from dollars to euros.
CREATE TABLE nexmark_q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), date_time TIMESTAMP(3), extra STRING)
WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q1 SELECT auction, bidder, CAST(0.908 * price AS DECIMAL(23, 3)), date_time, extra FROM bid;
