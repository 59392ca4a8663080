"""The execution surfaces' read-only mounts are decided again only when something they were
decided from changed, and a command that creates a surface is still caught while every cache
(the top's surfaces, the walk, the decided mounts) is in use."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from invokit.builtin import _surface_cache
from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin._surfaces import FoundSurface
from invokit.builtin.shell import _scan, find_bwrap, shell
from invokit.builtin.shell._protected import protected_mounts, surface_paths
from invokit.builtin.shell._surface_mounts import surface_mounts
from invokit.exceptions import AccessDenied
from invokit.tools import Tool, ToolContext
from tests._hostgit import host_git

ALLOW = ["git *", "mkdir *", "touch *"]
SYSTEM_PYTHON = "/usr/bin/python3"


class _Frozen(SurfaceCache):
    """A cache that keeps its first answer whatever changes: the decided mounts must notice
    a change on their own."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: tuple[FoundSurface, ...] | None = None

    def root_surfaces(self, real_root: str, below: Any = ()) -> tuple[FoundSurface, ...]:
        if self.kept is None:
            self.kept = super().root_surfaces(real_root, below)
        return self.kept


def test_the_decided_mounts_are_kept_while_every_lstat_shows_the_same(tmp_path: Path) -> None:
    """The same answer while nothing changed; a surface turned into a link is refused and a
    removed one is no longer mounted, though the answer it was decided from is the same."""
    root = tmp_path.resolve()
    (root / ".vscode").mkdir()
    (root / "elsewhere").mkdir()
    cache = _Frozen()
    first = surface_mounts(root, (), None, cache=cache, mounted=True)
    assert first.surfaces == (root / ".vscode",)
    assert first.mounts.entries == (root / ".vscode",)
    assert surface_mounts(root, (), None, cache=cache, mounted=True) is first
    (root / ".vscode").rmdir()
    (root / ".vscode").symlink_to(root / "elsewhere")
    with pytest.raises(AccessDenied) as caught:
        surface_mounts(root, (), None, cache=cache, mounted=True)
    assert caught.value.data["reason"] == "protected_link"
    (root / ".vscode").unlink()
    gone = surface_mounts(root, (), None, cache=cache, mounted=True)
    assert gone.surfaces == () and gone.mounts.entries == ()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_decided_mounts_are_what_deciding_anew_gives(tmp_path: Path) -> None:
    """Kept or not, the answer is the one surface_paths and protected_mounts give."""
    root = (tmp_path / "root").resolve()
    (root / "deep" / "sub").mkdir(parents=True)
    assert host_git(root, "init", "-q").returncode == 0
    assert host_git(root / "deep" / "sub", "init", "-q").returncode == 0
    (root / "deep" / ".claude").mkdir()
    (root / ".envrc").write_text("x\n")
    cache = SurfaceCache()
    for allowed in ((), (".envrc",)):
        for _ in range(2):
            deep = _scan.scan(str(root))
            found = surface_mounts(root, allowed, deep, cache=cache, mounted=True)
            surfaces, opted = surface_paths(root, allowed, deep)
            assert (found.surfaces, found.opted_in) == (surfaces, opted)
            assert found.mounts == protected_mounts(root, surfaces)
    assert {path.relative_to(root).as_posix() for path in found.surfaces} == {
        ".git",
        "deep/.claude",
        "deep/sub/.git",
    }


def _tool(root: Path) -> Tool:
    found = shell(allow=ALLOW, root=root, sandbox="required").get("shell")
    assert found is not None
    return found


async def _run(tool: Tool, *command: str) -> Any:
    return await tool.invoke(tool.validate({"command": list(command)}), ToolContext(call_id="t"))


