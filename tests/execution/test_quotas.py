"""The quota step: counted after the decision and approval, before the call runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from invokit import Completed, Executor, Failed, Quota, ToolCall, tool
from invokit.approvals import SqliteApprovalStore
from invokit.execution import Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


def _counter() -> tuple[list[str], object]:
    ran: list[str] = []

    @tool(read_only=True, tags=["net"])
    def fetch(url: str) -> str:
        """Fetch a page (records the call)."""
        ran.append(url)
        return url

    return ran, fetch


async def test_policy_quota_per_session_refuses_and_says_when() -> None:
    """A tag quota of the policy refuses the third call of a session and names the retry time;
    another session has its own count."""
    ran, fetch = _counter()
    policy = Policy(allow=["*"], quotas=[Quota(tag="net", calls=2, window=60)])
    executor = Executor([fetch], policy=policy)  # type: ignore[list-item]
    outcomes = [
        await executor.execute(
            ToolCall(id=f"c{i}", name="fetch", arguments={"url": str(i)}, session_id="a")
        )
        for i in range(3)
    ]
    assert [type(o) for o in outcomes] == [Completed, Completed, Failed]
    refused = outcomes[2].result
    assert refused.error is not None and refused.error.kind == "quota_exceeded"
    assert isinstance(refused.structured, dict) and refused.structured["retry_at"] is not None
    assert ran == ["0", "1"]
    other = await executor.execute(
        ToolCall(id="d", name="fetch", arguments={"url": "x"}, session_id="b")
    )
    assert isinstance(other, Completed)


async def test_window_resets_on_time() -> None:
    """After the window has passed, the tool may run again."""

    @tool(read_only=True, quota=Quota(calls=1, window=0.3))
    def ping() -> str:
        """Answer pong."""
        return "pong"

    executor = Executor([ping])
    assert isinstance(await executor.execute(ToolCall(id="1", name="ping")), Completed)
    assert isinstance(await executor.execute(ToolCall(id="2", name="ping")), Failed)
    await anyio.sleep(0.35)
    assert isinstance(await executor.execute(ToolCall(id="3", name="ping")), Completed)


async def test_a_denied_call_uses_no_quota_and_an_approved_one_does() -> None:
    """Quotas count calls about to run: a denied call is not counted; a call resumed after its
    approval is, and one beyond the quota does not run even though it was approved."""
    ran: list[int] = []

    @tool(destructive=True, quota=Quota(calls=1, per="project"))
    def launch(n: int) -> int:
        """Launch."""
        ran.append(n)
        return n

    executor = Executor([launch])
    first = await executor.execute(ToolCall(id="a", name="launch", arguments={"n": 1}))
    second = await executor.execute(ToolCall(id="b", name="launch", arguments={"n": 2}))
    assert isinstance(first, Interrupted) and isinstance(second, Interrupted)
    assert isinstance(await executor.resume(first.interrupt.id, approve=True), Completed)
    late = await executor.resume(second.interrupt.id, approve=True)
    assert isinstance(late, Failed) and late.result.error is not None
    assert late.result.error.kind == "quota_exceeded"
    assert "No more calls are allowed" in late.result.text
    assert ran == [1]


async def test_denied_calls_are_not_counted() -> None:
    """A call the policy denies never reaches the quota step."""

    @tool(read_only=True, quota=Quota(calls=1))
    def look(path: str) -> str:
        """Look."""
        return path

    executor = Executor([look], policy=Policy(allow=["*"], deny=["look"]))
    assert isinstance(
        await executor.execute(ToolCall(id="1", name="look", arguments={"path": "a"})), Failed
    )
    executor.policy = Policy(allow=["*"])
    assert isinstance(
        await executor.execute(ToolCall(id="2", name="look", arguments={"path": "a"})), Completed
    )


WORKER = textwrap.dedent(
    """
    import json, sys
    import anyio
    from invokit import Executor, Quota, ToolCall, tool
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import Completed

    @tool(read_only=True, quota=Quota(calls=7, per="project", window=3600))
    def tick(n: int) -> int:
        "Count."
        return n

    async def main() -> None:
        executor = Executor([tick], approvals=SqliteApprovalStore(sys.argv[1]), project="p")
        done = 0
        for i in range(6):
            outcome = await executor.execute(ToolCall(id=str(i), name="tick", arguments={"n": i}))
            done += isinstance(outcome, Completed)
        await executor.aclose()
        print(json.dumps({"done": done}))

    anyio.run(main)
    """
)


def test_two_processes_sharing_one_sqlite_store_never_exceed_the_quota(tmp_path: Path) -> None:
    """Two processes each try six calls at once; together exactly seven run."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    store = tmp_path / "state" / "approvals.sqlite3"
    anyio.run(SqliteApprovalStore(store).close)  # created once, so neither worker migrates
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(store)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    done = [
        json.loads(w.communicate(timeout=60)[0].strip().splitlines()[-1])["done"] for w in workers
    ]
    assert sum(done) == 7


async def test_a_rule_quota_counts_only_the_calls_its_rule_matches(tmp_path: Path) -> None:
    """A quota on the rule ``fs.write(write:logs/**)`` limits writes below logs/ (its target
    matched against the call's permission requests), while other writes of the same tool run
    freely; a TOML quota table with a rule reads back the same."""
    from invokit.builtin.filesystem import filesystem

    (tmp_path / "logs").mkdir()
    quota = Quota(rule="fs.write(write:logs/**)", calls=1, per="project")
    policy = Policy(allow=["fs.*"], quotas=[quota], root=tmp_path)
    executor = Executor(filesystem(tmp_path), policy=policy)

    async def write(i: int, path: str) -> Completed | Failed | Interrupted:
        args = {"path": path, "content": "x"}
        return await executor.execute(ToolCall(id=f"w{i}", name="fs.write", arguments=args))

    first, second = await write(1, "logs/a.txt"), await write(2, "logs/b.txt")
    assert isinstance(first, Completed) and isinstance(second, Failed)
    assert second.result.error is not None and second.result.error.kind == "quota_exceeded"
    assert not (tmp_path / "logs" / "b.txt").exists()
    for i in range(3, 6):
        assert isinstance(await write(i, f"notes{i}.txt"), Completed)
    again = Policy.from_toml_text(
        '[policy]\nallow = ["fs.*"]\n[[policy.quota]]\nrule = "fs.write(write:logs/**)"\n'
        'calls = 1\nper = "project"\n'
    )
    assert again.quotas == (quota,)
    with pytest.raises(ValueError, match="not a policy rule"):
        Quota(rule="fs.write(", calls=1)
