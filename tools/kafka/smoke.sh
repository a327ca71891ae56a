#!/usr/bin/env bash
# Checks that broker.sh and kafka.sh work end to end against the real broker:
# start, a 4-partition topic, 100 records through the console producer and
# back through a read_committed console consumer, a transactional producer,
# the consumer perf test, a restart that must keep the topic and its records,
# stop. Prints what it does and how long each step took on stderr; exits
# non-zero at the first failure.
#
# Runs in its own data dir (a new one under /tmp, deleted at the end) and on
# a free port, so a broker that tests are using is left alone.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
broker="$here/broker.sh"
kafka="$here/kafka.sh"

WEIR_KAFKA_DIR="$(mktemp -d /tmp/weir-kafka-smoke.XXXXXX)"
export WEIR_KAFKA_DIR
# A port nothing uses, so the smoke test never collides with a broker on 9092.
WEIR_KAFKA_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export WEIR_KAFKA_PORT
# clean deletes only a dir that start has marked as its own; one that start
# never reached is still empty.
trap '"$broker" clean >/dev/null 2>&1 || true
      rmdir "$WEIR_KAFKA_DIR" 2>/dev/null || true
      rm -f "$WEIR_KAFKA_DIR.lock"' EXIT

step() { echo "== $*" >&2; step_started=$SECONDS; }
took() { echo "   ($((SECONDS - step_started)) s)" >&2; }
fail() { echo "smoke.sh: FAILED: $*" >&2; exit 1; }

step "start (installs on first use)"
addr="$("$broker" start)"
[[ "$addr" =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "start printed '$addr', not an address"
took

topic="smoke"
step "create topic $topic with 4 partitions"
"$kafka" topics --bootstrap-server "$addr" --create --topic "$topic" \
    --partitions 4 --replication-factor 1 >&2
"$kafka" topics --bootstrap-server "$addr" --describe --topic "$topic" >&2
took

step "produce 100 records with the console producer"
seq 1 100 | "$kafka" console-producer --bootstrap-server "$addr" --topic "$topic" >&2
took

# Reads a topic from the start with read_committed, at most $2 records, and
# prints them sorted (4 partitions: the order across them is not defined).
consume() {
    "$kafka" console-consumer --bootstrap-server "$addr" --topic "$1" \
        --from-beginning --isolation-level read_committed \
        --max-messages "$2" --timeout-ms 30000 | sort -n
}

step "consume them with the console consumer, read_committed"
got="$(consume "$topic" 100)"
[ "$got" = "$(seq 1 100)" ] || fail "consumed $(wc -l <<<"$got") records, not 1..100"
took

step "10000 records in transactions (producer-perf-test with a transactional id)"
"$kafka" producer-perf-test --topic smoke-tx --num-records 10000 --record-size 100 \
    --throughput -1 --producer-props "bootstrap.servers=$addr" \
    --transactional-id smoke-tx --transaction-duration-ms 200 >&2
n="$(consume smoke-tx 10000 | wc -l)"
[ "$n" = 10000 ] || fail "read_committed saw $n transactional records, not 10000"
took

step "consumer-perf-test on them"
"$kafka" consumer-perf-test --bootstrap-server "$addr" --topic smoke-tx \
    --messages 10000 >&2
took

step "restart: the topic and its records must survive"
addr2="$("$broker" restart)"
[ "$addr2" = "$addr" ] || fail "restart moved the broker from $addr to $addr2"
took
"$kafka" topics --bootstrap-server "$addr" --describe --topic "$topic" >&2
got="$(consume "$topic" 100)"
[ "$got" = "$(seq 1 100)" ] || fail "after the restart: $(wc -l <<<"$got") records, not 1..100"

step "stop"
"$broker" stop
took
if "$broker" status >/dev/null 2>&1; then
    fail "status says running after stop"
fi
echo "smoke.sh: all steps passed" >&2
