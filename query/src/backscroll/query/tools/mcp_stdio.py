"""The MCP stdio transport: newline-delimited JSON-RPC on a pair of byte streams.

In place of the SDK's own stdio transport, which drops malformed frames without a reply and, when
stdin closes, cancels the calls still running. Here each frame is checked first
(:mod:`~backscroll.query.tools.mcp_frames`: a malformed one gets its JSON-RPC error reply at once,
a frame over :data:`~backscroll.query.tools.mcp_frames.MAX_FRAME_BYTES` is refused without being
kept in memory), and at the end of input the calls in flight are finished and answered, for at
most ``drain_timeout_s``, before the server stops.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, Final

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from backscroll.query.tools.mcp_frames import (
    INVALID_REQUEST,
    MAX_FRAME_BYTES,
    check_frame,
    error_reply,
    oversized,
)

__all__ = ["DRAIN_TIMEOUT_S", "serve_stdio_streams", "wire_streams"]

#: How long the calls in flight at the end of input may still take to be answered.
DRAIN_TIMEOUT_S: Final = 30.0
_CHUNK: Final = 64 * 1024


def _lines(max_bytes: int) -> Callable[[bytes], Iterator[bytes | None]]:
    """A splitter fed chunks (``b""`` at the end): yields each complete line, and ``None`` once
    for a line that grew past ``max_bytes`` (its bytes are dropped up to the next newline)."""
    buffer = bytearray()
    skipping = False

    def feed(chunk: bytes) -> Iterator[bytes | None]:
        nonlocal skipping
        if not chunk:  # the end: a last frame without its newline is still a frame
            if buffer and not skipping:
                yield bytes(buffer)
            buffer.clear()
            return
        buffer.extend(chunk)
        start = 0
        while (newline := buffer.find(b"\n", start)) >= 0:
            if not skipping:
                yield bytes(buffer[start:newline]).rstrip(b"\r")
            skipping = False
            start = newline + 1
        del buffer[:start]
        if len(buffer) > max_bytes:
            buffer.clear()
            if not skipping:
                skipping = True
                yield None

    return feed


def _request_id(message: Any) -> str | int | None:
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


async def serve_stdio_streams(
    server: Server[Any],
    stdin: BinaryIO,
    stdout: BinaryIO,
    *,
    drain_timeout_s: float = DRAIN_TIMEOUT_S,
) -> None:
    """Serve one client reading frames from ``stdin`` and writing them to ``stdout`` until the end
    of ``stdin`` (then the calls in flight are answered, for at most ``drain_timeout_s``)."""
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    in_flight: set[str | int | None] = set()
    lock = anyio.Lock()
    read = getattr(stdin, "read1", stdin.read)

    def put(payload: bytes) -> None:
        stdout.write(payload + b"\n")
        stdout.flush()

    async def send_raw(payload: bytes) -> None:
        async with lock:
            await anyio.to_thread.run_sync(put, payload)

    async def handle(line: bytes | None) -> None:
        frame = oversized() if line is None else check_frame(line)
        if frame.reply is not None:
            await send_raw(orjson.dumps(frame.reply))
        if frame.message is None:
            return
        try:
            message = types.jsonrpc_message_adapter.validate_python(frame.message, by_name=False)
        except ValidationError:
            reply = error_reply(INVALID_REQUEST, "Invalid request", _request_id(frame.message))
            await send_raw(orjson.dumps(reply))
            return
        if isinstance(message, types.JSONRPCRequest):
            in_flight.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # A call the client cancelled is never answered: do not wait for it.
            in_flight.discard(_request_id({"id": (message.params or {}).get("requestId")}))
        await read_send.send(SessionMessage(message))

    async def reader() -> None:
        feed = _lines(MAX_FRAME_BYTES)
        async with read_send:
            while True:
                chunk = await anyio.to_thread.run_sync(read, _CHUNK, abandon_on_cancel=True)
                for line in feed(chunk):
                    await handle(line)
                if not chunk:
                    break
            # The end of input: answer the calls still running before the server stops.
            with anyio.move_on_after(drain_timeout_s):
                while in_flight:
                    await anyio.sleep(0.02)

    async def writer() -> None:
        async with write_recv:
            async for session_message in write_recv:
                message = session_message.message
                payload = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
                await send_raw(payload)
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    in_flight.discard(message.id)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        await server.run(read_recv, write_send, server.create_initialization_options())
        tasks.cancel_scope.cancel()


@contextmanager
def wire_streams() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The process's stdin and stdout as the wire; while serving, anything else printed to stdout
    goes to stderr instead, so it can never break a frame."""
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        with os.fdopen(wire_fd, "wb", closefd=False) as wire_out:
            yield sys.stdin.buffer, wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_fd, 1)
        os.close(wire_fd)
