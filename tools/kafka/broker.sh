#!/usr/bin/env bash
# A real single-node Apache Kafka (KRaft: one process is both broker and
# controller) on 127.0.0.1, for weir's Kafka connector tests and benchmarks.
#
#   tools/kafka/broker.sh install            download Java (if missing) and Kafka's jars, once
#   addr=$(tools/kafka/broker.sh start [--port N])   start it; prints only HOST:PORT
#   tools/kafka/broker.sh status             prints HOST:PORT and exits 0 if running
#   tools/kafka/broker.sh restart            stop + start, keeping topics and offsets
#   tools/kafka/broker.sh stop [--clean]     stop it; --clean also deletes its data
#   tools/kafka/broker.sh stop --kill        SIGKILL at once: a crash, for recovery tests
#   tools/kafka/broker.sh clean              stop it if running and delete its data
#
# Only the bootstrap address goes to stdout; progress and errors go to stderr.
# Environment (see tools/kafka/README.md):
#   WEIR_KAFKA_DIR    data dir: config, topics, logs, pid  (/tmp/weir-kafka)
#   WEIR_CACHE        where the jars are cached            (~/.cache/weir)
#   WEIR_KAFKA_PORT   preferred client port                (9092)
#   WEIR_KAFKA_HEAP   broker heap flags                    (-Xms128m -Xmx512m)
#   WEIR_KAFKA_START_TIMEOUT / WEIR_KAFKA_STOP_TIMEOUT     seconds (60 / 30)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tools/kafka/lib.sh
. "$here/lib.sh"

HOST=127.0.0.1
DATA_DIR="${WEIR_KAFKA_DIR:-/tmp/weir-kafka}"
DEFAULT_PORT="${WEIR_KAFKA_PORT:-9092}"
START_TIMEOUT="${WEIR_KAFKA_START_TIMEOUT:-60}"
STOP_TIMEOUT="${WEIR_KAFKA_STOP_TIMEOUT:-30}"
# Half a gigabyte is plenty for tests and leaves the machine (2 cores, shared
# with a Rust build) its memory; Kafka's own default is 1 GiB.
HEAP="${WEIR_KAFKA_HEAP:--Xms128m -Xmx512m}"

CONF="$DATA_DIR/server.properties"
CLIENT_CONF="$DATA_DIR/ready-client.properties"
PID_FILE="$DATA_DIR/broker.pid"
# "CLIENT_PORT CONTROLLER_PORT", kept across restarts so the address that the
# tests were given stays valid.
PORTS_FILE="$DATA_DIR/ports"
STORE="$DATA_DIR/data"
LOG_DIR="$DATA_DIR/logs"
# Marks a directory as ours, so `clean` never deletes a WEIR_KAFKA_DIR that
# was set by mistake to something else.
MARKER="$DATA_DIR/.weir-kafka"

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# --- the running broker ---------------------------------------------------------

# Prints the broker's pid if it is running. The pid file alone is not trusted:
# after a reboot or a crash its number may belong to another process, so the
# process must also be a kafka.Kafka started with our config.
broker_pid() {
    local pid cmdline
    [ -f "$PID_FILE" ] || return 1
    pid="$(cat "$PID_FILE")"
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
    case "$cmdline" in
        *kafka.Kafka*"$CONF"*) echo "$pid" ;;
        *) return 1 ;;
    esac
}

