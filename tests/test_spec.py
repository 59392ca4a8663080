"""Tests for tool names, annotations, output limits and ToolSpec (invokit._spec)."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import OutputLimit, ToolAnnotations, ToolName, ToolSpec
from invokit._spec import NAME_PATTERN
from invokit.exceptions import InvalidToolDefinition

# -- strategies ---------------------------------------------------------------------------

_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
names = st.builds(
    str.__add__,
    st.sampled_from(_FIRST),
    st.text(alphabet=_FIRST + "0123456789.-", max_size=63),
)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
property_schemas = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean", "array", "object"])},
    optional={"description": st.text(max_size=30), "default": json_scalars},
)
input_schemas = st.builds(
    lambda props, required, extra: {
        "type": "object",
        "properties": props,
        **({"required": sorted(set(required) & set(props))} if required else {}),
        **({"additionalProperties": extra} if extra is not None else {}),
    },
    st.dictionaries(st.from_regex(r"\A[a-z_]{1,8}\Z"), property_schemas, max_size=4),
    st.lists(st.from_regex(r"\A[a-z_]{1,8}\Z"), max_size=3),
    st.none() | st.booleans(),
)
hint = st.none() | st.booleans()
hint_sets = st.builds(
    ToolAnnotations,
    read_only=hint,
    destructive=hint,
    idempotent=hint,
    open_world=hint,
    needs_approval=hint,
    streaming=hint,
)
limits = st.builds(
    OutputLimit,
    max_chars=st.integers(min_value=1, max_value=10**7),
    mode=st.sampled_from(["fail", "clip", "head_tail", "spill"]),
)
specs = st.builds(
    ToolSpec,
    name=names,
    description=st.text(max_size=60),
    input_schema=input_schemas,
    output_schema=st.none() | st.just({"type": "object"}) | st.just({"type": "string"}),
    annotations=hint_sets,
    metadata=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    tags=st.frozensets(st.text(min_size=1, max_size=8), max_size=4),
    category=st.none() | st.text(min_size=1, max_size=12),
    output_limit=st.none() | limits,
    timeout=st.none()
    | st.floats(min_value=0.001, max_value=1e6, allow_nan=False, allow_infinity=False),
    concurrency=st.sampled_from([None, "shared", "exclusive"]),
)


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


def _spec(**changes: Any) -> ToolSpec:
    base = ToolSpec(
        name="fs.read",
        description="Read a file.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        annotations=ToolAnnotations(read_only=True),
        tags=frozenset({"fs"}),
        category="filesystem",
    )
    return dataclasses.replace(base, **changes)


# -- ToolName -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("read", id="plain"),
        pytest.param("fs.read", id="namespaced"),
        pytest.param("_private", id="underscore-first"),
        pytest.param("a-b_c.d9", id="all-allowed-characters"),
        pytest.param("x" * 64, id="64-characters"),
    ],
)
def test_valid_names_are_accepted(name: str) -> None:
    """A name that matches the rule becomes a ToolName equal to the text."""
    assert ToolName(name) == name
    assert isinstance(ToolName(name), str)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("1read", id="digit-first"),
        pytest.param(".read", id="dot-first"),
        pytest.param("-read", id="dash-first"),
        pytest.param("read file", id="space"),
        pytest.param("read/file", id="slash"),
        pytest.param("lecture_é", id="non-ascii"),
        pytest.param("x" * 65, id="65-characters"),
        pytest.param("read\n", id="trailing-newline"),
    ],
)
def test_invalid_names_raise_naming_the_rule(name: str) -> None:
    """A name that breaks the rule raises InvalidToolDefinition carrying the pattern and value."""
    with pytest.raises(InvalidToolDefinition) as caught:
        ToolName(name)
    assert NAME_PATTERN in caught.value.rule
    assert caught.value.value == name


def test_non_string_name_is_rejected() -> None:
    """A name that is not a string is a definition error, not a TypeError from the regex."""
    with pytest.raises(InvalidToolDefinition):
        ToolName(42)  # type: ignore[arg-type]


@given(names)
def test_every_name_matching_the_pattern_is_valid(name: str) -> None:
    """Every string the documented pattern matches is accepted unchanged."""
    assert str(ToolName(name)) == name


def test_namespace_is_the_part_before_the_last_dot() -> None:
    """``namespace`` is everything before the last dot, or None without a dot."""
    assert ToolName("fs.read").namespace == "fs"
    assert ToolName("a.b.c").namespace == "a.b"
    assert ToolName("read").namespace is None


def test_spec_name_is_validated() -> None:
    """Building a spec validates its name once and stores a ToolName."""
    assert isinstance(_spec().name, ToolName)
    with pytest.raises(InvalidToolDefinition):
        _spec(name="bad name")


# -- ToolAnnotations ----------------------------------------------------------------------


def test_annotations_default_to_unsaid() -> None:
    """Every hint is None until set, and an empty annotation set has no dict or MCP form."""
    hints = ToolAnnotations()
    assert all(getattr(hints, f.name) is None for f in dataclasses.fields(hints))
    assert hints.to_dict() == {}
    assert hints.to_mcp() == {}


def test_annotations_convert_to_mcp_hint_names() -> None:
    """Set hints map to MCP's readOnlyHint, destructiveHint, idempotentHint and openWorldHint."""
    hints = ToolAnnotations(read_only=True, destructive=False, idempotent=True, open_world=False)
    assert hints.to_mcp() == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def test_annotations_without_an_mcp_equivalent_are_not_sent_to_mcp() -> None:
    """needs_approval and streaming have no MCP hint and are left out of to_mcp."""
    assert ToolAnnotations(needs_approval=True, streaming=True).to_mcp() == {}


