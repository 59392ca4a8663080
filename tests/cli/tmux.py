"""A tmux server and session of a test's own (a private socket), read and driven by keys."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt install tmux)")


class Pane:
    """One tmux server (``socket``) and its session ``session``."""

    def __init__(self, socket: str, session: str = "serve") -> None:
        self.socket = socket
        self.session = session

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def text(self) -> str:
        """The screen with its scrollback."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", self.session)

    def screen(self) -> list[str]:
        """The visible screen only (no scrollback), as its non-blank lines."""
        shown = self.tmux("capture-pane", "-p", "-J", "-t", self.session)
        return [line for line in shown.splitlines() if line.strip()]

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text())
            if found is not None:
                return found
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} never appeared:\n{self.text()}")

    def since(self, marker: str) -> str:
        """The screen after the last line that is exactly ``marker``."""
        lines = self.text().splitlines()
        last = max(i for i, line in enumerate(lines) if line.strip() == marker)
        return "\n".join(lines[last + 1 :])

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def run(self, command: str) -> None:
        """Type ``command`` literally, then Enter."""
        self.tmux("send-keys", "-t", self.session, "-l", command)
        self.tmux("send-keys", "-t", self.session, "Enter")
