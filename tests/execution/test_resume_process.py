"""An approval asked in one process is resumed in another, after the first has exited."""

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
    from invokit.execution import Completed, Executor, Failed, Interrupted

    work = Path(sys.argv[2])

    @tool(destructive=True)
    def wipe(name: str) -> str:
        "Write a marker file standing for a side effect."
        (work / "ran.txt").open("a").write(name + "\\n")
        return "wiped " + name

    async def main() -> None:
        executor = Executor([wipe], approvals=SqliteApprovalStore(work / "approvals.sqlite3"))
        if sys.argv[1] == "ask":
            outcome = await executor.execute(ToolCall(id="c1", name="wipe", arguments={"name": "db"}))
            assert isinstance(outcome, Interrupted)
            print(json.dumps({"id": outcome.interrupt.id}))
        else:
            try:
                outcome = await executor.resume(sys.argv[3], approve=True, by="second process")
                print(json.dumps({"type": type(outcome).__name__, "text": outcome.result.text}))
            except Exception as exc:
                print(json.dumps({"type": type(exc).__name__}))
        await executor.aclose()

    anyio.run(main)
    """
)


def _run(tmp_path: Path, *args: str) -> dict[str, str]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_resume_in_a_second_process(tmp_path: Path) -> None:
    """The second process runs the approved call once; a third cannot run it again."""
    asked = _run(tmp_path, "ask", str(tmp_path))
    assert not (tmp_path / "ran.txt").exists()
    resumed = _run(tmp_path, "resume", str(tmp_path), asked["id"])
    assert resumed == {"type": "Completed", "text": "wiped db"}
    again = _run(tmp_path, "resume", str(tmp_path), asked["id"])
    assert again == {"type": "ApprovalAlreadyUsed"}
    assert (tmp_path / "ran.txt").read_text() == "db\n"
