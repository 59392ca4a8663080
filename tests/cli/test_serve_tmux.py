"""`invokit serve` in a real terminal (tmux): the banner, the live log, and an approval
answered at the keyboard for a call made by an MCP client."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_session, make_root
from tests.mcp.support import Asker, text_of

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt install tmux)")


class Pane:
    """One tmux server and session of our own (a private socket), driven by keys."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", "serve")

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text())
            if found is not None:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never appeared:\n{self.text()}")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "serve", *keys)


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    """`invokit serve --http --port 0` running in a 200x60 tmux terminal."""
    root, state = make_root(tmp_path)
    env = subprocess_env(state)
    exports = " ".join(
        f"{k}={shlex.quote(env[k])}" for k in ("INVOKIT_STATE_DIR", "PYTHONPATH", "PATH")
    )
    command = f"cd {shlex.quote(str(root))} && env {exports} {invokit_bin()} serve --http --port 0"
    pane = Pane(f"invokit-test-{os.getpid()}-{tmp_path.name}")
    pane.tmux("new-session", "-d", "-s", "serve", "-x", "200", "-y", "60", command)
    try:
        yield pane, root
    finally:
        pane.tmux("kill-server")


def test_banner_live_log_and_an_approval_at_the_keyboard(pane: tuple[Pane, Path]) -> None:
    """The banner shows URL, root and policy; a client's write waits for the person, who
    approves it with a key; the live log shows the decision; Ctrl-C stops the server."""
    terminal, root = pane
    url = terminal.wait_for(r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+").group(0)
    banner = terminal.text()
    assert str(root) in banner
    assert "approvals  asked here, in this terminal" in banner
    assert "npx @modelcontextprotocol/inspector" in banner
    assert "fs.write" in banner and "Live log" in banner

    async def client() -> str:
        async with http_session(url, Asker()) as session:
            async with anyio.create_task_group() as group:
                answer: list[str] = []

                async def write() -> None:
                    result = await session.call_tool(
                        "fs.write", {"path": "typed.txt", "content": "approved by a person"}
                    )
                    answer.append(text_of(result) if result.is_error else "ok")

                group.start_soon(write)
                await anyio.to_thread.run_sync(terminal.wait_for, r"Approve fs\.write\?")
                screen = terminal.text()
                assert '"content": "approved by a person"' in screen
                terminal.keys("o", "Enter")
            return answer[0]

    assert anyio.run(client) == "ok"
    assert (root / "typed.txt").read_text() == "approved by a person"
    terminal.wait_for(r"done\s+fs\.write")
    log = terminal.text()
    assert re.search(r"asks\s+fs\.write", log)
    assert re.search(r"approved fs\.write \S+ \(once\) by terminal", log)
    terminal.keys("C-c")
    terminal.wait_for("Stopped.")


def test_ctrl_c_while_asking_leaves_the_request_pending(
    pane: tuple[Pane, Path], tmp_path: Path
) -> None:
    """Ctrl-C during an approval question decides nothing: the server stops, and the
    request is still pending for `invokit approvals`."""
    terminal, root = pane
    url = terminal.wait_for(r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+").group(0)

    async def client() -> None:
        async with http_session(url, Asker()) as session, anyio.create_task_group() as group:

            async def write() -> None:
                # The server goes away mid-call: the client sees an error, nothing ran.
                with contextlib.suppress(Exception):
                    await session.call_tool("fs.write", {"path": "never.txt", "content": "x"})

            group.start_soon(write)
            await anyio.to_thread.run_sync(terminal.wait_for, r"Approve fs\.write\?")
            terminal.keys("C-c")
            await anyio.to_thread.run_sync(terminal.wait_for, "Stopped.")
            group.cancel_scope.cancel()

    anyio.run(client)
    assert "stays pending" in terminal.text()
    assert not (root / "never.txt").exists()
    listed = subprocess.run(
        [invokit_bin(), "approvals", "list", "--json"],
        env=subprocess_env(tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (pending,) = json.loads(listed.stdout)["pending"]
    assert pending["tool"] == "fs.write" and pending["arguments"]["path"] == "never.txt"
