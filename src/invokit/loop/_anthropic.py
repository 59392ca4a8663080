"""The Anthropic Messages adapter.

Declarations, ``tool_use`` parsing and ``tool_result`` messages come from
:mod:`invokit.providers.anthropic`; this module replays the transcript in the Messages format
(system prompt apart, roles alternating) and reads the reply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.loop._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
)
from invokit.providers import anthropic as provider

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic


class AnthropicModel:
    """A :class:`Model` over ``client.messages.create``.

    Args:
        client: an ``anthropic.AsyncAnthropic`` client.
        model: the model name.
        max_tokens: the reply's token limit (the Messages API requires one).
        cache: mark the tool list as a prompt-cache prefix.
        settings: more request fields sent as they are (``temperature``, ``tool_choice``...).
    """

    def __init__(
        self,
        client: AsyncAnthropic,
        model: str,
        *,
        max_tokens: int = 4096,
        cache: bool = False,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.cache = cache
        self.settings = dict(settings or {})
        self._declared: tuple[tuple[str, ...], provider.AnthropicTools] | None = None

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r})"

    async def respond(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the transcript and tools; return the reply as a turn."""
        decl = self._declarations(tools)
        system, history = anthropic_messages(messages, decl)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": history,
        }
        if system:
            body["system"] = system
        if decl.tools:
            body["tools"] = decl.tools
        body.update(self.settings)
        response = await self.client.messages.create(**body)
        data = response.model_dump(mode="json", exclude_none=True)
        text = "".join(
            b.get("text", "") for b in data.get("content", ()) if b.get("type") == "text"
        )
        metadata: dict[str, Any] = {"stop_reason": data.get("stop_reason")}
        if data.get("usage"):
            metadata["usage"] = data["usage"]
        return AssistantMessage(text=text, calls=tuple(decl.calls(data)), metadata=metadata)

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self.client.close()

    def _declarations(self, tools: Sequence[ToolSpec]) -> provider.AnthropicTools:
        key = tuple(spec.fingerprint for spec in tools)
        if self._declared is None or self._declared[0] != key:
            self._declared = (key, provider.tools(list(tools), cache=self.cache))
        return self._declared[1]


def anthropic_messages(
    messages: Sequence[Message], decl: provider.AnthropicTools
) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the Messages API history for the transcript.

    Consecutive messages of one role are merged (the API wants roles to alternate), so tool
    results followed by a user's words become one user message, results first.
    """
    system: list[str] = []
    history: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # the API refuses empty content
        if history and history[-1]["role"] == role:
            history[-1]["content"].extend(blocks)
        else:
            history.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, SystemMessage):
            system.append(message.text)
        elif isinstance(message, UserMessage):
            add("user", [{"type": "text", "text": message.text}])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if message.text:
                blocks.append({"type": "text", "text": message.text})
            blocks.extend(_tool_use(call, decl) for call in message.calls)
            add("assistant", blocks)
        elif isinstance(message, ToolResultsMessage):
            add("user", list(decl.results(message.results)["content"]))
    return "\n\n".join(system), history


def _tool_use(call: ToolCall, decl: provider.AnthropicTools) -> dict[str, Any]:
    arguments: Any = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            arguments = None
    # Anthropic inputs are always objects; text that was not one is replayed as empty (the
    # call's error result already told the model what was wrong with it).
    return {
        "type": "tool_use",
        "id": call.id,
        "name": decl.names.provider_name(call.name),
        "input": dict(arguments) if isinstance(arguments, Mapping) else {},
    }
