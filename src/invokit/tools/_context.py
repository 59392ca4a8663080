"""What a running tool can see of its call: ids, progress reporting, cancellation, resources."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress:
    """One progress report from a running tool."""

    progress: float | None = None
    total: float | None = None
    message: str | None = None
    data: Any = None
    """A partial result a streaming tool yielded."""


ProgressCallback = Callable[[Progress], Awaitable[None]]


class ToolContext:
    """Passed to a tool that asks for it (a parameter typed ``ToolContext``); never in its schema.

    Attributes:
        call_id: the model's call id.
        tool_name: the tool being run.
        session_id: the conversation the call belongs to, if the host said.
        turn_id: the model turn, if the host said.
        idempotency_key: stable across a resume of the same call, for side effects that
            must happen once (pass it to payment or ticket APIs).
        resources: shared objects the host put on the executor (clients, pools).
        credentials: what the host supplied when resuming an ``AuthRequired`` interrupt;
            never shown to the model.
        metadata: the call's metadata.
    """

    __slots__ = (
        "_cancelled",
        "_on_progress",
        "call_id",
        "credentials",
        "idempotency_key",
        "metadata",
        "resources",
        "session_id",
        "tool_name",
        "turn_id",
    )

    def __init__(
        self,
        *,
        call_id: str = "local",
        tool_name: str = "",
        session_id: str | None = None,
        turn_id: str | None = None,
        idempotency_key: str | None = None,
        resources: Mapping[str, Any] | None = None,
        credentials: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.call_id = call_id
        self.tool_name = tool_name
        self.session_id = session_id
        self.turn_id = turn_id
        self.idempotency_key = idempotency_key or call_id
        self.resources = resources if resources is not None else _EMPTY
        self.credentials = credentials if credentials is not None else _EMPTY
        self.metadata = metadata if metadata is not None else _EMPTY
        self._on_progress = on_progress
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        """True once the call was cancelled or timed out; sync tools in threads should check it."""
        return self._cancelled

    def cancel(self) -> None:
        """Mark the call cancelled (the executor does this on timeout and cancellation)."""
        self._cancelled = True

    async def report_progress(
        self, progress: float | None = None, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far along the call is (an MCP progress notification, a UI bar)."""
        if self._on_progress is not None:
            await self._on_progress(Progress(progress=progress, total=total, message=message))

    async def emit(self, data: Any) -> None:
        """Report a partial result (what a streaming tool yields before its last value)."""
        if self._on_progress is not None:
            await self._on_progress(Progress(data=data))

    def __repr__(self) -> str:
        return f"ToolContext(call_id={self.call_id!r}, tool_name={self.tool_name!r})"
