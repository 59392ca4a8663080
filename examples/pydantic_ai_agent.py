"""A pydantic-ai agent whose tools are invokit's filesystem tools, guarded by invokit.

    python examples/pydantic_ai_agent.py [--root DIR] [--model openai:gpt-4.1] [--yes | --no]

Reads run freely; a write ends the run with pydantic-ai's ``DeferredToolRequests`` (invokit's
default policy asks before any write). You answer in the terminal (or with ``--yes`` /
``--no``); the answer is recorded in invokit's approval store and audit log, and the resumed
run writes once. Without ``--model`` a scripted demo model (pydantic-ai's ``FunctionModel``)
plays the agent, so the example runs offline; with one, pydantic-ai's own model names apply
(and its provider's API key).
"""

from __future__ import annotations

import argparse
import getpass
import tempfile
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from invokit import Executor
from invokit.builtin.filesystem import filesystem
from invokit.integrations.pydantic_ai import InvokitToolset, approval_results


def demo_model() -> FunctionModel:
    """Reads notes.txt, writes summary.txt from it, then reports what happened."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("fs_read", {"path": "notes.txt"})])
        last = returned[-1]
        if last.tool_name == "fs_read" and last.outcome == "success":
            read = last.content if isinstance(last.content, dict) else {}
            lines = str(read.get("content", "")).splitlines()
            content = f"Summary: {lines[0] if lines else 'nothing'}\n"
            call = ToolCallPart("fs_write", {"path": "summary.txt", "content": content})
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(f"{last.outcome}: {last.model_response_str()}")])

    return FunctionModel(step)


async def ask(requests: DeferredToolRequests, answer: bool | None) -> dict[str, bool]:
    """The person's answer for every call invokit asked about."""
    answers: dict[str, bool] = {}
    for call in requests.approvals:
        asked = requests.metadata.get(call.tool_call_id, {}).get("invokit", {})
        print(f"? {asked.get('tool', call.tool_name)} {asked.get('arguments', call.args)}")
        print(f"  ({asked.get('reason', 'approval needed')})")
        approve = answer
        if approve is None:
            reply = await anyio.to_thread.run_sync(input, "  approve? [y/N] ")
            approve = reply.strip().lower() in {"y", "yes"}
        answers[call.tool_call_id] = approve
    return answers


async def main(root: Path, model: Any, answer: bool | None) -> str:
    executor = Executor(filesystem(root=root))
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model,
        toolsets=[InvokitToolset(executor)],
        output_type=[str, DeferredToolRequests],
        instructions="Summarize notes.txt into summary.txt.",
    )
    result = await agent.run("Summarize my notes.")
    while isinstance(result.output, DeferredToolRequests):
        answers = await ask(result.output, answer)
        results = await approval_results(executor, result.output, answers, by=getpass.getuser())
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=results
        )
    await executor.aclose()
    return result.output


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="the folder (default: a demo folder)")
    parser.add_argument("--model", help="a pydantic-ai model name (default: the demo model)")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--yes", action="store_true", help="approve every write")
    choice.add_argument("--no", action="store_true", help="deny every write")
    options = parser.parse_args()
    root = options.root
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="invokit-demo-"))
        (root / "notes.txt").write_text("Buy milk.\nCall Ana.\n")
    answer = True if options.yes else False if options.no else None
    print(anyio.run(main, root, options.model or demo_model(), answer))
    summary = root / "summary.txt"
    print(f"summary.txt: {summary.read_text()!r}" if summary.exists() else "summary.txt: none")
