"""Smoke checks of the local stack with the project's own Python clients.

Run with the project's interpreter (kafka-python 3.0.x, opensearch-py 3.x), e.g.

    python deploy/local/smoke.py kafka-produce-consume TOPIC GROUP   # create, produce, consume, commit
    python deploy/local/smoke.py kafka-resume TOPIC GROUP            # new consumer resumes after commit
    python deploy/local/smoke.py opensearch                          # index / bulk / search / _analyze

deploy/local/smoke.sh drives these (and kcat/curl) around a broker restart. Never passes
``api_version`` to kafka-python: the version is negotiated with the broker (see deploy/README.md).
Exits non-zero with a message on the first failed check.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

KAFKA = f"127.0.0.1:{os.environ.get('BACKSCROLL_KAFKA_PORT', '9092')}"
OS_PORT = int(os.environ.get("BACKSCROLL_OPENSEARCH_PORT", "9200"))
FIRST_BATCH = 40
SECOND_BATCH = 25
BIG_MESSAGE = 3 * 1024 * 1024  # below the broker's message.max.bytes=4194304, above the 1 MiB default


def check(cond: bool, what: str) -> None:
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def _consume(topic: str, group: str, expect: int, timeout_s: float = 60.0) -> list[Any]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=KAFKA,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        client_id=f"smoke-{group}",
    )
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < expect and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=1000).values():
            records.extend(batch)
    # a little longer, to catch anything delivered beyond what was expected
    for batch in consumer.poll(timeout_ms=2000).values():
        records.extend(batch)
    consumer.commit()
    committed = {tp: consumer.committed(tp) for tp in consumer.assignment()}
    print(
        f"     consumer {group}: assignment={sorted(tp.partition for tp in consumer.assignment())} "
        f"committed={ {tp.partition: off for tp, off in sorted(committed.items())} }"
    )
    consumer.close()
    return records


def _produce(topic: str, tag: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=KAFKA, max_request_size=4 * 1024 * 1024, linger_ms=5)
    futures = [
        producer.send(topic, key=f"agent-{i % 7}".encode(), value=f'{{"tag":"{tag}","seq":{i}}}'.encode())
        for i in range(count)
    ]
    producer.flush(timeout=30)
    metas = [f.get(timeout=30) for f in futures]
    partitions = sorted({m.partition for m in metas})
    print(f"     produced {count} x {tag!r} to partitions {partitions}")
    producer.close()


def kafka_produce_consume(topic: str, group: str) -> None:
    from kafka import KafkaAdminClient, KafkaProducer

    admin = KafkaAdminClient(bootstrap_servers=KAFKA)
    admin.create_topics({topic: {"num_partitions": 4, "replication_factor": 1}}, wait_for_metadata=True)
    desc = admin.describe_topics([topic])
    check(len(desc[0]["partitions"]) == 4, f"kafka-python: created topic {topic} with 4 partitions")
    print(f"     negotiated broker version: {admin._manager.broker_version}")
    admin.close()

    _produce(topic, "first", FIRST_BATCH)
    records = _consume(topic, group, FIRST_BATCH)
    check(
        len(records) == FIRST_BATCH,
        f"kafka-python: group {group} consumed {len(records)}/{FIRST_BATCH} and committed",
    )

    # one message larger than the 1 MiB defaults (broker allows 4 MiB)
    big_topic = f"{topic}-big"
    producer = KafkaProducer(bootstrap_servers=KAFKA, max_request_size=4 * 1024 * 1024)
    meta = producer.send(big_topic, value=b"x" * BIG_MESSAGE).get(timeout=60)  # auto-created topic
    producer.close()
    big = _consume(big_topic, f"{group}-big", 1)
    check(
        len(big) == 1 and len(big[0].value) == BIG_MESSAGE,
        f"kafka-python: 3 MiB message round trip via auto-created topic (partition {meta.partition})",
    )


def kafka_resume(topic: str, group: str) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=KAFKA)
    offsets = admin.list_group_offsets({group: None})[group]
    total = sum(o.offset for o in offsets.values())
    check(
        total == FIRST_BATCH,
        f"kafka-python: committed offsets of {group} survive (sum {total} == {FIRST_BATCH})",
    )
    admin.close()

    _produce(topic, "second", SECOND_BATCH)
    records = _consume(topic, group, SECOND_BATCH)
    tags = {r.value.decode().split('"tag":"')[1].split('"')[0] for r in records}
    check(
        len(records) == SECOND_BATCH and tags == {"second"},
        f"kafka-python: restarted consumer resumed right after the commit ({len(records)} new, tags {tags})",
    )


def opensearch() -> None:
    from opensearchpy import OpenSearch, helpers

    client = OpenSearch(hosts=[{"host": "127.0.0.1", "port": OS_PORT}], use_ssl=False, timeout=30)
    info = client.info()
    check(
        info["version"]["number"].startswith("2.19."),
        f"opensearch-py: server version {info['version']['number']}",
    )

    nodes = client.nodes.info(metric="plugins")
    modules = sorted(m["name"] for n in nodes["nodes"].values() for m in n["modules"])
    check("analysis-common" in modules, f"_nodes/plugins modules = {modules}")

    index = f"smoke-{uuid.uuid4().hex[:8]}"
    client.indices.create(
        index=index,
        body={
            "settings": {
                "number_of_shards": 1,
                "number_of_replicas": 0,
                "analysis": {
                    "tokenizer": {"tri": {"type": "ngram", "min_gram": 3, "max_gram": 3}},
                    "analyzer": {
                        "fuzzy": {
                            "type": "custom",
                            "tokenizer": "tri",
                            "filter": ["lowercase", "asciifolding"],
                        }
                    },
                },
            },
            "mappings": {
                "properties": {
                    "text": {"type": "text", "analyzer": "fuzzy"},
                    "agent": {"type": "keyword"},
                    "seq": {"type": "long"},
                }
            },
        },
    )
    check(True, f"opensearch-py: created index {index} with ngram tokenizer + asciifolding analyzer")

    res = client.index(
        index=index, id="one", body={"text": "Café crème brûlée", "agent": "a1", "seq": 1}, refresh=True
    )
    check(res["result"] == "created", "opensearch-py: index() one document")

    ok, errors = helpers.bulk(
        client,
        (
            {
                "_index": index,
                "_id": f"h{i}",
                "agent": f"a{i % 3}",
                "seq": i,
                "text": f"session line {i} résumé",
            }
            for i in range(200)
        ),
    )
    check(ok == 200 and not errors, f"opensearch-py: helpers.bulk indexed {ok} documents")
    raw = client.bulk(
        body=[
            {"index": {"_index": index, "_id": "raw"}},
            {"text": "naïve façade", "agent": "a9", "seq": 999},
        ],
        refresh="true",
    )
    check(not raw["errors"], "opensearch-py: client.bulk(body=...) (keyword args)")
    client.indices.refresh(index=index)

    count = client.count(index=index)["count"]
    check(count == 202, f"opensearch-py: count == {count}")
    hits = client.search(index=index, body={"query": {"match": {"text": "cafe"}}})["hits"]["hits"]
    check(
        [h["_id"] for h in hits][:1] == ["one"],
        "opensearch-py: search 'cafe' finds 'Café …' (ngram+asciifolding)",
    )
    hits = client.search(index=index, body={"query": {"match": {"text": "facad"}}})["hits"]["hits"]
    check(any(h["_id"] == "raw" for h in hits), "opensearch-py: partial-word search 'facad' finds 'façade'")
    agg = client.search(index=index, body={"size": 0, "aggs": {"agents": {"terms": {"field": "agent"}}}})
    buckets = {b["key"]: b["doc_count"] for b in agg["aggregations"]["agents"]["buckets"]}
    check(buckets == {"a0": 67, "a1": 68, "a2": 66, "a9": 1}, f"opensearch-py: terms aggregation {buckets}")

    tokens = client.indices.analyze(
        body={
            "tokenizer": {"type": "ngram", "min_gram": 2, "max_gram": 3},
            "filter": ["asciifolding"],
            "text": "Café",
        }
    )
    toks = [t["token"] for t in tokens["tokens"]]
    check(
        "fé" not in toks and "afe" in toks and "Caf" in toks, f"_analyze ngram+asciifolding 'Café' -> {toks}"
    )
    tokens = client.indices.analyze(
        body={"tokenizer": "edge_ngram", "filter": ["asciifolding"], "text": "Éa"}
    )
    check([t["token"] for t in tokens["tokens"]] == ["E", "Ea"], "_analyze edge_ngram+asciifolding")

    client.indices.delete(index=index)
    check(True, f"opensearch-py: deleted {index}")


def main(argv: list[str]) -> None:
    if len(argv) >= 1 and argv[0] == "opensearch":
        opensearch()
    elif len(argv) == 3 and argv[0] == "kafka-produce-consume":
        kafka_produce_consume(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "kafka-resume":
        kafka_resume(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
