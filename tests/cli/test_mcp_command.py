"""invokit mcp list | trust, and calls to an imported server: `invokit serve --stdio` itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from invokit.mcp import PinStore
from tests.cli.conftest import Cli, invokit_bin, trust_config


@pytest.fixture
def imported(root: Path, tmp_path: Path, state: Path) -> Path:
    """invokit.toml importing another root served by `invokit serve --stdio` as "other"."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("from the other server\n")
    # The MCP SDK starts a stdio server with a minimal environment: the imported server gets
    # its own state directory here, never the user's.
    child_state = f"INVOKIT_STATE_DIR={tmp_path / 'child-state'}"
    args = json.dumps([child_state, invokit_bin(), "serve", "--stdio", "--root", str(other)])
    (root / "invokit.toml").write_text(
        f'[mcp.servers.other]\ncommand = "/usr/bin/env"\nargs = {args}\n'
        "connect_timeout = 120\n"
        '[policy]\nallow = ["tag:read & category:filesystem", "other.fs.read"]\n'
    )
    trust_config(root / "invokit.toml", state)
    return other


def test_list_connects_and_pins_the_tools(cli: Cli, imported: Path, state: Path) -> None:
    """mcp list shows the imported tools under their prefix and pins each on first sight."""
    code, out, err = cli("mcp", "list", "--json")
    assert code == 0, err
    (server,) = json.loads(out)["servers"]
    assert server["server"] == "other" and "other.fs.read" in server["tools"]
    assert server["changed"] == []
    pinned = {p["tool"] for p in json.loads(out)["pins"]}
    assert "fs.read" in pinned


def test_a_changed_tool_is_hidden_until_trusted(cli: Cli, imported: Path, state: Path) -> None:
    """A tool whose pin differs is hidden and reported; mcp trust shows it again."""
    cli("mcp", "list", "--json")
    PinStore(state / "mcp-pins.json").trust("other", "fs.read", "0" * 64)
    code, out, _ = cli("mcp", "list", "--json")
    (server,) = json.loads(out)["servers"]
    assert [c["tool"] for c in server["changed"]] == ["fs.read"]
    assert "other.fs.read" not in server["tools"]
    code, out, _ = cli("mcp", "trust", "other", "fs.read", "--json")
    assert code == 0 and json.loads(out)["trusted"] == ["fs.read"]
    _, out, _ = cli("mcp", "list", "--json")
    assert json.loads(out)["servers"][0]["changed"] == []


def test_a_tool_new_since_the_first_trust_is_hidden_until_trusted(
    cli: Cli, imported: Path, state: Path
) -> None:
    """A tool with no pin on a server already trusted is hidden as new; mcp trust SERVER
    (no tool named) accepts it with the changed ones."""
    cli("mcp", "list", "--json")
    PinStore(state / "mcp-pins.json").forget("other", "fs.read")
    code, out, _ = cli("mcp", "list")
    assert code == 0
    assert "hidden, new since trusted: other.fs.read" in out
    _, out, _ = cli("mcp", "list", "--json")
    (server,) = json.loads(out)["servers"]
    assert [(c["tool"], c["pinned"]) for c in server["changed"]] == [("fs.read", None)]
    assert "other.fs.read" not in server["tools"]
    code, out, _ = cli("mcp", "trust", "other", "--json")
    assert code == 0 and json.loads(out)["trusted"] == ["fs.read"]
    _, out, _ = cli("mcp", "list", "--json")
    (server,) = json.loads(out)["servers"]
    assert server["changed"] == [] and "other.fs.read" in server["tools"]


def test_call_reaches_the_imported_server(cli: Cli, imported: Path) -> None:
    """invokit call runs an imported tool through the same guarded executor."""
    code, out, err = cli("call", "other.fs.read", "path=notes.txt", "--json")
    assert code == 0, err
    assert "from the other server" in json.dumps(json.loads(out)["result"])


def test_trust_an_unknown_server_is_an_error(cli: Cli, imported: Path) -> None:
    """Trusting a server that is not configured exits 1 and names the configured ones."""
    code, out, _ = cli("mcp", "trust", "nope", "--json")
    assert code == 1 and "other" in json.loads(out)["error"]["message"]
