"""A private, throw-away PostgreSQL cluster for the baselines.

Uses Debian's server packages (``apt-get install -y postgresql``; installed on demand when missing and
running as root). ``initdb`` into a fresh temp directory, ``pg_ctl start`` on a free loopback port with
the Unix socket in the same directory, trust authentication for the local ``postgres`` role. When the
benchmark runs as root, every server command runs as the ``postgres`` user (the server refuses root).

Settings for a benchmark on a 2-core / 24 GiB machine: ``shared_buffers=2GB``, ``work_mem=64MB``,
``maintenance_work_mem=1GB`` (GIN builds), ``effective_cache_size=8GB``, ``jit=off`` (its compile time
dominates short queries), and durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``)
since the data is thrown away; that flatters load times, not query times. :meth:`PgCluster.stop`
runs ``pg_ctl stop -m fast`` and removes the directory; it is also registered with ``atexit``.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["PgCluster", "find_pg_bin"]

SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "shared_buffers": "2GB",
    "work_mem": "64MB",
    "maintenance_work_mem": "1GB",
    "effective_cache_size": "8GB",
    "max_wal_size": "8GB",
    "jit": "off",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "40",
}


def find_pg_bin(install: bool = True) -> Path:
    """Directory holding ``initdb``/``pg_ctl`` (newest installed major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    if which:
        return Path(os.path.realpath(which)).parent
    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "update", "-q"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "postgresql", "postgresql-contrib"],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        return find_pg_bin(install=False)
    raise FileNotFoundError("PostgreSQL server binaries not found: apt-get install -y postgresql")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgCluster:
    def __init__(self, *, settings: dict[str, str] | None = None) -> None:
        self.bin = find_pg_bin()
        self.settings = {**SETTINGS, **(settings or {})}
        self.root: Path | None = None
        self.port = 0
        self.started = False

    @property
    def version(self) -> str:
        out = subprocess.run(
            [str(self.bin / "postgres"), "--version"], capture_output=True, text=True, check=False
        )
        return out.stdout.strip()

    def _as_owner(self, argv: list[str]) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    def start(self) -> PgCluster:
        self.root = Path(tempfile.mkdtemp(prefix="backscroll-bench-pg-"))
        data = self.root / "data"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        os.chmod(self.root, 0o755)
        subprocess.run(
            self._as_owner(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
        )
        self.port = _free_port()
        options = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        options += f" -p {self.port} -k {self.root}"
        atexit.register(self.stop)
        subprocess.run(
            self._as_owner(
                [
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(self.root / "server.log"),
                    "-w",
                    "-o",
                    options,
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )
        self.started = True
        return self

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def connect(self, **kwargs: Any) -> Any:
        import psycopg  # the [bench] extra

        return psycopg.connect(self.dsn(), autocommit=True, **kwargs)

    def stop(self) -> None:
        if self.root is None:
            return
        if self.started:
            with contextlib.suppress(subprocess.CalledProcessError):
                subprocess.run(
                    self._as_owner(
                        [str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast", "-w", "stop"]
                    ),
                    check=True,
                    capture_output=True,
                )
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> PgCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
