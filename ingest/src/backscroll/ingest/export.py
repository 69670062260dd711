"""Read the original records of a session or a workspace back out of the log, in log order.

The log is the source of truth: ``backscroll export`` streams the stored bytes of every record
(canonical wire JSON, one per line) so they can be archived, inspected or appended to another log.
Both backends:

* SQLite: the ``log`` table in offset order (a session through the ``(session_id, offset)``
  index); the file is opened read-only (:func:`~backscroll.ingest.sqlite.file.connect` with
  ``create=False``): a missing file is an error, never created;
* Kafka: a session's records are all on the partition its key hashes to (the producer's default
  partitioner), read from the beginning to the end offset taken when the export starts; a workspace
  reads every partition, one after the other. Nothing is committed (no consumer group).

A session's records always come out in the order they were appended; a workspace's sessions are
interleaved by offset (SQLite) or grouped partition by partition (Kafka). Values that are not a
JSON object of the wanted session/workspace (a foreign writer's garbage, which the indexer
dead-letters) are skipped and counted in :attr:`LogExport.skipped`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from backscroll.ingest.errors import LogNotFound, LogUnavailable
from backscroll.ingest.records import LogRecord

if TYPE_CHECKING:
    from backscroll.ingest.settings import KafkaSettings

__all__ = ["LogExport", "export_kafka", "export_sqlite"]


class LogExport:
    """The records of one session (``session_id``) and/or one workspace (``workspace_id``).

    Iterate over :meth:`records` once; :attr:`exported` and :attr:`skipped` count as it goes.
    """

    def __init__(self, *, session_id: str | None = None, workspace_id: str | None = None) -> None:
        if session_id is None and workspace_id is None:
            raise ValueError("export needs a session id or a workspace id")
        self.session_id = session_id
        self.workspace_id = workspace_id
        self.exported = 0
        self.skipped = 0

    def wanted(self, record: LogRecord) -> bool:
        """Whether ``record`` is a wire record of the wanted session/workspace (counts it)."""
        if self.session_id is not None and record.key != self.session_id.encode("utf-8"):
            return False
        try:
            data: Any = orjson.loads(record.value) if record.value is not None else None
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            self.skipped += 1
            return False
        if self.session_id is not None and data.get("session_id") != self.session_id:
            self.skipped += 1
            return False
        if self.workspace_id is not None and data.get("workspace_id") != self.workspace_id:
            return False
        self.exported += 1
        return True


def export_sqlite(path: str | os.PathLike[str], export: LogExport) -> Iterator[LogRecord]:
    """The wanted records of the SQLite log at ``path`` in offset order (read-only open)."""
    from backscroll.ingest.sqlite.file import connect, translate_sqlite_error
    from backscroll.ingest.sqlite.log import iter_log

    target = Path(path).expanduser()
    conn = connect(target, create=False)
    try:
        try:
            conn.execute("BEGIN")  # one snapshot: appends made during the export are not half-seen
            for record in iter_log(conn, session_id=export.session_id):
                if export.wanted(record):
                    yield record
            conn.execute("COMMIT")
        except sqlite3.Error as err:
            raise translate_sqlite_error(err, f"cannot read the log in {target}") from err
    finally:
        conn.close()


def export_kafka(settings: KafkaSettings, export: LogExport, *, poll_ms: int = 500) -> Iterator[LogRecord]:
    """The wanted records of the topic, read from the beginning to the end offsets taken at the
    start. Raises :class:`LogNotFound` when the topic does not exist, :class:`LogUnavailable` when
    a partition makes no progress within the request timeout."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.partitioner.default import murmur2

    from backscroll.ingest.kafka.errors import translate_kafka_error

    topic = settings.topic
    where = f"Kafka at {settings.bootstrap_servers}"
    try:
        consumer = KafkaConsumer(
            **settings.client_config(), group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
        )
    except (KafkaError, OSError) as err:
        raise translate_kafka_error(err, f"cannot reach {where}") from err
    try:
        try:
            partitions = consumer.partitions_for_topic(topic)
        except (KafkaError, OSError) as err:
            raise translate_kafka_error(err, f"cannot read the metadata of {topic} from {where}") from err
        if not partitions:
            raise LogNotFound(f"topic {topic} does not exist on {where}; has anything been appended?")
        ordered = sorted(partitions)
        if export.session_id is not None:
            key = export.session_id.encode("utf-8")
            ordered = [ordered[(murmur2(key) & 0x7FFFFFFF) % len(ordered)]]
        for partition in ordered:
            yield from _read_partition(consumer, TopicPartition(topic, partition), export, settings, poll_ms)
    finally:
        consumer.close()


def _read_partition(
    consumer: Any, tp: Any, export: LogExport, settings: KafkaSettings, poll_ms: int
) -> Iterator[LogRecord]:
    from kafka.errors import KafkaError

    from backscroll.ingest.kafka.errors import translate_kafka_error

    what = f"reading {tp.topic}[{tp.partition}] from Kafka at {settings.bootstrap_servers}"
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = int(consumer.end_offsets([tp])[tp])
        position = int(consumer.position(tp))
    except (KafkaError, OSError) as err:
        raise translate_kafka_error(err, what) from err
    stalled_since = time.monotonic()
    while position < end:
        try:
            batches = consumer.poll(timeout_ms=poll_ms)
        except (KafkaError, OSError) as err:
            raise translate_kafka_error(err, what) from err
        got = False
        for message in batches.get(tp, []):
            got = True
            if message.offset >= end:
                break
            record = LogRecord(
                tp.topic,
                tp.partition,
                int(message.offset),
                message.key,
                message.value,
                int(message.timestamp),
            )
            if export.wanted(record):
                yield record
        try:
            position = int(consumer.position(tp))
        except (KafkaError, OSError) as err:
            raise translate_kafka_error(err, what) from err
        if got:
            stalled_since = time.monotonic()
        elif time.monotonic() - stalled_since > settings.request_timeout_s:
            raise LogUnavailable(
                f"{what}: no progress for {settings.request_timeout_s}s at offset {position}"
            )
