"""Refuse before asking: what the fs tools can tell without running is refused in preflight."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall, ToolContext
from invokit.approvals import MemoryApprovalStore
from invokit.builtin.filesystem import filesystem
from invokit.builtin.filesystem._writing import MAX_EDIT_BYTES
from invokit.exceptions import AccessDenied, ToolError
from invokit.execution import Executor, Interrupted
from invokit.permissions import FileRead, FileWrite, Policy
from invokit.registry import ToolRegistry
from tests.builtin.filesystem._trees import SECRET, Tree, make_tree

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    root = tree.root
    (root / "out").symlink_to(tree.outside, target_is_directory=True)
    (root / "secret-link").symlink_to(tree.secret)
    os.mkfifo(root / "pipe")
    (root / "dir").mkdir()
    with open(root / "huge.txt", "wb") as handle:  # sparse: no real disk use
        handle.truncate(MAX_EDIT_BYTES + 1)
    return tree


@pytest.fixture
def fs(tree: Tree) -> ToolRegistry:
    return filesystem(tree.root)


REFUSED = [
    pytest.param("fs.read", {"path": "../root-evil/secret.txt"}, "denied", id="climbs"),
    pytest.param("fs.read", {"path": "/etc/passwd"}, "denied", id="absolute"),
    pytest.param("fs.read", {"path": "out/secret.txt"}, "denied", id="through-dir-link"),
    pytest.param("fs.read", {"path": "secret-link"}, "denied", id="file-link"),
    pytest.param("fs.read", {"path": "pipe"}, "denied", id="fifo"),
    pytest.param("fs.list", {"path": "out"}, "denied", id="list-link"),
    pytest.param("fs.write", {"path": "out/new.txt", "content": "x"}, "denied", id="write-out"),
    pytest.param("fs.write", {"path": "secret-link", "content": "x"}, "denied", id="write-link"),
    pytest.param("fs.write", {"path": "dir", "content": "x"}, "is_a_directory", id="write-dir"),
    pytest.param("fs.delete", {"path": "out/secret.txt"}, "denied", id="delete-out"),
    pytest.param(
        "fs.move", {"path": "hello.txt", "destination": "out/hello.txt"}, "denied", id="move-out"
    ),
    pytest.param(
        "fs.edit",
        {"path": "huge.txt", "old_text": "a", "new_text": "b"},
        "too_large",
        id="edit-size-cap",
    ),
    pytest.param("fs.mkdir", {"path": "out/x"}, "denied", id="mkdir-out"),
]


@pytest.mark.parametrize(("name", "arguments", "kind"), REFUSED)
def test_preflight_refuses(
    fs: ToolRegistry, name: str, arguments: dict[str, Any], kind: str
) -> None:
    """permissions() raises the error the tool would fail with, with its kind."""
    tool = fs[name]
    with pytest.raises(ToolError) as caught:
        tool.permissions(tool.validate(arguments), ToolContext())
    assert caught.value.kind == kind


@pytest.mark.parametrize(("name", "arguments", "kind"), REFUSED)
async def test_no_one_is_asked_about_a_call_that_cannot_run(
    tree: Tree, fs: ToolRegistry, name: str, arguments: dict[str, Any], kind: str
) -> None:
    """Under a policy that asks for every fs call, such a call is an error result at once:
    not an approval question, none recorded, nothing outside the root touched."""
    store = MemoryApprovalStore()
    executor = Executor(fs, policy=Policy(ask=["fs.*"]), approvals=store)
    before = tree.outside_snapshot()
    outcome = await executor.execute(ToolCall(id="c1", name=name, arguments=arguments))
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error
    assert outcome.result.error is not None
    if kind == "denied":
        assert outcome.result.error.kind == "denied"
    assert await store.list_pending() == []
    assert tree.outside_snapshot() == before
    assert SECRET not in outcome.result.text


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        pytest.param("fs.read", {"path": "hello.txt"}, [FileRead(path="hello.txt")], id="read"),
        pytest.param(
            "fs.write",
            {"path": "new/deeper/file.txt", "content": "x", "create_parents": True},
            [FileWrite(path="new/deeper/file.txt")],
            id="write-missing-parents",
        ),
        pytest.param("fs.stat", {"path": "out"}, [FileRead(path="out")], id="stat-a-link"),
    ],
)
def test_calls_that_would_run_pass(
    fs: ToolRegistry, name: str, arguments: dict[str, Any], expected: list[object]
) -> None:
    """A call that would run gets its declared requests, and so goes on to the policy."""
    tool = fs[name]
    assert list(tool.permissions(tool.validate(arguments), ToolContext())) == expected


async def test_a_call_that_would_run_is_still_asked(fs: ToolRegistry) -> None:
    """An ask rule still asks about a write that would run: preflight takes nothing away."""
    executor = Executor(fs, policy=Policy(ask=["fs.*"]))
    outcome = await executor.execute(
        ToolCall(id="c1", name="fs.write", arguments={"path": "a.txt", "content": "x"})
    )
    assert isinstance(outcome, Interrupted)


def test_bad_paths_are_refused_as_denied(fs: ToolRegistry) -> None:
    """A path that climbs or is absolute is an AccessDenied naming the reason."""
    tool = fs["fs.write"]
    with pytest.raises(AccessDenied) as caught:
        tool.permissions(tool.validate({"path": "a/../../x", "content": ""}), ToolContext())
    assert caught.value.data["reason"] == "parent_reference"
