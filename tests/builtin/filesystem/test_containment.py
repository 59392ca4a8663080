"""Each attack class that broke other filesystem tools, set up for real on disk.

The root has a sibling ``root-evil`` holding a secret; every test checks that nothing there
was read, written or reached.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from invokit.builtin.filesystem import filesystem
from invokit.exceptions import AccessDenied, ToolError, ToolFailed
from invokit.registry import ToolRegistry
from tests.builtin.filesystem._trees import SECRET, Tree, call, make_tree

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Tree]:
    made = make_tree(tmp_path)
    before = made.outside_snapshot()
    yield made
    assert made.outside_snapshot() == before, "something outside the root changed"


@pytest.fixture
def fs(tree: Tree) -> ToolRegistry:
    return filesystem(tree.root)


async def refused(fs: ToolRegistry, name: str, reason: str | None, **arguments: Any) -> None:
    with pytest.raises(AccessDenied) as caught:
        await call(fs, name, **arguments)
    assert caught.value.kind == "denied"
    if reason is not None:
        assert caught.value.data["reason"] == reason


def _escapes(tree: Tree) -> list[tuple[str, dict[str, Any]]]:
    up = "../root-evil/secret.txt"
    absolute = str(tree.secret)
    return [
        ("fs.read", {"path": up}),
        ("fs.read", {"path": absolute}),
        ("fs.stat", {"path": up}),
        ("fs.list", {"path": "../root-evil"}),
        ("fs.glob", {"pattern": "../root-evil/*"}),
        ("fs.glob", {"pattern": "*", "path": str(tree.outside)}),
        ("fs.search", {"pattern": "SECRET", "path": "../root-evil"}),
        ("fs.write", {"path": up, "content": "pwned"}),
        ("fs.write", {"path": absolute, "content": "pwned"}),
        ("fs.edit", {"path": up, "old_text": "TOP", "new_text": "pwned"}),
        ("fs.move", {"path": "hello.txt", "destination": "../root-evil/moved.txt"}),
        ("fs.move", {"path": up, "destination": "stolen.txt"}),
        ("fs.delete", {"path": up}),
        ("fs.mkdir", {"path": "../root-evil/made"}),
    ]


async def test_parent_and_absolute_paths_are_refused_by_every_tool(
    tree: Tree, fs: ToolRegistry
) -> None:
    """'..' and absolute paths (even to the prefix-sharing sibling) are refused by every tool."""
    for name, arguments in _escapes(tree):
        await refused(fs, name, None, **arguments)
    assert (tree.root / "hello.txt").exists()


async def test_sibling_sharing_the_root_prefix_is_outside(tree: Tree, fs: ToolRegistry) -> None:
    """CVE-2025-53110: '<root>-evil' starts with the root's path but is not inside it."""
    sibling = f"{tree.root}-evil/secret.txt"
    assert sibling.startswith(str(tree.root))
    await refused(fs, "fs.read", "absolute", path=sibling)
    await refused(fs, "fs.write", "absolute", path=sibling, content="pwned")


async def test_final_symlink_to_outside_file(tree: Tree, fs: ToolRegistry) -> None:
    """CVE-2025-53109: a link named as the final component is never read or written through."""
    (tree.root / "link.txt").symlink_to(tree.secret)
    await refused(fs, "fs.read", "symlink", path="link.txt")
    await refused(fs, "fs.write", "symlink", path="link.txt", content="pwned")
    await refused(fs, "fs.edit", "symlink", path="link.txt", old_text="TOP", new_text="x")
    described = await call(fs, "fs.stat", path="link.txt")
    assert described.type == "symlink"
    await call(fs, "fs.move", path="link.txt", destination="moved-link.txt")
    await call(fs, "fs.delete", path="moved-link.txt")
    assert tree.secret.read_text() == f"{SECRET}\n"


