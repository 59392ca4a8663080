"""End to end: the MCP SDK client against `invokit serve --http` on 127.0.0.1, a real process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.cli.serving import (
    approval_id_of,
    approve_in_another_process,
    audit_events,
    error_kind,
    http_server,
    http_session,
    make_root,
)
from tests.mcp.support import Asker, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-scoped: one server for the module."""
    return "asyncio"


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_root(tmp_path_factory.mktemp("serve-http"))


@pytest.fixture(scope="module")
def server(dirs: tuple[Path, Path]) -> Iterator[tuple[str, Path]]:
    """`invokit serve --http --port 0`; its URL and log file."""
    root, state = dirs
    with http_server(root, state) as running:
        yield running


@pytest.fixture(scope="module")
def asker() -> Asker:
    return Asker()


@pytest.fixture(scope="module")
async def session(server: tuple[str, Path], asker: Asker) -> AsyncIterator[ClientSession]:
    async with http_session(server[0], asker) as session:
        yield session


async def test_serves_on_loopback(server: tuple[str, Path]) -> None:
    """The URL is streamable HTTP on 127.0.0.1, with the run's token in it."""
    url = server[0]
    assert url.startswith("http://127.0.0.1:")
    assert "/mcp?token=" in url
    assert len(url.split("token=")[1]) >= 24


async def test_requests_without_the_token_are_refused(server: tuple[str, Path]) -> None:
    """Another local process that does not know the token gets 401, with or without a wrong
    one; with the token as a Bearer header it gets through."""
    import httpx

    url, _ = server
    bare, token = url.split("?token=")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as client:
        missing = await client.post(bare, json=body, headers=headers)
        wrong = await client.post(bare + "?token=nope", json=body, headers=headers)
        bearer = await client.post(
            bare, json=body, headers={**headers, "authorization": f"Bearer {token}"}
        )
    assert missing.status_code == 401
    assert wrong.status_code == 401
    assert bearer.status_code != 401
    assert missing.text.startswith("no token:") and wrong.text.startswith("wrong token:")


async def test_a_refusal_offers_no_oauth(server: tuple[str, Path]) -> None:
    """A refused request is a plain 401 (a Bearer challenge without OAuth resource metadata)
    and OAuth discovery is answered 404, so a client such as the MCP Inspector does not start
    an OAuth flow for a server that has none."""
    import httpx

    bare = server[0].split("?token=")[0]
    origin = bare.removesuffix("/mcp")
    async with httpx.AsyncClient() as client:
        wrong = await client.post(bare + "?token=nope", json={})
        discovery = [
            await client.get(origin + path)
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-authorization-server",
            )
        ]
    assert wrong.status_code == 401
    assert "resource_metadata" not in wrong.headers.get("www-authenticate", "")
    assert [response.status_code for response in discovery] == [404, 404, 404]


async def test_list_and_structured_call(session: ClientSession) -> None:
    """tools/list is sorted; fs.read answers with structuredContent."""
    names = [t.name for t in (await session.list_tools()).tools]
    assert names == sorted(names) and "fs.read" in names
    result = await session.call_tool("fs.read", {"path": "README.md"})
    assert result.structured_content is not None
    assert result.structured_content["content"] == "# Served\n"


async def test_progress_over_http(session: ClientSession) -> None:
    """Progress notifications arrive over streamable HTTP."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    await session.call_tool("demo.count", {"to": 2}, progress_callback=on_progress)
    assert seen == [1, 2]


async def test_cancellation_over_http(session: ClientSession, dirs: tuple[Path, Path]) -> None:
    """A cancelled call is cancelled in the server (recorded in the audit log)."""
    with anyio.move_on_after(1.5):
        await session.call_tool("demo.sleep", {"seconds": 30})
    found = await audit_events(
        dirs[1], lambda r: r["tool"] == "demo.sleep" and r["data"].get("kind") == "cancelled"
    )
    assert found


async def test_elicitation_and_cli_approvals(
    session: ClientSession, asker: Asker, dirs: tuple[Path, Path]
) -> None:
    """Approved by elicitation, a write runs; dismissed, it runs after `invokit approvals
    approve` in another process and an identical retry."""
    root, state = dirs
    asker.answer("accept", {"approve": True})
    done = await session.call_tool("fs.write", {"path": "e.txt", "content": "1"})
    assert done.is_error is False and (root / "e.txt").read_text() == "1"
    asker.answer("cancel")
    arguments = {"path": "c.txt", "content": "2"}
    approval_id = approval_id_of(await session.call_tool("fs.write", arguments))
    await approve_in_another_process(state, approval_id)
    retried = await session.call_tool("fs.write", arguments)
    assert retried.is_error is False, text_of(retried)
    assert (root / "c.txt").read_text() == "2"


async def test_denied_unknown_and_malformed(session: ClientSession) -> None:
    """Denied, unknown and malformed calls are error results of their kinds."""
    assert error_kind(await session.call_tool("fs.delete", {"path": "README.md"})) == "denied"
    assert error_kind(await session.call_tool("nope", {})) == "not_found"
    assert error_kind(await session.call_tool("fs.read", {})) == "invalid_arguments"


async def test_the_live_log_shows_each_call_and_decision(
    session: ClientSession, server: tuple[str, Path]
) -> None:
    """The server's log names each call, its arguments and its decision."""
    await session.call_tool("fs.delete", {"path": "README.md"})
    await session.call_tool("fs.read", {"path": "README.md"})
    with anyio.fail_after(10):
        while "fs.read" not in server[1].read_text():  # noqa: ASYNC110
            await anyio.sleep(0.1)
    log = server[1].read_text()
    assert "denied" in log and "fs.delete" in log and '{"path": "README.md"}' in log
    assert "allowed" in log and "done" in log
