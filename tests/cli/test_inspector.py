"""The MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector) against `invokit serve`.

The package is installed from the npm registry into a cache directory on first use
(``$INVOKIT_TEST_CACHE`` or ``~/.cache/invokit-tests``); the test is skipped only when npm
itself is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.serving import http_server, make_root

NPM = shutil.which("npm")
PACKAGE = "@modelcontextprotocol/inspector"

pytestmark = pytest.mark.skipif(
    NPM is None, reason="npm is not installed: the MCP Inspector is an npm package"
)


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The inspector's executable, installed from the npm registry if not cached yet."""
    assert NPM is not None
    base = Path(os.environ.get("INVOKIT_TEST_CACHE", Path.home() / ".cache" / "invokit-tests"))
    prefix = base / "inspector"
    binary = prefix / "node_modules" / ".bin" / "mcp-inspector"
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [NPM, "install", "--no-audit", "--no-fund", "--loglevel=error", PACKAGE],
            cwd=prefix,
            check=True,
            timeout=600,
        )
    return binary


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`invokit serve --http` on a free loopback port."""
    root, state = make_root(tmp_path_factory.mktemp("inspector"))
    with http_server(root, state) as (url, _):
        yield url


def run_inspector(inspector: Path, url: str, *args: str) -> Any:
    done = subprocess.run(
        [str(inspector), "--cli", url, "--transport", "http", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_inspector_lists_and_calls_tools(inspector: Path, served: str) -> None:
    """tools/list and tools/call through the Inspector CLI: tools, structured content, errors."""
    listed = run_inspector(inspector, served, "--method", "tools/list")
    names = [tool["name"] for tool in listed["tools"]]
    assert names == sorted(names) and "fs.read" in names
    read = run_inspector(
        inspector,
        served,
        "--method",
        "tools/call",
        "--tool-name",
        "fs.read",
        "--tool-arg",
        "path=README.md",
    )
    assert read["isError"] is False
    assert read["structuredContent"]["content"] == "# Served\n"
    denied = run_inspector(
        inspector,
        served,
        "--method",
        "tools/call",
        "--tool-name",
        "fs.delete",
        "--tool-arg",
        "path=README.md",
    )
    assert denied["isError"] is True
    assert "not allowed" in denied["content"][0]["text"]
