"""A real ``invokit serve --http`` for the inbox tests, a signed-in browser-like client, and
a way to make a question wait."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.cli.conftest import invokit_bin, subprocess_env, trust_config
from tests.cli.serving import approval_id_of, http_server, http_session, make_root
from tests.mcp.support import Asker


@contextmanager
def served(base: Path, *extra: str) -> Iterator[tuple[str, str, Path, Path]]:
    """The server's MCP URL (with its token), its origin, the root and the state. The
    project lets the tools change one execution surface, ``.vscode`` (each change asked)."""
    root, state = make_root(base)
    config = root / "invokit.toml"
    config.write_text('allow_surfaces = [".vscode"]\n' + config.read_text())
    trust_config(config, state)
    with http_server(root, state, *extra) as (url, _log):
        parts = urlsplit(url)
        yield url, f"{parts.scheme}://{parts.netloc}", root, state


def token_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


async def signed_in(origin: str, token: str) -> httpx.AsyncClient:
    """A client holding the inbox's session cookie, as a browser would after signing in."""
    client = httpx.AsyncClient(base_url=origin, timeout=30)
    answer = await client.post("/inbox/signin", data={"token": token}, headers={"Origin": origin})
    assert answer.status_code == 303, answer.text
    return client


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    return found.group(1)


def mcp(url: str) -> Any:
    """An MCP client session to the server, which cannot show approval prompts."""
    return http_session(url, Asker())


async def ask(session: Any, tool: str, arguments: dict[str, Any]) -> str:
    """Call ``tool`` in ``session``; the policy asks; the approval's id."""
    return approval_id_of(await session.call_tool(tool, arguments))


async def ask_once(url: str, tool: str, arguments: dict[str, Any]) -> str:
    """:func:`ask` in a session of its own."""
    async with mcp(url) as session:
        return await ask(session, tool, arguments)


@contextmanager
def inbox_process(root: Path, state: Path, *extra: str) -> Iterator[str]:
    """``invokit inbox --port 0 --json`` in ``root``; yields its URL."""
    log = root.parent / "inbox.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [invokit_bin(), "inbox", "--port", "0", "--json", *extra],
            cwd=root,
            env=subprocess_env(state),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for line in log.read_text().splitlines():
                    if line.startswith("{"):
                        yield str(json.loads(line)["url"])
                        return
                assert process.poll() is None, log.read_text()
                time.sleep(0.1)
            raise AssertionError("invokit inbox did not start: " + log.read_text())
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
