"""Executions of the same call at once take turns: one question for one call, a person's "no"
holds for the other execution, and an approval used by one is never used again by the other
(found by an adversarial review: on SQLite two executions each stored a question, and a "yes"
to both ran the call twice; an approval used by the other execution raised out of execute)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from invokit import ToolCall, ToolRegistry, tool
from invokit.approvals import (
    ApprovalRequest,
    ApprovalStore,
    MemoryApprovalStore,
    SqliteApprovalStore,
)
from invokit.execution import Completed, Executor, Failed, Interrupted, Outcome

pytestmark = pytest.mark.anyio

PROJECT = "/work/project"
ran: list[str] = []


@tool(destructive=True)
async def delete(path: str) -> str:
    """Delete a file (recorded, not done)."""
    ran.append(path)
    return "deleted"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApprovalStore]:
    ran.clear()
    if request.param == "memory":
        yield MemoryApprovalStore()
    else:
        yield SqliteApprovalStore(tmp_path / "approvals.sqlite3")


CALL = ToolCall(id="c1", name="delete", arguments={"path": "a.txt"}, session_id="s1")


async def _both(*executors: Executor) -> list[Outcome]:
    """Each executor executes ``CALL`` at the same time."""
    outcomes: list[Outcome | None] = [None] * len(executors)

    async def one(index: int, executor: Executor) -> None:
        outcomes[index] = await executor.execute(CALL)

    async with anyio.create_task_group() as group:
        for index, executor in enumerate(executors):
            group.start_soon(one, index, executor)
    assert all(outcome is not None for outcome in outcomes)
    return [outcome for outcome in outcomes if outcome is not None]


def _answers(*answers: bool) -> Callable[[ApprovalRequest], Awaitable[bool]]:
    """An inline approver giving ``answers`` in turn, after a turn of the loop each."""
    given = iter(answers)

    async def approver(request: ApprovalRequest) -> bool:
        await anyio.sleep(0.01)
        return next(given)

    return approver


async def test_two_executions_of_one_call_ask_one_question(store: ApprovalStore) -> None:
    executor = Executor(ToolRegistry([delete]), approvals=store, project=PROJECT)
    first, second = await _both(executor, executor)
    assert isinstance(first, Interrupted) and isinstance(second, Interrupted)
    assert first.interrupt.id == second.interrupt.id
    assert len(await store.list_pending()) == 1
    assert ran == []
    await executor.aclose()


async def test_a_no_to_one_execution_holds_for_the_other(store: ApprovalStore) -> None:
    executor = Executor(
        ToolRegistry([delete]), approvals=store, project=PROJECT, approver=_answers(False, True)
    )
    outcomes = await _both(executor, executor)
    assert [type(o).__name__ for o in outcomes] == ["Failed", "Failed"]
    assert {o.result.error.kind for o in outcomes if o.result.error} == {"approval_denied"}
    assert ran == []
    await executor.aclose()


async def test_each_run_has_its_own_yes(store: ApprovalStore) -> None:
    """The second execution asks after the first ran (its question used): one run per yes."""
    executor = Executor(
        ToolRegistry([delete]), approvals=store, project=PROJECT, approver=_answers(True, False)
    )
    outcomes = await _both(executor, executor)
    assert sorted(type(o).__name__ for o in outcomes) == ["Completed", "Failed"]
    assert ran == ["a.txt"]
    await executor.aclose()


async def test_an_approval_used_by_another_executor_is_a_result(tmp_path: Path) -> None:
    """Two executors on one store (two processes, say) rejoin the same waiting question and
    both ask their approver: one runs the call, the other reads ``approval_used``; nothing
    raises and nothing runs twice."""
    ran.clear()
    path = tmp_path / "approvals.sqlite3"
    asker = Executor(ToolRegistry([delete]), approvals=SqliteApprovalStore(path), project=PROJECT)
    assert isinstance(await asker.execute(CALL), Interrupted)
    answering = [
        Executor(
            ToolRegistry([delete]),
            approvals=SqliteApprovalStore(path),
            project=PROJECT,
            approver=_answers(True),
        )
        for _ in range(2)
    ]
    outcomes = await _both(*answering)
    assert sorted(type(o).__name__ for o in outcomes) == ["Completed", "Failed"]
    (failed,) = [o for o in outcomes if isinstance(o, Failed)]
    assert failed.result.error is not None and failed.result.error.kind == "approval_used"
    assert ran == ["a.txt"]
    assert next(o for o in outcomes if isinstance(o, Completed)).result.text == "deleted"
    for executor in (asker, *answering):
        await executor.aclose()