# True while the process runs. kill -0 alone also succeeds on a zombie, which
# is what a broker that this script started (and so is the parent of) becomes
# when it dies before the script exits.
alive() {
    local state
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

client_port() { cut -d' ' -f1 "$PORTS_FILE"; }
address() { echo "$HOST:$(client_port)"; }

# True if something accepts TCP connections on the port.
port_in_use() {
    (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

# A port nothing listens on: asks the kernel for one where python3 exists,
# else walks up from 19092.
free_port() {
    local port
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
        return 0
    fi
    for ((port = 19092; port < 20092; port++)); do
        port_in_use "$port" || { echo "$port"; return 0; }
    done
    die "no free port found between 19092 and 20091"
}

# Decides the client and controller ports and records them in $PORTS_FILE.
# --port N is taken as given (an error if busy). Otherwise a data dir that has
# run before keeps its ports, so a restart keeps its address; a new one takes
# 9092 (WEIR_KAFKA_PORT), or any free port when that one is busy: callers use
# the address that start prints, never a hard-coded one.
choose_ports() {
    local requested="$1" port cport
    if [ -n "$requested" ]; then
        port="$requested"
        port_in_use "$port" && die "port $port is already in use"
    elif [ -f "$PORTS_FILE" ]; then
        port="$(client_port)"
        port_in_use "$port" &&
            die "port $port, recorded in $PORTS_FILE, is in use by another process;" \
                "stop it, pass --port, or clean the data dir"
    else
        port="$DEFAULT_PORT"
        if port_in_use "$port"; then
            port="$(free_port)"
            say "port $DEFAULT_PORT is busy; using $port"
        fi
    fi
    cport="$(cut -s -d' ' -f2 "$PORTS_FILE" 2>/dev/null || true)"
    if [ -z "$cport" ] || [ "$cport" = "$port" ] || port_in_use "$cport"; then
        cport=$((port + 1))
        if port_in_use "$cport"; then
            cport="$(free_port)"
        fi
    fi
    echo "$port $cport" >"$PORTS_FILE"
}

# Rewritten at every start (from the recorded ports), so a change here reaches
# an existing data dir.
write_config() {
    local port cport
    read -r port cport <"$PORTS_FILE"
    cat >"$CONF" <<EOF
# Generated by weir's tools/kafka/broker.sh at every start: edits are lost.
# One process is the whole cluster: broker and the only KRaft controller.
process.roles=broker,controller
node.id=1
# A static quorum (the voter named here) needs no --standalone or
# --initial-controllers when formatting, and stays the same across restarts.
controller.quorum.voters=1@$HOST:$cport
listeners=PLAINTEXT://$HOST:$port,CONTROLLER://$HOST:$cport
# Clients only ever see the broker listener; the controller's is internal.
advertised.listeners=PLAINTEXT://$HOST:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$STORE

# Tests may produce to a topic before creating it.
auto.create.topics.enable=true
num.partitions=1
default.replication.factor=1
min.insync.replicas=1

# The internal topics default to three replicas, which one broker cannot
# host: consumer groups, transactions and share groups would never start.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Fewer partitions than the default 50 for the internal topics: they are
# created at first use, and 50 of each makes that first use slow.
offsets.topic.num.partitions=8
transaction.state.log.num.partitions=8

# A consumer that joins a group gets its partitions at once instead of after
# the default 3 s wait for more members.
group.initial.rebalance.delay.ms=0

# Few threads: the machine has 2 cores, shared with the Rust build and the
# tests themselves. The log cleaner's buffer (for the compacted internal
# topics) is on the heap; 128 MiB of 512 would be a lot.
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=33554432
EOF
    # The readiness probe's admin client: fail fast instead of waiting
    # a minute for a broker that is not up yet.
    cat >"$CLIENT_CONF" <<EOF
request.timeout.ms=5000
default.api.timeout.ms=8000
EOF
}

# Formats the storage the first time: a KRaft log dir must carry a cluster id
# and the bootstrap metadata before the broker will start on it.
format_if_new() {
    [ -f "$STORE/meta.properties" ] && return 0
    local cluster_id
    cluster_id="$(run_tool storage random-uuid 2>>"$LOG_DIR/format.log")"
    say "formatting $STORE (cluster id $cluster_id)"
    run_tool storage format -t "$cluster_id" -c "$CONF" >>"$LOG_DIR/format.log" 2>&1 || {
        tail -n 20 "$LOG_DIR/format.log" >&2
        die "formatting the storage failed (log: $LOG_DIR/format.log)"
    }
}

launch() {
    local heap extra
    read -r -a heap <<<"$HEAP"
    read -r -a extra <<<"${WEIR_KAFKA_JVM_OPTS:-}"
    # G1 with one GC thread each and two JIT threads: a background service on
    # a 2-core machine, not a benchmark subject. setsid + nohup: the broker
    # outlives this script and the terminal or CI step that ran it. 9>&-: it
    # must not inherit the start/stop lock (see lock), or hold it forever.
    (
        # Nor may it inherit any other descriptor of its caller: a pipe that
        # a CI runner or `$(...)` reads until EOF would never see EOF while
        # the broker lives.
        for fd in /proc/"$BASHPID"/fd/*; do
            fd="${fd##*/}"
            if [ "$fd" -gt 2 ]; then
                eval "exec $fd>&-" 2>/dev/null || true
            fi
        done
        exec setsid nohup "$JAVA" -server "${heap[@]}" \
            -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
            -XX:+ExplicitGCInvokesConcurrent -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1 \
            -XX:CICompilerCount=2 -XX:+ExitOnOutOfMemoryError \
            -Djava.awt.headless=true \
            -Dkafka.logs.dir="$LOG_DIR" \
            -Dlog4j2.configurationFile="$KAFKA_BROKER_LOG4J" \
            "${extra[@]}" \
            -cp "$KAFKA_LIBS/*" "$(main_class broker)" "$CONF"
    ) </dev/null >"$LOG_DIR/stdout.log" 2>&1 9>&- &
    echo $! >"$PID_FILE"
}

show_logs() {
    local f
    for f in "$LOG_DIR/stdout.log" "$LOG_DIR/server.log"; do
        [ -s "$f" ] || continue
        say "--- last lines of $f"
        tail -n 30 "$f" >&2
    done
}

# Waits until the broker answers a real request (listing topics through the
# admin API), not merely until its port is open: the port opens before the
# controller has elected itself and the broker has registered.
wait_ready() {
    local pid="$1" deadline=$((SECONDS + START_TIMEOUT)) addr
    addr="$(address)"
    tool_cmd topics
    while :; do
        if ! alive "$pid"; then
            show_logs
            rm -f "$PID_FILE"
            die "the broker exited during startup"
        fi
        if port_in_use "$(client_port)" &&
            timeout 20 "${TOOL_CMD[@]}" --bootstrap-server "$addr" \
                --command-config "$CLIENT_CONF" --list >/dev/null 2>>"$LOG_DIR/ready.log"; then
            return 0
        fi
        if ((SECONDS >= deadline)); then
            show_logs
            say "not ready after ${START_TIMEOUT}s; stopping it"
            stop_pid "$pid"
            exit 1
        fi
        sleep 0.5
    done
}

# SIGTERM lets Kafka close its logs cleanly (so the next start skips log
# recovery); SIGKILL only if that takes longer than STOP_TIMEOUT.
stop_pid() {
    local pid="$1" deadline=$((SECONDS + STOP_TIMEOUT))
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$pid"; do
        if ((SECONDS >= deadline)); then
            say "still running after ${STOP_TIMEOUT}s; killing $pid"
            kill -KILL "$pid" 2>/dev/null || true
            while alive "$pid"; do sleep 0.1; done
            break
        fi
        sleep 0.2
    done
    rm -f "$PID_FILE"
}

# --- subcommands ----------------------------------------------------------------

# Serialises start/stop/clean on one data dir (parallel test binaries may all
# try to start the broker). The lock file sits beside the dir, which clean
# removes.
lock() {
    mkdir -p "$(dirname "$DATA_DIR")"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$DATA_DIR.lock"
        flock 9
    fi
}

cmd_start() {
    local requested="" pid
    while [ $# -gt 0 ]; do
        case "$1" in
            --port) [ $# -ge 2 ] || usage; requested="$2"; shift 2 ;;
            --port=*) requested="${1#--port=}"; shift ;;
            *) usage ;;
        esac
    done
    if [ -n "$requested" ] && ! [[ "$requested" =~ ^[0-9]+$ ]]; then
        die "--port wants a number, not '$requested'"
    fi
    lock
    if pid="$(broker_pid)"; then
        if [ -n "$requested" ] && [ "$requested" != "$(client_port)" ]; then
            die "already running on $(address) (pid $pid), not on port $requested"
        fi
        say "already running (pid $pid)"
        address
        return 0
    fi
    install_kafka
    mkdir -p "$DATA_DIR" "$LOG_DIR" "$STORE"
    touch "$MARKER"
    choose_ports "$requested"
    write_config
    format_if_new
    launch
    pid="$(cat "$PID_FILE")"
    say "started pid $pid on $(address); waiting until it serves requests"
    wait_ready "$pid"
    say "ready (data: $DATA_DIR, log: $LOG_DIR/server.log)"
    address
}

cmd_stop() {
    local clean=0 crash=0 pid
    while [ $# -gt 0 ]; do
        case "$1" in
            --clean) clean=1; shift ;;
            --kill) crash=1; shift ;;
            *) usage ;;
        esac
    done
    lock
    if pid="$(broker_pid)"; then
        if [ "$crash" = 1 ]; then
            # No clean shutdown: the next start recovers the logs, as after
            # a power cut. For tests of what a client sees when the broker
            # dies.
            say "killing pid $pid"
            kill -KILL "$pid" 2>/dev/null || true
            while alive "$pid"; do sleep 0.1; done
            rm -f "$PID_FILE"
        else
            say "stopping pid $pid"
            stop_pid "$pid"
        fi
    else
        say "not running"
        rm -f "$PID_FILE"
    fi
    if [ "$clean" = 1 ]; then
        remove_data
    fi
}

remove_data() {
    [ -e "$DATA_DIR" ] || return 0
    [ -f "$MARKER" ] ||
        die "$DATA_DIR has no $(basename "$MARKER") marker: not deleting what broker.sh did not make"
    say "deleting $DATA_DIR"
    rm -rf "$DATA_DIR"
}

cmd_status() {
    local pid
    if pid="$(broker_pid)"; then
        say "running (pid $pid, data $DATA_DIR)"
        address
    else
        say "not running"
        return 1
    fi
}

case "${1:-}" in
    install) shift; [ $# -eq 0 ] || usage; install_kafka ;;
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    clean) shift; [ $# -eq 0 ] || usage; cmd_stop --clean ;;
    restart) shift; cmd_stop; cmd_start "$@" ;;
    status) shift; [ $# -eq 0 ] || usage; cmd_status ;;
    *) usage ;;
esac
