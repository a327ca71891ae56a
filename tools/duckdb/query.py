"""Runs one DuckDB query for tools/tests/sql_duckdb.rs and
nexmark_duckdb.rs and prints its result as JSON:
{"types": [DuckDB type names], "rows": [[text or null]]}.

Values are printed as weir prints them, so that the test compares text:
DECIMALs exactly at their type's scale, TIMESTAMPs as
`yyyy-MM-dd HH:mm:ss.SSS`, booleans as `true`/`false`; DOUBLEs as Python's
repr (the test compares them with a tolerance). NULL is JSON null.

Usage: python query.py SETUP_SQL_FILE QUERY_SQL_FILE
  QUERY_SQL_FILE: statements separated by `;` (none inside literals), the
  last the query
  SETUP_SQL_FILE: statements run first (the test's CREATE VIEWs over CSV)
"""

import datetime
import decimal
import json
import sys

import duckdb


def text(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (v.microsecond // 1000)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return repr(v)
    return str(v)


def main():
    setup = open(sys.argv[1]).read()
    statements = [q for q in open(sys.argv[2]).read().split(";") if q.strip()]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(setup)
    for q in statements[:-1]:
        con.execute(q)
    rel = con.sql(statements[-1])
    types = [str(t) for t in rel.types]
    rows = [[text(v) for v in row] for row in rel.fetchall()]
    json.dump({"types": types, "rows": rows}, sys.stdout)


main()