async def test_intermediate_symlink_to_outside_directory(tree: Tree, fs: ToolRegistry) -> None:
    """A link as a middle component is never passed through, by any tool."""
    (tree.root / "out").symlink_to(tree.outside, target_is_directory=True)
    await refused(fs, "fs.read", "symlink", path="out/secret.txt")
    await refused(fs, "fs.write", "symlink", path="out/new.txt", content="x")
    await refused(fs, "fs.write", "symlink", path="out/d/new.txt", content="x", create_parents=True)
    await refused(fs, "fs.mkdir", "symlink", path="out/made")
    await refused(fs, "fs.list", "symlink", path="out")
    await refused(fs, "fs.glob", "symlink", pattern="out/*")
    await refused(fs, "fs.search", "symlink", pattern="SECRET", path="out")
    await refused(fs, "fs.delete", "symlink", path="out/secret.txt")
    await refused(fs, "fs.move", "symlink", path="hello.txt", destination="out/hello.txt")
    listed = await call(fs, "fs.list", recursive=True, max_depth=5)
    globbed = await call(fs, "fs.glob", pattern="**")
    found = await call(fs, "fs.search", pattern="SECRET")
    assert [e.path for e in listed.entries] == ["hello.txt", "out"]
    assert [m.path for m in globbed.matches] == ["hello.txt", "out"]
    assert found.matches == ()
    await call(fs, "fs.delete", path="out", recursive=True)  # removes the link, not the target
    assert tree.secret.exists()


async def test_dangling_symlink_is_not_created_through(tree: Tree, fs: ToolRegistry) -> None:
    """Writing to a dangling link does not create its target outside the root."""
    target = tree.outside / "created-by-attack.txt"
    (tree.root / "dangling").symlink_to(target)
    await refused(fs, "fs.write", "symlink", path="dangling", content="pwned")
    await refused(fs, "fs.write", "symlink", path="dangling/x", content="p", create_parents=True)
    await refused(fs, "fs.read", "symlink", path="dangling")
    assert not target.exists()


async def test_looping_symlinks_fail_fast(tree: Tree, fs: ToolRegistry) -> None:
    """Links that point at each other are refused, not followed until the kernel gives up."""
    (tree.root / "loop-a").symlink_to("loop-b")
    (tree.root / "loop-b").symlink_to("loop-a")
    with anyio.fail_after(30):
        await refused(fs, "fs.read", "symlink", path="loop-a")
        await refused(fs, "fs.read", "symlink", path="loop-a/x")
        await refused(fs, "fs.write", "symlink", path="loop-b", content="x")
        globbed = await call(fs, "fs.glob", pattern="**/*")
    assert {m.path for m in globbed.matches} == {"hello.txt", "loop-a", "loop-b"}


async def test_hard_link_to_outside_file_is_refused(tree: Tree, fs: ToolRegistry) -> None:
    """A hard link may be the same file as one outside: its content is neither read nor
    written, and search does not report it."""
    os.link(tree.secret, tree.root / "hard.txt")
    await refused(fs, "fs.read", "hard_link", path="hard.txt")
    await refused(fs, "fs.write", "hard_link", path="hard.txt", content="pwned")
    await refused(fs, "fs.edit", "hard_link", path="hard.txt", old_text="TOP", new_text="x")
    for engine in ("python", "ripgrep"):
        found = await call(filesystem(tree.root, search_engine=engine), "fs.search", pattern="SEC")
        assert found.matches == ()
    await refused(fs, "fs.search", "hard_link", pattern="SEC", path="hard.txt")


async def test_hard_links_can_be_allowed(tree: Tree) -> None:
    """allow_hard_links opts in to reading files that have several links."""
    (tree.root / "one.txt").write_text("shared\n")
    os.link(tree.root / "one.txt", tree.root / "two.txt")
    read = await call(filesystem(tree.root, allow_hard_links=True), "fs.read", path="two.txt")
    assert read.content == "shared\n"