def test_annotations_read_from_mcp_ignore_unknown_keys() -> None:
    """from_mcp reads the four hints, ignores other keys and leaves absent hints unsaid."""
    hints = ToolAnnotations.from_mcp(
        {"readOnlyHint": True, "openWorldHint": None, "title": "Reader", "x": 1}
    )
    assert hints == ToolAnnotations(read_only=True)
    assert ToolAnnotations.from_mcp(None) == ToolAnnotations()


@given(hint_sets)
def test_annotations_round_trip_through_mcp(hints: ToolAnnotations) -> None:
    """The MCP-expressible hints survive to_mcp → from_mcp unchanged."""
    back = ToolAnnotations.from_mcp(hints.to_mcp())
    for name in ("read_only", "destructive", "idempotent", "open_world"):
        assert getattr(back, name) == getattr(hints, name)
    assert back.needs_approval is None
    assert back.streaming is None


@given(hint_sets)
def test_annotations_round_trip_through_dict(hints: ToolAnnotations) -> None:
    """to_dict → from_dict rebuilds equal annotations."""
    assert ToolAnnotations.from_dict(hints.to_dict()) == hints


def test_unknown_annotation_keys_are_an_error() -> None:
    """from_dict refuses a key it does not know rather than dropping it silently."""
    with pytest.raises(InvalidToolDefinition):
        ToolAnnotations.from_dict({"read_only": True, "readonly": True})


def test_annotations_are_frozen() -> None:
    """Annotations cannot be changed in place."""
    hints = ToolAnnotations(read_only=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hints.read_only = False  # type: ignore[misc]


# -- OutputLimit --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"max_chars": 0}, id="zero-chars"),
        pytest.param({"max_chars": -5}, id="negative-chars"),
        pytest.param({"mode": "truncate"}, id="unknown-mode"),
    ],
)
def test_bad_output_limits_are_rejected(kwargs: dict[str, Any]) -> None:
    """A limit below one character or with an unknown mode is a definition error."""
    with pytest.raises(InvalidToolDefinition):
        OutputLimit(**kwargs)


@given(limits)
def test_output_limit_round_trips(limit: OutputLimit) -> None:
    """to_dict → from_dict rebuilds an equal limit."""
    assert OutputLimit.from_dict(limit.to_dict()) == limit


