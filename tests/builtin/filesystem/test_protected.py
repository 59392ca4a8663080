"""Protected paths: no fs tool creates, changes, moves or deletes what decides what may run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall, ToolContext
from invokit.approvals import MemoryApprovalStore
from invokit.builtin.filesystem import filesystem
from invokit.exceptions import AccessDenied
from invokit.execution import Executor, Interrupted
from invokit.permissions import Policy
from invokit.registry import ToolRegistry
from tests.builtin.filesystem._trees import call

pytestmark = pytest.mark.anyio

CONFIG = '[policy]\ndefault = "ask"\n'
PLANTED = '[policy]\ndefault = "allow"\nallow = ["*"]\n'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "invokit.toml").write_text(CONFIG)
    (root / "sub" / "invokit.toml").write_text(CONFIG)
    (root / "sub" / "notes.txt").write_text("notes\n")
    (root / "planted").mkdir()
    (root / "planted" / "policy.toml").write_text(PLANTED)
    (root / "hello.txt").write_text("hello\n")
    return root


@pytest.fixture
def fs(root: Path) -> ToolRegistry:
    # As the CLI passes them: absolute, relative to the root, and one that does not exist yet.
    return filesystem(
        root, protected=[root / "invokit.toml", "sub/invokit.toml", ".invokit/policy.toml"]
    )


def _snapshot(root: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            found[os.path.relpath(os.path.join(dirpath, name), root)] = None
        for name in filenames:
            full = os.path.join(dirpath, name)
            found[os.path.relpath(full, root)] = Path(full).read_bytes()
    return found


ATTACKS = [
    pytest.param("fs.write", {"path": "invokit.toml", "content": PLANTED}, id="overwrite-config"),
    pytest.param(
        "fs.write", {"path": "./sub//invokit.toml", "content": PLANTED}, id="odd-spelling"
    ),
    pytest.param(
        "fs.edit",
        {"path": "invokit.toml", "old_text": '"ask"', "new_text": '"allow"'},
        id="edit-config",
    ),
    pytest.param("fs.delete", {"path": "invokit.toml"}, id="delete-config"),
    pytest.param("fs.delete", {"path": ".", "recursive": True}, id="delete-root"),
    pytest.param("fs.delete", {"path": "sub", "recursive": True}, id="delete-parent"),
    pytest.param("fs.move", {"path": "invokit.toml", "destination": "old.toml"}, id="move-away"),
    pytest.param(
        "fs.move",
        {"path": "hello.txt", "destination": "invokit.toml", "overwrite": True},
        id="move-onto",
    ),
    pytest.param("fs.move", {"path": "sub", "destination": "elsewhere"}, id="move-parent-away"),
    pytest.param(
        "fs.move",
        {"path": "planted", "destination": ".invokit", "create_parents": True},
        id="move-folder-onto-missing-protected",
    ),
    pytest.param(
        "fs.write",
        {"path": ".invokit/policy.toml", "content": PLANTED, "create_parents": True},
        id="create-missing-protected",
    ),
    pytest.param("fs.mkdir", {"path": ".invokit/policy.toml"}, id="mkdir-in-its-place"),
    pytest.param("fs.mkdir", {"path": ".invokit"}, id="mkdir-its-folder"),
]


@pytest.mark.parametrize(("name", "arguments"), ATTACKS)
def test_preflight_refuses_every_change(
    fs: ToolRegistry, name: str, arguments: dict[str, Any]
) -> None:
    """A change to a protected path, or a folder that holds one, is refused by permissions()."""
    tool = fs[name]
    with pytest.raises(AccessDenied) as caught:
        tool.permissions(tool.validate(arguments), ToolContext())
    assert caught.value.kind == "denied"
    assert caught.value.data["reason"] == "protected"


@pytest.mark.parametrize(("name", "arguments"), ATTACKS)
async def test_the_tool_itself_refuses_too(
    root: Path, fs: ToolRegistry, name: str, arguments: dict[str, Any]
) -> None:
    """Invoked directly, past any preflight, the tool still refuses and nothing changes."""
    before = _snapshot(root)
    with pytest.raises(AccessDenied):
        await call(fs, name, **arguments)
    assert _snapshot(root) == before


@pytest.mark.parametrize(("name", "arguments"), ATTACKS)
async def test_executor_refuses_without_asking(
    root: Path, fs: ToolRegistry, name: str, arguments: dict[str, Any]
) -> None:
    """Under a policy that asks for every fs call, the change is a denied result: no one is
    asked, no approval is recorded, the body never runs and the tree is unchanged."""
    store = MemoryApprovalStore()
    executor = Executor(fs, policy=Policy(ask=["fs.*"]), approvals=store)
    before = _snapshot(root)
    outcome = await executor.execute(ToolCall(id="c1", name=name, arguments=arguments))
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert "protected" in outcome.result.text
    assert await store.list_pending() == []
    assert _snapshot(root) == before


async def test_planted_config_cannot_change_the_policy(root: Path, fs: ToolRegistry) -> None:
    """Even a policy that allows every fs call, and a person who would approve, cannot get a
    planted ``[policy]`` into the protected config: the write is denied, not asked."""
    asked: list[object] = []

    async def approver(request: object) -> Any:
        asked.append(request)
        raise AssertionError("no one may be asked about a protected write")

    executor = Executor(fs, policy=Policy(allow=["fs.*"]), approver=approver)
    outcome = await executor.execute(
        ToolCall(id="c1", name="fs.write", arguments={"path": "invokit.toml", "content": PLANTED})
    )
    assert outcome.result.is_error
    assert asked == []
    assert (root / "invokit.toml").read_text() == CONFIG
    assert Policy.from_toml(root / "invokit.toml").default == "ask"


async def test_reading_protected_paths_stays_allowed(fs: ToolRegistry) -> None:
    """Reading, listing and describing a protected file still works."""
    content = await call(fs, "fs.read", path="invokit.toml")
    assert content.content == CONFIG
    stat = await call(fs, "fs.stat", path="sub/invokit.toml")
    assert stat.type == "file"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        pytest.param("fs.write", {"path": "sub/notes.txt", "content": "x"}, id="sibling"),
        pytest.param("fs.write", {"path": "invokit.toml.bak", "content": "x"}, id="same-prefix"),
        pytest.param("fs.write", {"path": "subway/invokit.toml", "content": "x"}, id="look-alike"),
        pytest.param("fs.delete", {"path": "sub/notes.txt"}, id="delete-sibling"),
        pytest.param("fs.mkdir", {"path": "sub/more"}, id="mkdir-beside"),
    ],
)
def test_neighbours_are_not_protected(
    fs: ToolRegistry, name: str, arguments: dict[str, Any]
) -> None:
    """Only the protected entries and the folders that hold them are refused, not look-alikes."""
    tool = fs[name]
    assert tool.permissions(tool.validate(arguments), ToolContext())


async def test_a_link_to_the_root_does_not_reach_it(root: Path, fs: ToolRegistry) -> None:
    """A directory link inside the root (made by anything else) is never followed, so
    ``link/invokit.toml`` cannot reach the config: refused in preflight and when run."""
    (root / "link").symlink_to(root, target_is_directory=True)
    tool = fs["fs.write"]
    args = tool.validate({"path": "link/invokit.toml", "content": PLANTED})
    with pytest.raises(AccessDenied) as caught:
        tool.permissions(args, ToolContext())
    assert caught.value.data["reason"] == "symlink"
    with pytest.raises(AccessDenied):
        await call(fs, "fs.write", path="link/invokit.toml", content=PLANTED)
    assert (root / "invokit.toml").read_text() == CONFIG


async def test_protection_holds_through_a_linked_root(tmp_path: Path, root: Path) -> None:
    """A root and protected paths spelled through a link to the root protect the same files."""
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    fs = filesystem(alias, protected=[alias / "invokit.toml"])
    with pytest.raises(AccessDenied):
        await call(fs, "fs.write", path="invokit.toml", content=PLANTED)
    fs = filesystem(root, protected=[alias / "invokit.toml"])
    with pytest.raises(AccessDenied):
        await call(fs, "fs.delete", path="invokit.toml")
    assert (root / "invokit.toml").read_text() == CONFIG


async def test_a_protected_link_protects_its_target(root: Path) -> None:
    """When the protected config is a link, the file it points to is protected too."""
    (root / "real.toml").write_text(CONFIG)
    (root / "linked.toml").symlink_to("real.toml")
    fs = filesystem(root, protected=["linked.toml"])
    for path in ("real.toml", "linked.toml"):
        with pytest.raises(AccessDenied):
            await call(fs, "fs.write", path=path, content=PLANTED)
    assert (root / "real.toml").read_text() == CONFIG


def test_paths_outside_the_root_change_nothing(tmp_path: Path, root: Path) -> None:
    """A protected path outside the root (unreachable anyway) leaves every tool as it was."""
    fs = filesystem(root, protected=[tmp_path / "elsewhere" / "invokit.toml"])
    tool = fs["fs.delete"]
    assert tool.permissions(tool.validate({"path": "invokit.toml"}), ToolContext())


def test_writable_roots(root: Path) -> None:
    """The tools that write declare the root as writable; readers and a read-only set don't."""
    fs = filesystem(root)
    assert fs["fs.write"].writable_roots == (root,)
    assert fs["fs.delete"].writable_roots == (root,)
    assert fs["fs.read"].writable_roots == ()
    assert all(tool.writable_roots == () for tool in filesystem(root, writable=False))
