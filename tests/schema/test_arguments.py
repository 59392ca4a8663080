"""Tests for strict argument parsing and schema validation (invokit.schema._arguments)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import ArgumentValidator
from invokit.exceptions import InvalidArguments, InvalidToolDefinition, MalformedArguments
from invokit.schema import compile_schema, parse_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "count": {"type": "integer", "minimum": 0},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "a/b~c": {"type": "string"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def validator() -> ArgumentValidator:
    """One validator for SCHEMA, compiled once."""
    return ArgumentValidator(SCHEMA)


def _issues(
    validator: ArgumentValidator, arguments: Any
) -> dict[str, tuple[str | None, str | None]]:
    with pytest.raises(InvalidArguments) as caught:
        validator(arguments)
    return {issue.path: (issue.expected, issue.actual) for issue in caught.value.issues}


# -- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param('{"name": "ab"}', id="text"),
        pytest.param(b'{"name": "ab"}', id="bytes"),
        pytest.param({"name": "ab"}, id="mapping"),
    ],
)
def test_text_bytes_and_mappings_are_accepted(validator: ArgumentValidator, arguments: Any) -> None:
    """JSON text, UTF-8 bytes and an already-parsed mapping validate to the same dict."""
    assert validator(arguments) == {"name": "ab"}


@pytest.mark.parametrize(
    ("text", "position"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("   ", 2, id="blank"),
        pytest.param('{"name": "ab"', 12, id="unterminated-object"),
        pytest.param('{"name": "ab",}', 14, id="trailing-comma"),
        pytest.param("{'name': 'ab'}", 1, id="single-quotes"),
        pytest.param('{"name": "ab"} {}', 15, id="trailing-text"),
        pytest.param('{"a": 1,\n "b": tru}', 18, id="second-line"),
    ],
)
def test_malformed_json_is_reported_with_its_position(
    validator: ArgumentValidator, text: str, position: int
) -> None:
    """Broken JSON raises MalformedArguments with the character offset, never becomes {}."""
    with pytest.raises(MalformedArguments) as caught:
        validator(text)
    assert caught.value.position == position
    assert 0 <= position <= len(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": NaN}', id="nan"),
        pytest.param('{"name": Infinity}', id="infinity"),
        pytest.param('{"name": -Infinity}', id="minus-infinity"),
        pytest.param('{"x": [1, NaN]}', id="nested-nan"),
    ],
)
def test_nan_and_infinity_literals_are_malformed(text: str) -> None:
    """NaN and Infinity are not JSON; they are refused and named in the reason."""
    with pytest.raises(MalformedArguments, match="NaN and Infinity") as caught:
        parse_arguments(text)
    assert caught.value.position is not None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"x": 1e999}', id="huge-exponent"),
        pytest.param('{"x": [-1E+400]}', id="negative-huge"),
        pytest.param('{"x": ' + "9" * 400 + ".0}", id="huge-mantissa"),
    ],
)
def test_numbers_that_overflow_to_infinity_are_malformed(text: str) -> None:
    """A finite-looking literal too large for a float is refused instead of becoming Infinity."""
    with pytest.raises(MalformedArguments):
        parse_arguments(text)


def test_big_but_finite_numbers_are_kept() -> None:
    """Large finite numbers, big integers and exponent-like strings pass through unchanged."""
    text = '{"f": 1e300, "i": ' + "1" * 400 + ', "s": "1e999"}'
    value = parse_arguments(text)
    assert value == {"f": 1e300, "i": int("1" * 400), "s": "1e999"}


@pytest.mark.parametrize(
    "mapping",
    [
        pytest.param({"x": float("nan")}, id="nan"),
        pytest.param({"x": [float("inf")]}, id="nested-infinity"),
    ],
)
def test_non_finite_floats_in_mappings_are_malformed(mapping: dict[str, Any]) -> None:
    """A mapping holding NaN or Infinity is refused like the JSON text would be."""
    with pytest.raises(MalformedArguments):
        parse_arguments(mapping)


def test_duplicate_keys_are_malformed() -> None:
    """An object with a key twice is refused (which value wins is ambiguous) with its position."""
    text = '{"name": "ab", "name": "cd"}'
    with pytest.raises(MalformedArguments, match="duplicate key") as caught:
        parse_arguments(text)
    assert caught.value.position is not None
    assert caught.value.position > text.rindex('"name"')


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param('{"x": "\\ud800"}', id="escaped-high-surrogate"),
        pytest.param('{"x": "\\udc00"}', id="escaped-low-surrogate"),
        pytest.param('{"x": "\ud800"}', id="raw-surrogate-in-text"),
        pytest.param('{"\\ud800": 1}', id="surrogate-key"),
        pytest.param({"x": "\udfff"}, id="surrogate-in-mapping"),
        pytest.param({"\ud800": 1}, id="surrogate-key-in-mapping"),
    ],
)
def test_lone_surrogates_are_malformed(arguments: Any) -> None:
    """Strings with an unpaired surrogate cannot be encoded as UTF-8 and are refused."""
    with pytest.raises(MalformedArguments):
        parse_arguments(arguments)


def test_paired_surrogate_escapes_are_accepted() -> None:
    """A proper surrogate pair escape decodes to the one character it stands for."""
    assert parse_arguments('{"x": "\\ud83d\\ude00"}') == {"x": "😀"}


def test_invalid_utf8_bytes_are_malformed() -> None:
    """Bytes that are not UTF-8 are refused with a position."""
    with pytest.raises(MalformedArguments) as caught:
        parse_arguments(b'{"x": "\xff"}')
    assert caught.value.position is not None


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({1: "x"}, id="non-string-key"),
        pytest.param({"x": object()}, id="non-json-value"),
        pytest.param(42, id="not-text-or-mapping"),
        pytest.param(None, id="none"),
    ],
)
def test_non_json_python_values_are_malformed(arguments: Any) -> None:
    """Mappings with non-JSON keys or values, and inputs that are not text or a mapping, are refused."""
    with pytest.raises(MalformedArguments):
        parse_arguments(arguments)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[1, 2]", id="array"),
        pytest.param('"text"', id="string"),
        pytest.param("3", id="number"),
        pytest.param("null", id="null"),
    ],
)
def test_arguments_must_be_an_object(text: str) -> None:
    """Valid JSON that is not an object is invalid at the root, with expected and actual."""
    with pytest.raises(InvalidArguments) as caught:
        parse_arguments(text)
    (issue,) = caught.value.issues
    assert issue.path == ""
    assert issue.expected == "object"
    assert issue.actual is not None
    assert json.loads(issue.actual) == json.loads(text)


def _nested(depth: int) -> str:
    """An arguments object whose deepest container is at ``depth`` (the object itself is 1)."""
    return '{"x": ' + "[" * (depth - 1) + "0" + "]" * (depth - 1) + "}"


@pytest.mark.parametrize("max_depth", [1, 3, 10, 64])
def test_nesting_up_to_the_bound_is_accepted_and_beyond_is_refused(max_depth: int) -> None:
    """Nesting equal to ``max_depth`` passes; one more level is malformed, as text or mapping."""
    assert parse_arguments(_nested(max_depth), max_depth=max_depth)
    with pytest.raises(MalformedArguments, match="nesting"):
        parse_arguments(_nested(max_depth + 1), max_depth=max_depth)
    with pytest.raises(MalformedArguments, match="nesting"):
        parse_arguments(json.loads(_nested(max_depth + 1)), max_depth=max_depth)


def test_default_depth_bound_refuses_deep_nesting() -> None:
    """With the default bound, arguments nested hundreds deep are refused before validation."""
    validator = ArgumentValidator({"type": "object"})
    with pytest.raises(MalformedArguments, match="nesting"):
        validator(_nested(500))
    with pytest.raises(MalformedArguments, match="nesting"):
        validator(json.loads(_nested(150)))
    deep = ArgumentValidator({"type": "object"}, max_depth=150)
    assert deep(_nested(150))
    assert deep(json.loads(_nested(150)))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


@settings(max_examples=50)
@given(st.dictionaries(st.text(max_size=3), json_values, max_size=3), st.integers(1, 6))
def test_text_and_mapping_inputs_agree(value: dict[str, Any], max_depth: int) -> None:
    """Parsing the JSON text of a value and the value itself accept or refuse alike."""
    text = json.dumps(value)

    def outcome(arguments: Any) -> Any:
        try:
            return parse_arguments(arguments, max_depth=max_depth)
        except MalformedArguments:
            return "malformed"

    assert outcome(text) == outcome(value)


# -- schema validation --------------------------------------------------------------------


def test_every_violation_is_reported_with_its_pointer(validator: ArgumentValidator) -> None:
    """All problems come back at once, each at its JSON pointer with expected and actual."""
    issues = _issues(
        validator, {"count": -1, "tags": ["a", "c"], "extra": 1, "a/b~c": 3, "ratio": "x"}
    )
    assert set(issues) == {"", "/count", "/tags/1", "/a~1b~0c", "/ratio"}
    assert issues["/count"] == ("minimum: 0", "-1")
    assert issues["/tags/1"][1] == '"c"'
    assert issues["/ratio"][1] == '"x"'
    assert issues["/a~1b~0c"][1] == "3"


def test_one_message_lists_every_issue(validator: ArgumentValidator) -> None:
    """The error's message names each bad field and the missing required one."""
    with pytest.raises(InvalidArguments) as caught:
        validator({"count": "many", "name": "x"})
    message = str(caught.value)
    assert "/count" in message
    assert "/name" in message
    assert "2 problems" in message


