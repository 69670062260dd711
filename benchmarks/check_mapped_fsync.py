"""Check (on demand, Linux): ``fdatasync`` of a segment's descriptor writes the pages an append
stored into its ``MAP_SHARED`` mapping, so the spool's fsync policies need no ``msync``.

    python -m benchmarks.check_mapped_fsync [--device vda]

Stores 4 MiB into a mapped, preallocated file, then counts the sectors the disk wrote during one
``fdatasync`` and during a second one with nothing stored (the control). The counters are the
whole device's, so other writers on the machine can only add to both numbers.
"""

from __future__ import annotations

import argparse
import mmap
import os
import tempfile
from pathlib import Path

CHUNK = 4 * 1024 * 1024


def written_mib(device: str) -> float:
    fields = Path(f"/sys/block/{device}/stat").read_text().split()
    return int(fields[6]) * 512 / 2**20  # sectors written, 512 bytes each


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="vda", help="block device under /sys/block holding the temp dir")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        fd = os.open(Path(directory) / "segment", os.O_RDWR | os.O_CREAT, 0o644)
        os.posix_fallocate(fd, 0, CHUNK * args.rounds)
        mapping = mmap.mmap(
            fd, CHUNK * args.rounds, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE
        )
        os.fdatasync(fd)
        try:
            for i in range(args.rounds):
                mapping[i * CHUNK : (i + 1) * CHUNK] = os.urandom(CHUNK)
                before = written_mib(args.device)
                os.fdatasync(fd)
                stored = written_mib(args.device) - before
                before = written_mib(args.device)
                os.fdatasync(fd)
                control = written_mib(args.device) - before
                print(
                    f"round {i}: {CHUNK / 2**20:.0f} MiB stored into the mapping; the disk wrote "
                    f"{stored:.2f} MiB during fdatasync, {control:.2f} MiB during a second one"
                )
        finally:
            mapping.close()
            os.close(fd)


if __name__ == "__main__":
    main()
