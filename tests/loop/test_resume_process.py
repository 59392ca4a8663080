"""A run paused for approval in one process is resumed in another from its JSON state."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from invokit.loop import RunState, message_from_dict

from ._support import assert_valid

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    from invokit import tool
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import Executor
    from invokit.loop import RunInterrupted, UserMessage, message_to_dict, resume, run
    from invokit.testing import ScriptedModel, call, turn

    step, work = sys.argv[1], Path(sys.argv[2])

    @tool(read_only=True)
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    @tool(name="notes.append", destructive=True)
    def append(text: str) -> str:
        "Append a line to the notebook."
        with (work / "notes.txt").open("a") as handle:
            handle.write(text + "\\n")
        return "appended " + text

    async def main() -> None:
        executor = Executor([add, append], approvals=SqliteApprovalStore(work / "approvals.db"))
        if step == "ask":
            model = ScriptedModel([turn(call("add", {"a": 2, "b": 3}), call("notes.append", {"text": "five"}))])
            outcome = await run(model, executor, [UserMessage(text="note 2+3")], session_id="s-1")
            assert isinstance(outcome, RunInterrupted)
            (work / "state.json").write_text(outcome.state.to_json())
            print(json.dumps({"approval": outcome.interrupts[0].id}))
        else:
            model = ScriptedModel(["Noted: five."])
            state = (work / "state.json").read_text()
            outcome = await resume(model, executor, state, {sys.argv[3]: True})
            print(json.dumps({
                "reason": outcome.reason,
                "output": outcome.output,
                "turns": outcome.turns,
                "messages": [message_to_dict(m) for m in outcome.messages],
            }))
        await executor.aclose()

    anyio.run(main)
    """
)


def _step(tmp_path: Path, *args: str) -> dict[str, object]:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def test_a_run_paused_in_one_process_finishes_in_another(tmp_path: Path) -> None:
    """The second process approves, runs the call once, keeps the first process's result of
    the same turn, and lets the model answer."""
    asked = _step(tmp_path, "ask", str(tmp_path))
    assert not (tmp_path / "notes.txt").exists()
    state = RunState.from_json((tmp_path / "state.json").read_text())
    assert state.session_id == "s-1"
    assert [r.structured for r in state.finished] == [5]

    resumed = _step(tmp_path, "resume", str(tmp_path), str(asked["approval"]))
    assert (resumed["reason"], resumed["output"], resumed["turns"]) == ("final", "Noted: five.", 2)
    assert (tmp_path / "notes.txt").read_text() == "five\n"
    messages = resumed["messages"]
    assert isinstance(messages, list)
    transcript = [message_from_dict(m) for m in messages]
    assert_valid(transcript)
    results = [r for m in messages if m["role"] == "tool" for r in m["results"]]
    assert [r["structured"] for r in results] == [5, "appended five"]
