"""The audit log: one JSON line per request (who, what scope, which endpoint, how it ended)."""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

__all__ = ["AuditLog"]


class AuditLog:
    """Appends to a file (mode 600), or writes to stderr; never the query text unless asked."""

    def __init__(self, target: Path | None, *, queries: bool = False) -> None:
        self.queries = queries
        self._lock = threading.Lock()
        self._out: TextIO
        if target is None:
            self._out = sys.stderr
            self._owned = False
        else:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            target.touch(mode=0o600, exist_ok=True)
            self._out = target.open("a", encoding="utf-8")
            self._owned = True

    def write(
        self,
        *,
        token_id: str | None,
        scope: str | None,
        endpoint: str,
        status: int,
        size: int,
        query: str | None = None,
    ) -> None:
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(),
            "token": token_id,
            "scope": scope,
            "endpoint": endpoint,
            "status": status,
            "bytes": size,
        }
        if self.queries and query is not None:
            line["query"] = query
        with self._lock:
            self._out.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._out.flush()

    def close(self) -> None:
        if self._owned:
            self._out.close()
