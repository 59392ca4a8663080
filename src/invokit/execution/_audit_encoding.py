"""How audit records become JSON: one encoding shared by the audit sinks and the tracing sink.

A record holds what a model and a tool produced, so the encoding accepts any value: what JSON
cannot hold is made JSON-safe (:func:`jsonable`: bytes as base64, dataclasses as their fields,
anything else as its ``repr``), and ``credentials`` are never written (:data:`REDACTED`).
pydantic-core's serializers write the common case (plain JSON values) in one pass; everything
else goes through the careful walk.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

from invokit.execution._events import Event
from invokit.permissions import request_to_dict

REDACTED = "[redacted]"
_SECRET_KEYS = frozenset({"credentials"})


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of an event's data; ``credentials`` are never written out."""
    if isinstance(value, dict):
        return {
            _key(key): REDACTED if key in _SECRET_KEYS else jsonable(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((jsonable(item) for item in value), key=repr)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return jsonable(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "target") and hasattr(value, "kind"):
            return request_to_dict(value)  # type: ignore[arg-type]
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return repr(value)


def unencodable(exc: Exception) -> dict[str, str]:
    """The ``data`` written in place of an event's data that could not be encoded."""
    return {"unencodable": f"{type(exc).__name__}: {exc}"[:300]}


def _key(key: Any) -> str:
    """A dict key as JSON writes it: ``None`` is ``"null"``, booleans ``"true"``/``"false"``."""
    if key is None or type(key) is bool:
        return json.dumps(key)
    return str(key)


def encode_record(value: Any) -> bytes:
    """One audit record as compact UTF-8 JSON: what ``json.dumps(jsonable(value))`` writes,
    ``credentials`` redacted.

    A record of plain JSON values with no ``credentials`` key (what the executor emits) is
    serialized by pydantic-core in one pass, about a fifth of the standard library encoder's
    time; anything else (requests, sets, objects, NaN, a secret to redact, a lone surrogate)
    goes through the careful walk.
    """
    if _json_only(value):
        try:
            data: bytes = _serializer().to_json(value)
        except Exception:  # PydanticSerializationError: a lone surrogate
            pass
        else:
            return data
    return json.dumps(jsonable(value), separators=(",", ":")).encode("ascii")


def encode_event(event: Event) -> bytes:
    """:func:`encode_record` of ``event.to_dict()``; the common case is serialized from the
    event itself by a serializer compiled for :class:`Event`, with no dict built in between."""
    if (
        type(event.call_id) is str
        and type(event.tool) is str
        and type(event.time) is float
        and (event.session_id is None or type(event.session_id) is str)
        and _json_only(event.data)
    ):
        try:
            data: bytes = _event_serializer().to_json(event, warnings=False)
        except Exception:  # PydanticSerializationError: a lone surrogate
            pass
        else:
            return data
    return json.dumps(jsonable(event.to_dict()), separators=(",", ":")).encode("ascii")


def dumps_record(value: Any) -> str:
    """:func:`encode_record` as text."""
    return encode_record(value).decode("utf-8")


def _json_only(value: Any) -> bool:
    """Whether ``value`` is made of JSON values only (dicts with text keys, lists, tuples,
    text, ints, bools, ``None``, finite floats) and has no ``credentials`` key anywhere: then
    the fast serializer writes exactly what :func:`jsonable` and ``json.dumps`` would."""
    kind = type(value)
    if kind is dict:
        if "credentials" in value:
            return False
        for key in value:
            if type(key) is not str:
                return False
        items = value.values()
    elif kind is list or kind is tuple:
        items = value
    elif kind is float:
        return bool(value - value == 0.0)  # inf - inf and nan - nan are nan
    else:
        return kind is str or kind is int or kind is bool or value is None
    for item in items:
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is float:
            if item - item != 0.0:
                return False
        elif not _json_only(item):
            return False
    return True


_compiled: Any = None
_compiled_event: Any = None


def _event_serializer() -> Any:
    """pydantic-core's serializer for :class:`Event`, its fields typed (built on first use)."""
    global _compiled_event
    if _compiled_event is None:
        from pydantic_core import SchemaSerializer, core_schema

        text = core_schema.str_schema()
        typed = {
            "type": text,
            "call_id": text,
            "tool": text,
            "time": core_schema.float_schema(),
            "session_id": core_schema.nullable_schema(text),
            "data": core_schema.dict_schema(text, core_schema.any_schema()),
        }
        # ``execution`` groups events in memory only; it is not part of the record.
        names = [f.name for f in dataclasses.fields(Event) if f.name != "execution"]
        fields = [
            core_schema.dataclass_field(name, typed.get(name, core_schema.any_schema()))
            for name in names
        ]
        schema = core_schema.dataclass_schema(
            Event, core_schema.dataclass_args_schema("Event", fields), names, slots=True
        )
        _compiled_event = SchemaSerializer(schema, core_schema.CoreConfig(ser_json_bytes="base64"))
    return _compiled_event


def _serializer() -> Any:
    """pydantic-core's serializer for any value, bytes as base64 (built on first use)."""
    global _compiled
    if _compiled is None:
        from pydantic_core import SchemaSerializer, core_schema

        _compiled = SchemaSerializer(
            core_schema.any_schema(), core_schema.CoreConfig(ser_json_bytes="base64")
        )
    return _compiled
