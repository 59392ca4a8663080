"""What a host answers for each paused call when it resumes a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from invokit.approvals import ApprovalDecision


@dataclass(frozen=True, kw_only=True, slots=True)
class Credentials:
    """The answer to an ``AuthorizationRequired`` interrupt: credentials for the tool."""

    values: dict[str, Any]
    """Handed to the tool as ``ctx.credentials``; never shown to the model."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExternalResult:
    """The answer to an ``ExternalCall`` interrupt: what the host-run tool returned."""

    value: Any
    """A JSON-safe value, turned into the call's result like any tool's return value."""


Resolution: TypeAlias = bool | ApprovalDecision | Credentials | ExternalResult
"""One decision for one paused call: ``True`` / ``False`` or an :class:`ApprovalDecision`
for an approval, :class:`Credentials` for authorization, :class:`ExternalResult` for a
host-run call."""
