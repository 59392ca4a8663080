"""End to end over streamable HTTP on 127.0.0.1: the SDK client or raw requests against a server
subprocess, or against the server in this process where a test watches its requests."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp_types import INVALID_REQUEST

from invokit import Executor, ToolRegistry, tool
from invokit.mcp import build_server
from invokit.mcp._http_app import http_app as asgi_app
from invokit.mcp._serve import listening_socket, security_settings
from tests.mcp.support import (
    INIT_REQUEST,
    RAW_HEADERS,
    Asker,
    app_env,
    call_request,
    error_meta,
    http_app,
    http_session,
    open_raw_session,
    text_of,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the app keeps its approvals database and marker files."""
    return tmp_path_factory.mktemp("mcp-http")


@pytest.fixture(scope="module")
def url(app_dir: Path) -> Iterator[str]:
    """The URL of the app serving HTTP on a free loopback port."""
    with http_app(app_dir) as found:
        yield found


async def test_binds_loopback_and_serves_the_mcp_path(url: str) -> None:
    """The server listens on 127.0.0.1 at /mcp, the URL given to ready()."""
    assert url.startswith("http://127.0.0.1:")
    assert url.endswith("/mcp")


async def test_list_and_call_with_structured_output_and_progress(url: str) -> None:
    """Listing, a structured call and progress notifications work over HTTP."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with http_session(url) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        weather = await session.call_tool("weather.get", {"city": "Oslo"})
        worked = await session.call_tool("work", {"steps": 3}, progress_callback=on_progress)
        unknown = await session.call_tool("nope", {})
    assert names == sorted(names)
    assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
    assert text_of(worked) == "did 3 steps"
    assert seen == [1, 2, 3]
    assert error_meta(unknown)["kind"] == "not_found"


async def test_approval_through_elicitation_over_http(url: str, app_dir: Path) -> None:
    """Elicitation works on the HTTP transport: approving in the client runs the call."""
    asker = Asker()
    asker.answer("accept", {"approve": True})
    async with http_session(url, elicitation=asker) as session:
        result = await session.call_tool("note", {"text": "over http"})
    assert text_of(result) == "noted: over http"
    assert len(asker.questions) == 1


async def test_approval_from_a_second_process_then_retry_runs(url: str, app_dir: Path) -> None:
    """Without elicitation the call answers with the approval id; approved elsewhere, a retry runs."""
    args = {"text": "approved elsewhere"}
    async with http_session(url) as session:
        first = await session.call_tool("note", args)
        info = error_meta(first)
        assert info["kind"] == "approval_required"
        approval_id = info["data"]["approval_id"]
        # The app keeps approvals in its own SQLite file, which `invokit approvals` does not
        # open: the message names the id but not a command that could not work.
        assert approval_id in text_of(first)
        assert "invokit approvals approve" not in text_of(first)
        assert "application that runs this server" in text_of(first)

        again = await session.call_tool("note", args)
        assert again.is_error is True  # asking again never runs it

        script = (
            "import sys, anyio\n"
            "from invokit.approvals import ApprovalDecision, SqliteApprovalStore\n"
            "async def main():\n"
            "    store = SqliteApprovalStore(sys.argv[1])\n"
            "    await store.resolve(sys.argv[2], ApprovalDecision.approve(by='test'))\n"
            "    await store.close()\n"
            "anyio.run(main)\n"
        )
        with anyio.fail_after(60):
            await anyio.run_process(
                [sys.executable, "-c", script, str(app_dir / "approvals.sqlite3"), approval_id],
                env=app_env(app_dir),
                check=True,
            )
        retried = await session.call_tool("note", args)
        once_more = await session.call_tool("note", args)
    assert retried.is_error is False
    assert text_of(retried) == "noted: approved elsewhere"
    assert once_more.is_error is True  # the approval was used up
    assert (app_dir / "notes.txt").read_text().count("approved elsewhere") == 1


async def test_foreign_host_header_is_refused(url: str) -> None:
    """A request whose Host is not the server's (DNS rebinding) is refused with 421."""
    async with httpx.AsyncClient() as client:
        response = await client.post(
            url, json=INIT_REQUEST, headers={**RAW_HEADERS, "Host": "evil.example:80"}
        )
    assert response.status_code == 421


async def test_foreign_origin_is_refused(url: str) -> None:
    """A browser request from another origin is refused with 403; the server's own is served."""
    async with httpx.AsyncClient() as client:
        refused = await client.post(
            url, json=INIT_REQUEST, headers={**RAW_HEADERS, "Origin": "http://evil.example"}
        )
        own_origin = url.removesuffix("/mcp")
        served = await client.post(
            url, json=INIT_REQUEST, headers={**RAW_HEADERS, "Origin": own_origin}
        )
    assert refused.status_code == 403
    assert served.status_code == 200


