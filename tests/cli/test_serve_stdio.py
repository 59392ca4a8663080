"""End to end: the MCP SDK client launches `invokit serve --stdio` as a real subprocess."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.cli.serving import (
    approval_id_of,
    approve_in_another_process,
    audit_events,
    error_kind,
    make_root,
    stdio_session,
)
from tests.mcp.support import Asker, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-scoped: one server for the module (starting one imports the MCP SDK)."""
    return "asyncio"


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The served root and the state directory."""
    return make_root(tmp_path_factory.mktemp("serve-stdio"))


@pytest.fixture(scope="module")
def asker() -> Asker:
    return Asker()


@pytest.fixture(scope="module")
async def session(dirs: tuple[Path, Path], asker: Asker) -> AsyncIterator[ClientSession]:
    """One client session with `invokit serve --stdio`, shared by the module."""
    root, state = dirs
    async with stdio_session(root, state, asker) as session:
        yield session


async def test_lists_the_builtin_and_imported_tools(session: ClientSession) -> None:
    """tools/list has the filesystem tools and the imported ones, sorted, with hints."""
    listed = (await session.list_tools()).tools
    names = [t.name for t in listed]
    assert names == sorted(names)
    assert {"fs.read", "fs.write", "demo.count"} <= set(names)
    by_name = {t.name: t for t in listed}
    assert by_name["fs.read"].annotations is not None
    assert by_name["fs.read"].annotations.read_only_hint is True


async def test_the_startup_heap_is_out_of_the_collectors_reach(session: ClientSession) -> None:
    """What starting the server made is frozen once it serves: a full garbage collection,
    which holds the event loop, walks only what came since (issue 12: execute_many's stalls
    were full collections walking the whole startup heap)."""
    result = await session.call_tool("demo.heap", {})
    assert result.structured_content is not None
    assert result.structured_content["frozen"] > 10_000


async def test_read_returns_structured_content(session: ClientSession) -> None:
    """fs.read answers with the file in structuredContent."""
    result = await session.call_tool("fs.read", {"path": "README.md"})
    assert result.is_error is False
    assert result.structured_content is not None
    assert result.structured_content["content"] == "# Served\n"


async def test_progress_notifications_reach_the_client(session: ClientSession) -> None:
    """Progress a tool reports arrives as MCP progress notifications."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await session.call_tool("demo.count", {"to": 3}, progress_callback=on_progress)
    assert result.structured_content == {"counted": 3}
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_cancelling_a_call_cancels_it_in_the_server(
    session: ClientSession, dirs: tuple[Path, Path]
) -> None:
    """A client that gives up sends a cancellation; the server records the call cancelled."""
    _, state = dirs
    with anyio.move_on_after(1.5) as scope:
        await session.call_tool("demo.sleep", {"seconds": 30})
    assert scope.cancelled_caught
    cancelled = await audit_events(
        state, lambda r: r["tool"] == "demo.sleep" and r["data"].get("kind") == "cancelled"
    )
    assert cancelled
    again = await session.call_tool("fs.read", {"path": "README.md"})
    assert again.is_error is False


async def test_approval_through_elicitation_runs_the_write(
    session: ClientSession, asker: Asker, dirs: tuple[Path, Path]
) -> None:
    """The client is asked (tool and exact arguments shown); approving runs the write."""
    root, _ = dirs
    asker.answer("accept", {"approve": True})
    result = await session.call_tool("fs.write", {"path": "elicited.txt", "content": "yes"})
    assert result.is_error is False, text_of(result)
    assert (root / "elicited.txt").read_text() == "yes"
    (question,) = asker.questions
    assert "fs.write" in question and '"content": "yes"' in question


async def test_approval_from_the_cli_in_a_second_process(
    session: ClientSession, asker: Asker, dirs: tuple[Path, Path]
) -> None:
    """Dismissed in the client, the call names its approval id; `invokit approvals approve`
    in another process lets the identical retry run."""
    root, state = dirs
    asker.answer("cancel")
    arguments = {"path": "approved.txt", "content": "via cli"}
    first = await session.call_tool("fs.write", arguments)
    approval_id = approval_id_of(first)
    assert f"invokit approvals approve {approval_id}" in text_of(first)
    assert not (root / "approved.txt").exists()
    await approve_in_another_process(state, approval_id)
    retried = await session.call_tool("fs.write", arguments)
    assert retried.is_error is False, text_of(retried)
    assert (root / "approved.txt").read_text() == "via cli"


async def test_denied_call_is_an_error_and_nothing_happens(
    session: ClientSession, dirs: tuple[Path, Path]
) -> None:
    """fs.delete is denied by the policy: an error result of kind denied; the file stays."""
    root, _ = dirs
    result = await session.call_tool("fs.delete", {"path": "README.md"})
    assert result.is_error is True
    assert error_kind(result) == "denied"
    assert (root / "README.md").exists()


async def test_unknown_tool_and_malformed_arguments(session: ClientSession) -> None:
    """An unknown tool and arguments that break the schema are error results with kinds."""
    unknown = await session.call_tool("fs.raed", {"path": "README.md"})
    assert unknown.is_error is True and error_kind(unknown) == "not_found"
    assert "fs.read" in text_of(unknown)
    malformed = await session.call_tool("fs.read", {"path": 5, "offset": "first"})
    assert malformed.is_error is True and error_kind(malformed) == "invalid_arguments"


async def test_the_config_file_cannot_be_rewritten_by_a_client(
    session: ClientSession, asker: Asker, dirs: tuple[Path, Path]
) -> None:
    """Writing invokit.toml in the root is denied outright, never even asked."""
    root, _ = dirs
    asker.answer("accept", {"approve": True})
    result = await session.call_tool("fs.write", {"path": "invokit.toml", "content": ""})
    assert error_kind(result) == "denied"
    assert asker.questions == []
    assert "demo" in (root / "invokit.toml").read_text()