async def test_fifo_is_never_opened(tree: Tree, fs: ToolRegistry) -> None:
    """A FIFO is refused before it is opened: a writer waiting on it stays blocked, and no
    tool hangs on it."""
    fifo = tree.root / "pipe"
    os.mkfifo(fifo)
    writer = await anyio.open_process(
        [sys.executable, "-c", f"open({str(fifo)!r}, 'w').write('x')"],
    )
    try:
        with anyio.fail_after(10):
            await refused(fs, "fs.read", "special_file", path="pipe")
            await refused(fs, "fs.write", "special_file", path="pipe", content="x")
            await refused(fs, "fs.edit", "special_file", path="pipe", old_text="a", new_text="b")
            for engine in ("python", "ripgrep"):
                tools = filesystem(tree.root, search_engine=engine)
                assert (await call(tools, "fs.search", pattern="x")).matches == ()
            listed = await call(fs, "fs.list")
        assert ("pipe", "other") in [(e.path, e.type) for e in listed.entries]
        await anyio.sleep(0.2)
        assert writer.returncode is None, "the FIFO's writer found a reader"
    finally:
        writer.kill()
        await writer.wait()


async def test_socket_is_refused(tree: Tree, fs: ToolRegistry) -> None:
    """A Unix socket in the tree is refused as a special file."""
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tree.root / "sock"))
        await refused(fs, "fs.read", "special_file", path="sock")
        await refused(fs, "fs.write", "special_file", path="sock", content="x")
    finally:
        server.close()


async def test_device_is_refused(tree: Tree, fs: ToolRegistry) -> None:
    """A device node (a copy of /dev/zero made inside the root) is never opened."""
    try:
        os.mknod(tree.root / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("making device nodes needs CAP_MKNOD")
    await refused(fs, "fs.read", "special_file", path="zero")
    await refused(fs, "fs.write", "special_file", path="zero", content="x")


async def test_nul_and_over_long_names_are_refused(fs: ToolRegistry) -> None:
    """NUL bytes and names longer than the kernel allows are refused with a reason."""
    await refused(fs, "fs.read", "nul_byte", path="hello.txt\x00.png")
    await refused(fs, "fs.write", "too_long", path="n" * 300, content="x")
    await refused(fs, "fs.mkdir", "too_long", path="/".join(["d" * 200] * 25))


async def test_tilde_and_variables_are_never_expanded(
    tree: Tree, fs: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'~' and '$HOME' are ordinary names inside the root, whatever HOME says."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    await call(fs, "fs.write", path="~/note.txt", content="tilde", create_parents=True)
    await call(fs, "fs.write", path="$HOME/note.txt", content="var", create_parents=True)
    assert (tree.root / "~" / "note.txt").read_text() == "tilde"
    assert (tree.root / "$HOME" / "note.txt").read_text() == "var"
    assert list(home.iterdir()) == []
    read = await call(fs, "fs.read", path="~/note.txt")
    assert read.content == "tilde"


async def test_root_given_as_symlink_is_resolved_once(tree: Tree, tmp_path: Path) -> None:
    """A root named through a link is resolved on first use; re-pointing the link later does
    not move the toolset."""
    link = tmp_path / "root-link"
    link.symlink_to(tree.root, target_is_directory=True)
    fs = filesystem(link)
    assert (await call(fs, "fs.read", path="hello.txt")).content == "hello\nworld\n"
    link.unlink()
    link.symlink_to(tree.outside, target_is_directory=True)
    assert (await call(fs, "fs.read", path="hello.txt")).content == "hello\nworld\n"
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.read", path="secret.txt")
    assert caught.value.kind == "not_found"


async def test_missing_root_is_an_error_result(tmp_path: Path) -> None:
    """A root that does not exist fails each call with kind root_unavailable."""
    fs = filesystem(tmp_path / "nowhere")
    with pytest.raises(ToolError) as caught:
        await call(fs, "fs.list")
    assert caught.value.kind == "root_unavailable"
