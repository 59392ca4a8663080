"""A Google ADK agent whose tools run through invokit, with approvals as ADK tool confirmations.

    pip install "invokit[adk]"
    python examples/adk_agent.py            # the person confirms the write
    python examples/adk_agent.py --reject   # the person refuses it

It runs offline: a scripted model (a custom ADK ``BaseLlm``) reads a note, then writes one.
The read runs at once (the tool is read-only); the write asks, so ADK emits an
``adk_request_confirmation`` call and the invocation pauses; the person's answer goes back as a
``FunctionResponse`` with a ``ToolConfirmation``, and ADK runs the call again, which resolves the
invokit approval. Use a real model (``model="gemini-..."``) to use it for real.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncGenerator
from typing import Any

import anyio
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import Field

from invokit import Executor, tool
from invokit.integrations.google_adk import InvokitToolset
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


def _call(name: str, args: dict[str, Any], call_id: str) -> types.Content:
    part = types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))
    return types.Content(role="model", parts=[part])


class ScriptedModel(BaseLlm):
    """A model that answers each turn from a script (no network)."""

    script: list[types.Content] = Field(
        default_factory=lambda: [
            _call("read_note", {"name": "todo"}, "call_1"),
            _call("write_note", {"name": "todo", "text": "buy oat milk"}, "call_2"),
            types.Content(
                role="model", parts=[types.Part(text="I tried to update your todo note.")]
            ),
        ]
    )

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(
            content=self.script.pop(0),
            turn_complete=True,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=0, candidates_token_count=0, total_token_count=0
            ),
        )


def show(events: list[Event]) -> list[types.FunctionCall]:
    """Print tool results and text; return the confirmations ADK asks for."""
    asked = []
    for event in events:
        for response in event.get_function_responses():
            print(f"tool {response.name}: {response.response}")
        for call in event.get_function_calls():
            if call.name == "adk_request_confirmation":
                asked.append(call)
        if event.content and event.content.parts and event.content.parts[0].text:
            print(f"agent: {event.content.parts[0].text}")
    return asked


async def main(confirmed: bool) -> None:
    # Writes ask by default (the tool is not read-only); a deny rule would win over any "yes".
    executor = Executor([read_note, write_note], policy=Policy(deny=["write_note(name=secret*)"]))
    agent = LlmAgent(
        name="notes", model=ScriptedModel(model="scripted"), tools=[InvokitToolset(executor)]
    )
    sessions = InMemorySessionService()
    runner = Runner(app_name="notes", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="notes", user_id="ana")

    async def send(message: types.Content) -> list[types.FunctionCall]:
        events = [
            e
            async for e in runner.run_async(
                user_id="ana", session_id=session.id, new_message=message
            )
        ]
        return show(events)

    asked = await send(
        types.Content(role="user", parts=[types.Part(text="Make my todo oat milk.")])
    )
    while asked:
        replies = []
        for call in asked:
            assert call.args is not None
            print(
                "approval asked:\n  " + call.args["toolConfirmation"]["hint"].replace("\n", "\n  ")
            )
            print(f"  the person answers: {'yes' if confirmed else 'no'}")
            answer = {"confirmed": confirmed, "payload": {"reason": "Leave my notes alone."}}
            reply = types.FunctionResponse(
                id=call.id, name="adk_request_confirmation", response=answer
            )
            replies.append(types.Part(function_response=reply))
        asked = await send(types.Content(role="user", parts=replies))
    print(f"notes: {NOTES}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reject", action="store_true", help="refuse the write")
    options = parser.parse_args()
    anyio.run(main, not options.reject)
