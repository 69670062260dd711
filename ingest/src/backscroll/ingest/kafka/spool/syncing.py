"""The fsync policies of a spool (the base of :class:`~backscroll.ingest.kafka.spool.store.Spool`)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from backscroll.ingest.kafka.spool.disk import Segment, fsync_dir, log, release_map
from backscroll.ingest.kafka.spool.reading import SegmentReader
from backscroll.ingest.settings import FsyncPolicy

__all__ = ["SyncingSpool"]


class SyncingSpool(SegmentReader):
    """``always``, ``interval`` and ``never``: when segments and the directory reach the disk."""

    directory: Path
    fsync: FsyncPolicy
    fsync_interval_s: float
    _lock: threading.Lock
    _active: Segment | None
    _dirty: bool
    _last_sync: float
    _sealed_unsynced: list[int]
    _dir_dirty: bool
    _closed: bool

    def _seal_locked(self, seg: Segment) -> None:
        release_map(seg)  # cut to the bytes written before the sync, which then covers the size
        if seg.fd is not None and self._dirty and self._active is seg:
            if self.fsync == "always":
                os.fdatasync(seg.fd)
                self._last_sync = time.monotonic()
            elif self.fsync == "interval":
                self._sealed_unsynced.append(os.dup(seg.fd))  # synced by sync_if_due, off the lock
            self._dirty = False
        seg.sealed = True
        if self._active is seg:
            self._active = None

    def _dir_changed(self) -> None:
        if self.fsync == "always":
            fsync_dir(self.directory)
        elif self.fsync == "interval":
            self._dir_dirty = True

    # -- syncing --------------------------------------------------------------------------------
    def sync(self) -> None:
        """fdatasync the active segment (whatever the policy)."""
        with self._lock:
            if not self._closed:
                self._sync_locked()

    def sync_if_due(self) -> None:
        """With ``fsync="interval"``: sync what is older than the interval (the active segment,
        segments sealed since, the directory). Called by the sender thread; the syncs run outside
        the spool's lock, so appends never wait for the disk."""
        if self.fsync != "interval" or not (self._dirty or self._sealed_unsynced or self._dir_dirty):
            return
        with self._lock:
            if self._closed or time.monotonic() - self._last_sync < self.fsync_interval_s:
                return
            active = self._active
            fds = self._sealed_unsynced
            self._sealed_unsynced = []
            if self._dirty and active is not None and active.fd is not None:
                fds.append(os.dup(active.fd))  # rolling or reclaiming cannot close it under us
            self._dirty = False
            sync_dir, self._dir_dirty = self._dir_dirty, False
            started = time.monotonic()
        try:
            for fd in fds:
                os.fdatasync(fd)
            if sync_dir:
                fsync_dir(self.directory)
        except OSError as err:
            log.error("spool %s: fdatasync failed: %s", self.directory, err)
            self._dirty = True
        finally:
            for fd in fds:
                os.close(fd)
            self._last_sync = started

    def _sync_locked(self) -> None:
        if self._dirty and self._active is not None and self._active.fd is not None:
            os.fdatasync(self._active.fd)
        for fd in self._sealed_unsynced:
            os.fdatasync(fd)
            os.close(fd)
        self._sealed_unsynced = []
        if self._dir_dirty:
            fsync_dir(self.directory)
            self._dir_dirty = False
        self._dirty = False
        self._last_sync = time.monotonic()
