"""`invokit serve` at first contact: one-line errors for a busy port and a missing extra, a
banner whose commands can be copied as they are, and a token that survives restarts."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import stat
import subprocess
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from rich.console import Console

from invokit.cli._banner import connect_commands, http_banner
from invokit.cli._runtime import Options, prepare
from invokit.cli._tokens import project_token, token_file
from invokit.registry import ToolRegistry
from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_server, make_root


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _serve(
    root: Path, state: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [invokit_bin(), "serve", *args],
        cwd=root,
        env=env or subprocess_env(state),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_busy_port_is_one_line_that_says_what_to_do(tmp_path: Path, busy_port: int) -> None:
    """Serving on a port in use prints one line naming the port and the way out (`--port 0`
    or another port), no traceback, and exits 2."""
    root, state = make_root(tmp_path)
    done = _serve(root, state, "--http", "--port", str(busy_port))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {busy_port}" in lines[0] and "--port 0" in lines[0]
    assert "make serve PORT=N" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr


def test_make_serve_takes_a_port(tmp_path: Path) -> None:
    """`make serve PORT=N` serves on port N (the way the busy-port line names); without
    PORT on make's command line it leaves the port to invokit.toml or the default."""
    repo = Path(__file__).resolve().parents[2]
    make = shutil.which("make")
    assert make is not None
    given = subprocess.run(
        [make, "-n", "-C", str(repo), "serve", "PORT=9931"],
        capture_output=True,
        text=True,
        check=True,
    )
    (command,) = [line for line in given.stdout.splitlines() if "invokit serve" in line]
    assert command.endswith("--port 9931")
    # A PORT in the environment (other tools use the name) is not taken: only make's own.
    default = subprocess.run(
        [make, "-n", "-C", str(repo), "serve"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PORT": "3000"},
    )
    (command,) = [line for line in default.stdout.splitlines() if "invokit serve" in line]
    assert "--port" not in command


def test_compose_without_its_extra_is_one_line_with_the_pip_command(tmp_path: Path) -> None:
    """On an install without the `compose` extra (what `make serve` installs), `invokit
    compose` and `invokit serve --compose` print the exact `pip install` to run, no
    traceback, and exit 2."""
    root, state = make_root(tmp_path)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "pydantic_monty.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pydantic_monty'\", name='pydantic_monty')\n"
    )
    (root / "script.py").write_text("print(1)\n")
    env = subprocess_env(state)
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), env["PYTHONPATH"]])
    runs = [
        [invokit_bin(), "compose", "script.py", "--no-ask"],
        [invokit_bin(), "serve", "--stdio", "--compose"],
        [invokit_bin(), "serve", "--http", "--port", "0", "--compose"],
    ]
    for argv in runs:
        done = subprocess.run(
            argv,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, (argv, done.stderr)
        lines = (done.stdout + done.stderr).strip().splitlines()
        assert len(lines) == 1, (argv, done.stdout + done.stderr)
        assert 'pip install "invokit[compose]"' in lines[0]


def test_the_banner_shows_compose_allowed(tmp_path: Path) -> None:
    """`invokit serve --http --compose` says in its banner's tool table that the compose
    tool is allowed, as the server decides (was: `ask`, the configuration without compose's
    rule)."""
    import time

    root, state = make_root(tmp_path)
    log = tmp_path / "banner.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [invokit_bin(), "serve", "--http", "--port", "0", "--no-ask", "--compose"],
            cwd=root,
            env=subprocess_env(state),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while "Live log" not in log.read_text() and time.monotonic() < deadline:
                assert process.poll() is None, log.read_text()
                time.sleep(0.1)
        finally:
            process.terminate()
            process.wait(timeout=30)
    rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
    (row,) = [words for words in rows if words[0] == "compose"]
    assert row[1] == "allow", row


def test_a_missing_mcp_extra_is_one_line_with_the_pip_command(tmp_path: Path) -> None:
    """Without the `mcp` package, `invokit serve` prints the exact `pip install` to run."""
    root, state = make_root(tmp_path)
    # A package that fails to import as a missing one does: what an install without the
    # extra sees.
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n"
    )
    env = subprocess_env(state)
    env["PYTHONPATH"] = os.pathsep.join([str(shadow.parent), env["PYTHONPATH"]])
    for transport in ("--http", "--stdio"):
        done = _serve(root, state, transport, "--port", "0", env=env)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert 'pip install "invokit[mcp]"' in lines[0]


