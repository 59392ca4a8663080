"""Hooks around the invoke step: observe, rewrite the arguments, skip with a result, or halt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from invokit._calls import ToolCall, ToolResult
from invokit._spec import ToolSpec


@dataclass(frozen=True, slots=True)
class Continue:
    """Go on as planned."""


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Run with these arguments instead; they are validated and checked by policy again."""

    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Skip:
    """Do not run the tool; the model reads ``result`` (its call id and name are set for you)."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class Halt:
    """Stop: the call fails with ``reason`` (kind ``halted``) and an agent loop ends its run."""

    reason: str


HookAction: TypeAlias = Continue | Rewrite | Skip | Halt


class Hook(Protocol):
    """Both methods are optional; define the ones you need. Hooks run in order.

    ``before_call`` runs after the call was validated, allowed and (where asked) approved,
    right before the tool; ``after_call`` sees every result that went through the invoke step
    and may replace it.
    """

    async def before_call(
        self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
    ) -> HookAction | None:
        """Return ``None`` or :class:`Continue` to go on."""
        ...

    async def after_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """Return a replacement result, or ``None`` to keep it."""
        ...
