"""Strict-mode lowering: the rewrites strict mode needs, what they report, what they refuse."""

from __future__ import annotations

from typing import Any

import pytest

from invokit.providers import UnsupportedSchema
from invokit.providers._openai_strict import lower_strict
from invokit.providers._restore import ArgumentRestorer


def _obj(properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> Any:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


@pytest.mark.parametrize(
    ("original", "lowered"),
    [
        pytest.param(
            _obj({"a": {"type": "string"}}, additionalProperties=False),
            _obj({"a": {"type": ["string", "null"]}}, ("a",), additionalProperties=False),
            id="optional-becomes-nullable",
        ),
        pytest.param(
            _obj({"a": {"$ref": "#/$defs/A"}}, ("a",), additionalProperties=False)
            | {"$defs": {"A": {"type": "integer"}}},
            _obj({"a": {"$ref": "#/$defs/A"}}, ("a",), additionalProperties=False)
            | {"$defs": {"A": {"type": "integer"}}},
            id="bare-ref-kept",
        ),
        pytest.param(
            _obj({"a": {"const": 3}}, ("a",), additionalProperties=False),
            _obj({"a": {"const": 3, "type": "integer"}}, ("a",), additionalProperties=False),
            id="type-added-from-const",
        ),
        pytest.param(
            _obj({"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}, ("a",)),
            _obj(
                {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                ("a",),
                additionalProperties=False,
            ),
            id="oneOf-to-anyOf",
        ),
        pytest.param(
            _obj({"a": {"allOf": [{"type": "string", "pattern": "^x"}]}}, ("a",)),
            _obj({"a": {"type": "string", "pattern": "^x"}}, ("a",), additionalProperties=False),
            id="allOf-of-one-merged",
        ),
        pytest.param(
            _obj({"a": {"type": "string", "minLength": 2, "format": "uri"}}, ("a",)),
            _obj({"a": {"type": "string"}}, ("a",), additionalProperties=False),
            id="unsupported-keywords-dropped",
        ),
        pytest.param(
            _obj({"a": {"type": "array", "items": {"type": "object"}}}, ("a",)),
            _obj(
                {
                    "a": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {},
                            "required": [],
                            "additionalProperties": False,
                        },
                    }
                },
                ("a",),
                additionalProperties=False,
            ),
            id="nested-objects-closed",
        ),
    ],
)
def test_lowering(original: dict[str, Any], lowered: dict[str, Any]) -> None:
    """Each schema is rewritten into exactly its strict form."""
    assert lower_strict("t", original)[0] == lowered


def test_each_change_is_reported_with_its_effect() -> None:
    """Dropped keywords loosen, closing an open object narrows, nullable-optional changes nothing."""
    original = _obj(
        {"a": {"type": "string", "minLength": 2}, "b": {"type": "integer", "default": 3}}, ("a",)
    )
    _, changes = lower_strict("t", original)
    assert [(c.path, c.keyword, c.action, c.effect) for c in changes] == [
        ("/properties/a/minLength", "minLength", "dropped", "loosened"),
        ("/properties/b/default", "default", "dropped", "none"),
        ("/properties/b", "required", "rewritten", "none"),
        ("/additionalProperties", "additionalProperties", "added", "narrowed"),
    ]


def test_recursive_refs_stay_references() -> None:
    """A recursive definition is lowered once under $defs and referenced, not unrolled."""
    original = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "required": ["tree"],
        "additionalProperties": False,
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["kids"],
                "additionalProperties": False,
            }
        },
    }
    lowered, changes = lower_strict("t", original)
    assert lowered == original
    assert changes == []


def test_ref_with_a_description_is_inlined() -> None:
    """A $ref beside a description is inlined so the description survives."""
    original = _obj(
        {"p": {"$ref": "#/$defs/P", "description": "where"}},
        ("p",),
        additionalProperties=False,
        **{"$defs": {"P": {"type": "string"}}},
    )
    lowered, changes = lower_strict("t", original)
    assert lowered["properties"]["p"] == {"type": "string", "description": "where"}
    assert changes[0].keyword == "$ref"


@pytest.mark.parametrize(
    ("schema", "path", "keyword"),
    [
        pytest.param(_obj({"a": {}}), "/properties/a", "type", id="any-value"),
        pytest.param(
            _obj({"m": {"type": "object", "additionalProperties": {"type": "integer"}}}),
            "/properties/m/additionalProperties",
            "additionalProperties",
            id="map",
        ),
        pytest.param(
            _obj({"t": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}}),
            "/properties/t/prefixItems",
            "prefixItems",
            id="tuple",
        ),
        pytest.param(
            _obj({"x": {"allOf": [{"type": "string"}, {"minLength": 1}]}}),
            "/properties/x/allOf",
            "allOf",
            id="allOf",
        ),
        pytest.param({"type": "object", "anyOf": [_obj({})]}, "", "anyOf", id="root-union"),
        pytest.param(_obj({"l": {"type": "array"}}), "/properties/l", "items", id="untyped-items"),
    ],
)
def test_unrepresentable_schemas_raise_naming_the_keyword(
    schema: dict[str, Any], path: str, keyword: str
) -> None:
    """A schema strict mode cannot represent is an error naming the keyword and where it is."""
    with pytest.raises(UnsupportedSchema) as caught:
        lower_strict("my.tool", schema)
    assert (caught.value.tool, caught.value.path, caught.value.keyword) == (
        "my.tool",
        path,
        keyword,
    )
    assert caught.value.provider == "openai-strict"


def test_optional_that_takes_null_keeps_null_and_reports_a_lost_default() -> None:
    """A nullable optional with a non-null default is reported narrowed: null cannot mean 'omit'."""
    original = _obj({"n": {"type": ["integer", "null"], "default": 5}}, additionalProperties=False)
    lowered, changes = lower_strict("t", original)
    assert lowered["properties"]["n"]["type"] == ["integer", "null"]
    assert [c.effect for c in changes if c.keyword == "required"] == ["narrowed"]
    assert ArgumentRestorer(original, placeholder_nulls=True)({"n": None}) == {"n": None}


def test_restorer_follows_unions_and_arrays() -> None:
    """Placeholder nulls are removed inside union branches and array items too."""
    original = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"$ref": "#/$defs/Item"},
            },
            "either": {
                "anyOf": [
                    {"type": "object", "properties": {"x": {"type": "integer"}}, "required": []},
                    {"type": "string"},
                ]
            },
        },
        "$defs": {"Item": {"type": "object", "properties": {"q": {"type": "string"}}}},
    }
    restore = ArgumentRestorer(original, placeholder_nulls=True)
    value = {"items": [{"q": None}, {"q": "a"}], "either": {"x": None}}
    assert restore(value) == {"items": [{}, {"q": "a"}], "either": {}}
    assert value["items"] == [{"q": None}, {"q": "a"}]
    assert restore({"either": "s"}) == {"either": "s"}


def test_draft4_tuples_are_refused_naming_items() -> None:
    """An items list (a draft-4 tuple) has no strict form and is refused as 'items'."""
    schema = _obj({"t": {"type": "array", "items": [{"type": "string"}]}})
    with pytest.raises(UnsupportedSchema) as caught:
        lower_strict("t", schema)
    assert (caught.value.path, caught.value.keyword) == ("/properties/t/items", "items")
