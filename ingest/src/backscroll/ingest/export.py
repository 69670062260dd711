"""Read the original records of a session or a workspace back out of the log, in log order.

The log is the source of truth: ``backscroll export`` streams the stored bytes of every record
(canonical wire JSON, one per line) so they can be archived, inspected or appended to another log.
Both backends:

* SQLite (:func:`~backscroll.ingest.sqlite.export.export_sqlite`): the ``log`` table in offset
  order (a session through the ``(session_id, offset)`` index); the file is opened read-only
  (:func:`~backscroll.ingest.sqlite.file.connect` with ``create=False``): a missing file is an
  error, never created;
* Kafka (:func:`~backscroll.ingest.kafka.export.export_kafka`): a session's records are all on the
  partition its key hashes to (the producer's default partitioner), read from the beginning to the
  end offset taken when the export starts; a workspace reads every partition, one after the other.
  Nothing is committed (no consumer group).

A session's records always come out in the order they were appended; a workspace's sessions are
interleaved by offset (SQLite) or grouped partition by partition (Kafka). Values that are not a
JSON object of the wanted session/workspace (a foreign writer's garbage, which the indexer
dead-letters) are skipped and counted in :attr:`LogExport.skipped`.
"""

from __future__ import annotations

from typing import Any

import orjson

from backscroll.ingest.records import LogRecord

__all__ = ["LogExport"]


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
