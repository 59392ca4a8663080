"""The client side of MCP over stdio, reading the server's messages linearly and bounded.

The SDK's ``stdio_client`` splits the server's output with ``(buffer + chunk).split("\\n")``:
a line that never ends is copied again with every chunk (quadratic), and nothing bounds it, so
a broken or hostile server keeps a CPU busy and memory growing long after the call timed out.
This transport is the SDK's, with one change: each chunk is scanned once for line ends, and a
message longer than ``max_message_bytes`` ends the connection. The server process is killed,
the session sees the connection close (pending calls fail as ``unavailable``), and the next
call starts the server again.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.client import stdio as sdk
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

from invokit._processes import which_outside

logger = logging.getLogger("invokit.mcp")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The longest message accepted from a server by default (64 MiB)."""


class MessageTooLarge(Exception):
    """A server sent a message past the client's size cap; the connection was closed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the server sent a message over {limit} bytes; the connection was closed")


PIECEWISE_BYTES = 128 * 1024
"""A message longer than this is parsed in a worker thread, a piece at a time (see
:func:`_parse_in_pieces`); a shorter one is parsed on the event loop at once."""

_PIECE_DEPTH = 3
"""Containers nested deeper than this are decoded whole: a listing's tools, one by one."""

_SPACE = re.compile(r"[ \t\n\r]*")


_DECODER = json.JSONDecoder()  # NaN and Infinity are read, as the SDK's parser reads them


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return _not_a_message(exc)
    return SessionMessage(message)


def _parse_in_pieces(line: bytes) -> SessionMessage | Exception:
    """:func:`_parse` for a long message, run in a worker thread.

    A whole-message parse is native code that holds the interpreter lock from start to end: in
    a thread it would stall the event loop just as long (80 ms for a listing of 6,000 tools).
    The outer levels are walked here in Python and each value below them (one tool of a
    listing) is decoded on its own, so the thread lets the loop run between pieces.
    """
    try:
        text = line.decode("utf-8")
        value, end = _piece(text, _SPACE.match(text, 0).end(), 0)  # type: ignore[union-attr]
        if _SPACE.match(text, end).end() != len(text):  # type: ignore[union-attr]
            raise ValueError(f"extra data at character {end}")
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except RecursionError:  # the standard library's parser, on nesting a server chose
        return _not_a_message(ValueError("nesting is deeper than the JSON parser allows"))
    except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError, ValidationError
        return _not_a_message(exc)
    return SessionMessage(message)


def _not_a_message(exc: ValueError) -> ValueError:
    """``exc``, logged as the reason a server's line is not a JSON-RPC message."""
    logger.warning("an MCP server sent a line that is not a JSON-RPC message: %s", exc)
    return exc


def _piece(text: str, pos: int, depth: int) -> tuple[Any, int]:
    """The JSON value at ``pos`` (no space before it) and the index after it."""
    opening = text[pos : pos + 1]
    if depth >= _PIECE_DEPTH or opening not in ("{", "["):
        value, end = _DECODER.raw_decode(text, pos)
        return value, end
    closing = "}" if opening == "{" else "]"
    found: dict[str, Any] | list[Any] = {} if opening == "{" else []
    pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] == closing:
        return found, pos + 1
    while True:
        if isinstance(found, dict):
            if text[pos : pos + 1] != '"':
                raise ValueError(f"expected a name at character {pos}")
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos : pos + 1] != ":":
                raise ValueError(f"expected ':' at character {pos}")
            pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
            found[key], pos = _piece(text, pos, depth + 1)
        else:
            item, pos = _piece(text, pos, depth + 1)
            found.append(item)
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        mark = text[pos : pos + 1]
        if mark == closing:
            return found, pos + 1
        if mark != ",":
            raise ValueError(f"expected ',' or {closing!r} at character {pos}")
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]


def _stderr() -> TextIO:
    """Where a server's stderr goes by default: a stream a child process can inherit."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError):  # io.UnsupportedOperation is both
            continue
    # No stream has a descriptor: the child's stderr is discarded (the process start accepts
    # subprocess's DEVNULL wherever it accepts a file).
    return cast(TextIO, subprocess.DEVNULL)


def _located(command: str, env: dict[str, str]) -> str:
    """A bare ``command`` as found on the server's ``PATH``, skipping relative entries (the
    current folder, often the served root, is never searched).

    Raises:
        FileNotFoundError: no such program on an absolute ``PATH`` entry.
    """
    if os.sep in command:
        return command
    found = which_outside(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(
            errno.ENOENT, "not found on PATH (relative PATH entries are skipped)", command
        )
    return found


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    errlog: TextIO | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``server`` and yield the SDK's ``(read, write)`` streams to it.

    ``errlog`` receives the server's stderr; by default the standard error, or the process's
    original one when ``sys.stderr`` has been replaced by an object with no file descriptor (a
    test runner capturing output, an embedding host).

    Raises:
        OSError: the server process cannot be started.
    """
    env = sdk.get_default_environment() | (server.env or {})
    command = await sdk._get_executable_command(_located(server.command, env))
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=env,
        errlog=errlog if errlog is not None else _stderr(),
        cwd=server.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    shutting_down = False

    async def stdout_reader() -> None:
        assert process.stdout is not None
        pending = bytearray()
        overflow = False
        try:
            async with read_writer:
                while True:
                    try:
                        chunk = await process.stdout.receive()
                    except (anyio.EndOfStream, anyio.ClosedResourceError):
                        return
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        if pending:
                            pending += chunk[start:end]
                            line: bytes = bytes(pending)
                            pending.clear()
                        else:
                            line = chunk[start:end]
                        start = end + 1
                        if len(line) > max_message_bytes:
                            overflow = True
                            break
                        if len(line) > PIECEWISE_BYTES:
                            parsed = await anyio.to_thread.run_sync(_parse_in_pieces, line)
                            await read_writer.send(parsed)
                        elif line.strip():
                            await read_writer.send(_parse(line))
                    if overflow:
                        break
                    pending += chunk[start:]
                    if len(pending) > max_message_bytes:
                        overflow = True
                        break
                pending.clear()
                logger.warning(
                    "MCP server %r sent a message over %d bytes; closing the connection",
                    server.command,
                    max_message_bytes,
                )
                await read_writer.send(MessageTooLarge(max_message_bytes))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                logger.debug("reading from MCP server %r ended", server.command)
        finally:
            if overflow:
                # Nothing more is read from it: kill it rather than let it block on a full pipe.
                with anyio.CancelScope(shield=True):
                    await sdk._terminate_process_tree(process)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()
