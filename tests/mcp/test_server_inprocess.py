"""The server in this process over memory streams: list_changed and the listing cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession, IncomingMessage

from invokit import Executor, ToolRegistry, tool
from invokit.mcp import ToolServer, build_server
from tests.mcp.support import memory_session

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool(read_only=True)
def later() -> str:
    """A tool added while the server runs."""
    return "here"


@asynccontextmanager
async def connected(registry: ToolRegistry, changed: anyio.Event) -> AsyncIterator[ClientSession]:
    server = build_server(registry, Executor(registry))

    async def record(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with memory_session(server, message_handler=record) as session:
        yield session


async def test_registry_change_sends_list_changed_and_relists() -> None:
    """Adding a tool to the registry notifies connected clients; the next list includes it."""
    registry = ToolRegistry([ping])
    changed = anyio.Event()
    async with connected(registry, changed) as session:
        assert session.initialize_result is not None
        tools = session.initialize_result.capabilities.tools
        assert tools is not None
        assert tools.list_changed is True
        before = [t.name for t in (await session.list_tools()).tools]
        registry.add(later)
        with anyio.fail_after(30):
            await changed.wait()
        after = [t.name for t in (await session.list_tools()).tools]
        called = await session.call_tool("later", {})
    assert before == ["ping"]
    assert after == ["later", "ping"]
    assert called.content[0].type == "text"


def test_listing_is_cached_until_a_spec_changes() -> None:
    """The tools/list answer is built once and reused while the registry's specs are the same."""
    registry = ToolRegistry([ping])
    handlers = ToolServer(registry, Executor(registry))
    first = handlers.listing()
    assert handlers.listing() is first
    registry.add(later)
    second = handlers.listing()
    assert second is not first
    assert [t["name"] for t in second["tools"]] == ["later", "ping"]
