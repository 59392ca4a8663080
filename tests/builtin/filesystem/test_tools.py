"""The fs.* tools: specs, declared permissions, and what each tool does."""

from __future__ import annotations

import base64
import importlib
import json
import os
from pathlib import Path

import pytest

from invokit import ToolCall, ToolContext
from invokit.builtin.filesystem import filesystem
from invokit.exceptions import RetryWithFeedback, ToolFailed
from invokit.execution import Completed, Executor, Failed
from invokit.permissions import FileDelete, FileRead, FileWrite, Policy
from invokit.registry import ToolRegistry
from tests.builtin.filesystem._trees import call

package = importlib.import_module("invokit.builtin.filesystem")

pytestmark = pytest.mark.anyio

READERS = {"fs.glob", "fs.list", "fs.read", "fs.search", "fs.stat"}
WRITERS = {"fs.delete", "fs.edit", "fs.mkdir", "fs.move", "fs.write"}


def _names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "notes.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    return root


@pytest.fixture
def fs(root: Path) -> ToolRegistry:
    return filesystem(root)


# -- the toolset ------------------------------------------------------------------------


def test_package_exports_are_sorted_and_complete() -> None:
    """The package's __all__ is sorted and every name in it exists."""
    assert package.__all__ == sorted(package.__all__)
    for name in package.__all__:
        assert hasattr(package, name)


def test_toolset_names_and_read_only_mode(root: Path) -> None:
    """Writable toolsets have ten tools; writable=False leaves only the five readers."""
    assert set(filesystem(root).names()) == READERS | WRITERS
    assert set(filesystem(root, writable=False).names()) == READERS
    assert set(filesystem(root, namespace="ws").names()) == {
        n.replace("fs.", "ws.") for n in READERS | WRITERS
    }


def test_annotations_are_honest(fs: ToolRegistry) -> None:
    """Readers are read-only and shared; writers are not read-only; only mkdir is not
    destructive; nothing reaches an open world."""
    for spec in fs.specs():
        hints = spec.annotations
        assert hints.open_world is False
        assert spec.category == "filesystem"
        if spec.name in READERS:
            assert (hints.read_only, hints.destructive, hints.idempotent) == (True, False, True)
            assert spec.effective_concurrency == "shared"
            assert "read" in spec.tags
        else:
            assert hints.read_only is False
            assert hints.destructive is (spec.name != "fs.mkdir")
            assert spec.effective_concurrency == "exclusive"
            assert "write" in spec.tags


def test_fixed_argument_names(fs: ToolRegistry) -> None:
    """Every tool takes 'path'; write takes 'content'; search and glob take 'pattern' and an
    optional 'path'."""
    schemas = {spec.name: spec.input_schema for spec in fs.specs()}
    for name, schema in schemas.items():
        assert "path" in schema["properties"], name
    assert "content" in schemas["fs.write"]["required"]
    for name in ("fs.search", "fs.glob"):
        assert schemas[name]["required"] == ["pattern"]
    json.dumps(schemas)


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        pytest.param("fs.read", {"path": "./a//b"}, [FileRead(path="a/b")], id="read"),
        pytest.param("fs.list", {}, [FileRead(path=".")], id="list-default"),
        pytest.param("fs.search", {"pattern": "x", "path": "src"}, [FileRead(path="src")], id="s"),
        pytest.param("fs.glob", {"pattern": "*"}, [FileRead(path=".")], id="glob"),
        pytest.param("fs.write", {"path": "a", "content": ""}, [FileWrite(path="a")], id="write"),
        pytest.param(
            "fs.edit",
            {"path": "a", "old_text": "x", "new_text": "y"},
            [FileRead(path="a"), FileWrite(path="a")],
            id="edit",
        ),
        pytest.param(
            "fs.move",
            {"path": "a", "destination": "b/"},
            [FileDelete(path="a"), FileWrite(path="b")],
            id="move",
        ),
        pytest.param("fs.delete", {"path": "a"}, [FileDelete(path="a")], id="delete"),
        pytest.param("fs.mkdir", {"path": "d"}, [FileWrite(path="d")], id="mkdir"),
    ],
)
def test_permission_requests(
    fs: ToolRegistry, name: str, arguments: dict[str, object], expected: list[object]
) -> None:
    """Each tool declares what it will touch, with the path in canonical form."""
    tool = fs[name]
    assert list(tool.permissions(tool.validate(arguments), ToolContext())) == expected


def test_closed_root_reopens_on_next_use(root: Path) -> None:
    """Closing the jail gives back its handle; the next call opens the root again."""
    from invokit.builtin.filesystem import Jail

    jail = Jail(root)
    first = jail.root_fd()
    jail.close()
    jail.close()
    assert jail.root_fd() >= 0
    assert jail.resolved_root == str(root.resolve())
    jail.close()
    assert first >= 0


