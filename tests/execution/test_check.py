"""Executor.check: the decision without running, storing, asking or reporting anything."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from invokit import AccessDenied, CallCheck, ToolCall, ToolRegistry, tool
from invokit.approvals import (
    ApprovalDecision,
    ApprovalStore,
    MemoryApprovalStore,
    SqliteApprovalStore,
)
from invokit.execution import ApprovalRequired, Completed, Executor, Interrupted
from invokit.permissions import FileWrite, PermissionRequest, Policy

from .conftest import ListSink, Recorder

pytestmark = pytest.mark.anyio

PROJECT = "/work/project"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApprovalStore]:
    if request.param == "memory":
        yield MemoryApprovalStore()
    else:
        yield SqliteApprovalStore(tmp_path / "approvals.sqlite3")


def _executor(
    registry: ToolRegistry, store: ApprovalStore, sink: ListSink, policy: Policy | None = None
) -> Executor:
    return Executor(registry, approvals=store, events=[sink], project=PROJECT, policy=policy)


def _call(name: str = "delete", call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(
        id=call_id, name=name, arguments=arguments or {"path": "a.txt"}, session_id="s1"
    )


def _approval(outcome: object) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


async def test_allowed_call_is_allow_and_nothing_happens(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """A read-only call checks as allow; its body never runs and no event is reported."""
    sink = ListSink()
    executor = _executor(registry, store, sink)
    checked = await executor.check(_call("echo", text="hi"))
    assert checked == CallCheck(action="allow", reason=checked.reason, rule=None)
    assert checked.error is None and checked.pending is None
    assert recorder.calls == [] and sink.events == []
    await executor.aclose()


async def test_asking_call_is_ask_and_no_approval_is_created(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """A destructive call checks as ask with the policy's reason; no approval is stored."""
    sink = ListSink()
    executor = _executor(registry, store, sink)
    checked = await executor.check(_call())
    assert checked.action == "ask"
    assert checked.reason is not None and "approval" in checked.reason
    assert checked.pending is None and checked.error is None
    assert await store.list_pending() == []
    assert await store.find_by_call("c1", session_id="s1", project=PROJECT) is None
    assert recorder.calls == [] and sink.events == []
    await executor.aclose()


async def test_deny_rule_is_deny_with_the_rule(
    registry: ToolRegistry, store: ApprovalStore
) -> None:
    """A call a deny rule refuses checks as deny naming that rule, with no error."""
    sink = ListSink()
    executor = _executor(registry, store, sink, Policy(deny=["delete(path=a.txt)"]))
    checked = await executor.check(_call())
    assert (checked.action, checked.rule, checked.error) == ("deny", "delete(path=a.txt)", None)
    assert sink.events == []
    await executor.aclose()


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        pytest.param(ToolCall(id="c1", name="nope", arguments={}), "not_found", id="unknown"),
        pytest.param(
            ToolCall(id="c1", name="delete", arguments={"path": 3}),
            "invalid_arguments",
            id="invalid",
        ),
        pytest.param(
            ToolCall(id="c1", name="delete", arguments="{not json"),
            "invalid_arguments",
            id="malformed",
        ),
    ],
)
async def test_call_that_cannot_run_is_deny_with_its_error(
    registry: ToolRegistry, call: ToolCall, kind: str
) -> None:
    """An unknown tool or bad arguments check as deny with the error execute would return."""
    sink = ListSink()
    executor = Executor(registry, events=[sink], project=PROJECT)
    checked = await executor.check(call)
    assert checked.action == "deny"
    assert checked.error is not None and checked.error.kind == kind
    assert checked.reason == checked.error.message
    failed = await executor.execute(call)
    assert failed.result.error is not None
    assert failed.result.error.kind == kind
    assert failed.result.text == checked.error.message
    assert [e.type for e in sink.events if e.type != "received"] == ["failed"]


async def test_invalid_arguments_name_each_field(registry: ToolRegistry) -> None:
    """The error of invalid arguments carries the issues as data, one per bad field."""
    executor = Executor(registry, project=PROJECT)
    checked = await executor.check(ToolCall(id="c1", name="echo", arguments={"times": "x"}))
    assert checked.error is not None
    paths = {issue["path"] for issue in checked.error.data["issues"]}
    assert {"/text", "/times"} <= paths or {"", "/times"} <= paths


async def test_preflight_refusal_is_deny_with_the_tools_error(recorder: Recorder) -> None:
    """A preflight that refuses (AccessDenied) checks as deny with that error, nobody asked."""

    def guard(args: Mapping[str, Any]) -> list[PermissionRequest]:
        if args["path"].startswith("/"):
            raise AccessDenied(f"{args['path']} is outside the workspace")
        return [FileWrite(path=args["path"])]

    @tool(permissions=guard)
    async def write(path: str) -> str:
        """Write a file."""
        recorder.saw("write", path=path)
        return "ok"

    executor = Executor([write], project=PROJECT)
    checked = await executor.check(ToolCall(id="c1", name="write", arguments={"path": "/etc"}))
    assert isinstance(checked.error, AccessDenied)
    assert (checked.action, checked.error.kind) == ("deny", "denied")
    assert (
        await executor.check(ToolCall(id="c2", name="write", arguments={"path": "x"}))
    ).action == "ask"
    assert recorder.calls == []


