"""`invokit dev`: the real MCP Inspector (npm @modelcontextprotocol/inspector) on the served tools.

The Inspector is installed from the npm registry into a cache directory on first use
(``$INVOKIT_TEST_CACHE`` or ``~/.cache/invokit-tests``); the tests that run it are skipped only
when npm is absent or cannot reach the registry.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import invokit_bin, subprocess_env

NPM = shutil.which("npm")
PACKAGE = "@modelcontextprotocol/inspector"


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The Inspector's executable, installed from the npm registry if not cached yet."""
    if NPM is None:
        pytest.skip("npm is not installed: the MCP Inspector is an npm package")
    base = Path(os.environ.get("INVOKIT_TEST_CACHE", Path.home() / ".cache" / "invokit-tests"))
    prefix = base / "inspector"
    binary = prefix / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [NPM, "install", "--no-audit", "--no-fund", "--loglevel=error", PACKAGE],
            cwd=prefix,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.skip(f"npm could not install {PACKAGE} from the registry: {done.stderr[-300:]}")
    return binary


@pytest.fixture
def served_root(tmp_path: Path) -> Path:
    """A root whose path has a space in it (the Inspector's web proxy parses it as a shell)."""
    root = tmp_path / "my project"
    root.mkdir()
    (root / "README.md").write_text("# Served by dev\n")
    return root


def dev_env(tmp_path: Path, inspector: Path | None) -> dict[str, str]:
    env = subprocess_env(tmp_path / "state")
    env.pop("INVOKIT_INSPECTOR", None)
    if inspector is not None:
        env["INVOKIT_INSPECTOR"] = str(inspector)
    return env


def dev_cli(tmp_path: Path, inspector: Path, root: Path, *args: str) -> Any:
    done = subprocess.run(
        [invokit_bin(), "dev", "--root", str(root), "--", "--cli", *args],
        env=dev_env(tmp_path, inspector),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_dev_without_npx_says_in_one_line_what_to_install(tmp_path: Path) -> None:
    """With no npx on PATH (and no INVOKIT_INSPECTOR), invokit dev fails with one line that
    says to install Node.js, and a usage exit status."""
    env = dev_env(tmp_path, None)
    env["PATH"] = str(tmp_path / "empty-bin")
    done = subprocess.run(
        [sys.executable, "-m", "invokit.cli", "dev", "--root", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "npx" in lines[0] and "Node.js" in lines[0]


def test_dev_runs_the_inspector_cli_on_the_served_tools(
    tmp_path: Path, inspector: Path, served_root: Path
) -> None:
    """invokit dev -- --cli ... has the Inspector start `invokit serve --stdio` on the root
    and list and call its tools."""
    listed = dev_cli(tmp_path, inspector, served_root, "--method", "tools/list")
    names = [tool["name"] for tool in listed["tools"]]
    assert names == sorted(names) and "fs.read" in names
    read = dev_cli(
        tmp_path,
        inspector,
        served_root,
        "--method",
        "tools/call",
        "--tool-name",
        "fs.read",
        "--tool-arg",
        "path=README.md",
    )
    assert read["isError"] is False
    assert read["structuredContent"]["content"] == "# Served by dev\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dev_opens_the_inspector_with_the_serve_command(
    tmp_path: Path, inspector: Path, served_root: Path
) -> None:
    """Without --cli the Inspector's web UI starts, holding `invokit serve --stdio` with the
    root (space and all) as the server it connects to, and invokit's settings in its env."""
    env = dev_env(tmp_path, inspector)
    client_port, proxy_port = _free_port(), _free_port()
    env.update(
        CLIENT_PORT=str(client_port), SERVER_PORT=str(proxy_port), MCP_AUTO_OPEN_ENABLED="false"
    )
    process = subprocess.Popen(
        [invokit_bin(), "dev", "--root", str(served_root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    try:
        seen = ""
        deadline = time.monotonic() + 120
        # The proxy (with its token) and the web client start side by side: wait for both.
        while time.monotonic() < deadline and not (
            "up and running" in seen and "MCP_PROXY_AUTH_TOKEN=" in seen
        ):
            if select.select([process.stdout], [], [], 0.5)[0]:
                line = process.stdout.readline()
                if not line:
                    break
                seen += line
        assert "up and running" in seen and "MCP_PROXY_AUTH_TOKEN=" in seen, seen
        token = seen.split("MCP_PROXY_AUTH_TOKEN=", 1)[1].split()[0]
        request = urllib.request.Request(
            f"http://127.0.0.1:{proxy_port}/config",
            headers={"X-MCP-Proxy-Auth": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            config = json.loads(response.read())
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
    # This environment's interpreter, however it is named: the console script may run as
    # bin/python3 where pytest runs as bin/python (the same file, one a link to the other).
    command = config["defaultCommand"]
    assert Path(command).parent == Path(sys.executable).parent
    assert os.path.samefile(command, sys.executable)
    assert shlex.split(config["defaultArgs"]) == [
        "-I",
        "-m",
        "invokit.cli",
        "serve",
        "--stdio",
        "--root",
        str(served_root),
    ]
    assert config["defaultEnvironment"]["INVOKIT_STATE_DIR"] == str(tmp_path / "state")
