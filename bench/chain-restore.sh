#!/bin/sh
# Restore from a chain of ten deltas vs from a full checkpoint
# (bench/RESULTS.md, "Restore from a chain of ten deltas vs from a full
# checkpoint"). W1 with K keys fills its table (a full checkpoint, the
# base), then is restored with incremental checkpoints every 500 ms at
# K/50 records/s (~1% of the keys per interval) until checkpoint
# base+12: a full checkpoint and ten deltas (the first checkpoint after a
# restore is full and asks for tracking, the second is full and tracked).
# Then both are restored at 2 workers, alternating, ROUNDS times; a line
# per run and worker: what, elapsed, the thread's user and kernel CPU.
# The checkpoints are copied once and stay in the page cache (COLD=1:
# copied before every run and dropped from the page cache, as
# bench/incremental.sh does). OTHER=<binary>: each round also restores
# the chain with that binary (`chain-other`), say a build of another
# commit. CALLGRIND=1: one restore of each under callgrind instead,
# counting the instructions of restore_entries.
#
#   WEIR=target/release/weir DIR=/tmp/chain K=10000000 ROUNDS=10 bench/chain-restore.sh
#   WEIR=target/release/weir DIR=/tmp/chain2m K=2000000 CALLGRIND=1 bench/chain-restore.sh
set -eu
WEIR=$(realpath "${WEIR:-target/release/weir}")
DIR=${DIR:-chain-restore-work}
K=${K:-10000000}
ROUNDS=${ROUNDS:-10}
mkdir -p "$DIR"; cd "$DIR"
w1() { # w1 <checkpoint dir> <incremental> [args...]
  ck=$1; inc=$2; shift 2
  exec "$WEIR" bench w1 --quiet --workers 2 --n 200000000 --k "$K" --output out \
    --set state.checkpoints.dir="$PWD/$ck" --set weir.worker.pin-cores=false \
    --set execution.checkpointing.incremental="$inc" "$@"
}
completed() { python3 -c "import json,sys
try: h=json.load(open('$1/checkpoint-history.json'))
except Exception: h=[]
print(len([r for r in h if r['status']=='completed']))"; }

if [ ! -d chain ]; then
  # The base: until the table stops growing (a table that grows is
  # written in full, which would break the chain).
  rm -rf base out base-out
  w1 base false --set execution.checkpointing.interval=2s >/dev/null 2>&1 & pid=$!
  while [ "$(completed base)" -lt "${BASE_CHECKPOINTS:-12}" ]; do sleep 0.2; done
  kill -9 $pid; wait $pid 2>/dev/null || true
  cp -r out base-out
  rm -rf chain-tmp out; cp -r base chain-tmp; cp -r base-out out
  first=$(ls base | sed -n 's/^chk-//p' | sort -n | tail -1); tenth=$((first + 12))
  w1 chain-tmp true --rate $((K / 50)) --set execution.checkpointing.interval=500ms \
    --restore latest >/dev/null 2>&1 & pid=$!
  while [ ! -f "chain-tmp/chk-$tenth/_metadata" ]; do sleep 0.02; done
  kill -9 $pid; wait $pid 2>/dev/null || true
  rm -rf chain-out; cp -r out chain-out
  for d in chain-tmp/chk-*; do [ "${d#chain-tmp/chk-}" -gt "$tenth" ] && rm -rf "$d"; done
  mv chain-tmp chain
fi
"$WEIR" checkpoints describe "chain/chk-$(ls chain | sed -n 's/^chk-//p' | sort -n | tail -1)" |
  grep 'incremental chain'

drop_cache() { python3 - "$1" <<'PY'
import os,sys
for root,_,files in os.walk(sys.argv[1]):
    for f in files:
        fd=os.open(os.path.join(root,f),os.O_RDONLY); os.fsync(fd)
        os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)
PY
}

# restore <what> [wrapper...]: one restore of `what` (base or chain)
# with $BIN.
BIN=$WEIR
restore() {
  what=$1; shift
  if [ "${COLD:-0}" = 1 ]; then
    rm -rf r; cp -r "$what" r; drop_cache r; ck=r
  else
    [ -d "r-$what" ] || cp -r "$what" "r-$what"; ck="r-$what"
  fi
  rm -rf out; cp -r "$what-out" out
  : > restore.log
  RUST_LOG=weir::checkpoint=debug "$@" "$BIN" bench w1 --quiet --workers 2 --n 200000000 \
    --k "$K" --rate 1000 --output out --set state.checkpoints.dir="$PWD/$ck" \
    --set weir.worker.pin-cores=false --set execution.checkpointing.incremental=true \
    --set execution.checkpointing.interval=100s --restore latest >/dev/null 2>restore.log &
  pid=$!
  while [ "$(grep -c 'restored state' restore.log)" -lt 2 ]; do sleep 0.05; done
  if [ "${CALLGRIND:-0}" = 1 ]; then callgrind_control -d $pid >/dev/null; sleep 1; fi
  kill -9 $pid; wait $pid 2>/dev/null || true
}

if [ "${CALLGRIND:-0}" = 1 ]; then
  for what in base chain; do
    rm -f "cg.$what".*
    restore "$what" valgrind --tool=callgrind --collect-atstart=no \
      '--toggle-collect=*restore_entries*' --callgrind-out-file="$PWD/cg.$what"
    echo "$what $(callgrind_annotate cg.$what.1 | grep 'PROGRAM TOTALS')"
  done
  exit
fi
for i in $(seq "$ROUNDS"); do
  for run in base chain ${OTHER:+chain-other}; do
    what=${run%-other}
    BIN=$WEIR; [ "$run" = chain-other ] && BIN=$(realpath "$OTHER")
    restore "$what"
    # (A build before the trace gave the CPU times prints "-".)
    grep 'restored state' restore.log |
      sed -e "s/.* elapsed=\([^ ]*\).* user=\([^ ]*\) sys=\([^ ]*\).*/$i $run \1 \2 \3/;t" \
        -e "s/.* elapsed=\([^ ]*\).*/$i $run \1 - -/"
  done
done
