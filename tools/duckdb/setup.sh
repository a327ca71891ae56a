#!/usr/bin/env bash
# Sets up DuckDB, the independent SQL engine that tools/tests/sql_duckdb.rs
# and nexmark_duckdb.rs check weir SQL's results against: a Python venv
# with `duckdb` from PyPI, kept outside the repository in the cache directory
# ${WEIR_DUCKDB_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/weir/duckdb-venv} and
# reused while it works. Prints the path of the venv's python on stdout
# (all else goes to stderr); exits non-zero with the reason if it cannot.
#
#   python=$(tools/duckdb/setup.sh)   # then: WEIR_DUCKDB_PYTHON=$python cargo test ...
set -euo pipefail

# The version the tests were written against; a newer one is not taken by
# surprise.
DUCKDB_VERSION="${WEIR_DUCKDB_VERSION:-2.0.1}"
venv="${WEIR_DUCKDB_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/weir/duckdb-venv}"
python="$venv/bin/python"

works() {
    # -I: a `duckdb` folder in the working directory is not the package
    [ -x "$python" ] && "$python" -I -c "
import duckdb, sys
sys.exit(0 if duckdb.__version__ == '$DUCKDB_VERSION' else 1)" 2>/dev/null
}

if ! works; then
    host=$(command -v python3 || true)
    if [ -z "$host" ]; then
        echo "tools/duckdb/setup.sh: no python3 on PATH to make a venv with" >&2
        exit 1
    fi
    echo "tools/duckdb/setup.sh: installing duckdb==$DUCKDB_VERSION into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$host" -m venv "$venv" >&2
    # pip's own cache (~/.cache/pip) keeps the wheel for the next venv.
    "$python" -m pip install --quiet --disable-pip-version-check \
        "duckdb==$DUCKDB_VERSION" >&2
    if ! works; then
        echo "tools/duckdb/setup.sh: duckdb==$DUCKDB_VERSION does not import in $venv" >&2
        exit 1
    fi
fi
echo "$python"
