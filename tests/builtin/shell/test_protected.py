"""Protected paths and the shell: read-only in the real sandbox, no command without one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall
from invokit.approvals import MemoryApprovalStore
from invokit.builtin.shell import _sandbox as sandbox_module
from invokit.builtin.shell import find_bwrap, shell
from invokit.builtin.shell._protected import protected_mounts
from invokit.builtin.shell._settings import SandboxMode
from invokit.exceptions import AccessDenied, ToolFailed
from invokit.execution import Executor, Interrupted
from invokit.permissions import Policy
from invokit.tools import Tool, ToolContext

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")

CONFIG = '[policy]\ndefault = "ask"\n'
PLANTED = '[policy]\ndefault = "allow"\nallow = ["*"]\n'
ALLOW = ["sed *", "cp *", "rm *", "mv *", "truncate *", "ln *", "tee *", "touch *", "cat *"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "state").mkdir()
    (root / "invokit.toml").write_text(CONFIG)
    (root / "sub" / "invokit.toml").write_text(CONFIG)
    (root / "sub" / "notes.txt").write_text("notes\n")
    (root / "state" / "approvals.db").write_text("approvals\n")
    (root / "planted.toml").write_text(PLANTED)
    return root


def _tool(root: Path, **options: Any) -> Tool:
    options.setdefault("allow", ALLOW)
    options.setdefault("sandbox", "required")
    options.setdefault("protected", ["invokit.toml", root / "sub" / "invokit.toml", "state"])
    found = shell(root=root, **options).get("shell")
    assert found is not None
    return found


def _snapshot(root: Path) -> dict[str, bytes | str | None]:
    found: dict[str, bytes | str | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            key = os.path.relpath(full, root)
            if os.path.islink(full):
                found[key] = "link:" + os.readlink(full)
            elif os.path.isdir(full):
                found[key] = None
            else:
                found[key] = Path(full).read_bytes()
    return found


def _protected_part(snapshot: dict[str, bytes | str | None]) -> dict[str, bytes | str | None]:
    keep = ("invokit.toml", "sub", "sub/invokit.toml", "state", "state/approvals.db")
    return {key: snapshot.get(key, "MISSING") for key in keep}


ATTACKS = [
    pytest.param(["sed", "-i", "s/ask/allow/", "invokit.toml"], id="sed-in-place"),
    pytest.param(["cp", "planted.toml", "invokit.toml"], id="cp-over"),
    pytest.param(["tee", "invokit.toml"], id="tee"),
    pytest.param(["truncate", "-s", "0", "invokit.toml"], id="truncate"),
    pytest.param(["rm", "-f", "invokit.toml"], id="rm"),
    pytest.param(["mv", "invokit.toml", "old.toml"], id="mv-away"),
    pytest.param(["mv", "-f", "planted.toml", "invokit.toml"], id="mv-onto"),
    pytest.param(["ln", "-sf", "planted.toml", "invokit.toml"], id="ln-sf"),
    pytest.param(["ln", "invokit.toml", "hard.toml"], id="hard-link"),
    pytest.param(["sed", "-i", "s/ask/allow/", "sub/invokit.toml"], id="sed-nested"),
    pytest.param(["mv", "sub", "sub-moved"], id="mv-parent"),
    pytest.param(["rm", "-rf", "sub"], id="rm-parent"),
    pytest.param(["rm", "-rf", "state"], id="rm-protected-folder"),
    pytest.param(["touch", "state/forged.db"], id="create-in-protected-folder"),
    pytest.param(["cp", "planted.toml", "state/approvals.db"], id="overwrite-in-folder"),
    pytest.param(["mv", "state", "state-old"], id="mv-protected-folder"),
]


@needs_bwrap
@pytest.mark.parametrize("command", ATTACKS)
async def test_sandboxed_commands_cannot_touch_protected_paths(
    root: Path, command: list[str]
) -> None:
    """Each way a command could rewrite, replace, move or delete a protected file, or the
    folder holding it, fails inside bubblewrap and leaves them exactly as they were."""
    tool = _tool(root)
    before = _protected_part(_snapshot(root))
    with pytest.raises(ToolFailed) as caught:
        await tool.invoke(tool.validate({"command": command}), ToolContext(call_id="t"))
    assert caught.value.kind == "nonzero_exit"
    assert caught.value.data["sandbox"] == "bubblewrap"
    assert _protected_part(_snapshot(root)) == before
    assert not (root / "hard.toml").exists()
    assert not (root / "state" / "forged.db").exists()


@needs_bwrap
async def test_other_files_stay_writable(root: Path) -> None:
    """Protection is narrow: the rest of the root, the protected file's folder included,
    stays writable to the sandboxed command."""
    tool = _tool(root)
    ctx = ToolContext(call_id="t")
    await tool.invoke({"command": ["cp", "planted.toml", "copy.toml"], "cwd": "."}, ctx)
    await tool.invoke({"command": ["rm", "sub/notes.txt"], "cwd": "."}, ctx)
    await tool.invoke({"command": ["touch", "sub/new.txt"], "cwd": "."}, ctx)
    assert (root / "copy.toml").read_text() == PLANTED
    assert not (root / "sub" / "notes.txt").exists()
    assert (root / "sub" / "new.txt").exists()
    assert (root / "invokit.toml").read_text() == CONFIG


@needs_bwrap
async def test_a_missing_protected_path_is_not_mounted(root: Path) -> None:
    """A protected path that does not exist yet cannot be mounted: the command runs and may
    create it (the CLI does not trust what it did not pin), and no placeholder is made."""
    tool = _tool(root, protected=["later.toml"])
    await tool.invoke({"command": ["cp", "planted.toml", "later.toml"]}, ToolContext(call_id="t"))
    assert (root / "later.toml").read_text() == PLANTED
    assert protected_mounts(root, [root / "never.toml"]).entries == ()
    assert not (root / "never.toml").exists()


def test_mounts_are_parents_first(root: Path) -> None:
    """The folders between the root and a protected entry are bound over themselves, then
    the entries read-only, parents before children."""
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "c.toml").write_text("")
    mounts = protected_mounts(root, [root / "a" / "b" / "c.toml", root / "invokit.toml"])
    assert mounts.folders == (root / "a", root / "a" / "b")
    assert mounts.entries == (root / "invokit.toml", root / "a" / "b" / "c.toml")
    args = mounts.bwrap_args()
    assert args[:3] == ["--bind", str(root / "a"), str(root / "a")]
    deepest = str(root / "a" / "b" / "c.toml")
    assert args[-3:] == ["--ro-bind", deepest, deepest]


def test_a_protected_link_refuses_every_command(root: Path) -> None:
    """A protected path that is a link (which a command could replace) cannot be mounted,
    so every command is refused in preflight, saying why."""
    (root / "linked.toml").symlink_to("invokit.toml")
    tool = _tool(root, protected=["linked.toml"], sandbox="auto")
    if find_bwrap() is None:
        pytest.skip("bubblewrap cannot run here")
    with pytest.raises(AccessDenied) as caught:
        tool.permissions(tool.validate({"command": ["cat", "invokit.toml"]}), ToolContext())
    assert caught.value.data["reason"] == "protected_link"


@pytest.fixture
def without_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A host where bubblewrap is not on PATH (the detection cache is reset around the test)."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    sandbox_module._probe.cache_clear()
    yield
    sandbox_module._probe.cache_clear()


@pytest.mark.parametrize(
    ("sandbox", "hide_bwrap"),
    [
        pytest.param("off", False, id="sandbox-off"),
        pytest.param("auto", True, id="auto-without-bwrap"),
    ],
)
async def test_no_sandbox_no_command_while_protected(
    root: Path, sandbox: SandboxMode, hide_bwrap: bool, request: pytest.FixtureRequest
) -> None:
    """Without a sandbox, every command is refused while protected paths are configured:
    in preflight, as denied, so no one is asked, and nothing runs."""
    if hide_bwrap:
        request.getfixturevalue("without_bwrap")
    tool = _tool(root, sandbox=sandbox)
    with pytest.raises(AccessDenied) as caught:
        tool.permissions(tool.validate({"command": ["touch", "ran"]}), ToolContext())
    assert caught.value.data["reason"] == "no_sandbox"
    assert "bubblewrap" in caught.value.message
    store = MemoryApprovalStore()
    registry = shell(root=root, allow=ALLOW, sandbox=sandbox, protected=["invokit.toml"])
    executor = Executor(registry, policy=Policy(ask=["shell"]), approvals=store)
    outcome = await executor.execute(
        ToolCall(id="c1", name="shell", arguments={"command": ["touch", "ran"]})
    )
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert await store.list_pending() == []
    # Invoked directly, past the preflight, the tool refuses again.
    with pytest.raises(AccessDenied):
        await tool.invoke(tool.validate({"command": ["touch", "ran"]}), ToolContext(call_id="t"))
    assert not (root / "ran").exists()


async def test_without_protected_paths_an_unsandboxed_shell_still_runs(root: Path) -> None:
    """The refusal is about protected paths: a shell with none runs with sandbox='off'."""
    tool = _tool(root, sandbox="off", protected=[])
    await tool.invoke({"command": ["touch", "ran"]}, ToolContext(call_id="t"))
    assert (root / "ran").exists()


def test_writable_roots(root: Path) -> None:
    """A shell tool declares its root writable unless a sandbox keeps it read-only."""
    assert _tool(root).writable_roots == (root.resolve(),)
    assert _tool(root, writable=False).writable_roots == ()
    assert _tool(root, writable=False, sandbox="auto").writable_roots == (root.resolve(),)
