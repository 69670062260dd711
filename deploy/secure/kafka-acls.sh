#!/usr/bin/env bash
# The Kafka ACLs of backscroll's principals (docs/security.md), with Kafka's own kafka-acls.sh.
# Run once per cluster by an administrator; the principals are SCRAM users created beforehand:
#   kafka-configs.sh --bootstrap-server "$BOOTSTRAP" --command-config admin.properties --alter \
#     --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users --entity-name sl-agent
#
#   BOOTSTRAP=kafka-0.example.internal:9093 ADMIN_CONFIG=admin.properties bash kafka-acls.sh
#
# admin.properties holds the administrator's SASL_SSL client settings (never commit it).
set -euo pipefail
: "${BOOTSTRAP:?set BOOTSTRAP=host:port}" "${ADMIN_CONFIG:?set ADMIN_CONFIG=admin.properties}"
TOPIC=${TOPIC:-backscroll.entries}
DLQ=$TOPIC.dlq
GROUP=${GROUP:-backscroll-indexer}
AGENT=${AGENT:-sl-agent} INDEXER=${INDEXER:-sl-indexer} OPERATOR=${OPERATOR:-sl-operator}

acl() { kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" --add "$@"; }

# topics first (components are not allowed to create them)
kafka-topics.sh --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" --create --if-not-exists \
    --topic "$TOPIC" --partitions 12 --config retention.ms=-1 --config max.message.bytes=5242880
kafka-topics.sh --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" --create --if-not-exists \
    --topic "$DLQ" --partitions 1 --config retention.ms=-1 --config max.message.bytes=5242880

# agents: produce to the entries topic only
acl --allow-principal "User:$AGENT" --operation Write --operation Describe --topic "$TOPIC"
# indexer: consume the entries topic in its group, produce dead letters
acl --allow-principal "User:$INDEXER" --operation Read --operation Describe --topic "$TOPIC"
acl --allow-principal "User:$INDEXER" --operation Read --group "$GROUP"
acl --allow-principal "User:$INDEXER" --operation Write --operation Describe --topic "$DLQ"
# operator: rebuild (replay in new groups), dlq list/replay
acl --allow-principal "User:$OPERATOR" --operation Read --operation Write --operation Describe --topic "$TOPIC"
acl --allow-principal "User:$OPERATOR" --operation Read --operation Describe --topic "$DLQ"
acl --allow-principal "User:$OPERATOR" --operation Read --group backscroll- --resource-pattern-type prefixed
