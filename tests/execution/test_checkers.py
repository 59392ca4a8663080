"""Host checkers (``Executor(checkers=...)``): combined with the policy, a deny winning."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import invokit
from invokit import Decision, PermissionChecker, ToolCall, ToolRegistry, tool
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.permissions import FileWrite, PermissionRequest, Policy

from .conftest import Recorder

pytestmark = pytest.mark.anyio


class Answering:
    """A checker that gives one answer and keeps what it saw."""

    def __init__(self, answer: Decision) -> None:
        self.answer = answer
        self.seen: list[tuple[str, tuple[PermissionRequest, ...]]] = []

    def check(self, call: ToolCall, requests: Sequence[PermissionRequest]) -> Decision:
        self.seen.append((call.name, tuple(requests)))
        return self.answer


class Broken:
    def check(self, call: ToolCall, requests: Sequence[PermissionRequest]) -> Decision:
        raise RuntimeError("boom")


class Nonsense:
    def check(self, call: ToolCall, requests: Sequence[PermissionRequest]) -> Any:
        return "allow"


ALLOW_ALL = Policy(allow=["*"])


def _call(name: str = "echo", **arguments: Any) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments or {"text": "hi"}, session_id="s1")


def test_the_protocol_is_public() -> None:
    """``PermissionChecker`` is exported from invokit and invokit.permissions, and checkable."""
    from invokit.permissions import PermissionChecker as FromPermissions

    assert FromPermissions is PermissionChecker
    assert "PermissionChecker" in invokit.__all__
    assert isinstance(Answering(Decision.allow()), PermissionChecker)


async def test_a_checker_deny_refuses_a_call_the_policy_allows(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A checker's deny refuses a plain call under an allow-all policy: the body never runs."""
    checker = Answering(Decision.deny("not on Fridays", rule="host:friday"))
    executor = Executor(registry, policy=ALLOW_ALL, checkers=[checker])
    outcome = await executor.execute(_call())
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "denied"
    assert recorder.count("echo") == 0
    assert checker.seen == [("echo", ())]


async def test_a_checker_ask_interrupts_and_an_approval_runs_it(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A checker's ask turns an allowed call into an approval; approved, it runs once."""
    executor = Executor(registry, policy=ALLOW_ALL, checkers=[Answering(Decision.ask("host"))])
    outcome = await executor.execute(_call())
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    assert outcome.interrupt.request.reason == "host"
    resumed = await executor.resume(outcome.interrupt.id, approve=True)
    assert isinstance(resumed, Completed)
    assert recorder.count("echo") == 1


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(Policy(deny=["delete"]), "deny", id="policy-deny"),
        pytest.param(Policy(ask=["delete"]), "ask", id="policy-ask"),
    ],
)
async def test_a_checker_allow_never_widens_the_policy(
    registry: ToolRegistry, recorder: Recorder, policy: Policy, expected: str
) -> None:
    """A checker's allow leaves the policy's deny or ask as it is."""
    executor = Executor(registry, policy=policy, checkers=[Answering(Decision.allow())])
    checked = await executor.check(_call("delete", path="a.txt"))
    assert checked.action == expected
    outcome = await executor.execute(_call("delete", path="a.txt"))
    assert isinstance(outcome, Failed if expected == "deny" else Interrupted)
    assert recorder.count("delete") == 0


@pytest.mark.parametrize("checker", [Broken(), Nonsense()], ids=["raises", "nonsense"])
async def test_a_broken_checker_denies(
    registry: ToolRegistry, recorder: Recorder, checker: PermissionChecker
) -> None:
    """A checker that raises or answers something other than a Decision denies the call."""
    executor = Executor(registry, policy=ALLOW_ALL, checkers=[checker])
    outcome = await executor.execute(_call())
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "denied"
    assert recorder.count("echo") == 0


async def test_check_and_explain_read_the_checker(registry: ToolRegistry) -> None:
    """``check`` and ``explain`` say what the checker made of the call."""
    executor = Executor(
        registry, policy=ALLOW_ALL, checkers=[Answering(Decision.deny("no", rule="host"))]
    )
    checked = await executor.check(_call())
    assert (checked.action, checked.rule) == ("deny", "host")
    explanation = await executor.explain(_call())
    assert explanation.decision.verdict == "deny"
    assert explanation.decision.rule == "host"


async def test_a_checker_sees_the_permission_requests() -> None:
    """The checker is handed the tool's permission requests for these arguments."""

    @tool(destructive=True, permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write a file."""
        return path

    checker = Answering(Decision.allow())
    executor = Executor(ToolRegistry([write]), policy=ALLOW_ALL, checkers=[checker])
    outcome = await executor.execute(_call("write", path="out.txt"))
    assert isinstance(outcome, Completed)
    assert checker.seen == [("write", (FileWrite(path="out.txt"),))]
