#!/usr/bin/env bash
# Sets up the independent parser that tools/tests/prometheus.rs checks the
# Prometheus endpoint's output with: a Python venv with `prometheus_client`
# (the Prometheus project's own Python client, whose text and OpenMetrics
# parsers are used) from PyPI, kept outside the repository in the cache
# directory
# ${WEIR_PROM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/weir/prometheus-venv}
# and reused while it works. Prints the path of the venv's python on stdout
# (all else goes to stderr); exits non-zero with the reason if it cannot.
#
#   python=$(tools/prometheus/setup.sh)   # then: WEIR_PROM_PYTHON=$python cargo test ...
set -euo pipefail

# The version the tests were written against; a newer one is not taken by
# surprise.
PROM_VERSION="${WEIR_PROM_CLIENT_VERSION:-0.26.0}"
venv="${WEIR_PROM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/weir/prometheus-venv}"
python="$venv/bin/python"

works() {
    # -I: nothing from the working directory shadows the package
    [ -x "$python" ] && "$python" -I -c "
import sys
from importlib.metadata import version
import prometheus_client.parser, prometheus_client.openmetrics.parser
sys.exit(0 if version('prometheus_client') == '$PROM_VERSION' else 1)" 2>/dev/null
}

if ! works; then
    host=$(command -v python3 || true)
    if [ -z "$host" ]; then
        echo "tools/prometheus/setup.sh: no python3 on PATH to make a venv with" >&2
        exit 1
    fi
    echo "tools/prometheus/setup.sh: installing prometheus_client==$PROM_VERSION into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$host" -m venv "$venv" >&2
    # pip's own cache (~/.cache/pip) keeps the wheel for the next venv.
    "$python" -m pip install --quiet --disable-pip-version-check \
        "prometheus_client==$PROM_VERSION" >&2
    if ! works; then
        echo "tools/prometheus/setup.sh: prometheus_client==$PROM_VERSION does not import in $venv" >&2
        exit 1
    fi
fi
echo "$python"
