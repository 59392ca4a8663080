"""An openai-agents agent whose tools are invokit's filesystem tools, guarded by invokit.

    python examples/openai_agents_agent.py [--root DIR] [--model gpt-4.1] [--yes | --no]

Reads run freely; a write interrupts the run (``result.interruptions``), because invokit's
default policy asks before any write; the question also waits in invokit's approval store.
You answer in the terminal (or with ``--yes`` / ``--no``); the answer goes into the
``RunState`` and into invokit's store and audit log, and the resumed run writes once. Without
``--model`` a scripted demo model (openai-agents' ``ScriptedModel``) plays the agent, so the
example runs offline; with one, the OpenAI API is used (``OPENAI_API_KEY``).
"""

from __future__ import annotations

import argparse
import getpass
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from agents import Agent, RunConfig, Runner, Tool
from agents.items import TResponseOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from invokit import Executor
from invokit.builtin.filesystem import filesystem
from invokit.integrations.openai_agents import InvokitTools


def demo_model() -> ScriptedModel:
    """Reads notes.txt, writes summary.txt from it, then reports what happened."""

    def outputs(call: ModelCall) -> list[str]:
        return [
            str(item["output"])
            for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]

    def write(call: ModelCall) -> list[TResponseOutputItem]:
        read = json.loads(outputs(call)[-1])
        lines = str(read.get("content", "")).splitlines()
        content = f"Summary: {lines[0] if lines else 'nothing'}\n"
        return [
            function_call("fs_write", {"path": "summary.txt", "content": content}, call_id="w1")
        ]

    def report(call: ModelCall) -> list[TResponseOutputItem]:
        return [assistant_message(outputs(call)[-1])]

    return ScriptedModel(
        [
            [function_call("fs_read", {"path": "notes.txt"}, call_id="r1")],
            ModelStep.respond(write),
            ModelStep.respond(report),
        ]
    )


async def main(root: Path, model: Any, answer: bool | None) -> str:
    executor = Executor(filesystem(root=root))
    tools = InvokitTools(executor)
    agent = Agent(
        name="notes",
        instructions="Summarize notes.txt into summary.txt.",
        model=model,
        tools=list[Tool](tools.tools),
    )
    # The demo model needs no tracing upload; a real one may keep openai-agents' tracing.
    config = RunConfig(tracing_disabled=isinstance(model, ScriptedModel))
    result = await Runner.run(agent, "Summarize my notes.", run_config=config)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            print(f"? {item.tool_name} {item.arguments}")
            approve = answer
            if approve is None:
                reply = await anyio.to_thread.run_sync(input, "  approve? [y/N] ")
                approve = reply.strip().lower() in {"y", "yes"}
            if approve:
                await tools.approve(state, item, by=getpass.getuser())
            else:
                await tools.reject(state, item, message="The person said no.", by=getpass.getuser())
        result = await Runner.run(agent, state, run_config=config)
    await executor.aclose()
    return str(result.final_output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="the folder (default: a demo folder)")
    parser.add_argument("--model", help="an OpenAI model name (default: the demo model)")
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
