"""The MCP stdio transport on the event loop: messages read from and written to the pipes by
the tasks that use them.

The SDK's ``stdio_server`` wraps the standard streams in thread-backed files (every line read
and every write hops to a worker thread and back) and relays each message through a reader or
a writer task and a memory stream: two task switches per message on top of the thread hops.
On asyncio, when the streams are pipes or sockets (as they are when a client launches the
server), the dispatcher's own task can read and parse the next line, and the task answering a
request can write its response, with none of that: :class:`LineReceiver` and
:class:`LineSender` are the read and write streams ``Server.run`` takes. A write is one
``transport.write`` of the whole line (never interleaved with another message); only a pipe the
client is slow to empty makes a writer wait (flow control).

Like the SDK, the real descriptors are claimed while serving: fd 0 reads the null device and
fd 1 goes to stderr, so a stray ``print`` or a child process never corrupts the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

logger = logging.getLogger("invokit.mcp")

_LINE_LIMIT = 64 * 1024 * 1024
"""The longest message accepted on stdin (asyncio's default of 64 KiB is too small for MCP)."""


class LineReceiver:
    """The read stream: each line of the pipe parsed as a JSON-RPC message, or the exception
    that says why it is not one (the dispatcher reports it and reads on)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            line = await self._reader.readline()
        except ValueError as exc:  # longer than the limit: that line is dropped
            logger.warning(
                "a message of more than %d bytes on stdin was dropped, unanswered", _LINE_LIMIT
            )
            return exc
        if not line:
            raise anyio.EndOfStream
        try:
            # Decoded as the SDK does: invalid UTF-8 is replaced, not a reason to drop a line.
            text = line.decode("utf-8", errors="replace")
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except Exception as exc:
            return exc

    def __aiter__(self) -> LineReceiver:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> LineReceiver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class LineSender:
    """The write stream: each message written as one line by the task that sends it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._transport = writer.transport
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._transport.is_closing():
            raise anyio.BrokenResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        self._transport.write(data.encode("utf-8") + b"\n")
        # The transport writes at once when the pipe has room; only a line it had to keep
        # (the client is not reading) is worth waiting on, and only past the high-water mark.
        if self._transport.get_write_buffer_size():
            try:
                await self._writer.drain()
            except ConnectionError as exc:
                raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> LineSender:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _is_stream(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The ``(read, write)`` streams ``Server.run`` serves stdin and stdout through: the
    native ones on asyncio when both are pipes or sockets, the SDK's ``stdio_server``
    otherwise (trio, a terminal, regular files)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or not (_is_stream(0) and _is_stream(1)):
        from mcp.server.stdio import stdio_server

        async with stdio_server() as streams:
            yield streams
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
        yield LineReceiver(reader), LineSender(writer)
    finally:
        for transport in (read_transport, write_transport):
            if transport is not None:
                transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
