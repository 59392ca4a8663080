"""Hooks around the loop's model turns: watch the transcript grow, or halt the run.

These sit beside the executor's hooks (``before_call`` / ``after_call``, which see single
tool calls): a ``Halt`` from an executor hook also ends the run, with reason ``halted``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from invokit.execution import Halt
from invokit.loop._messages import AssistantMessage, Message


class RunHook(Protocol):
    """All three methods are optional; define the ones you need. Hooks run in order.

    ``before_model`` and ``after_model`` may return :class:`~invokit.execution.Halt` to end
    the run (reason ``halted``); calls the model made in a halted turn are not run and get an
    error result each. ``on_message`` sees every message appended to the transcript, as it is
    appended, including the error results written when a run is cancelled; it is synchronous
    so that it also runs while the run is being cancelled.
    """

    async def before_model(self, turn: int, messages: Sequence[Message]) -> Halt | None:
        """Called before model turn number ``turn`` (1-based)."""
        ...

    async def after_model(self, turn: int, message: AssistantMessage) -> Halt | None:
        """Called with the model's turn before its calls run."""
        ...

    def on_message(self, message: Message) -> None:
        """Called for each message the run appends."""
        ...
