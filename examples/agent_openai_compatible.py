"""An agent with the filesystem tools, on any OpenAI-compatible endpoint.

Point it at a server that speaks Chat Completions and has a model that can call tools:

    # vLLM:      vllm serve Qwen/Qwen2.5-7B-Instruct --enable-auto-tool-choice --tool-call-parser hermes
    # llama.cpp: llama-server -m model.gguf --jinja
    # Ollama:    ollama pull qwen2.5
    export INVOKIT_BASE_URL=http://127.0.0.1:11434/v1    # or OPENAI_BASE_URL
    export INVOKIT_MODEL=qwen2.5                          # the name the server knows
    export OPENAI_API_KEY=...                             # only if the server wants a key
    python examples/agent_openai_compatible.py "What is in this folder?" [--root DIR]

Reads run freely; every write asks you in the terminal first (the default policy). Without
a configured endpoint it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio

from invokit import Executor
from invokit.approvals import ApprovalDecision, ApprovalRequest
from invokit.builtin.filesystem import filesystem
from invokit.loop import (
    AssistantMessage,
    Message,
    RunResult,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
    openai_compatible,
    run,
)

SYSTEM = (
    "You are a careful assistant working in a folder through filesystem tools. "
    "Look before you change anything, and answer briefly."
)


def endpoint() -> tuple[str, str] | None:
    """The base URL and model name from the environment, if both are set."""
    base_url = os.environ.get("INVOKIT_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("INVOKIT_MODEL")
    return (base_url, model) if base_url and model else None


async def ask_in_terminal(request: ApprovalRequest) -> ApprovalDecision:
    """Show the call and its arguments; approve only on an explicit yes."""
    print(f"\n? {request.tool} wants to run with {request.arguments}")
    print(f"  ({request.reason})")
    answer = await anyio.to_thread.run_sync(input, "  approve? [y/N] ")
    if answer.strip().lower() in {"y", "yes"}:
        return ApprovalDecision.approve(by="terminal")
    return ApprovalDecision.deny("the person said no", by="terminal")


class Show:
    """Prints each turn's calls and results as the run appends them."""

    def on_message(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            for call in message.calls:
                print(f"→ {call.name} {call.arguments}")
        elif isinstance(message, ToolResultsMessage):
            for result in message.results:
                status = f"error ({result.error.kind})" if result.error else "ok"
                print(f"← {result.name}: {status}")


async def main(prompt: str, root: str, base_url: str, model_name: str) -> int:
    model = openai_compatible(base_url, model_name)
    executor = Executor(filesystem(root), approver=ask_in_terminal)
    messages: list[Message] = [SystemMessage(text=SYSTEM), UserMessage(text=prompt)]
    try:
        outcome = await run(model, executor, messages, max_turns=12, hooks=[Show()])
    finally:
        await model.aclose()
        await executor.aclose()
    assert isinstance(outcome, RunResult)  # the approver answers inline: runs never pause
    if outcome.reason != "final":
        print(f"\n(run ended: {outcome.reason}: {outcome.detail})")
    print(f"\n{outcome.output}")
    return 0


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt", nargs="?", default="What is in this folder? Summarize it.")
    parser.add_argument("--root", default=".", help="the folder the tools work in")
    args = parser.parse_args()
    found = endpoint()
    if found is None:
        print(
            "No model endpoint configured. Set INVOKIT_BASE_URL (or OPENAI_BASE_URL) to an "
            "OpenAI-compatible API root such as http://127.0.0.1:11434/v1, and INVOKIT_MODEL "
            "to a model name it serves.",
            file=sys.stderr,
        )
        return 2
    base_url, model_name = found
    return anyio.run(main, args.prompt, args.root, base_url, model_name)


if __name__ == "__main__":
    sys.exit(cli())
