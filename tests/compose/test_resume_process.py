"""A child needing approval pauses the script; a second process resumes it from the SQLite
store, and the script goes on from where it stopped: no child call runs twice."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    from invokit import ToolCall, tool
    from invokit.approvals import SqliteApprovalStore
    from invokit.builtin.filesystem import filesystem
    from invokit.compose import enable_compose
    from invokit.execution import Executor, Interrupted, JsonlAuditSink
    from invokit.permissions import Policy

    state, root = Path(sys.argv[2]), Path(sys.argv[3])

    @tool(read_only=True)
    def tick(label: str) -> str:
        "Record that the script got here (a side effect to count)."
        with (state / "ticks.txt").open("a") as out:
            out.write(label + "\\n")
        return label

    CODE = '''
    a = fs_read(path="a.txt")["content"]
    tick(label="before")
    written = fs_write(path="summary.txt", content="summary: " + a.strip())
    tick(label="after")
    fs_read(path="summary.txt")["content"]
    '''

    async def main() -> None:
        executor = Executor(
            filesystem(root).merged([tick]),
            policy=Policy(allow=["fs.read", "tick", "compose"], ask=["fs.write"], root=root),
            approvals=SqliteApprovalStore(state / "approvals.sqlite3"),
            events=[JsonlAuditSink(state / "audit.jsonl")],
            project="demo",
        )
        enable_compose(executor)
        if sys.argv[1] == "start":
            outcome = await executor.execute(
                ToolCall(id="job", name="compose", arguments={"code": CODE}, session_id="s")
            )
            assert isinstance(outcome, Interrupted), outcome
            request = outcome.interrupt.request
            print(json.dumps({"id": outcome.interrupt.id, "child": request.call.id, "tool": request.tool}))
        else:
            try:
                outcome = await executor.resume(sys.argv[4], approve=True, by="second process")
                print(json.dumps({"type": type(outcome).__name__, "call": outcome.result.call_id,
                                  "value": outcome.result.structured}))
            except Exception as exc:
                print(json.dumps({"type": type(exc).__name__}))
        await executor.aclose()

    anyio.run(main)
    """
).replace("\n    a = fs_read", "\na = fs_read")


def _run(tmp_path: Path, *args: str) -> dict[str, object]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            args[0],
            str(tmp_path / "state"),
            str(tmp_path / "root"),
            *args[1:],
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_second_process_resumes_the_paused_script_once(tmp_path: Path) -> None:
    """The write runs exactly once, after approval, in the second process; the script is not
    run again from the start (one "before" tick); a third resume is refused."""
    (tmp_path / "state").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_text("alpha\n")
    paused = _run(tmp_path, "start")
    assert paused["child"] == "job:compose:3" and paused["tool"] == "fs.write"
    assert not (tmp_path / "root" / "summary.txt").exists()
    resumed = _run(tmp_path, "resume", str(paused["id"]))
    assert resumed["type"] == "Completed" and resumed["call"] == "job"
    value = resumed["value"]
    assert isinstance(value, dict) and value["result"] == "summary: alpha"
    assert value["tool_calls"] == 5
    assert (tmp_path / "state" / "ticks.txt").read_text() == "before\nafter\n"
    again = _run(tmp_path, "resume", str(paused["id"]))
    assert again == {"type": "ApprovalAlreadyUsed"}
    events = [
        json.loads(line) for line in (tmp_path / "state" / "audit.jsonl").read_text().splitlines()
    ]
    writes = [e for e in events if e["call_id"] == "job:compose:3" and e["type"] == "completed"]
    assert len(writes) == 1
