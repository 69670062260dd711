"""The principal x operation table of the secured stack (docs/security.md), as probes.

Each probe performs one operation with one principal's credentials and returns ``True`` when the
server allowed it and ``False`` when the server refused it for lack of permission; any other
failure raises (a refusal must come from the server's authorizer, not from a broken probe).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import orjson
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
)
from kafka.admin import ResourceType as KafkaResource
from kafka.errors import AuthorizationError, KafkaError
from opensearchpy import OpenSearch
from opensearchpy.exceptions import AuthorizationException, NotFoundError

from backscroll.indexer import OpenSearchSettings
from backscroll.ingest import KafkaSettings, dlq_topic

KafkaProbe = Callable[[KafkaSettings], bool]
#: a valid wire-format header, so an allowed probe leaves nothing for the dead-letter topic
_PROBE_KEY = b"probe-session"
_PROBE_RECORD = orjson.dumps(
    {
        "v": 1,
        "kind": "header",
        "workspace_id": "probe",
        "session_id": "probe-session",
        "created_at": "2026-11-01T00:00:00+00:00",
    }
)
OpenSearchProbe = Callable[[OpenSearch, str], bool]


def _refused(err: BaseException) -> bool:
    """False (not allowed) for the authorizer's refusal; anything else is re-raised."""
    if isinstance(err, AuthorizationError):
        return False
    raise err


def _produce(topic_of: Callable[[KafkaSettings], str]) -> KafkaProbe:
    def probe(kafka: KafkaSettings) -> bool:
        producer = KafkaProducer(**kafka.client_config(), acks="all", max_block_ms=15_000)
        try:
            producer.send(topic_of(kafka), key=_PROBE_KEY, value=_PROBE_RECORD).get(timeout=15)
            return True
        except KafkaError as err:
            return _refused(err)
        finally:
            producer.close(timeout=5)

    return probe


def _consume(topic_of: Callable[[KafkaSettings], str], group: str) -> KafkaProbe:
    def probe(kafka: KafkaSettings) -> bool:
        consumer = KafkaConsumer(
            **kafka.client_config(), group_id=group, enable_auto_commit=False, auto_offset_reset="latest"
        )
        try:
            consumer.subscribe([topic_of(kafka)])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=500)
                if consumer.assignment():
                    return True
            raise AssertionError(f"no refusal and no assignment for {group} within 30 s")
        except KafkaError as err:
            return _refused(err)
        finally:
            consumer.close(autocommit=False)

    return probe


def _admin(action: Callable[[KafkaAdminClient, KafkaSettings], None]) -> KafkaProbe:
    def probe(kafka: KafkaSettings) -> bool:
        admin = KafkaAdminClient(**kafka.client_config())
        try:
            action(admin, kafka)
            return True
        except KafkaError as err:
            return _refused(err)
        finally:
            admin.close()

    return probe


def _create_topic(admin: KafkaAdminClient, kafka: KafkaSettings) -> None:
    admin.create_topics([NewTopic(f"backscroll.probe-{uuid.uuid4().hex[:8]}", 1, 1)])


def _delete_topic(admin: KafkaAdminClient, kafka: KafkaSettings) -> None:
    admin.delete_topics([dlq_topic(kafka.topic)])


def _alter_acls(admin: KafkaAdminClient, kafka: KafkaSettings) -> None:
    pattern = ResourcePattern(KafkaResource.TOPIC, "*", ACLResourcePatternType.LITERAL)
    acl = ACL(f"User:{kafka.sasl_username}", "*", ACLOperation.ALL, ACLPermissionType.ALLOW, pattern)
    failed = admin.create_acls([acl])["failed"]
    if failed:
        err = failed[0][-1] if isinstance(failed[0], tuple) else failed[0]
        if isinstance(err, AuthorizationError) or (
            isinstance(err, type) and issubclass(err, AuthorizationError)
        ):
            raise AuthorizationError(str(err))
        raise AssertionError(f"create_acls failed: {err}")


