"""An approval file written before standing rules had a scope: migrated once, its old rules kept
only to be seen and revoked, never applied."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

from invokit import ToolCall, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.approvals._sqlite import SCHEMA_VERSION
from invokit.execution import Completed, Executor, Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

# The schema of version 0 (invokit before scoped rules), as it created its file.
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    decision TEXT,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    resolved_at REAL,
    consumed_at REAL
);
CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status, created_at);
CREATE TABLE IF NOT EXISTS session_grants (
    session_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    spec_fingerprint TEXT NOT NULL,
    granted_at REAL NOT NULL,
    PRIMARY KEY (session_id, tool, spec_fingerprint)
);
CREATE TABLE IF NOT EXISTS always_rules (
    rule TEXT PRIMARY KEY,
    added_at REAL NOT NULL
);
"""


def old_file(path: Path, rules: list[str]) -> None:
    """A version-0 approval file holding global "always" rules."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    for at, rule in enumerate(rules):
        conn.execute("INSERT INTO always_rules VALUES (?, ?)", (rule, 1000.0 + at))
    conn.commit()
    conn.close()
    path.chmod(0o600)


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        return version
    finally:
        conn.close()


async def test_old_rules_become_legacy_and_apply_nowhere(tmp_path: Path) -> None:
    """Migrated global rules are listed as legacy, belong to no project, and run nothing."""
    path = tmp_path / "state" / "approvals.sqlite3"
    old_file(path, ["wipe", "shell(exec:rm -rf /)"])
    ran: list[str] = []

    @tool(destructive=True)
    async def wipe() -> str:
        """Wipe everything."""
        ran.append("wipe")
        return "wiped"

    store = SqliteApprovalStore(path)
    executor = Executor(ToolRegistry([wipe]), approvals=store, policy=Policy(root=tmp_path))
    outcome = await executor.execute(ToolCall(id="1", name="wipe", arguments={}))
    assert isinstance(outcome, Interrupted)
    assert ran == []
    everything = await store.always_rules()
    assert [(r.rule, r.legacy, r.project) for r in everything] == [
        ("wipe", True, None),
        ("shell(exec:rm -rf /)", True, None),
    ]
    assert await store.always_rules(executor.project) == []
    assert user_version(path) == SCHEMA_VERSION
    # A person revokes a legacy rule by its id.
    assert await store.remove_always_rule(everything[0].id) == [everything[0]]
    await executor.aclose()


async def test_migration_runs_once(tmp_path: Path) -> None:
    """Opening a migrated file again keeps its rules; the old table is gone."""
    path = tmp_path / "state" / "approvals.sqlite3"
    old_file(path, ["fs.read"])
    first = SqliteApprovalStore(path)
    migrated = await first.always_rules()
    recorded = await first.add_always_rule("fs.write(write:a.txt)", project="/p")
    await first.close()
    second = SqliteApprovalStore(path)
    assert await second.always_rules() == [*migrated, recorded]
    await second.close()
    conn = sqlite3.connect(path)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert "always_rules" not in tables


async def test_a_newer_file_is_refused(tmp_path: Path) -> None:
    """A file from a newer schema is not silently read with the wrong meaning."""
    path = tmp_path / "state" / "approvals.sqlite3"
    old_file(path, [])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(ValueError, match="newer invokit"):
        SqliteApprovalStore(path)


async def test_approve_always_after_migration_is_scoped(tmp_path: Path) -> None:
    """An "always" approval on a migrated file records a rule for this project that runs the
    call again without asking."""
    path = tmp_path / "state" / "approvals.sqlite3"
    old_file(path, [])
    ran: list[str] = []

    @tool(destructive=True)
    async def wipe() -> str:
        """Wipe everything."""
        ran.append("wipe")
        return "wiped"

    store = SqliteApprovalStore(path)
    executor = Executor(ToolRegistry([wipe]), approvals=store, policy=Policy(root=tmp_path))
    first = await executor.execute(ToolCall(id="1", name="wipe", arguments={}))
    assert isinstance(first, Interrupted)
    done = await executor.resume(first.interrupt.id, approve=True, scope="always", by="ana")
    assert isinstance(done, Completed)
    again = await executor.execute(ToolCall(id="2", name="wipe", arguments={}))
    assert isinstance(again, Completed)
    (rule,) = await store.always_rules()
    assert (rule.rule, rule.project, rule.by) == ("wipe", executor.project, "ana")
    assert rule.project == Policy(root=tmp_path).root
    assert ran == ["wipe", "wipe"]
    await executor.aclose()


OPENER = """
import sys, anyio
from invokit.approvals import SqliteApprovalStore
from invokit.approvals._sqlite import SCHEMA_VERSION

async def main():
    store = SqliteApprovalStore(sys.argv[1])
    print(len(await store.always_rules()))
    await store.close()

anyio.run(main)
"""


async def test_processes_opening_an_old_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    """Four processes open a version-0 file together: each sees the rules moved exactly once."""
    path = tmp_path / "state" / "approvals.sqlite3"
    old_file(path, ["a", "b", "c"])
    seen: list[str] = []

    async def open_it() -> None:
        done = await anyio.run_process([sys.executable, "-c", OPENER, str(path)], check=True)
        seen.append(done.stdout.decode().strip())

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(open_it)
    assert seen == ["3"] * 4
    assert user_version(path) == SCHEMA_VERSION
