"""Lowering + mapping back accepts what the original schema accepts, or the report says not.

For generated schemas and generated values, checked with the JSON Schema reference
implementation (``jsonschema``):

- sound: whatever the lowered schema lets a model send, once mapped back, the original
  accepts — unless it breaks a keyword the report lists as ``loosened``;
- complete: whatever the original accepts, the model can still send in lowered form and it
  maps back to a value the original accepts — unless sending it breaks a keyword the report
  lists as ``narrowed``.

Every generated schema is representable, so lowering must succeed; the schemas that are
not are covered, keyword by keyword, in the per-provider lowering tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
from hypothesis import given, note, settings
from hypothesis import strategies as st

from invokit.providers import LoweringReport
from invokit.providers._gemini_schema import lower_gemini
from invokit.providers._openai_strict import lower_strict
from invokit.providers._refs import resolve_ref
from invokit.providers._restore import ArgumentRestorer

Schema = dict[str, Any]
KEYS = st.sampled_from(["a", "b", "c", "d"])

LEAVES: st.SearchStrategy[Schema] = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "string", "pattern": "^[xy]*$"}),
    st.just({"type": "integer", "maximum": 3}),
    st.integers(1, 3).map(lambda n: {"type": "string", "minLength": n}),
    st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, unique=True).map(
        lambda values: {"type": "string", "enum": values}
    ),
    st.just({"type": "integer"}),
    st.integers(-2, 2).map(lambda n: {"type": "integer", "minimum": n}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.just({"type": ["string", "null"]}),
    st.just({"enum": [1, 2]}),
    st.just({"const": "x"}),
    st.just({"$ref": "#/$defs/D"}),
)


@st.composite
def _objects(draw: st.DrawFn, children: st.SearchStrategy[Schema]) -> Schema:
    properties = draw(st.dictionaries(KEYS, children, max_size=3))
    required = [k for k in properties if draw(st.booleans())]
    schema: Schema = {"type": "object", "properties": properties, "required": required}
    if draw(st.integers(0, 5)):  # mostly closed, as @tool makes them
        schema["additionalProperties"] = False
    return schema


def _extend(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    return st.one_of(
        _objects(children),
        _objects(children),
        children.map(lambda item: {"type": "array", "items": item}),
        st.tuples(children, children).map(lambda pair: {"anyOf": list(pair)}),
        children.map(lambda child: {"anyOf": [child, {"type": "null"}], "default": None}),
        children.map(lambda child: {"anyOf": [child, {"type": "null"}], "default": None}),
        st.tuples(children, children).map(lambda pair: {"oneOf": list(pair)}),
    )


SCHEMAS = st.recursive(LEAVES, _extend, max_leaves=6)


@st.composite
def _roots(draw: st.DrawFn, children: st.SearchStrategy[Schema]) -> Schema:
    root = draw(_objects(children))
    definition = draw(_objects(LEAVES.filter(lambda s: "$ref" not in s)))
    definition["additionalProperties"] = False
    root["$defs"] = {"D": definition}
    return root


def roots() -> st.SearchStrategy[Schema]:
    """Object schemas with one definition ``D`` that leaves may reference.

    Flat ones (leaves only) half the time, so that each leaf rule is met often.
    """
    return st.one_of(_roots(LEAVES), _roots(SCHEMAS))


WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-3, 3, allow_nan=False).filter(lambda f: not f.is_integer()),
    st.text("xyz", max_size=2),
    st.just([]),
    st.just({}),
)


def values(schema: Any, root: Mapping[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values near ``schema``: mostly of its shape, sometimes not, for both verdicts."""
    if not isinstance(schema, Mapping) or depth > 5:
        return WRONG
    if "$ref" in schema:
        return values(resolve_ref(root, schema["$ref"]), root, depth + 1)
    options: list[st.SearchStrategy[Any]] = []
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    for keyword in ("anyOf", "oneOf"):
        options.extend(values(branch, root, depth + 1) for branch in schema.get(keyword, ()))
    declared = schema.get("type")
    for kind in declared if isinstance(declared, list) else [declared]:
        if kind == "string":
            options.append(st.text("xyzab", max_size=4))
        elif kind in ("integer", "number"):
            options.append(st.integers(-3, 5))
            if kind == "number":
                options.append(st.floats(-3, 5, allow_nan=False))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "null":
            options.append(st.none())
        elif kind == "array":
            options.append(st.lists(values(schema.get("items"), root, depth + 1), max_size=3))
        elif kind == "object":
            options.append(_object_values(schema, root, depth))
    # Values of the schema's own shape: only valid ones are checked, and these break its
    # finer constraints (bounds, enums, extra keys) often enough.
    return st.one_of(*options) if options else WRONG


