"""`invokit approvals approve|deny` write the decision to the shared audit log at once, with
who decided and through which channel, before any retry uses it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.conftest import Cli


def _resolved(state: Path) -> list[dict[str, Any]]:
    path = state / "audit.jsonl"
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if r["type"] == "approval_resolved"]


def _pending_id(cli: Cli, *args: str) -> str:
    code, out, _ = cli("call", *args, "--json")
    assert code == 3, out
    return str(json.loads(out)["approval"]["id"])


def test_deny_is_in_the_audit_log_at_once(cli: Cli, state: Path) -> None:
    """A denial from the CLI is logged when it is made: id, tool, verdict, reason, by and
    channel, and the server (host:pid) that recorded it."""
    approval_id = _pending_id(cli, "fs.write", "path=a.txt", "content=x")
    assert _resolved(state) == []
    code, _, err = cli("approvals", "deny", approval_id, "--reason", "not today")
    assert code == 0, err
    (record,) = _resolved(state)
    data = record["data"]
    assert record["tool"] == "fs.write" and data["id"] == approval_id
    assert data["verdict"] == "deny" and data["approved"] is False
    assert data["reason"] == "not today"
    assert data["channel"] == "cli" and str(data["by"]).startswith("cli")
    host, _, pid = str(data["server"]).rpartition(":")
    assert host and pid.isdigit()


def test_approve_is_logged_when_given_and_again_when_a_retry_uses_it(
    cli: Cli, root: Path, state: Path
) -> None:
    """An approval from the CLI is in the log at once; the retry that uses it logs that it
    consumed the CLI's decision; the live narration of `invokit audit` names both."""
    approval_id = _pending_id(cli, "fs.write", "path=b.txt", "content=y")
    code, _, err = cli("approvals", "approve", approval_id)
    assert code == 0, err
    (given,) = _resolved(state)
    assert given["data"]["verdict"] == "approve" and given["data"]["channel"] == "cli"
    assert given["data"]["consumed_by_retry"] is False
    assert not (root / "b.txt").exists()
    code, out, _ = cli("call", "fs.write", "path=b.txt", "content=y", "--json")
    assert code == 0, out
    used = _resolved(state)[1]
    assert used["data"]["id"] == approval_id and used["data"]["consumed_by_retry"] is True
    assert used["data"]["channel"] == "cli" and used["data"]["root"] == str(root)
    code, out, _ = cli("audit")
    assert code == 0
    assert f"approved fs.write {approval_id} (once) by cli" in " ".join(out.split())


def test_an_unknown_id_logs_nothing(cli: Cli, state: Path) -> None:
    """Deciding an id that does not exist fails and leaves no decision in the log."""
    code, _, _ = cli("approvals", "deny", "apr_nope")
    assert code == 1
    assert _resolved(state) == []


def test_audit_shows_model_text_inert(cli: Cli, state: Path) -> None:
    """A model's escape sequences, C1 controls and bidi overrides in a call's arguments reach
    neither `invokit audit` nor `invokit audit --json` as raw characters."""
    nasty = "a\x1b]0;owned\x07\x9b2J\u202eb"
    code, _, _ = cli("call", "fs.write", "path=n.txt", f"content={nasty}", "--json")
    assert code == 3
    for args in (("audit",), ("audit", "--json")):
        code, out, _ = cli(*args)
        assert code == 0
        assert not any(ch in out for ch in "\x1b\x07\x9b\u202e"), (args, out)
        assert "n.txt" in out
