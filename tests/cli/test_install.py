"""`invokit install CLIENT`: the client's JSON config gets this server's entry, merged into
what is there (nothing else lost), written atomically after a backup; `--print` writes
nothing. Run as the real command on temporary config files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from invokit.cli._tokens import project_token
from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_server, make_root


def _install(
    state: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [invokit_bin(), "install", *args],
        cwd=cwd,
        env={**subprocess_env(state), **(env or {})},
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


def _deep(path: Path) -> None:
    path.write_text('{"mcpServers": ' + "[" * 200_000 + "]" * 200_000 + "}")


def _deep_but_parseable(path: Path) -> None:
    path.write_text('{"a": ' + "[" * 500 + "]" * 500 + "}")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.mkdir()


def _latin1(path: Path) -> None:
    path.write_bytes('{"mcpServers": {}, "name": "caf\u00e9"}'.encode("latin-1"))


def _duplicate_servers(path: Path) -> None:
    path.write_text('{"mcpServers": {"a": {"url": "x"}}, "mcpServers": {"b": {"url": "y"}}}')


def _duplicate_inside(path: Path) -> None:
    path.write_text('{"mcpServers": {"a": {"url": "x"}, "a": {"url": "y"}}}')


def _huge_number(path: Path) -> None:
    path.write_text('{"mcpServers": {}, "timeout": 1e999}')


def _nan(path: Path) -> None:
    path.write_text('{"mcpServers": {}, "timeout": NaN}')


def _huge(path: Path) -> None:
    path.write_text('{"mcpServers": {}, "pad": "' + "x" * (9 * 1024 * 1024) + '"}')


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_deep, id="too-deep"),
        pytest.param(_deep_but_parseable, id="deeper-than-a-config"),
        pytest.param(_fifo, id="fifo"),
        pytest.param(_dev_zero, id="link-to-dev-zero"),
        pytest.param(_directory, id="directory"),
        pytest.param(_latin1, id="not-utf8"),
        pytest.param(_duplicate_servers, id="duplicate-mcpServers"),
        pytest.param(_duplicate_inside, id="duplicate-server"),
        pytest.param(_huge_number, id="1e999"),
        pytest.param(_nan, id="NaN"),
        pytest.param(_huge, id="over-8-MB"),
    ],
)
def test_a_hostile_config_is_one_line_naming_the_file(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """Every config that cannot be read and written back faithfully (nested too deep, not a
    regular file, not UTF-8, a key twice, a number that is not finite) is refused in one line
    that names the file, without hanging, without a traceback, and nothing is written."""
    root, state = make_root(tmp_path)
    config = tmp_path / "mcp.json"
    make(config)
    before = config.read_bytes() if config.is_file() and not config.is_symlink() else None
    done = _install(state, root, "cursor", "--config-file", str(config))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(config) in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    if before is not None:
        assert config.read_bytes() == before
    assert not (tmp_path / "mcp.json.bak").exists()


def test_numbers_are_written_back_as_json(tmp_path: Path) -> None:
    """Large and precise numbers that are finite are kept as JSON numbers; nothing is ever
    written as Infinity or NaN."""
    root, state = make_root(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text('{"big": 1e300, "int": 123456789012345678901234567890, "mcpServers": {}}')
    done = _install(state, root, "cursor", "--config-file", str(config))
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert "Infinity" not in text and "NaN" not in text
    after = json.loads(text)
    assert after["big"] == 1e300 and after["int"] == 123456789012345678901234567890


def test_vscode_gets_servers_in_the_projects_vscode_folder(tmp_path: Path) -> None:
    """VS Code's entry goes into the served root's .vscode/mcp.json, under `servers` (its
    format), as an HTTP server with the kept token; `--stdio` makes it a stdio entry; the
    file's other keys (inputs) stay."""
    root, state = make_root(tmp_path)
    config = root / ".vscode" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"inputs": [{"id": "k", "type": "promptString"}], "servers": {}}')
    done = _install(state, root, "vscode", "--root", str(root))
    assert done.returncode == 0, done.stderr
    after = _read(config)
    assert after["inputs"] == [{"id": "k", "type": "promptString"}]
    assert "mcpServers" not in after
    entry = after["servers"]["invokit"]
    assert entry["type"] == "http" and entry["url"].startswith("http://127.0.0.1:8765/mcp?token=")
    done = _install(state, root, "vscode", "--root", str(root), "--stdio")
    assert done.returncode == 0, done.stderr
    entry = _read(config)["servers"]["invokit"]
    assert entry["type"] == "stdio" and entry["command"] == invokit_bin()
    assert entry["args"][:2] == ["serve", "--stdio"]


