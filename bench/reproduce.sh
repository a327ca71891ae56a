#!/usr/bin/env bash
# Reproduces the figures of bench/RESULTS.md in one command:
#   bench/reproduce.sh            # W1 and W2 (5 runs), the W3 timeout sweep, W4, W5
#   RUNS=3 W3_DURATION=5 W4_DURATION=10 bench/reproduce.sh   # quicker
# Prints a markdown table per workload; each row comes from the JSON line
# `weir bench` prints last. Needs python3 to read the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
WORKERS=${WORKERS:-2}
W1_N=${W1_N:-200000000}
W2_N=${W2_N:-200000000}
W3_WARMUP=${W3_WARMUP:-5}
W3_DURATION=${W3_DURATION:-20}
W4_DURATION=${W4_DURATION:-60}
cargo build --release --quiet
WEIR=target/release/weir

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r); date: $(date -u +%F)"
echo
echo "## W1: weir bench w1 --n $W1_N --k 100000 --workers $WORKERS --quiet"
echo
echo "| run | records/s | elapsed s | verified |"
echo "|---|---|---|---|"
for i in $(seq 1 "$RUNS"); do
    $WEIR bench w1 --n "$W1_N" --k 100000 --workers "$WORKERS" --quiet | tail -1 |
        python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print(f\"| $i | {j['records_per_s']/1e6:.1f} M | {j['elapsed_s']:.3f} | {j['verified']} |\")"
done
echo
echo "## W2: weir bench w2 --n $W2_N --k 10000 --workers $WORKERS --quiet"
echo
echo "| run | records/s | elapsed s | windows fired (expected) | verified |"
echo "|---|---|---|---|---|"
for i in $(seq 1 "$RUNS"); do
    $WEIR bench w2 --n "$W2_N" --k 10000 --workers "$WORKERS" --quiet | tail -1 |
        python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print(f\"| $i | {j['records_per_s']/1e6:.1f} M | {j['elapsed_s']:.3f} | {j['windows']} ({j['expected_windows']}) | {j['verified']} |\")"
done
echo
echo "## W3: weir bench w3 --rate R --warmup $W3_WARMUP --duration $W3_DURATION --workers $WORKERS --set execution.buffer-timeout=T --quiet"
echo
echo "| rate | buffer timeout | achieved/s | p50 us | p99 us | p99.9 us | max us | verified |"
echo "|---|---|---|---|---|---|---|---|"
for rate in 200000 1000000; do
    for t in 0ms 1ms 10ms 100ms; do
        $WEIR bench w3 --rate "$rate" --warmup "$W3_WARMUP" --duration "$W3_DURATION" \
            --workers "$WORKERS" --set "execution.buffer-timeout=$t" --quiet | tail -1 |
            python3 -c "import json,sys; j=json.loads(sys.stdin.read()); l=j['latency_us']; print(f\"| $rate | $t | {j['achieved_rate']:.0f} | {l['p50']:.0f} | {l['p99']:.0f} | {l['p999']:.0f} | {l['max']:.0f} | {j['verified']} |\")"
    done
done
echo
echo "## W1 with aligned checkpoints every 1 s vs none, alternating (ratio = with / without)"
echo
echo "| pair | without | with | ratio | checkpoints | duration p50/max ms | alignment p50/max ms |"
echo "|---|---|---|---|---|---|---|"
CK_DIR=${CK_DIR:-target/bench-checkpoints}
for i in $(seq 1 "$RUNS"); do
    a=$($WEIR bench w1 --n "$W1_N" --k 100000 --workers "$WORKERS" --quiet | tail -1)
    rm -rf "$CK_DIR"
    b=$($WEIR bench w1 --n "$W1_N" --k 100000 --workers "$WORKERS" --quiet \
        --set execution.checkpointing.interval=1s --set "state.checkpoints.dir=$CK_DIR" | tail -1)
    python3 -c "
import json,sys
a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); c=b['checkpoints']
print(f\"| $i | {a['records_per_s']/1e6:.1f} M | {b['records_per_s']/1e6:.1f} M | {b['records_per_s']/a['records_per_s']:.2f} | {c['completed']} ok, {c['failed']} failed | {c['duration_ms']['p50']:.0f}/{c['duration_ms']['max']:.0f} | {c['alignment_ms']['p50']:.2f}/{c['alignment_ms']['max']:.2f} |\")
" "$a" "$b"
done
echo
echo "## W4 checkpoints under backpressure: weir bench w4 --mode M --duration $W4_DURATION --workers $WORKERS --quiet"
echo
echo "The sink spins 10 us per record; checkpoints every 1 s. Target: the sink rate within 5% of mode none."
echo
echo "| mode | sink records/s | vs none | checkpoints | duration p50/max ms | alignment p50/max ms | bytes | in flight | verified |"
echo "|---|---|---|---|---|---|---|---|---|"
W4_DIR=${W4_DIR:-target/w4-checkpoints}
base=""
for mode in none aligned unaligned debloat timeout; do
    rm -rf "$W4_DIR"
    j=$($WEIR bench w4 --mode "$mode" --duration "$W4_DURATION" --workers "$WORKERS" --quiet \
        --set "state.checkpoints.dir=$W4_DIR" | tail -1)
    if [ "$mode" = none ]; then base=$j; fi
    python3 -c "
import json,sys
j=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); c=j['checkpoints']
r=j['sink_records_per_s']; ratio=r/b['sink_records_per_s']
if c is None:
    print(f\"| $mode | {r/1e3:.1f} k | {ratio:.3f} | - | - | - | - | - | {j['verified']} |\")
else:
    print(f\"| $mode | {r/1e3:.1f} k | {ratio:.3f} | {c['completed']} ok, {c['failed']} failed | {c['duration_ms']['p50']:.0f}/{c['duration_ms']['max']:.0f} | {c['alignment_ms']['p50']:.1f}/{c['alignment_ms']['max']:.1f} | {c['bytes']/2**20:.1f} MiB | {c['inflight_bytes']/2**20:.1f} MiB | {j['verified']} |\")
" "$j" "$base"
done
rm -rf "$W4_DIR"
echo
echo "## W5 recovery: weir bench w5 (N = 100,000,000, K = 10,000,000, checkpoints every 5 s)"
echo
W5_DIR=${W5_DIR:-target/w5}
$WEIR bench w5 --workers "$WORKERS" --dir "$W5_DIR" | head -1
