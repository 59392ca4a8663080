"""Execution surfaces below the top of the root, and those a command creates, in the sandbox:
nested repositories are read-only, a created surface is removed and reported as refused, and
a virtual environment's ``.pth`` files and activate scripts are read-only (pip still works)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from invokit.builtin.shell import _scan as scan_module
from invokit.builtin.shell import find_bwrap, shell
from invokit.exceptions import AccessDenied, ToolFailed
from invokit.tools import Tool, ToolContext
from tests._hostgit import HOOK, host_git

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

ALLOW = ["git *", "cp *", "tee *", "touch *", "mkdir *", "mv *", "rm *", "ln *", "chmod *"]
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding a repository two folders down (``deep/sub``) and a hook to plant."""
    root = tmp_path / "root"
    (root / "deep" / "sub").mkdir(parents=True)
    assert host_git(root / "deep" / "sub", "init", "-q").returncode == 0
    (root / "evil.sh").write_text(HOOK)
    (root / "evil.sh").chmod(0o755)
    return root


def _tool(root: Path, allow: list[str] = ALLOW, **options: Any) -> Tool:
    found = shell(allow=allow, root=root, sandbox="required", **options).get("shell")
    assert found is not None
    return found


async def _run(tool: Tool, *command: str, cwd: str = ".") -> Any:
    arguments = tool.validate({"command": list(command), "cwd": cwd})
    return await tool.invoke(arguments, ToolContext(call_id="t"))