async def test_definition_does_no_io(tmp_path: Path) -> None:
    """Defining a toolset and building its specs does not touch the root."""
    fs = filesystem(tmp_path / "not-yet")
    assert len(fs.specs()) == 10
    (tmp_path / "not-yet").mkdir()
    (tmp_path / "not-yet" / "f").write_text("made later")
    assert (await call(fs, "fs.read", path="f")).content == "made later"


# -- read -------------------------------------------------------------------------------


async def test_read_whole_file(fs: ToolRegistry) -> None:
    """A small file is returned whole, with its line count."""
    read = await call(fs, "fs.read", path="notes.txt")
    assert read.content == "one\ntwo\nthree\nfour\nfive\n"
    assert (read.start_line, read.end_line, read.total_lines) == (1, 5, 5)
    assert (read.truncated, read.next_offset) == (False, None)


async def test_read_line_range(fs: ToolRegistry) -> None:
    """offset and limit select lines; next_offset says where the rest starts."""
    read = await call(fs, "fs.read", path="notes.txt", offset=2, limit=2)
    assert read.content == "two\nthree\n"
    assert (read.start_line, read.end_line, read.next_offset) == (2, 3, 4)
    tail = await call(fs, "fs.read", path="notes.txt", offset=4)
    assert tail.content == "four\nfive\n"
    assert tail.next_offset is None


async def test_read_offset_past_end(fs: ToolRegistry) -> None:
    """An offset past the last line is a mistake the model can fix."""
    with pytest.raises(RetryWithFeedback):
        await call(fs, "fs.read", path="notes.txt", offset=6)


async def test_read_cap_cuts_at_line_end_and_continues(root: Path) -> None:
    """The byte cap cuts at a line end; following next_offset reads the whole file."""
    lines = [f"line {n:04d}\n" for n in range(1, 301)]
    (root / "big.txt").write_text("".join(lines))
    fs = filesystem(root, max_read_bytes=1000)
    collected, offset = [], 1
    while True:
        read = await call(fs, "fs.read", path="big.txt", offset=offset)
        assert len(read.content.encode()) <= 1000
        assert read.content.endswith("\n")
        collected.append(read.content)
        if read.next_offset is None:
            break
        assert read.truncated
        offset = read.next_offset
    assert "".join(collected) == "".join(lines)
    assert read.total_lines == 300


async def test_read_refuses_binary_unless_asked(root: Path, fs: ToolRegistry) -> None:
    """A file with NUL bytes is refused as text and returned as base64 when asked."""
    (root / "blob.bin").write_bytes(b"\x89PNG\x00\x01")
    with pytest.raises(RetryWithFeedback):
        await call(fs, "fs.read", path="blob.bin")
    read = await call(fs, "fs.read", path="blob.bin", binary=True)
    assert read.encoding == "base64"
    assert base64.b64decode(read.content) == b"\x89PNG\x00\x01"
    with pytest.raises(RetryWithFeedback):
        await call(fs, "fs.read", path="blob.bin", binary=True, offset=2)


async def test_read_invalid_utf8_is_replaced(root: Path, fs: ToolRegistry) -> None:
    """Bytes that are not UTF-8 are shown as U+FFFD."""
    (root / "latin.txt").write_bytes(b"caf\xe9\n")
    assert (await call(fs, "fs.read", path="latin.txt")).content == "caf\ufffd\n"


async def test_read_directory_or_missing(fs: ToolRegistry) -> None:
    """Reading a directory or a missing file fails with a kind that says which."""
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.read", path="src")
    assert caught.value.kind == "is_a_directory"
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.read", path="src/nope.py")
    assert caught.value.kind == "not_found"


# -- write and edit ---------------------------------------------------------------------


async def test_write_creates_and_replaces(root: Path, fs: ToolRegistry) -> None:
    """write creates a file, then replaces it whole, keeping its permissions."""
    made = await call(fs, "fs.write", path="new.txt", content="héllo")
    assert (made.created, made.bytes_written) == (True, 6)
    (root / "new.txt").chmod(0o600)
    again = await call(fs, "fs.write", path="new.txt", content="bye")
    assert again.created is False
    assert (root / "new.txt").read_text() == "bye"
    assert (root / "new.txt").stat().st_mode & 0o777 == 0o600


async def test_write_parents_only_on_request(root: Path, fs: ToolRegistry) -> None:
    """Missing parent directories are made only with create_parents."""
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.write", path="a/b/c.txt", content="x")
    assert caught.value.kind == "not_found"
    assert "create_parents" in caught.value.message
    await call(fs, "fs.write", path="a/b/c.txt", content="x", create_parents=True)
    assert (root / "a" / "b" / "c.txt").read_text() == "x"


