#!/usr/bin/env bash
# Runs one of Apache Kafka's command-line tools from the jars that broker.sh
# installed (the same version as the broker), installing them first if needed.
#
#   tools/kafka/kafka.sh TOOL [ARGS...]      e.g.
#   tools/kafka/kafka.sh topics --bootstrap-server 127.0.0.1:9092 --create --topic t --partitions 4
#   tools/kafka/kafka.sh console-consumer --bootstrap-server ... --topic t \
#       --from-beginning --isolation-level read_committed
#   tools/kafka/kafka.sh run-class CLASS [ARGS...]   any other main class
#   tools/kafka/kafka.sh list                        the tool names and their classes
#
# TOOL is the name of Kafka's bin/kafka-TOOL.sh script: topics, console-consumer,
# console-producer, consumer-perf-test, producer-perf-test, consumer-groups,
# transactions, get-offsets, configs, delete-records, dump-log, metadata-quorum.
# JVM options: WEIR_KAFKA_TOOL_OPTS (see lib.sh's tool_jvm_opts).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tools/kafka/lib.sh
. "$here/lib.sh"

TOOLS="topics console-consumer console-producer consumer-perf-test producer-perf-test
consumer-groups transactions get-offsets configs delete-records dump-log metadata-quorum"

[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
tool="$1"
shift
# Accept the script names too (kafka-topics.sh, kafka-topics).
tool="${tool%.sh}"
tool="${tool#kafka-}"

install_kafka

case "$tool" in
    list)
        for t in $TOOLS storage broker; do
            class="$(main_class "$t" 2>/dev/null)" || class="(not in Kafka $KAFKA_VERSION)"
            printf '%-20s %s\n' "$t" "$class"
        done
        ;;
    run-class)
        [ $# -ge 1 ] || die "run-class wants a class name"
        class="$1"
        shift
        read -r -a opts <<<"$(tool_jvm_opts "$class")"
        exec "$JAVA" "${opts[@]}" -Djava.awt.headless=true \
            -Dlog4j2.configurationFile="$KAFKA_TOOLS_LOG4J" \
            -cp "$KAFKA_LIBS/*" "$class" "$@"
        ;;
    *)
        tool_cmd "$tool"
        exec "${TOOL_CMD[@]}" "$@"
        ;;
esac
