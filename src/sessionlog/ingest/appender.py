"""The appender agents embed: validated, keyed, batched, acknowledged appends to the session topic."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from kafka import KafkaProducer
from kafka.errors import KafkaError

from sessionlog.ingest.errors import AppenderClosed, LogUnavailable, RecordRejected
from sessionlog.ingest.settings import KafkaSettings
from sessionlog.ingest.wire import (
    MAX_RECORD_BYTES,
    EventRecord,
    HeaderRecord,
    encode_key,
    encode_record,
    parse_record,
)

__all__ = ["AppendHandle", "Appender", "Position", "producer_config"]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a record landed in the log."""

    partition: int
    offset: int


class AppendHandle:
    """A pending append; :meth:`result` waits for the broker's acknowledgement."""

    def __init__(self, future: Any, record: HeaderRecord | EventRecord) -> None:
        self._future = future
        self.record = record

    def done(self) -> bool:
        return bool(self._future.is_done)

    def result(self, timeout: float | None = 30.0) -> Position:
        try:
            meta = self._future.get(timeout=timeout)
        except KafkaError as err:
            raise LogUnavailable(f"broker did not acknowledge {self.record.session_id}: {err}") from err
        return Position(partition=meta.partition, offset=meta.offset)


def _compression() -> str:
    from kafka.codec import has_lz4, has_zstd

    if has_zstd():
        return "zstd"
    if has_lz4():
        return "lz4"
    return "gzip"


def producer_config(settings: KafkaSettings) -> dict[str, Any]:
    """Producer settings: every acknowledged record is on all in-sync replicas, never duplicated."""
    return {
        **settings.client_config(),
        "acks": "all",
        "enable_idempotence": True,
        "compression_type": _compression(),
        "linger_ms": 5,
        "batch_size": 256 * 1024,
        "max_request_size": MAX_RECORD_BYTES + 64 * 1024,
        "retries": 2**31 - 1,
        "delivery_timeout_ms": 120_000,
    }


class Appender:
    """Thread-safe appender of session headers and events to the Kafka topic.

    Connects lazily on the first append; ``append`` validates on the caller's thread (a
    :class:`RecordRejected` names the field) and returns a handle without waiting for the broker.
    """

    def __init__(self, settings: KafkaSettings | None = None) -> None:
        self.settings = settings or KafkaSettings()
        self._lock = threading.Lock()
        self._producer: KafkaProducer | None = None
        self._closed = False

    def _ensure_producer(self) -> KafkaProducer:
        with self._lock:
            if self._closed:
                raise AppenderClosed("append after close()")
            if self._producer is None:
                try:
                    self._producer = KafkaProducer(**producer_config(self.settings))
                except KafkaError as err:
                    raise LogUnavailable(
                        f"cannot reach Kafka at {self.settings.bootstrap_servers}: {err}"
                    ) from err
            return self._producer

    @staticmethod
    def _coerce(record: HeaderRecord | EventRecord | Mapping[str, Any]) -> HeaderRecord | EventRecord:
        if isinstance(record, HeaderRecord | EventRecord):
            return record
        if isinstance(record, Mapping):
            return parse_record(dict(record))
        raise RecordRejected("record", f"expected a mapping or a wire record, got {type(record).__name__}")

    def append(self, record: HeaderRecord | EventRecord | Mapping[str, Any]) -> AppendHandle:
        """Validate and send one record (event or header); returns at once with a handle."""
        parsed = self._coerce(record)
        value = encode_record(parsed)
        if len(value) > MAX_RECORD_BYTES:
            raise RecordRejected("record", f"encoded record is {len(value)} bytes, cap is {MAX_RECORD_BYTES}")
        producer = self._ensure_producer()
        try:
            future = producer.send(self.settings.topic, key=encode_key(parsed), value=value)
        except KafkaError as err:
            raise LogUnavailable(f"send failed for session {parsed.session_id}: {err}") from err
        return AppendHandle(future, parsed)

    def append_header(self, header: HeaderRecord | Mapping[str, Any]) -> AppendHandle:
        parsed = self._coerce(header)
        if not isinstance(parsed, HeaderRecord):
            raise RecordRejected("kind", "append_header needs a header record")
        return self.append(parsed)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent so far is acknowledged (or the timeout passes)."""
        producer = self._producer
        if producer is None:
            return
        try:
            producer.flush(timeout=timeout)
        except KafkaError as err:
            raise LogUnavailable(f"flush failed: {err}") from err

    def close(self, timeout: float | None = 30.0) -> None:
        """Flush and release the connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.flush(timeout=timeout)
            finally:
                producer.close(timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