async def test_write_over_directory_fails(fs: ToolRegistry) -> None:
    """A directory is never replaced by a file."""
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.write", path="src", content="x")
    assert caught.value.kind == "is_a_directory"


async def test_edit_unique_text_returns_diff(root: Path, fs: ToolRegistry) -> None:
    """A unique old_text is replaced and the change comes back as a unified diff."""
    edited = await call(fs, "fs.edit", path="notes.txt", old_text="three", new_text="THREE")
    assert edited.replacements == 1
    assert "-three\n+THREE\n" in edited.diff
    assert edited.diff.startswith("--- a/notes.txt\n+++ b/notes.txt\n")
    assert (root / "notes.txt").read_text() == "one\ntwo\nTHREE\nfour\nfive\n"


async def test_edit_ambiguous_missing_and_replace_all(root: Path, fs: ToolRegistry) -> None:
    """Text found several times needs replace_all; text not found asks for an exact copy."""
    (root / "dup.txt").write_text("a x a x a\n")
    with pytest.raises(RetryWithFeedback) as caught:
        await call(fs, "fs.edit", path="dup.txt", old_text="a", new_text="b")
    assert caught.value.data["occurrences"] == 3
    with pytest.raises(RetryWithFeedback):
        await call(fs, "fs.edit", path="dup.txt", old_text="zzz", new_text="b")
    for bad in ({"old_text": "", "new_text": "b"}, {"old_text": "a", "new_text": "a"}):
        with pytest.raises(RetryWithFeedback):
            await call(fs, "fs.edit", path="dup.txt", **bad)
    edited = await call(fs, "fs.edit", path="dup.txt", old_text="a", new_text="b", replace_all=True)
    assert edited.replacements == 3
    assert (root / "dup.txt").read_text() == "b x b x b\n"


async def test_edit_crlf_file_and_foreign_bytes(root: Path, fs: ToolRegistry) -> None:
    """old_text written with \\n matches a CRLF file, and bytes that are not UTF-8 elsewhere
    in the file survive the edit unchanged."""
    (root / "win.txt").write_bytes(b"caf\xe9\r\nfirst\r\nsecond\r\n")
    await call(fs, "fs.edit", path="win.txt", old_text="first\nsecond", new_text="1\n2")
    assert (root / "win.txt").read_bytes() == b"caf\xe9\r\n1\r\n2\r\n"


# -- list, glob, stat -------------------------------------------------------------------


async def test_list_directory_and_recursion(fs: ToolRegistry) -> None:
    """list shows one level, or several when recursive; files carry their size."""
    top = await call(fs, "fs.list")
    assert [(e.path, e.type) for e in top.entries] == [("notes.txt", "file"), ("src", "directory")]
    assert top.entries[0].size == 24
    deep = await call(fs, "fs.list", path="src", recursive=True, max_depth=1)
    assert [e.path for e in deep.entries] == ["src/main.py", "src/pkg"]
    deeper = await call(fs, "fs.list", path="src", recursive=True)
    assert [e.path for e in deeper.entries] == ["src/main.py", "src/pkg", "src/pkg/mod.py"]


async def test_list_is_capped(root: Path) -> None:
    """More entries than max_entries are cut, and the result says so."""
    listed = await call(filesystem(root, max_entries=2), "fs.list", recursive=True)
    assert len(listed.entries) == 2
    assert listed.truncated


async def test_glob(fs: ToolRegistry) -> None:
    """glob matches root-relative paths below 'path'; a missing literal part matches nothing."""
    everywhere = await call(fs, "fs.glob", pattern="**/*.py")
    assert [m.path for m in everywhere.matches] == ["src/main.py", "src/pkg/mod.py"]
    below = await call(fs, "fs.glob", pattern="*.py", path="src")
    assert [m.path for m in below.matches] == ["src/main.py"]
    assert (await call(fs, "fs.glob", pattern="nope/*.py")).matches == ()
    with pytest.raises(ToolFailed):
        await call(fs, "fs.glob", pattern="*", path="notes.txt")


async def test_stat(fs: ToolRegistry) -> None:
    """stat describes type, size, mode and links."""
    described = await call(fs, "fs.stat", path="notes.txt")
    assert (described.type, described.size, described.links) == ("file", 24, 1)
    assert described.mode.startswith("0o")
    assert (await call(fs, "fs.stat", path=".")).type == "directory"


# -- move, delete, mkdir ----------------------------------------------------------------