@pytest.mark.parametrize(
    ("command", "cwd"),
    [
        pytest.param(["git", "config", "core.fsmonitor", "touch pwned"], "deep/sub", id="config"),
        pytest.param(["git", "config", "core.hooksPath", "."], "deep/sub", id="hookspath"),
        pytest.param(["cp", "evil.sh", "deep/sub/.git/hooks/pre-commit"], ".", id="hook"),
        pytest.param(["cp", "../../evil.sh", ".git/hooks/post-checkout"], "deep/sub", id="cwd"),
        pytest.param(["rm", "-rf", "deep/sub/.git"], ".", id="delete"),
        pytest.param(["mv", "deep", "moved"], ".", id="carry-away"),
    ],
)
async def test_a_nested_repository_is_read_only(root: Path, command: list[str], cwd: str) -> None:
    """A repository deeper in the root keeps its config and hooks: the host's git there runs
    nothing afterwards."""
    sub = root / "deep" / "sub"
    config = (sub / ".git" / "config").read_text()
    with pytest.raises(ToolFailed) as caught:
        await _run(_tool(root), *command, cwd=cwd)
    assert "read-only in the sandbox" in (caught.value.data["note"] or "")
    assert (sub / ".git" / "config").read_text() == config
    assert not (sub / ".git" / "hooks" / "pre-commit").exists()
    assert host_git(sub, "status").returncode == 0
    assert host_git(sub, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert not (sub / "pwned").exists()


async def test_a_nested_editor_config_is_read_only(root: Path) -> None:
    """An existing ``deep/.vscode`` cannot be written from the sandbox."""
    (root / "deep" / ".vscode").mkdir()
    with pytest.raises(ToolFailed):
        await _run(_tool(root), "tee", "deep/.vscode/tasks.json")
    assert not (root / "deep" / ".vscode" / "tasks.json").exists()


async def test_a_repository_made_after_the_first_command_is_found(root: Path) -> None:
    """The walk is cached on the folders' mtimes: a repository that appears between two
    commands (made on the host) is mounted for the second."""
    tool = _tool(root)
    await _run(tool, "touch", "x")
    (root / "later").mkdir()
    assert host_git(root / "later", "init", "-q").returncode == 0
    with pytest.raises(ToolFailed):
        await _run(tool, "cp", "evil.sh", "later/.git/hooks/pre-commit")
    assert not (root / "later" / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize(
    ("command", "created"),
    [
        pytest.param(["git", "init", "-q", "fresh"], "fresh/.git", id="git-init-deep"),
        pytest.param(["git", "init", "-q"], ".git", id="git-init-top"),
        pytest.param(["mkdir", "-p", ".vscode"], ".vscode", id="vscode"),
        pytest.param(["mkdir", "-p", "deep/x/.claude/hooks"], "deep/x/.claude", id="claude-deep"),
        pytest.param(["cp", "evil.sh", "deep/.envrc"], "deep/.envrc", id="envrc-deep"),
    ],
)
async def test_a_surface_the_command_creates_is_removed(
    root: Path, command: list[str], created: str
) -> None:
    """A surface that did not exist could not be mounted; the command's creation is removed
    after it ran and reported as refused, and what else it made stays."""
    output = await _run(_tool(root), *command)
    assert output.refused_surfaces == [created]
    assert output.note is not None and created in output.note and "refused" in output.note
    assert not (root / created).exists() and not (root / created).is_symlink()
    assert (root / created).parent.is_dir()


async def test_a_created_surface_the_project_opted_in_stays(root: Path) -> None:
    output = await _run(_tool(root, allow_surfaces=[".vscode"]), "mkdir", ".vscode")
    assert output.refused_surfaces == []
    assert (root / ".vscode").is_dir()


async def test_a_root_with_too_many_folders_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the cap the walk stops and no command runs, with a message that says why."""
    monkeypatch.setattr(scan_module, "MAX_FOLDERS", 3)
    for index in range(5):
        (root / f"f{index}").mkdir()
    tool = _tool(root)
    with pytest.raises(AccessDenied) as caught:
        tool.permissions({"command": ["touch", "x"]}, ToolContext(call_id="t"))
    assert caught.value.data["reason"] == "root_too_large"
    assert not (root / "x").exists()


def _wheel(folder: Path) -> Path:
    """A minimal wheel of a package ``tiny`` (a module and a ``.pth`` file of its own)."""
    wheel = folder / "tiny-1.0-py3-none-any.whl"
    files = {
        "tiny.py": "VALUE = 1\n",
        "tiny-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
        "tiny-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "tiny-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in {**files, "tiny-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, text)
    return wheel


@pytest.fixture
def venv(root: Path) -> Path:
    """A real virtual environment (with pip) at ``root/venv``."""
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip("no system python")
    made = subprocess.run(
        [SYSTEM_PYTHON, "-m", "venv", str(root / "venv")], capture_output=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"the system python cannot make a virtual environment: {made.stderr!r}")
    return root / "venv"


async def test_a_virtual_environment_keeps_what_runs_read_only(root: Path, venv: Path) -> None:
    """Inside a virtual environment of the root, its ``.pth`` files and ``bin/activate`` are
    read-only and a new ``.pth`` file is removed as refused, while ``pip install`` of a plain
    package still works in the sandbox."""
    site = next((root / "venv" / "lib").glob("python3*/site-packages"))
    (site / "mine.pth").write_text("\n")
    relative = site.relative_to(root)
    _wheel(root)
    tool = _tool(root, allow=[*ALLOW, "venv/bin/python *"])
    for command in (
        ["cp", "evil.sh", "venv/bin/activate"],
        ["cp", "evil.sh", f"{relative}/mine.pth"],
        ["rm", f"{relative}/mine.pth"],
    ):
        with pytest.raises(ToolFailed):
            await _run(tool, *command)
    assert (site / "mine.pth").read_text() == "\n"
    assert "evil" not in (root / "venv" / "bin" / "activate").read_text()
    planted = await _run(tool, "cp", "evil.sh", f"{relative}/planted.pth")
    assert planted.refused_surfaces == [f"{relative}/planted.pth"]
    assert not (site / "planted.pth").exists()
    pip = ["venv/bin/python", "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir"]
    installed = await _run(tool, *pip, "tiny-1.0-py3-none-any.whl")
    assert installed.refused_surfaces == []
    assert (site / "tiny.py").exists()


@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason="no system python")
async def test_a_virtual_environment_the_command_creates_is_reported(root: Path) -> None:
    """A new virtual environment is kept (nothing on the host has run it) and reported."""
    tool = _tool(root, allow=[*ALLOW, f"{SYSTEM_PYTHON} *"])
    output = await _run(tool, SYSTEM_PYTHON, "-m", "venv", "--without-pip", "made")
    assert (root / "made" / "pyvenv.cfg").exists()
    assert output.note is not None and "virtual environment made" in output.note


def test_the_walk_is_cached_until_a_folder_changes(tmp_path: Path) -> None:
    """A second look only stats the folders seen; a repository made in one of them (its mtime
    changes) is found at the next look."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    old = time.time() - 3600  # not "racy": no change could hide in the same mtime tick
    for folder in (tmp_path, tmp_path / "a", tmp_path / "a" / "b"):
        os.utime(folder, (old, old))
    first = scan_module.scan(str(tmp_path))
    assert scan_module.scan(str(tmp_path)) is first
    (tmp_path / "a" / "b" / ".git").mkdir()
    assert scan_module.scan(str(tmp_path)).surfaces == ("a/b/.git",)
