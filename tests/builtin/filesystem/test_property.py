"""Hypothesis: no generated path string ever resolves outside the root."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._paths import split_relative
from invokit.builtin.filesystem._reading import read_file
from invokit.exceptions import ToolError
from tests.builtin.filesystem._trees import SECRET, make_tree

NAMES = [".", "..", "", "a", "b.txt", "link", "flink", "hard.txt", "loop", "dangling", "pipe"]
NAMES += ["~", "$HOME", "secret.txt", "root-evil", "root", "*", "a\x00", "x" * 256]


@dataclass(frozen=True, kw_only=True, slots=True)
class World:
    jail: Jail
    entries: set[tuple[int, int]]
    """(device, inode) of the root and of every entry listed below it."""
    openable: set[tuple[int, int]]
    """Those whose content belongs to the root alone."""
    outside: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    tree = make_tree(tmp_path_factory.mktemp("property"))
    root = tree.root
    (root / "a").mkdir()
    (root / "a" / "b.txt").write_text("inside\n")
    (root / "link").symlink_to(tree.outside, target_is_directory=True)
    (root / "a" / "flink").symlink_to(tree.secret)
    os.link(tree.secret, root / "hard.txt")
    (root / "loop").symlink_to("loop")
    (root / "a" / "dangling").symlink_to(tree.outside / "nothing")
    os.mkfifo(root / "pipe")
    entries = {(root.stat().st_dev, root.stat().st_ino)}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found = os.lstat(os.path.join(dirpath, name))
            entries.add((found.st_dev, found.st_ino))
    secret = tree.secret.stat()
    # The hard link is an entry of the root (stat may describe it) but its content is shared
    # with the outside, so it must never be opened.
    openable = entries - {(secret.st_dev, secret.st_ino)}
    return World(jail=Jail(root), entries=entries, openable=openable, outside=str(tree.outside))


paths = st.one_of(
    st.lists(st.sampled_from(NAMES), max_size=6).map("/".join),
    st.lists(st.sampled_from(NAMES), max_size=6).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=40),
)


@given(path=paths)
def test_no_path_resolves_outside_the_root(world: World, path: str) -> None:
    """Whatever the path string, what it opens is the root or an entry inside it, and the
    secret's content is never returned."""
    jail = world.jail
    try:
        parts = split_relative(path)
    except ToolError:
        return
    for opener in (jail.open_dir, lambda p: jail.open_file(p)[0]):
        try:
            fd = opener(parts)
        except ToolError:
            continue
        try:
            found = os.fstat(fd)
        finally:
            os.close(fd)
        assert (found.st_dev, found.st_ino) in world.openable
    try:
        status = jail.lstat(parts)
    except ToolError:
        pass
    else:
        assert (status.st_dev, status.st_ino) in world.entries
    try:
        content = read_file(jail, path, max_bytes=4096).content
    except ToolError:
        return
    assert SECRET not in content
    assert world.outside not in content
