"""Folders git takes for a repository under any name (``HEAD`` beside ``objects/`` and
``refs/``, or beside a ``commondir``) in the sandbox: one that exists is read-only, one a
command assembles is taken apart after it and reported as refused."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from invokit.builtin.shell import find_bwrap, shell
from invokit.exceptions import ToolFailed
from invokit.tools import Tool, ToolContext

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

ALLOW = ["git *", "cp *", "mkdir *"]


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(folder),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(folder.parent),
    }
    return subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding the pieces of a repository whose config runs ``core.fsmonitor``."""
    root = tmp_path / "root"
    root.mkdir()
    pwned = tmp_path / "pwned"
    (root / "head.txt").write_text("ref: refs/heads/main\n")
    (root / "commondir.txt").write_text("../common\n")
    (root / "planted.cfg").write_text(
        f"[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = touch {pwned}\n"
    )
    return root


def _tool(root: Path) -> Tool:
    found = shell(allow=ALLOW, root=root, sandbox="required").get("shell")
    assert found is not None
    return found


async def _run(tool: Tool, *command: str) -> Any:
    arguments = tool.validate({"command": list(command), "cwd": "."})
    return await tool.invoke(arguments, ToolContext(call_id="t"))


def _status_runs_fsmonitor(root: Path, folder: str) -> bool:
    if (root / folder).is_dir():
        _git(root / folder, "status")
    return (root.parent / "pwned").exists()


async def test_a_bare_repository_the_command_creates_is_removed(root: Path) -> None:
    """``git init --bare`` makes a repository the sandbox could not mount: it is removed after
    the command and reported as refused."""
    output = await _run(_tool(root), "git", "init", "-q", "--bare", "x")
    assert output.refused_surfaces == ["x"]
    assert not (root / "x").exists()


async def test_a_bare_repository_assembled_by_hand_is_taken_apart(root: Path) -> None:
    """``HEAD`` completing ``objects/`` and ``refs/`` in a folder made earlier is removed, so
    the host's ``git status`` there runs no planted ``core.fsmonitor``."""
    tool = _tool(root)
    assert (await _run(tool, "mkdir", "-p", "x/objects", "x/refs")).refused_surfaces == []
    assert (await _run(tool, "cp", "planted.cfg", "x/config")).refused_surfaces == []
    output = await _run(tool, "cp", "head.txt", "x/HEAD")
    assert output.refused_surfaces == ["x/HEAD"]
    assert not (root / "x" / "HEAD").exists() and (root / "x" / "config").exists()
    assert not _status_runs_fsmonitor(root, "x")


async def test_the_root_made_a_bare_repository_loses_its_head(root: Path) -> None:
    """``HEAD`` beside ``objects/`` and ``refs/`` at the top of the root (which has no
    ``.git``) is removed after the command, the rest kept: the host's ``git status`` in the
    root runs no planted ``core.fsmonitor``."""
    tool = _tool(root)
    assert (await _run(tool, "mkdir", "-p", "objects", "refs")).refused_surfaces == []
    assert (await _run(tool, "cp", "planted.cfg", "config")).refused_surfaces == []
    output = await _run(tool, "cp", "head.txt", "HEAD")
    assert output.refused_surfaces == ["HEAD"]
    assert not (root / "HEAD").exists() and (root / "config").exists()
    assert not _status_runs_fsmonitor(root, ".")


async def test_a_split_repository_the_command_creates_is_taken_apart(root: Path) -> None:
    """``HEAD`` beside a ``commondir`` naming a folder with the planted config is removed."""
    tool = _tool(root)
    await _run(tool, "mkdir", "-p", "common/objects", "common/refs", "wt")
    await _run(tool, "cp", "planted.cfg", "common/config")
    await _run(tool, "cp", "commondir.txt", "wt/commondir")
    output = await _run(tool, "cp", "head.txt", "wt/HEAD")
    assert output.refused_surfaces == ["wt/HEAD"]
    assert not _status_runs_fsmonitor(root, "wt")


async def test_an_existing_bare_repository_is_read_only(root: Path) -> None:
    """A bare repository below the top is mounted whole, like a nested ``.git``."""
    assert _git(root, "init", "-q", "--bare", "deep/x").returncode == 0
    with pytest.raises(ToolFailed):
        await _run(_tool(root), "cp", "planted.cfg", "deep/x/config")
    assert not _status_runs_fsmonitor(root, "deep/x")


async def test_an_existing_split_repository_and_its_common_folder_are_read_only(
    root: Path,
) -> None:
    """The folder a ``commondir`` names holds the config git obeys: read-only too."""
    (root / "common" / "objects").mkdir(parents=True)
    (root / "common" / "refs").mkdir()
    (root / "wt").mkdir()
    shutil.copy(root / "commondir.txt", root / "wt" / "commondir")
    shutil.copy(root / "head.txt", root / "wt" / "HEAD")
    tool = _tool(root)
    for target in ("common/config", "wt/config.worktree"):
        with pytest.raises(ToolFailed):
            await _run(tool, "cp", "planted.cfg", target)
    assert not _status_runs_fsmonitor(root, "wt")
