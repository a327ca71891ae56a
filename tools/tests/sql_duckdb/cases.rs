//! The cases of `sql_duckdb.rs`: one query in weir SQL (Flink's) and the
//! same query in DuckDB's SQL, over the tables `orders`, `users` and
//! `shipments` (see `Data` there). Where the two SQLs mean different things
//! by the same words, the DuckDB side spells out Flink's meaning.

/// One query, in both engines.
pub struct Case {
    pub name: &'static str,
    /// A script after the tables: views, then one bare SELECT.
    pub weir: &'static str,
    /// Statements after the tables, the last the query.
    pub duckdb: &'static str,
}

/// Gaps and islands in DuckDB: each user's sessions of rows at most 40 s
/// apart, as Flink's 40 s session windows form them (the two session cases).
const SESSIONS_40S: &str = "WITH starts AS (
   SELECT *, CASE WHEN ts - lag(ts) OVER w <= INTERVAL 40 SECOND THEN 0 ELSE 1 END
             AS new_session
   FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts)),
 sessions AS (
   SELECT *, SUM(new_session) OVER (PARTITION BY user_id ORDER BY ts
                    ROWS UNBOUNDED PRECEDING) AS session
   FROM starts)
 SELECT user_id, MIN(ts), MAX(ts) + INTERVAL 40 SECOND, COUNT(*), SUM(amount)
 FROM sessions GROUP BY user_id, session";

