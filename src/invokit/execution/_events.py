"""Structured events the executor emits at every step, and the sink protocol that receives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

EventType: TypeAlias = Literal[
    "received",
    "validated",
    "decided",
    "approval_requested",
    "approval_resolved",
    "started",
    "progress",
    "completed",
    "failed",
    "interrupted",
]

ALL_EVENT_TYPES: frozenset[str] = frozenset(EventType.__args__)  # type: ignore[attr-defined]


@dataclass(slots=True, kw_only=True)
class Event:
    """One step of one call.

    ``data`` depends on ``type``: ``decided`` carries ``verdict``, ``reason`` and ``rule``;
    ``approval_requested`` the approval ``id``, ``arguments`` and ``requests``;
    ``approval_resolved`` the ``id``, ``approved``, ``scope``, ``by`` and ``reason``;
    ``completed``/``failed`` the ``is_error``, ``kind``, ``message``, ``duration`` and the
    ``arguments`` that ran; ``progress`` the ``progress``, ``total`` and ``message`` (or, once
    per call, ``callback_error`` when the host's ``on_progress`` callback failed).
    """

    type: EventType
    call_id: str
    tool: str
    time: float
    """Seconds since the epoch (``time.time()``)."""
    session_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    execution: int = 0
    """Which execution of the call this is: the same for every event of one ``execute``, and
    unique among the executions in flight in this process (call ids are not: MCP request ids
    are per connection). For grouping in memory (tracing); not stored, not in ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the event."""
        return {
            "type": self.type,
            "call_id": self.call_id,
            "tool": self.tool,
            "time": self.time,
            "session_id": self.session_id,
            "data": self.data,
        }


@runtime_checkable
class EventSink(Protocol):
    """Receives events. ``emit`` is called on the executor's hot path: it must not block
    (buffer, and write in the background or on ``flush``)."""

    @property
    def types(self) -> frozenset[str] | None:
        """The event types this sink wants; ``None`` for all of them (a sink without this
        attribute gets all of them too)."""
        ...

    def emit(self, event: Event) -> None:
        """Take one event; never raise for an I/O problem (warn instead)."""
        ...

    def flush(self) -> None:
        """Write out what is buffered."""
        ...

    def close(self) -> None:
        """Flush and release the sink's resources."""
        ...


def new_event(
    kind: EventType,
    call_id: str,
    tool: str,
    time: float,
    session_id: str | None,
    data: Any,
    execution: int = 0,
) -> Event:
    """``Event(...)`` for the executor's hot path (about a sixth of the keyword constructor's
    cost); sets every field, exactly as the constructor would."""
    event: Event = object.__new__(Event)
    event.type = kind
    event.call_id = call_id
    event.tool = tool
    event.time = time
    event.session_id = session_id
    event.data = data
    event.execution = execution
    return event


def text_field(value: Any) -> str | None:
    """An envelope field (type, call id, tool, session) as text: itself when it is text (or
    ``None``), else only its type's name, which can hold no secret."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    return f"<{type(value).__name__}>"
