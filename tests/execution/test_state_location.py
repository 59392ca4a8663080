"""The executor keeps approvals and the audit log out of every folder its tools may write."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit.approvals import SqliteApprovalStore
from invokit.builtin.filesystem import filesystem
from invokit.builtin.shell import shell
from invokit.execution import Executor, JsonlAuditSink, SqliteAuditSink

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("approvals.db", id="in-the-root"),
        pytest.param(".invokit/approvals.db", id="in-a-subfolder"),
    ],
)
async def test_an_approval_db_inside_a_filesystem_root_is_refused(root: Path, where: str) -> None:
    """An approval database that fs.delete or fs.write could reach is refused at construction."""
    store = SqliteApprovalStore(root / where)
    try:
        with pytest.raises(ValueError, match="approval store") as caught:
            Executor(filesystem(root), approvals=store)
        assert "fs." in str(caught.value)
    finally:
        await store.close()


async def test_the_check_sees_through_prefixed_tools(root: Path) -> None:
    """A prefixed (renamed) filesystem toolset is checked as the tools it wraps."""
    store = SqliteApprovalStore(root / "approvals.db")
    try:
        with pytest.raises(ValueError, match="approval store"):
            Executor(filesystem(root).prefixed("work"), approvals=store)
    finally:
        await store.close()


async def test_a_shell_root_counts_too(root: Path) -> None:
    """A shell tool's root is writable by its commands: no approval database there either."""
    store = SqliteApprovalStore(root / "approvals.db")
    try:
        with pytest.raises(ValueError, match="approval store"):
            Executor(shell(root=root, allow=["ls"]), approvals=store)
    finally:
        await store.close()


@pytest.mark.parametrize("sink_type", [JsonlAuditSink, SqliteAuditSink], ids=["jsonl", "sqlite"])
def test_an_audit_log_inside_a_filesystem_root_is_refused(
    root: Path, sink_type: type[JsonlAuditSink] | type[SqliteAuditSink]
) -> None:
    """An audit log a tool could erase or forge is refused at construction."""
    sink = sink_type(root / "logs" / "audit")
    try:
        with pytest.raises(ValueError, match="audit log"):
            Executor(filesystem(root), events=[sink])
    finally:
        sink.close()


async def test_state_outside_every_root_is_accepted(tmp_path: Path, root: Path) -> None:
    """A store and a log beside the root, and any store next to a read-only toolset, are fine."""
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.db")
    sink = JsonlAuditSink(tmp_path / "state" / "audit.jsonl")
    inside = SqliteApprovalStore(root / "approvals.db")
    try:
        Executor(filesystem(root), approvals=store, events=[sink])
        Executor(filesystem(root, writable=False), approvals=inside)
    finally:
        sink.close()
        await store.close()
        await inside.close()


async def test_a_linked_root_is_resolved(tmp_path: Path, root: Path) -> None:
    """A tool root given through a link still covers the database in the folder it names."""
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    store = SqliteApprovalStore(root / "approvals.db")
    try:
        with pytest.raises(ValueError, match="approval store"):
            Executor(filesystem(alias), approvals=store)
    finally:
        await store.close()
