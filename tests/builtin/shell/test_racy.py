"""A folder or file changed too recently to go by its times (git's "racy" case): the walk and
the cache of the top's surfaces keep their answer, compared by content, and still see a change
that keeps every time. Simulated here by a file system that keeps no times at all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from invokit.builtin import _surface_cache
from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin.shell import _scan
from tests._hostgit import host_git

_ALWAYS = 10**30  # every time is "recent"


@pytest.fixture
def timeless(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every folder and file shows the same times whatever changes in it."""
    monkeypatch.setattr(_scan, "_RACY_NS", _ALWAYS)
    monkeypatch.setattr(_scan, "_stamp", lambda found: (0, 0, found.st_ino))
    monkeypatch.setattr(_surface_cache, "_RACY_NS", _ALWAYS)
    monkeypatch.setattr(_surface_cache, "_times", lambda found: (found.st_ino, 0, 0, 0))


@pytest.mark.usefixtures("timeless")
def test_a_recent_walk_is_kept_and_compared_by_its_entries(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "a" / "b").mkdir(parents=True)
    first = _scan.scan(str(root))
    assert first.listings  # every folder is too recent to go by its times
    assert _scan.scan(str(root)) is first
    (root / "a" / "b" / ".vscode").mkdir()
    assert _scan.scan(str(root)).surfaces == ("a/b/.vscode",)
    (root / "a" / "b" / ".vscode").rmdir()
    (root / "a" / "b" / ".vscode").symlink_to(root)  # the same name, now a link
    assert _scan.scan(str(root)).surfaces == ("a/b/.vscode",)


@pytest.mark.usefixtures("timeless")
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_recent_surfaces_are_kept_and_compared_by_content(tmp_path: Path) -> None:
    """A same-size in-place edit of ``.git/config`` (same inode, same times here) that sets
    ``core.hooksPath`` is seen; without one the answer is kept."""
    root = (tmp_path / "root").resolve()
    root.mkdir()
    assert host_git(root, "init", "-q").returncode == 0
    (root / "hooks2").mkdir()
    config = root / ".git" / "config"
    padding = "[core]\n\thooksPath = hooks2\n"
    with config.open("a") as file:
        file.write("#" * (len(padding) - 1) + "\n")
    cache = SurfaceCache()
    first = cache.root_surfaces(str(root))
    assert cache.root_surfaces(str(root)) is first
    text = config.read_text()
    with config.open("r+") as file:  # in place: the same inode and size
        file.write(text[: -len(padding)] + padding)
    assert os.path.getsize(config) == len(text)
    again = cache.root_surfaces(str(root))
    assert ("hooks2",) in [found.parts for found in again]
    assert ("hooks2",) not in [found.parts for found in first]
