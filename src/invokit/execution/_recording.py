"""The raw record of one event: what the executor hands its sinks on the hot path.

Building an :class:`Event` and its envelope costs more than the step it reports; the executor
hands sinks a tuple instead, and the event is made where it is written (an audit sink's writer
thread) or where a sink asks for it. On the hot path even the event's data is left to be built
there: the record holds the function that builds it and what it is built from, so a call's path
makes no dict per event (dicts an audit buffer holds until the writer runs also cost the garbage
collector, which walks them).
"""

from __future__ import annotations

from typing import Any

from invokit._calls import PRINCIPAL
from invokit.execution._events import Event, new_event, text_field

Record = tuple[Any, ...]
"""One event as the executor records it: ``(type, the ToolCall, time.time(), data)``, or
``(type, call, time, build, *parts)``: data that is not a dict is the function that builds it,
``build(*parts)``, called where the event is made."""


def record_event(record: Record) -> Event:
    """The :class:`Event` of a raw record; a malformed call's fields (a name, id or session
    that is not text) are written as their types only, which can hold no secret."""
    kind, call, when, data = record[:4]
    if type(data) is not dict:  # the function that builds it, from the parts that follow
        data = data(*record[4:])
    if kind == "received" and call.metadata:
        data = _with_principal(data, call.metadata)
    name, call_id, session = call.name, call.id, call.session_id
    if (
        type(name) is not str
        or type(call_id) is not str
        or (session is not None and type(session) is not str)
    ):
        name, call_id = text_field(name) or "", text_field(call_id) or ""
        session = text_field(session)
    # id(call): the call object lives for its whole execution (the record holds it), so its
    # events share it and no other execution in flight has it.
    return new_event(kind, call_id, name, when, session, data, id(call))


def _with_principal(data: dict[str, Any], metadata: Any) -> dict[str, Any]:
    """``data`` with who called (``principal``: its issuer and subject), when the host verified
    it (:data:`invokit._calls.PRINCIPAL`); only text is kept, as for the envelope."""
    who = metadata.get(PRINCIPAL) if isinstance(metadata, dict) else None
    if not isinstance(who, dict):
        return data
    iss, sub = who.get("iss"), who.get("sub")
    if type(iss) is not str or type(sub) is not str:
        return data
    return {**data, "principal": {"iss": iss, "sub": sub}}
