"""Client identity over HTTP: approvals follow a client that names itself, across connections,
and never reach another client; a waiting call is woken by ``invokit approvals approve``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import (
    approval_id_of,
    approve_in_another_process,
    error_kind,
    http_server,
    make_root,
)

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def named_session(url: str, client_id: str | None) -> AsyncIterator[ClientSession]:
    """A fresh SDK connection that sends the token as a bearer header and, when given, the
    client id; it cannot elicit."""
    parts = urlsplit(url)
    token = parse_qs(parts.query)["token"][0]
    headers = {"Authorization": f"Bearer {token}"}
    if client_id is not None:
        headers["Invokit-Client-Id"] = client_id
    bare = parts._replace(query="").geturl()
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(bare, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def write(session: ClientSession, text: str) -> Any:
    return await session.call_tool("fs.write", {"path": "out.txt", "content": text})


async def test_an_approval_follows_its_client_to_a_new_connection(tmp_path: Path) -> None:
    """A call asked by client "alpha" and approved from the CLI runs when "alpha" retries on a
    new connection; client "beta", with the same token and call, is asked again."""
    root, state = make_root(tmp_path)
    with http_server(root, state) as (url, _):
        async with named_session(url, "alpha") as first:
            asked = await write(first, "hello")
        approval = approval_id_of(asked)
        await approve_in_another_process(state, approval)
        async with named_session(url, "beta") as other:
            refused = await write(other, "hello")
        assert error_kind(refused) == "approval_required"
        assert approval_id_of(refused) != approval
        assert not (root / "out.txt").exists()
        async with named_session(url, None) as anonymous:
            assert error_kind(await write(anonymous, "hello")) == "approval_required"
        async with named_session(url, "alpha") as again:
            done = await write(again, "hello")
        assert not done.is_error, done
        assert (root / "out.txt").read_text() == "hello"


async def test_a_waiting_call_is_woken_by_the_cli(tmp_path: Path) -> None:
    """With --approval-wait, a call nobody can be asked about waits, and ``invokit approvals
    approve`` in another process makes it run at once, once."""
    root, state = make_root(tmp_path)
    with http_server(root, state, "--approval-wait", "60") as (url, _):
        results: list[Any] = []

        async def call() -> None:
            async with named_session(url, "alpha") as session:
                results.append(await write(session, "woken"))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            pending: list[dict[str, Any]] = []
            with anyio.fail_after(30):
                while not pending:
                    await anyio.sleep(0.1)
                    listed = await anyio.run_process(
                        [invokit_bin(), "approvals", "list", "--json"],
                        env=subprocess_env(state),
                    )
                    pending = json.loads(listed.stdout)["pending"]
            with anyio.fail_after(20):
                await approve_in_another_process(state, pending[0]["id"])
        assert len(results) == 1 and not results[0].is_error, results
        assert (root / "out.txt").read_text() == "woken"


async def test_a_wait_that_ends_unanswered_says_approval_required(tmp_path: Path) -> None:
    """At the end of the wait nothing ran and the model reads "approval required"."""
    root, state = make_root(tmp_path)
    with http_server(root, state, "--approval-wait", "0.5") as (url, _):
        async with named_session(url, "alpha") as session:
            started = anyio.current_time()
            result = await write(session, "never")
            waited = anyio.current_time() - started
        assert error_kind(result) == "approval_required"
        assert waited >= 0.5
        assert not (root / "out.txt").exists()


async def test_a_waiting_call_is_refused_by_a_cli_deny(tmp_path: Path) -> None:
    """``invokit approvals deny`` wakes the waiting call at once, and the model reads the
    person's reason; nothing ran."""
    root, state = make_root(tmp_path)
    with http_server(root, state, "--approval-wait", "60") as (url, _):
        results: list[Any] = []

        async def call() -> None:
            async with named_session(url, "alpha") as session:
                results.append(await write(session, "refused"))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            pending: list[dict[str, Any]] = []
            with anyio.fail_after(30):
                while not pending:
                    await anyio.sleep(0.1)
                    listed = await anyio.run_process(
                        [invokit_bin(), "approvals", "list", "--json"],
                        env=subprocess_env(state),
                    )
                    pending = json.loads(listed.stdout)["pending"]
            with anyio.fail_after(20):
                denied = await anyio.run_process(
                    [invokit_bin(), "approvals", "deny", pending[0]["id"], "--reason", "not today"],
                    env=subprocess_env(state),
                )
                assert denied.returncode == 0
        assert error_kind(results[0]) == "approval_denied"
        assert "not today" in results[0].content[0].text
        assert not (root / "out.txt").exists()
