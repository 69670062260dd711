#!/usr/bin/env bash
# backscroll local stack: a REAL single-node Apache Kafka (KRaft, broker+controller) and a REAL
# single-node OpenSearch on 127.0.0.1, both built from Maven Central artifacts (no Docker).
#
#   stack.sh fetch                       download artifacts into the cache (no-op when cached)
#   stack.sh up [--fresh] [--secure]     fetch if needed, start what is not running, wait for ready
#                                        (--secure: TLS, SASL/SCRAM, ACLs, security plugin; secure.sh)
#   stack.sh down                        stop exactly the pids recorded by up (TERM, 30 s, KILL)
#   stack.sh status                      state of each server; exit 0 only when both answer
#   stack.sh start-kafka | stop-kafka    one server only; data is kept (for fault tests)
#   stack.sh start-opensearch | stop-opensearch
#
# Environment: see deploy/README.md (BACKSCROLL_CACHE_DIR, BACKSCROLL_STACK_DIR, ports, heaps ...).
set -Eeuo pipefail
set +m            # no job control: background servers must not become process-group leaders
umask 022
export LC_ALL=C

# ----------------------------------------------------------------------------- secured mode
# `up --secure`, or any command on a stack dir that an earlier `up --secure` made (secure.sh)
SECURE=0
for _arg in "$@"; do [[ $_arg == --secure ]] && SECURE=1; done
[[ -f ${BACKSCROLL_STACK_DIR:-/var/tmp/backscroll-stack}/secure/MODE ]] && SECURE=1

# ----------------------------------------------------------------------------- versions
readonly KAFKA_VERSION=4.3.1
readonly LOG4J_VERSION=2.25.4          # what kafka-server 4.3.1's own pom declares
if ((SECURE)); then
    # the security plugin must match exactly; Maven Central serves opensearch-security 2.19.4.0
    # but no 2.19.5.0 / 2.19.6.0, so the secured stack pins OpenSearch 2.19.4
    readonly OPENSEARCH_VERSION=2.19.4
else
    readonly OPENSEARCH_VERSION=2.19.6
fi
readonly ANALYSIS_COMMON_CLASS=org.opensearch.analysis.common.CommonAnalysisPlugin
readonly DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
readonly OS_USER=backscroll-os

