"""A LangChain agent whose tools run through invokit, with approvals as LangGraph interrupts.

    pip install "invokit[langchain]" langchain
    python examples/langchain_agent.py            # the person approves the write
    python examples/langchain_agent.py --reject   # the person refuses it

It runs offline: a scripted chat model (LangChain's own fake) reads a note, then writes one.
The read runs at once (the tool is read-only); the write asks, so the graph pauses with an
interrupt in the shape of LangChain's human-in-the-loop middleware, and resumes with the
person's decision. Swap in any chat model with tool calling (``init_chat_model(...)``) to use
it for real.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import anyio
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from invokit import Executor, tool
from invokit.integrations.langchain import langchain_tools
from invokit.permissions import Policy

NOTES = {"todo": "buy milk"}


@tool(read_only=True)
async def read_note(name: str) -> str:
    """Read a note by name."""
    return NOTES.get(name, "(no such note)")


@tool
async def write_note(name: str, text: str) -> str:
    """Write a note."""
    NOTES[name] = text
    return f"wrote {name}"


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, with tools bound (it answers from its script)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def scripted_model() -> ScriptedModel:
    def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
        return AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}],
        )

    return ScriptedModel(
        messages=iter(
            [
                call("read_note", {"name": "todo"}, "call_1"),
                call("write_note", {"name": "todo", "text": "buy oat milk"}, "call_2"),
                AIMessage(content="I tried to update your todo note; see the tool results."),
            ]
        )
    )


async def main(decision: str) -> None:
    # Writes ask by default (the tool is not read-only); a deny rule would win over any "yes".
    executor = Executor([read_note, write_note], policy=Policy(deny=["write_note(name=secret*)"]))
    agent = create_agent(scripted_model(), langchain_tools(executor), checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "demo"}}

    state = await agent.ainvoke({"messages": [("user", "Make my todo oat milk.")]}, config)
    while state.get("__interrupt__"):
        answers = {}
        for pending in state["__interrupt__"]:
            action = pending.value["action_requests"][0]
            print(f"approval asked: {action['name']}({action['args']})")
            print("  " + action["description"].replace("\n", "\n  "))
            print(f"  the person answers: {decision}")
            answer: dict[str, Any] = {"type": decision}
            if decision == "reject":
                answer["message"] = "Leave my notes alone."
            answers[pending.id] = {"decisions": [answer]}
        state = await agent.ainvoke(Command(resume=answers), config)

    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            print(f"tool {message.name} [{message.status}]: {message.content}")
    print(f"agent: {state['messages'][-1].content}")
    print(f"notes: {NOTES}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reject", action="store_true", help="refuse the write")
    options = parser.parse_args()
    anyio.run(main, "reject" if options.reject else "approve")
