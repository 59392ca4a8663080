"""Conversion of tool return values to JSON-safe data (AgentsKit T5)."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import math
import sys
from collections.abc import Mapping
from typing import Any

from invokit.exceptions import NotJsonSafe

_PLAIN = (str, int, bool, type(None))


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as JSON data: dicts with string keys, lists, str, int, float, bool, None.

    Datetimes become ISO 8601, bytes base64, ``Decimal`` a number (or a string when it has no
    exact float), ``UUID`` and ``Path`` strings, enums their value, sets sorted lists, dataclasses
    and pydantic models their fields. Anything else raises :class:`NotJsonSafe` naming the type
    and the JSON pointer to it.
    """
    return _convert(value, "")


def _convert(value: Any, path: str) -> Any:
    if isinstance(value, _PLAIN):
        if isinstance(value, enum.Enum):
            return _convert(value.value, path)
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise NotJsonSafe(f"float({value})", path)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, enum.Enum):
                key = key.value
            text = _key_text(key, path)
            out[text] = _convert(item, f"{path}/{_escape(text)}")
        return out
    if isinstance(value, list | tuple):
        return [_convert(item, f"{path}/{i}") for i, item in enumerate(value)]
    return _convert_special(value, path)


def _convert_special(value: Any, path: str) -> Any:
    if isinstance(value, enum.Enum):
        return _convert(value.value, path)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    # A type whose module was never imported cannot be an instance here: look them up in
    # sys.modules instead of importing decimal, uuid and pathlib with invokit.
    decimal = sys.modules.get("decimal")
    if decimal is not None and isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise NotJsonSafe(f"Decimal({value})", path)
        as_int = int(value)
        if as_int == value:
            return as_int
        as_float = float(value)
        return as_float if decimal.Decimal(repr(as_float)) == value else str(value)
    uuid = sys.modules.get("uuid")
    pathlib = sys.modules.get("pathlib")
    if (uuid is not None and isinstance(value, uuid.UUID)) or (
        pathlib is not None and isinstance(value, pathlib.PurePath)
    ):
        return str(value)
    if isinstance(value, set | frozenset):
        items = [_convert(item, f"{path}/{i}") for i, item in enumerate(value)]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _convert(fields, path)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        return _convert(dump(mode="json"), path)
    raise NotJsonSafe(_type_name(value), path)


def _key_text(key: Any, path: str) -> str:
    # The keys json.dumps accepts, written as it writes them (True -> "true", None -> "null").
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float) and math.isfinite(key):
        return repr(key)
    raise NotJsonSafe(f"{_type_name(key)} (as a key)", path)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _type_name(value: Any) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"
