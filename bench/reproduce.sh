#!/usr/bin/env bash
# Reproduces the figures of bench/RESULTS.md: builds weir and runs
# `weir bench report`, which runs every workload of WORKLOADS.md, verifies
# each run and writes report.md, report.html and the plots (SVG and PNG).
#   bench/reproduce.sh                       # the full report, about 20 min on 2 cores
#   bench/reproduce.sh --quick               # under 3 min
#   bench/reproduce.sh --quick --out DIR     # default DIR: target/report
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec target/release/weir bench report "$@"
