"""The issues of arguments that break their schema: each with its JSON pointer, what the
schema expects there and what was given, in words a model can act on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from invokit._frozen import fill_class
from invokit.exceptions import ArgumentIssue

MAX_ISSUES = 20
"""The most issues one report lists; the rest are counted (``InvalidArguments.more``)."""
LISTED_UP_TO = 4_000
"""Arguments with more values than this get only their first issue, whatever the schema: the
schema library lists issues only all at once, in time that grows with their number while the
interpreter lock is held (about 110 ms for 49,000 wrong members of an object), whereas the first
issue costs about as much as a validity check. The report then says more may exist; the model
fixes the first and calls again."""
LISTED_UP_TO_COSTLY = 500
"""The same for schemas with unions (``anyOf``, ``oneOf``) or that the evaluation output cannot
describe: their issues come from ``iter_errors``, which costs 10-30 µs a value (2 s at 49,000
items under a union)."""
MAX_MESSAGE = 300
"""The most characters of one issue's message (a schema library's message may quote the
whole value)."""


class Report(NamedTuple):
    """The issues found in one value."""

    issues: list[ArgumentIssue]
    """The first :data:`MAX_ISSUES`, sorted by pointer."""
    more: int
    """How many more were found."""
    complete: bool
    """False when only the first issue was looked for (a large value): more may exist."""


class IssueFinder:
    """Lists the issues of one compiled schema, from jsonschema-rs's evaluation output where
    that says the same as ``iter_errors`` (one pass, the expected value looked up once per
    schema place), from ``iter_errors`` where it does not; only the first issue of a large
    value (see :data:`LISTED_UP_TO`)."""

    __slots__ = ("_evaluable", "_expected_at", "_listed_up_to", "_schema", "_validator")

    def __init__(self, validator: Any, schema: Mapping[str, Any]) -> None:
        self._validator = validator
        self._schema = schema
        self._expected_at: dict[str, str | None] = {}
        self._evaluable = _evaluable(schema)
        text = json.dumps(schema, default=str)
        costly = not self._evaluable or '"anyOf"' in text or '"oneOf"' in text
        self._listed_up_to = LISTED_UP_TO_COSTLY if costly else LISTED_UP_TO

    def issues(self, value: Any) -> list[ArgumentIssue]:
        """The schema violations in ``value`` (at most :data:`MAX_ISSUES`), each with its
        JSON pointer."""
        return self.report(value).issues

    def report(self, value: Any) -> Report:
        """The first :data:`MAX_ISSUES` schema violations in ``value`` and how many more
        there are; only the first for a value of more than :data:`LISTED_UP_TO` values."""
        if _more_values_than(value, self._listed_up_to):
            return self._first(value)
        if not self._evaluable:
            return self._composed(value)
        found: list[ArgumentIssue] = []
        more = 0
        expected_at = self._expected_at
        for error in self._validator.evaluate(value).errors():
            if len(found) >= MAX_ISSUES:
                more += 1
                continue
            location: str = error["schemaLocation"]
            if not location.startswith("/") or "/anyOf" in location or "/oneOf" in location:
                # Inside a union, evaluation reports each failed branch; iter_errors gives one
                # issue per failed union. Outside the root resource, locations do not resolve.
                return self._composed(value)
            message: str = error["error"]
            pointer: str = error["instanceLocation"]
            target = _resolve(value, pointer)
            expected: str | None
            if message.endswith(_REQUIRED):
                # Also reported (at a wrong location) for a property that is present but
                # refused by additionalProperties; that issue is reported on its own.
                if _present(message, target):
                    continue
                expected = "required"
            else:
                expected = expected_at.get(location, _UNKNOWN)
                if expected is _UNKNOWN:
                    expected = expected_at[location] = _expected_at(self._schema, location)
            found.append(_new_issue(pointer, _clip(message), expected, short(target)))
        found.sort(key=_issue_path)
        return Report(found, more, True)

    def _composed(self, value: Any) -> Report:
        found: list[ArgumentIssue] = []
        more = 0
        for error in self._validator.iter_errors(value):
            if _spurious_required(error):
                continue
            if len(found) >= MAX_ISSUES:
                more += 1
            else:
                found.append(_issue(error))
        found.sort(key=_issue_path)
        return Report(found, more, True)

    def _first(self, value: Any) -> Report:
        """The first issue only: ``validate`` stops at it (a model fixes it and calls again).
        Never a listing of every issue, whose cost grows with them."""
        try:
            self._validator.validate(value)
        except Exception as error:  # jsonschema_rs.ValidationError, loaded lazily
            if hasattr(error, "instance_path"):
                issue = _refused_property(error) if _spurious_required(error) else _issue(error)
                return Report([issue], 0, False)
        # Not expected (a validity check refused the value): still a report, at the root.
        message = "the arguments do not match the input schema"
        return Report([_new_issue("", message, None, short(value))], 0, False)


_FLAT = frozenset({str, int, float, bool, type(None)})
"""The types of values that hold no others."""


def _more_values_than(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` values (array items and object members, at
    every level); stops counting at ``limit``."""
    if type(value) is dict and _FLAT.issuperset(map(type, value.values())):
        return len(value) > limit  # the common case: an object of plain values
    count = 0
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            count += len(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            count += len(current)
            stack.extend(current)
        else:
            continue
        if count > limit:
            return True
    return False


def _clip(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


# Keywords whose evaluation output differs from iter_errors (extra issues, locations inside
# another resource, other wording): a schema with any of them takes iter_errors every time.
_UNEVALUABLE = (
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "if",
    "then",
    "else",
    "not",
    "allOf",
    "contains",
    "propertyNames",
    "patternProperties",
    "prefixItems",
    "additionalItems",
)


def _evaluable(schema: Mapping[str, Any]) -> bool:
    """Whether issues can come from jsonschema-rs evaluation output for ``schema``: it uses
    none of :data:`_UNEVALUABLE` and no union through ``$ref`` (a property of such a name
    also counts: merely slower)."""
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError):
        return False
    if any(f'"{keyword}":' in text for keyword in _UNEVALUABLE):
        return False
    # Evaluation gives an error inside a referenced schema that schema's own location
    # (/$defs/...), so an error in a union branch reached through $ref cannot be told from
    # one outside any union.
    return not ('"$ref":' in text and ('"anyOf":' in text or '"oneOf":' in text))


_REQUIRED = " is a required property"
_UNKNOWN: Any = object()
_VALUED = frozenset(
    {
        "type",
        "enum",
        "const",
        "pattern",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
    }
)
_IssueFill = fill_class(ArgumentIssue)


def _new_issue(path: str, message: str, expected: str | None, actual: str | None) -> ArgumentIssue:
    """``ArgumentIssue(...)``, about a fifth of the cost of the frozen dataclass's ``__init__``
    (``invokit._frozen``)."""
    issue = object.__new__(_IssueFill)
    issue.path = path
    issue.message = message
    issue.expected = expected
    issue.actual = actual
    issue.__class__ = ArgumentIssue
    return issue  # type: ignore[no-any-return]


def _present(message: str, target: Any) -> bool:
    """Whether the property a "... is a required property" message names is in ``target``."""
    try:
        name = json.loads(message[: -len(_REQUIRED)])
    except ValueError:
        return False
    return isinstance(target, dict) and name in target


def _issue_path(issue: ArgumentIssue) -> str:
    return issue.path


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _resolve(value: Any, pointer: str) -> Any:
    """The part of ``value`` a JSON pointer names (``value`` itself for ``""``)."""
    if not pointer:
        return value
    if type(value) is dict and "~" not in pointer and pointer.count("/") == 1:
        return value.get(pointer[1:])  # a top-level property, the usual case
    for token in _tokens(pointer):
        try:
            value = value[int(token)] if isinstance(value, list | tuple) else value[token]
        except (KeyError, IndexError, ValueError, TypeError):
            return None
    return value


def _expected_at(schema: Any, location: str) -> str | None:
    """What the schema keyword at ``location`` asks for, e.g. ``maxLength: 3``."""
    tokens = _tokens(location)
    if not tokens:
        return None
    keyword = tokens[-1]
    if keyword not in _VALUED:
        return keyword
    node = schema
    for token in tokens:
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            return keyword
    if keyword == "type" and isinstance(node, str):
        node = [node]
    return f"{keyword}: {node!r}"


def _spurious_required(error: Any) -> bool:
    # jsonschema-rs 0.60 also reports "x is a required property" when x is present but refused
    # by additionalProperties: false; the additionalProperties issue already says what is wrong.
    kind = error.kind
    return (
        type(kind).__name__ == "Required"
        and isinstance(error.instance, dict)
        and getattr(kind, "property", None) in error.instance
    )


def _refused_property(error: Any) -> ArgumentIssue:
    """The issue a spurious "x is a required property" stands for: x is there, refused by
    ``additionalProperties`` (listing every issue to find that one would cost too much)."""
    name = error.kind.property
    issue = _issue(error)
    return ArgumentIssue(
        path=issue.path,
        message=_clip(f"Additional properties are not allowed ({json.dumps(name)} is not allowed)"),
        expected="additionalProperties",
        actual=issue.actual,
    )


def _issue(error: Any) -> ArgumentIssue:
    pointer = "".join(
        "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.instance_path
    )
    keyword = str(error.schema_path[-1]) if error.schema_path else None
    return ArgumentIssue(
        path=pointer,
        message=_clip(error.message),
        expected=_expected(keyword, error),
        actual=short(error.instance),
    )


def _expected(keyword: str | None, error: Any) -> str | None:
    if keyword is None:
        return None
    kind = getattr(error, "kind", None)
    for attr in ("types", "limit", "expected", "pattern", "options"):
        found = getattr(kind, attr, None)
        if found is not None:
            return f"{keyword}: {found!r}"
    return keyword


_SHORT_SCALARS = {True: "true", False: "false", None: "null"}


def short(value: Any, limit: int = 60) -> str:
    """A value as a model should see it: JSON (``true``, ``null``, ``"text"``), cut at ``limit``.

    Only about ``limit`` characters are ever written out, however large the value."""
    # Shown to a model, so in JSON (true, null, "text"), not Python's repr.
    kind = type(value)
    if kind is bool or value is None:
        return _SHORT_SCALARS[value]
    if kind is int:
        # str() of a huge int is slow (and refused past 4300 digits): say its size instead.
        text = str(value) if value.bit_length() < 4 * limit else f"<{value.bit_length()}-bit int>"
    elif kind is str:
        head = value[: limit + 1]  # only what can be shown is looked at
        if head.isprintable() and '"' not in head and "\\" not in head:
            text = f'"{head}"'
        else:
            text = _scalar(head, limit)
    else:
        text = "".join(_pieces(value, limit))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pieces(value: Any, limit: int) -> Any:
    """JSON text of ``value`` in pieces, stopping once about ``limit`` characters were given."""
    written = 0
    for piece in _json_pieces(value, limit):
        yield piece
        written += len(piece)
        if written > limit:
            return


def _json_pieces(value: Any, limit: int) -> Any:
    if isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            if index:
                yield ", "
            yield _scalar(str(key), limit)
            yield ": "
            yield from _json_pieces(item, limit)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ", "
            yield from _json_pieces(item, limit)
        yield "]"
    else:
        yield _scalar(value, limit)


def _scalar(value: Any, limit: int) -> str:
    if isinstance(value, str):
        value = value[: limit + 1]
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)[: limit + 1]
