"""Standing approvals through the real executor: a session grant stops at an ask rule's target,
an "always" rule stays in its project, and the store decides (rules added or revoked elsewhere
count at once)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from invokit import ToolCall
from invokit.approvals import SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.execution import ApprovalRequired, Completed, Executor, Interrupted, Outcome
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


def _asked(outcome: Outcome) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted), outcome
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def _write(call_id: str, path: str, session: str | None = "s1") -> ToolCall:
    return ToolCall(
        id=call_id,
        name="fs.write",
        arguments={"path": path, "content": "x", "create_parents": True},
        session_id=session,
    )


async def test_session_grant_does_not_cover_an_ask_target(tmp_path: Path) -> None:
    """Approving fs.write a.txt for the session lets b.txt run, but a write to secrets/key
    that an ask rule names is asked about again, every time."""
    executor = Executor(
        filesystem(tmp_path),
        policy=Policy(ask=["fs.write(secrets/**)"], root=tmp_path),
    )
    first = _asked(await executor.execute(_write("1", "a.txt")))
    assert not first.request.reason.startswith("policy rule")
    done = await executor.resume(first.id, approve=True, scope="session", by="ana")
    assert isinstance(done, Completed)
    assert isinstance(await executor.execute(_write("2", "b.txt")), Completed)

    secret = _asked(await executor.execute(_write("3", "secrets/key")))
    assert secret.request.rule == "fs.write(secrets/**)"
    assert not (tmp_path / "secrets" / "key").exists()
    # Approving that one write for the session still does not cover the next one.
    assert isinstance(await executor.resume(secret.id, approve=True, scope="session"), Completed)
    (tmp_path / "secrets" / "key").unlink()
    _asked(await executor.execute(_write("4", "secrets/key")))
    assert not (tmp_path / "secrets" / "key").exists()
    # Another session has no grant at all.
    _asked(await executor.execute(_write("5", "c.txt", session="s2")))
    await executor.aclose()


async def test_session_grant_covers_a_head_only_ask(tmp_path: Path) -> None:
    """An ask rule that names only the tool is satisfied by a session grant."""
    executor = Executor(filesystem(tmp_path), policy=Policy(ask=["fs.write"], root=tmp_path))
    first = _asked(await executor.execute(_write("1", "a.txt")))
    await executor.resume(first.id, approve=True, scope="session")
    assert isinstance(await executor.execute(_write("2", "b.txt")), Completed)
    await executor.aclose()


async def test_always_rule_from_one_root_does_not_apply_in_another(tmp_path: Path) -> None:
    """Two projects share one approval file: "always" approved in one runs nothing in the
    other, although the rule's text (fs.write(write:a.txt)) would match there."""
    store_file = tmp_path / "state" / "approvals.sqlite3"
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = Executor(
        filesystem(one), policy=Policy(root=one), approvals=SqliteApprovalStore(store_file)
    )
    second = Executor(
        filesystem(two), policy=Policy(root=two), approvals=SqliteApprovalStore(store_file)
    )
    asked = _asked(await first.execute(_write("1", "a.txt")))
    assert isinstance(
        await first.resume(asked.id, approve=True, scope="always", by="ana"), Completed
    )
    (one / "a.txt").unlink()
    assert isinstance(await first.execute(_write("2", "a.txt")), Completed)
    assert (one / "a.txt").exists()

    explained = await first.explain(_write("2", "a.txt"))
    assert explained.decision.standing and explained.decision.verdict == "allow"
    _asked(await second.execute(_write("3", "a.txt")))
    assert not (two / "a.txt").exists()
    assert (await second.explain(_write("3", "a.txt"))).decision.verdict == "ask"
    (rule,) = await second.approvals.always_rules()
    assert rule.rule == "fs.write(write:a.txt)"
    assert rule.project == first.project == Policy(root=one).root
    assert rule.by == "ana"
    assert await second.approvals.always_rules(second.project) == []
    await first.aclose()
    await second.aclose()


async def test_rules_added_and_revoked_elsewhere_count_at_once(tmp_path: Path) -> None:
    """A rule another process records for this project runs the call without asking; revoked
    (from another store handle), the next call is asked about again."""
    store_file = tmp_path / "state" / "approvals.sqlite3"
    root = tmp_path / "root"
    root.mkdir()
    executor = Executor(
        filesystem(root), policy=Policy(root=root), approvals=SqliteApprovalStore(store_file)
    )
    _asked(await executor.execute(_write("1", "a.txt")))
    script = (
        "import anyio, sys\n"
        "from invokit.approvals import SqliteApprovalStore\n"
        "async def main():\n"
        "    store = SqliteApprovalStore(sys.argv[1])\n"
        "    rule = await store.add_always_rule("
        "'fs.write(write:a.txt)', project=sys.argv[2], by='other')\n"
        "    print(rule.id)\n"
        "    await store.close()\n"
        "anyio.run(main)\n"
    )
    with anyio.fail_after(60):
        added = await anyio.run_process(
            [sys.executable, "-c", script, str(store_file), executor.project], check=True
        )
    assert isinstance(await executor.execute(_write("2", "a.txt")), Completed)

    elsewhere = SqliteApprovalStore(store_file)
    (removed,) = await elsewhere.remove_always_rule(added.stdout.decode().strip())
    assert removed.by == "other"
    await elsewhere.close()
    (root / "a.txt").unlink()
    _asked(await executor.execute(_write("3", "a.txt")))
    assert not (root / "a.txt").exists()
    await executor.aclose()


async def test_executor_project_can_be_named(tmp_path: Path) -> None:
    """An explicit project keeps rules apart even for executors with the same root."""
    store_file = tmp_path / "state" / "approvals.sqlite3"
    root = tmp_path / "root"
    root.mkdir()
    alpha = Executor(
        filesystem(root),
        policy=Policy(root=root),
        approvals=SqliteApprovalStore(store_file),
        project="alpha",
    )
    beta = Executor(
        filesystem(root),
        policy=Policy(root=root),
        approvals=SqliteApprovalStore(store_file),
        project="beta",
    )
    asked = _asked(await alpha.execute(_write("1", "a.txt")))
    await alpha.resume(asked.id, approve=True, scope="always")
    _asked(await beta.execute(_write("2", "a.txt")))
    assert [r.project for r in await beta.approvals.always_rules()] == ["alpha"]
    await alpha.aclose()
    await beta.aclose()
