"""``ScriptedModel``: a model that replays a fixed list of turns, for tests of agents."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.loop import AssistantMessage, Message

Reply: TypeAlias = Callable[
    [Sequence[Message], Sequence[ToolSpec]], AssistantMessage | Awaitable[AssistantMessage]
]
ScriptedTurn: TypeAlias = AssistantMessage | str | Reply
"""One turn of a script: a message, plain text (a final answer), or a function of the
transcript and tools that returns the message (sync or async)."""


class ScriptExhausted(AssertionError):
    """The model was asked for more turns than its script holds.

    Attributes:
        turns: how many turns the script holds.
        messages: the transcript the extra request was made with.
    """

    def __init__(self, turns: int, messages: Sequence[Message]) -> None:
        self.turns = turns
        self.messages = tuple(messages)
        last = type(messages[-1]).__name__ if messages else "nothing"
        super().__init__(
            f"ScriptedModel was asked for turn {turns + 1} but its script has {turns} "
            f"turn(s); the last message was a {last}"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """What a :class:`ScriptedModel` was sent for one turn."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered, in order."""
        return [str(spec.name) for spec in self.tools]


def call(name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str = "") -> ToolCall:
    """A tool call for a script; an empty ``id`` gets ``call_<turn>_<index>`` when replayed."""
    return ToolCall(id=id, name=name, arguments=arguments if arguments is not None else {})


def turn(*calls: ToolCall, text: str = "") -> AssistantMessage:
    """A scripted model turn: some text and the calls it makes (in order)."""
    return AssistantMessage(text=text, calls=calls)


class ScriptedModel:
    """A :class:`~invokit.loop.Model` that replays ``turns`` in order, one per request.

    ::

        model = ScriptedModel([
            turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})),
            "The sums are 3 and 7.",
        ])
        outcome = await run(model, executor, [UserMessage(text="Add these")])
        assert model.requests[1].messages[-1]  # the results the model read

    Every request is recorded in :attr:`requests`. Asking past the end raises
    :class:`ScriptExhausted`, which fails a test with the transcript at hand.
    """

    def __init__(self, turns: Iterable[ScriptedTurn]) -> None:
        self.turns: list[ScriptedTurn] = list(turns)
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        """Turns not replayed yet."""
        return len(self.turns) - len(self.requests)

    async def respond(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AssistantMessage:
        """The next scripted turn; calls without an id get one."""
        index = len(self.requests)
        if index >= len(self.turns):
            raise ScriptExhausted(len(self.turns), messages)
        self.requests.append(ModelRequest(messages=tuple(messages), tools=tuple(tools)))
        scripted = self.turns[index]
        if isinstance(scripted, str):
            return AssistantMessage(text=scripted)
        if isinstance(scripted, AssistantMessage):
            message = scripted
        else:
            produced = scripted(messages, tools)
            message = await produced if inspect.isawaitable(produced) else produced
        # Numbered by the transcript, not by this object, so a script continued in another
        # process (after a resume) still makes ids that do not clash with earlier turns.
        number = 1 + sum(isinstance(m, AssistantMessage) for m in messages)
        calls = tuple(
            c if c.id else replace(c, id=f"call_{number}_{i}") for i, c in enumerate(message.calls)
        )
        return replace(message, calls=calls)
