"""Creating a spool segment's file: preallocated and memory-mapped, or written with ``write(2)``.

Why a mapping: copying a frame into a ``MAP_SHARED`` mapping puts it in the page cache (the same
place ``write(2)`` puts it; a crash of the process loses nothing) without a system call, so the
appending thread keeps the GIL. ``write(2)`` releases it, and the sender thread, once it has the
GIL, keeps it until it blocks or the switch interval (5 ms) runs out: the caller's tail latency.

Why preallocation: a page of a sparse file that the disk has no room for turns a store into the
mapping into SIGBUS, which kills the process. ``posix_fallocate`` reserves every block up front, so
a full disk is an ``ENOSPC`` here, when the segment is created, and never a signal later. Where a
filesystem cannot preallocate (or map) a file, the spool writes that segment and the ones after it
with ``write(2)`` instead.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
from pathlib import Path
from typing import Final

from backscroll.ingest.kafka.spool.disk import log

__all__ = ["UNSUPPORTED", "create_segment"]

#: errno values meaning "this filesystem cannot preallocate / map a file" (not a full disk).
UNSUPPORTED: Final = frozenset({errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS, errno.ENODEV})


def create_segment(path: Path, capacity: int, *, mapped: bool) -> tuple[int, mmap.mmap | None]:
    """Create ``path`` (exclusively, empty; the caller writes the magic): ``(fd, mapping)`` with
    the file preallocated to ``capacity`` bytes and mapped, or ``(fd, None)`` for a file to append
    to with ``write(2)``: not ``mapped``, or the filesystem refused (logged at info; the spool does
    not ask again). Raises OSError with nothing left behind."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | (0 if mapped else os.O_APPEND), 0o644)
    try:
        if not mapped:
            return fd, None
        try:
            _preallocate(fd, capacity)
            return fd, _map(fd, capacity)
        except OSError as err:
            if err.errno not in UNSUPPORTED:
                raise
            log.info(
                "spool %s: the filesystem cannot preallocate or map a segment (%s); appending with "
                "write(2) instead",
                path.parent,
                err.strerror or err,
            )
            os.ftruncate(fd, 0)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
            return fd, None
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise


def _map(fd: int, capacity: int) -> mmap.mmap:
    try:
        return mmap.mmap(fd, capacity, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except (ValueError, OverflowError) as err:  # a size this platform cannot map
        raise OSError(errno.EINVAL, f"cannot map {capacity} bytes: {err}") from err


def _preallocate(fd: int, capacity: int) -> None:
    fallocate = getattr(os, "posix_fallocate", None)  # absent on some platforms (macOS)
    if fallocate is None:
        raise OSError(errno.ENOSYS, "posix_fallocate is not available on this platform")
    fallocate(fd, 0, capacity)
