#!/bin/sh
# Incremental checkpoints at W5's scale (bench/RESULTS.md, "Incremental
# checkpoints"): W1 with K = 10,000,000 fills its table (killed after 5
# checkpoints), is restored at 200,000 records/s with a checkpoint every
# 500 ms (~1% of the keys change per interval) with
# execution.checkpointing.incremental=true, and the checkpoint history
# gives each checkpoint's bytes and times, full and delta. Then a chain of
# ten deltas is made, and its restore is timed against the full
# checkpoint's (page cache dropped first, as `weir bench w5` does).
#
#   WEIR=target/release/weir DIR=/tmp/inc bench/incremental.sh
set -eu
WEIR=$(realpath "${WEIR:-target/release/weir}")
DIR=${DIR:-incremental-work}
RUNS=${RUNS:-5}
mkdir -p "$DIR"; cd "$DIR"
w1() { # w1 <checkpoint dir> <incremental> [args...]; run in the background
  ck=$1; inc=$2; shift 2
  # exec: `$!` is then weir itself, which the script kills.
  exec "$WEIR" bench w1 --quiet --workers 2 --n 200000000 --k 10000000 --output out \
    --set state.checkpoints.dir="$PWD/$ck" --set weir.worker.pin-cores=false \
    --set execution.checkpointing.incremental="$inc" "$@"
}
completed() { python3 -c "import json,sys
try: h=json.load(open('$1/checkpoint-history.json'))
except Exception: h=[]
print(len([r for r in h if r['status']=='completed']))"; }
drop_cache() { python3 - "$1" <<'PY'
import os,sys
for root,_,files in os.walk(sys.argv[1]):
    for f in files:
        fd=os.open(os.path.join(root,f),os.O_RDONLY); os.fsync(fd)
        os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)
PY
}

# 1. The base: a full checkpoint of ~9.4 M keys.
rm -rf base out base-out
w1 base false --set execution.checkpointing.interval=2s >/dev/null 2>&1 & pid=$!
while [ "$(completed base)" -lt 5 ]; do sleep 0.2; done
kill -9 $pid; wait $pid 2>/dev/null || true
cp -r out base-out

# 2. Deltas: restored at 200,000 records/s, a checkpoint every 500 ms.
rm -rf deltas out; cp -r base deltas; cp -r base-out out
RUST_LOG=weir::checkpoint=debug w1 deltas true --rate 200000 \
  --set execution.checkpointing.interval=500ms --restore latest >/dev/null 2>deltas.log & pid=$!
sleep 14; kill -9 $pid; wait $pid 2>/dev/null || true
python3 - <<'PY'
import json,re,statistics as st
h=json.load(open('deltas/checkpoint-history.json'))
kind={}
for m in re.finditer(r'checkpoint=(\d+) task="w1-keyed[^"]*" state="totals" entries=\d+ bytes=\d+ delta=(\w+)',open('deltas.log').read()):
    kind.setdefault(int(m.group(1)),set()).add(m.group(2))
rows={'full':[],'delta':[]}
for r in h:
    if r['status']!='completed' or r['id'] not in kind: continue
    k='delta' if kind[r['id']]=={'true'} else 'full'
    ts=[t for t in r['tasks'] if t.get('bytes',0)>0]
    rows[k].append((r['bytes'],max(t['persist_ms'] for t in ts),max(t['async_ms'] for t in ts)))
for k,v in rows.items():
    if v: print(f"{k}: n={len(v)} bytes p50={st.median(x[0] for x in v):.0f} persist_ms p50={st.median(x[1] for x in v):.1f} async_ms p50={st.median(x[2] for x in v):.1f}")
PY

# 3. A chain of ten deltas (the first checkpoint after a restore is full).
rm -rf chain out; cp -r base chain; cp -r base-out out
first=$(ls base | sed -n 's/^chk-//p' | sort -n | tail -1); tenth=$((first + 11))
w1 chain true --rate 200000 --set execution.checkpointing.interval=500ms --restore latest >/dev/null 2>&1 & pid=$!
while [ ! -f "chain/chk-$tenth/_metadata" ]; do sleep 0.05; done
kill -9 $pid; wait $pid 2>/dev/null || true
cp -r out chain-out
"$WEIR" checkpoints describe "chain/chk-$tenth" | grep 'incremental chain'

# 4. Restore times, alternating, slowest subtask per run.
for i in $(seq "$RUNS"); do
  for what in chain base; do
    rm -rf r out; cp -r "$what" r; cp -r "$( [ $what = chain ] && echo chain-out || echo base-out )" out
    drop_cache r
    # Emptied first: the loop below must not read the last run's lines
    # before the new process has truncated the file.
    : > restore.log
    RUST_LOG=weir::checkpoint=debug w1 r true --rate 200000 \
      --set execution.checkpointing.interval=500ms --restore latest >/dev/null 2>restore.log & pid=$!
    while [ "$(grep -c 'restored state' restore.log)" -lt 2 ]; do sleep 0.05; done
    kill -9 $pid; wait $pid 2>/dev/null || true
    # Per worker: elapsed (the thread's user / kernel CPU time).
    echo "$what $(grep 'restored state' restore.log | sed 's/.* elapsed=\([^ ]*\).* user=\([^ ]*\) sys=\([^ ]*\).*/\1 (\2 \/ \3)/' | tr '\n' ' ')"
  done
done