pub const CASES: &[Case] = &[
    Case {
        name: "projection_arithmetic",
        // INT / INT truncates in Flink (DuckDB's `//`); DECIMAL keeps scales.
        weir: "SELECT order_id, amount * 2 AS a2, amount + qty AS aq, amount - 0.5 AS am,
                      qty * 3 - 1 AS q3, qty / 4 AS qd, qty % 4 AS qm, MOD(order_id, 7) AS m7,
                      CAST(amount AS DOUBLE) / 3 AS third, ABS(qty - 10) AS dist
               FROM orders;",
        duckdb: "SELECT order_id, amount * 2, amount + qty, amount - 0.5,
                        qty * 3 - 1, qty // 4, qty % 4, order_id % 7,
                        CAST(amount AS DOUBLE) / 3, abs(qty - 10)
                 FROM orders",
    },
    Case {
        name: "decimal_division",
        // Flink's quotient type: DECIMAL(10, 2) / INT is DECIMAL(21, 13),
        // rounded half up; DuckDB divides to a DOUBLE, so its side divides
        // the cents as integers, scaled 10^12, and rounds the last digit.
        // Division by zero is NULL in weir (docs/SQL.md: Flink fails).
        weir: "SELECT order_id, amount / 3 AS a3, amount / (qty + 1) AS aq FROM orders;",
        duckdb: "SELECT order_id,
                        at_scale_13(div_half_up(CAST(amount * 100 AS HUGEINT) * 1000000000000, 3)),
                        at_scale_13(div_half_up(CAST(amount * 100 AS HUGEINT) * 1000000000000,
                                                NULLIF(qty + 1, 0)))
                 FROM orders",
    },
    Case {
        name: "case_coalesce_cast",
        // CAST of a DECIMAL to INT truncates in Flink; DuckDB rounds. Text
        // that does not parse fails a CAST and is NULL in a TRY_CAST, in
        // both.
        weir: "SELECT order_id,
                      CASE WHEN qty IS NULL THEN 'none' WHEN qty < 5 THEN 'few' ELSE 'many' END AS size,
                      CASE category WHEN 'books' THEN 1 WHEN 'games' THEN 2 ELSE 0 END AS c,
                      COALESCE(category, 'unknown') AS cat, COALESCE(qty, -1) AS q,
                      IFNULL(qty, 0) + 1 AS q1,
                      CAST(amount AS INT) AS ai, CAST(qty AS STRING) AS qs,
                      CAST(amount AS DECIMAL(12, 1)) AS a1, CAST(qty AS DECIMAL(5, 2)) AS qd,
                      CAST(order_id AS DOUBLE) * 1.5 AS od,
                      CAST(SUBSTR(user_id, 2) AS INT) AS un, TRY_CAST(note AS INT) AS bad
               FROM orders;",
        duckdb: "SELECT order_id,
                        CASE WHEN qty IS NULL THEN 'none' WHEN qty < 5 THEN 'few' ELSE 'many' END,
                        CASE category WHEN 'books' THEN 1 WHEN 'games' THEN 2 ELSE 0 END,
                        COALESCE(category, 'unknown'), COALESCE(qty, -1), ifnull(qty, 0) + 1,
                        CAST(trunc(amount) AS INTEGER), CAST(qty AS VARCHAR),
                        CAST(amount AS DECIMAL(12, 1)), CAST(qty AS DECIMAL(5, 2)),
                        CAST(order_id AS DOUBLE) * 1.5,
                        CAST(substr(user_id, 2) AS INTEGER), TRY_CAST(note AS INTEGER)
                 FROM orders",
    },
    Case {
        name: "string_functions",
        // Flink's CONCAT of a NULL is NULL (DuckDB's concat skips NULLs;
        // its `||` does not). Flink's UPPER is Java's toUpperCase, which
        // makes `ß` `SS`; DuckDB's makes it `ẞ`. Substrings are bracketed: weir's printed
        // table right-aligns its cells, so a leading blank would not show.
        weir: "SELECT order_id, UPPER(note) AS u, LOWER(note) AS l,
                      '[' || SUBSTRING(note FROM 2 FOR 4) || ']' AS s1,
                      '[' || SUBSTRING(note FROM 6) || ']' AS s2,
                      SUBSTR(user_id, 2) AS s3,
                      note || '/' || user_id AS c1, CONCAT(user_id, '-', category) AS c2,
                      CHAR_LENGTH(note) AS n, POSITION('e' IN note) AS p,
                      REPLACE(note, ' ', '_') AS r, TRIM(CONCAT('  ', note, ' ')) AS t,
                      note LIKE '%wrap%' AS w, user_id LIKE 'u1_' AS u1,
                      category NOT LIKE '%o%' AS no
               FROM orders;",
        duckdb: "SELECT order_id, replace(upper(note), 'ẞ', 'SS'), lower(note),
                        '[' || substring(note, 2, 4) || ']', '[' || substring(note, 6) || ']',
                        substr(user_id, 2),
                        note || '/' || user_id, user_id || '-' || category,
                        length(note), position('e' IN note),
                        replace(note, ' ', '_'), trim('  ' || note || ' '),
                        note LIKE '%wrap%', user_id LIKE 'u1_', category NOT LIKE '%o%'
                 FROM orders",
    },
    Case {
        name: "later_string_functions",
        // Flink's TRANSLATE, REGEXP_SUBSTR (NULL without a match, where
        // DuckDB's regexp_extract gives ''), IS_ALPHA and IS_DIGIT (FALSE
        // for '', NULL for NULL), ELT (1-based) and PARSE_URL.
        weir: "SELECT order_id, TRANSLATE(note, 'aeo ', 'AEO') AS t,
                      REGEXP_SUBSTR(note, '[a-z]+ [a-z]+') AS r,
                      IS_ALPHA(category) AS al, IS_DIGIT(SUBSTR(user_id, 2)) AS dg,
                      IS_DIGIT(REPLACE(note, note, '')) AS de,
                      ELT(CAST(MOD(order_id, 3) AS INT) + 1, 'x', category, user_id) AS e,
                      PARSE_URL(CONCAT('http://shop.example/', category, '?u=', user_id, '&q=1#top'),
                                'QUERY', 'u') AS pu,
                      PARSE_URL(CONCAT('https://', user_id, '.example:81/', category), 'PATH') AS pp
               FROM orders;",
        duckdb: "SELECT order_id, translate(note, 'aeo ', 'AEO'),
                        nullif(regexp_extract(note, '[a-z]+ [a-z]+'), ''),
                        regexp_full_match(category, '[a-zA-Z]+'),
                        regexp_full_match(substr(user_id, 2), '[0-9]+'),
                        CASE WHEN note IS NULL THEN NULL ELSE false END,
                        [ 'x', category, user_id ][order_id % 3 + 1],
                        CASE WHEN category IS NOT NULL THEN user_id END,
                        CASE WHEN user_id IS NOT NULL THEN '/' || category END
                 FROM orders",
    },
    Case {
        name: "float_is_four_bytes",
        // FLOAT is Flink's 4-byte float: arithmetic with an integer stays
        // FLOAT (in f32), a FLOAT as a DOUBLE is the float's exact value
        // (0.1 is 0.10000000149011612), AVG of a FLOAT is a FLOAT (DuckDB's
        // avg is a DOUBLE: cast back).
        weir: "SELECT user_id, MIN(f) AS mi, MAX(f * 3) AS m3, MAX(CAST(f AS DOUBLE)) AS md,
                      MIN(f + qty) AS fq, AVG(f) AS a, COUNT(*) AS n
               FROM (SELECT user_id, qty, CAST(amount AS FLOAT) AS f FROM orders)
               GROUP BY user_id;",
        duckdb: "SELECT user_id, min(f), max(f * 3), max(CAST(f AS DOUBLE)), min(f + qty),
                        CAST(avg(f) AS FLOAT), count(*)
                 FROM (SELECT user_id, qty, CAST(amount AS FLOAT) AS f FROM orders)
                 GROUP BY user_id",
    },
    Case {
        name: "convert_tz",
        // CONVERT_TZ: a timestamp's text read in one zone, written in
        // another (DuckDB's timezone() both ways), a custom GMT offset.
        weir: "SELECT order_id,
                      CONVERT_TZ(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'), 'Asia/Shanghai',
                                 'America/New_York') AS ny,
                      CONVERT_TZ(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'), 'UTC', 'GMT+05:30') AS ist
               FROM orders;",
        duckdb: "SELECT order_id,
                        strftime(timezone('America/New_York', timezone('Asia/Shanghai', ts)),
                                 '%Y-%m-%d %H:%M:%S'),
                        strftime(ts + INTERVAL 330 MINUTE, '%Y-%m-%d %H:%M:%S')
                 FROM orders",
    },
    Case {
        name: "time_functions",
        weir: "SELECT order_id, EXTRACT(HOUR FROM ts) AS h, MINUTE(ts) AS m, SECOND(ts) AS s,
                      DAYOFMONTH(ts) AS d, DAYOFWEEK(ts) AS dw, YEAR(ts) AS y,
                      DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') AS f, FLOOR(ts TO MINUTE) AS fm,
                      ts + INTERVAL '90' SECOND AS later, ts - INTERVAL '1' HOUR AS earlier,
                      ts > TIMESTAMP '2024-01-01 01:30:00' AS late, CAST(ts AS DATE) AS day
               FROM orders;",
        // Flink's DAYOFWEEK is 1 for Sunday (DuckDB's dayofweek: 0).
        duckdb: "SELECT order_id, extract(hour FROM ts), minute(ts), second(ts),
                        dayofmonth(ts), dayofweek(ts) + 1, year(ts),
                        strftime(ts, '%Y-%m-%d %H:%M:%S'), date_trunc('minute', ts),
                        ts + INTERVAL 90 SECOND, ts - INTERVAL 1 HOUR,
                        ts > TIMESTAMP '2024-01-01 01:30:00', CAST(ts AS DATE)
                 FROM orders",
    },
    Case {
        name: "where_three_valued_logic",
        weir: "SELECT order_id, qty, category,
                      qty > 10 OR category = 'books' AS b, qty > 10 AND category = 'food' AS a,
                      (qty > 10) IS NOT TRUE AS nt, qty = NULL AS eqn
               FROM orders
               WHERE (qty > 10 OR category = 'books') AND NOT (qty < 3)
                  OR category IS NULL AND qty IN (1, 2, 3)
                  OR qty NOT BETWEEN 2 AND 18 AND amount > 900;",
        duckdb: "SELECT order_id, qty, category,
                        qty > 10 OR category = 'books', qty > 10 AND category = 'food',
                        (qty > 10) IS NOT TRUE, qty = NULL
                 FROM orders
                 WHERE (qty > 10 OR category = 'books') AND NOT (qty < 3)
                    OR category IS NULL AND qty IN (1, 2, 3)
                    OR qty NOT BETWEEN 2 AND 18 AND amount > 900",
    },
    Case {
        name: "between_symmetric",
        // Flink's (Calcite's) BETWEEN SYMMETRIC is either order of the
        // bounds (NULL where neither is FALSE), ASYMMETRIC the plain
        // BETWEEN; DuckDB has neither word, so its side spells them out.
        weir: "SELECT order_id, qty BETWEEN SYMMETRIC 12 AND 4 AS s,
                      qty NOT BETWEEN SYMMETRIC 12 AND qty - amount AS ns,
                      amount BETWEEN ASYMMETRIC 50 AND 10 AS a,
                      qty BETWEEN SYMMETRIC NULL AND 5 AS n
               FROM orders WHERE qty + 1 BETWEEN SYMMETRIC 15 AND 3 OR qty IS NULL;",
        duckdb: "SELECT order_id, (qty BETWEEN 12 AND 4 OR qty BETWEEN 4 AND 12),
                        NOT (qty BETWEEN 12 AND qty - amount OR qty BETWEEN qty - amount AND 12),
                        amount BETWEEN 50 AND 10,
                        (qty BETWEEN NULL AND 5 OR qty BETWEEN 5 AND NULL)
                 FROM orders WHERE (qty + 1 BETWEEN 15 AND 3 OR qty + 1 BETWEEN 3 AND 15) OR qty IS NULL",
    },
    Case {
        name: "group_by_aggregates_having",
        // Flink: SUM of an INT is INT, AVG of an INT truncates and is INT.
        weir: "SELECT category, COUNT(*) AS n, COUNT(qty) AS nq, SUM(qty) AS sq,
                      SUM(amount) AS sa, MIN(amount) AS mina, MAX(qty) AS maxq,
                      MIN(note) AS minn, AVG(qty) AS aq, AVG(CAST(qty AS DOUBLE)) AS aqd
               FROM orders GROUP BY category HAVING COUNT(*) > 10;",
        duckdb: "SELECT category, COUNT(*), COUNT(qty), CAST(SUM(qty) AS INTEGER),
                        SUM(amount), MIN(amount), MAX(qty),
                        MIN(note), CAST(trunc(SUM(qty) / COUNT(qty)) AS INTEGER),
                        AVG(CAST(qty AS DOUBLE))
                 FROM orders GROUP BY category HAVING COUNT(*) > 10",
    },
    Case {
        name: "group_by_two_keys_having_on_a_sum",
        weir: "SELECT user_id, qty > 9 AS big, SUM(amount * qty) AS total, MAX(ts) AS last_ts
               FROM orders WHERE qty IS NOT NULL
               GROUP BY user_id, qty > 9 HAVING SUM(amount) > 20000;",
        duckdb: "SELECT user_id, qty > 9, SUM(amount * qty), MAX(ts)
                 FROM orders WHERE qty IS NOT NULL
                 GROUP BY user_id, qty > 9 HAVING SUM(amount) > 20000",
    },
    Case {
        name: "count_distinct_and_filter",
        weir: "SELECT user_id, COUNT(DISTINCT category) AS dc,
                      COUNT(*) FILTER (WHERE qty > 10) AS big,
                      SUM(amount) FILTER (WHERE category = 'books') AS books,
                      COUNT(DISTINCT qty) FILTER (WHERE amount > 500) AS dq,
                      SUM(DISTINCT qty) AS sdq
               FROM orders GROUP BY user_id;",
        duckdb: "SELECT user_id, COUNT(DISTINCT category),
                        COUNT(*) FILTER (WHERE qty > 10),
                        SUM(amount) FILTER (WHERE category = 'books'),
                        COUNT(DISTINCT qty) FILTER (WHERE amount > 500),
                        CAST(SUM(DISTINCT qty) AS INTEGER)
                 FROM orders GROUP BY user_id",
    },
    Case {
        name: "select_distinct",
        weir: "SELECT DISTINCT category, qty > 10 AS big FROM orders;",
        duckdb: "SELECT DISTINCT category, qty > 10 FROM orders",
    },
    Case {
        name: "tumble_window",
        weir: "SELECT category, window_start, window_end, window_time, COUNT(*) AS n,
                      SUM(amount) AS total, MAX(qty) AS mq, COUNT(DISTINCT user_id) AS users
               FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
               GROUP BY category, window_start, window_end, window_time;",
        duckdb: "SELECT category, win_floor(ts, 600000) AS ws, ws + INTERVAL 10 MINUTE,
                        ws + INTERVAL 10 MINUTE - INTERVAL 1 MILLISECOND,
                        COUNT(*), SUM(amount), MAX(qty), COUNT(DISTINCT user_id)
                 FROM orders GROUP BY ALL",
    },
    Case {
        name: "tumble_window_having_and_filter",
        weir: "SELECT user_id, window_end, COUNT(*) FILTER (WHERE qty > 5) AS n5,
                      AVG(qty) AS aq
               FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' HOUR))
               WHERE category <> 'food'
               GROUP BY user_id, window_start, window_end HAVING SUM(qty) > 500;",
        duckdb: "SELECT user_id, win_floor(ts, 3600000) + INTERVAL 1 HOUR AS we,
                        COUNT(*) FILTER (WHERE qty > 5),
                        CAST(trunc(SUM(qty) / COUNT(qty)) AS INTEGER)
                 FROM orders WHERE category <> 'food'
                 GROUP BY user_id, we HAVING SUM(qty) > 500",
    },
    Case {
        name: "tumble_window_with_offset",
        weir: "SELECT window_start, window_end, COUNT(*) AS n, AVG(DISTINCT qty) AS adq,
                      COUNT(DISTINCT note) AS notes
               FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES,
                                 INTERVAL '3' MINUTES))
               GROUP BY window_start, window_end;",
        duckdb: "SELECT epoch_ms((epoch_ms(ts) - 180000) // 600000 * 600000 + 180000) AS ws,
                        ws + INTERVAL 10 MINUTE, COUNT(*),
                        CAST(trunc(SUM(DISTINCT qty) / COUNT(DISTINCT qty)) AS INTEGER),
                        COUNT(DISTINCT note)
                 FROM orders GROUP BY ws",
    },
    Case {
        name: "windows_with_a_negative_offset",
        // Flink's offsets may be negative (or zero, or past the size): a
        // window's start depends on the offset modulo the period, so -2
        // minutes to 10-minute windows is 8 minutes, and a HOP's -1 minute
        // to a 5-minute slide 4 minutes.
        weir: "SELECT 'T' AS w, window_start, window_end, COUNT(*) AS n, SUM(amount) AS s
               FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES,
                                 INTERVAL '-2' MINUTES))
               GROUP BY window_start, window_end
               UNION ALL
               SELECT 'H' AS w, window_start, window_end, COUNT(*) AS n, SUM(amount) AS s
               FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                              INTERVAL '10' MINUTES, INTERVAL '-1' MINUTES))
               GROUP BY window_start, window_end;",
        duckdb: "SELECT 'T', epoch_ms((epoch_ms(ts) - 480000) // 600000 * 600000 + 480000) AS ws,
                        ws + INTERVAL 10 MINUTE, COUNT(*), SUM(amount)
                 FROM orders GROUP BY ws
                 UNION ALL
                 SELECT 'H', epoch_ms(st), epoch_ms(st + 600000), COUNT(*), SUM(amount)
                 FROM (SELECT amount, unnest([s, s - 300000]) AS st
                       FROM (SELECT amount,
                                    (epoch_ms(ts) - 240000) // 300000 * 300000 + 240000 AS s
                             FROM orders))
                 GROUP BY st",
    },
    Case {
        name: "cascaded_hop_window_aggregation_by_renamed_bounds",
        // The inner window aggregation's rows grouped again by their
        // window, its bounds renamed: a window aggregation of the same
        // windows (one row per window and category), as Flink plans it.
        weir: "SELECT category, ws, we, MAX(n) AS most, SUM(n) AS total, COUNT(*) AS users
               FROM (SELECT category, user_id, COUNT(*) AS n,
                            window_start AS ws, window_end AS we
                     FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                                    INTERVAL '15' MINUTES))
                     GROUP BY category, user_id, window_start, window_end)
               GROUP BY category, ws, we;",
        duckdb: "WITH w AS (
                   SELECT category, user_id, win_floor(ts, 300000) - k * INTERVAL 5 MINUTE AS ws
                   FROM orders, range(3) AS r(k)),
                 c AS (SELECT category, user_id, ws, COUNT(*) AS n FROM w GROUP BY ALL)
                 SELECT category, ws, ws + INTERVAL 15 MINUTE, MAX(n), SUM(n), COUNT(*)
                 FROM c GROUP BY category, ws",
    },
    Case {
        name: "window_join_of_window_aggregations_by_renamed_bounds",
        // Two window aggregations joined on their renamed bounds: a
        // window join (append-only), each window's rows once.
        weir: "SELECT a.category, a.s, a.n, b.top
               FROM (SELECT category, COUNT(*) AS n, window_start AS s, window_end AS e
                     FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
                     GROUP BY category, window_start, window_end) a
               JOIN (SELECT MAX(qty) AS top, window_start AS s2, window_end AS e2
                     FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
                     GROUP BY window_start, window_end) b
               ON a.s = b.s2 AND a.e = b.e2;",
        duckdb: "WITH a AS (SELECT category, win_floor(ts, 600000) AS s, COUNT(*) AS n
                           FROM orders GROUP BY ALL),
                      b AS (SELECT win_floor(ts, 600000) AS s2, MAX(qty) AS top
                           FROM orders GROUP BY ALL)
                 SELECT a.category, a.s, a.n, b.top FROM a JOIN b ON a.s = b.s2",
    },
    Case {
        name: "legacy_group_window_qualified_keys",
        // Flink's legacy GROUP BY TUMBLE(..) with TUMBLE_START/_END, a
        // key written qualified in one place and bare in the other.
        weir: "SELECT o.user_id, TUMBLE_START(ts, INTERVAL '10' MINUTE) AS ws,
                      TUMBLE_END(o.ts, INTERVAL '10' MINUTE) AS we, COUNT(*) AS n,
                      SUM(o.amount) AS total
               FROM orders AS o
               GROUP BY user_id, TUMBLE(o.ts, INTERVAL '10' MINUTE);",
        duckdb: "SELECT user_id, win_floor(ts, 600000) AS ws, ws + INTERVAL 10 MINUTE,
                        COUNT(*), SUM(amount)
                 FROM orders GROUP BY ALL",
    },
    Case {
        name: "min_max_over_an_updating_input",
        // Counts per (category, user) grow row by row: the outer MIN/MAX
        // see them retracted and replaced.
        weir: "SELECT category, MIN(n) AS least, MAX(n) AS most, COUNT(*) AS users
               FROM (SELECT category, user_id, COUNT(*) AS n FROM orders
                     GROUP BY category, user_id)
               GROUP BY category;",
        duckdb: "SELECT category, MIN(n), MAX(n), COUNT(*)
                 FROM (SELECT category, user_id, COUNT(*) AS n FROM orders
                       GROUP BY category, user_id)
                 GROUP BY category",
    },
    Case {
        name: "int_variance_over_an_updating_input",
        // Each user's quantity sum changes row by row: the outer INT
        // variances see it retracted and replaced, and are still the true
        // values truncated. DuckDB's side computes them in integers (its
        // doubles, as Welford's did, can fall one below a whole value).
        weir: "SELECT category, VAR_POP(q) AS vp, VAR_SAMP(q) AS vs, STDDEV_POP(q) AS sp,
                      STDDEV_SAMP(q) AS ss, COUNT(*) AS users
               FROM (SELECT category, user_id, SUM(qty) AS q FROM orders
                     GROUP BY category, user_id)
               GROUP BY category;",
        duckdb: "SELECT category, CAST(m // p AS INTEGER), CAST(m // s AS INTEGER),
                        CAST(floor(sqrt(m // p)) AS INTEGER), CAST(floor(sqrt(m // s)) AS INTEGER),
                        users
                 FROM (SELECT category, NULLIF(COUNT(q) * COUNT(q), 0) AS p,
                              NULLIF(COUNT(q) * (COUNT(q) - 1), 0) AS s, COUNT(*) AS users,
                              COUNT(q) * SUM(CAST(q AS HUGEINT) * q)
                                - SUM(CAST(q AS HUGEINT)) * SUM(CAST(q AS HUGEINT)) AS m
                       FROM (SELECT category, user_id, SUM(qty) AS q FROM orders
                             GROUP BY category, user_id)
                       GROUP BY category)",
    },
    Case {
        name: "order_by_columns_not_selected",
        weir: "SELECT order_id, ts + INTERVAL '10:30' MINUTE TO SECOND AS later
               FROM orders ORDER BY amount DESC, qty * 2, order_id LIMIT 7;",
        duckdb: "SELECT order_id, ts + INTERVAL 630 SECOND
                 FROM orders ORDER BY amount DESC, qty * 2 NULLS FIRST, order_id LIMIT 7",
    },
    Case {
        name: "full_window_join_with_null_keys",
        // Orders with orders of the same category and quantity in the same
        // minute: a NULL category or quantity matches nothing (`NULL = NULL`
        // is not true), so such a row comes out once padded on each side.
        weir: "SELECT L.order_id, R.order_id, L.window_start, R.window_end
               FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts),
                                                INTERVAL '1' MINUTE))) L
               FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts),
                                                     INTERVAL '1' MINUTE))) R
               ON L.category = R.category AND L.qty = R.qty
                  AND L.window_start = R.window_start AND L.window_end = R.window_end;",
        duckdb: "SELECT l.order_id, r.order_id,
                        CASE WHEN l.order_id IS NULL THEN NULL ELSE win_floor(l.ts, 60000) END,
                        CASE WHEN r.order_id IS NULL THEN NULL
                             ELSE win_floor(r.ts, 60000) + INTERVAL 1 MINUTE END
                 FROM orders l FULL JOIN orders r
                   ON l.category = r.category AND l.qty = r.qty
                  AND win_floor(l.ts, 60000) = win_floor(r.ts, 60000)",
    },
    Case {
        name: "hop_window",
        // Each row is in the three 15-minute windows that start at its
        // 5-minute slot and the two slots before.
        weir: "SELECT user_id, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total
               FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                              INTERVAL '15' MINUTES))
               GROUP BY user_id, window_start, window_end;",
        duckdb: "SELECT user_id, win_floor(ts, 300000) - k * INTERVAL 5 MINUTE AS ws,
                        ws + INTERVAL 15 MINUTE, COUNT(*), SUM(amount)
                 FROM orders, range(3) AS r(k) GROUP BY ALL",
    },
    Case {
        name: "hop_window_with_an_offset_min_max_of_text_and_time",
        // 15-minute windows every 5 minutes, starting 2 minutes past each
        // 5-minute slot; MIN and MAX of strings and timestamps, AVG of an
        // INT (an INT, truncated) and COUNT(DISTINCT) per window and user.
        weir: "SELECT user_id, window_start, window_end, MIN(note) AS n0, MAX(category) AS c1,
                      MIN(ts) AS t0, MAX(ts) AS t1, AVG(qty) AS aq,
                      COUNT(DISTINCT category) AS cats
               FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                              INTERVAL '15' MINUTES, INTERVAL '2' MINUTES))
               GROUP BY user_id, window_start, window_end;",
        duckdb: "SELECT user_id, epoch_ms(st), epoch_ms(st + 900000), MIN(note), MAX(category),
                        MIN(ts), MAX(ts), CAST(trunc(SUM(qty) / COUNT(qty)) AS INTEGER),
                        COUNT(DISTINCT category)
                 FROM (SELECT *, unnest([s, s - 300000, s - 600000]) AS st
                       FROM (SELECT *, (epoch_ms(ts) - 120000) // 300000 * 300000 + 120000 AS s
                             FROM orders))
                 GROUP BY user_id, st",
    },
    Case {
        name: "cumulate_window",
        // Windows growing by 5 minutes from each 20-minute period's start:
        // a row is in those of its period that end after it.
        weir: "SELECT category, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total,
                      MIN(qty) AS mq
               FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                                   INTERVAL '20' MINUTES))
               GROUP BY category, window_start, window_end;",
        duckdb: "SELECT category, win_floor(ts, 1200000) AS ws, ws + k * INTERVAL 5 MINUTE AS we,
                        COUNT(*), SUM(amount), MIN(qty)
                 FROM orders, range(1, 5) AS r(k)
                 WHERE ts < win_floor(ts, 1200000) + k * INTERVAL 5 MINUTE
                 GROUP BY ALL",
    },
    Case {
        name: "hop_rows_as_a_table",
        // A windowing TVF not aggregated: each row once per window.
        weir: "SELECT order_id, window_start, window_end, window_time, amount
               FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                              INTERVAL '10' MINUTES))
               WHERE qty > 15;",
        duckdb: "SELECT order_id, win_floor(ts, 300000) - k * INTERVAL 5 MINUTE AS ws,
                        ws + INTERVAL 10 MINUTE,
                        ws + INTERVAL 10 MINUTE - INTERVAL 1 MILLISECOND, amount
                 FROM orders, range(2) AS r(k) WHERE qty > 15",
    },
    Case {
        name: "window_join",
        // Orders and their shipments in the same 10-minute window.
        weir: "SELECT L.order_id, L.window_start, L.amount, R.ship_id
               FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts),
                                                INTERVAL '10' MINUTES))) L
               JOIN (SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts),
                                                INTERVAL '10' MINUTES))) R
               ON L.order_id = R.order_id AND L.window_start = R.window_start
                  AND L.window_end = R.window_end;",
        duckdb: "SELECT o.order_id, win_floor(o.ts, 600000), o.amount, s.ship_id
                 FROM orders o JOIN shipments s
                   ON o.order_id = s.order_id
                  AND win_floor(o.ts, 600000) = win_floor(s.ts, 600000)",
    },
    Case {
        name: "session_window",
        // Gaps and islands: a row starts a new session when the user's
        // previous row is more than 40 s before it (Flink's session
        // windows `[t, t + gap)` merge when they touch: `TimeWindow.
        // intersects` is inclusive); a session ends 40 s after its last row.
        weir: "SELECT user_id, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total
               FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '40' SECOND))
               GROUP BY user_id, window_start, window_end;",
        duckdb: SESSIONS_40S,
    },
    Case {
        name: "session_window_partitioned",
        // The same sessions with Flink's partition keys spelt out.
        weir: "SELECT user_id, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total
               FROM TABLE(SESSION(TABLE orders PARTITION BY user_id, DESCRIPTOR(ts),
                                  INTERVAL '40' SECOND))
               GROUP BY user_id, window_start, window_end;",
        duckdb: SESSIONS_40S,
    },
    Case {
        name: "union_all",
        weir: "SELECT order_id AS id, user_id AS who, amount FROM orders WHERE qty > 15
               UNION ALL
               SELECT order_id * 10, UPPER(user_id), amount FROM orders WHERE category = 'food';",
        duckdb: "SELECT order_id, user_id, amount FROM orders WHERE qty > 15
                 UNION ALL
                 SELECT order_id * 10, upper(user_id), amount FROM orders WHERE category = 'food'",
    },
    Case {
        name: "union_all_widening",
        // Each column widens to the least common type of both sides: BIGINT
        // of INT and BIGINT, DECIMAL(12, 3) of DECIMAL(10, 2) and (12, 3);
        // a bare NULL takes the other side's INT.
        weir: "SELECT order_id AS id, qty AS q, amount AS a, NULL AS n FROM orders WHERE qty > 15
               UNION ALL
               SELECT qty, order_id * 2, CAST(amount AS DECIMAL(12, 3)), qty
               FROM orders WHERE category = 'food';",
        duckdb: "SELECT order_id, qty, amount, NULL FROM orders WHERE qty > 15
                 UNION ALL
                 SELECT qty, order_id * 2, CAST(amount AS DECIMAL(12, 3)), qty
                 FROM orders WHERE category = 'food'",
    },
    Case {
        name: "inner_join",
        weir: "SELECT o.order_id, u.name, u.tier, o.amount
               FROM orders o JOIN users u ON o.user_id = u.user_id
               WHERE o.qty > 12;",
        duckdb: "SELECT o.order_id, u.name, u.tier, o.amount
                 FROM orders o JOIN users u ON o.user_id = u.user_id
                 WHERE o.qty > 12",
    },
    Case {
        name: "left_join",
        weir: "SELECT o.order_id, o.user_id, u.name, u.tier
               FROM orders o LEFT JOIN users u ON o.user_id = u.user_id AND u.tier > 1
               WHERE o.category = 'games';",
        duckdb: "SELECT o.order_id, o.user_id, u.name, u.tier
                 FROM orders o LEFT JOIN users u ON o.user_id = u.user_id AND u.tier > 1
                 WHERE o.category = 'games'",
    },
    Case {
        name: "full_join",
        weir: "SELECT o.order_id, o.user_id, u.user_id AS uid, u.name
               FROM orders o FULL JOIN users u ON o.user_id = u.user_id AND o.qty > 17;",
        duckdb: "SELECT o.order_id, o.user_id, u.user_id, u.name
                 FROM orders o FULL JOIN users u ON o.user_id = u.user_id AND o.qty > 17",
    },
    Case {
        name: "group_by_over_a_left_join",
        // The join retracts an order's padded row when its user arrives:
        // the aggregation must take the retraction back.
        weir: "SELECT u.name, u.tier, COUNT(*) AS n, COUNT(u.user_id) AS matched,
                      SUM(o.amount) AS total
               FROM orders o LEFT JOIN users u ON o.user_id = u.user_id
               GROUP BY u.name, u.tier;",
        duckdb: "SELECT u.name, u.tier, COUNT(*), COUNT(u.user_id), SUM(o.amount)
                 FROM orders o LEFT JOIN users u ON o.user_id = u.user_id
                 GROUP BY u.name, u.tier",
    },
    Case {
        name: "group_by_over_window_results",
        weir: "SELECT category, MAX(n) AS busiest, SUM(n) AS n, COUNT(*) AS windows
               FROM (SELECT category, window_start, COUNT(*) AS n
                     FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES))
                     GROUP BY category, window_start, window_end)
               GROUP BY category;",
        duckdb: "SELECT category, MAX(n), SUM(n), COUNT(*)
                 FROM (SELECT category, win_floor(ts, 300000), COUNT(*) AS n
                       FROM orders GROUP BY ALL)
                 GROUP BY category",
    },
    Case {
        name: "interval_join",
        weir: "SELECT o.order_id, s.ship_id, o.ts AS ordered, s.ts AS shipped
               FROM orders o JOIN shipments s
                 ON o.order_id = s.order_id
                AND s.ts BETWEEN o.ts + INTERVAL '1' MINUTE AND o.ts + INTERVAL '5' MINUTE;",
        duckdb: "SELECT o.order_id, s.ship_id, o.ts, s.ts
                 FROM orders o JOIN shipments s
                   ON o.order_id = s.order_id
                  AND s.ts BETWEEN o.ts + INTERVAL 1 MINUTE AND o.ts + INTERVAL 5 MINUTE",
    },
    Case {
        name: "interval_join_strict_bounds",
        weir: "SELECT o.order_id, s.ship_id, o.amount
               FROM orders o, shipments s
               WHERE o.order_id = s.order_id AND o.ts < s.ts - INTERVAL '1' MINUTE
                 AND o.ts > s.ts - INTERVAL '5' MINUTE;",
        duckdb: "SELECT o.order_id, s.ship_id, o.amount
                 FROM orders o, shipments s
                 WHERE o.order_id = s.order_id AND o.ts < s.ts - INTERVAL 1 MINUTE
                   AND o.ts > s.ts - INTERVAL 5 MINUTE",
    },
    Case {
        name: "outer_interval_joins",
        // Outer interval joins (append-only, the unmatched rows padded
        // when the watermark passes their bounds), the second over the
        // first's rows, which carry no time attribute: a regular join.
        weir: "SELECT o.order_id, s.ship_id, s2.ship_id AS s2
               FROM orders o
               LEFT JOIN shipments s ON o.order_id = s.order_id
                 AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '3' MINUTE
               FULL JOIN shipments s2 ON o.order_id = s2.order_id
                 AND s2.ts > o.ts + INTERVAL '3' MINUTE AND s2.ts < o.ts + INTERVAL '1' HOUR;",
        duckdb: "SELECT o.order_id, s.ship_id, s2.ship_id
                 FROM orders o
                 LEFT JOIN shipments s ON o.order_id = s.order_id
                   AND s.ts BETWEEN o.ts AND o.ts + INTERVAL 3 MINUTE
                 FULL JOIN shipments s2 ON o.order_id = s2.order_id
                   AND s2.ts > o.ts + INTERVAL 3 MINUTE AND s2.ts < o.ts + INTERVAL 1 HOUR",
    },
    Case {
        name: "extract_iso_and_long_units",
        weir: "SELECT order_id, EXTRACT(ISODOW FROM ts) AS idw, EXTRACT(ISOYEAR FROM ts) AS iy,
                      EXTRACT(DECADE FROM ts) AS de, EXTRACT(CENTURY FROM ts) AS ce,
                      EXTRACT(MILLENNIUM FROM ts) AS mi, EXTRACT(DOW FROM ts) AS dw,
                      EXTRACT(DOY FROM CAST(ts AS DATE)) AS dy,
                      EXTRACT(CENTURY FROM DATE '2000-12-31') AS c2000
               FROM orders;",
        // Flink's DOW is 1 for Sunday (DuckDB's: 0).
        duckdb: "SELECT order_id, isodow(ts), isoyear(ts), decade(ts), century(ts),
                        millennium(ts), dayofweek(ts) + 1, dayofyear(ts), 20
                 FROM orders",
    },
    Case {
        name: "window_grouping_sets_rollup_and_cube",
        weir: "SELECT window_start, window_end, user_id, category, COUNT(*) AS n, SUM(qty) AS q,
                      GROUPING_ID(user_id, category) AS g
               FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
               GROUP BY window_start, window_end, GROUPING SETS ((user_id, category), (user_id), ())
               UNION ALL
               SELECT window_start, window_end, user_id, category, COUNT(*), SUM(qty), 9
               FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '10' MINUTE))
               GROUP BY window_start, window_end, CUBE (user_id, category);",
        duckdb: "SELECT ws, ws + INTERVAL 10 MINUTE, user_id, category, COUNT(*), SUM(qty),
                        GROUPING(user_id, category)
                 FROM (SELECT *, time_bucket(INTERVAL 10 MINUTE, ts, TIMESTAMP '1970-01-01') AS ws
                       FROM orders)
                 GROUP BY ws, GROUPING SETS ((user_id, category), (user_id), ())
                 UNION ALL
                 SELECT ws, ws + INTERVAL 10 MINUTE, user_id, category, COUNT(*), SUM(qty), 9
                 FROM (SELECT *, time_bucket(INTERVAL 5 MINUTE, ts, TIMESTAMP '1970-01-01') AS ws
                       FROM orders
                       UNION ALL
                       SELECT *, time_bucket(INTERVAL 5 MINUTE, ts, TIMESTAMP '1970-01-01')
                                 - INTERVAL 5 MINUTE
                       FROM orders)
                 GROUP BY ws, CUBE (user_id, category)",
    },
    Case {
        name: "window_semi_and_anti_joins",
        // Flink's window semi and anti joins: IN / NOT EXISTS of a TVF's
        // rows correlated on the window bounds.
        weir: "SELECT L.order_id, L.window_start, 'in' AS how
               FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTE))) L
               WHERE L.order_id IN (
                 SELECT order_id FROM (
                   SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts), INTERVAL '5' MINUTE))) R
                 WHERE L.window_start = R.window_start AND L.window_end = R.window_end)
               UNION ALL
               SELECT L.order_id, L.window_start, 'not' AS how
               FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTE))) L
               WHERE NOT EXISTS (
                 SELECT * FROM (
                   SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts), INTERVAL '5' MINUTE))) R
                 WHERE L.order_id = R.order_id AND L.window_start = R.window_start
                   AND L.window_end = R.window_end);",
        duckdb: "SELECT order_id, win_floor(ts, 300000), 'in' FROM orders L
                 WHERE order_id IN (SELECT order_id FROM shipments R
                                    WHERE win_floor(R.ts, 300000) = win_floor(L.ts, 300000))
                 UNION ALL
                 SELECT order_id, win_floor(ts, 300000), 'not' FROM orders L
                 WHERE NOT EXISTS (SELECT 1 FROM shipments R WHERE R.order_id = L.order_id
                                   AND win_floor(R.ts, 300000) = win_floor(L.ts, 300000))",
    },
    Case {
        name: "exists_correlated_by_comparisons",
        // Flink decorrelates EXISTS with any conditions into a semi or
        // anti join; an OR with a NULL outer column still finds rows.
        weir: "SELECT o.order_id, 'e' AS how FROM orders o
               WHERE EXISTS (SELECT 1 FROM shipments s
                             WHERE s.order_id = o.order_id AND s.ts > o.ts + INTERVAL '2' MINUTE)
               UNION ALL
               SELECT o.order_id, 'n' FROM orders o
               WHERE NOT EXISTS (SELECT 1 FROM orders p
                                 WHERE p.user_id = o.user_id AND (p.qty > o.qty OR o.qty IS NULL))
               UNION ALL
               SELECT u.tier, 'u' FROM users u
               WHERE EXISTS (SELECT 1 FROM orders p WHERE p.qty * 100 < u.tier);",
        duckdb: "SELECT o.order_id, 'e' FROM orders o
                 WHERE EXISTS (SELECT 1 FROM shipments s
                               WHERE s.order_id = o.order_id AND s.ts > o.ts + INTERVAL 2 MINUTE)
                 UNION ALL
                 SELECT o.order_id, 'n' FROM orders o
                 WHERE NOT EXISTS (SELECT 1 FROM orders p
                                   WHERE p.user_id = o.user_id AND (p.qty > o.qty OR o.qty IS NULL))
                 UNION ALL
                 SELECT u.tier, 'u' FROM users u
                 WHERE EXISTS (SELECT 1 FROM orders p WHERE p.qty * 100 < u.tier)",
    },
    Case {
        name: "top_3_per_user",
        // weir ranks rows equal on the ORDER BY columns by the other
        // columns, ascending (docs/SQL.md); Flink by arrival.
        weir: "SELECT * FROM (
                 SELECT user_id, order_id, amount,
                        ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY amount DESC) AS rn
                 FROM orders)
               WHERE rn <= 3;",
        duckdb: "SELECT * FROM (
                   SELECT user_id, order_id, amount,
                          row_number() OVER (PARTITION BY user_id
                                             ORDER BY amount DESC, order_id) AS rn
                   FROM orders)
                 WHERE rn <= 3",
    },
    Case {
        name: "top_2_per_category_without_rank",
        weir: "SELECT category, order_id, qty FROM (
                 SELECT category, qty, order_id,
                        ROW_NUMBER() OVER (PARTITION BY category ORDER BY qty ASC) AS rn
                 FROM orders)
               WHERE rn < 3;",
        duckdb: "SELECT category, order_id, qty FROM (
                   SELECT category, qty, order_id,
                          row_number() OVER (PARTITION BY category
                                             ORDER BY qty ASC NULLS FIRST, order_id) AS rn
                   FROM orders)
                 WHERE rn < 3",
    },
    Case {
        name: "dedup_first_row",
        weir: "SELECT user_id, order_id, ts FROM (
                 SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts ASC) AS rn
                 FROM orders)
               WHERE rn = 1;",
        duckdb: "SELECT user_id, order_id, ts FROM (
                   SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY ts) AS rn
                   FROM orders)
                 WHERE rn = 1",
    },
    Case {
        name: "dedup_last_row",
        weir: "SELECT user_id, order_id, ts FROM (
                 SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) AS rn
                 FROM orders)
               WHERE rn = 1;",
        duckdb: "SELECT user_id, order_id, ts FROM (
                   SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY ts DESC) AS rn
                   FROM orders)
                 WHERE rn = 1",
    },
    Case {
        name: "view",
        weir: "CREATE VIEW big AS
                 SELECT user_id, amount * qty AS total, category FROM orders WHERE qty IS NOT NULL;
               SELECT b.user_id, u.name, SUM(b.total) AS total, COUNT(*) AS n
               FROM big b JOIN users u ON b.user_id = u.user_id
               GROUP BY b.user_id, u.name;",
        duckdb: "CREATE VIEW big AS
                   SELECT user_id, amount * qty AS total, category FROM orders WHERE qty IS NOT NULL;
                 SELECT b.user_id, u.name, SUM(b.total), COUNT(*)
                 FROM big b JOIN users u ON b.user_id = u.user_id
                 GROUP BY b.user_id, u.name",
    },
    Case {
        name: "numeric_functions",
        // ROUND and TRUNCATE of DECIMALs agree (half away from zero, the
        // type's scale the digits kept); of DOUBLEs they are not compared
        // (Flink rounds the double's shortest decimal text, DuckDB the
        // binary value: they differ on ties such as 1.005).
        weir: "SELECT order_id, ROUND(amount, 1) AS r1, ROUND(amount) AS r0,
                      ROUND(amount, -2) AS rm2, TRUNCATE(amount, 1) AS t1, TRUNCATE(amount) AS t0,
                      FLOOR(amount) AS fl, CEILING(amount) AS ce, CEIL(amount) AS ce2,
                      ROUND(qty, -1) AS rq, POWER(qty, 2) AS p2, SQRT(ABS(qty)) AS sq,
                      LN(order_id) AS ln, LOG10(order_id) AS l10, LOG2(order_id) AS l2,
                      LOG(2, order_id) AS lb, EXP(qty / 10) AS ex, SIGN(qty) AS sg,
                      DEGREES(RADIANS(qty)) AS dg, PI() * qty AS pq, SIN(qty) AS sn,
                      ATAN2(qty, 2) AS at
               FROM orders;",
        duckdb: "SELECT order_id, round(amount, 1), round(amount), round(amount, -2),
                        trunc(amount, 1), trunc(amount), floor(amount), ceil(amount), ceil(amount),
                        round(qty, -1), power(qty, 2), sqrt(abs(qty)),
                        ln(order_id), log10(order_id), log2(order_id), log(2, order_id),
                        exp(qty // 10), sign(qty), degrees(radians(qty)), pi() * qty, sin(qty),
                        atan2(qty, 2)
                 FROM orders",
    },
    Case {
        name: "comparison_functions",
        // Flink's GREATEST and LEAST are NULL if an argument is; DuckDB's
        // skip NULLs.
        weir: "SELECT order_id, GREATEST(qty, 5) AS g, LEAST(amount, qty) AS l,
                      GREATEST(note, category) AS gs, NULLIF(category, 'books') AS nc,
                      NULLIF(qty, 0) AS nq, IF(qty > 10, 'big', note) AS i,
                      IF(qty IS NULL, amount, qty * 1.5) AS i2,
                      qty IS DISTINCT FROM 4 AS d1, category IS NOT DISTINCT FROM NULL AS d2,
                      (qty > 10) IS UNKNOWN AS u, (qty > 10) IS NOT UNKNOWN AS nu
               FROM orders;",
        duckdb: "SELECT order_id, CASE WHEN qty IS NOT NULL THEN greatest(qty, 5) END,
                        CASE WHEN qty IS NOT NULL THEN least(amount, qty) END,
                        CASE WHEN category IS NOT NULL AND note IS NOT NULL
                             THEN greatest(note, category) END,
                        nullif(category, 'books'), nullif(qty, 0), if(qty > 10, 'big', note),
                        if(qty IS NULL, amount, qty * 1.5),
                        qty IS DISTINCT FROM 4, category IS NOT DISTINCT FROM NULL,
                        (qty > 10) IS NULL, (qty > 10) IS NOT NULL
                 FROM orders",
    },
    Case {
        name: "string_functions_padding_trimming_splitting",
        // Bracketed where a result may start with a blank (the printed
        // table right-aligns its cells). DuckDB's LOCATE has no start
        // position: its side finds in the rest of the string. Flink's
        // ASCII is the first UTF-8 byte as a signed Java byte (`É` is
        // -61); DuckDB's the code point.
        weir: "SELECT order_id, '[' || LPAD(note, 14, '*-') || ']' AS lp,
                      RPAD(user_id, 5, '.') AS rp, LPAD(note, 4, 'x') AS lp4,
                      LTRIM(CONCAT('  ', note, '  ')) || ']' AS lt,
                      '[' || RTRIM(CONCAT('  ', note, '  ')) AS rt,
                      '[' || TRIM(BOTH 'e' FROM note) || ']' AS tb,
                      TRIM(LEADING 'u' FROM user_id) AS tl, TRIM(TRAILING 'sd' FROM category) AS tt,
                      '[' || REVERSE(note) || ']' AS rv, REPEAT(category, 2) AS rp2,
                      LEFT(note, 3) AS lf, '[' || RIGHT(note, 4) || ']' AS rg,
                      LOCATE('e', note) AS lc, LOCATE('e', note, 3) AS lc3, INSTR(note, 'a') AS ins,
                      CONCAT_WS('/', user_id, category, note) AS cw,
                      SPLIT_INDEX(note, ' ', 1) AS sp, SPLIT_INDEX(note, ' ', 0) AS sp0,
                      ASCII(note) AS asc, CHR(qty + 65) AS ch,
                      BIN(order_id) AS bn, HEX(order_id) AS hx, HEX(user_id) AS hu
               FROM orders;",
        duckdb: "SELECT order_id, '[' || lpad(note, 14, '*-') || ']', rpad(user_id, 5, '.'),
                        lpad(note, 4, 'x'), ltrim('  ' || note || '  ') || ']',
                        '[' || rtrim('  ' || note || '  '), '[' || trim(note, 'e') || ']',
                        ltrim(user_id, 'u'), rtrim(category, 'sd'),
                        '[' || reverse(note) || ']', repeat(category, 2),
                        left(note, 3), '[' || right(note, 4) || ']',
                        strpos(note, 'e'),
                        CASE WHEN strpos(substr(note, 3), 'e') = 0 THEN 0
                             ELSE strpos(substr(note, 3), 'e') + 2 END,
                        instr(note, 'a'), concat_ws('/', user_id, category, note),
                        string_split(note, ' ')[2], string_split(note, ' ')[1],
                        CASE WHEN ascii(note) < 128 THEN ascii(note)
                             WHEN ascii(note) < 2048 THEN 192 + ascii(note) // 64 - 256
                             ELSE 224 + ascii(note) // 4096 - 256 END,
                        chr(qty + 65),
                        bin(order_id), hex(order_id), hex(user_id)
                 FROM orders",
    },
    Case {
        name: "regexp_functions",
        // Flink's REGEXP_EXTRACT is NULL when nothing matches (DuckDB's:
        // ''); its REGEXP_REPLACE replaces every match (DuckDB's: the
        // first, unless 'g').
        weir: "SELECT order_id, REGEXP_EXTRACT(note, '([a-z]+) ([a-z]+)', 2) AS w2,
                      REGEXP_EXTRACT(user_id, '\\d+') AS num, REGEXP_EXTRACT(category, 'o(o|a)') AS oo,
                      REGEXP_REPLACE(note, '[aeiou]', '_') AS vow,
                      REGEXP(note, '^[a-z ]+$') AS lower_only, note REGEXP 'a.t' AS at
               FROM orders;",
        duckdb: "SELECT order_id,
                        CASE WHEN regexp_matches(note, '([a-z]+) ([a-z]+)')
                             THEN regexp_extract(note, '([a-z]+) ([a-z]+)', 2) END,
                        CASE WHEN regexp_matches(user_id, '\\d+')
                             THEN regexp_extract(user_id, '\\d+') END,
                        CASE WHEN regexp_matches(category, 'o(o|a)')
                             THEN regexp_extract(category, 'o(o|a)') END,
                        regexp_replace(note, '[aeiou]', '_', 'g'),
                        regexp_matches(note, '^[a-z ]+$'), regexp_matches(note, 'a.t')
                 FROM orders",
    },
    Case {
        name: "time_functions_add_diff_unix",
        // TIMESTAMPDIFF counts whole units toward zero (DuckDB's
        // date_sub; its datediff counts boundaries crossed).
        weir: "SELECT order_id, TIMESTAMPADD(MINUTE, qty, ts) AS tm, TIMESTAMPADD(MONTH, 1, ts) AS tmo,
                      TIMESTAMPADD(DAY, -2, CAST(ts AS DATE)) AS td,
                      TIMESTAMPDIFF(SECOND, TIMESTAMP '2024-01-01 01:00:00', ts) AS ds,
                      TIMESTAMPDIFF(HOUR, ts, TIMESTAMP '2024-01-01 00:30:00') AS dh,
                      UNIX_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')) AS ux,
                      FROM_UNIXTIME(order_id * 3600) AS fu,
                      TO_DATE(DATE_FORMAT(ts, 'yyyy-MM-dd')) AS dt,
                      TO_TIMESTAMP(DATE_FORMAT(ts, 'dd/MM/yyyy HH:mm'), 'dd/MM/yyyy HH:mm') AS tt,
                      ts < CURRENT_TIMESTAMP AS past, CURRENT_DATE > DATE '2024-01-31' AS today,
                      ts - INTERVAL '1' MONTH AS pm, CAST(ts AS DATE) + INTERVAL '1-1' YEAR TO MONTH AS dy
               FROM orders;",
        duckdb: "SELECT order_id, ts + to_minutes(qty), ts + INTERVAL 1 MONTH,
                        CAST(ts AS DATE) - 2,
                        date_sub('second', TIMESTAMP '2024-01-01 01:00:00', ts),
                        date_sub('hour', ts, TIMESTAMP '2024-01-01 00:30:00'),
                        CAST(epoch(date_trunc('second', ts)) AS BIGINT),
                        strftime(make_timestamp(order_id * 3600 * 1000000), '%Y-%m-%d %H:%M:%S'),
                        CAST(ts AS DATE), date_trunc('minute', ts), true, true,
                        ts - INTERVAL 1 MONTH, CAST(CAST(ts AS DATE) + INTERVAL 13 MONTH AS DATE)
                 FROM orders",
    },
    Case {
        name: "with_ctes",
        // WITH tables are views seen by the one query; a later one reads
        // an earlier one, and a name shadows a table's.
        weir: "WITH big AS (SELECT user_id, amount * qty AS total FROM orders WHERE qty > 2),
                    per_user AS (SELECT user_id, SUM(total) AS total, COUNT(*) AS n FROM big GROUP BY user_id),
                    users AS (SELECT user_id, name FROM users WHERE name IS NOT NULL)
               SELECT p.user_id, u.name, p.total, p.n FROM per_user p JOIN users u ON p.user_id = u.user_id;",
        duckdb: "WITH big AS (SELECT user_id, amount * qty AS total FROM orders WHERE qty > 2),
                      per_user AS (SELECT user_id, SUM(total) AS total, COUNT(*) AS n FROM big GROUP BY user_id),
                      users2 AS (SELECT user_id, name FROM users WHERE name IS NOT NULL)
                 SELECT p.user_id, u.name, p.total, p.n FROM per_user p JOIN users2 u ON p.user_id = u.user_id",
    },
    Case {
        name: "order_by_limit_offset",
        // A bare SELECT's final table ordered and cut (ties broken by the
        // order id, so the rows are one set).
        weir: "SELECT order_id, amount FROM orders WHERE amount IS NOT NULL
               ORDER BY amount DESC, order_id LIMIT 7 OFFSET 2;",
        duckdb: "SELECT order_id, amount FROM orders WHERE amount IS NOT NULL
                 ORDER BY amount DESC, order_id LIMIT 7 OFFSET 2",
    },
    Case {
        name: "top_n_in_a_subquery",
        // ORDER BY .. LIMIT inside a query: a Top-N over the whole stream
        // (an updating result), then aggregated.
        weir: "SELECT COUNT(*) AS n, SUM(qty) AS q FROM (
                 SELECT order_id, qty FROM orders WHERE qty IS NOT NULL ORDER BY qty DESC, order_id LIMIT 10);",
        duckdb: "SELECT COUNT(*), SUM(qty) FROM (
                   SELECT order_id, qty FROM orders WHERE qty IS NOT NULL ORDER BY qty DESC, order_id LIMIT 10)",
    },
    Case {
        name: "in_and_exists_subqueries",
        // Semi joins: each order once however many rows the subquery has;
        // a NULL user id is never IN.
        weir: "SELECT o.order_id, o.user_id FROM orders o
               WHERE o.user_id IN (SELECT user_id FROM users WHERE tier >= 2)
                 AND EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.order_id)
                 AND o.qty > 1;",
        duckdb: "SELECT o.order_id, o.user_id FROM orders o
                 WHERE o.user_id IN (SELECT user_id FROM users WHERE tier >= 2)
                   AND EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.order_id)
                   AND o.qty > 1",
    },
    Case {
        name: "not_exists_anti_join",
        // An anti join: orders without a shipment, correlated through an
        // expression of the outer row.
        weir: "SELECT o.order_id, o.category FROM orders o
               WHERE NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.order_id + 0 AND s.ship_id > 0);",
        duckdb: "SELECT o.order_id, o.category FROM orders o
                 WHERE NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.order_id + 0 AND s.ship_id > 0)",
    },
    Case {
        name: "union_intersect_except",
        // Set operations (distinct): NULLs compare equal, as in grouping.
        weir: "SELECT user_id, category FROM orders WHERE qty > 3
               UNION SELECT user_id, note FROM orders WHERE qty < 2
               EXCEPT SELECT user_id, category FROM orders WHERE amount > 50
               INTERSECT SELECT user_id, category FROM orders WHERE order_id % 2 = 0;",
        duckdb: "SELECT user_id, category FROM orders WHERE qty > 3
                 UNION SELECT user_id, note FROM orders WHERE qty < 2
                 EXCEPT SELECT user_id, category FROM orders WHERE amount > 50
                 INTERSECT SELECT user_id, category FROM orders WHERE order_id % 2 = 0",
    },
    Case {
        name: "intersect_all_except_all",
        // Multiplicities: a row `min(l, r)` times in INTERSECT ALL and
        // `l - r` times in EXCEPT ALL (NULLs equal), also nested, over an
        // updating input (a GROUP BY's result) and grouped again.
        weir: "SELECT user_id, category, COUNT(*) AS n FROM (
                 SELECT user_id, category FROM orders WHERE qty > 3
                 INTERSECT ALL SELECT user_id, category FROM orders WHERE amount > 20
                 EXCEPT ALL (SELECT user_id, category FROM orders WHERE order_id % 3 = 0
                             EXCEPT ALL SELECT user_id, MAX(category) FROM orders GROUP BY user_id)
               ) GROUP BY user_id, category;",
        duckdb: "SELECT user_id, category, COUNT(*) AS n FROM (
                   SELECT user_id, category FROM orders WHERE qty > 3
                   INTERSECT ALL SELECT user_id, category FROM orders WHERE amount > 20
                   EXCEPT ALL (SELECT user_id, category FROM orders WHERE order_id % 3 = 0
                               EXCEPT ALL SELECT user_id, MAX(category) FROM orders GROUP BY user_id)
                 ) GROUP BY user_id, category",
    },
    Case {
        name: "over_aggregates_range_and_rows",
        // OVER aggregation on event time: a RANGE frame (peers of equal
        // time included), the default RANGE UNBOUNDED frame, and a ROWS
        // frame (rows of equal time ordered by their other columns, the
        // order id first: DuckDB's ORDER BY ts, order_id).
        weir: "SELECT order_id, user_id,
                      COUNT(*) OVER w10 AS n10,
                      SUM(qty) OVER w10 AS q10,
                      MAX(amount) OVER w10 AS m10
               FROM orders
               WINDOW w10 AS (PARTITION BY user_id ORDER BY ts
                              RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW);",
        duckdb: "SELECT order_id, user_id,
                        COUNT(*) OVER w10, SUM(qty) OVER w10, MAX(amount) OVER w10
                 FROM orders
                 WINDOW w10 AS (PARTITION BY user_id ORDER BY ts
                                RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW)",
    },
    Case {
        name: "over_aggregates_inline_windows",
        weir: "SELECT order_id,
                      COUNT(*) OVER (PARTITION BY category ORDER BY ts) AS n,
                      SUM(amount) OVER (PARTITION BY category ORDER BY ts) AS total
               FROM orders WHERE category IS NOT NULL;",
        duckdb: "SELECT order_id,
                        COUNT(*) OVER (PARTITION BY category ORDER BY ts),
                        SUM(amount) OVER (PARTITION BY category ORDER BY ts)
                 FROM orders WHERE category IS NOT NULL",
    },
    Case {
        name: "over_aggregates_rows_frame",
        weir: "SELECT order_id,
                      SUM(qty) OVER (PARTITION BY user_id ORDER BY ts
                                     ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS q3,
                      COUNT(qty) OVER (PARTITION BY user_id ORDER BY ts
                                       ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS n3
               FROM orders;",
        duckdb: "SELECT order_id,
                        SUM(qty) OVER (PARTITION BY user_id ORDER BY ts, order_id
                                       ROWS BETWEEN 2 PRECEDING AND CURRENT ROW),
                        COUNT(qty) OVER (PARTITION BY user_id ORDER BY ts, order_id
                                         ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)
                 FROM orders",
    },
    Case {
        name: "rollup_cube_grouping_sets",
        // One group aggregation per grouping set, NULL for what a set does
        // not group by; GROUPING() tells them apart from NULL keys.
        weir: "SELECT category, user_id, COUNT(*) AS n, SUM(qty) AS q,
                      GROUPING(category, user_id) AS g
               FROM orders GROUP BY ROLLUP (category, user_id)
               UNION ALL
               SELECT category, note, COUNT(*), SUM(qty), GROUPING(category, note)
               FROM orders GROUP BY CUBE (category, note)
               UNION ALL
               SELECT category, CAST(NULL AS STRING), COUNT(*), SUM(qty), GROUPING(category)
               FROM orders GROUP BY GROUPING SETS ((category), ());",
        duckdb: "SELECT category, user_id, COUNT(*), SUM(qty), GROUPING(category, user_id)
                 FROM orders GROUP BY ROLLUP (category, user_id)
                 UNION ALL
                 SELECT category, note, COUNT(*), SUM(qty), GROUPING(category, note)
                 FROM orders GROUP BY CUBE (category, note)
                 UNION ALL
                 SELECT category, CAST(NULL AS VARCHAR), COUNT(*), SUM(qty), GROUPING(category)
                 FROM orders GROUP BY GROUPING SETS ((category), ())",
    },
    Case {
        name: "variance_and_stddev",
        // In the argument's type, as Flink: a DOUBLE's as is, an INT's
        // truncated, a DECIMAL(p, s)'s DECIMAL(38, max(6, s)) as AVG's;
        // NULL for a sample of one row.
        weir: "SELECT user_id, STDDEV_POP(CAST(qty AS DOUBLE)) AS sp, STDDEV_SAMP(CAST(qty AS DOUBLE)) AS ss,
                      VAR_POP(CAST(amount AS DOUBLE)) AS vp, VARIANCE(CAST(amount AS DOUBLE)) AS vs,
                      STDDEV(qty) AS si, STDDEV_POP(amount) AS sd, VAR_SAMP(amount) AS vd
               FROM orders GROUP BY user_id;",
        duckdb: "SELECT user_id, stddev_pop(CAST(qty AS DOUBLE)), stddev_samp(CAST(qty AS DOUBLE)),
                        var_pop(CAST(amount AS DOUBLE)), var_samp(CAST(amount AS DOUBLE)),
                        CAST(trunc(stddev_samp(qty)) AS INTEGER),
                        CAST(stddev_pop(amount) AS DECIMAL(38, 6)),
                        CAST(var_samp(amount) AS DECIMAL(38, 6))
                 FROM orders GROUP BY user_id",
    },
    Case {
        name: "temporal_join_event_time",
        // Each order with the version of its order id's shipment valid at
        // the order's time (DuckDB's ASOF join): shipments is a versioned
        // table (PRIMARY KEY and WATERMARK); LEFT keeps orders without one.
        weir: "SELECT o.order_id, o.user_id, s.ship_id
               FROM orders AS o LEFT JOIN shipments FOR SYSTEM_TIME AS OF o.ts AS s
               ON o.order_id = s.order_id;",
        duckdb: "SELECT o.order_id, o.user_id, s.ship_id
                 FROM orders o ASOF LEFT JOIN shipments s
                 ON o.order_id = s.order_id AND o.ts >= s.ts",
    },
    Case {
        name: "window_top_n",
        // Flink's window Top-N: the 3 users of most orders per 10-minute
        // window (ties by the other columns), emitted when the window ends.
        weir: "SELECT window_start, user_id, n, rn FROM (
                 SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end
                                              ORDER BY n DESC, user_id) AS rn
                 FROM (SELECT window_start, window_end, user_id, COUNT(*) AS n
                       FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
                       GROUP BY window_start, window_end, user_id))
               WHERE rn <= 3;",
        duckdb: "SELECT window_start, user_id, n, rn FROM (
                   SELECT *, row_number() OVER (PARTITION BY window_start ORDER BY n DESC, user_id) AS rn
                   FROM (SELECT win_floor(ts, 600000) AS window_start, user_id, COUNT(*) AS n
                         FROM orders GROUP BY 1, 2))
                 WHERE rn <= 3",
    },
    Case {
        name: "window_top_n_by_renamed_bounds",
        // The window Top-N over a window aggregation whose bounds a
        // projection renamed (Flink follows them as window properties).
        weir: "SELECT ws, user_id, n, rn FROM (
                 SELECT *, ROW_NUMBER() OVER (PARTITION BY ws, we ORDER BY n DESC, user_id) AS rn
                 FROM (SELECT window_start AS ws, window_end AS we, user_id, COUNT(*) AS n
                       FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTE,
                                      INTERVAL '20' MINUTE))
                       GROUP BY window_start, window_end, user_id))
               WHERE rn <= 2;",
        duckdb: "SELECT ws, user_id, n, rn FROM (
                   SELECT *, row_number() OVER (PARTITION BY ws ORDER BY n DESC, user_id) AS rn
                   FROM (SELECT win_floor(ts, 600000) - k * INTERVAL 10 MINUTE AS ws, user_id,
                                COUNT(*) AS n
                         FROM orders, range(2) AS r(k) GROUP BY 1, 2))
                 WHERE rn <= 2",
    },
    Case {
        name: "window_full_outer_join",
        // A window join emits when the window ends, so an outer one is
        // append-only: each unmatched row once, padded with NULLs.
        weir: "SELECT L.order_id, L.window_start, R.ship_id, R.order_id AS shipped
               FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts),
                                                INTERVAL '10' MINUTES))) L
               FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts),
                                                INTERVAL '10' MINUTES))) R
               ON L.order_id = R.order_id AND L.window_start = R.window_start
                  AND L.window_end = R.window_end;",
        duckdb: "SELECT o.order_id, win_floor(o.ts, 600000), s.ship_id, s.order_id
                 FROM orders o FULL JOIN shipments s
                   ON o.order_id = s.order_id
                  AND win_floor(o.ts, 600000) = win_floor(s.ts, 600000)",
    },
    Case {
        name: "values_joined_with_a_table",
        // VALUES as a bounded table with named columns, joined to orders.
        weir: "SELECT o.order_id, c.label
               FROM orders o JOIN (VALUES ('books', 'first'), ('games', 'second'), ('food', CAST(NULL AS STRING)))
                 AS c(category, label) ON o.category = c.category;",
        duckdb: "SELECT o.order_id, c.label
                 FROM orders o JOIN (VALUES ('books', 'first'), ('games', 'second'), ('food', CAST(NULL AS VARCHAR)))
                   AS c(category, label) ON o.category = c.category",
    },
    Case {
        name: "casts_to_text_of_a_length_and_decimal_text_with_an_exponent",
        // Flink's CAST to VARCHAR(n) cuts the text to n characters and to
        // CHAR(n) also pads it with spaces (DuckDB's does neither: its side
        // says so with left and rpad); bracketed, as a printed cell's
        // blanks would not show. A DECIMAL's text may have an exponent.
        weir: "SELECT order_id, CAST(note AS VARCHAR(4)) AS n4,
                      '[' || CAST(category AS CHAR(6)) || ']' AS c6,
                      CAST(order_id AS VARCHAR(1)) AS o1,
                      CAST(CAST(qty AS STRING) || 'e-1' AS DECIMAL(6, 2)) AS q,
                      TRY_CAST('-1.5E2' AS DECIMAL(6, 2)) AS m
               FROM orders;",
        duckdb: "SELECT order_id, left(note, 4), '[' || rpad(category, 6, ' ') || ']',
                        left(CAST(order_id AS VARCHAR), 1),
                        CAST(CAST(qty AS VARCHAR) || 'e-1' AS DECIMAL(6, 2)),
                        CAST('-1.5E2' AS DECIMAL(6, 2))
                 FROM orders",
    },
    Case {
        name: "sum_over_an_updating_input_whose_values_are_retracted",
        // A user's x is its one amount, replaced by NULL once it has a
        // second order: SUM over those updates is NULL where every value
        // in it was retracted (Flink's SumWithRetractAggFunction), not 0.
        weir: "SELECT g, COUNT(*) AS n, SUM(x) AS s, AVG(x) AS a
               FROM (SELECT MOD(CHAR_LENGTH(user_id), 2) AS g, user_id,
                            CASE WHEN COUNT(*) > 1 THEN NULL ELSE MAX(amount) END AS x
                     FROM orders GROUP BY user_id)
               GROUP BY g;",
        duckdb: "SELECT g, COUNT(*), SUM(x), AVG(x)::DECIMAL(38, 6)
                 FROM (SELECT length(user_id) % 2 AS g, user_id,
                              CASE WHEN COUNT(*) > 1 THEN NULL ELSE MAX(amount) END AS x
                       FROM orders GROUP BY user_id)
                 GROUP BY g",
    },
    Case {
        name: "floor_and_ceil_to_calendar_units",
        // Flink's (Calcite's) FLOOR TO WEEK is the Sunday before (DuckDB's
        // date_trunc: the Monday), and CEIL TO WEEK or MONTH goes by the
        // day alone: a timestamp on a Sunday (the 1st) stays at its day's
        // midnight, any other moves to the next Sunday (month's 1st).
        weir: "SELECT order_id, FLOOR(ts TO WEEK) AS fw, CEIL(ts TO WEEK) AS cw,
                      FLOOR(ts TO MONTH) AS fm, CEIL(ts TO MONTH) AS cm,
                      FLOOR(ts TO QUARTER) AS fq, CEIL(ts TO YEAR) AS cy,
                      FLOOR(CAST(ts AS DATE) TO YEAR) AS dy
               FROM orders;",
        duckdb: "SELECT order_id,
                        CAST(CAST(ts AS DATE) - CAST(dayofweek(ts) AS INTEGER) AS TIMESTAMP),
                        CAST(CAST(ts AS DATE) - CAST(dayofweek(ts) AS INTEGER)
                             + CASE WHEN dayofweek(ts) > 0 THEN 7 ELSE 0 END AS TIMESTAMP),
                        date_trunc('month', ts),
                        CASE WHEN day(ts) > 1 THEN date_trunc('month', ts) + INTERVAL 1 MONTH
                             ELSE date_trunc('month', ts) END,
                        date_trunc('quarter', ts),
                        CASE WHEN month(ts) > 1 OR day(ts) > 1
                             THEN date_trunc('year', ts) + INTERVAL 1 YEAR
                             ELSE date_trunc('year', ts) END,
                        CAST(date_trunc('year', CAST(ts AS DATE)) AS DATE)
                 FROM orders",
    },
    Case {
        name: "text_compared_with_a_time_or_a_number",
        // Flink (Calcite's implicit coercion) casts text compared with a
        // timestamp, a date or a number to that type, as DuckDB casts a
        // string literal.
        weir: "SELECT order_id, ts >= '2024-01-01 02:30:00' AS late, qty > '5' AS many
               FROM orders
               WHERE CAST(ts AS DATE) = '2024-01-01'
                 AND ts BETWEEN '2024-01-01 01:00:30' AND '2024-01-01 03:30:00.5';",
        duckdb: "SELECT order_id, ts >= '2024-01-01 02:30:00', qty > '5'
                 FROM orders
                 WHERE CAST(ts AS DATE) = '2024-01-01'
                   AND ts BETWEEN '2024-01-01 01:00:30' AND '2024-01-01 03:30:00.5'",
    },
    Case {
        name: "top_n_over_a_group_aggregation",
        // A Top-N over an updating input (Flink's RetractableTopNFunction):
        // the users with the most orders, per category; ties by user, whose
        // NULL sorts first ascending in Flink (DuckDB's side says so).
        weir: "SELECT * FROM (
                 SELECT category, user_id, n, ROW_NUMBER() OVER (
                   PARTITION BY category ORDER BY n DESC, user_id) AS rn
                 FROM (SELECT category, user_id, COUNT(*) AS n FROM orders
                       GROUP BY category, user_id))
               WHERE rn <= 2;",
        duckdb: "SELECT * FROM (
                   SELECT category, user_id, n, row_number() OVER (
                     PARTITION BY category ORDER BY n DESC, user_id NULLS FIRST) AS rn
                   FROM (SELECT category, user_id, COUNT(*) AS n FROM orders
                         GROUP BY category, user_id))
                 WHERE rn <= 2",
    },
    Case {
        name: "order_by_limit_over_a_group_aggregation_in_a_query",
        // ORDER BY .. LIMIT inside a query is a Top-N, here over a GROUP
        // BY's updates, with NULLS LAST kept.
        weir: "SELECT user_id, s FROM (
                 SELECT user_id, SUM(qty) AS s FROM orders GROUP BY user_id
                 ORDER BY s ASC NULLS LAST, user_id LIMIT 4);",
        duckdb: "SELECT user_id, s FROM (
                   SELECT user_id, SUM(qty) AS s FROM orders GROUP BY user_id
                   ORDER BY s ASC NULLS LAST, user_id NULLS FIRST LIMIT 4)",
    },
    Case {
        name: "top_n_from_a_later_row",
        // Row numbers bounded from below (Flink's rankStart above 1): a
        // BETWEEN over an append-only input, an OFFSET over a GROUP BY.
        weir: "SELECT * FROM (
                 SELECT user_id, order_id, amount, ROW_NUMBER() OVER (
                   PARTITION BY user_id ORDER BY amount DESC) AS rn
                 FROM orders)
               WHERE rn BETWEEN 2 AND 3
               UNION ALL
               SELECT user_id, -1, s, -1 FROM (
                 SELECT user_id, SUM(amount) AS s FROM orders GROUP BY user_id
                 ORDER BY s DESC, user_id LIMIT 3 OFFSET 2);",
        duckdb: "SELECT * FROM (
                   SELECT user_id, order_id, amount, row_number() OVER (
                     PARTITION BY user_id ORDER BY amount DESC, order_id) AS rn
                   FROM orders)
                 WHERE rn BETWEEN 2 AND 3
                 UNION ALL
                 SELECT user_id, -1, s, -1 FROM (
                   SELECT user_id, SUM(amount) AS s FROM orders GROUP BY user_id
                   ORDER BY s DESC, user_id NULLS FIRST LIMIT 3 OFFSET 2)",
    },
    Case {
        name: "rank_and_dense_rank_top_n",
        // Peers (equal on the ORDER BY columns) share a rank, so a key may
        // keep more than N rows: RANK over an append-only input, the rank
        // selected; DENSE_RANK over a GROUP BY's updating result, a range
        // from rank 2, the rank not selected.
        weir: "SELECT user_id, order_id, qty, rk FROM (
                 SELECT user_id, qty, order_id,
                        RANK() OVER (PARTITION BY user_id ORDER BY qty DESC) AS rk
                 FROM orders)
               WHERE rk <= 3
               UNION ALL
               SELECT category, n, CAST(NULL AS INT), CAST(-1 AS BIGINT) FROM (
                 SELECT category, user_id, n,
                        DENSE_RANK() OVER (PARTITION BY category ORDER BY n) AS dr
                 FROM (SELECT category, user_id, COUNT(*) AS n FROM orders
                       GROUP BY category, user_id))
               WHERE dr BETWEEN 2 AND 3;",
        duckdb: "SELECT user_id, order_id, qty, rk FROM (
                   SELECT user_id, qty, order_id,
                          rank() OVER (PARTITION BY user_id ORDER BY qty DESC NULLS LAST) AS rk
                   FROM orders)
                 WHERE rk <= 3
                 UNION ALL
                 SELECT category, n, NULL, -1 FROM (
                   SELECT category, user_id, n,
                          dense_rank() OVER (PARTITION BY category ORDER BY n) AS dr
                   FROM (SELECT category, user_id, COUNT(*) AS n FROM orders
                         GROUP BY category, user_id))
                 WHERE dr BETWEEN 2 AND 3",
    },
    Case {
        name: "select_without_from",
        // Flink's SELECT without FROM: the expressions over one row.
        weir: "SELECT 1 + 1 AS two, UPPER('ab') AS u, 7 / 2 AS h, CHAR_LENGTH('héllo') AS n
               UNION ALL
               SELECT COUNT(*), MAX(user_id), 0, 0 FROM orders;",
        duckdb: "SELECT 1 + 1, upper('ab'), 7 // 2, length('héllo')
                 UNION ALL
                 SELECT COUNT(*), MAX(user_id), 0, 0 FROM orders",
    },
    Case {
        name: "scalar_subqueries",
        // Uncorrelated scalar subqueries in WHERE, SELECT and HAVING (AVG of
        // an INT truncates in Flink), and one cut to a row by LIMIT 1.
        weir: "SELECT order_id, qty, qty - (SELECT MIN(qty) FROM orders WHERE qty > 0) AS above
               FROM orders
               WHERE qty > (SELECT AVG(qty) FROM orders) + 7
                 AND amount < (SELECT amount FROM orders ORDER BY amount DESC LIMIT 1)
               UNION ALL
               SELECT -1, tier, COUNT(*) FROM users GROUP BY tier
               HAVING COUNT(*) >= (SELECT COUNT(*) FROM users WHERE tier = 1);",
        duckdb: "SELECT order_id, qty, qty - (SELECT MIN(qty) FROM orders WHERE qty > 0)
                 FROM orders
                 WHERE qty > (SELECT CAST(trunc(SUM(qty) / COUNT(qty)) AS INTEGER) FROM orders) + 7
                   AND amount < (SELECT amount FROM orders ORDER BY amount DESC LIMIT 1)
                 UNION ALL
                 SELECT -1, tier, COUNT(*) FROM users GROUP BY tier
                 HAVING COUNT(*) >= (SELECT COUNT(*) FROM users WHERE tier = 1)",
    },
    Case {
        name: "scalar_subqueries_of_one_row_without_aggregate",
        // A scalar subquery that selects a value of at most one row (a
        // lookup by a unique key), uncorrelated and correlated: Flink's
        // SINGLE_VALUE, NULL without a row (the users the orders name
        // but the users table lacks, a NULL user id).
        weir: "SELECT order_id,
                      (SELECT name FROM users WHERE users.user_id = orders.user_id) AS who,
                      qty - (SELECT tier FROM users WHERE user_id = 'u03') AS d,
                      (SELECT tier FROM users WHERE user_id = 'nobody') AS none
               FROM orders
               WHERE category <> (SELECT 'food' FROM users WHERE user_id = 'u01');",
        duckdb: "SELECT order_id,
                        (SELECT name FROM users WHERE users.user_id = orders.user_id),
                        qty - (SELECT tier FROM users WHERE user_id = 'u03'),
                        (SELECT tier FROM users WHERE user_id = 'nobody')
                 FROM orders
                 WHERE category <> (SELECT 'food' FROM users WHERE user_id = 'u01')",
    },
    Case {
        name: "not_in_subqueries",
        // SQL's NULL rules: a NULL user id is never NOT IN a non-empty
        // set; a set with a NULL (the users' tiers) keeps no row; an empty
        // set keeps every row, NULLs too. Uncorrelated [NOT] EXISTS.
        weir: "SELECT order_id, user_id FROM orders
               WHERE user_id NOT IN (SELECT user_id FROM users WHERE tier >= 2)
                 AND qty > 15
               UNION ALL
               SELECT order_id, user_id FROM orders WHERE qty NOT IN (SELECT tier FROM users)
               UNION ALL
               SELECT order_id, user_id FROM orders
               WHERE qty > 17 AND user_id NOT IN (SELECT user_id FROM users WHERE tier > 5)
               UNION ALL
               SELECT order_id, 'exists' FROM orders
               WHERE qty = 3 AND EXISTS (SELECT 1 FROM users WHERE tier = 2)
                 AND NOT EXISTS (SELECT 1 FROM users WHERE tier > 5);",
        duckdb: "SELECT order_id, user_id FROM orders
                 WHERE user_id NOT IN (SELECT user_id FROM users WHERE tier >= 2)
                   AND qty > 15
                 UNION ALL
                 SELECT order_id, user_id FROM orders WHERE qty NOT IN (SELECT tier FROM users)
                 UNION ALL
                 SELECT order_id, user_id FROM orders
                 WHERE qty > 17 AND user_id NOT IN (SELECT user_id FROM users WHERE tier > 5)
                 UNION ALL
                 SELECT order_id, 'exists' FROM orders
                 WHERE qty = 3 AND EXISTS (SELECT 1 FROM users WHERE tier = 2)
                   AND NOT EXISTS (SELECT 1 FROM users WHERE tier > 5)",
    },
    Case {
        name: "joins_without_keys",
        // No equality between the sides: a CROSS JOIN with a one-row
        // aggregate (a share of the total), a comma join and a LEFT join on
        // a range; every pair meets on one subtask.
        weir: "SELECT g.user_id, g.n, g.n * 1000 / a.total AS permille
               FROM (SELECT user_id, COUNT(*) AS n FROM orders GROUP BY user_id) g
               CROSS JOIN (SELECT COUNT(*) AS total FROM orders) a
               UNION ALL
               SELECT u.user_id, v.tier, 0 FROM users u, users v WHERE u.tier < v.tier
               UNION ALL
               SELECT u.user_id, s.order_id, 1 FROM users u
               LEFT JOIN shipments s ON s.order_id BETWEEN u.tier * 100 AND u.tier * 100 + 2;",
        duckdb: "SELECT g.user_id, g.n, g.n * 1000 // a.total
                 FROM (SELECT user_id, COUNT(*) AS n FROM orders GROUP BY user_id) g
                 CROSS JOIN (SELECT COUNT(*) AS total FROM orders) a
                 UNION ALL
                 SELECT u.user_id, v.tier, 0 FROM users u, users v WHERE u.tier < v.tier
                 UNION ALL
                 SELECT u.user_id, s.order_id, 1 FROM users u
                 LEFT JOIN shipments s ON s.order_id BETWEEN u.tier * 100 AND u.tier * 100 + 2",
    },
    Case {
        name: "top_n_ordered_by_an_aggregate_of_its_select",
        // ROW_NUMBER() ordered by an aggregate of the same grouped SELECT
        // (and a partition by an expression), as Flink takes it.
        weir: "SELECT user_id, category, total FROM (
                 SELECT user_id, category, SUM(amount) AS total,
                        ROW_NUMBER() OVER (PARTITION BY UPPER(user_id)
                                           ORDER BY SUM(amount) DESC) AS rn
                 FROM orders GROUP BY user_id, category)
               WHERE rn <= 2;",
        duckdb: "SELECT user_id, category, total FROM (
                   SELECT user_id, category, SUM(amount) AS total,
                          row_number() OVER (PARTITION BY upper(user_id)
                                             ORDER BY SUM(amount) DESC, category NULLS FIRST) AS rn
                   FROM orders GROUP BY user_id, category)
                 WHERE rn <= 2",
    },
    Case {
        name: "correlated_scalar_subqueries",
        // Correlated through equalities, decorrelated as Flink does: the
        // subquery's aggregate per key, LEFT JOINed on it; a key without
        // rows gets NULL, or 0 from a COUNT.
        weir: "SELECT o.order_id, o.qty,
                      (SELECT COUNT(*) FROM shipments s WHERE s.order_id = o.order_id) AS ns
               FROM orders o
               WHERE o.qty > (SELECT AVG(o2.qty) FROM orders AS o2
                              WHERE o2.user_id = o.user_id AND o2.category = o.category) + 3
               UNION ALL
               SELECT -1, u.tier, (SELECT MAX(o.order_id) FROM orders o
                                   WHERE o.user_id = u.user_id AND o.qty > 18)
               FROM users u
               UNION ALL
               SELECT o.order_id, u.tier,
                      (SELECT COUNT(*) FROM shipments s WHERE s.order_id = o.order_id)
               FROM users u, orders o WHERE u.user_id = o.user_id AND o.qty > 17;",
        duckdb: "SELECT o.order_id, o.qty,
                        (SELECT COUNT(*) FROM shipments s WHERE s.order_id = o.order_id)
                 FROM orders o
                 WHERE o.qty > (SELECT CAST(trunc(SUM(o2.qty) / COUNT(o2.qty)) AS INTEGER)
                                FROM orders AS o2
                                WHERE o2.user_id = o.user_id AND o2.category = o.category) + 3
                 UNION ALL
                 SELECT -1, u.tier, (SELECT MAX(o.order_id) FROM orders o
                                     WHERE o.user_id = u.user_id AND o.qty > 18)
                 FROM users u
                 UNION ALL
                 SELECT o.order_id, u.tier,
                        (SELECT COUNT(*) FROM shipments s WHERE s.order_id = o.order_id)
                 FROM users u, orders o WHERE u.user_id = o.user_id AND o.qty > 17",
    },
    Case {
        name: "correlated_in_and_not_in",
        // IN and NOT IN correlated through an equality: the semi (anti)
        // join on the value and the key; NOT IN's NULL rules per key (an
        // order whose user has no orders of qty 19 keeps it; a NULL
        // among them drops it).
        weir: "SELECT o.order_id FROM orders o
               WHERE o.qty IN (SELECT o2.qty + 1 FROM orders o2
                               WHERE o2.user_id = o.user_id AND o2.category = 'books')
                 AND o.amount > 900
               UNION ALL
               SELECT -o.order_id FROM orders o
               WHERE o.amount > 990
                 AND o.qty NOT IN (SELECT o2.qty FROM orders o2
                                   WHERE o2.user_id = o.user_id AND o2.amount < 3);",
        duckdb: "SELECT o.order_id FROM orders o
                 WHERE o.qty IN (SELECT o2.qty + 1 FROM orders o2
                                 WHERE o2.user_id = o.user_id AND o2.category = 'books')
                   AND o.amount > 900
                 UNION ALL
                 SELECT -o.order_id FROM orders o
                 WHERE o.amount > 990
                   AND o.qty NOT IN (SELECT o2.qty FROM orders o2
                                     WHERE o2.user_id = o.user_id AND o2.amount < 3)",
    },
    Case {
        name: "tpch_style_subqueries_and_joins",
        // As TPC-H writes them: a comma join with an IN (SELECT .. GROUP BY
        // .. HAVING) (Q18), EXISTS correlated through bare column names
        // (Q4), an IN whose subquery has an IN and a scalar subquery of
        // its own (Q20), and a join whose only equality is in every
        // disjunct of an OR (Q19).
        weir: "SELECT o.order_id, u.name, o.qty FROM orders o, users u
               WHERE o.user_id = u.user_id AND o.order_id IN (
                 SELECT order_id FROM orders GROUP BY order_id HAVING SUM(qty) > 18)
               UNION ALL
               SELECT ship_id, 'q4', 0 FROM shipments
               WHERE ship_id < 3000 AND EXISTS (SELECT 1 FROM users WHERE tier = MOD(ship_id, 7))
               UNION ALL
               SELECT 0, name, tier FROM users WHERE user_id IN (
                 SELECT user_id FROM orders WHERE order_id IN (
                   SELECT order_id FROM shipments WHERE ship_id > 20000)
                 AND qty > (SELECT AVG(qty) FROM orders))
               UNION ALL
               SELECT o.order_id, 'q19', s.ship_id FROM orders o, shipments s
               WHERE (o.order_id = s.order_id AND o.qty = 1 AND o.category = 'books')
                  OR (o.order_id = s.order_id AND o.qty = 2 AND s.ship_id > 100);",
        duckdb: "SELECT o.order_id, u.name, o.qty FROM orders o, users u
                 WHERE o.user_id = u.user_id AND o.order_id IN (
                   SELECT order_id FROM orders GROUP BY order_id HAVING SUM(qty) > 18)
                 UNION ALL
                 SELECT ship_id, 'q4', 0 FROM shipments
                 WHERE ship_id < 3000 AND EXISTS (SELECT 1 FROM users WHERE tier = ship_id % 7)
                 UNION ALL
                 SELECT 0, name, tier FROM users WHERE user_id IN (
                   SELECT user_id FROM orders WHERE order_id IN (
                     SELECT order_id FROM shipments WHERE ship_id > 20000)
                   AND qty > (SELECT CAST(trunc(SUM(qty) / COUNT(qty)) AS INTEGER) FROM orders))
                 UNION ALL
                 SELECT o.order_id, 'q19', s.ship_id FROM orders o, shipments s
                 WHERE (o.order_id = s.order_id AND o.qty = 1 AND o.category = 'books')
                    OR (o.order_id = s.order_id AND o.qty = 2 AND s.ship_id > 100)",
    },
    Case {
        name: "lag_over_event_time",
        // LAG in an OVER window ordered by the time attribute: the value
        // `offset` rows before in the partition, the default (NULL unless
        // given) before its first rows; beside an OVER aggregate.
        weir: "SELECT order_id, qty, LAG(qty) OVER w AS prev, LAG(amount, 2, -1.00) OVER w AS prev2,
                      qty - LAG(qty, 1, 0) OVER w AS delta, COUNT(*) OVER w AS n
               FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts);",
        duckdb: "SELECT order_id, qty, lag(qty) OVER w, lag(amount, 2, -1.00) OVER w,
                        qty - lag(qty, 1, 0) OVER w, COUNT(*) OVER w
                 FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts, order_id)",
    },
    Case {
        name: "lead_over_event_time",
        // LEAD: the value `offset` rows after in the partition, the
        // default (NULL unless given) past its last rows, which are let go
        // when the input ends; beside LAG and an OVER aggregate.
        weir: "SELECT order_id, qty, LEAD(qty) OVER w AS next, LEAD(amount, 2, -1.00) OVER w AS next2,
                      LEAD(ts, 0) OVER w AS same, LAG(qty) OVER w AS prev,
                      LEAD(qty, 1, 0) OVER w - qty AS delta, SUM(qty) OVER w AS s
               FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts);",
        duckdb: "SELECT order_id, qty, lead(qty) OVER w, lead(amount, 2, -1.00) OVER w,
                        lead(ts, 0) OVER w, lag(qty) OVER w,
                        lead(qty, 1, 0) OVER w - qty, SUM(qty) OVER w
                 FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts, order_id)",
    },
    Case {
        name: "in_subqueries_as_values",
        // [NOT] IN (SELECT ..) and [NOT] EXISTS where no semi join can
        // take them (a SELECT item, inside an OR), with SQL's NULLs: unknown for a NULL operand
        // or a set holding a NULL (the users' tiers), FALSE over an empty
        // set.
        weir: "SELECT order_id, user_id IN (SELECT user_id FROM users WHERE tier = 2) AS t2,
                      qty NOT IN (SELECT tier FROM users) AS nt,
                      qty IN (SELECT tier FROM users WHERE tier > 5) AS never,
                      EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = orders.order_id) AS shipped
               FROM orders
               WHERE order_id < 40
                  OR qty IN (SELECT tier * 6 FROM users WHERE tier IS NOT NULL) AND amount > 950
                  OR NOT EXISTS (SELECT 1 FROM users u WHERE u.user_id = orders.user_id)
                     AND qty > 17;",
        duckdb: "SELECT order_id, user_id IN (SELECT user_id FROM users WHERE tier = 2),
                        qty NOT IN (SELECT tier FROM users),
                        qty IN (SELECT tier FROM users WHERE tier > 5),
                        EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = orders.order_id)
                 FROM orders
                 WHERE order_id < 40
                    OR qty IN (SELECT tier * 6 FROM users WHERE tier IS NOT NULL) AND amount > 950
                    OR NOT EXISTS (SELECT 1 FROM users u WHERE u.user_id = orders.user_id)
                       AND qty > 17",
    },
    Case {
        name: "quantified_subqueries",
        // x op ALL / ANY / SOME (SELECT ..) with SQL's NULL rules: the
        // users' tiers hold a NULL (so ALL is never TRUE unless decided
        // FALSE), an empty set makes ALL TRUE and ANY FALSE.
        weir: "SELECT order_id, qty > ALL (SELECT tier FROM users) AS a1,
                      qty >= ALL (SELECT tier FROM users WHERE tier IS NOT NULL) AS a2,
                      qty < ANY (SELECT tier * 5 FROM users) AS a3,
                      qty = ANY (SELECT tier FROM users) AS a4,
                      qty <> ALL (SELECT tier FROM users WHERE tier > 1) AS a5,
                      qty <= SOME (SELECT tier FROM users WHERE tier > 9) AS a6
               FROM orders WHERE order_id < 200;",
        duckdb: "SELECT order_id, qty > ALL (SELECT tier FROM users),
                        qty >= ALL (SELECT tier FROM users WHERE tier IS NOT NULL),
                        qty < ANY (SELECT tier * 5 FROM users),
                        qty = ANY (SELECT tier FROM users),
                        qty <> ALL (SELECT tier FROM users WHERE tier > 1),
                        qty <= SOME (SELECT tier FROM users WHERE tier > 9)
                 FROM orders WHERE order_id < 200",
    },
    Case {
        name: "join_using_and_natural_join",
        // Calcite's USING: `*` is the merged key first, then each side's
        // other columns (DuckDB keeps the key in the left's place, so its
        // side lists them); a FULL JOIN's key is COALESCE of both, a
        // RIGHT JOIN's the right's; `o.user_id` still names the left's.
        // NULL keys (orders with none, a user with none) match nothing.
        weir: "SELECT *
               FROM (SELECT * FROM orders JOIN users USING (user_id) WHERE order_id < 300) AS a
               FULL JOIN (SELECT user_id AS b_user, o.order_id, o.user_id AS kept, u.name AS b_name
                          FROM orders AS o RIGHT JOIN users AS u USING (user_id)
                          WHERE u.tier IS NOT NULL) AS b
               USING (order_id)
               UNION ALL
               SELECT order_id, user_id, amount, qty, category, note, ts, name, tier,
                      CAST(NULL AS STRING), CAST(NULL AS STRING), 'natural'
               FROM orders NATURAL JOIN users WHERE order_id >= 300 AND order_id < 400;",
        duckdb: "SELECT COALESCE(a.order_id, b.order_id), a.user_id, a.amount, a.qty, a.category,
                        a.note, a.ts, a.name, a.tier, b.b_user, b.kept, b.b_name
                 FROM (SELECT * FROM orders JOIN users USING (user_id) WHERE order_id < 300) AS a
                 FULL JOIN (SELECT u.user_id AS b_user, o.order_id, o.user_id AS kept,
                                   u.name AS b_name
                            FROM orders AS o RIGHT JOIN users AS u ON o.user_id = u.user_id
                            WHERE u.tier IS NOT NULL) AS b
                 ON a.order_id = b.order_id
                 UNION ALL
                 SELECT order_id, user_id, amount, qty, category, note, ts, name, tier,
                        NULL, NULL, 'natural'
                 FROM orders NATURAL JOIN users WHERE order_id >= 300 AND order_id < 400",
    },
    Case {
        name: "windowing_tvf_grouped_without_both_bounds",
        // GROUP BY without both window_start and window_end is not a
        // window aggregation, in Flink too: the TVF's rows (one per window
        // holding the row) grouped as a table's (an updating result).
        weir: "SELECT window_start, category, COUNT(*) AS n, SUM(amount) AS total
               FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
               GROUP BY window_start, category
               UNION ALL
               SELECT window_end, 'hop', COUNT(*), SUM(amount)
               FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTES,
                              INTERVAL '10' MINUTES))
               WHERE qty > 10
               GROUP BY window_end HAVING COUNT(*) > 1;",
        duckdb: "SELECT win_floor(ts, 600000), category, COUNT(*), SUM(amount)
                 FROM orders GROUP BY ALL
                 UNION ALL
                 SELECT win_floor(ts, 300000) - k * INTERVAL 5 MINUTE + INTERVAL 10 MINUTE AS we,
                        'hop', COUNT(*), SUM(amount)
                 FROM orders, range(2) AS r(k) WHERE qty > 10
                 GROUP BY we HAVING COUNT(*) > 1",
    },
    Case {
        name: "windowing_tvf_over_a_subquery",
        // A subquery as the table argument of a windowing TVF, as
        // Calcite's table parameter takes it (it was refused: only
        // `TABLE name` was); its rows keep the time attribute.
        weir: "SELECT window_start, window_end, category, COUNT(*) AS n, SUM(amount) AS total
               FROM TABLE(TUMBLE((SELECT category, amount, ts FROM orders WHERE qty > 5),
                                 DESCRIPTOR(ts), INTERVAL '10' MINUTES))
               GROUP BY window_start, window_end, category
               UNION ALL
               SELECT window_start, window_end, 'hop', COUNT(*), SUM(amount)
               FROM TABLE(HOP((SELECT * FROM orders WHERE category = 'books'), DESCRIPTOR(ts),
                              INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))
               GROUP BY window_start, window_end;",
        duckdb: "SELECT win_floor(ts, 600000) AS ws, win_floor(ts, 600000) + INTERVAL 10 MINUTE,
                        category, COUNT(*), SUM(amount)
                 FROM orders WHERE qty > 5 GROUP BY ALL
                 UNION ALL
                 SELECT win_floor(ts, 300000) - k * INTERVAL 5 MINUTE AS ws,
                        win_floor(ts, 300000) - k * INTERVAL 5 MINUTE + INTERVAL 10 MINUTE,
                        'hop', COUNT(*), SUM(amount)
                 FROM orders, range(2) AS r(k) WHERE category = 'books' GROUP BY ALL",
    },
    Case {
        name: "view_and_with_column_lists",
        // `CREATE VIEW v (a, b) AS` and `WITH w (a, b) AS` name the
        // query's columns, in order.
        weir: "CREATE VIEW per_user (uid, n, total) AS
                 SELECT user_id, COUNT(*), SUM(amount) FROM orders GROUP BY user_id;
               WITH big (who, how_many) AS (SELECT uid, n FROM per_user WHERE total > 1000)
               SELECT b.who, b.how_many, p.total FROM big AS b JOIN per_user AS p ON b.who = p.uid;",
        duckdb: "CREATE VIEW per_user (uid, n, total) AS
                   SELECT user_id, COUNT(*), SUM(amount) FROM orders GROUP BY user_id;
                 WITH big (who, how_many) AS (SELECT uid, n FROM per_user WHERE total > 1000)
                 SELECT b.who, b.how_many, p.total FROM big AS b JOIN per_user AS p ON b.who = p.uid",
    },
    Case {
        name: "aggregates_of_all_null_groups",
        // Every value of the group NULL: SUM, AVG, MIN, MAX NULL, COUNT 0;
        // a NULL key is a group of its own.
        weir: "SELECT category, COUNT(*) AS n, COUNT(qty) AS nq,
                      SUM(CASE WHEN qty > 100 THEN qty END) AS s,
                      AVG(CASE WHEN qty > 100 THEN amount END) AS a,
                      MAX(CASE WHEN qty > 100 THEN note END) AS mx,
                      MIN(CASE WHEN qty > 100 THEN ts END) AS mn,
                      COUNT(DISTINCT CASE WHEN qty > 100 THEN qty END) AS d,
                      SUM(qty) FILTER (WHERE qty > 100) AS f
               FROM orders GROUP BY category;",
        duckdb: "SELECT category, COUNT(*), COUNT(qty),
                        SUM(CASE WHEN qty > 100 THEN qty END),
                        AVG(CASE WHEN qty > 100 THEN amount END),
                        MAX(CASE WHEN qty > 100 THEN note END),
                        MIN(CASE WHEN qty > 100 THEN ts END),
                        COUNT(DISTINCT CASE WHEN qty > 100 THEN qty END),
                        SUM(qty) FILTER (WHERE qty > 100)
                 FROM orders GROUP BY category",
    },
    Case {
        name: "row_in_subquery",
        // `(a, b) IN (SELECT x, y ..)` in WHERE: the rows equal column by
        // column to a row of the subquery (each user's orders of their
        // largest quantity; NULL users and quantities match nothing).
        weir: "SELECT order_id, user_id, qty FROM orders
               WHERE (user_id, qty) IN (SELECT user_id, MAX(qty) FROM orders GROUP BY user_id)
                 AND order_id < 3000;",
        duckdb: "SELECT order_id, user_id, qty FROM orders o
                 WHERE EXISTS (SELECT 1 FROM (SELECT user_id, MAX(qty) AS m FROM orders
                                              GROUP BY user_id) AS s
                               WHERE s.user_id = o.user_id AND s.m = o.qty)
                   AND order_id < 3000",
    },
    Case {
        name: "aggregate_of_counts_whose_groups_empty",
        // Each user's count grows row by row, so the outer group of the
        // count a user had is retracted from (a -U) and the group of its
        // new count added to: a group every user left is deleted, and
        // HAVING drops a group whose users became too many. DISTINCT
        // aggregates and a DECIMAL AVG over the same retractions.
        weir: "SELECT n, COUNT(*) AS users, SUM(q) AS q, MIN(q) AS least,
                      COUNT(DISTINCT q) AS qs, SUM(DISTINCT q) AS sq, AVG(a) AS a
               FROM (SELECT user_id, COUNT(*) AS n, SUM(qty) AS q, AVG(amount) AS a
                     FROM orders GROUP BY user_id)
               GROUP BY n HAVING COUNT(*) < 4;",
        duckdb: "SELECT n, COUNT(*), SUM(q), MIN(q), COUNT(DISTINCT q), SUM(DISTINCT q),
                        AVG(a)::DECIMAL(38, 6)
                 FROM (SELECT user_id, COUNT(*) AS n, SUM(qty) AS q,
                              AVG(amount)::DECIMAL(38, 6) AS a
                       FROM orders GROUP BY user_id)
                 GROUP BY n HAVING COUNT(*) < 4",
    },
    Case {
        name: "outer_joins_of_two_group_aggregations",
        // Both sides update, and the condition reads their aggregates: a
        // pair is retracted when a side's row changes, and a row that lost
        // its match is padded again.
        weir: "SELECT o.user_id, o.n, u.user_id, u.t
               FROM (SELECT user_id, COUNT(*) AS n FROM orders GROUP BY user_id) o
               FULL JOIN (SELECT user_id, SUM(tier) AS t FROM users GROUP BY user_id) u
               ON o.user_id = u.user_id AND o.n > u.t
               UNION ALL
               SELECT o.category, o.n, u.name, u.t
               FROM (SELECT category, COUNT(*) AS n FROM orders GROUP BY category) o
               LEFT JOIN (SELECT MAX(name) AS name, COUNT(*) AS t FROM users GROUP BY tier) u
               ON o.n < u.t * 1000;",
        duckdb: "SELECT o.user_id, o.n, u.user_id, u.t
                 FROM (SELECT user_id, COUNT(*) AS n FROM orders GROUP BY user_id) o
                 FULL JOIN (SELECT user_id, SUM(tier) AS t FROM users GROUP BY user_id) u
                 ON o.user_id = u.user_id AND o.n > u.t
                 UNION ALL
                 SELECT o.category, o.n, u.name, u.t
                 FROM (SELECT category, COUNT(*) AS n FROM orders GROUP BY category) o
                 LEFT JOIN (SELECT MAX(name) AS name, COUNT(*) AS t FROM users GROUP BY tier) u
                 ON o.n < u.t * 1000",
    },
    Case {
        name: "group_by_parenthesized_lists_and_the_empty_set",
        // Calcite reads `GROUP BY (a, b)` as `GROUP BY a, b` and `GROUP BY
        // ()` as one group of all rows.
        weir: "SELECT user_id, category, COUNT(*) AS n, SUM(amount) AS s
               FROM orders GROUP BY (user_id, category)
               UNION ALL
               SELECT 'all', CAST(NULL AS STRING), COUNT(*), SUM(amount)
               FROM orders GROUP BY ()
               UNION ALL
               SELECT user_id, 'by user', COUNT(*), MAX(amount)
               FROM orders GROUP BY user_id, ();",
        duckdb: "SELECT user_id, category, COUNT(*), SUM(amount)
                 FROM orders GROUP BY user_id, category
                 UNION ALL
                 SELECT 'all', CAST(NULL AS VARCHAR), COUNT(*), SUM(amount) FROM orders
                 UNION ALL
                 SELECT user_id, 'by user', COUNT(*), MAX(amount) FROM orders GROUP BY user_id",
    },
    Case {
        name: "subqueries_whose_where_has_an_or",
        // A subquery's WHERE of a parenthesized OR and more conjuncts:
        // the rewrites print it and parse it again, and `(a OR b) AND c`
        // came back as `a OR (b AND c)` (NOT IN counted the OR's rows as
        // NULLs and kept no row; IN, a correlated NOT IN and a correlated
        // scalar subquery read rows their condition leaves out).
        weir: "SELECT order_id, 'not in' FROM orders
               WHERE qty NOT IN (SELECT tier FROM users WHERE tier >= 3 OR tier < 1)
               UNION ALL
               SELECT order_id, 'in' FROM orders
               WHERE user_id IN (SELECT user_id FROM users
                                 WHERE (tier = 1 OR tier = 3) AND name > 'f')
               UNION ALL
               SELECT o.order_id, 'correlated not in' FROM orders o
               WHERE o.qty > 15 AND o.qty NOT IN (
                 SELECT o2.qty FROM orders o2
                 WHERE (o2.qty < 5 OR o2.qty > 17) AND o2.user_id = o.user_id
                   AND o2.category = 'books')
               UNION ALL
               SELECT o.order_id, CAST((SELECT MAX(o2.amount) FROM orders o2
                                        WHERE (o2.qty < 5 OR o2.qty > 15)
                                          AND o2.user_id = o.user_id
                                          AND o2.category = 'games') AS STRING)
               FROM orders o WHERE o.qty = 7;",
        duckdb: "SELECT order_id, 'not in' FROM orders
                 WHERE qty NOT IN (SELECT tier FROM users WHERE tier >= 3 OR tier < 1)
                 UNION ALL
                 SELECT order_id, 'in' FROM orders
                 WHERE user_id IN (SELECT user_id FROM users
                                   WHERE (tier = 1 OR tier = 3) AND name > 'f')
                 UNION ALL
                 SELECT o.order_id, 'correlated not in' FROM orders o
                 WHERE o.qty > 15 AND o.qty NOT IN (
                   SELECT o2.qty FROM orders o2
                   WHERE (o2.qty < 5 OR o2.qty > 17) AND o2.user_id = o.user_id
                     AND o2.category = 'books')
                 UNION ALL
                 SELECT o.order_id, CAST((SELECT MAX(o2.amount) FROM orders o2
                                          WHERE (o2.qty < 5 OR o2.qty > 15)
                                            AND o2.user_id = o.user_id
                                            AND o2.category = 'games') AS VARCHAR)
                 FROM orders o WHERE o.qty = 7",
    },
];
