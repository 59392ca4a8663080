"""Parsing and validating a call's arguments against a tool's input schema.

Strict JSON first (no NaN/Infinity, no duplicate keys, no lone surrogates, an object at the top)
within bounds checked before any work that grows with them: at most :data:`DEFAULT_MAX_BYTES`
of JSON (checked before parsing), :data:`DEFAULT_MAX_DEPTH` levels of nesting and
:data:`DEFAULT_MAX_ITEMS` values in all (counted before parsing too, when the text is long enough
to hold that many: :mod:`._width`). Then JSON Schema through a validator compiled once per
schema. Every problem comes back with its JSON pointer in one
:class:`~invokit.exceptions.InvalidArguments`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from invokit.exceptions import (
    ArgumentIssue,
    ArgumentsTooLarge,
    InvalidArguments,
    InvalidToolDefinition,
    MalformedArguments,
)
from invokit.schema._issues import IssueFinder, short
from invokit.schema._width import too_many_values

DEFAULT_MAX_DEPTH = 64
"""The deepest nesting of arrays and objects accepted."""
DEFAULT_MAX_BYTES = 4 << 20
"""The most bytes of JSON (UTF-8) accepted as one call's arguments, refused before parsing."""
DEFAULT_MAX_ITEMS = 50_000
"""The most values (array items and object members, at every level) in one call's arguments."""
# Values that cannot hide an overflowed float (jiter reads 1e999 as inf).
_SCALARS = frozenset({str, int, bool, type(None)})
_POSITION = re.compile(r" at line (\d+) column (\d+)$")
_STRICT_INT = "x-invokit-strict-integer"
# jiter's string cache saves allocations for the keys small arguments repeat from call to call;
# over tens of thousands of distinct keys it only misses (26 ms instead of 44 ms for 48,000
# keys without it, the interpreter lock held), so large texts are parsed without it.
_CACHED_UP_TO = 64 << 10

# jiter and jsonschema_rs are loaded on first use, so ``import invokit`` stays light.
_from_json: Callable[..., Any] | None = None


def _json_parser() -> Callable[..., Any]:
    global _from_json
    if _from_json is None:
        from jiter import from_json

        _from_json = from_json
    return _from_json


