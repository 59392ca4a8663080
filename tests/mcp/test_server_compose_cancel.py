"""A client that cancels a compose call while the approval of one of its script's calls is
open: that approval is withdrawn like a direct call's, so no later "yes" continues the script
the client was told failed. The real server and SDK client over memory streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from invokit import Executor, Policy
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.compose import enable_compose
from invokit.exceptions import ApprovalError
from invokit.execution import JsonlAuditSink
from invokit.mcp import build_server
from tests.mcp.support import memory_session

pytestmark = pytest.mark.anyio

SCRIPT = 'fs_write(path="late.txt", content="x")\n"written"'


def _resolved(state: Path) -> list[dict[str, Any]]:
    path = state / "audit.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "approval_resolved"]


async def test_a_cancelled_compose_call_withdraws_its_childs_approval(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    state = tmp_path / "state"
    executor = Executor(
        filesystem(root),
        policy=Policy(allow=["fs.read", "compose"], ask=["fs.write"], root=root),
        approvals=SqliteApprovalStore(state / "approvals.sqlite3", forbidden_roots=[root]),
        events=[JsonlAuditSink(state / "audit.jsonl", forbidden_roots=[root])],
    )
    enable_compose(executor)
    opened = anyio.Event()
    release = anyio.Event()

    async def slow_person(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        opened.set()
        await release.wait()
        return types.ElicitResult(action="accept", content={"approve": True})

    server = build_server(executor.registry, executor)
    async with memory_session(server, elicitation_callback=slow_person) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "compose", {"code": SCRIPT})
            with anyio.fail_after(10):
                await opened.wait()
            group.cancel_scope.cancel()  # the client gives up: notifications/cancelled
        with anyio.fail_after(10):
            while not _resolved(state):  # noqa: ASYNC110 - polls the audit log
                await anyio.sleep(0.02)
        release.set()
        await anyio.sleep(0.3)
    assert (await executor.approvals.list_pending()) == []
    (record,) = _resolved(state)
    assert record["data"]["verdict"] == "withdrawn"
    approval_id = record["data"]["id"]
    with pytest.raises(ApprovalError):  # `invokit approvals approve ID` cannot revive it
        await executor.approvals.resolve(approval_id, ApprovalDecision.approve(by="cli"))
    outcome = await executor.resume(approval_id)  # nor can a resume continue the script
    assert outcome.result.is_error
    assert not (root / "late.txt").exists()
    await executor.aclose()
