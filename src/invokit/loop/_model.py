"""The one thing the loop needs from a model: messages and tools in, one turn out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from invokit._spec import ToolSpec
from invokit.loop._messages import AssistantMessage, Message


@runtime_checkable
class Model(Protocol):
    """A chat model that can call tools.

    Adapters exist for the OpenAI SDK client (and any OpenAI-compatible endpoint) and for the
    Anthropic SDK client; :class:`invokit.testing.ScriptedModel` replays a fixed script. Any
    object with this method works.
    """

    async def respond(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """The model's next turn for the conversation ``messages``.

        Args:
            messages: the transcript so far; every tool call in it has exactly one result.
            tools: the tools the model may call, sorted by name, under their invokit names.

        Returns:
            The turn's text and tool calls. Calls carry invokit tool names (an adapter maps
            provider names back) and ids unique within the turn.
        """
        ...
