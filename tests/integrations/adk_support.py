"""A scripted ADK model and a runner around it, for agent tests (no network)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_toolset import BaseToolset
from google.genai import types
from pydantic import Field


class ScriptedLlm(BaseLlm):
    """A custom ADK model: answers each turn from a script and keeps every request it read."""

    script: list[types.Content] = Field(default_factory=list)
    requests: list[list[types.Content]] = Field(default_factory=list)
    """The contents of every request, in order."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append([c.model_copy(deep=True) for c in llm_request.contents])
        yield LlmResponse(
            content=self.script.pop(0),
            turn_complete=True,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=0, candidates_token_count=0, total_token_count=0
            ),
        )

    def function_responses_read(self) -> list[types.FunctionResponse]:
        """The function responses in the model's last request."""
        return [
            part.function_response
            for content in self.requests[-1]
            for part in content.parts or ()
            if part.function_response is not None
        ]


def scripted(name: str, args: dict[str, Any], final: str = "done") -> ScriptedLlm:
    """A model that calls ``name(**args)`` (call id ``call_0``), then says ``final``."""
    call = types.Part(function_call=types.FunctionCall(id="call_0", name=name, args=args))
    return ScriptedLlm(
        model="scripted",
        script=[
            types.Content(role="model", parts=[call]),
            types.Content(role="model", parts=[types.Part(text=final)]),
        ],
    )


class AgentRun:
    """One ADK agent with a ``Runner`` and an in-memory session."""

    def __init__(
        self,
        model: ScriptedLlm,
        tools: list[Any] | BaseToolset,
        *,
        user_id: str = "ana",
        session_id: str = "",
    ) -> None:
        self.model = model
        self.user_id = user_id
        agent = LlmAgent(
            name="helper",
            model=model,
            instruction="Use the tools.",
            tools=tools if isinstance(tools, list) else [tools],
        )
        self.sessions = InMemorySessionService()
        self.runner = Runner(app_name="tests", agent=agent, session_service=self.sessions)
        self.session_id = session_id
        self._created = False

    async def send(self, message: types.Content) -> list[Event]:
        if not self._created:
            session = await self.sessions.create_session(
                app_name="tests", user_id=self.user_id, session_id=self.session_id or None
            )
            self.session_id = session.id
            self._created = True
        return [
            event
            async for event in self.runner.run_async(
                user_id=self.user_id, session_id=self.session_id, new_message=message
            )
        ]

    async def ask(self, text: str) -> list[Event]:
        return await self.send(types.Content(role="user", parts=[types.Part(text=text)]))

    async def confirm(self, confirmation_id: str, response: dict[str, Any]) -> list[Event]:
        reply = types.FunctionResponse(
            id=confirmation_id, name="adk_request_confirmation", response=response
        )
        return await self.send(
            types.Content(role="user", parts=[types.Part(function_response=reply)])
        )


def function_calls(events: list[Event], name: str) -> list[types.FunctionCall]:
    return [call for event in events for call in event.get_function_calls() if call.name == name]


def function_responses(events: list[Event], name: str) -> list[types.FunctionResponse]:
    return [r for event in events for r in event.get_function_responses() if r.name == name]
