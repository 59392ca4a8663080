"""MCPToolset against servers no one here wrote: the reference server-everything (npm) and
mcp-server-time (PyPI)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit import Completed, Executor, Failed, ImagePart, Interrupted, Policy, ToolCall
from invokit.mcp import MCPToolset, PinStore
from invokit.tools import Progress

pytestmark = pytest.mark.anyio

NPM_CACHE = Path.home() / ".cache" / "invokit-tests" / "npm"
EVERYTHING = NPM_CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything"


CONNECT = 120.0
"""Seconds a server may take to start, initialize and list its tools here: far more than it
needs, so a slow start on a loaded machine is never a failure."""

# The remote tools are the reference server's: this user chose to trust them.
TRUSTED = Policy(allow=["ev.*"])


@pytest.fixture(scope="module")
def everything_entry() -> Path:
    """server-everything installed from npm into a cache directory (once)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm and node are needed to install @modelcontextprotocol/server-everything")
    entry = EVERYTHING / "dist" / "index.js"
    if not entry.exists():
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "@modelcontextprotocol/server-everything",
            ],
            cwd=NPM_CACHE,
            check=True,
            timeout=300,
            capture_output=True,
        )
    return entry


@pytest.fixture(scope="module")
async def everything(
    everything_entry: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[MCPToolset]:
    """A connected toolset of server-everything over stdio, prefixed ``ev``."""
    pins = PinStore(tmp_path_factory.mktemp("pins") / "pins.json")
    # A deadline, not a speed: node starting under a loaded machine takes its time.
    async with MCPToolset.stdio(
        "node",
        [str(everything_entry), "stdio"],
        prefix="ev",
        server="everything",
        pins=pins,
        connect_timeout=CONNECT,
    ) as toolset:
        yield toolset


async def test_lists_tools_prefixed_with_hints_mapped_back(everything: MCPToolset) -> None:
    """Every tool is listed as ev.name, sorted, with its MCP hints as invokit annotations."""
    names = everything.names()
    assert names == tuple(sorted(names))
    assert "ev.echo" in names
    echo = everything["ev.echo"].spec
    assert echo.annotations.read_only is True
    assert echo.annotations.open_world is False
    assert echo.input_schema["properties"]["message"]["type"] == "string"
    remote = everything.get("ev.echo")
    assert remote is not None
    assert echo.metadata == {
        "mcp_server": "everything",
        "mcp_tool": "echo",
        "mcp_fingerprint": remote.fingerprint,
    }


async def test_call_echo_through_the_executor(everything: MCPToolset) -> None:
    """A read-only remote tool runs through the executor under the default policy."""
    executor = Executor(everything, policy=TRUSTED)
    outcome = await executor.execute(
        ToolCall(id="1", name="ev.echo", arguments={"message": "hello"})
    )
    assert isinstance(outcome, Completed)
    assert "hello" in outcome.result.text


async def test_structured_content_comes_back(everything: MCPToolset) -> None:
    """A tool with an output schema returns its structuredContent as the structured value."""
    spec = everything["ev.get-structured-content"].spec
    assert spec.output_schema is not None
    executor = Executor(everything, policy=TRUSTED)
    outcome = await executor.execute(
        ToolCall(id="1", name="ev.get-structured-content", arguments={"location": "Chicago"})
    )
    assert isinstance(outcome, Completed)
    assert isinstance(outcome.result.structured, dict)
    assert outcome.result.structured.keys() >= {"temperature", "conditions"}


async def test_progress_from_a_long_running_operation(everything: MCPToolset) -> None:
    """The server's progress notifications arrive as invokit Progress while the call runs."""
    executor = Executor(everything, policy=TRUSTED)
    seen: list[Progress] = []
    async for item in executor.stream(
        ToolCall(
            id="1",
            name="ev.trigger-long-running-operation",
            arguments={"duration": 0.3, "steps": 3},
        )
    ):
        if isinstance(item, Progress):
            seen.append(item)
        else:
            assert isinstance(item, Completed)
            assert item.result.is_error is False
    assert [p.progress for p in seen] == [1, 2, 3]
    assert {p.total for p in seen} == {3}


async def test_image_content_becomes_an_image_part(everything: MCPToolset) -> None:
    """An image block from the server becomes an ImagePart."""
    outcome = await Executor(everything, policy=TRUSTED).execute(
        ToolCall(id="1", name="ev.get-tiny-image", arguments={})
    )
    assert isinstance(outcome, Completed)
    assert any(isinstance(p, ImagePart) for p in outcome.result.content)


async def test_local_policy_governs_remote_tools(everything: MCPToolset) -> None:
    """A not-read-only remote tool asks by default; a deny rule on mcp: refuses a read-only one."""
    executor = Executor(everything, policy=Policy(deny=["*(mcp:everything/get-env)"]))
    denied = await executor.execute(ToolCall(id="1", name="ev.get-env", arguments={}))
    asked = await executor.execute(
        ToolCall(id="2", name="ev.toggle-simulated-logging", arguments={})
    )
    assert isinstance(denied, Failed)
    assert denied.result.error is not None
    assert denied.result.error.kind == "denied"
    assert not isinstance(asked, Completed)  # interrupted for approval; nothing ran


async def test_remote_read_only_hints_do_not_allow_by_default(everything: MCPToolset) -> None:
    """A remote tool that calls itself read-only still asks under the default policy: its
    hints are the server's claims; an allow rule is the user's trust."""
    echo = everything.get("ev.echo")
    assert echo is not None
    assert echo.spec.annotations.read_only is True
    outcome = await Executor(everything).execute(
        ToolCall(id="1", name="ev.echo", arguments={"message": "hi"})
    )
    assert isinstance(outcome, Interrupted)


async def test_invalid_arguments_stop_locally(everything: MCPToolset) -> None:
    """Arguments that break the remote schema are refused before anything is sent."""
    outcome = await Executor(everything, policy=TRUSTED).execute(
        ToolCall(id="1", name="ev.get-sum", arguments={"a": "one", "b": 2})
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "invalid_arguments"


@pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None,
    reason="mcp-server-time is not installed (pip install mcp-server-time)",
)
async def test_mcp_server_time_from_pypi(tmp_path: Path) -> None:
    """The PyPI mcp-server-time server's tools list and answer through the executor."""
    async with MCPToolset.stdio(
        sys.executable,
        ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        prefix="time",
        pins=PinStore(tmp_path / "pins.json"),
        connect_timeout=CONNECT,
    ) as toolset:
        assert toolset.names() == ("time.convert_time", "time.get_current_time")
        outcome = await Executor(toolset, policy=Policy(allow=["time.*"])).execute(
            ToolCall(id="1", name="time.get_current_time", arguments={"timezone": "Europe/Madrid"})
        )
    assert isinstance(outcome, Completed)
    assert outcome.result.is_error is False
    assert isinstance(outcome.result.structured, dict)
    assert outcome.result.structured["timezone"] == "Europe/Madrid"
