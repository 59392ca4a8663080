"""What a person reads cannot be forged: model- and server-written text is shown verbatim and
inert in `approvals list`, `mcp list` and the `serve` banner."""

from __future__ import annotations

import json
import sys
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from invokit.cli._banner import http_banner
from invokit.cli._runtime import Options, connect_imports, prepare
from tests.cli.conftest import Cli, trust_config
from tests.cli.forged_server import MARKUP

FORGED = Path(__file__).with_name("forged_server.py")
CONCEAL_SGR = "\x1b[8m"


def _no_raw_escapes(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text)


def test_approvals_list_shows_markup_and_escapes_as_written(
    cli: Cli, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending call whose arguments hold `[conceal]rm -rf ~[/conceal]` and escape sequences
    is listed with the markup literally and the escapes made visible."""
    monkeypatch.setenv("COLUMNS", "300")
    content = f"{MARKUP}\x1b[2J"
    code, out, _ = cli("call", "fs.write", "path=x.txt", f"content={content}", "--json")
    assert code == 3, out
    code, out, _ = cli("approvals", "list")
    assert code == 0
    _no_raw_escapes(out)
    assert f'"content": "{MARKUP}\\u001b[2J"' in out, out


@pytest.fixture
def forged(root: Path, state: Path) -> Path:
    """invokit.toml importing the hostile server, trusted by the person."""
    args = json.dumps([str(FORGED)])
    (root / "invokit.toml").write_text(
        f'[mcp.servers.forged]\ncommand = "{sys.executable}"\nargs = {args}\nconnect_timeout = 60\n'
    )
    trust_config(root / "invokit.toml", state)
    return root


def test_mcp_list_shows_a_servers_escapes_inert(cli: Cli, forged: Path) -> None:
    """A remote tool name carrying escape sequences and markup is reported (left out) with
    the escapes made visible and the markup literal."""
    code, out, err = cli("mcp", "list")
    assert code == 0, err
    _no_raw_escapes(out)
    assert "\\x1b[2J" in out and "\\x1b]0;owned\\x07" in out
    assert MARKUP in out
    assert "forged.fine" in out


@pytest.mark.anyio
async def test_serve_banner_shows_remote_descriptions_inert(forged: Path) -> None:
    """The `serve` banner, rendered for a real terminal, never turns a remote description's
    `[conceal]` into the conceal style, and prints no escape from it."""
    from contextlib import AsyncExitStack

    setup = prepare(Options())
    async with AsyncExitStack() as stack:
        registry = await connect_imports(setup, stack)
        banner = http_banner(
            "http://127.0.0.1:1/mcp",
            setup,
            registry,
            asking=True,
            state=forged.parent / "state",
            name="invokit",
        )
        out = StringIO()
        Console(file=out, width=250, force_terminal=True, color_system="truecolor").print(banner)
    screen = out.getvalue()
    assert CONCEAL_SGR not in screen
    assert "\x1b[2J" not in screen and "\x1b]0;owned" not in screen
    assert "rm -rf ~" in screen and "[conceal]" in screen