# -- ToolSpec -----------------------------------------------------------------------------


@settings(max_examples=50)
@given(specs)
def test_spec_round_trips_through_dict(spec: ToolSpec) -> None:
    """from_dict(to_dict()) rebuilds an equal spec with the same fingerprint."""
    back = ToolSpec.from_dict(spec.to_dict())
    assert back == spec
    assert back.fingerprint == spec.fingerprint
    assert back.to_dict() == spec.to_dict()


@settings(max_examples=50)
@given(specs, st.randoms(use_true_random=False))
def test_fingerprint_ignores_key_order_and_whitespace(spec: ToolSpec, rng: random.Random) -> None:
    """Reordering keys at every depth and re-spacing the JSON text keep spec and fingerprint."""
    shuffled = _shuffled(spec.to_dict(), rng)
    for text in (json.dumps(shuffled, indent=4), json.dumps(shuffled, separators=(",", ":"))):
        back = ToolSpec.from_dict(json.loads(text))
        assert back == spec
        assert back.fingerprint == spec.fingerprint


def test_fingerprint_is_a_sha256_hex_digest() -> None:
    """The fingerprint is 64 lowercase hex characters and equal for equal specs."""
    fingerprint = _spec().fingerprint
    assert len(fingerprint) == 64
    assert set(fingerprint) <= set("0123456789abcdef")
    assert _spec().fingerprint == fingerprint


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"name": "fs.read2"}, id="name"),
        pytest.param({"description": "Read a file!"}, id="description"),
        pytest.param(
            {"input_schema": {"type": "object", "properties": {"path": {"type": "integer"}}}},
            id="input-schema",
        ),
        pytest.param({"output_schema": {"type": "string"}}, id="output-schema"),
        pytest.param({"annotations": ToolAnnotations(read_only=False)}, id="read-only-hint"),
        pytest.param(
            {"annotations": ToolAnnotations(read_only=True, destructive=False)}, id="added-hint"
        ),
        pytest.param({"metadata": {"owner": "ops"}}, id="metadata"),
        pytest.param({"tags": frozenset({"fs", "io"})}, id="tags"),
        pytest.param({"category": "files"}, id="category"),
        pytest.param({"output_limit": OutputLimit(max_chars=10)}, id="output-limit"),
        pytest.param({"timeout": 5.0}, id="timeout"),
        pytest.param({"concurrency": "exclusive"}, id="concurrency"),
    ],
)
def test_any_change_of_meaning_changes_the_fingerprint(changes: dict[str, Any]) -> None:
    """Changing the description, a schema, a hint or any other field gives a new fingerprint."""
    assert _spec(**changes).fingerprint != _spec().fingerprint


def test_unknown_spec_fields_are_an_error() -> None:
    """from_dict refuses keys that are not ToolSpec fields."""
    data = _spec().to_dict()
    data["descripton"] = "typo"
    with pytest.raises(InvalidToolDefinition):
        ToolSpec.from_dict(data)


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "string"}, id="string"),
        pytest.param({"type": "array", "items": {}}, id="array"),
        pytest.param(["type", "object"], id="not-a-dict"),
    ],
)
def test_input_schema_must_describe_an_object(schema: Any) -> None:
    """A spec whose arguments are not a JSON object is rejected when built."""
    with pytest.raises(InvalidToolDefinition):
        _spec(input_schema=schema)


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"timeout": 0.0}, id="zero-timeout"),
        pytest.param({"timeout": -1.0}, id="negative-timeout"),
        pytest.param({"timeout": float("inf")}, id="infinite-timeout"),
        pytest.param({"timeout": float("nan")}, id="nan-timeout"),
        pytest.param({"concurrency": "parallel"}, id="unknown-concurrency"),
    ],
)
def test_bad_options_are_rejected(changes: dict[str, Any]) -> None:
    """A timeout that is not a positive, finite number or an unknown concurrency is a
    definition error."""
    with pytest.raises(InvalidToolDefinition):
        _spec(**changes)


