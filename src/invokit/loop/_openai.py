"""The OpenAI Chat Completions adapter, for OpenAI and any OpenAI-compatible server.

Local servers (vLLM, llama.cpp's ``llama-server``, Ollama, LM Studio) speak the same wire
format; :func:`openai_compatible` points the ``openai`` SDK client at one by base URL.
Declarations, call parsing and result messages come from :mod:`invokit.providers.openai`;
this module only replays the transcript in that format and reads the reply.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from invokit._spec import ToolSpec
from invokit.exceptions import MissingExtra
from invokit.loop._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
)
from invokit.providers import openai as provider

if TYPE_CHECKING:
    from openai import AsyncOpenAI


class OpenAIChatModel:
    """A :class:`Model` over ``client.chat.completions.create``.

    Args:
        client: an ``openai.AsyncOpenAI`` client (its ``base_url`` may be any compatible
            server).
        model: the model name the server knows.
        strict: declare tools in strict mode (Structured Outputs); see
            :func:`invokit.providers.openai.tools`.
        settings: more request fields sent as they are (``temperature``, ``max_tokens``,
            ``parallel_tool_calls``...).
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        *,
        strict: bool = False,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.strict = strict
        self.settings = dict(settings or {})
        self._declared: tuple[tuple[str, ...], provider.OpenAITools] | None = None

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={str(self.client.base_url)!r})"

    async def respond(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """Send the transcript and tools; return the first choice as a turn."""
        decl = self._declarations(tools)
        body: dict[str, Any] = {"model": self.model, "messages": chat_messages(messages, decl)}
        if decl.tools:
            body["tools"] = decl.tools
        body.update(self.settings)
        response = await self.client.chat.completions.create(**body)
        data = response.model_dump(mode="json", exclude_none=True)
        choice = data["choices"][0] if data.get("choices") else {}
        metadata: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
        if data.get("usage"):
            metadata["usage"] = data["usage"]
        return AssistantMessage(
            text=choice.get("message", {}).get("content") or "",
            calls=tuple(decl.calls(data)),
            metadata=metadata,
        )

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self.client.close()

    def _declarations(self, tools: Sequence[ToolSpec]) -> provider.OpenAITools:
        # Tools rarely change between turns: reuse the declarations while they do not.
        key = tuple(spec.fingerprint for spec in tools)
        if self._declared is None or self._declared[0] != key:
            self._declared = (key, provider.tools(list(tools), api="chat", strict=self.strict))
        return self._declared[1]


def chat_messages(messages: Sequence[Message], decl: provider.OpenAITools) -> list[dict[str, Any]]:
    """The transcript as Chat Completions messages, tool names as the provider knows them."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": message.text})
        elif isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": decl.names.provider_name(call.name),
                            "arguments": call.arguments
                            if isinstance(call.arguments, str)
                            else json.dumps(dict(call.arguments), ensure_ascii=False),
                        },
                    }
                    for call in message.calls
                ]
            out.append(entry)
        elif isinstance(message, ToolResultsMessage):
            out.extend(decl.results(message.results))
    return out


def openai_compatible(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    strict: bool = False,
    settings: Mapping[str, Any] | None = None,
    timeout: float = 120.0,
    max_retries: int = 2,
) -> OpenAIChatModel:
    """A model on any server that speaks Chat Completions, by its base URL.

    Args:
        base_url: the API root, such as ``http://127.0.0.1:8000/v1`` (vLLM),
            ``http://127.0.0.1:8080/v1`` (llama.cpp) or ``http://127.0.0.1:11434/v1`` (Ollama).
        model: the model name the server knows.
        api_key: the key, if the server wants one; default ``OPENAI_API_KEY`` or a
            placeholder (local servers ignore it).
        strict: declare tools in strict mode.
        settings: more request fields.
        timeout: seconds to wait for a reply.
        max_retries: how often the SDK retries a failed request.

    Raises:
        MissingExtra: the ``openai`` package is not installed.
    """
    try:
        from openai import AsyncOpenAI
    except ImportError:
        raise MissingExtra("The OpenAI-compatible model adapter", "openai") from None
    key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
    client = AsyncOpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)
    return OpenAIChatModel(client, model, strict=strict, settings=settings)
