"""Running ``invokit serve`` as a real subprocess, and an SDK client session to it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.cli.conftest import invokit_bin, subprocess_env, trust_config
from tests.mcp.support import Asker
from tests.mcp.support import http_session as support_session

CONFIG = """\
[tools.python]
import = ["tests.cli.demo_tools:registry"]

[policy]
allow = ["tag:read & category:filesystem", "demo.*"]
ask = ["tag:write"]
deny = ["fs.delete"]
default = "ask"
"""


def make_root(base: Path) -> tuple[Path, Path]:
    """A served root with a README and an invokit.toml, and a state directory beside it."""
    root = base / "root"
    root.mkdir()
    (root / "README.md").write_text("# Served\n")
    (root / "invokit.toml").write_text(CONFIG)
    trust_config(root / "invokit.toml", base / "state")
    return root, base / "state"


@asynccontextmanager
async def stdio_session(root: Path, state: Path, asker: Asker) -> AsyncIterator[ClientSession]:
    """``invokit serve --stdio`` launched by the SDK client, as a desktop client would."""
    params = StdioServerParameters(
        command=invokit_bin(), args=["serve", "--stdio"], env=subprocess_env(state), cwd=root
    )
    with (root.parent / "serve-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, elicitation_callback=asker) as session,
        ):
            await session.initialize()
            yield session


@contextmanager
def http_server(root: Path, state: Path, *extra: str) -> Iterator[tuple[str, Path]]:
    """``invokit serve --http --port 0 --json``; yields the URL and the file of its output."""
    log = root.parent / "serve-http.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [invokit_bin(), "serve", "--http", "--port", "0", "--json", "--no-ask", *extra],
            cwd=root,
            env=subprocess_env(state),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield ready_url(process, log), log
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def ready_url(process: subprocess.Popen[Any], log: Path, timeout: float = 60.0) -> str:
    """The URL from the JSON ready line ``serve --json`` writes to ``log``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("{"):
                data = json.loads(line)
                assert data["event"] == "ready", data
                return str(data["url"])
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError("invokit serve did not start: " + log.read_text())


def http_session(url: str, asker: Asker) -> AbstractAsyncContextManager[ClientSession]:
    """An MCP SDK client session with ``invokit serve`` at ``url`` (``tests.mcp.support``'s)."""
    return support_session(url, elicitation=asker)


def error_kind(result: Any) -> str:
    info = (result.meta or {}).get("invokit/error")
    assert isinstance(info, dict), result
    return str(info["kind"])


def approval_id_of(result: Any) -> str:
    info = (result.meta or {}).get("invokit/error")
    assert isinstance(info, dict) and info["kind"] == "approval_required", result
    return str(info["data"]["approval_id"])


async def approve_in_another_process(state: Path, approval_id: str) -> None:
    """``invokit approvals approve ID`` as a separate process, as a person in a terminal."""
    done = await anyio.run_process(
        [invokit_bin(), "approvals", "approve", approval_id],
        env=subprocess_env(state),
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


async def audit_events(state: Path, predicate: Any, wait: float = 10.0) -> list[dict[str, Any]]:
    """Audit records matching ``predicate``, waiting for the log to be flushed."""
    path = state / "audit.jsonl"
    with anyio.fail_after(wait):
        while True:
            if path.exists():
                records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
                found = [r for r in records if predicate(r)]
                if found:
                    return found
            await anyio.sleep(0.1)
