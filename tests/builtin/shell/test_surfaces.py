"""Execution surfaces in the shell sandbox: git and editors read them, no command writes them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from invokit.builtin import _surface_cache
from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin.shell import find_bwrap, shell
from invokit.exceptions import AccessDenied, ToolFailed
from invokit.permissions import FileWrite
from invokit.tools import Tool, ToolContext
from tests._hostgit import HOOK, host_git

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

ALLOW = ["git *", "cp *", "tee *", "touch *", "mkdir *", "mv *", "rm *", "ln *", "chmod *"]
PLANT = '[core]\n\tfsmonitor = "touch pwned; false"\n'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    assert host_git(root, "init", "-q").returncode == 0
    (root / "a.txt").write_text("a\n")
    (root / "evil.sh").write_text(HOOK)
    (root / "evil.sh").chmod(0o755)
    (root / "evil").mkdir()
    (root / "evil" / "config").write_text(PLANT)
    return root


def _tool(root: Path, **options: Any) -> Tool:
    found = shell(allow=ALLOW, root=root, sandbox="required", **options).get("shell")
    assert found is not None
    return found


async def _run(tool: Tool, *command: str) -> Any:
    return await tool.invoke(tool.validate({"command": list(command)}), ToolContext(call_id="t"))


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames:
            found[os.path.relpath(os.path.join(dirpath, name), folder)] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            found[os.path.relpath(full, folder)] = Path(full).read_bytes()
    return found


ATTACKS = [
    pytest.param(["cp", "evil.sh", ".git/hooks/pre-commit"], id="plant-hook"),
    pytest.param(["git", "config", "core.fsmonitor", "touch pwned"], id="git-config-fsmonitor"),
    pytest.param(["git", "config", "core.hooksPath", "."], id="git-config-hookspath"),
    pytest.param(["tee", ".git/commondir"], id="create-commondir"),
    pytest.param(["cp", "evil/config", ".git/config"], id="overwrite-config"),
    pytest.param(["mkdir", ".git/info/x"], id="info"),
    pytest.param(["mv", ".git", "old-git"], id="move-git-away"),
    pytest.param(["rm", "-rf", ".git"], id="delete-git"),
    pytest.param(["ln", "-sf", "../evil.sh", ".git/hooks/post-checkout"], id="link-hook"),
]


@pytest.mark.parametrize("command", ATTACKS)
async def test_no_command_changes_the_git_directory(root: Path, command: list[str]) -> None:
    """Each way a command could plant a hook, set a command-running config or redirect the
    repository fails in the sandbox, says why, leaves .git exactly as it was, and the host's
    own git status afterwards runs nothing."""
    before = _snapshot(root / ".git")
    with pytest.raises(ToolFailed) as caught:
        await _run(_tool(root), *command)
    assert caught.value.kind == "nonzero_exit"
    assert "read-only in the sandbox" in (caught.value.data["note"] or "")
    assert _snapshot(root / ".git") == before
    assert host_git(root, "status").returncode == 0
    assert host_git(root, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert not (root / "pwned").exists()


async def test_git_still_reads_the_repository(root: Path) -> None:
    """git status and git log work in the sandbox: the git directory is read-only, not gone."""
    assert host_git(root, "add", "a.txt").returncode == 0
    assert host_git(root, "commit", "-q", "-m", "first").returncode == 0
    tool = _tool(root)
    status = await _run(tool, "git", "status", "--short")
    assert "evil.sh" in status.stdout
    log = await _run(tool, "git", "log", "--oneline")
    assert "first" in log.stdout


async def test_allowed_git_status_cannot_write_hooks(root: Path) -> None:
    """A command git runs for an allowed git status (core.fsmonitor) cannot write into
    .git/hooks either: nothing lands there for the host's next commit to run."""
    assert (
        host_git(
            root, "config", "core.fsmonitor", "cp evil.sh .git/hooks/pre-commit; false"
        ).returncode
        == 0
    )
    await _run(_tool(root), "git", "status")
    assert not (root / ".git" / "hooks" / "pre-commit").exists()


