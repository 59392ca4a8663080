"""A scripted LangChain chat model for agent tests: it answers from a list and keeps what it read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's own fake chat model with tools bound, recording the messages of each turn."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop=stop, **kwargs)

    def tool_messages_read(self) -> list[ToolMessage]:
        """The tool messages the model read on its last turn."""
        return [m for m in self.seen[-1] if isinstance(m, ToolMessage)]


def script(*calls: tuple[str, dict[str, Any]], final: str = "done") -> ScriptedChatModel:
    """A model that makes ``calls`` in one turn (ids ``call_0``, ``call_1``...), then says ``final``."""
    first = AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )
    return ScriptedChatModel(messages=iter([first, AIMessage(content=final)]))
