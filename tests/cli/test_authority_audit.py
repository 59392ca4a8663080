"""`invokit audit` and the live log say under which authority a call ran: the "always" rule
or session grant, who gave it and when."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from invokit.cli._livelog import Narrator, describe
from tests.cli.conftest import Cli


def test_audit_names_the_always_rule_a_call_ran_under(cli: Cli, state: Path) -> None:
    """A write approved "always" from the CLI runs again without a question; `invokit audit`
    shows that run with the rule's id, who recorded it and when, and `--json` has the rule."""
    code, out, _ = cli("call", "fs.write", "path=b.txt", "content=y", "--json")
    assert code == 3, out
    approval_id = json.loads(out)["approval"]["id"]
    code, _, err = cli("approvals", "approve", approval_id, "--scope", "always")
    assert code == 0, err
    for _ in range(2):
        code, out, _ = cli("call", "fs.write", "path=b.txt", "content=y", "--json")
        assert code == 0, out
    records = [json.loads(x) for x in (state / "audit.jsonl").read_text().splitlines()]
    ran = [r["data"] for r in records if r["type"] == "completed"]
    authority = ran[-1]["authority"]
    assert authority["kind"] == "always" and authority["id"].startswith("rul_")
    assert str(authority["by"]).startswith("cli")
    code, out, _ = cli("audit")
    assert code == 0
    stamp = time.strftime("%H:%M", time.localtime(authority["at"]))
    flat = " ".join(out.split())
    assert f"(always rule {authority['id']} by {authority['by']} at {stamp})" in flat


def test_the_live_log_line_names_a_session_grant_on_one_line() -> None:
    """A session grant is shown as a short suffix on the call's line; a giver's name with a
    newline in it cannot start a line of its own."""
    when = time.time()
    record: dict[str, Any] = {
        "type": "completed",
        "tool": "fs.write",
        "time": when,
        "data": {
            "is_error": False,
            "duration": 0.001,
            "authority": {
                "kind": "session",
                "id": "g_1234",
                "scope": "…",
                "by": "ana\nx",
                "at": when,
            },
        },
    }
    line = describe(record, {"path": "b.txt"})
    assert line is not None
    stamp = time.strftime("%H:%M", time.localtime(when))
    assert line.plain.endswith(f"(session grant g_1234 by ana\\nx at {stamp})")
    assert "\n" not in line.plain
    given_elsewhere = {
        **record,
        "data": {**record["data"], "authority": {"kind": "session", "id": "g_9"}},
    }
    shown = describe(given_elsewhere)
    assert shown is not None and shown.plain.endswith("(session grant g_9 (given elsewhere))")


def test_a_call_run_under_a_grant_is_not_shown_as_asking() -> None:
    """The policy asked about the call, but a grant covered it and nobody was asked: the log
    shows one line, how it ended and under which grant, with no "asks" line; a call that
    does ask a person still shows the "asks" line, followed by its wait."""
    narrator = Narrator()
    decided = {"type": "decided", "call_id": "c1", "tool": "fs.write", "time": time.time()}
    decided["data"] = {"verdict": "ask", "reason": "policy rule 'tag:write' requires approval"}
    assert narrator.line(decided) is None
    done = {
        "type": "completed",
        "call_id": "c1",
        "tool": "fs.write",
        "time": time.time(),
        "data": {"is_error": False, "duration": 0.0, "authority": {"kind": "session", "id": "g_1"}},
    }
    line = narrator.line(done)
    assert line is not None and "asks" not in line.plain and "\n" not in line.plain
    assert line.plain.split()[1] == "done" and "(session grant g_1" in line.plain
    assert narrator.line({**decided, "call_id": "c2"}) is None
    waiting = {**done, "type": "approval_requested", "call_id": "c2", "data": {"id": "apr_x"}}
    shown = narrator.line(waiting)
    assert shown is not None
    first, second = shown.plain.split("\n")
    assert first.split()[1] == "asks" and "requires approval" in first
    assert second.split()[1] == "waiting" and "apr_x" in second


def test_the_steps_between_ask_and_outcome_do_not_show_the_ask() -> None:
    """A started record between the policy's "ask" and the grant-run outcome shows nothing."""
    narrator = Narrator()
    base = {"call_id": "c1", "tool": "fs.write", "time": time.time()}
    assert narrator.line({**base, "type": "decided", "data": {"verdict": "ask"}}) is None
    assert narrator.line({**base, "type": "started", "data": {}}) is None
    done = narrator.line(
        {
            **base,
            "type": "completed",
            "data": {"is_error": False, "authority": {"kind": "always", "id": "rul_1"}},
        }
    )
    assert done is not None and "asks" not in done.plain and "(always rule rul_1" in done.plain
