"""What the executor keeps about one tool, computed once per spec for the hot path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from invokit._spec import OutputLimit, ToolSpec
from invokit.schema._arguments import ArgumentValidator
from invokit.tools._base import Tool

if TYPE_CHECKING:
    from invokit.permissions import Decision, ToolPolicy


@dataclass(slots=True)
class Prepared:
    """Everything about one tool the hot path needs, computed once per spec."""

    tool: Tool
    spec: ToolSpec
    validator: ArgumentValidator
    policy: ToolPolicy
    timeout: float
    limit: OutputLimit
    direct: Callable[..., Any] | None = None
    """The async function to await instead of ``tool.invoke`` (a plain ``@tool``)."""
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    lean: bool = False
    """``direct``, and no permission requests to ask for: the executor skips the context."""
    static: bool = False
    """The tool's spec can never change (a plain ``@tool``): no check per call."""
    settled: Decision | None = None
    """The policy's answer, allow or deny, for every call of a lean tool when no hook runs
    before or after it: the executor then takes its shortest path."""
    rounds: int = 0
    """Watchdog rounds the deadline lasts; 0 when it is too short to share the watchdog's."""
    denied: str = ""
    """The message a denied call gets, when ``settled`` denies."""
