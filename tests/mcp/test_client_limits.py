"""The MCP client against large and misbehaving servers: listing cost, message size, bad schemas."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from pydantic import ValidationError

from invokit import Completed, Executor, Failed, Policy, ToolCall
from invokit.mcp import MCPToolset, PinStore
from invokit.mcp._pins import PinStore as Pins
from invokit.mcp._stdio_client import _parse, _parse_in_pieces
from tests._turns import Beside

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("raw_server.py")


def raw(tmp: Path, **env: str) -> MCPToolset:
    return MCPToolset.stdio(
        sys.executable,
        [str(SERVER)],
        prefix="raw",
        env={**os.environ, **env},
        pins=PinStore(tmp / "pins.json"),
        connect_timeout=30,
        call_timeout=20,
        max_message_bytes=1_000_000,
    )


class CountingPins(Pins):
    """A pin store that counts how often it writes its file."""

    writes = 0

    def _write(self, data: dict[str, dict[str, dict[str, object]]]) -> None:
        type(self).writes += 1
        super()._write(data)


async def test_a_large_listing_pins_every_tool_in_one_write(tmp_path: Path) -> None:
    """1,500 new tools are pinned with one write of the pins file, not one per tool, and the
    event loop keeps serving other tasks while the listing is converted."""
    pins = CountingPins(tmp_path / "pins.json")
    toolset = MCPToolset.stdio(
        sys.executable,
        [str(SERVER)],
        prefix="raw",
        env={**os.environ, "TOOLS": "1500"},
        pins=pins,
        connect_timeout=30,
    )
    other = Beside()  # counts the turns the loop gave it before the connection was made
    async with anyio.create_task_group() as group:
        group.start_soon(other.run)
        async with toolset:
            other.stop()
            assert len(toolset.names()) == 1501
    assert CountingPins.writes == 1
    saved = json.loads((tmp_path / "pins.json").read_text())
    assert len(saved["raw"]) == 1501
    # Its first turn can come at the connection's first wait; a second one means the loop
    # served it again while the 1,501 tools were read, converted and pinned.
    assert other.turns >= 2


async def test_a_large_listing_is_checked_a_batch_at_a_time_with_the_loop_served_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connecting to a server of 6,000 tools checks the listing ``BATCH`` tools at a time, and
    another task on the loop gets a turn between every two batches: no check of the whole page
    in one go (the SDK's, which held the loop for 130 ms). How long a batch holds the loop on a
    given machine is measured by ``benchmarks/listing_hold.py``, not asserted here."""
    from itertools import pairwise

    from mcp_types import methods

    from invokit.mcp._listing import BATCH

    other = Beside()
    checked: list[tuple[int, int]] = []  # (tools in the part, the other task's turns by then)
    check = methods.validate_server_result

    def counted(method: str, version: str, part: dict[str, object]) -> object:
        if method == "tools/list":
            listed = part["tools"]
            assert isinstance(listed, list)
            checked.append((len(listed), other.turns))
        return check(method, version, part)

    monkeypatch.setattr(methods, "validate_server_result", counted)
    toolset = MCPToolset.stdio(
        sys.executable,
        [str(SERVER)],
        prefix="raw",
        env={**os.environ, "TOOLS": "6000"},
        pins=PinStore(tmp_path / "pins.json"),
        connect_timeout=60,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(other.run)
        async with toolset:
            other.stop()
            assert len(toolset.names()) == 6001
    assert sum(size for size, _ in checked) == 6001
    assert len(checked) == -(-6001 // BATCH)
    assert all(size <= BATCH for size, _ in checked)
    assert all(later > earlier for (_, earlier), (_, later) in pairwise(checked)), checked


async def test_a_bad_tool_late_in_a_large_listing_is_refused_as_before(tmp_path: Path) -> None:
    """The listing is checked a batch at a time, every batch: a tool without an input schema
    at position 850 of 1,000 fails the listing as the SDK's check of the whole page does."""
    with pytest.raises(ValidationError, match="inputSchema") as caught:
        async with raw(tmp_path, TOOLS="1000", BAD_TOOL_AT="850"):
            pass
    assert "t850" in str(caught.value)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a", "inputSchema": '
        b'{"type": "object", "properties": {"x": {"enum": [1, "\\u00e9", null, true]}}}}]}}',
        b' {"jsonrpc":"2.0","id":"r","result":{"tools":[],"nextCursor":"c"}} ',
        b'{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}',
        b'{"jsonrpc": "2.0", "id": 2, "result": {"deep": [[[[[1]]]]], "empty": {}, "e": []}}',
    ],
)
def test_a_message_parsed_in_pieces_is_the_message_parsed_at_once(line: bytes) -> None:
    """A long line is parsed a value at a time in a thread; what it becomes is the same."""
    assert _parse_in_pieces(line) == _parse(line)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": [1, 2,]}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {}} {}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {1: 2}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {"a" 2}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {"a": "\xff"}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": [',
        b'{"jsonrpc": "1.0", "id": 1, "result": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": ['
        + b"[" * 100_000
        + b"]" * 100_000
        + b"]}}",
    ],
)
def test_a_broken_message_parsed_in_pieces_is_refused(line: bytes) -> None:
    """What is not a JSON-RPC message is an error value (logged), as when parsed at once."""
    assert isinstance(_parse_in_pieces(line), ValueError)
    assert isinstance(_parse(line), ValueError)


