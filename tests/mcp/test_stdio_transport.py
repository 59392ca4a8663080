"""The native stdio transport, spoken to over the real pipes of a server subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.mcp.support import APP, app_env

pytestmark = pytest.mark.anyio


class Wire:
    """Raw JSON-RPC lines to and from the server's stdin and stdout."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)

    async def send_line(self, line: str) -> None:
        await self._stdin.send(line.encode() + b"\n")

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_line(json.dumps(message))

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(30):
            line = await self._stdout.receive_until(b"\n", 64 * 1024 * 1024)
        message: dict[str, Any] = json.loads(line)
        return message

    async def call(self, id: int, name: str, arguments: dict[str, Any]) -> None:
        params = {"name": name, "arguments": arguments}
        await self.send({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})


@asynccontextmanager
async def served(tmp: Path, **env: str) -> AsyncIterator[Wire]:
    """The app over stdio, initialized, as raw pipes."""
    argv = [sys.executable, str(APP), "stdio", str(tmp / "approvals.sqlite3")]
    with (tmp / "stderr.log").open("w") as errlog:
        async with await anyio.open_process(
            argv, env=app_env(tmp, **env), stderr=errlog
        ) as process:
            wire = Wire(process)
            init = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            }
            await wire.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
            assert (await wire.receive())["id"] == 0
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            try:
                yield wire
            finally:
                await process.aclose()


async def test_a_line_that_is_not_a_message_is_skipped(tmp_path: Path) -> None:
    """A line that is not a JSON-RPC message is dropped; the requests around it are answered."""
    async with served(tmp_path) as wire:
        await wire.call(1, "add", {"a": 1, "b": 2})
        await wire.send_line("this is not json")
        await wire.send_line('{"jsonrpc": "2.0", "id": 7}')
        await wire.call(2, "add", {"a": 3, "b": 4})
        answers = {}
        for _ in range(2):
            answer = await wire.receive()
            answers[answer["id"]] = answer["result"]["structuredContent"]
        assert answers == {1: {"result": 3}, 2: {"result": 7}}


async def test_answers_larger_than_the_pipe_arrive_whole(tmp_path: Path) -> None:
    """Concurrent answers of ~130 KB each (several times a pipe's buffer), read only once all
    were sent, arrive as whole lines, one per request, never interleaved."""
    async with served(tmp_path, SPILL_CHARS=str(10**7)) as wire:
        for id in range(1, 7):
            await wire.call(id, "bulky", {"rows": 10_000 + id})
        await anyio.sleep(0.5)  # the server fills the pipe and waits for the client
        sizes = {}
        for _ in range(6):
            answer = await wire.receive()
            sizes[answer["id"]] = len(answer["result"]["structuredContent"]["rows"])
        assert sizes == {id: 10_000 + id for id in range(1, 7)}


def test_files_for_stdin_and_stdout_are_served_by_the_sdk_streams(tmp_path: Path) -> None:
    """Standard streams that are regular files, not pipes, are served all the same (through
    the SDK's stdio_server): the answer to the request in the file is written to the file."""
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "file", "version": "0"},
    }
    given = tmp_path / "in.jsonl"
    given.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}) + "\n"
    )
    answered = tmp_path / "out.jsonl"
    with given.open("rb") as stdin, answered.open("wb") as stdout:
        subprocess.run(
            [sys.executable, str(APP), "stdio", str(tmp_path / "approvals.sqlite3")],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            env=app_env(tmp_path),
            timeout=60,
            check=True,
        )
    answer = json.loads(answered.read_text().splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "invokit"
