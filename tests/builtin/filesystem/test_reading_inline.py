"""Small files are read on the event loop; large ones, and anything else, in a worker thread."""

from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from invokit import Executor, Policy, ToolCall
from invokit.builtin import filesystem
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._reading import INLINE_READ_BYTES, small_file

pytestmark = pytest.mark.anyio

# ``invokit.builtin.filesystem`` is also the name of a function: reach the module by its name.
tools = importlib.import_module("invokit.builtin.filesystem._tools")


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each ``read_file`` runs on."""
    seen: list[str] = []
    real = tools.read_file

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(tools, "read_file", recording)
    return seen


async def read(root: Path, path: str) -> Any:
    executor = Executor(filesystem(root), policy=Policy.allow_all())
    return (
        await executor.execute(ToolCall(id="1", name="fs.read", arguments={"path": path}))
    ).result


async def test_a_small_file_is_read_on_the_loop(tmp_path: Path, threads: list[str]) -> None:
    """A small text file is read on the event loop's thread, with the same result."""
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    result = await read(tmp_path, "a.txt")
    assert not result.is_error
    assert result.structured["content"] == "one\ntwo\n"
    assert threads == [threading.current_thread().name]


async def test_a_large_file_is_read_in_a_worker(tmp_path: Path, threads: list[str]) -> None:
    """A file over the inline size goes to a worker thread."""
    (tmp_path / "big.txt").write_text("line\n" * (INLINE_READ_BYTES // 5 + 10))
    result = await read(tmp_path, "big.txt")
    assert not result.is_error
    assert threads and threads[0] != threading.current_thread().name


async def test_refusals_are_the_same_inline(tmp_path: Path, threads: list[str]) -> None:
    """A link out of the root is refused whichever thread would read it: the hint never
    replaces the jail's checks."""
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link.txt")
    result = await read(root, "link.txt")
    assert result.is_error and result.error is not None
    assert result.error.kind == "denied"


def test_small_file_is_only_a_hint(tmp_path: Path) -> None:
    """Directories, links, missing paths, NUL bytes and non-text paths are not inline reads."""
    jail = Jail(tmp_path)
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "a.txt", tmp_path / "l")
    assert small_file(jail, "a.txt")
    for path in ("d", "l", "missing", "a\x00b", 3, None):
        assert not small_file(jail, path)