async def test_a_remote_ref_leaves_the_tool_out_instead_of_failing_calls(tmp_path: Path) -> None:
    """A tool whose schema names a remote $ref is left out with a note; the others work and
    calling it is an ordinary unknown-tool result, never an exception."""
    async with raw(tmp_path, REMOTE_REF="1") as toolset:
        assert "raw.remote" not in toolset.names()
        assert any(p.startswith("remote:") for p in toolset.problems)
        executor = Executor(toolset, policy=Policy(default="allow"))
        missing = await executor.execute(ToolCall(id="1", name="raw.remote", arguments={}))
        ok = await executor.execute(ToolCall(id="2", name="raw.t0", arguments={"x": 1}))
    assert isinstance(missing, Failed)
    assert missing.result.error is not None
    assert missing.result.error.kind == "not_found"
    assert isinstance(ok, Completed)


async def test_an_endless_line_is_cut_and_the_server_stopped(tmp_path: Path) -> None:
    """A server that answers with a line that never ends is cut off at the size cap: the call
    fails as unavailable well before its timeout, memory stays bounded, the server process
    is killed, and the next call starts it again."""
    pids = tmp_path / "pids"
    pids.mkdir()
    async with raw(tmp_path, PID_DIR=str(pids)) as toolset:
        executor = Executor(toolset, policy=Policy(default="allow"))
        flooded = await executor.execute(ToolCall(id="1", name="raw.flood", arguments={}))
        first = int(next(pids.iterdir()).name)
        after = await executor.execute(ToolCall(id="2", name="raw.t1", arguments={"x": 1}))
        assert len(list(pids.iterdir())) == 2  # started again
        assert not _alive(first)
    assert flooded.result.is_error
    assert flooded.result.error is not None
    # Cut at the size cap, not ended by the 20 s call timeout (that would be "timeout").
    assert flooded.result.error.kind == "unavailable"
    assert not after.result.is_error
    assert after.result.text == "ok"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has stopped running.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


CONNECT_WITHOUT_STDERR = """
import io, os, sys
sys.stderr = io.StringIO()  # before invokit is imported, as under a capturing test runner
import anyio
import anyio.lowlevel
from invokit.mcp import MCPToolset, PinStore

async def main() -> None:
    toolset = MCPToolset.stdio(
        sys.executable, [sys.argv[1]], prefix="raw", env=dict(os.environ),
        pins=PinStore(sys.argv[2]), connect_timeout=30,
    )
    async with toolset:
        print(" ".join(sorted(toolset.names())), file=sys.__stdout__)

anyio.run(main)
"""


def test_a_server_connects_while_stderr_has_no_descriptor(tmp_path: Path) -> None:
    """With ``sys.stderr`` replaced by an object without a file descriptor before invokit is
    imported (a test runner capturing output, an embedding host), a stdio server still starts
    and its tools are listed."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", CONNECT_WITHOUT_STDERR, str(SERVER), str(tmp_path / "pins.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "raw.t0" in done.stdout.split(), done.stdout