async def test_broken_preflight_is_deny(recorder: Recorder) -> None:
    """A preflight that crashes checks as deny (kind denied), as execute refuses it."""

    def guard(args: Mapping[str, Any]) -> list[PermissionRequest]:
        raise RuntimeError("bug")

    @tool(permissions=guard)
    async def write(path: str) -> str:
        """Write a file."""
        return "ok"

    executor = Executor([write], project=PROJECT)
    checked = await executor.check(ToolCall(id="c1", name="write", arguments={"path": "x"}))
    assert checked.action == "deny"
    assert checked.error is not None and checked.error.kind == "denied"


async def test_needs_approval_check_makes_it_ask(recorder: Recorder) -> None:
    """The tool's own argument-dependent approval check turns an allowed call into ask."""

    async def big(args: Mapping[str, Any], ctx: object) -> bool:
        return bool(args["amount"] > 100)

    @tool(read_only=True, needs_approval=big)
    async def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    executor = Executor([pay], project=PROJECT)
    small = await executor.check(ToolCall(id="c1", name="pay", arguments={"amount": 5}))
    large = await executor.check(ToolCall(id="c2", name="pay", arguments={"amount": 500}))
    assert (small.action, large.action) == ("allow", "ask")


async def test_pending_approval_of_this_call_is_returned(
    registry: ToolRegistry, store: ApprovalStore
) -> None:
    """After execute asked, check of the same call says ask with that pending approval."""
    executor = _executor(registry, store, ListSink())
    asked = _approval(await executor.execute(_call()))
    checked = await executor.check(_call())
    assert checked.action == "ask"
    assert checked.pending is not None and checked.pending.id == asked.id
    other = await executor.check(_call(path="b.txt"))
    assert other.action == "ask" and other.pending is None
    assert [r.id for r in await store.list_pending()] == [asked.id]
    await executor.aclose()


async def test_approved_elsewhere_is_allow_and_still_unused(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """An approval given elsewhere makes check say allow without using it; execute runs once."""
    executor = _executor(registry, store, ListSink())
    asked = _approval(await executor.execute(_call()))
    await store.resolve(asked.id, ApprovalDecision.approve(by="ana"))
    checked = await executor.check(_call())
    assert checked.action == "allow" and asked.id in (checked.reason or "")
    assert (await store.get(asked.id)).status == "approved"
    assert recorder.calls == []
    ran = await executor.execute(_call())
    assert isinstance(ran, Completed) and ran.result.text == "deleted a.txt"
    assert recorder.count("delete") == 1
    await executor.aclose()


async def test_denied_by_a_person_is_deny(registry: ToolRegistry, store: ApprovalStore) -> None:
    """A person's no for this call makes check say deny with their reason."""
    executor = _executor(registry, store, ListSink())
    asked = _approval(await executor.execute(_call()))
    await store.resolve(asked.id, ApprovalDecision.deny("not that file", by="ana"))
    checked = await executor.check(_call())
    assert checked.action == "deny" and "not that file" in (checked.reason or "")
    await executor.aclose()


async def test_session_grant_is_allow(registry: ToolRegistry, store: ApprovalStore) -> None:
    """A session grant for the tool makes check say allow in that session only."""
    executor = _executor(registry, store, ListSink())
    spec = executor.registry.get("delete")
    assert spec is not None
    fingerprint = spec.spec.fingerprint
    await store.grant_session("s1", "delete", fingerprint, project=PROJECT)
    assert (await executor.check(_call())).action == "allow"
    other = ToolCall(id="c9", name="delete", arguments={"path": "a.txt"}, session_id="s2")
    assert (await executor.check(other)).action == "ask"
    await executor.aclose()


async def test_always_rule_is_allow(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """After a person approved "always", check of the same call under a new id says allow,
    naming the standing rule; other arguments still ask."""
    executor = _executor(registry, store, ListSink())
    asked = _approval(await executor.execute(_call()))
    await executor.resume(asked.id, approve=True, scope="always")
    assert recorder.count("delete") == 1
    checked = await executor.check(_call(call_id="c2"))
    assert checked.action == "allow" and checked.rule is not None
    assert (await executor.check(_call(call_id="c3", path="b.txt"))).action == "ask"
    ran = await executor.execute(_call(call_id="c2"))
    assert isinstance(ran, Completed) and recorder.count("delete") == 2
    await executor.aclose()
