"""``invokit inbox`` leaves uvicorn's records to the command line's inert handler."""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.cli.serving import make_root
from tests.inbox.support import inbox_process


def test_the_inbox_server_logs_through_the_inert_handler(tmp_path: Path) -> None:
    """A record uvicorn logs in ``invokit inbox`` (here: a request that is not HTTP) reaches
    the terminal through the command line's handler (``LEVEL logger: message``, inert), not
    through the default logging uvicorn would set up for itself, which writes raw."""
    root, state = make_root(tmp_path)
    log = tmp_path / "inbox.log"
    with inbox_process(root, state) as url:
        parts = urlsplit(url)
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80)) as conn:
            conn.sendall(b"\x1b[2J NOT HTTP\r\n\r\n")
            conn.settimeout(30)
            with contextlib.suppress(OSError):  # the server may close without answering
                conn.recv(1024)
        deadline = time.monotonic() + 30
        lines: list[str] = []
        while time.monotonic() < deadline and not lines:
            lines = [ln for ln in log.read_text().splitlines() if "Invalid HTTP request" in ln]
            time.sleep(0.1)
    assert lines, log.read_text()
    assert lines[0].startswith("WARNING uvicorn.error: "), lines
