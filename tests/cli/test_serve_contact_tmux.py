"""`invokit serve` in a real terminal (tmux) as a person first meets it: the copy-paste lines
at 80 columns, Ctrl-C with a client connected, a busy port, and a terminal that goes away
while the server runs under `make`."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import make_root
from tests.cli.tmux import Pane, needs_tmux

MAKE = shutil.which("make")
pytestmark = needs_tmux
URL = r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+"


class Terminal:
    """Starts shell commands in a tmux session of a given size, on a private socket."""

    def __init__(self, tmp_path: Path) -> None:
        self.root, self.state = make_root(tmp_path)
        env = subprocess_env(self.state)
        self.exports = " ".join(
            f"{k}={shlex.quote(env[k])}" for k in ("INVOKIT_STATE_DIR", "PYTHONPATH", "PATH")
        )
        self.pane = Pane(f"invokit-contact-{os.getpid()}-{tmp_path.name}")

    def start(self, command: str, width: int = 200) -> Pane:
        line = f"cd {shlex.quote(str(self.root))} && env -u COLUMNS {self.exports} {command}"
        self.pane.tmux("new-session", "-d", "-s", "serve", "-x", str(width), "-y", "50", line)
        # What the command printed last stays on screen after it exits: a quick exit must not
        # take "Stopped." away before it is read.
        self.pane.tmux("set-option", "-t", "serve", "remain-on-exit", "on")
        return self.pane


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.pane.tmux("kill-server")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_commands_are_whole_lines_at_80_columns(terminal: Terminal) -> None:
    """In an 80-column terminal, the Claude Code command is one logical line (the terminal
    wraps it softly, so a copy gives one line) with the URL quoted."""
    pane = terminal.start(f"{invokit_bin()} serve --http --port 0 --allow-shell 'git status'", 80)
    url = pane.wait_for(URL).group(0)
    pane.wait_for("Live log")
    lines = pane.text().splitlines()
    (claude,) = [line for line in lines if "claude mcp add" in line]
    assert claude.rstrip().endswith(f"claude mcp add --transport http invokit '{url}'")
    (desktop,) = [line for line in lines if "Claude Desktop" in line]
    assert '"--allow-shell", "git status"]' in desktop
    assert '--allow-shell "git status"' not in pane.text()  # the shell is on: no hint
    pane.keys("C-c")
    pane.wait_for("Stopped.")


CLIENT = """
import sys, anyio
from tests.cli.serving import http_session
from tests.mcp.support import Asker
async def main():
    async with http_session(sys.argv[1], Asker()) as session:
        await session.call_tool("fs.read", {"path": "README.md"})
        print("called", flush=True)
        await anyio.sleep(30)
anyio.run(main)
"""


def test_ctrl_c_with_a_client_connected_prints_no_asgi_errors(
    terminal: Terminal, tmp_path: Path
) -> None:
    """Ctrl-C while another process holds a client session open stops the server with
    "Stopped." and no uvicorn error or traceback on screen."""
    pane = terminal.start(f"{invokit_bin()} serve --http --port 0")
    url = pane.wait_for(URL).group(0)
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, url],
        env=subprocess_env(terminal.state),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "called"
        pane.wait_for(r"done\s+fs\.read")
        pane.keys("C-c")
        pane.wait_for("Stopped.")
    finally:
        client.kill()
        client.communicate()  # reaps it and closes its pipe
    screen = pane.text()
    assert "ERROR" not in screen and "ASGI" not in screen and "Traceback" not in screen, screen


def test_a_busy_port_in_a_terminal_is_one_line(terminal: Terminal) -> None:
    """A port in use: one line on screen that names `--port 0`, and the shell goes on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        pane = terminal.start(f"{invokit_bin()} serve --http --port {port}; echo exit=$?; sleep 30")
        pane.wait_for(r"exit=2")
        shown = [line for line in pane.screen() if "exit=" not in line]
        assert len(shown) == 1 and "--port 0" in shown[0], shown


@pytest.mark.skipif(MAKE is None, reason="make is not installed")
def test_closing_the_terminal_stops_the_server_under_make(terminal: Terminal) -> None:
    """Killing the tmux session that runs the server through `make` (as `make serve` does:
    only make, the session leader, is sent SIGHUP) stops the server and frees its port (a
    30 s deadline bounds a hang, not a speed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (terminal.root / "Makefile").write_text(
        f"serve:\n\t{invokit_bin()} serve --http --port {port} --root .\n"
    )
    pane = terminal.start(f"{MAKE} serve")
    pane.wait_for(URL)
    assert _listening(port)
    pane.tmux("kill-session", "-t", "serve")
    deadline = time.monotonic() + 30
    while _listening(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    held = _listening(port)
    if held:  # leave no server behind, then fail
        for line in os.popen(f"pgrep -f -- '--port {port} --root'").read().split():
            os.kill(int(line), 15)
    assert not held, f"port {port} still held after the terminal closed"
