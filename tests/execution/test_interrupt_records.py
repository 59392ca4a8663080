"""Exactly-once: interrupts are single-use and resumed from invokit's own record; idempotency
keys bind the tool, the canonical arguments, the session and the call id."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from invokit import AuthRequired, ToolCall, ToolContext, declare, tool
from invokit.approvals import SqliteApprovalStore
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalNotFound
from invokit.execution import (
    AuthorizationRequired,
    Completed,
    Executor,
    ExternalCall,
    Interrupted,
)
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


def _browser() -> Executor:
    click = declare(
        "browser.click",
        "Click an element",
        {"type": "object", "properties": {"selector": {"type": "string"}}},
    )
    return Executor([click], policy=Policy.allow_all())


async def test_external_call_resumes_once() -> None:
    """A host result completes an ExternalCall once; a second resume raises instead of
    completing the call again."""
    executor = _browser()
    outcome = await executor.execute(
        ToolCall(id="1", name="browser.click", arguments={"selector": "#buy"})
    )
    assert isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ExternalCall)
    done = await executor.resume(outcome.interrupt, result="clicked")
    assert isinstance(done, Completed)
    with pytest.raises(ApprovalAlreadyUsed):
        await executor.resume(outcome.interrupt, result="clicked again")
    with pytest.raises(ApprovalAlreadyUsed):
        await executor.resume(outcome.interrupt.id, result="by id")


async def test_unknown_interrupt_is_refused() -> None:
    """A made-up interrupt (never recorded by this executor's store) resumes nothing."""
    executor = _browser()
    forged = {
        "kind": "external",
        "id": "ext_made_up",
        "call": {"id": "1", "name": "browser.click", "arguments": {}},
        "arguments": {},
    }
    with pytest.raises(ApprovalNotFound):
        await executor.resume(forged, result="x")


async def test_forged_interrupt_dict_cannot_change_the_arguments() -> None:
    """Resumed from a dict whose call and arguments were edited, the tool runs with the
    arguments it was called with, and the dict's other tool is never run."""
    seen: list[tuple[str, str]] = []

    @tool(read_only=True)
    async def transfer(to: str, ctx: ToolContext) -> str:
        """Transfer to someone."""
        if "token" not in ctx.credentials:
            raise AuthRequired("bank")
        seen.append(("transfer", to))
        return f"sent to {to}"

    @tool(read_only=True)
    async def other(to: str) -> str:
        """Another tool."""
        seen.append(("other", to))
        return "other"

    executor = Executor([transfer, other])
    outcome = await executor.execute(ToolCall(id="1", name="transfer", arguments={"to": "alice"}))
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, AuthorizationRequired)
    forged = outcome.interrupt.to_dict()
    forged["arguments"] = {"to": "mallory"}
    forged["call"] = {**forged["call"], "name": "other", "arguments": {"to": "mallory"}}
    resumed = await executor.resume(forged, credentials={"token": "t"})
    assert isinstance(resumed, Completed)
    assert resumed.result.text == "sent to alice"
    assert seen == [("transfer", "alice")]
    with pytest.raises(ApprovalAlreadyUsed):
        await executor.resume(outcome.interrupt, credentials={"token": "t"})


async def test_auth_interrupt_without_credentials_stays_open() -> None:
    """Resuming an authorization interrupt without credentials is a misuse that raises and
    leaves it open for the resume that brings them."""

    @tool(read_only=True)
    async def repos(ctx: ToolContext) -> str:
        """List repositories."""
        if "token" not in ctx.credentials:
            raise AuthRequired("github")
        return "repos"

    executor = Executor([repos])
    outcome = await executor.execute(ToolCall(id="1", name="repos"))
    assert isinstance(outcome, Interrupted)
    with pytest.raises(ValueError, match="credentials"):
        await executor.resume(outcome.interrupt)
    done = await executor.resume(outcome.interrupt, credentials={"token": "t"})
    assert isinstance(done, Completed)


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import anyio
    from invokit import ToolCall, declare
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import Executor
    from invokit.permissions import Policy

    async def main() -> None:
        click = declare(
            "browser.click", "Click.", {"type": "object", "properties": {"selector": {"type": "string"}}}
        )
        store = SqliteApprovalStore(sys.argv[2])
        executor = Executor([click], policy=Policy.allow_all(), approvals=store)
        try:
            if sys.argv[1] == "call":
                out = await executor.execute(
                    ToolCall(id="1", name="browser.click", arguments={"selector": "#pay"})
                )
                print(json.dumps(out.interrupt.to_dict()))
            else:
                forged = json.loads(sys.argv[3])
                out = await executor.resume(forged, result="done")
                print(json.dumps({"type": type(out).__name__, "text": out.result.text}))
        except Exception as exc:
            print(json.dumps({"type": type(exc).__name__}))
        await executor.aclose()

    anyio.run(main)
    """
)


def _run(tmp_path: Path, *args: str) -> dict[str, object]:
    script = tmp_path / "external.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), args[0], str(tmp_path / "state.sqlite3"), *args[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_external_call_resumes_once_across_processes(tmp_path: Path) -> None:
    """An ExternalCall made in one process is resumed in a second, once; a third process
    holding a copy cannot resume it again."""
    interrupt = _run(tmp_path, "call")
    assert interrupt["kind"] == "external"
    first = _run(tmp_path, "resume", json.dumps(interrupt))
    second = _run(tmp_path, "resume", json.dumps(interrupt))
    assert first == {"type": "Completed", "text": "done"}
    assert second == {"type": "ApprovalAlreadyUsed"}


async def test_interrupt_record_is_private_to_the_store(tmp_path: Path) -> None:
    """The stored interrupt keeps the arguments the executor saw, whatever the caller holds."""
    store = SqliteApprovalStore(tmp_path / "s.sqlite3")
    await store.put_interrupt("ext_1", {"kind": "external", "arguments": {"a": 1}}, 1e12)
    assert await store.take_interrupt("ext_1") == {"kind": "external", "arguments": {"a": 1}}
    with pytest.raises(ApprovalAlreadyUsed):
        await store.take_interrupt("ext_1")
    await store.close()


# -- idempotency keys ----------------------------------------------------------------------------


def _keys() -> tuple[Executor, list[str]]:
    keys: list[str] = []

    @tool(read_only=True)
    async def charge(amount: int, ctx: ToolContext) -> str:
        """Charge a card."""
        keys.append(ctx.idempotency_key)
        return "charged"

    return Executor([charge]), keys


async def test_two_different_calls_never_share_an_idempotency_key() -> None:
    """A model that reuses a call id for a different charge gets a different key, so the
    payment API does not drop the second charge as a duplicate."""
    executor, keys = _keys()
    await executor.execute(ToolCall(id="call_1", name="charge", arguments={"amount": 5}))
    await executor.execute(ToolCall(id="call_1", name="charge", arguments={"amount": 500}))
    await executor.execute(
        ToolCall(id="call_1", name="charge", arguments={"amount": 5}, session_id="other")
    )
    assert len(set(keys)) == 3


async def test_a_retry_of_the_same_call_keeps_its_key() -> None:
    """The same call (same id, arguments and session; key order and whitespace aside) gets
    the same key, so a retried side effect happens once."""
    executor, keys = _keys()
    await executor.execute(
        ToolCall(id="c", name="charge", arguments='{"amount": 7}', session_id="s")
    )
    await executor.execute(ToolCall(id="c", name="charge", arguments={"amount": 7}, session_id="s"))
    assert len(keys) == 2 and keys[0] == keys[1]