async def test_a_call_with_nothing_on_its_back_channel_is_answered_in_json(url: str) -> None:
    """initialize, tools/list and a plain tools/call come back as one JSON body, each with
    its own id and the session's id."""
    async with httpx.AsyncClient() as client:
        opened = await client.post(url, json=INIT_REQUEST, headers=RAW_HEADERS)
        headers = await open_raw_session(client, url)
        listed = await client.post(
            url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        call = {"name": "weather.get", "arguments": {"city": "Oslo"}}
        called = await client.post(
            url,
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
            headers=headers,
        )
    assert opened.headers["content-type"] == "application/json"
    assert opened.json()["result"]["serverInfo"]["name"]
    for response, ident in ((listed, 2), (called, 3)):
        assert response.headers["content-type"] == "application/json"
        assert response.headers["mcp-session-id"] == headers["Mcp-Session-Id"]
        assert response.json()["id"] == ident
    assert called.json()["result"]["structuredContent"] == {"city": "Oslo", "celsius": 21.5}


async def test_progress_opens_an_sse_stream_that_ends_with_the_result(url: str) -> None:
    """A call that reports progress to a client that asked for it is answered as an SSE
    stream: every progress notification, then the result."""
    async with httpx.AsyncClient() as client:
        headers = await open_raw_session(client, url)
        params = {"name": "work", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}}
        response = await client.post(
            url,
            json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params},
            headers=headers,
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line.removeprefix("data:"))
        for line in response.text.splitlines()
        if line.startswith("data:") and line.removeprefix("data:").strip()
    ]
    assert [e["params"]["progress"] for e in events[:-1]] == [1, 2, 3]
    assert events[-1]["id"] == 7
    assert events[-1]["result"]["content"][0]["text"] == "did 3 steps"


async def test_accepted_connections_send_without_nagle_delay() -> None:
    """The HTTP server's connections have TCP_NODELAY, so a reply written in pieces is not held
    back waiting for the client's delayed ACK."""
    import asyncio
    import socket

    from invokit.mcp._serve import listening_socket

    sock = listening_socket("127.0.0.1", 0)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw = writer.get_extra_info("socket")
        accepted.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connection, sock=sock)
    async with server:
        port = sock.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(accepted, 10) != 0
        writer.close()


async def test_a_request_whose_id_is_in_flight_is_refused(tmp_path: Path) -> None:
    """A second POST with the id of a request still in flight in the session is refused at
    once with 409; the first is answered as usual, and the server stops without a traceback."""
    answers: list[httpx.Response] = []
    with http_app(tmp_path) as url:
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await open_raw_session(client, url)

            async def slow() -> None:
                call = call_request(5, "sleepy", {"seconds": 2})
                answers.append(await client.post(url, json=call, headers=headers))

            with anyio.fail_after(20):
                async with anyio.create_task_group() as group:
                    group.start_soon(slow)
                    while not (tmp_path / "sleepy").exists():  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                    again = call_request(5, "add", {"a": 1, "b": 2})
                    with anyio.fail_after(5):
                        refused = await client.post(url, json=again, headers=headers)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == INVALID_REQUEST
    (first,) = answers
    assert first.json()["id"] == 5
    assert first.json()["result"]["content"][0]["text"] == "rested"
    assert "Traceback" not in (tmp_path / "server-stderr.log").read_text()


@asynccontextmanager
async def served(server: Any) -> AsyncIterator[tuple[str, uvicorn.Server]]:
    """``server`` (a ``build_server`` result) served over HTTP in this process on a free
    loopback port: its URL and the uvicorn server, whose requests in progress can be seen."""
    sock = listening_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app, _ = asgi_app(server, security=security_settings("127.0.0.1", port))
    # log_config=None, as invokit serve: uvicorn's own logging set-up would outlive this test
    # in the process (its handlers on the "uvicorn" logger) and divert later tests' records.
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning", log_config=None, lifespan="on"))
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(partial(http.serve, sockets=[sock]))
            with anyio.fail_after(10):
                while not http.started:  # noqa: ASYNC110 - uvicorn has only a flag
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}/mcp", http
            finally:
                http.should_exit = True
    finally:
        sock.close()


async def test_a_client_gone_while_its_call_runs_leaves_no_request_waiting() -> None:
    """A client that disconnects while its call runs ends the request's handler at once; it
    does not wait for an answer nobody will read."""
    started, release = anyio.Event(), anyio.Event()

    @tool(read_only=True)
    async def hold() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "released"

    registry = ToolRegistry([hold])
    async with served(build_server(registry, Executor(registry))) as (url, http):
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await open_raw_session(client, url)
            async with anyio.create_task_group() as group:
                group.start_soon(
                    partial(client.post, url, json=call_request(2, "hold", {}), headers=headers)
                )
                with anyio.fail_after(10):
                    await started.wait()
                group.cancel_scope.cancel()  # the client goes away mid-call
        try:
            with anyio.fail_after(30):
                while http.server_state.tasks:  # noqa: ASYNC110 - the requests in progress
                    await anyio.sleep(0.02)
        finally:
            release.set()