def _object_values(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    shaped = st.fixed_dictionaries(
        {k: values(v, root, depth + 1) for k, v in properties.items() if k in required},
        optional={
            k: values(v, root, depth + 1) for k, v in properties.items() if k not in required
        },
    )
    extra = st.dictionaries(st.just("zz"), WRONG, max_size=1)
    return st.tuples(shaped, extra).map(lambda pair: {**pair[0], **pair[1]})


def valid(schema: Mapping[str, Any], value: Any) -> bool:
    return bool(jsonschema.Draft202012Validator(schema).is_valid(value))


def fill_placeholders(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """What a strict-mode model sends for ``value``: every missing optional key as null."""
    if not isinstance(schema, Mapping):
        return value
    if "$ref" in schema:
        return fill_placeholders(value, resolve_ref(root, schema["$ref"]), root)
    for keyword in ("anyOf", "oneOf"):
        for branch in schema.get(keyword, ()):
            if valid({**branch, "$defs": root["$defs"]}, value):
                return fill_placeholders(value, branch, root)
    if isinstance(value, dict) and "properties" in schema:
        properties = schema["properties"]
        filled = {k: fill_placeholders(v, properties.get(k), root) for k, v in value.items()}
        return {**dict.fromkeys(properties), **filled}
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [fill_placeholders(v, schema["items"], root) for v in value]
    return value


def gemini_as_json_schema(schema: Mapping[str, Any]) -> Schema:
    """Gemini's OpenAPI-style schema read as the JSON Schema it stands for."""
    out: Schema = {}
    for key, value in schema.items():
        if key == "type":
            out[key] = value.lower()
        elif key == "properties":
            out[key] = {name: gemini_as_json_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = gemini_as_json_schema(value)
        elif key == "anyOf":
            out[key] = [gemini_as_json_schema(branch) for branch in value]
        elif key not in ("nullable", "example"):
            out[key] = value
    if schema.get("nullable"):
        if "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def error_keywords(schema: Mapping[str, Any], value: Any) -> set[str]:
    """The keywords a value breaks, descending into failed unions."""
    found: set[str] = set()
    pending = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    while pending:
        error = pending.pop()
        found.add(str(error.validator))
        pending.extend(error.context or ())
    return found


def assert_sound(report: LoweringReport, original: Schema, sent: Any, back: Any) -> None:
    """``back`` (what the model sent, mapped back) is accepted, or a reported loosening explains it."""
    note(f"report:\n{report.render()}")
    if valid(original, back):
        return
    broken = error_keywords(original, back)
    loosened = {change.keyword for change in report.loosened}
    assert broken & loosened, f"{sent!r} maps back to {back!r}: breaks {broken}, none reported"


def assert_sendable(report: LoweringReport, lowered: Schema, wanted: Any, sent: Any) -> None:
    """``sent`` (``wanted`` in lowered form) is accepted, or a reported narrowing explains it."""
    if valid(lowered, sent):
        return
    broken = error_keywords(lowered, sent)
    narrowed = {change.keyword for change in report.narrowed}
    assert broken & narrowed, f"{wanted!r} cannot be sent as {sent!r}: breaks {broken}"


@settings(max_examples=150)
@given(roots(), st.data())
def test_strict_lowering_is_sound_and_complete_or_says_so(
    root: Schema, data: st.DataObject
) -> None:
    """Strict lowering and null restoration keep the accepted set, except where reported."""
    lowered, changes = lower_strict("t", root)
    report = LoweringReport(provider="openai", changes=tuple(changes))
    restore = ArgumentRestorer(root, placeholder_nulls=True)
    note(f"lowered: {lowered}")
    # Sound: a value the strict model may send maps back to one the original accepts.
    sent = data.draw(values(lowered, lowered), label="sent")
    if valid(lowered, sent):
        assert_sound(report, root, sent, restore(sent))
    # Complete: a value the original accepts can be sent and comes back accepted.
    wanted = data.draw(values(root, root), label="wanted")
    if valid(root, wanted):
        encoded = fill_placeholders(wanted, root, root)
        assert_sendable(report, lowered, wanted, encoded)
        if valid(lowered, encoded):
            assert valid(root, restore(encoded))


@settings(max_examples=150)
@given(roots(), st.data())
def test_gemini_lowering_is_sound_and_complete_or_says_so(
    root: Schema, data: st.DataObject
) -> None:
    """Gemini lowering and number restoration keep the accepted set, except where reported."""
    lowered, changes = lower_gemini("t", root)
    report = LoweringReport(provider="gemini", changes=tuple(changes))
    restore = ArgumentRestorer(root, whole_floats=True)
    meaning = gemini_as_json_schema(lowered)
    note(f"lowered: {lowered}")
    sent = data.draw(values(meaning, meaning), label="sent")
    if valid(meaning, sent):
        assert_sound(report, root, sent, restore(sent))
    wanted = data.draw(values(root, root), label="wanted")
    if valid(root, wanted):
        assert_sendable(report, meaning, wanted, wanted)
