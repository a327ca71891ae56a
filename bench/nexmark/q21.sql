-- Nexmark q21, add channel id: each bid from one of the four big channels
-- with that channel's id, and each other bid whose URL names its channel
-- (`&channel_id=..`) with the id taken from the URL; the others dropped.
CREATE TABLE nexmark_q21 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, channel_id STRING
) WITH ('connector' = 'blackhole');
INSERT INTO nexmark_q21
SELECT
  auction, bidder, price, channel,
  CASE
    WHEN LOWER(channel) = 'apple' THEN '0'
    WHEN LOWER(channel) = 'google' THEN '1'
    WHEN LOWER(channel) = 'facebook' THEN '2'
    WHEN LOWER(channel) = 'baidu' THEN '3'
    ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
  END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
   OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');
