"""A resume is decided again, and a person's "no" in any channel is final.

Each scenario crosses processes the way a person does: the call is asked in one process, the
person answers in another (``invokit approvals approve`` writes the store), and a third resumes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from invokit import ToolCall, tool
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.exceptions import ApprovalAlreadyUsed
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    from invokit import ToolCall, tool
    from invokit.approvals import ApprovalDecision, SqliteApprovalStore
    from invokit.execution import Executor
    from invokit.permissions import Policy

    action, work = sys.argv[1], Path(sys.argv[2])

    @tool(destructive=True)
    def wipe(name: str) -> str:
        "Write a marker file standing for a side effect."
        with (work / "ran.txt").open("a") as out:
            out.write(name + "\\n")
        return "wiped " + name

    async def main() -> None:
        store = SqliteApprovalStore(work / "state" / "approvals.sqlite3")
        policy = Policy(deny=json.loads(sys.argv[3]))
        executor = Executor([wipe], approvals=store, policy=policy)
        try:
            if action == "ask":
                out = await executor.execute(
                    ToolCall(id="c1", name="wipe", arguments={"name": "prod"})
                )
                print(json.dumps({"id": out.interrupt.id}))
            elif action == "cli-approve":  # what `invokit approvals approve ID` does
                await store.resolve(sys.argv[4], ApprovalDecision.approve(by="cli"))
                print(json.dumps({"ok": True}))
            else:
                kwargs = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
                out = await executor.resume(sys.argv[4], **kwargs)
                error = out.result.error
                print(json.dumps({"type": type(out).__name__, "kind": error and error.kind}))
        except Exception as exc:
            print(json.dumps({"type": type(exc).__name__}))
        await executor.aclose()

    anyio.run(main)
    """
)


def _run(work: Path, action: str, *args: str, deny: tuple[str, ...] = ()) -> dict[str, object]:
    script = work / "flow.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), action, str(work), json.dumps(list(deny)), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _ran(work: Path) -> str:
    marker = work / "ran.txt"
    return marker.read_text() if marker.exists() else ""


def test_resumed_call_denied_by_the_current_policy_does_not_run(tmp_path: Path) -> None:
    """Approved, then resumed in a process whose policy denies the tool: it fails ``denied``,
    the approval is used up, and a later resume under the old policy cannot run it either."""
    asked = _run(tmp_path, "ask")
    approval_id = str(asked["id"])
    denied = _run(tmp_path, "resume", approval_id, '{"approve": true}', deny=("wipe",))
    assert denied == {"type": "Failed", "kind": "denied"}
    later = _run(tmp_path, "resume", approval_id, '{"approve": true}')
    assert later == {"type": "ApprovalAlreadyUsed"}
    assert _ran(tmp_path) == ""


def test_no_after_an_approval_elsewhere_withdraws_it(tmp_path: Path) -> None:
    """A person approves in the CLI; the client then says no: nothing runs, and no later
    resume (by id, with or without an answer) can run the call."""
    approval_id = str(_run(tmp_path, "ask")["id"])
    assert _run(tmp_path, "cli-approve", approval_id) == {"ok": True}
    no = _run(tmp_path, "resume", approval_id, '{"approve": false, "reason": "not prod"}')
    assert no == {"type": "Failed", "kind": "approval_denied"}
    again = _run(tmp_path, "resume", approval_id)
    yes = _run(tmp_path, "resume", approval_id, '{"approve": true}')
    assert again == yes == {"type": "Failed", "kind": "approval_denied"}
    assert _ran(tmp_path) == ""


def test_edited_arguments_on_an_approved_request_run_nothing(tmp_path: Path) -> None:
    """A "yes" with edited arguments on a request already approved for its original arguments
    runs neither; resumed plainly it runs what was approved, once."""
    approval_id = str(_run(tmp_path, "ask")["id"])
    _run(tmp_path, "cli-approve", approval_id)
    edited = _run(
        tmp_path, "resume", approval_id, '{"approve": true, "arguments": {"name": "staging"}}'
    )
    assert edited == {"type": "Failed", "kind": "approval_conflict"}
    assert _ran(tmp_path) == ""
    plain = _run(tmp_path, "resume", approval_id)
    assert plain == {"type": "Completed", "kind": None}
    assert _ran(tmp_path) == "prod\n"


async def test_yes_on_a_denied_request_stays_denied(tmp_path: Path) -> None:
    """Once denied, a request never runs, whoever says yes afterwards."""
    ran: list[str] = []

    @tool(destructive=True)
    async def wipe(name: str) -> str:
        """Wipe."""
        ran.append(name)
        return "wiped"

    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")
    executor = Executor([wipe], approvals=store)
    outcome = await executor.execute(ToolCall(id="1", name="wipe", arguments={"name": "x"}))
    assert isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired)
    approval_id = outcome.interrupt.id
    await store.resolve(approval_id, ApprovalDecision.deny("no", by="cli"))
    for answer in (True, None):
        resumed = await executor.resume(approval_id, approve=answer)
        assert isinstance(resumed, Failed)
        assert resumed.result.error is not None
        assert resumed.result.error.kind == "approval_denied"
    assert ran == []
    await executor.aclose()


async def test_no_after_the_call_ran_raises(tmp_path: Path) -> None:
    """A "no" that comes after the approved call already ran says so (ApprovalAlreadyUsed)
    instead of pretending it stopped anything."""

    @tool(destructive=True)
    async def wipe(name: str) -> str:
        """Wipe."""
        return "wiped"

    executor = Executor([wipe], approvals=SqliteApprovalStore(tmp_path / "a.sqlite3"))
    outcome = await executor.execute(ToolCall(id="1", name="wipe", arguments={"name": "x"}))
    assert isinstance(outcome, Interrupted)
    assert isinstance(await executor.resume(outcome.interrupt.id, approve=True), Completed)
    with pytest.raises(ApprovalAlreadyUsed):
        await executor.resume(outcome.interrupt.id, approve=False)
    await executor.aclose()


async def test_approval_satisfies_ask_never_deny_in_process(tmp_path: Path) -> None:
    """Two executors on one store: the one whose policy denies the tool cannot run a request
    approved under the other's ``ask``."""
    ran: list[str] = []

    @tool(destructive=True)
    async def wipe(name: str) -> str:
        """Wipe."""
        ran.append(name)
        return "wiped"

    path = tmp_path / "a.sqlite3"
    asking = Executor([wipe], approvals=SqliteApprovalStore(path))
    denying = Executor([wipe], approvals=SqliteApprovalStore(path), policy=Policy(deny=["wipe"]))
    outcome = await asking.execute(ToolCall(id="1", name="wipe", arguments={"name": "x"}))
    assert isinstance(outcome, Interrupted)
    resumed = await denying.resume(outcome.interrupt.id, approve=True)
    assert isinstance(resumed, Failed) and resumed.result.error is not None
    assert resumed.result.error.kind == "denied"
    with pytest.raises(ApprovalAlreadyUsed):
        await asking.resume(outcome.interrupt.id)
    assert ran == []
    await asking.aclose()
    await denying.aclose()