def test_vscode_user_settings(tmp_path: Path) -> None:
    """`--user` writes VS Code's user profile mcp.json (Code/User under the XDG config
    directory on Linux), in the same format."""
    root, state = make_root(tmp_path)
    xdg = tmp_path / "xdg"
    done = _install(state, root, "vscode", "--user", env={"XDG_CONFIG_HOME": str(xdg)})
    assert done.returncode == 0, done.stderr
    entry = _read(xdg / "Code" / "User" / "mcp.json")["servers"]["invokit"]
    assert entry["type"] == "http"
    assert not (root / ".vscode").exists()


CODEX_CONFIG = """\
# my Codex settings
model = "o3"  # the one I like

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]
env = { TZ = "UTC" }

[profiles.fast]
model = "o4-mini"
"""


def test_codex_gets_a_toml_table_and_keeps_the_rest(tmp_path: Path) -> None:
    """Codex CLI's ~/.codex/config.toml (here $CODEX_HOME) gets [mcp_servers.invokit] with
    the command and args that launch the server; every other line, comments included, stays;
    installing again replaces the table instead of adding a second one."""
    root, state = make_root(tmp_path)
    home = tmp_path / "codex"
    home.mkdir()
    config = home / "config.toml"
    config.write_text(CODEX_CONFIG)
    for _ in range(2):
        done = _install(
            state, root, "codex", "--root", str(root), "--allow-shell", "git status",
            env={"CODEX_HOME": str(home)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    text = config.read_text()
    original = [line for line in CODEX_CONFIG.splitlines() if line]
    kept = [line for line in text.splitlines() if line in original]
    assert kept == original  # every line, comments included, in order
    assert text.count("[mcp_servers.invokit]") == 1
    data = tomllib.loads(text)
    assert data["mcp_servers"]["time"]["env"] == {"TZ": "UTC"}
    assert data["profiles"]["fast"]["model"] == "o4-mini"
    entry = data["mcp_servers"]["invokit"]
    assert entry["command"] == invokit_bin()
    assert entry["args"] == [
        "serve", "--stdio", "--root", str(root.resolve()), "--allow-shell", "git status",
    ]  # fmt: skip
    assert (home / "config.toml.bak").exists()


def test_codex_refuses_a_broken_toml_in_one_line(tmp_path: Path) -> None:
    """A config.toml with a key twice (or any TOML error) is refused in one line naming it."""
    root, state = make_root(tmp_path)
    home = tmp_path / "codex"
    home.mkdir()
    config = home / "config.toml"
    text = 'model = "o3"\nmodel = "o4"\n'
    config.write_text(text)
    done = _install(state, root, "codex", env={"CODEX_HOME": str(home)})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(config) in lines[0], done.stderr
    assert config.read_text() == text


def test_gemini_gets_an_http_url_in_its_settings(tmp_path: Path) -> None:
    """Gemini CLI's ~/.gemini/settings.json gets mcpServers.invokit with `httpUrl` (its key
    for streamable HTTP), or command and args with `--stdio`; its other settings stay."""
    root, state = make_root(tmp_path)
    home = tmp_path / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "Dracula", "mcpServers": {"git": {"command": "uvx"}}}')
    done = _install(state, root, "gemini", "--root", str(root), env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    after = _read(settings)
    assert after["theme"] == "Dracula" and after["mcpServers"]["git"] == {"command": "uvx"}
    entry = after["mcpServers"]["invokit"]
    assert list(entry) == ["httpUrl"]
    assert entry["httpUrl"].startswith("http://127.0.0.1:8765/mcp?token=")
    done = _install(state, root, "gemini", "--stdio", env={"HOME": str(home)})
    entry = _read(settings)["mcpServers"]["invokit"]
    assert entry["command"] == invokit_bin() and "httpUrl" not in entry


def test_print_shows_each_clients_own_format(tmp_path: Path) -> None:
    """`--print` shows the entry in the client's format (TOML for Codex) and writes nothing."""
    root, state = make_root(tmp_path)
    codex = _install(state, root, "codex", "--print", env={"CODEX_HOME": str(tmp_path / "c")})
    assert codex.returncode == 0, codex.stderr
    assert tomllib.loads(codex.stdout)["mcp_servers"]["invokit"]["command"] == invokit_bin()
    vscode = _install(state, root, "vscode", "--print")
    assert "invokit" in json.loads(vscode.stdout)["servers"]
    assert not (tmp_path / "c").exists() and not (root / ".vscode").exists()