async def test_redirect_targets_and_pointer_files_are_read_only(root: Path) -> None:
    """A repository reached through a .git pointer file and its core.hooksPath folder are
    read-only too, and so is the pointer file."""
    os.rename(root / ".git", root / "meta")
    (root / ".git").write_text("gitdir: meta\n")
    (root / "tools" / "hooks").mkdir(parents=True)
    assert host_git(root, "config", "core.hooksPath", "tools/hooks").returncode == 0
    tool = _tool(root)
    for command in (
        ["cp", "evil.sh", "tools/hooks/pre-commit"],
        ["cp", "evil/config", "meta/config"],
        ["tee", ".git"],
        ["mv", "tools", "tools-old"],
    ):
        with pytest.raises(ToolFailed):
            await _run(tool, *command)
    assert (root / ".git").read_text() == "gitdir: meta\n"
    assert not (root / "tools" / "hooks" / "pre-commit").exists()
    assert host_git(root, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert not (root / "pwned").exists()


async def test_editor_configs_are_read_only(root: Path) -> None:
    """An existing .vscode folder and .envrc cannot be written from the sandbox."""
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text("{}")
    (root / ".envrc").write_text("")
    tool = _tool(root)
    for command in (["tee", ".vscode/tasks.json"], ["cp", "evil.sh", ".envrc"]):
        with pytest.raises(ToolFailed):
            await _run(tool, *command)
    assert not (root / ".vscode" / "tasks.json").exists()
    assert (root / ".envrc").read_text() == ""


async def test_a_surface_the_command_creates_is_reported(root: Path) -> None:
    """A surface that did not exist cannot be mounted; creating one is said in the result."""
    output = await _run(_tool(root), "mkdir", ".vscode")
    assert output.note is not None and ".vscode" in output.note


async def test_an_opted_in_surface_is_writable_and_declared(root: Path) -> None:
    """allow_surfaces leaves the git directory writable, and each command declares it may
    change it, marked, so that the policy asks about every one."""
    tool = _tool(root, allow_surfaces=[".git"])
    requests = tool.permissions({"command": ["git", "status"]}, ToolContext(call_id="t"))
    marked = [r for r in requests if isinstance(r, FileWrite)]
    assert [r.path for r in marked] == [".git"] and marked[0].surface is not None
    await _run(tool, "touch", ".git/hooks/opted")
    assert (root / ".git" / "hooks" / "opted").exists()


async def test_a_linked_surface_refuses_every_command(root: Path) -> None:
    """A .vscode that is a link (which a command could replace with a folder of its own)
    cannot be kept read-only: no command runs while it is there, and nothing is asked."""
    (root / "conf").mkdir()
    (root / ".vscode").symlink_to("conf")
    tool = _tool(root)
    with pytest.raises(AccessDenied):
        tool.permissions({"command": ["touch", "x"]}, ToolContext(call_id="t"))
    assert not (root / "x").exists()


async def test_submodule_and_worktree_pointers_are_read_only(root: Path) -> None:
    """The .git files of a submodule and of a linked worktree inside the root cannot be turned
    to a planted repository from the sandbox."""
    assert host_git(root, "add", "a.txt").returncode == 0
    assert host_git(root, "commit", "-q", "-m", "first").returncode == 0
    assert host_git(root, "worktree", "add", "-q", "wt").returncode == 0
    library = root.parent / "library"
    library.mkdir()
    assert host_git(library, "init", "-q").returncode == 0
    assert host_git(library, "commit", "-q", "--allow-empty", "-m", "lib").returncode == 0
    added = host_git(
        root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib"
    )
    assert added.returncode == 0, added.stderr
    tool = _tool(root)
    for pointer in ("wt/.git", "lib/.git"):
        before = (root / pointer).read_text()
        with pytest.raises(ToolFailed):
            await _run(tool, "cp", "evil/config", pointer)
        assert (root / pointer).read_text() == before


async def test_a_surface_added_between_two_calls_is_read_only_in_the_second(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A core.hooksPath written into .git/config, or a new .vscode folder, after one command
    is mounted read-only for the next, though the first command's surfaces were cached."""
    # Fresh files are "racy" and never cached: trust them here so the cache is really used.
    monkeypatch.setattr(_surface_cache, "_RACY_NS", 0)
    (root / "hooks2").mkdir()
    tool = _tool(root)
    await _run(tool, "touch", "hooks2/first")
    await _run(tool, "touch", "a.txt")  # served from the cache
    with (root / ".git" / "config").open("a") as config:  # in place: the same inode
        config.write("[core]\n\thooksPath = hooks2\n")
    with pytest.raises(ToolFailed):
        await _run(tool, "touch", "hooks2/pre-commit")
    assert not (root / "hooks2" / "pre-commit").exists()
    (root / ".vscode").mkdir()
    with pytest.raises(ToolFailed):
        await _run(tool, "tee", ".vscode/tasks.json")
    assert not (root / ".vscode" / "tasks.json").exists()


def test_the_surface_cache_reads_again_only_after_a_change(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache answers with what it kept while nothing it read changed, and reads again
    when the git config changes."""
    monkeypatch.setattr(_surface_cache, "_RACY_NS", 0)
    cache = SurfaceCache()
    first = cache.root_surfaces(str(root))
    assert cache.root_surfaces(str(root)) is first
    (root / "hooks2").mkdir()
    with (root / ".git" / "config").open("a") as config:
        config.write("[core]\n\thooksPath = hooks2\n")
    again = cache.root_surfaces(str(root))
    assert ("hooks2",) in [found.parts for found in again]
    assert ("hooks2",) not in [found.parts for found in first]