def test_spec_defaults_are_an_empty_object_schema() -> None:
    """A spec with only a name takes no arguments and has no hints, tags or limits."""
    spec = ToolSpec(name="ping")
    assert spec.input_schema == {"type": "object", "properties": {}}
    assert spec.to_dict() == {
        "name": "ping",
        "description": "",
        "input_schema": {"type": "object", "properties": {}},
    }


def test_spec_is_frozen_and_keyword_only() -> None:
    """A spec cannot be changed in place or built with positional arguments."""
    spec = _spec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.description = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ToolSpec("fs.read")  # type: ignore[call-arg]


def test_tags_given_as_any_iterable_become_a_frozenset() -> None:
    """Tags passed as a list are stored as a frozenset and listed sorted in the dict form."""
    spec = _spec(tags=["b", "a", "b"])
    assert spec.tags == frozenset({"a", "b"})
    assert spec.to_dict()["tags"] == ["a", "b"]


def test_effective_concurrency_follows_read_only_unless_set() -> None:
    """Read-only tools share by default, others are exclusive; an explicit choice wins."""
    assert _spec().effective_concurrency == "shared"
    assert _spec(annotations=ToolAnnotations()).effective_concurrency == "exclusive"
    assert _spec(concurrency="exclusive").effective_concurrency == "exclusive"


def test_builders_return_changed_copies() -> None:
    """Each with_* builder returns a new spec and leaves the original untouched."""
    spec = _spec()
    before = spec.to_dict()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    limit = OutputLimit(max_chars=5, mode="clip")
    assert spec.with_name("fs.cat").name == "fs.cat"
    assert spec.with_description("Cat.").description == "Cat."
    assert spec.with_input_schema(schema).input_schema == schema
    assert spec.with_output_schema({"type": "string"}).output_schema == {"type": "string"}
    assert spec.with_annotations(ToolAnnotations(destructive=True)).annotations == (
        ToolAnnotations(destructive=True)
    )
    assert spec.with_annotations(idempotent=True).annotations == ToolAnnotations(
        read_only=True, idempotent=True
    )
    assert spec.with_metadata(a=1).with_metadata(b=2).metadata == {"a": 1, "b": 2}
    assert spec.with_tags("io").tags == frozenset({"fs", "io"})
    assert spec.with_category(None).category is None
    assert spec.with_output_limit(limit).output_limit == limit
    assert spec.with_timeout(3.0).timeout == 3.0
    assert spec.to_dict() == before


def test_with_name_validates_the_new_name() -> None:
    """Renaming a spec to an invalid name fails like building one would."""
    with pytest.raises(InvalidToolDefinition):
        _spec().with_name("no spaces allowed")


def test_copies_have_their_own_fingerprint() -> None:
    """A copy made by a builder does not reuse the original's cached fingerprint."""
    spec = _spec()
    original = spec.fingerprint
    changed = spec.with_description("Something else.")
    assert changed.fingerprint != original
    assert spec.fingerprint == original


def test_a_lone_string_is_one_tag() -> None:
    """``tags="fs"`` means the tag fs, not the tags f and s."""
    assert _spec(tags="fs").tags == frozenset({"fs"})


def test_to_dict_hands_out_copies() -> None:
    """Changing what to_dict returned never changes the spec or its fingerprint."""
    spec = ToolSpec(
        name="t",
        input_schema={"type": "object", "properties": {"a": {"type": "string"}}},
        output_schema={"type": "object"},
        metadata={"owner": {"team": "x"}},
    )
    before = spec.fingerprint
    data = spec.to_dict()
    data["input_schema"]["properties"]["a"]["type"] = "integer"
    data["output_schema"]["type"] = "array"
    data["metadata"]["owner"]["team"] = "y"
    assert spec.input_schema["properties"]["a"]["type"] == "string"
    assert spec.output_schema == {"type": "object"}
    assert spec.metadata == {"owner": {"team": "x"}}
    assert ToolSpec.from_dict(spec.to_dict()).fingerprint == before
