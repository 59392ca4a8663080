"""Links swapped in between check and use, by a real process racing the tools."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from invokit.builtin.filesystem._cancel import StopSignal
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._reading import read_file
from invokit.builtin.filesystem._search import Engine, SearchQuery, search
from invokit.builtin.filesystem._writing import write_file
from invokit.exceptions import AccessDenied, ToolFailed
from tests.builtin.filesystem._trees import SECRET, make_tree

RACE_SECONDS = 0.5

# Swaps ``name`` between the real entry (kept aside as ``name.real``) and a link to ``target``
# until killed, holding each state a moment so that both are met.
_SWAPPER = """
import os, sys, time
os.chdir(sys.argv[1])
name, target = sys.argv[2], sys.argv[3]
while True:
    os.rename(name, name + ".real")
    os.symlink(target, name)
    time.sleep(0.0002)
    os.unlink(name)
    os.rename(name + ".real", name)
    time.sleep(0.0002)
"""


@contextmanager
def swapping(directory: Path, name: str, target: Path) -> Iterator[None]:
    process = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(directory), name, str(target)])
    try:
        time.sleep(0.05)
        assert process.poll() is None, "the swapper died"
        yield
    finally:
        process.kill()
        process.wait()
    real = directory / f"{name}.real"
    if real.exists():  # killed between its two renames
        (directory / name).unlink(missing_ok=True)
        real.rename(directory / name)


def test_directory_swapped_for_link_while_reading(tmp_path: Path) -> None:
    """A directory swapped for a link to the outside is never read through: every read gives
    the inside file or a refusal, and both outcomes are seen."""
    tree = make_tree(tmp_path)
    (tree.root / "dir").mkdir()
    (tree.root / "dir" / "secret.txt").write_text("inside\n")
    jail = Jail(tree.root)
    seen: set[str] = set()
    with swapping(tree.root, "dir", tree.outside):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            try:
                content = read_file(jail, "dir/secret.txt", max_bytes=1000).content
            except AccessDenied:
                seen.add("denied")
            except ToolFailed as error:
                seen.add(error.kind)
            else:
                assert SECRET not in content
                seen.add("read")
    assert {"read", "denied"} <= seen


def test_file_swapped_for_link_while_reading(tmp_path: Path) -> None:
    """A regular file swapped for a link to the secret never yields the secret."""
    tree = make_tree(tmp_path)
    (tree.root / "f.txt").write_text("inside\n")
    jail = Jail(tree.root)
    seen: set[str] = set()
    with swapping(tree.root, "f.txt", tree.secret):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            try:
                content = read_file(jail, "f.txt", max_bytes=1000).content
            except (AccessDenied, ToolFailed) as error:
                seen.add(error.kind)
            else:
                assert SECRET not in content
                seen.add("read")
    assert "read" in seen
    assert "denied" in seen


def test_directory_swapped_for_link_while_writing(tmp_path: Path) -> None:
    """Writes into a directory that is being swapped for a link never land outside."""
    tree = make_tree(tmp_path)
    (tree.root / "dir").mkdir()
    before = tree.outside_snapshot()
    jail = Jail(tree.root)
    written = 0
    with swapping(tree.root, "dir", tree.outside):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            try:
                write_file(jail, "dir/new.txt", "mine", create_parents=False, stop=StopSignal())
                written += 1
            except (AccessDenied, ToolFailed):
                pass
    assert tree.outside_snapshot() == before
    assert written > 0


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
def test_search_while_files_are_swapped_for_links(tmp_path: Path, engine: Engine) -> None:
    """A file swapped for a link while ripgrep walks the tree is never reported: results are
    checked again through the jail."""
    tree = make_tree(tmp_path)
    for index in range(20):
        (tree.root / f"f{index}.txt").write_text(f"inside {index}\n")
    (tree.outside / "secret.txt").write_text(f"inside {SECRET}\n")
    jail = Jail(tree.root)
    query = SearchQuery(pattern="inside", max_results=1000)
    found_lines = 0
    with swapping(tree.root, "f7.txt", tree.secret):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            result = search(jail, query, engine=engine, stop=StopSignal())
            assert result.engine == engine
            for match in result.matches:
                assert SECRET not in match.text
            found_lines += len(result.matches)
    assert found_lines > 0
