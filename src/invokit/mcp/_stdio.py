"""stdin and stdout as non-blocking pipes for the MCP stdio transport.

The SDK's default wraps the standard streams in thread-backed files: every line read and every
write hops to a worker thread and back. On asyncio, when the streams are pipes or sockets (as
they are when a client launches the server), the event loop can read and write them directly.
Like the SDK, the real descriptors are claimed while serving: fd 0 reads the null device and
fd 1 goes to stderr, so a stray ``print`` or a child process never corrupts the protocol.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

_LINE_LIMIT = 64 * 1024 * 1024
"""The longest message accepted on stdin (asyncio's default of 64 KiB is too small for MCP)."""


class PipeLines:
    """``async for line in reader``: decoded lines from a non-blocking pipe."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class PipeWriter:
    """``await write(text)`` / ``await flush()`` on a non-blocking pipe."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))
        await self._writer.drain()

    async def flush(self) -> None:
        await self._writer.drain()


def _is_stream(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def native_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """Yield ``(stdin, stdout)`` objects for ``mcp.server.stdio.stdio_server``, or
    ``(None, None)`` where the SDK's own streams must be used (not asyncio, or not pipes)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        yield None, None
        return
    if not (_is_stream(0) and _is_stream(1)):
        yield None, None
        return
    in_fd, out_fd = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=_LINE_LIMIT)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0)
        )
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        yield PipeLines(reader), PipeWriter(writer)
    finally:
        for transport in (read_transport, write_transport):
            if transport is not None:
                transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
