"""Parses a Prometheus exposition with the Prometheus project's own Python
parsers (prometheus_client) for tools/tests/prometheus.rs, and prints the
families as JSON:

  [{"name": family name, "type": "counter" | "gauge" | ...,
    "help": text, "samples": [{"name": sample name, "labels": {...},
                               "value": number, or "NaN" / "+Inf" / "-Inf"}]}]

A family's name is the parser's: without the `_total` of a counter's
samples. Exits 1 with the parser's error if the text does not parse.

Usage: python parse.py prometheus|openmetrics FILE
  prometheus: the text format 0.0.4 (what a scrape without an Accept header
  gets); openmetrics: OpenMetrics 1.0 (what Prometheus asks for), which
  must end with `# EOF`.
"""

import json
import math
import sys

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families as text_families


def number(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return v


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parse = {"prometheus": text_families, "openmetrics": openmetrics_families}[fmt]
    try:
        families = [
            {
                "name": fam.name,
                "type": fam.type,
                "help": fam.documentation,
                "samples": [
                    {"name": s.name, "labels": dict(s.labels), "value": number(s.value)}
                    for s in fam.samples
                ],
            }
            for fam in parse(text)
        ]
    except Exception as e:  # the parser's own error, whatever its class
        print(f"{fmt} parser: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    json.dump(families, sys.stdout)
    print()


if __name__ == "__main__":
    main()
