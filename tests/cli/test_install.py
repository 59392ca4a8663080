"""`invokit install CLIENT`: the client's JSON config gets this server's entry, merged into
what is there (nothing else lost), written atomically after a backup; `--print` writes
nothing. Run as the real command on temporary config files."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from invokit.cli._tokens import project_token
from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_server, make_root


def _install(state: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [invokit_bin(), "install", *args],
        cwd=cwd,
        env=subprocess_env(state),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def test_claude_desktop_is_stdio_with_shell_options_merged_with_a_backup(tmp_path: Path) -> None:
    """Claude Desktop gets a stdio entry that keeps the root and every `--allow-shell`; the
    other servers and keys of the file stay; the old file is kept as FILE.bak; no temporary
    file is left; the file's permissions are kept."""
    root, state = make_root(tmp_path)
    config = tmp_path / "claude_desktop_config.json"
    before: dict[str, Any] = {
        "theme": "dark",
        "mcpServers": {"time": {"command": "uvx", "args": ["mcp-time"]}},
    }
    config.write_text(json.dumps(before))
    config.chmod(0o640)
    done = _install(
        state, root, "claude-desktop", "--config-file", str(config),
        "--allow-shell", "git status", "--allow-shell", "ls *",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    after = _read(config)
    assert after["theme"] == "dark"
    assert after["mcpServers"]["time"] == before["mcpServers"]["time"]
    entry = after["mcpServers"]["invokit"]
    assert entry["command"] == invokit_bin()
    assert entry["args"] == [
        "serve", "--stdio", "--root", str(root.resolve()),
        "--allow-shell", "git status", "--allow-shell", "ls *",
    ]  # fmt: skip
    assert _read(tmp_path / "claude_desktop_config.json.bak") == before
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".claude")) == []
    # Installing again replaces the entry in place (without --allow-shell now).
    again = _install(state, root, "claude-desktop", "--config-file", str(config))
    assert again.returncode == 0
    assert _read(config)["mcpServers"]["invokit"]["args"][-1] == str(root.resolve())


@pytest.mark.parametrize(("client", "shape"), [("claude-code", "type"), ("cursor", "url")])
def test_http_clients_get_the_kept_token_that_serve_uses(
    tmp_path: Path, client: str, shape: str
) -> None:
    """Claude Code and Cursor get an HTTP entry whose URL carries the project's kept token:
    the very URL `invokit serve` then serves (on its port), so the config survives restarts."""
    root, state = make_root(tmp_path)
    config = tmp_path / "sub" / "mcp.json"  # missing directories are made
    done = _install(state, root, client, "--config-file", str(config), "--port", "8765")
    assert done.returncode == 0, done.stderr
    entry = _read(config)["mcpServers"]["invokit"]
    if shape == "type":
        assert entry["type"] == "http"
    assert not (tmp_path / "sub" / "mcp.json.bak").exists()  # nothing to back up
    with http_server(root, state) as (url, _):
        served = url.split("?", 1)[1]
    assert entry["url"] == f"http://127.0.0.1:8765/mcp?{served}"


def test_stdio_for_an_http_client_and_print_writes_nothing(tmp_path: Path) -> None:
    """`--stdio` gives Cursor a command entry; `--print` prints the JSON and writes no file."""
    root, state = make_root(tmp_path)
    config = tmp_path / "cursor.json"
    printed = _install(state, root, "cursor", "--stdio", "--print", "--config-file", str(config))
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["mcpServers"]["invokit"]
    assert entry["args"][:2] == ["serve", "--stdio"] and "url" not in entry
    assert not config.exists()


def test_a_broken_config_is_refused_and_left_alone(tmp_path: Path) -> None:
    """A file that is not a JSON object (or whose mcpServers is not one) is refused with one
    line naming it; the file is not touched and no backup is made."""
    root, state = make_root(tmp_path)
    for text in ('{"mcpServers": [1, 2', "[1, 2]", '{"mcpServers": "none"}'):
        config = tmp_path / "broken.json"
        config.write_text(text)
        done = _install(state, root, "cursor", "--config-file", str(config))
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1 and str(config) in done.stderr
        assert config.read_text() == text
        assert not (tmp_path / "broken.json.bak").exists()


def test_a_symlinked_config_is_written_through_the_link(tmp_path: Path) -> None:
    """A config that is a symbolic link (dotfiles managers) stays a link; its target gets
    the entry."""
    root, state = make_root(tmp_path)
    target = tmp_path / "dotfiles" / "mcp.json"
    target.parent.mkdir()
    target.write_text('{"mcpServers": {}}')
    link = tmp_path / "mcp.json"
    link.symlink_to(target)
    done = _install(state, root, "cursor", "--config-file", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert "invokit" in _read(target)["mcpServers"]


def test_a_link_planted_as_the_backup_is_replaced_not_written_through(tmp_path: Path) -> None:
    """A symbolic link planted at FILE.bak (by a repository, or a model with a shell) never
    makes the backup overwrite the file it points to: the link itself is replaced."""
    root, state = make_root(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}, "x": "attacker text"}')
    (tmp_path / "mcp.json.bak").symlink_to(victim)
    done = _install(state, root, "cursor", "--config-file", str(config))
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "precious"
    backup = tmp_path / "mcp.json.bak"
    assert not backup.is_symlink() and _read(backup)["x"] == "attacker text"


def test_a_config_link_to_nothing_is_refused(tmp_path: Path) -> None:
    """A dangling link as the config file is refused in one line: a planted link does not
    choose where the command creates a file."""
    root, state = make_root(tmp_path)
    elsewhere = tmp_path / "victim" / "created.json"
    link = tmp_path / "other.json"
    link.symlink_to(elsewhere)
    done = _install(state, root, "cursor", "--config-file", str(link))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not elsewhere.exists() and not elsewhere.parent.exists()


def test_the_token_file_is_shared_with_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`project_token` of a root, called twice, is the same token: what install writes and
    serve serves."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path / "state"))
    assert project_token(tmp_path)[0] == project_token(tmp_path / ".")[0]


def test_a_config_inside_the_served_root_is_noted(tmp_path: Path) -> None:
    """A client config written inside the served root carries the token where tools can read
    it: the command says so."""
    root, state = make_root(tmp_path)
    config = root / ".cursor" / "mcp.json"
    done = _install(state, root, "cursor", "--root", str(root), "--config-file", str(config))
    assert done.returncode == 0, done.stderr
    assert "inside the served root" in done.stdout