class _StrictInteger:
    """Custom keyword: refuse ``1.0`` where the schema says integer (strict typing)."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.on = bool(value)

    def validate(self, instance: Any) -> None:
        if self.on and isinstance(instance, float):
            raise ValueError(f"{instance!r} is written as a decimal number; write an integer")


def compile_schema(
    schema: Mapping[str, Any], *, strict: bool = False, tool: str | None = None
) -> Any:
    """Check ``schema`` against its meta-schema and compile it; raise at definition time if bad."""
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(dict(schema))
    except jsonschema_rs.ValidationError as exc:
        raise InvalidToolDefinition(
            f"input schema is not valid JSON Schema: {exc.message}", tool=tool
        ) from None
    except jsonschema_rs.ReferencingError as exc:
        raise InvalidToolDefinition(
            f"input schema has an unresolvable $schema: {exc}", tool=tool
        ) from None
    target = _mark_integers(schema) if strict else schema
    try:
        return jsonschema_rs.validator_for(
            dict(target),
            keywords={_STRICT_INT: _StrictInteger} if strict else None,
            retriever=_refuse_remote,
        )
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        raise InvalidToolDefinition(f"input schema cannot be compiled: {exc}", tool=tool) from None


def _refuse_remote(uri: str) -> Any:
    # Defining or validating a tool never does I/O (AgentsKit T10): remote $refs are refused.
    raise ValueError(f"remote $ref {uri!r} is not fetched; inline it or use $defs")


def _mark_integers(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _mark_integers(v) for k, v in node.items()}
        kind = node.get("type")
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
            out[_STRICT_INT] = True
        return out
    if isinstance(node, list):
        return [_mark_integers(v) for v in node]
    return node


class ArgumentValidator:
    """Parses and validates arguments for one schema; build once, use for every call.

    Call it, or its ``validate`` attribute (a little faster: no ``__call__`` dispatch), with
    JSON text, UTF-8 bytes or a mapping; it returns the arguments as a dict or raises
    :class:`~invokit.exceptions.MalformedArguments` / :class:`~invokit.exceptions.InvalidArguments`.

    Args:
        schema: the tool's input schema (an object schema).
        strict: refuse ``1.0`` for integer fields (JSON Schema itself accepts it).
        max_depth: the deepest nesting of arrays and objects accepted.
        max_bytes: the most bytes of JSON text accepted (checked before parsing; a mapping,
            parsed already, is held to the depth and value bounds only).
        max_items: the most values, at every level, accepted.
    """

    __slots__ = (
        "_issues",
        "_validator",
        "max_bytes",
        "max_depth",
        "max_items",
        "schema",
        "strict",
        "validate",
    )

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        strict: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_items: int = DEFAULT_MAX_ITEMS,
        tool: str | None = None,
    ) -> None:
        self.schema = schema
        self.strict = strict
        self.max_depth = max_depth
        self.max_bytes = max_bytes
        self.max_items = max_items
        self._validator = compile_schema(schema, strict=strict, tool=tool)
        self._issues = IssueFinder(self._validator, schema)
        self.validate: Callable[[str | bytes | Mapping[str, Any]], dict[str, Any]] = (
            _validate_function(
                self._validator.is_valid,
                self._invalid,
                Bounds(depth=max_depth, size=max_bytes, items=max_items),
            )
        )

    def __call__(self, arguments: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
        """Return the arguments as a dict, or raise ``MalformedArguments``/``InvalidArguments``."""
        return self.validate(arguments)

    def issues(self, value: Any) -> list[ArgumentIssue]:
        """Schema violations in ``value`` (the first :data:`MAX_ISSUES` found), each with
        its JSON pointer."""
        return self._issues.issues(value)

    def _invalid(self, value: Any) -> InvalidArguments:
        found, more, complete = self._issues.report(value)
        return InvalidArguments(found, more=more, complete=complete)


@dataclass(frozen=True, kw_only=True, slots=True)
class Bounds:
    """The size bounds arguments are checked against before the schema sees them."""

    depth: int = DEFAULT_MAX_DEPTH
    """The deepest nesting of arrays and objects."""
    size: int = DEFAULT_MAX_BYTES
    """The most bytes of JSON text."""
    items: int = DEFAULT_MAX_ITEMS
    """The most values (array items and object members) at every level together."""


def _validate_function(
    is_valid: Callable[[Any], bool],
    invalid: Callable[[Any], InvalidArguments],
    bounds: Bounds,
) -> Callable[[str | bytes | Mapping[str, Any]], dict[str, Any]]:
    """The validation function of one validator, with its parts bound as closure variables.

    This runs once per tool call, so JSON text, the common case, is parsed inline; it applies
    the same checks, and raises the same errors, as :func:`parse_arguments`.
    """
    parse = _json_parser()
    # A text of at most this many characters can neither nest deeper than the depth bound,
    # hold more than the item bound of values, nor be over the byte bound (a character is at
    # most 4 bytes): it is parsed here, inline; a longer one goes the checked way.
    small = min(2 * bounds.depth, 2 * bounds.items, bounds.size // 4)

    def validate(arguments: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
        if type(arguments) is str and len(arguments) <= small:
            try:
                data = arguments.encode()
                value: dict[str, Any] = parse(data, allow_inf_nan=False, catch_duplicate_keys=True)
            except UnicodeEncodeError as exc:
                raise _lone_surrogate(exc) from None
            except ValueError as exc:
                raise _malformed(str(exc), data) from None
            if type(value) is not dict:
                raise _not_an_object(value)
            if not _SCALARS.issuperset(map(type, value.values())) and not _finite(value):
                raise _overflow()
        else:
            value = parse_arguments(arguments, bounds=bounds)
        if not is_valid(value):
            raise invalid(value)
        return value

    return validate


def parse_arguments(
    arguments: str | bytes | Mapping[str, Any],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    bounds: Bounds | None = None,
) -> dict[str, Any]:
    """Parse arguments strictly into a dict, within ``bounds`` (default: the defaults with
    ``max_depth``); never turns bad input into ``{}``."""
    if bounds is None:
        bounds = Bounds(depth=max_depth)
    # Text is by far the most common input: test for it before the slower ABC check.
    if isinstance(arguments, str):
        if len(arguments) > bounds.size:
            raise _too_large(len(arguments), bounds.size)
        try:
            data = arguments.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _lone_surrogate(exc) from None
        value = _parse_bytes(data, bounds)
    elif isinstance(arguments, bytes | bytearray):
        value = _parse_bytes(bytes(arguments), bounds)
    elif isinstance(arguments, Mapping):
        value = dict(arguments)
        if bounds.depth < 1 or not _flat_ascii(value, bounds):
            _check_value(value, bounds)
    else:
        raise MalformedArguments(
            f"arguments must be JSON text or an object, not {type(arguments).__name__}"
        )
    if type(value) is not dict:
        raise _not_an_object(value)
    return value


def _lone_surrogate(exc: UnicodeEncodeError) -> MalformedArguments:
    return MalformedArguments("the text holds a lone surrogate", position=exc.start)


def _not_an_object(value: Any) -> InvalidArguments:
    issue = ArgumentIssue(
        path="", message="arguments must be a JSON object", expected="object", actual=short(value)
    )
    return InvalidArguments([issue])


def _parse_bytes(data: bytes, bounds: Bounds) -> Any:
    if len(data) > bounds.size:
        raise _too_large(len(data), bounds.size)
    # A value takes a byte and a comma: only a longer text can hold too many, and is counted
    # before parsing (which holds the interpreter lock), at C speed.
    if len(data) > 2 * bounds.items and too_many_values(data, bounds.items):
        raise _too_wide(bounds.items)
    try:
        value = (_from_json or _json_parser())(
            data,
            allow_inf_nan=False,
            catch_duplicate_keys=True,
            cache_mode="all" if len(data) <= _CACHED_UP_TO else "none",
        )
    except ValueError as exc:
        raise _malformed(str(exc), data) from None
    # A text shorter than twice a bound cannot break it.
    if len(data) > min(2 * bounds.depth, 2 * bounds.items):
        if not _check_shape(value, bounds):
            raise _overflow()
    # jiter reads 1e999 as inf; looking at the values is cheaper than scanning the text for it.
    # Only floats and containers need the full walk; most arguments have neither.
    elif (
        type(value) is dict
        and not _SCALARS.issuperset(map(type, value.values()))
        and not _finite(value)
    ):
        raise _overflow()
    return value


def _too_deep(max_depth: int) -> ArgumentsTooLarge:
    return ArgumentsTooLarge("depth", max_depth)


def _too_large(size: int, max_bytes: int) -> ArgumentsTooLarge:
    return ArgumentsTooLarge("bytes", max_bytes, size=size)


def _too_wide(max_items: int) -> ArgumentsTooLarge:
    return ArgumentsTooLarge("values", max_items)


def _enter(node: Any, depth: int, budget: int, bounds: Bounds) -> int:
    """Count one container, at ``depth``, against ``bounds``: raise past the depth or the
    number of values; the budget of values left."""
    if depth > bounds.depth:
        raise _too_deep(bounds.depth)
    budget -= len(node)
    if budget < 0:
        raise _too_wide(bounds.items)
    return budget


def _check_shape(value: Any, bounds: Bounds) -> bool:
    """Raise when ``value`` nests deeper than ``bounds.depth`` or holds more than
    ``bounds.items`` values; whether every float in it is finite (jiter reads 1e999 as inf).

    One walk, a level at a time: the values of a level are counted before any is looked at,
    and the loop over them is the only Python work per value (this runs on the event loop,
    for up to the item bound of values)."""
    budget = bounds.items
    finite = True
    level: list[Any] = [value] if type(value) is dict or type(value) is list else []
    depth = 1
    while level:
        if depth > bounds.depth:
            raise _too_deep(bounds.depth)
        budget -= sum(map(len, level))
        if budget < 0:
            raise _too_wide(bounds.items)
        below: list[Any] = []
        keep = below.append
        for node in level:
            for item in node.values() if type(node) is dict else node:
                kind = type(item)
                if kind is dict or kind is list:
                    keep(item)
                elif kind is float and item - item != 0.0:  # inf - inf is nan
                    finite = False
        level = below
        depth += 1
    return finite


def _overflow() -> MalformedArguments:
    return MalformedArguments(
        "a number is too large for a float (it would be Infinity, which is not allowed)"
    )


def _malformed(message: str, data: bytes) -> MalformedArguments:
    match = _POSITION.search(message)
    if match is None:
        return MalformedArguments(message)
    line, column = int(match.group(1)), int(match.group(2))
    reason = message[: match.start()]
    if reason == "recursion limit exceeded":
        # jiter stops near 200 levels, whatever max_depth says.
        reason = "nesting is deeper than the JSON parser allows"
    if "duplicate key" in reason.lower():
        reason = reason.replace("Detected duplicate key", "duplicate key")
    lines = data.split(b"\n")
    offset = sum(len(chunk) + 1 for chunk in lines[: line - 1]) + column - 1
    # jiter gives column 0 for an empty text; a position is never before the start.
    offset = min(max(offset, 0), len(data))
    # jiter points at "NaN", or just past the sign of "-Infinity".
    around = (data[offset : offset + 9], data[max(offset - 1, 0) : offset + 9])
    if reason in ("expected value", "invalid number") and any(
        text.lstrip(b"-+").startswith((b"NaN", b"Inf")) for text in around
    ):
        reason = "NaN and Infinity are not JSON numbers"
    return MalformedArguments(f"{reason} (line {line}, column {column})", position=offset)


def _flat_ascii(value: dict[Any, Any], bounds: Bounds) -> bool:
    """True for the common mapping that needs no deeper check: ASCII keys, scalar values,
    not too many of them."""
    if len(value) > bounds.items:
        return False
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(item)
        if kind is str:
            if not item.isascii():
                return False
        elif not (kind is int or kind is bool or item is None):
            return False
    return True


def _check_value(value: Any, bounds: Bounds) -> None:
    """The checks JSON text gets, for a mapping given as such: JSON types only, finite
    numbers, no lone surrogates, bounded depth and values. (The byte bound is for text, to
    bound parsing; a mapping is parsed already.)"""
    budget = bounds.items
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        # The same rule as for text: an object or array is one level, even when empty.
        budget = _enter(node, depth, budget, bounds)
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    raise MalformedArguments(f"object key {key!r} is not a string")
                _check_text(key)
                _check_item(item, depth, stack)
        else:
            for item in node:
                _check_item(item, depth, stack)


def _check_item(item: Any, depth: int, stack: list[tuple[Any, int]]) -> None:
    if isinstance(item, dict | list | tuple):
        stack.append((item, depth + 1))
    elif isinstance(item, float):
        if not math.isfinite(item):
            raise MalformedArguments(
                f"{item} is not a JSON number (NaN and Infinity are not allowed)"
            )
    elif isinstance(item, str):
        _check_text(item)
    elif not (item is None or isinstance(item, bool | int)):
        raise MalformedArguments(f"a value of type {type(item).__name__} is not JSON")


def _check_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise MalformedArguments("a string holds a lone surrogate") from None


def _finite(value: Any) -> bool:
    for item in value.values() if type(value) is dict else value:
        kind = type(item)
        if kind is float:
            if item - item != 0.0:  # inf - inf is nan
                return False
        elif (kind is dict or kind is list) and not _finite(item):
            return False
    return True
