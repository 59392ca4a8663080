"""The SQLite store: persistence, file safety, and consumption raced across processes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.exceptions import ApprovalAlreadyUsed

from .helpers import Clock, make_request

pytestmark = pytest.mark.anyio

RACER = """
import os, sys, time
import anyio
from invokit.approvals import SqliteApprovalStore
from invokit.exceptions import ApprovalError

path, ready, go, *ids = sys.argv[1:]
store = SqliteApprovalStore(path)
open(ready, "w").close()
deadline = time.monotonic() + 20
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit("never started")
    time.sleep(0.001)

async def main() -> None:
    for approval_id in ids:
        try:
            await store.consume(approval_id)
        except ApprovalError as exc:
            print(approval_id, "lost", type(exc).__name__, flush=True)
        else:
            print(approval_id, "won", flush=True)
    await store.close()

anyio.run(main)
"""


async def _approved(path: Path, count: int) -> list[str]:
    store = SqliteApprovalStore(path)
    ids = []
    for n in range(count):
        request = make_request(Clock(time.time()), path=f"f{n}")
        await store.put(request)
        await store.resolve(request.id, ApprovalDecision.approve())
        ids.append(request.id)
    await store.close()
    return ids


def test_two_processes_race_consume(tmp_path: Path) -> None:
    """Processes consuming the same approvals at once: exactly one wins each approval."""
    path = tmp_path / "approvals.sqlite3"
    ids = anyio.run(_approved, path, 5)

    go = tmp_path / "go"
    racers = []
    for n in range(3):
        ready = tmp_path / f"ready{n}"
        argv = [sys.executable, "-c", RACER, str(path), str(ready), str(go), *ids]
        racers.append((ready, subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)))
    deadline = time.monotonic() + 30
    while not all(ready.exists() for ready, _ in racers):
        assert time.monotonic() < deadline, "racers did not start"
        time.sleep(0.01)
    go.touch()
    lines = []
    for _, process in racers:
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0
        lines += out.splitlines()
    for approval_id in ids:
        results = sorted(line.split()[1:] for line in lines if line.startswith(approval_id))
        assert results == [["lost", "ApprovalAlreadyUsed"]] * 2 + [["won"]]


async def test_survives_reopening(tmp_path: Path, clock: Clock) -> None:
    """Approvals, grants and standing rules persist across store instances."""
    path = tmp_path / "a.sqlite3"
    first = SqliteApprovalStore(path, clock=clock)
    request = make_request(clock)
    await first.put(request)
    await first.resolve(request.id, ApprovalDecision.approve(by="ana"))
    await first.grant_session("s1", "fs.write", "f")
    rule = await first.add_always_rule("fs.read", project="/p", by="ana")
    await first.close()

    second = SqliteApprovalStore(path, clock=clock)
    record = await second.consume(request.id)
    assert record.request == request
    assert record.decision == ApprovalDecision.approve(by="ana")
    assert await second.has_session_grant("s1", "fs.write", "f")
    assert await second.always_rules("/p") == [rule]
    with pytest.raises(ApprovalAlreadyUsed):
        await second.consume(request.id)
    await second.close()


def test_file_is_private(tmp_path: Path) -> None:
    """The database file is created 0600 inside a new 0700 directory, in WAL mode."""
    store = SqliteApprovalStore(tmp_path / "new" / "dir" / "a.sqlite3")
    anyio.run(store.put, make_request(Clock(time.time())))
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "dir").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    wal = Path(str(store.path) + "-wal")
    assert wal.exists()
    assert stat.S_IMODE(os.stat(wal).st_mode) == 0o600
    anyio.run(store.close)


def test_default_path_is_the_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a path the store lives in the user's state directory."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path / "state"))
    store = SqliteApprovalStore()
    assert store.path == tmp_path / "state" / "approvals.sqlite3"
    assert repr(store).startswith("SqliteApprovalStore(")


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("root/approvals.sqlite3", id="inside"),
        pytest.param("root/deep/er/approvals.sqlite3", id="deep-inside"),
        pytest.param("link/approvals.sqlite3", id="through-symlink"),
    ],
)
def test_refuses_tool_writable_roots(tmp_path: Path, where: str) -> None:
    """A path inside a directory tools may write is refused, even through a symlink."""
    (tmp_path / "root").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "root")
    with pytest.raises(ValueError, match="tools"):
        SqliteApprovalStore(tmp_path / where, forbidden_roots=[tmp_path / "root"])
    assert not (tmp_path / "root" / "approvals.sqlite3").exists()


def test_allows_paths_beside_roots(tmp_path: Path) -> None:
    """A sibling whose name merely starts like a root is not inside it."""
    store = SqliteApprovalStore(
        tmp_path / "root2" / "a.sqlite3", forbidden_roots=[tmp_path / "root"]
    )
    assert store.path.exists()


async def test_closed_store_refuses(tmp_path: Path) -> None:
    """Using a closed store raises instead of silently doing nothing."""
    store = SqliteApprovalStore(tmp_path / "a.sqlite3")
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.list_pending()


async def test_an_ask_reads_back_only_the_request_bound_to_its_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looking up the approval of one call among 300 approved-but-unused ones of the same tool
    turns only that call's row into a request: the others are never parsed in Python (they
    were, each time a call asked)."""
    clock = Clock(time.time())
    store = SqliteApprovalStore(tmp_path / "a.sqlite3", clock=clock)
    for index in range(300):
        other = make_request(clock, path=f"src/{index}.py")
        await store.put(other)
        await store.resolve(other.id, ApprovalDecision.approve())
    mine = make_request(clock, path="src/mine.py")
    await store.put(mine)
    await store.resolve(mine.id, ApprovalDecision.approve())

    from invokit.approvals import ApprovalRequest

    built: list[object] = []
    from_dict = ApprovalRequest.from_dict

    def counted(data: dict[str, object]) -> object:
        built.append(data)
        return from_dict(data)

    monkeypatch.setattr(ApprovalRequest, "from_dict", counted)
    found = await store.find_approved(mine.tool, mine.spec_fingerprint, mine.arguments_hash, "s1")
    assert found == mine
    assert len(built) == 1