async def test_move(root: Path, fs: ToolRegistry) -> None:
    """move renames; an existing destination needs overwrite; nothing moves into itself."""
    await call(fs, "fs.move", path="notes.txt", destination="docs/notes.md", create_parents=True)
    assert (root / "docs" / "notes.md").exists()
    (root / "other.txt").write_text("o")
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.move", path="other.txt", destination="docs/notes.md")
    assert caught.value.kind == "exists"
    await call(fs, "fs.move", path="other.txt", destination="docs/notes.md", overwrite=True)
    assert (root / "docs" / "notes.md").read_text() == "o"
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.move", path="src", destination="src/pkg/src")
    assert caught.value.kind == "invalid_move"
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.move", path=".", destination="x")
    assert caught.value.kind == "is_root"
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.move", path="gone.txt", destination="new/dir/x", create_parents=True)
    assert caught.value.kind == "not_found"
    assert not (root / "new").exists()


async def test_delete(root: Path, fs: ToolRegistry) -> None:
    """delete removes files and empty directories; a full one needs recursive; never the root."""
    await call(fs, "fs.delete", path="notes.txt")
    assert not (root / "notes.txt").exists()
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.delete", path="src")
    assert caught.value.kind == "not_empty"
    await call(fs, "fs.delete", path="src", recursive=True)
    assert _names(root) == []
    for path, kind in ((".", "is_root"), ("gone", "not_found")):
        with pytest.raises(ToolFailed) as caught:
            await call(fs, "fs.delete", path=path)
        assert caught.value.kind == kind


async def test_mkdir(root: Path, fs: ToolRegistry) -> None:
    """mkdir makes missing parents, accepts an existing directory, refuses a file."""
    assert (await call(fs, "fs.mkdir", path="a/b/c")).created is True
    assert (await call(fs, "fs.mkdir", path="a/b")).created is False
    assert (root / "a" / "b" / "c").is_dir()
    with pytest.raises(ToolFailed) as caught:
        await call(fs, "fs.mkdir", path="notes.txt/x")
    assert caught.value.kind == "not_a_directory"


# -- through the executor ---------------------------------------------------------------


async def test_denied_path_is_an_error_result(fs: ToolRegistry) -> None:
    """Through the executor, a path outside the root is an error result of kind 'denied'
    that says why (refused in preflight), and a good read is a structured result."""
    executor = Executor(fs)
    outcome = await executor.execute(
        ToolCall(id="c1", name="fs.read", arguments='{"path": "../etc/passwd"}')
    )
    assert isinstance(outcome, Completed | Failed)
    assert outcome.result.is_error
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert "'..'" in outcome.result.text
    good = await executor.execute(
        ToolCall(id="c2", name="fs.read", arguments={"path": "notes.txt"})
    )
    assert isinstance(good, Completed)
    assert good.result.structured["content"].startswith("one\n")


async def test_policy_sees_requests_before_anything_happens(root: Path, fs: ToolRegistry) -> None:
    """A policy rule on the declared write request refuses the call and no file is made."""
    policy = Policy(allow=["fs.*"], deny=["fs.*(write:secrets/**)"])
    outcome = await Executor(fs, policy=policy).execute(
        ToolCall(
            id="c1",
            name="fs.write",
            arguments={"path": "./secrets//key.txt", "content": "x", "create_parents": True},
        )
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert not (root / "secrets").exists()


async def test_dotdot_inside_the_root_is_resolved_and_still_governed(root: Path) -> None:
    """``sub/../notes.txt`` reads ``notes.txt``; the same spelling cannot dodge a deny rule on
    the path it resolves to, and a '..' that climbs out is refused saying so."""
    (root / "sub").mkdir(exist_ok=True)
    (root / "secret").mkdir()
    (root / "secret" / "key.txt").write_text("k\n")
    policy = Policy.from_dict({"deny": ["fs.read(secret/**)"], "allow": ["fs.*"]})
    executor = Executor(filesystem(root), policy=policy)
    good = await executor.execute(
        ToolCall(id="c1", name="fs.read", arguments={"path": "sub/../notes.txt"})
    )
    assert isinstance(good, Completed)
    assert good.result.structured["content"].startswith("one\n")
    assert good.result.structured["path"] == "notes.txt"
    dodged = await executor.execute(
        ToolCall(id="c2", name="fs.read", arguments={"path": "sub/../secret/key.txt"})
    )
    assert dodged.result.is_error
    assert dodged.result.error is not None
    assert dodged.result.error.kind == "denied"
    out = await executor.execute(
        ToolCall(id="c3", name="fs.read", arguments={"path": "sub/../../notes.txt"})
    )
    assert out.result.is_error
    assert "climbs above the root" in out.result.text
