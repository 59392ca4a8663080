"""Every code block in README.md and docs/ runs as written (see tests/_docblocks.py for how a
block says it cannot, and why)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests._docblocks import REPOSITORY, Block, blocks, commands, doc_pages

ALL = [block for page in doc_pages() for block in blocks(page)]
PYTHON_PAGES = sorted({b.page for b in ALL if b.language == "python" and b.skip is None})
SHELL = [b for b in ALL if b.language in ("console", "bash", "sh") and b.skip is None]

# Runs one page's python blocks in order, in one namespace and one event loop; top-level
# `await` works as in `python -m asyncio`. Prints the failing block's line on error.
_RUNNER = """
import ast, asyncio, json, sys, traceback
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
for block in blocks:
    try:
        code = compile(block["code"], block["where"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            loop.run_until_complete(result)
    except BaseException:
        print("block at " + block["where"] + " failed:", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A project directory with the repository's README.md and docs/ in it, a private HOME
    and state, and the environment's ``invokit`` first on PATH."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPOSITORY / "README.md", project / "README.md")
    shutil.copytree(REPOSITORY / "docs", project / "docs")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def main() -> None:\n    print('hi')\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("INVOKIT_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))
    }
    env["HOME"] = str(home)
    env["INVOKIT_STATE_DIR"] = str(home / "state")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPOSITORY)
    return project, env


def test_every_block_is_found() -> None:
    """The pages have blocks, and every skipped one says why."""
    assert len(ALL) > 50
    assert all(b.skip != "no reason given" for b in ALL), [b.where for b in ALL if b.skip]


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run(page: str, tmp_path: Path) -> None:
    """A page's python blocks run in order without an error."""
    project, env = _workspace(tmp_path)
    payload = [
        {"code": b.code, "where": b.where}
        for b in ALL
        if b.page == page and b.language == "python" and b.skip is None
    ]
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.mark.parametrize("block", SHELL, ids=[b.where for b in SHELL])
def test_shell_blocks_run(block: Block, tmp_path: Path) -> None:
    """Each ``invokit`` command of a shell block runs, and the last ends as the page says."""
    project, env = _workspace(tmp_path)
    found = commands(block)
    for index, command in enumerate(found):
        done = subprocess.run(
            ["bash", "-c", command],
            capture_output=True,
            text=True,
            cwd=project,
            env=env,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        expected = block.exit if index == len(found) - 1 else 0
        assert done.returncode == expected, (
            f"{block.where}: {shlex.quote(command)} exited {done.returncode}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


@pytest.mark.parametrize(
    "block",
    [b for b in ALL if b.language in ("json", "toml") and b.skip is None],
    ids=lambda b: b.where,
)
def test_data_blocks_parse(block: Block) -> None:
    """JSON and TOML examples are valid JSON and TOML."""
    if block.language == "json":
        json.loads(block.code)
    else:
        tomllib.loads(block.code)