def test_missing_required_field_is_reported_at_the_root(validator: ArgumentValidator) -> None:
    """A missing required property is an issue at the root naming the property."""
    with pytest.raises(InvalidArguments) as caught:
        validator({})
    (issue,) = caught.value.issues
    assert issue.path == ""
    assert "name" in issue.message


@pytest.mark.parametrize(
    "value",
    [pytest.param(True, id="true"), pytest.param(False, id="false")],
)
def test_booleans_are_not_integers(validator: ArgumentValidator, value: bool) -> None:
    """``true`` and ``false`` are refused where an integer or a number is required."""
    assert set(_issues(validator, {"name": "ab", "count": value, "ratio": value})) == {
        "/count",
        "/ratio",
    }


def test_integral_float_is_an_integer_by_default(validator: ArgumentValidator) -> None:
    """``1.0`` satisfies an integer field, as JSON Schema says, unless strict typing is asked."""
    assert validator('{"name": "ab", "count": 1.0}') == {"name": "ab", "count": 1.0}
    assert _issues(validator, '{"name": "ab", "count": 1.5}') == {
        "/count": ("type: ['integer']", "1.5")
    }


def test_strict_typing_refuses_integral_floats() -> None:
    """A strict validator refuses ``1.0`` for integers, even nested, and still accepts ``1``."""
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "many": {"type": "array", "items": {"type": ["integer", "null"]}},
            "x": {"type": "number"},
        },
    }
    strict = ArgumentValidator(schema, strict=True)
    assert strict('{"n": 1, "many": [2, null], "x": 1.0}') == {"n": 1, "many": [2, None], "x": 1.0}
    with pytest.raises(InvalidArguments) as caught:
        strict('{"n": 1.0, "many": [2.0]}')
    assert {issue.path for issue in caught.value.issues} == {"/n", "/many/0"}


