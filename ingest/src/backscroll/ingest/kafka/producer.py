"""The Kafka side of the appender: producer settings and the small types its sender thread uses."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backscroll.ingest.settings import AppenderSettings, KafkaSettings
from backscroll.ingest.wire import MAX_RECORD_BYTES

if TYPE_CHECKING:
    from backscroll.ingest.bulk import BatchAck
    from backscroll.ingest.records import AppendHandle

    #: What resolves when the broker acknowledges an entry: its own handle, or its batch's.
    Handle = AppendHandle | BatchAck

__all__ = [
    "BATCH_BYTES",
    "BATCH_RECORDS",
    "AppenderStats",
    "OutgoingEntry",
    "Throttle",
    "compression",
    "producer_config",
]

#: What the sender hands the producer per round (records, bytes).
BATCH_RECORDS = 512
BATCH_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class AppenderStats:
    """Counters of one appender (since it was created, or since a fork for a child)."""

    appended: int
    acknowledged: int
    spooled: int
    replayed: int
    resent: int
    rejected: int
    queued: int
    inflight: int
    spool_unacked: int
    spilling: bool
    spool_dir: str | None


class OutgoingEntry:
    """One entry on its way to the broker: its ticket (acceptance order), bytes, seq, handle and,
    when it is in the spool, its record id there (``rid``)."""

    __slots__ = ("handle", "key", "rid", "seq", "session_id", "size", "ticket", "value")

    def __init__(
        self,
        ticket: int,
        key: bytes,
        value: bytes,
        seq: int | None,
        handle: Handle | None,
        rid: int | None = None,
        *,
        session_id: str | None = None,
    ) -> None:
        self.ticket = ticket
        self.key = key
        self.value = value
        self.seq = seq
        self.handle = handle
        self.rid = rid
        self.size = len(key) + len(value)
        self.session_id = key.decode("utf-8") if session_id is None else session_id


def compression() -> str:
    """zstd when ``zstandard`` is installed (the ``[zstd]`` extra), else lz4, else gzip."""
    from kafka.codec import has_lz4, has_zstd

    if has_zstd():
        return "zstd"
    if has_lz4():
        return "lz4"
    return "gzip"


def producer_config(settings: KafkaSettings, options: AppenderSettings | None = None) -> dict[str, Any]:
    """Producer settings: every acknowledged record is on all in-sync replicas, never duplicated by
    the producer's own retries, and records are retried until the appender gives up (never the
    producer: ``delivery_timeout_ms`` is effectively infinite so an outage never reorders a
    partition). ``api_version`` is never set: kafka-python negotiates it."""
    options = options or AppenderSettings(spool=False, durable=False)
    connect_ms = int(options.connect_timeout_s * 1000)
    return {
        **settings.client_config(),
        "acks": "all",
        "enable_idempotence": True,
        "compression_type": compression(),
        "linger_ms": options.linger_ms,
        "batch_size": options.batch_size,
        "max_request_size": MAX_RECORD_BYTES + 64 * 1024,
        "max_in_flight_requests_per_connection": 5,
        "delivery_timeout_ms": 2**31 - 1,
        "max_block_ms": connect_ms,
        "bootstrap_timeout_ms": connect_ms,
        "reconnect_backoff_max_ms": 1000,
        "retry_backoff_ms": 100,
    }


class Throttle:
    """Log the same warning at most once per ``every`` seconds."""

    def __init__(self, logger: logging.Logger, every: float = 10.0) -> None:
        self.logger = logger
        self.every = every
        self._last: dict[str, float] = {}

    def warn(self, key: str, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last.get(key, -1e9) >= self.every:
            self._last[key] = now
            self.logger.warning(message, *args)