def _token(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


def test_the_token_is_kept_per_project_across_runs(tmp_path: Path) -> None:
    """Two runs on the same root serve the same token, kept in a private file (0600, in a
    0700 directory) in the state directory; another root gets another token."""
    root, state = make_root(tmp_path)
    with http_server(root, state) as (url, _):
        first = _token(url)
    with http_server(root, state) as (url, _):
        assert _token(url) == first
    kept = next((state / "tokens").iterdir())
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert json.loads(kept.read_text()) == {"root": str(root.resolve()), "token": first}
    other = tmp_path / "other"
    other.mkdir()
    (other / "README.md").write_text("x\n")
    with http_server(other, state) as (url, _):
        assert _token(url) != first


def test_token_overrides_and_rotation(tmp_path: Path) -> None:
    """`--token` serves the given token and leaves the kept one alone; `--new-token`
    replaces the kept one; `--no-token` serves without one; contradictory flags are refused."""
    root, state = make_root(tmp_path)
    with http_server(root, state) as (url, _):
        kept = _token(url)
    with http_server(root, state, "--token", "chosen-token-0123456789") as (url, _):
        assert _token(url) == "chosen-token-0123456789"
    with http_server(root, state) as (url, _):
        assert _token(url) == kept
    with http_server(root, state, "--new-token") as (url, _):
        rotated = _token(url)
    assert rotated != kept
    with http_server(root, state) as (url, _):
        assert _token(url) == rotated
    with http_server(root, state, "--no-token") as (url, _):
        assert "token=" not in url
    refused = _serve(root, state, "--http", "--no-token", "--new-token")
    assert refused.returncode == 2 and "--no-token" in refused.stderr


def test_a_broken_token_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept file that is not a token (edited, truncated) is replaced by a new token,
    atomically: no temporary file is left beside it."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path
    file = token_file(root)
    file.parent.mkdir(parents=True)
    file.write_text('{"token": ""}')
    token, where = project_token(root)
    assert where == file and len(token) >= 16
    assert project_token(root)[0] == token
    assert [p.name for p in file.parent.iterdir()] == [file.name]


def _rendered(setup_args: Options, url: str, width: int) -> str:
    setup = prepare(setup_args)
    out = StringIO()
    console = Console(file=out, width=width, highlight=False)
    shell = setup_args.allow_shell
    console.print(
        http_banner(
            url,
            setup,
            ToolRegistry(),
            asking=True,
            state=Path("/state"),
            name="invokit",
            allow_shell=shell,
            token_source="kept for this root in /state/tokens/x.json",
        )
    )
    console.print(connect_commands(url, setup, name="invokit", allow_shell=shell), soft_wrap=True)
    return out.getvalue()


URL = "http://127.0.0.1:8765/mcp?token=AbCdEfGhIjKlMnOpQrStUvWxYz012345"


def test_the_banner_says_how_to_turn_on_shell_and_network(root: Path) -> None:
    """With no shell and no HTTP tool the banner says how to turn each on; with
    `--allow-shell` it says what the shell may run. It says where the token is kept."""
    text = _rendered(Options(root=root), URL, 200)
    assert '--allow-shell "git status"' in text and "[tools.http]" in text
    assert "kept for this root in /state/tokens/x.json" in text
    shelled = _rendered(Options(root=root, allow_shell=("git status",)), URL, 200)
    assert "may run: git status" in shelled


def test_copy_paste_lines_are_whole_and_quoted(root: Path) -> None:
    """At 80 columns each connect command is still one line; URLs with `?` are quoted so
    zsh (and any POSIX shell) passes them as they are; the Claude Desktop config keeps the
    `--allow-shell` options."""
    text = _rendered(Options(root=root, allow_shell=("git status", "ls *")), URL, 80)
    lines = text.splitlines()
    (claude,) = [line for line in lines if "claude mcp add" in line]
    command = claude[claude.index("claude mcp add") :]
    assert shlex.split(command) == ["claude", "mcp", "add", "--transport", "http", "invokit", URL]
    assert f"'{URL}'" in command
    (cli,) = [line for line in lines if "--cli" in line]
    assert f"--cli '{URL}' --transport http" in cli
    (desktop,) = [line for line in lines if "Claude Desktop" in line]
    config = json.loads(desktop[desktop.index("{") :])
    args = config["mcpServers"]["invokit"]["args"]
    assert args[-4:] == ["--allow-shell", "git status", "--allow-shell", "ls *"]
    zsh = shutil.which("zsh")
    if zsh is not None:
        # The real test of "survives zsh": the shell hands the URL over intact.
        echoed = subprocess.run(
            [zsh, "-f", "-c", command.replace("claude mcp add", "printf '%s\\n'", 1)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert echoed.stdout.splitlines()[-1] == URL
