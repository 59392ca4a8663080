"""The inbox live: server-sent events when a question arrives or goes, and ``invokit inbox``
on its own beside a server that shares its state."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.inbox.support import (
    ask,
    ask_once,
    csrf_of,
    inbox_process,
    mcp,
    served,
    signed_in,
    token_of,
)

pytestmark = pytest.mark.anyio


async def _next_change(lines: object) -> list[str]:
    """The ids a ``changed`` event carries (the person's pending questions now)."""
    event = None
    async for line in lines:  # type: ignore[attr-defined]
        if line.startswith("event:"):
            event = line.partition(":")[2].strip()
        elif line.startswith("data:") and event == "changed":
            ids: list[str] = json.loads(line.partition(":")[2])
            return ids
    raise AssertionError("the event stream ended")


async def test_new_and_answered_questions_arrive_as_events(tmp_path: Path) -> None:
    """The event stream says so when a question arrives and when it is answered elsewhere
    (`invokit approvals deny` in another process)."""
    with served(tmp_path) as (url, origin, _, state):
        client = await signed_in(origin, token_of(url))
        try:
            async with client.stream("GET", "/inbox/events") as events:
                assert events.status_code == 200
                assert events.headers["content-type"].startswith("text/event-stream")
                lines = events.aiter_lines()
                with anyio.fail_after(30):
                    approval_id = await ask_once(url, "fs.write", {"path": "a", "content": "1"})
                    assert approval_id in await _next_change(lines)
                    denied = await anyio.run_process(
                        [invokit_bin(), "approvals", "deny", approval_id],
                        env=subprocess_env(state),
                    )
                    assert denied.returncode == 0
                    assert approval_id not in await _next_change(lines)
            fragment = await client.get("/inbox/fragment")
            assert approval_id not in fragment.text
        finally:
            await client.aclose()


async def test_events_need_a_session(tmp_path: Path) -> None:
    with served(tmp_path) as (_, origin, _, _):
        async with httpx.AsyncClient(base_url=origin, timeout=30) as anonymous:
            assert (await anonymous.get("/inbox/events")).status_code == 401


async def test_inbox_on_its_own_answers_a_servers_question(tmp_path: Path) -> None:
    """`invokit inbox` on the server's state shows the server's question; approved there,
    the server's retry runs."""
    with served(tmp_path) as (url, _, root, state), inbox_process(root, state) as page:
        origin = page.removesuffix("/inbox")
        client = await signed_in(origin, token_of(url))
        try:
            arguments = {"path": "from-inbox.txt", "content": "ok"}
            async with mcp(url) as session:
                approval_id = await ask(session, "fs.write", arguments)
                text = (await client.get("/inbox")).text
                assert f'id="q-{approval_id}"' in text
                done = await client.post(
                    "/inbox/decide",
                    data={"csrf": csrf_of(text), "id": approval_id, "action": "once"},
                    headers={"Origin": origin},
                )
                assert done.status_code == 200, done.text
                ran = await session.call_tool("fs.write", arguments)
            assert ran.is_error is False
            assert (root / "from-inbox.txt").read_text() == "ok"
        finally:
            await client.aclose()


def test_the_ready_line_names_the_inbox_and_no_token_means_no_inbox(tmp_path: Path) -> None:
    """`serve --json` says where the inbox is; with --no-token (anyone could answer) there is
    none."""
    from tests.cli.serving import http_server, make_root

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    root, state = make_root(tmp_path / "a")
    with http_server(root, state) as (url, log):
        ready = json.loads(next(x for x in log.read_text().splitlines() if x.startswith("{")))
        assert ready["inbox"] == url.partition("/mcp")[0] + "/inbox"
    root, state = make_root(tmp_path / "b")
    with http_server(root, state, "--no-token") as (url, log):
        ready = json.loads(next(x for x in log.read_text().splitlines() if x.startswith("{")))
        assert "inbox" not in ready
        origin = url.partition("/mcp")[0]
        assert httpx.get(f"{origin}/inbox", timeout=30).status_code == 404