def kafka_probes(indexer_group: str) -> dict[str, KafkaProbe]:
    return {
        "produce to the entries topic": _produce(lambda k: k.topic),
        "produce to the dead-letter topic": _produce(lambda k: dlq_topic(k.topic)),
        "consume the entries topic in the indexer group": _consume(lambda k: k.topic, indexer_group),
        "read the dead-letter topic (dlq replay group)": _consume(
            lambda k: dlq_topic(k.topic), "backscroll-dlq-replay"
        ),
        "create a topic": _admin(_create_topic),
        "delete a topic": _admin(_delete_topic),
        "alter ACLs": _admin(_alter_acls),
    }


def _os(call: Callable[[OpenSearch, str], object]) -> OpenSearchProbe:
    def probe(client: OpenSearch, prefix: str) -> bool:
        try:
            call(client, prefix)
            return True
        except NotFoundError:
            return True  # authorised, the target just does not exist
        except AuthorizationException:
            return False

    return probe


def _bulk_delete(client: OpenSearch, prefix: str) -> None:
    """A delete inside a bulk: the authorizer answers per item, inside a 200 response."""
    lines = [{"delete": {"_index": f"{prefix}-probe", "_id": "no-such-doc"}}]
    for item in client.bulk(body=lines)["items"]:
        error = item["delete"].get("error") or {}
        if error.get("type") == "security_exception":
            raise AuthorizationException(403, "security_exception", error)


def opensearch_probes() -> dict[str, OpenSearchProbe]:
    return {
        "index a document": _os(
            lambda c, p: c.index(index=f"{p}-probe", body={"workspace_id": "workspace-a"}, refresh=True)
        ),
        "search the backscroll indices": _os(lambda c, p: c.search(index=f"{p}-probe", body={"size": 1})),
        "delete a document": _os(lambda c, p: c.delete(index=f"{p}-probe", id="no-such-doc")),
        "delete a document in a bulk": _os(_bulk_delete),
        "create an index": _os(lambda c, p: c.indices.create(index=f"{p}-new-{uuid.uuid4().hex[:8]}")),
        "delete an index (rebuild)": _os(lambda c, p: c.indices.delete(index=f"{p}-no-such-index")),
        "put an index template": _os(
            lambda c, p: c.indices.put_index_template(
                name=f"{p}-probe-template", body={"index_patterns": [f"{p}-probe-x*"], "template": {}}
            )
        ),
        "put an index template on another application's indices": _os(
            lambda c, p: c.indices.put_index_template(
                name="other-app-template", body={"index_patterns": ["other-app-*"], "template": {}}
            )
        ),
        "read a non-backscroll index": _os(
            lambda c, p: c.search(index="other-tenant-data", body={"size": 1})
        ),
        "change cluster settings": _os(
            lambda c, p: c.cluster.put_settings(
                body={"transient": {"cluster.routing.rebalance.enable": "all"}}
            )
        ),
        "read the security configuration": _os(
            lambda c, p: c.transport.perform_request("GET", "/_plugins/_security/api/internalusers")
        ),
    }


#: component -> allowed Kafka operations (the rest must be refused)
KAFKA_ALLOWED: dict[str, set[str]] = {
    "agent": {"produce to the entries topic"},
    "indexer": {"consume the entries topic in the indexer group", "produce to the dead-letter topic"},
    "operator": {
        "produce to the entries topic",
        "consume the entries topic in the indexer group",
        "read the dead-letter topic (dlq replay group)",
    },
}
_PROJECT = {"index a document", "search the backscroll indices", "create an index"}
_ERASE = {"delete a document", "delete a document in a bulk", "delete an index (rebuild)"}
#: component -> allowed OpenSearch operations (the rest must be refused): projection never
#: deletes, erasing is the operator's, and nobody may write index templates
OPENSEARCH_ALLOWED: dict[str, set[str]] = {
    "indexer": _PROJECT,
    "query": {"search the backscroll indices"},
    "query-scoped": {"search the backscroll indices"},
    "operator": _PROJECT | _ERASE,
}


def opensearch_client(settings: OpenSearchSettings) -> OpenSearch:
    return OpenSearch(**settings.client_kwargs())
