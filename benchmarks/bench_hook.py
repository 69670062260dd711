"""The Claude Code hook's latency: ``backscroll capture claude-code`` run as Claude Code runs it,
a new transcript line before each call, on the embedded backend in a temporary data folder.

    python -m benchmarks.bench_hook [--calls 100] [--exe .venv/bin/backscroll]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "capture" / "claude" / "-home-dev-shop"


def measure(exe: str, calls: int) -> list[float]:
    """Milliseconds of each hook call, from start to exit."""
    source = next(FIXTURE.glob("*.jsonl"))
    work = Path(tempfile.mkdtemp(prefix="bench-hook-"))
    try:
        transcript = work / "transcript.jsonl"
        shutil.copy(source, transcript)
        session = json.loads(source.read_text().splitlines()[0]).get("sessionId", "s")
        env = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
        env["XDG_DATA_HOME"] = str(work / "data")
        event = {"session_id": session, "transcript_path": str(transcript), "cwd": "/home/dev/shop"}
        payload = json.dumps({**event, "hook_event_name": "UserPromptSubmit"}).encode()
        out: list[float] = []
        for i in range(calls):
            line = {
                "type": "user",
                "uuid": str(uuid.uuid4()),
                "sessionId": session,
                "timestamp": "2026-12-08T00:00:00Z",
                "cwd": "/home/dev/shop",
                "message": {"role": "user", "content": f"prompt number {i} about invoices"},
            }
            with transcript.open("a") as stream:
                stream.write(json.dumps(line) + "\n")
            started = time.perf_counter()
            done = subprocess.run(
                [exe, "capture", "claude-code"], input=payload, env=env, capture_output=True
            )
            out.append((time.perf_counter() - started) * 1000)
            if done.returncode != 0 or done.stdout:
                raise SystemExit(f"the hook failed: {done.stderr.decode(errors='replace')[-300:]}")
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_hook", description=__doc__)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--exe", default=str(Path(".venv") / "bin" / "backscroll"))
    args = parser.parse_args()
    times = sorted(measure(args.exe, args.calls))
    p50, p99 = statistics.median(times), times[int(0.99 * (len(times) - 1))]
    print(f"{len(times)} hook calls: p50 {p50:.0f} ms, p99 {p99:.0f} ms, max {times[-1]:.0f} ms")


if __name__ == "__main__":
    main()
