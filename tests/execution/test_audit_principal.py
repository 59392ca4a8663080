"""Who called, in the audit log: a call's verified principal (``ToolCall.metadata``) is in its
``received`` record, in SQLite and PostgreSQL alike; anything else in its place is not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from invokit import Executor, Policy, ToolCall, tool
from invokit._calls import PRINCIPAL
from invokit.execution import SqliteAuditSink

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say.
    """
    return text


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("c1", {PRINCIPAL: {"iss": "https://login.example", "sub": "alice"}}),
    ("c2", {}),
    ("c3", {PRINCIPAL: {"iss": "https://login.example", "sub": 7}}),  # not text: left out
    ("c4", {PRINCIPAL: "alice"}),
]


async def _run(open_sink: Callable[[], Any]) -> dict[str, Any]:
    """Run the calls with one sink (closed with the executor), then read with another."""
    executor = Executor([echo], policy=Policy.allow_all(), events=[open_sink()])
    for call_id, metadata in CALLS:
        call = ToolCall(id=call_id, name="echo", arguments={"text": "hi"}, metadata=metadata)
        await executor.execute(call)
    await executor.aclose()
    reader = open_sink()
    try:
        return {r["call_id"]: r["data"] for r in reader.records(type="received")}
    finally:
        reader.close()


def _check(received: dict[str, Any]) -> None:
    assert received["c1"]["principal"] == {"iss": "https://login.example", "sub": "alice"}
    assert all("principal" not in received[c] for c in ("c2", "c3", "c4"))


async def test_sqlite_audit_names_the_caller(tmp_path: Path) -> None:
    """The SQLite audit log's received record carries the principal."""
    _check(await _run(lambda: SqliteAuditSink(tmp_path / "audit.sqlite3")))


async def test_postgres_audit_names_the_caller(postgres_url: str) -> None:
    """The PostgreSQL audit log's received record carries the principal."""
    from invokit.postgres import PostgresAuditSink

    _check(await _run(lambda: PostgresAuditSink(postgres_url)))
