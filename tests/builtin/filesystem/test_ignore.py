"""Ignore files: fs.glob and fs.search leave out what .gitignore/.ignore name, as git and
ripgrep do, with both search engines agreeing; ``include_ignored`` brings it back."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from invokit.builtin.filesystem import filesystem
from invokit.builtin.filesystem._ignore import IgnoreFile, Ignores
from tests.builtin.filesystem._trees import call

pytestmark = pytest.mark.anyio

ENGINES = [
    "python",
    pytest.param(
        "ripgrep", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep missing")
    ),
]


def _ignored(text: str, path: str, *, is_dir: bool = False, base: str = "") -> bool:
    return Ignores((IgnoreFile.parse(text, base),)).ignored(path, path.rpartition("/")[2], is_dir)


@pytest.mark.parametrize(
    ("text", "path", "is_dir", "expected"),
    [
        ("*.log", "a/b/c.log", False, True),
        ("*.log\n!keep.log", "a/keep.log", False, False),
        ("build/", "src/build", True, True),
        ("build/", "src/build", False, False),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "src/top.txt", False, False),
        ("doc/*.txt", "doc/a.txt", False, True),
        ("doc/*.txt", "x/doc/a.txt", False, False),
        ("**/gen", "a/b/gen", True, True),
        ("# comment\n\n", "x", False, False),
        ("\\#hash", "#hash", False, True),
        ("trailing   ", "trailing", False, True),
        ("../escape", "escape", False, False),
    ],
)
def test_rules_follow_git(text: str, path: str, is_dir: bool, expected: bool) -> None:
    """Comments, negation, directory-only, anchored and name patterns behave as in git."""
    assert _ignored(text, path, is_dir=is_dir) is expected


def test_deeper_file_wins_and_anchors_to_its_directory() -> None:
    """A file in a subdirectory overrides the root's, and its '/x' means that directory's x."""
    rules = Ignores((IgnoreFile.parse("*.txt", ""), IgnoreFile.parse("!/a.txt", "sub")))
    assert not rules.ignored("sub/a.txt", "a.txt", False)
    assert rules.ignored("sub/deeper/a.txt", "a.txt", False)
    assert rules.ignored("a.txt", "a.txt", False)


def test_rooted_lines_rewrite_anchors_of_a_subdirectory_file() -> None:
    """For ripgrep, a subdirectory file's anchored lines are rewritten relative to the root."""
    file = IgnoreFile.parse("/x.txt\n!y/z\n*.log\nbuild/\n", "src/pkg")
    assert file.rooted_lines() == ["/src/pkg/x.txt", "!/src/pkg/y/z", "*.log", "build/"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    files = {
        ".gitignore": ".venv/\n*.log\n!keep.log\n/top.txt\n",
        "top.txt": "needle top\n",
        "app.py": "needle app\n",
        "run.log": "needle log\n",
        "keep.log": "needle keep\n",
        ".venv/lib/site.py": "needle venv\n",
        "src/.ignore": "/generated.py\n",
        "src/generated.py": "needle generated\n",
        "src/top.txt": "needle src top\n",
        "src/mod.py": "needle mod\n",
        "src/deep/generated.py": "needle deep generated\n",
        ".git/config": "needle git\n",
    }
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


VISIBLE = ["app.py", "keep.log", "src/deep/generated.py", "src/mod.py", "src/top.txt"]


async def test_glob_leaves_out_ignored_files(project: Path) -> None:
    """fs.glob of the project skips .venv, *.log (but keep.log), anchored entries and .git."""
    fs = filesystem(project)
    found = await call(fs, "fs.glob", pattern="**/*")
    files = [m.path for m in found.matches if m.type == "file"]
    assert files == [".gitignore", *VISIBLE[:2], "src/.ignore", *VISIBLE[2:]]
    everything = await call(fs, "fs.glob", pattern="**/*.py", include_ignored=True)
    assert ".venv/lib/site.py" in [m.path for m in everything.matches]


@pytest.mark.parametrize("engine", ENGINES)
async def test_search_leaves_out_ignored_files_in_both_engines(project: Path, engine: str) -> None:
    """fs.search finds only files the ignore files keep, from the root and from a
    subdirectory (whose ancestors' rules still apply); include_ignored finds them all."""
    fs = filesystem(project, search_engine=engine)  # type: ignore[arg-type]
    found = await call(fs, "fs.search", pattern="needle")
    assert sorted({m.path for m in found.matches}) == VISIBLE
    below = await call(fs, "fs.search", pattern="needle", path="src")
    assert sorted({m.path for m in below.matches}) == VISIBLE[2:]
    everything = await call(fs, "fs.search", pattern="needle", include_ignored=True)
    paths = {m.path for m in everything.matches}
    assert {".venv/lib/site.py", "run.log", "top.txt", "src/generated.py"} <= paths
    assert ".git/config" not in paths


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_named_ignored_directory_is_searched(project: Path, engine: str) -> None:
    """Naming an ignored directory as the path searches it, as ripgrep does."""
    fs = filesystem(project, search_engine=engine)  # type: ignore[arg-type]
    found = await call(fs, "fs.search", pattern="needle", path=".venv")
    assert [m.path for m in found.matches] == [".venv/lib/site.py"]


async def test_an_ignore_file_that_is_a_link_is_not_read(project: Path, tmp_path: Path) -> None:
    """A .ignore planted as a link to a file outside the root is never followed."""
    outside = tmp_path / "outside.ignore"
    outside.write_text("*.py\n")
    os.symlink(outside, project / ".ignore")
    fs = filesystem(project, search_engine="python")
    found = await call(fs, "fs.glob", pattern="*.py")
    assert [m.path for m in found.matches] == ["app.py"]