@pytest.mark.anyio
@pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize(
    ("command", "created"),
    [
        pytest.param(["git", "init", "-q"], ".git", id="git-init-top"),
        pytest.param(["git", "init", "-q", "deep/fresh"], "deep/fresh/.git", id="git-init-deep"),
        pytest.param(["mkdir", ".vscode"], ".vscode", id="vscode"),
        pytest.param(["mkdir", "deep/.vscode"], "deep/.vscode", id="vscode-deep"),
        pytest.param(["git", "init", "-q", "--bare", "deep/b"], "deep/b", id="bare-deep"),
    ],
)
async def test_a_surface_created_while_every_cache_is_used_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], created: str
) -> None:
    """With the caches trusted (no "racy" window) and warm, a command that creates a surface
    (real git, real bubblewrap) still has it removed and reported, and the next command sees
    the root as it is."""
    monkeypatch.setattr(_surface_cache, "_RACY_NS", 0)
    monkeypatch.setattr(_scan, "_RACY_NS", 0)
    root = (tmp_path / "root").resolve()
    (root / "deep").mkdir(parents=True)
    old = time.time() - 3600  # mtimes from long ago: the walk is kept, not "racy"
    for folder in (root, root / "deep"):
        os.utime(folder, (old, old))
    tool = _tool(root)
    for _ in range(2):  # the second is served from every cache
        assert (await _run(tool, "touch", "deep/x")).refused_surfaces == []
    output = await _run(tool, *command)
    assert output.refused_surfaces == [created]
    assert not (root / created).exists() and not (root / created).is_symlink()
    assert (await _run(tool, "touch", "deep/y")).refused_surfaces == []


@pytest.mark.anyio
@pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")
@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="no system python3")
async def test_a_surface_hidden_behind_a_restored_mtime_is_still_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that creates ``deep/.vscode`` and then sets ``deep``'s mtime back (utime)
    leaves the walk's mtimes as they were; the change time, which no command can set, still
    shows it: the surface is removed and the next command mounts nothing stale."""
    monkeypatch.setattr(_scan, "_RACY_NS", 0)
    root = (tmp_path / "root").resolve()
    (root / "deep").mkdir(parents=True)
    old = time.time() - 3600
    for folder in (root, root / "deep"):
        os.utime(folder, (old, old))
    tool = shell(allow=[f"{SYSTEM_PYTHON} *", "touch *"], root=root, sandbox="required")
    found = tool.get("shell")
    assert found is not None
    assert (await _run(found, "touch", "x")).refused_surfaces == []  # the walk is cached
    hide = (
        "import os; s = os.stat('deep'); os.mkdir('deep/.vscode'); "
        "os.utime('deep', ns=(s.st_atime_ns, s.st_mtime_ns))"
    )
    output = await _run(found, SYSTEM_PYTHON, "-c", hide)
    assert output.refused_surfaces == ["deep/.vscode"]
    assert not (root / "deep" / ".vscode").exists()


@pytest.mark.anyio
@pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")
@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="no system python3")
async def test_a_surface_made_by_a_cancelled_command_is_removed(tmp_path: Path) -> None:
    """A call cancelled while its command runs (the command has made ``.vscode`` and waits)
    still has the sandbox killed and the surface removed before the cancellation goes on."""
    root = (tmp_path / "root").resolve()
    root.mkdir()
    found = shell(allow=[f"{SYSTEM_PYTHON} *"], root=root, sandbox="required").get("shell")
    assert found is not None
    made = "import os, time; os.mkdir('.vscode'); time.sleep(120)"
    async with anyio.create_task_group() as group:
        group.start_soon(_run, found, SYSTEM_PYTHON, "-c", made)
        with anyio.fail_after(60):
            while not (root / ".vscode").exists():  # noqa: ASYNC110 - no notification
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert not (root / ".vscode").exists()


def test_a_commondir_edited_in_place_is_read_again(tmp_path: Path) -> None:
    """A split repository's ``commondir`` rewritten in place changes no folder's times; the
    walk's cache still sees where it leads now (that folder is mounted whole)."""
    root = tmp_path.resolve()
    split = root / "deep" / "split"
    split.mkdir(parents=True)
    (split / "HEAD").write_text("ref: refs/heads/main\n")
    (split / "commondir").write_text("../first\n")
    for name in ("first", "second"):
        (root / "deep" / name).mkdir()
    old = time.time() - 3600
    for folder in (root, root / "deep", split, root / "deep" / "first", root / "deep" / "second"):
        os.utime(folder, (old, old))
    assert _scan.scan(str(root)).commons == ("deep/first",)
    with (split / "commondir").open("r+") as file:  # in place: no folder changes
        file.write("../second\n")
    assert _scan.scan(str(root)).commons == ("deep/second",)
