#!/usr/bin/env bash
# End-to-end smoke test of a RUNNING local stack (deploy/local/stack.sh up), re-runnable:
#   kcat -L/-P/-C -e/-G, kafka-python create/produce/group-consume/commit, broker restart
#   (stop-kafka/start-kafka) and group resume, OpenSearch module/_analyze/curl checks,
#   opensearch-py index/bulk/search, OpenSearch restart keeps data, no "unsupported version".
#
#   BACKSCROLL_PYTHON=/path/to/venv/bin/python deploy/local/smoke.sh
#
# Restarts each server once (data is kept). Exit 0 only when every check passed.
set -Eeuo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STACK=$HERE/stack.sh
PY=${BACKSCROLL_PYTHON:-python3}
STACK_DIR=${BACKSCROLL_STACK_DIR:-/var/tmp/backscroll-stack}
B=127.0.0.1:${BACKSCROLL_KAFKA_PORT:-9092}
OS=http://127.0.0.1:${BACKSCROLL_OPENSEARCH_PORT:-9200}
RUN=$(date +%s)-$$
T=smoke-$RUN

ok() { printf 'ok   %s\n' "$*"; }
fail() {
    printf 'FAIL %s\n' "$*" >&2
    exit 1
}
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

"$PY" -c 'import kafka, opensearchpy' 2>/dev/null ||
    fail "$PY cannot import kafka/opensearchpy - set BACKSCROLL_PYTHON to the project venv's python"
"$STACK" status >/dev/null || fail "stack is not up - run: $STACK up"
ok "stack.sh status: both servers answer"

# ---------------------------------------------------------------- kcat (librdkafka 2.0.2)
meta=$(kcat -L -b "$B" -m 5)
grep -F "broker 1 at $B" <<<"$meta" >/dev/null || fail "kcat -L: $meta"
ok "kcat -L lists broker 1 at $B"
printf '%s\n' '{"id":1,"name":"a"}' '{"id":2,"name":"b"}' '{"id":3,"name":"c"}' | kcat -P -b "$B" -t "$T-kcat" ||
    fail "kcat -P"
printf 'k1\t{"id":4}\nk2\t{"id":5}\n' | kcat -P -b "$B" -t "$T-kcat" -K $'\t' || fail "kcat -P -K"
ok "kcat -P produced 5 messages to auto-created topic $T-kcat"
n=$(kcat -C -b "$B" -t "$T-kcat" -o beginning -c 5 -e -q | wc -l)
[[ $n == 5 ]] || fail "kcat -C -e read $n/5"
ok "kcat -C -o beginning -e read 5/5"
ids=$(kcat -C -b "$B" -t "$T-kcat" -o beginning -e -J -q | "$PY" -c '
import json, sys
print(sorted(json.loads(json.loads(line)["payload"])["id"] for line in sys.stdin))')
[[ $ids == "[1, 2, 3, 4, 5]" ]] || fail "kcat -J payloads: $ids"
ok "kcat -C -J envelopes decode to ids $ids"
# (in -G mode "-o beginning" would override the committed offsets on every assignment)
n=$(timeout 60 kcat -b "$B" -G "$T-kgrp" -X auto.offset.reset=earliest -e -q "$T-kcat" | wc -l)
[[ $n == 5 ]] || fail "kcat -G read $n/5"
n=$(timeout 60 kcat -b "$B" -G "$T-kgrp" -X auto.offset.reset=earliest -e -q "$T-kcat" | wc -l)
[[ $n == 0 ]] || fail "kcat -G second run re-read $n messages (offsets not committed?)"
ok "kcat -G (balanced group, JoinGroup/SyncGroup/OffsetCommit) read 5/5, second member resumed with 0"

# ---------------------------------------------------------------- kafka-python + broker restart
"$PY" "$HERE/smoke.py" kafka-produce-consume "$T" "$T-grp"
t0=$EPOCHREALTIME
"$STACK" stop-kafka
"$STACK" start-kafka
ok "Kafka restarted (stop-kafka + start-kafka) in $(since "$t0")s, data kept"
"$PY" "$HERE/smoke.py" kafka-resume "$T" "$T-grp"
n=$(kcat -C -b "$B" -t "$T-kcat" -o beginning -e -q | wc -l)
[[ $n == 5 ]] || fail "after restart kcat read $n/5 from $T-kcat"
ok "after the broker restart $T-kcat still has 5 messages"

# ---------------------------------------------------------------- OpenSearch via curl
ver=$(curl -fsS "$OS/" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["version"]["number"])')
ok "OpenSearch version $ver"
mods=$(curl -fsS "$OS/_nodes/plugins?filter_path=nodes.*.modules.name")
grep -F '"analysis-common"' <<<"$mods" >/dev/null || fail "_nodes/plugins: $mods"
ok "_nodes/plugins: $mods"
an=$(curl -fsS -H 'Content-Type: application/json' "$OS/_analyze" \
    -d '{"tokenizer":"edge_ngram","filter":["asciifolding"],"text":"Café"}')
grep -F '"token":"Ca"' <<<"$an" >/dev/null || fail "_analyze edge_ngram: $an"
an=$(curl -fsS -H 'Content-Type: application/json' "$OS/_analyze" \
    -d '{"tokenizer":{"type":"ngram","min_gram":3,"max_gram":4},"filter":["lowercase","asciifolding"],"text":"Crème"}')
grep -F '"token":"crem"' <<<"$an" >/dev/null || fail "_analyze ngram: $an"
ok "_analyze edge_ngram/ngram + asciifolding work (Crème -> cre, crem, rem, reme, eme)"
s=$(curl -fsS "$OS/_cluster/settings?include_defaults=true&filter_path=**.disk.threshold_enabled,**.auto_create_index")
grep -F '"threshold_enabled":"false"' <<<"$s" >/dev/null || fail "disk threshold setting: $s"
ok "effective settings: $s"
if grep -iE 'unknown setting|illegal_argument' "$STACK_DIR/opensearch/logs/"*.log >/dev/null 2>&1; then
    fail "OpenSearch log has 'unknown setting' / illegal_argument lines"
fi
ok "no 'unknown setting' in the OpenSearch logs"
"$PY" "$HERE/smoke.py" opensearch

# ---------------------------------------------------------------- OpenSearch restart keeps data
curl -fsS -X PUT -H 'Content-Type: application/json' "$OS/$T-persist/_doc/1?refresh=true" \
    -d '{"text":"survives a restart"}' >/dev/null
t0=$EPOCHREALTIME
"$STACK" stop-opensearch
"$STACK" start-opensearch
ok "OpenSearch restarted (stop-opensearch + start-opensearch) in $(since "$t0")s"
curl -fsS "$OS/$T-persist/_doc/1" | grep -F 'survives a restart' >/dev/null || fail "document lost across restart"
ok "document indexed before the restart is still there"
curl -fsS -X DELETE "$OS/$T-persist" >/dev/null

# ---------------------------------------------------------------- protocol errors in the broker log
if grep -iE 'unsupported version|UnsupportedVersion' "$STACK_DIR/kafka/logs/broker.log"; then
    fail "broker log mentions unsupported versions (above)"
fi
ok "broker log: no 'unsupported version'"
echo "ALL SMOKE CHECKS PASSED"
