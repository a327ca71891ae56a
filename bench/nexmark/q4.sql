-- Nexmark q4, average price per category: the winning bid of every
-- auction (its highest bid while it was open), averaged per category.
CREATE TABLE nexmark_q4 (id BIGINT, final BIGINT) WITH ('connector' = 'blackhole');
CREATE VIEW winning_bids AS
SELECT MAX(B.price) AS final, A.category
FROM auction A, bid B
WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
GROUP BY A.id, A.category;
INSERT INTO nexmark_q4
SELECT category, AVG(final) FROM winning_bids GROUP BY category;
