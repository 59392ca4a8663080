"""What the executor keeps about one tool, computed once per spec for the hot path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from invokit._spec import OutputLimit, ToolSpec
from invokit.schema._arguments import ArgumentValidator
from invokit.tools._base import Tool

if TYPE_CHECKING:
    from invokit.permissions import ToolPolicy


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
