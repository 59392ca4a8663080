"""A process that asks a question inside a server's lease and is stopped right after its store
recorded it, before the lease was ever renewed: the lease tests kill it with SIGKILL there.

``python -m tests.cli.stalled_asker STORE`` (a SQLite file or a PostgreSQL URL) prints
``stored ID`` once the question is in the store, then waits forever inside the store's call.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from invokit import Executor, Policy, ToolCall, ToolRegistry, tool
from invokit.approvals import ApprovalRequest, ApprovalStore, SqliteApprovalStore
from invokit.approvals.internal import LeaseKeeper, leased

LEASE = 2.0


@tool
def write_note(text: str) -> str:
    """Write a note (the policy asks about it)."""
    return text


async def _stalled(request: ApprovalRequest) -> None:
    print("stored", request.id, flush=True)
    await anyio.sleep_forever()


def stalling(store: Any) -> None:
    """Make ``store`` stop forever right after it recorded a question, either way."""
    put, put_leased = store.put, getattr(store, "put_leased", None)

    async def stalled_put(request: ApprovalRequest) -> None:
        await put(request)
        await _stalled(request)

    async def stalled_put_leased(request: ApprovalRequest, until: float) -> None:
        assert put_leased is not None
        await put_leased(request, until)
        await _stalled(request)

    store.put = stalled_put
    if put_leased is not None:  # a store from before questions were born leased has none
        store.put_leased = stalled_put_leased


def open_store(where: str) -> ApprovalStore:
    if where.startswith("postgres"):
        from invokit.postgres import PostgresApprovalStore

        return PostgresApprovalStore(where)
    return SqliteApprovalStore(Path(where))


async def main(where: str) -> None:
    store = open_store(where)
    stalling(store)
    executor = Executor(
        ToolRegistry([write_note]), policy=Policy(ask=["write_note"]), approvals=store
    )
    keeper = LeaseKeeper(store, ttl=LEASE)
    async with anyio.create_task_group() as group:
        group.start_soon(keeper.run)
        while not keeper.running:
            await anyio.lowlevel.checkpoint()
        with leased(keeper, lambda record: None):
            await executor.execute(
                ToolCall(id="c1", name="write_note", arguments={"text": "hi"}, session_id="s1")
            )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
