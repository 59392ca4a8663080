"""A pydantic-ai run deferred in one process is resumed in another, on the same SQLite store."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessagesTypeAdapter

from invokit import Executor
from invokit.approvals import SqliteApprovalStore
from invokit.integrations.pydantic_ai import InvokitToolset

pytestmark = pytest.mark.anyio

# The same tools and model in both processes: a write that appends to a log file (so runs are
# counted across processes), and a model that writes once, then reports what it read back.
COMMON = textwrap.dedent(
    """
    from pathlib import Path
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from invokit import ToolRegistry, tool

    def registry(log: Path) -> ToolRegistry:
        @tool(name="notes.write")
        async def write(name: str, text: str) -> str:
            \"\"\"Write a note.\"\"\"
            with log.open("a") as out:
                out.write(f"{name}\\n")
            return f"wrote {name}"

        return ToolRegistry([write])

    def model() -> FunctionModel:
        def step(messages, info):
            returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
            if returned:
                return ModelResponse(parts=[TextPart(returned[0].model_response_str())])
            call = ToolCallPart("notes_write", {"name": "b", "text": "beta"}, tool_call_id="w1")
            return ModelResponse(parts=[call])

        return FunctionModel(step)
    """
)

RESUME = textwrap.dedent(
    """
    import sys
    import anyio
    from pathlib import Path
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from invokit import Executor
    from invokit.approvals import SqliteApprovalStore
    from invokit.integrations.pydantic_ai import InvokitToolset
    from common import model, registry

    async def main(folder: Path) -> None:
        executor = Executor(
            registry(folder / "runs.log"),
            approvals=SqliteApprovalStore(folder / "approvals.db"),
            project=str(folder),
        )
        history = ModelMessagesTypeAdapter.validate_json((folder / "history.json").read_bytes())
        agent = Agent(model(), toolsets=[InvokitToolset(executor)],
                      output_type=[str, DeferredToolRequests])
        results = DeferredToolResults(approvals={"w1": True},
                                      metadata={"w1": {"invokit": {"by": "ana"}}})
        result = await agent.run(message_history=history, deferred_tool_results=results)
        print(result.output)
        await executor.aclose()

    anyio.run(main, Path(sys.argv[1]))
    """
)


async def test_a_run_deferred_here_is_resumed_in_another_process(tmp_path: Path) -> None:
    """The approval asked in this process is resumed by a second process (its own executor on
    the same SQLite store, the history as JSON) and the write runs there, once."""
    (tmp_path / "common.py").write_text(COMMON)
    (tmp_path / "resume.py").write_text(RESUME)
    sys.path.insert(0, str(tmp_path))
    try:
        from common import model, registry  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    log = tmp_path / "runs.log"
    executor = Executor(
        registry(log),
        approvals=SqliteApprovalStore(tmp_path / "approvals.db"),
        project=str(tmp_path),
    )
    agent = Agent(
        model(), toolsets=[InvokitToolset(executor)], output_type=[str, DeferredToolRequests]
    )
    first = await agent.run("write b")
    assert isinstance(first.output, DeferredToolRequests)
    approval_id = first.output.metadata["w1"]["invokit"]["approval_id"]
    (tmp_path / "history.json").write_bytes(
        ModelMessagesTypeAdapter.dump_json(first.all_messages())
    )
    assert not log.exists()

    with anyio.fail_after(120):
        done = await anyio.run_process(
            [sys.executable, str(tmp_path / "resume.py"), str(tmp_path)],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "wrote b"
    assert log.read_text() == "b\n"
    record = await executor.approvals.get(approval_id)
    assert record.status == "consumed"
    assert record.decision is not None and record.decision.by == "ana"
    await executor.aclose()
