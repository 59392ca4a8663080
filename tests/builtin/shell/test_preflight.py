"""Refuse before asking: a shell command that cannot run is refused before anyone is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from invokit import ToolCall
from invokit.approvals import MemoryApprovalStore
from invokit.builtin.shell import _sandbox as sandbox_module
from invokit.builtin.shell import shell
from invokit.exceptions import AccessDenied, RetryWithFeedback, ToolError
from invokit.execution import Executor, Interrupted
from invokit.permissions import Policy, ShellExec
from invokit.registry import ToolRegistry
from invokit.tools import ToolContext

pytestmark = pytest.mark.anyio

ALLOW = ["touch *", "git status", "sed *"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return root


@pytest.fixture
def registry(root: Path) -> ToolRegistry:
    return shell(root=root, allow=ALLOW, sandbox="off")


REFUSED = [
    pytest.param(["rm", "-rf", "."], AccessDenied, id="not-in-allow-list"),
    pytest.param(["git", "push", "origin"], AccessDenied, id="allowed-program-other-args"),
    pytest.param("touch a; rm -rf ~", RetryWithFeedback, id="shell-syntax"),
    pytest.param("touch $(id)", RetryWithFeedback, id="substitution"),
    pytest.param("touch 'unbalanced", RetryWithFeedback, id="unbalanced-quote"),
    pytest.param(
        ["touch", "x" * 131_071, "y" * 131_071, "z" * 9], RetryWithFeedback, id="length-cap"
    ),
    pytest.param(["sed", "s/x/id/e", "f"], AccessDenied, id="refused-flag"),
    pytest.param(["touch", "nul\0byte"], RetryWithFeedback, id="nul-byte"),
]


@pytest.mark.parametrize(("command", "error"), REFUSED)
def test_preflight_raises_what_the_run_would(
    registry: ToolRegistry, command: Any, error: type[ToolError]
) -> None:
    """permissions() raises the same refusal the command would get when run."""
    tool = registry["shell"]
    with pytest.raises(error):
        tool.permissions(tool.validate({"command": command}), ToolContext())


@pytest.mark.parametrize(("command", "error"), REFUSED)
async def test_a_disallowed_command_is_refused_without_asking(
    root: Path, registry: ToolRegistry, command: Any, error: type[ToolError]
) -> None:
    """Under a policy that asks for every shell call and with no approver, a command that
    cannot run is an error result, not an approval question; none is recorded, none runs."""
    store = MemoryApprovalStore()
    executor = Executor(registry, policy=Policy(ask=["shell"]), approvals=store)
    outcome = await executor.execute(
        ToolCall(id="c1", name="shell", arguments={"command": command})
    )
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error
    assert outcome.result.error is not None
    if error is AccessDenied:
        assert outcome.result.error.kind == "denied"
    assert await store.list_pending() == []
    assert [p.name async for p in anyio.Path(root).iterdir()] == ["sub"]


@pytest.mark.parametrize(
    ("cwd", "error"),
    [
        pytest.param("../outside", AccessDenied, id="climbs"),
        pytest.param("/tmp", AccessDenied, id="absolute"),
        pytest.param("missing", RetryWithFeedback, id="missing"),
    ],
)
async def test_cwd_is_checked_before_asking(
    registry: ToolRegistry, cwd: str, error: type[ToolError]
) -> None:
    """A working directory outside the root, or missing, is refused in preflight."""
    tool = registry["shell"]
    with pytest.raises(error):
        tool.permissions(tool.validate({"command": ["touch", "x"], "cwd": cwd}), ToolContext())
    outcome = await Executor(registry, policy=Policy(ask=["shell"])).execute(
        ToolCall(id="c1", name="shell", arguments={"command": ["touch", "x"], "cwd": cwd})
    )
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error


async def test_a_cwd_link_out_of_the_root_is_refused(root: Path, registry: ToolRegistry) -> None:
    """A link inside the root that leads out of it cannot be the working directory."""
    (root / "out").symlink_to(root.parent / "outside", target_is_directory=True)
    tool = registry["shell"]
    with pytest.raises(AccessDenied):
        tool.permissions(tool.validate({"command": ["touch", "x"], "cwd": "out"}), ToolContext())


async def test_an_allowed_command_is_still_asked(registry: ToolRegistry) -> None:
    """A command that would run goes on to the policy: an ask rule asks about it."""
    tool = registry["shell"]
    [request] = tool.permissions(tool.validate({"command": "touch a.txt"}), ToolContext())
    assert isinstance(request, ShellExec)
    assert (request.argv, request.cwd) == (("touch", "a.txt"), ".")
    outcome = await Executor(registry, policy=Policy(ask=["shell"])).execute(
        ToolCall(id="c1", name="shell", arguments={"command": "touch a.txt"})
    )
    assert isinstance(outcome, Interrupted)


async def test_a_required_sandbox_that_is_missing_refuses_before_asking(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sandbox='required' without a working bubblewrap is refused in preflight."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    sandbox_module._probe.cache_clear()
    try:
        registry = shell(root=root, allow=["/usr/bin/touch *"], sandbox="required")
        tool = registry["shell"]
        with pytest.raises(ToolError) as caught:
            tool.permissions(tool.validate({"command": ["/usr/bin/touch", "x"]}), ToolContext())
        assert caught.value.kind == "sandbox_unavailable"
        outcome = await Executor(registry, policy=Policy(ask=["shell"])).execute(
            ToolCall(id="c1", name="shell", arguments={"command": ["/usr/bin/touch", "x"]})
        )
        assert not isinstance(outcome, Interrupted)
        assert outcome.result.is_error
    finally:
        sandbox_module._probe.cache_clear()
    assert not (root / "x").exists()
