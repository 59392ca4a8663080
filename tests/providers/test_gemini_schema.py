"""Gemini lowering: refs inlined, unions and nulls rewritten, what cannot be sent refused."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from invokit.providers import UnsupportedSchema
from invokit.providers._gemini_schema import lower_gemini


def _obj(properties: dict[str, Any], *required: str, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


def _lowered(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "OBJECT", "properties": properties, "required": list(required)}


@pytest.mark.parametrize(
    ("original", "lowered"),
    [
        pytest.param(
            _obj({"a": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}),
            _lowered({"a": {"type": "INTEGER", "nullable": True}}),
            id="optional-union-to-nullable",
        ),
        pytest.param(
            _obj(
                {
                    "a": {
                        "anyOf": [
                            {"anyOf": [{"type": "string"}, {"type": "null"}]},
                            {"type": "integer"},
                        ]
                    }
                }
            ),
            _lowered({"a": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": True}}),
            id="nullable-branch-makes-the-union-nullable",
        ),
        pytest.param(
            _obj({"a": {"type": ["string", "null"]}}),
            _lowered({"a": {"type": "STRING", "nullable": True}}),
            id="null-in-type-list",
        ),
        pytest.param(
            _obj({"a": {"type": ["string", "integer"], "minimum": 1, "maxLength": 4}}),
            _lowered(
                {
                    "a": {
                        "anyOf": [
                            {"type": "STRING", "maxLength": 4},
                            {"type": "INTEGER", "minimum": 1},
                        ]
                    }
                }
            ),
            id="type-list-split",
        ),
        pytest.param(
            _obj(
                {"p": {"$ref": "#/$defs/P"}},
                "p",
                **{"$defs": {"P": _obj({"x": {"type": "boolean"}})}},
            ),
            _lowered({"p": _lowered({"x": {"type": "BOOLEAN"}})}, "p"),
            id="ref-inlined",
        ),
        pytest.param(
            _obj({"k": {"const": "on"}, "e": {"enum": ["a", None]}}),
            _lowered(
                {
                    "k": {"type": "STRING", "enum": ["on"]},
                    "e": {"type": "STRING", "enum": ["a"], "nullable": True},
                }
            ),
            id="string-enums",
        ),
        pytest.param(
            _obj({"n": {"enum": [1, 2], "description": "Level."}}),
            _lowered({"n": {"type": "INTEGER", "description": "Level. Allowed values: 1, 2."}}),
            id="integer-enum-described",
        ),
        pytest.param(
            _obj(
                {"t": {"type": "array", "prefixItems": [{"type": "string"}], "examples": [["x"]]}}
            ),
            _lowered({"t": {"type": "ARRAY", "items": {"type": "STRING"}, "example": ["x"]}}),
            id="tuple-and-examples",
        ),
        pytest.param(
            _obj({"t": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}),
            _lowered(
                {
                    "t": {
                        "type": "ARRAY",
                        "items": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
                    }
                }
            ),
            id="draft4-tuple",
        ),
        pytest.param(
            _obj(
                {
                    "t": {
                        "type": "array",
                        "prefixItems": [{"type": "string"}],
                        "items": {"type": "integer"},
                    },
                    "e": {"type": "array", "items": False},
                }
            ),
            _lowered(
                {
                    "t": {
                        "type": "ARRAY",
                        "items": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
                    },
                    "e": {"type": "ARRAY", "maxItems": 0},
                }
            ),
            id="tuple-with-rest-and-no-items",
        ),
    ],
)
def test_lowering(original: dict[str, Any], lowered: dict[str, Any]) -> None:
    """Each schema is rewritten into exactly its Gemini form, which the SDK's Schema accepts."""
    result, _ = lower_gemini("t", original)
    assert result == lowered
    assert types.Schema.model_validate(result).model_dump(exclude_none=True)


def test_changes_name_their_effects() -> None:
    """oneOf and additionalProperties loosen; inlining and nullable rewrites change nothing."""
    original = _obj(
        {
            "u": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "r": {"$ref": "#/$defs/R"},
            "o": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        additionalProperties=False,
        **{"$defs": {"R": {"type": "number", "multipleOf": 0.5}}},
    )
    _, changes = lower_gemini("t", original)
    assert [(c.path, c.keyword, c.effect) for c in changes] == [
        ("/properties/u/oneOf", "oneOf", "loosened"),
        ("/properties/r/$ref", "$ref", "none"),
        ("/properties/r/multipleOf", "multipleOf", "loosened"),
        ("/properties/o/anyOf/1", "anyOf", "none"),
        ("/properties/o/anyOf", "anyOf", "none"),
        ("/additionalProperties", "additionalProperties", "loosened"),
        ("/$defs", "$defs", "none"),
    ]


def test_a_one_of_with_null_branches_says_it_loosened() -> None:
    """A oneOf whose branches both accept null refused null; sent as nullable it accepts it, so
    the report says the oneOf loosened (null branches count as branches)."""
    original = _obj(
        {"b": {"type": "array", "items": {"oneOf": [{"type": "null"}, {"type": "null"}]}}}
    )
    _, changes = lower_gemini("t", original)
    assert ("/properties/b/items/oneOf", "oneOf", "loosened") in [
        (c.path, c.keyword, c.effect) for c in changes
    ]


@pytest.mark.parametrize(
    ("schema", "path", "keyword"),
    [
        pytest.param(
            _obj(
                {"n": {"$ref": "#/$defs/N"}},
                **{"$defs": {"N": _obj({"next": {"$ref": "#/$defs/N"}})}},
            ),
            "/properties/n/properties/next/$ref",
            "$ref",
            id="recursive",
        ),
        pytest.param(
            _obj({"x": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}),
            "/properties/x/allOf",
            "allOf",
            id="allOf",
        ),
        pytest.param(_obj({"x": False}), "/properties/x", "false", id="false-schema"),
        pytest.param(
            _obj({"x": {"$ref": "#/$defs/Missing"}}), "/properties/x/$ref", "$ref", id="dangling"
        ),
    ],
)
def test_unrepresentable_schemas_raise_naming_the_keyword(
    schema: dict[str, Any], path: str, keyword: str
) -> None:
    """A schema Gemini cannot take is an error naming the keyword and where it is."""
    with pytest.raises(UnsupportedSchema) as caught:
        lower_gemini("t", schema)
    assert (caught.value.path, caught.value.keyword, caught.value.provider) == (
        path,
        keyword,
        "gemini",
    )