# ----------------------------------------------------------------------------- settings
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_DIR=${BACKSCROLL_CACHE_DIR:-${HOME:-/root}/.cache/backscroll}
STACK_DIR=${BACKSCROLL_STACK_DIR:-/var/tmp/backscroll-stack}
JAVA_HOME_DIR=${BACKSCROLL_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
JAVA_BIN=$JAVA_HOME_DIR/bin/java
KAFKA_PORT=${BACKSCROLL_KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${BACKSCROLL_KAFKA_CONTROLLER_PORT:-9093}
OS_PORT=${BACKSCROLL_OPENSEARCH_PORT:-9200}
OS_TRANSPORT_PORT=${BACKSCROLL_OPENSEARCH_TRANSPORT_PORT:-9300}
KAFKA_HEAP=${BACKSCROLL_KAFKA_HEAP:-768m}
OS_HEAP=${BACKSCROLL_OPENSEARCH_HEAP:-512m}
KAFKA_READY_TIMEOUT=${BACKSCROLL_KAFKA_READY_TIMEOUT:-90}
OS_READY_TIMEOUT=${BACKSCROLL_OPENSEARCH_READY_TIMEOUT:-180}
STOP_TIMEOUT=${BACKSCROLL_STOP_TIMEOUT:-30}
FRESH=${BACKSCROLL_STACK_FRESH:-0}
read -r -a MVN_EXTRA <<<"${BACKSCROLL_MVN_ARGS:-}"

# cache (artifacts only; safe to share between stack dirs)
KAFKA_CACHE=$CACHE_DIR/kafka-$KAFKA_VERSION
KAFKA_LIB=$KAFKA_CACHE/lib
OS_ZIP=$CACHE_DIR/opensearch-$OPENSEARCH_VERSION.zip
AC_JAR=$CACHE_DIR/analysis-common-$OPENSEARCH_VERSION.jar

# runtime state
RUN_DIR=$STACK_DIR/run
K_DIR=$STACK_DIR/kafka
K_CONF=$K_DIR/config
K_DATA=$K_DIR/data
K_LOGS=$K_DIR/logs
K_LOG=$K_LOGS/broker.log
K_PIDFILE=$RUN_DIR/kafka.pid
O_DIR=$STACK_DIR/opensearch
O_HOME=$O_DIR/opensearch-$OPENSEARCH_VERSION
O_DATA=$O_DIR/data
O_LOGS=$O_DIR/logs
O_TMP=$O_DIR/tmp
O_STDOUT=$O_LOGS/stdout.log
O_CLUSTER=backscroll-local
O_LOG=$O_LOGS/$O_CLUSTER.log
O_PIDFILE=$RUN_DIR/opensearch.pid
O_URL=http://127.0.0.1:$OS_PORT
CURL_TLS=()   # secured mode: CA + admin client certificate

# A recorded pid only counts as "ours" when its command line contains this marker (guards
# against pid reuse). Both strings contain the stack dir, so two stacks never mix up.
K_PROPS=$K_CONF/server.properties   # secured mode: inside secure/ (it holds passwords)
K_MARKER=$K_PROPS
O_MARKER=$O_HOME/

if ((SECURE)); then
    # shellcheck source=deploy/local/secure.sh
    source "$HERE/secure.sh"
    O_URL=https://127.0.0.1:$OS_PORT
    CURL_TLS=(--cacert "$SEC_TLS/ca.pem" --cert "$SEC_TLS/admin.pem" --key "$SEC_TLS/admin.key")
fi

# ----------------------------------------------------------------------------- helpers
say() { printf '[stack] %s\n' "$*"; }
warn() { printf '[stack] WARNING: %s\n' "$*" >&2; }
die() { printf '[stack] ERROR: %s\n' "$*" >&2; exit 1; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# is_alive PID: process exists and is not a zombie
is_alive() {
    local pid=$1 state
    [[ -r /proc/$pid/stat ]] || return 1
    state=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ -n $state && $state != Z ]]
}

# recorded_pid PIDFILE MARKER: print the recorded pid if it is alive and really ours
recorded_pid() {
    local file=$1 marker=$2 pid
    [[ -s $file ]] || return 1
    pid=$(<"$file")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    is_alive "$pid" || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | contains "$marker" || return 1
    printf '%s\n' "$pid"
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# zip_has ZIP ENTRY: the zip/jar contains ENTRY (no grep -q: it would SIGPIPE unzip under pipefail)
zip_has() { unzip -Z1 "$1" 2>/dev/null | grep -Fx -- "$2" >/dev/null; }

# contains STRING < input: like grep -qF but reads all input (pipefail-safe)
contains() { grep -F -- "$1" >/dev/null; }

# close_inherited_fds: in a subshell about to exec a server, close every fd above 2 (our lock
# fds and whatever the caller leaked, e.g. a pipe a CI runner waits on for EOF)
close_inherited_fds() {
    local fd n
    for fd in "/proc/$BASHPID/fd"/*; do
        n=${fd##*/}
        ((n > 2)) || continue
        eval "exec $n>&-" 2>/dev/null || true
    done
}

take_lock() {   # serialise mutating commands on one stack dir
    mkdir -p "$STACK_DIR"
    exec 9>"$STACK_DIR/.lock"
    flock -w 900 9 || die "another stack.sh holds $STACK_DIR/.lock for more than 15 minutes"
}

# ensure_tools CMD=PKG ...: install missing Debian packages (waits for the dpkg lock)
ensure_tools() {
    local spec cmd pkg missing=()
    for spec in "$@"; do
        cmd=${spec%%=*} pkg=${spec#*=}
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    if ((EUID != 0)) || ! command -v apt-get >/dev/null 2>&1; then
        die "missing tools, please install: ${missing[*]}"
    fi
    say "installing Debian packages: ${missing[*]} (waiting for the dpkg lock if needed)"
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -q)
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install --no-install-recommends "${missing[@]}" ||
        { "${apt[@]}" update && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install --no-install-recommends "${missing[@]}"; } ||
        die "apt-get install ${missing[*]} failed"
}

check_java() {
    [[ -x $JAVA_BIN ]] || die "no java at $JAVA_BIN (set BACKSCROLL_JAVA_HOME to a JDK >= 17)"
}

# ----------------------------------------------------------------------------- fetch
mvn_run() {   # quiet maven; strip the ANSI resets maven 3.8 prints even in batch mode
    mvn -B -ntp -q -Dstyle.color=never "${MVN_EXTRA[@]}" "$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
}

fetch_kafka() {
    [[ -f $KAFKA_CACHE/.complete ]] && return 0
    local t0=$EPOCHREALTIME tmp=$CACHE_DIR/.kafka-$KAFKA_VERSION.$$ jar bindings=()
    say "fetching Kafka $KAFKA_VERSION runtime jars from Maven Central ..."
    rm -rf "$tmp" && mkdir -p "$tmp"
    (cd "$tmp" && mvn_run -f "$HERE/kafka-runtime/pom.xml" "$DEP_PLUGIN:copy-dependencies" \
        -Dkafka.version="$KAFKA_VERSION" -Dlog4j.version="$LOG4J_VERSION" \
        -DincludeScope=runtime -DoutputDirectory="$tmp/lib") ||
        { rm -rf "$tmp"; die "maven could not fetch the Kafka runtime"; }
    [[ -f $tmp/lib/kafka_2.13-$KAFKA_VERSION.jar ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing in $tmp/lib"
    zip_has "$tmp/lib/kafka_2.13-$KAFKA_VERSION.jar" kafka/tools/StorageTool.class ||
        die "kafka.tools.StorageTool not found in kafka_2.13-$KAFKA_VERSION.jar"
    for jar in "$tmp"/lib/*.jar; do   # SLF4J 1.x bindings carry org/slf4j/impl/StaticLoggerBinder
        if zip_has "$jar" org/slf4j/impl/StaticLoggerBinder.class; then bindings+=("${jar##*/}"); fi
    done
    ((${#bindings[@]} == 1)) || die "expected exactly one SLF4J binding in Kafka lib/, found: ${bindings[*]:-none}"
    rm -rf "$KAFKA_CACHE" && mkdir -p "$KAFKA_CACHE"
    mv "$tmp/lib" "$KAFKA_LIB" && rm -rf "$tmp"
    printf 'kafka=%s log4j=%s slf4j-binding=%s\n' "$KAFKA_VERSION" "$LOG4J_VERSION" "${bindings[0]}" >"$KAFKA_CACHE/.complete"
    say "  Kafka: $(find "$KAFKA_LIB" -name '*.jar' | wc -l) jars, $(du -sh "$KAFKA_LIB" | cut -f1), SLF4J binding ${bindings[0]} ($(since "$t0")s)"
}

# fetch_artifact GAV DEST: dependency:copy one artifact to DEST (atomically)
fetch_artifact() {
    local gav=$1 dest=$2 tmp=$CACHE_DIR/.dl.$$ t0=$EPOCHREALTIME
    [[ -s $dest ]] && return 0
    say "fetching $gav from Maven Central ..."
    rm -rf "$tmp" && mkdir -p "$tmp"
    (cd "$tmp" && mvn_run "$DEP_PLUGIN:copy" -Dartifact="$gav" -DoutputDirectory="$tmp/out") ||
        { rm -rf "$tmp"; die "maven could not fetch $gav"; }
    local got=("$tmp"/out/*)
    if ((${#got[@]} != 1)) || [[ ! -s ${got[0]} ]]; then die "unexpected download result for $gav: ${got[*]}"; fi
    unzip -l "${got[0]}" >/dev/null || die "$gav: downloaded file is not a readable zip/jar"
    mv "${got[0]}" "$dest" && rm -rf "$tmp"
    say "  $(basename "$dest"): $(du -sh "$dest" | cut -f1) ($(since "$t0")s)"
}

fetch_opensearch() {
    fetch_artifact "org.opensearch.distribution.integ-test-zip:opensearch:$OPENSEARCH_VERSION:zip" "$OS_ZIP"
    fetch_artifact "org.opensearch.plugin:analysis-common:$OPENSEARCH_VERSION:jar" "$AC_JAR"
    ((SECURE)) && fetch_artifact "org.opensearch.plugin:opensearch-security:$SECURITY_PLUGIN_VERSION:zip" "$SEC_PLUGIN_ZIP"
    return 0
}

# fetch_all [kafka] [opensearch]
fetch_all() {
    local what=("$@") t0=$EPOCHREALTIME need=0
    ((${#what[@]})) || what=(kafka opensearch)
    [[ " ${what[*]} " == *" kafka "* && ! -f $KAFKA_CACHE/.complete ]] && need=1
    [[ " ${what[*]} " == *" opensearch "* && ( ! -s $OS_ZIP || ! -s $AC_JAR ) ]] && need=1
    ((SECURE)) && [[ " ${what[*]} " == *" opensearch "* && ! -s $SEC_PLUGIN_ZIP ]] && need=1
    if ((need == 0)); then
        say "fetch: artifacts already cached in $CACHE_DIR (0.0s, maven not called)"
        return 0
    fi
    ensure_tools mvn=maven unzip=unzip
    mkdir -p "$CACHE_DIR"
    exec 8>"$CACHE_DIR/.fetch.lock"
    flock -w 900 8 || die "another fetch holds $CACHE_DIR/.fetch.lock"
    rm -rf "$CACHE_DIR"/.kafka-*.* "$CACHE_DIR"/.dl.*   # leftovers of an interrupted fetch
    [[ " ${what[*]} " == *" kafka "* ]] && fetch_kafka
    [[ " ${what[*]} " == *" opensearch "* ]] && fetch_opensearch
    exec 8>&-
    say "fetch: done in $(since "$t0")s (cache $CACHE_DIR)"
}

# ----------------------------------------------------------------------------- kafka
write_kafka_config() {
    if ((SECURE)); then sec_write_kafka_config; return 0; fi
    mkdir -p "$K_CONF" "$K_DATA" "$K_LOGS"
    cat >"$K_CONF/server.properties" <<EOF
# written by deploy/local/stack.sh on every start - edit the script, not this file
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$K_DATA
num.partitions=4
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=true
message.max.bytes=4194304
replica.fetch.max.bytes=4194304
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
    cat >"$K_CONF/log4j2.properties" <<'EOF'
# log4j2 config for the backscroll local broker (stdout -> logs/broker.log)
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d{ISO8601}] %-5p %m (%c{1})%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = warn
EOF
}

format_kafka() {
    [[ -f $K_DATA/meta.properties ]] && return 0
    local cid t0=$EPOCHREALTIME
    # cluster id: base64url of 16 random bytes without padding; never starting with '-'
    while :; do
        cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
        [[ $cid != -* ]] && break
    done
    say "kafka: formatting new data dir $K_DATA (cluster id $cid)"
    local tool=(kafka.tools.StorageTool format -t "$cid" -c "$K_PROPS" --ignore-formatted)
    if ((SECURE)); then   # SCRAM users: main class and arguments from a 0600 @argfile
        sec_format_argfile "$K_DIR/.format.args" "${tool[@]}"
        tool=("@$K_DIR/.format.args")
    fi
    if ! "$JAVA_BIN" -Xmx256m -Dlog4j2.configurationFile="$K_CONF/log4j2.properties" -cp "$KAFKA_LIB/*" \
        "${tool[@]}" >"$K_LOGS/format.log" 2>&1; then
        rm -f "$K_DIR/.format.args"
        cat "$K_LOGS/format.log" >&2
        die "kafka storage format failed"
    fi
    rm -f "$K_DIR/.format.args"
    printf '%s\n' "$cid" >"$K_DIR/cluster.id"
    say "kafka: formatted in $(since "$t0")s"
}

launch_kafka() {
    write_kafka_config
    format_kafka
    {
        printf '\n===== %s stack.sh: starting Kafka %s on 127.0.0.1:%s =====\n' "$(date -Is)" "$KAFKA_VERSION" "$KAFKA_PORT"
    } >>"$K_LOG"
    (
        cd "$K_DIR"
        close_inherited_fds
        exec setsid "$JAVA_BIN" -Xms256m "-Xmx$KAFKA_HEAP" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
            -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError \
            "-XX:ErrorFile=$K_LOGS/hs_err_pid%p.log" -Djava.awt.headless=true \
            -Dlog4j2.configurationFile="$K_CONF/log4j2.properties" \
            -cp "$KAFKA_LIB/*" kafka.Kafka "$K_PROPS"
    ) </dev/null >>"$K_LOG" 2>&1 8>&- 9>&- &
    printf '%s\n' "$!" >"$K_PIDFILE"
}

kafka_answers() {   # protocol-level: a Metadata response that lists our broker
    port_open "$KAFKA_PORT" || return 1   # fast path while the listener is not bound yet
    if ((SECURE)); then sec_kafka_answers; return; fi
    kcat -L -b "127.0.0.1:$KAFKA_PORT" -m 5 2>/dev/null | contains "broker 1 at 127.0.0.1:$KAFKA_PORT"
}

# ----------------------------------------------------------------------------- opensearch
run_as_os_user() {   # run a command as the OpenSearch user (root) or as ourselves (non-root)
    if ((EUID == 0)); then
        setpriv --reuid="$OS_USER" --regid="$OS_USER" --init-groups -- "$@"
    else
        "$@"
    fi
}

ensure_os_user() {
    ((EUID == 0)) || return 0
    id -u "$OS_USER" >/dev/null 2>&1 && return 0
    say "creating system user $OS_USER (OpenSearch refuses to run as root)"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$OS_USER" || die "useradd $OS_USER failed"
}

install_opensearch_home() {
    local marker=$O_HOME/.backscroll-installed
    [[ -f $marker ]] && return 0
    local t0=$EPOCHREALTIME tmp=$O_DIR/.unpack.$$
    say "opensearch: unpacking $OS_ZIP into $O_DIR"
    rm -rf "$tmp" "$O_HOME" && mkdir -p "$tmp"
    unzip -q "$OS_ZIP" -d "$tmp" || die "unzip $OS_ZIP failed"
    mv "$tmp/opensearch-$OPENSEARCH_VERSION" "$O_HOME" && rm -rf "$tmp"
    chmod +x "$O_HOME"/bin/*
    local mods
    mods=$(ls "$O_HOME/modules")
    [[ $mods == transport-netty4 ]] || warn "integ-test-zip modules are '$mods' (expected only transport-netty4)"
    # analysis-common (ngram, edge_ngram, asciifolding, ...) is not in the integ-test-zip: add it
    # as a module from its Maven Central jar with a hand-written descriptor. extended.plugins is
    # left empty on purpose (the official one says lang-painless, which is absent here).
    local ac=$O_HOME/modules/analysis-common
    mkdir -p "$ac"
    cp "$AC_JAR" "$ac/"
    zip_has "$AC_JAR" "${ANALYSIS_COMMON_CLASS//.//}.class" ||
        die "$ANALYSIS_COMMON_CLASS not found in $AC_JAR"
    cat >"$ac/plugin-descriptor.properties" <<EOF
# hand-written by backscroll deploy/local/stack.sh (the descriptor is not inside the jar)
description=Adds analysis components (ngram, edge_ngram, asciifolding, ...) - from the Maven Central jar
version=$OPENSEARCH_VERSION
name=analysis-common
classname=$ANALYSIS_COMMON_CLASS
java.version=11
opensearch.version=$OPENSEARCH_VERSION
custom.foldername=
extended.plugins=
has.native.controller=false
EOF
    printf 'opensearch=%s modules=transport-netty4,analysis-common\n' "$OPENSEARCH_VERSION" >"$marker"
    say "opensearch: home ready in $(since "$t0")s"
}

write_opensearch_config() {
    mkdir -p "$O_DATA" "$O_LOGS" "$O_TMP"
    cat >"$O_HOME/config/opensearch.yml" <<EOF
# written by deploy/local/stack.sh on every start - edit the script, not this file
cluster.name: $O_CLUSTER
node.name: backscroll-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: $OS_PORT
transport.port: $OS_TRANSPORT_PORT
path.data: $O_DATA
path.logs: $O_LOGS
cluster.routing.allocation.disk.threshold_enabled: false
action.auto_create_index: true
EOF
    ((SECURE)) && sec_write_opensearch_config
    if ((EUID == 0)); then
        chown "$OS_USER:$OS_USER" "$O_DIR"
        find "$O_DIR" \! -user "$OS_USER" -exec chown -h "$OS_USER:$OS_USER" {} +
        if ! run_as_os_user test -w "$O_DATA" -a -w "$O_LOGS" -a -w "$O_HOME/config" -a -r "$O_HOME/config/opensearch.yml"; then
            local d="" part parts=()
            IFS=/ read -r -a parts <<<"${O_DIR#/}"
            for part in "${parts[@]}"; do   # top-down: report the first directory that blocks
                d+=/$part
                run_as_os_user test -x "$d" ||
                    die "user $OS_USER cannot traverse $d - pick a BACKSCROLL_STACK_DIR whose parents are all o+x (not under /root)"
            done
            die "user $OS_USER cannot write $O_DATA / $O_LOGS / $O_HOME/config"
        fi
    fi
}

launch_opensearch() {
    install_opensearch_home
    ((SECURE)) && sec_install_plugin
    write_opensearch_config
    {
        printf '\n===== %s stack.sh: starting OpenSearch %s on %s =====\n' "$(date -Is)" "$OPENSEARCH_VERSION" "$O_URL"
    } >>"$O_STDOUT"
    local as_user=()
    ((EUID == 0)) && as_user=(setpriv "--reuid=$OS_USER" "--regid=$OS_USER" --init-groups --)
    # setsid, setpriv, env and bin/opensearch all exec: the recorded pid becomes the JVM pid.
    (
        cd "$O_HOME"
        close_inherited_fds
        exec setsid "${as_user[@]}" env -i \
            PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME="$O_TMP" LANG=C.UTF-8 \
            OPENSEARCH_JAVA_HOME="$JAVA_HOME_DIR" JAVA_HOME="$JAVA_HOME_DIR" \
            OPENSEARCH_PATH_CONF="$O_HOME/config" OPENSEARCH_TMPDIR="$O_TMP" \
            OPENSEARCH_JAVA_OPTS="-Xms$OS_HEAP -Xmx$OS_HEAP" \
            "$O_HOME/bin/opensearch"
    ) </dev/null >>"$O_STDOUT" 2>&1 8>&- 9>&- &
    printf '%s\n' "$!" >"$O_PIDFILE"
}

opensearch_answers() {
    curl -fsS -o /dev/null --max-time 5 "${CURL_TLS[@]}" "$O_URL/_cluster/health?wait_for_status=yellow&timeout=2s" 2>/dev/null
}

opensearch_verify() {   # after the first ready: right version, analysis-common loaded
    local info mods
    info=$(curl -fsS --max-time 10 "${CURL_TLS[@]}" "$O_URL/") || die "GET $O_URL/ failed"
    grep -q "\"number\" *: *\"$OPENSEARCH_VERSION\"" <<<"$info" ||
        die "server on $O_URL is not OpenSearch $OPENSEARCH_VERSION: $info"
    mods=$(curl -fsS --max-time 10 "${CURL_TLS[@]}" "$O_URL/_nodes/plugins?filter_path=nodes.*.modules.name") ||
        die "GET _nodes/plugins failed"
    grep -q '"analysis-common"' <<<"$mods" || die "analysis-common module not loaded: $mods"
}

# ----------------------------------------------------------------------------- generic start/stop
# per component: pidfile, marker, log to show, ready timeout, port(s)
comp_pidfile() { case $1 in kafka) echo "$K_PIDFILE" ;; opensearch) echo "$O_PIDFILE" ;; esac; }
comp_marker() { case $1 in kafka) echo "$K_MARKER" ;; opensearch) echo "$O_MARKER" ;; esac; }
comp_log() { case $1 in kafka) echo "$K_LOG" ;; opensearch) echo "$O_STDOUT" ;; esac; }
comp_timeout() { case $1 in kafka) echo "$KAFKA_READY_TIMEOUT" ;; opensearch) echo "$OS_READY_TIMEOUT" ;; esac; }
comp_ports() { case $1 in kafka) echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT" ;; opensearch) echo "$OS_PORT $OS_TRANSPORT_PORT" ;; esac; }
comp_where() {
    case $1 in
    kafka) echo "127.0.0.1:$KAFKA_PORT" ;;
    opensearch) echo "$O_URL" ;;
    esac
}
comp_answers() { "${1}_answers"; }

declare -A START_TS=() WAIT_PID=() LAUNCHED=()

# start_comp NAME: launch NAME unless our recorded pid is already running
start_comp() {
    local c=$1 pidfile pid port
    pidfile=$(comp_pidfile "$c")
    if pid=$(recorded_pid "$pidfile" "$(comp_marker "$c")"); then
        say "$c: already running (pid $pid)"
        WAIT_PID[$c]=$pid START_TS[$c]=$EPOCHREALTIME
        return 0
    fi
    rm -f "$pidfile"
    for port in $(comp_ports "$c"); do
        port_open "$port" && die "$c: port 127.0.0.1:$port is already in use by a process this stack did not start (see: ss -ltnp 'sport = :$port')"
    done
    mkdir -p "$RUN_DIR"
    local t0=$EPOCHREALTIME
    "launch_$c"
    WAIT_PID[$c]=$(<"$pidfile") START_TS[$c]=$t0 LAUNCHED[$c]=1
    say "$c: started pid ${WAIT_PID[$c]} (log: $(comp_log "$c"))"
}

# wait_ready NAME...: poll until every NAME answers; fail fast when a pid dies
wait_ready() {
    local pending=("$@") next c pid waited
    while ((${#pending[@]})); do
        next=()
        for c in "${pending[@]}"; do
            if comp_answers "$c"; then
                if [[ -n ${LAUNCHED[$c]:-} ]]; then
                    [[ $c == opensearch ]] && opensearch_verify
                    pid=${WAIT_PID[$c]}
                    tr '\0' ' ' <"/proc/$pid/cmdline" | contains "$(comp_marker "$c")" ||
                        warn "$c: recorded pid $pid does not look like the server JVM"
                    say "$c: READY at $(comp_where "$c") - start->ready $(since "${START_TS[$c]}")s (pid $pid)"
                else
                    say "$c: answering at $(comp_where "$c") (pid ${WAIT_PID[$c]})"
                fi
                continue
            fi
            pid=${WAIT_PID[$c]}
            if ! is_alive "$pid"; then
                rm -f "$(comp_pidfile "$c")"
                printf '[stack] ----- last lines of %s -----\n' "$(comp_log "$c")" >&2
                tail -n 60 "$(comp_log "$c")" >&2 || true
                die "$c: process $pid died before it answered"
            fi
            waited=$(since "${START_TS[$c]}")
            if awk -v w="$waited" -v t="$(comp_timeout "$c")" 'BEGIN { exit !(w > t) }'; then
                printf '[stack] ----- last lines of %s -----\n' "$(comp_log "$c")" >&2
                tail -n 60 "$(comp_log "$c")" >&2 || true
                die "$c: pid $pid still not answering after ${waited}s (left running; 'stack.sh down' stops it)"
            fi
            next+=("$c")
        done
        pending=("${next[@]}")
        ((${#pending[@]} == 0)) || sleep 1
    done
}

# stop_comp NAME: TERM the recorded pid, wait up to STOP_TIMEOUT s, then KILL
stop_comp() {
    local c=$1 pidfile pid t0=$EPOCHREALTIME
    pidfile=$(comp_pidfile "$c")
    if ! pid=$(recorded_pid "$pidfile" "$(comp_marker "$c")"); then
        if [[ -e $pidfile ]]; then
            say "$c: not running (removing stale pid file $pidfile)"
            rm -f "$pidfile"
        else
            say "$c: not running"
        fi
        return 0
    fi
    say "$c: stopping pid $pid (TERM)"
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
        is_alive "$pid" || break
        sleep 0.2
    done
    if is_alive "$pid"; then
        warn "$c: pid $pid still alive after ${STOP_TIMEOUT}s - sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            is_alive "$pid" || break
            sleep 0.2
        done
        is_alive "$pid" && die "$c: pid $pid survived KILL"
    fi
    rm -f "$pidfile"
    say "$c: stopped in $(since "$t0")s"
}

status_comp() {   # prints one line; returns 0 when the server answers
    local c=$1 pid
    if pid=$(recorded_pid "$(comp_pidfile "$c")" "$(comp_marker "$c")"); then
        if comp_answers "$c"; then
            printf '%-11s running (pid %s), answering at %s%s\n' "$c:" "$pid" "$(comp_where "$c")" "$(status_extra "$c")"
            return 0
        fi
        printf '%-11s running (pid %s) but NOT answering at %s\n' "$c:" "$pid" "$(comp_where "$c")"
        return 1
    fi
    local port busy=""
    for port in $(comp_ports "$c"); do port_open "$port" && busy+=" $port"; done
    if [[ -n $busy ]]; then
        printf '%-11s not running (but port(s)%s on 127.0.0.1 are used by another process)\n' "$c:" "$busy"
    else
        printf '%-11s not running\n' "$c:"
    fi
    return 1
}

status_extra() {
    case $1 in
    kafka) printf ' (Kafka %s, cluster id %s)' "$KAFKA_VERSION" "$(cat "$K_DIR/cluster.id" 2>/dev/null || echo '?')" ;;
    opensearch)
        local h
        h=$(curl -fsS --max-time 5 "${CURL_TLS[@]}" "$O_URL/_cluster/health" 2>/dev/null | grep -o '"status":"[a-z]*"' | cut -d'"' -f4)
        printf ' (OpenSearch %s, health %s)' "$OPENSEARCH_VERSION" "${h:-?}"
        ;;
    esac
}

print_locations() {
    say "logs:   kafka      $K_LOG"
    say "        opensearch $O_LOG (stdout: $O_STDOUT)"
    say "state:  $STACK_DIR (pids in $RUN_DIR)   cache: $CACHE_DIR"
}

wipe_data() {
    say "fresh start: wiping Kafka and OpenSearch data and logs under $STACK_DIR"
    rm -rf "$K_DATA" "$K_LOGS" "$K_DIR/cluster.id" "$O_DATA" "$O_LOGS" "$O_TMP"
    if ((SECURE)); then rm -rf "$SEC_DIR"; fi
}

# ----------------------------------------------------------------------------- commands
prepare_start() {   # $@ = components to be started
    check_java
    local tools=(kcat=kcat curl=curl unzip=unzip flock=util-linux)
    ensure_tools "${tools[@]}"
    ((SECURE)) && sec_prepare
    [[ " $* " == *" opensearch "* ]] && ((EUID == 0)) && { command -v setpriv >/dev/null || die "setpriv missing (util-linux)"; ensure_os_user; }
    return 0
}

cmd_up() {
    local t0=$EPOCHREALTIME arg
    for arg in "$@"; do
        case $arg in
        --fresh) FRESH=1 ;;
        --secure) ;;   # read at the top (SECURE)
        *) die "up: unknown option $arg" ;;
        esac
    done
    take_lock
    if ((SECURE)) && [[ $FRESH != 1 && ! -f $SEC_DIR/MODE && -f $K_DATA/meta.properties ]]; then
        die "$STACK_DIR holds a plain stack: use 'up --fresh --secure' or another BACKSCROLL_STACK_DIR"
    fi
    if ((SECURE)) && [[ $FRESH == 1 ]]; then   # stop before prepare_start: it may make a new CA
        stop_comp opensearch
        stop_comp kafka
        wipe_data
        FRESH=0
    fi
    prepare_start kafka opensearch
    ((SECURE)) && printf 'secure opensearch=%s security=%s\n' "$OPENSEARCH_VERSION" "$SECURITY_PLUGIN_VERSION" >"$SEC_DIR/MODE"
    local tf=$EPOCHREALTIME
    fetch_all kafka opensearch
    local fetch_s
    fetch_s=$(since "$tf")
    if [[ $FRESH == 1 ]]; then
        stop_comp opensearch
        stop_comp kafka
        wipe_data
    fi
    if recorded_pid "$K_PIDFILE" "$K_MARKER" >/dev/null && recorded_pid "$O_PIDFILE" "$O_MARKER" >/dev/null &&
        kafka_answers && opensearch_answers; then
        say "stack is already up (nothing to do)"
        ((SECURE)) && sec_provision
        status_comp kafka || true
        status_comp opensearch || true
        print_locations
        return 0
    fi
    start_comp kafka
    start_comp opensearch
    wait_ready kafka opensearch
    ((SECURE)) && sec_provision
    say "stack is UP in $(since "$t0")s total (fetch ${fetch_s}s)"
    say "Kafka bootstrap: 127.0.0.1:$KAFKA_PORT   OpenSearch: $O_URL"
    print_locations
}

cmd_start_one() {
    local c=$1 t0=$EPOCHREALTIME
    take_lock
    prepare_start "$c"
    fetch_all "$c"
    start_comp "$c"
    wait_ready "$c"
    say "$c: up in $(since "$t0")s total"
}

cmd_down() {
    take_lock
    stop_comp opensearch
    stop_comp kafka
    say "stack is down (data kept in $STACK_DIR; 'up --fresh' wipes it)"
}

cmd_status() {
    local rc=0
    status_comp kafka || rc=1
    status_comp opensearch || rc=1
    print_locations
    return $rc
}

usage() {
    sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd=${1:-}
    (($#)) && shift
    case $cmd in
    fetch)
        (($# == 0)) || die "fetch takes no arguments"
        fetch_all kafka opensearch
        ;;
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    start-kafka) cmd_start_one kafka ;;
    start-opensearch) cmd_start_one opensearch ;;
    stop-kafka) take_lock && stop_comp kafka ;;
    stop-opensearch) take_lock && stop_comp opensearch ;;
    -h | --help | help) usage ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
}

main "$@"