def test_validator_returns_a_fresh_dict_for_mappings(validator: ArgumentValidator) -> None:
    """Validating a mapping returns a new dict, so the caller's object is never shared."""
    given_args = {"name": "ab"}
    result = validator(given_args)
    assert result == given_args
    assert result is not given_args


# -- schema compilation -------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "object", "properties": {"x": {"type": "nope"}}}, id="bad-type"),
        pytest.param({"type": "object", "required": "x"}, id="required-not-a-list"),
        pytest.param({"type": "object", "properties": {"x": {"minLength": -1}}}, id="negative"),
        pytest.param(
            {"type": "object", "properties": {"x": {"pattern": "("}}}, id="bad-regex-pattern"
        ),
    ],
)
def test_invalid_schemas_are_rejected_at_definition_time(schema: dict[str, Any]) -> None:
    """A schema that is not valid JSON Schema raises InvalidToolDefinition when compiled."""
    with pytest.raises(InvalidToolDefinition) as caught:
        ArgumentValidator(schema, tool="demo")
    assert caught.value.tool == "demo"


def test_remote_refs_are_refused_without_io() -> None:
    """A ``$ref`` to a remote URL is a definition error; nothing is fetched."""
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "http://127.0.0.1:9/never.json"}},
    }
    with pytest.raises(InvalidToolDefinition, match="remote"):
        compile_schema(schema)


def test_local_refs_resolve() -> None:
    """``$ref`` into the schema's own ``$defs`` works."""
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "required": ["x"]}},
        "properties": {"p": {"$ref": "#/$defs/Point"}},
    }
    validator = ArgumentValidator(schema)
    assert validator({"p": {"x": 1}}) == {"p": {"x": 1}}
    with pytest.raises(InvalidArguments):
        validator({"p": {}})


BAD_TEXTS = [
    pytest.param("", 64, id="empty"),
    pytest.param('{"a": 1,}', 64, id="trailing-comma"),
    pytest.param('{"a": NaN}', 64, id="nan"),
    pytest.param('{"a": [1e999]}', 64, id="overflow-nested"),
    pytest.param('{"a": -1e400}', 64, id="overflow"),
    pytest.param('{"a": 1, "a": 2}', 64, id="duplicate"),
    pytest.param('{"a": "\ud800"}', 64, id="raw-surrogate"),
    pytest.param('{"a": "\\udc00"}', 64, id="escaped-surrogate"),
    pytest.param("[1]", 64, id="array"),
    pytest.param(_nested(65), 64, id="too-deep"),
    pytest.param('{"a": [[[[]]]]}', 3, id="too-deep-for-small-bound"),
]


@pytest.mark.parametrize(("text", "max_depth"), BAD_TEXTS)
def test_validator_fast_path_refuses_what_parse_arguments_refuses(
    text: str, max_depth: int
) -> None:
    """The validator's inline text path raises the same error as parse_arguments."""
    validator = ArgumentValidator({"type": "object"}, max_depth=max_depth)
    with pytest.raises((MalformedArguments, InvalidArguments)) as expected:
        parse_arguments(text, max_depth=max_depth)
    with pytest.raises(type(expected.value)) as got:
        validator(text)
    assert str(got.value) == str(expected.value)


@settings(max_examples=50)
@given(
    st.dictionaries(
        st.text(max_size=3),
        json_values | st.sampled_from([1e300, -2.5e-300, 0.5]),
        max_size=3,
    ),
    st.integers(1, 5),
    st.sampled_from(["", "1e999", "-1E+400", "[1e500]"]),
)
def test_validator_and_parse_arguments_agree_on_text(
    value: dict[str, Any], max_depth: int, extra: str
) -> None:
    """Text accepted or refused by parse_arguments is accepted or refused alike by a validator."""
    text = json.dumps(value)
    if extra:
        text = text[:-1] + (", " if value else "") + f'"zz": {extra}' + "}"
    validator = ArgumentValidator({"type": "object"}, max_depth=max_depth)

    def outcome(parse: Any) -> Any:
        try:
            return parse(text)
        except (MalformedArguments, InvalidArguments) as error:
            return type(error).__name__

    assert outcome(validator) == outcome(lambda t: parse_arguments(t, max_depth=max_depth))


@pytest.mark.parametrize("mapping", [False, True], ids=["text", "mapping"])
def test_issues_inside_another_schema_resource_name_its_own_expectation(mapping: bool) -> None:
    """A subschema with its own $id: the issue says what that subschema expects, not what a
    keyword at the same path of the root schema says."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 100}, "b": {"$ref": "urn:lim"}},
        "$defs": {
            "lim": {
                "$id": "urn:lim",
                "type": "object",
                "properties": {"n": {"type": "integer", "maximum": 3}},
            }
        },
    }
    arguments: Any = {"n": 1, "b": {"n": 50}}
    found = _issues(ArgumentValidator(schema), arguments if mapping else json.dumps(arguments))
    assert found == {"/b/n": ("maximum: 3", "50")}


def test_issues_in_tuples_show_the_value() -> None:
    """Arguments given as a mapping may hold tuples; an issue inside one shows its value."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
    }
    found = _issues(ArgumentValidator(schema), {"a": (1, "x")})
    assert found == {"/a/1": ("type: ['integer']", '"x"')}


def test_a_union_of_references_is_one_issue() -> None:
    """A value that matches no branch of a union of $refs is one issue at the union, as
    iter_errors reports it, not one issue per failed branch."""
    schema = {
        "type": "object",
        "properties": {"pet": {"anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}},
        "$defs": {
            "Cat": {
                "type": "object",
                "properties": {"lives": {"type": "integer"}},
                "required": ["lives"],
            },
            "Dog": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    }
    found = _issues(ArgumentValidator(schema), {"pet": {"lives": "nine"}})
    assert list(found) == ["/pet"]


def test_additional_items_are_reported_where_they_are() -> None:
    """draft-07 additionalItems: the issue points at the item, not at the array."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "a": {
                "type": "array",
                "items": [{"type": "string"}],
                "additionalItems": {"type": "integer"},
            }
        },
    }
    found = _issues(ArgumentValidator(schema), {"a": ["x", 1, "y"]})
    assert found == {"/a/2": ("type: ['integer']", '"y"')}
