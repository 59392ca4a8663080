"""Lowering stays linear in the schema's size, whatever its references and nesting."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest

from invokit import ToolSpec
from invokit.providers import UnsupportedSchema, gemini, openai
from invokit.providers._gemini_schema import lower_gemini
from invokit.providers._openai_strict import lower_strict
from invokit.providers._refs import accepts_null


def _doubling(levels: int) -> dict[str, Any]:
    """A schema whose every level refers twice to the next, each time with a description:
    inlined naively, it grows as 2**levels."""
    defs: dict[str, Any] = {f"L{levels}": {"type": "string"}}
    for i in range(levels):
        nxt = f"#/$defs/L{i + 1}"
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {
                "a": {"$ref": nxt, "description": "left"},
                "b": {"$ref": nxt, "description": "right"},
            },
            "required": ["a", "b"],
        }
    return {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/L0", "description": "the top"}},
        "required": ["root"],
        "$defs": defs,
    }


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


def _value(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value, "b": value}
    return {"root": value}


def test_strict_lowering_of_doubling_references_is_linear() -> None:
    """A 14-level doubling schema lowers for strict mode to a size linear in the original,
    through $defs entries, and the result still accepts exactly the same values."""
    schema = _doubling(14)
    lowered, changes = lower_strict("deep", schema)
    size = len(json.dumps(lowered))
    assert size < 20 * len(json.dumps(schema))
    assert any(c.keyword == "$ref" and c.action == "rewritten" for c in changes)
    validator = jsonschema_rs.validator_for(lowered)
    assert validator.is_valid(_value(14))
    assert not validator.is_valid({"root": {"a": "x"}})
    assert lowered["additionalProperties"] is False


def test_strict_lowering_keeps_inlining_for_ordinary_schemas() -> None:
    """A reference with a description used a few times is still inlined as before."""
    schema = _doubling(2)
    lowered, _ = lower_strict("small", schema)
    assert lowered["properties"]["root"]["description"] == "the top"
    assert "$ref" not in json.dumps(lowered["properties"])


def test_gemini_refuses_exponential_inlining_naming_the_tool() -> None:
    """Gemini has no references; a schema that would explode when inlined is refused with
    an UnsupportedSchema naming the tool, and ``auto`` sends it as JSON Schema instead."""
    spec = ToolSpec(name="deep", input_schema=_doubling(14))
    with pytest.raises(UnsupportedSchema) as caught:
        lower_gemini("deep", spec.input_schema)
    assert caught.value.tool == "deep"
    assert caught.value.provider == "gemini"
    decl = gemini.tools([spec], schema="auto")
    assert decl.tools[0]["functionDeclarations"][0]["parametersJsonSchema"] is spec.input_schema
    with pytest.raises(UnsupportedSchema):
        gemini.tools([spec])


@pytest.mark.parametrize(
    "lower", [pytest.param(lower_strict, id="strict"), pytest.param(lower_gemini, id="gemini")]
)
def test_deep_nesting_is_refused_not_a_recursion_error(lower: Any) -> None:
    """A schema nested 5,000 levels deep is refused as unsupported, never a RecursionError."""
    with pytest.raises(UnsupportedSchema) as caught:
        lower("deep", _nested(5_000))
    assert "deeper" in caught.value.reason


def test_strict_declarations_are_remembered_per_spec() -> None:
    """Declaring the same specs again reuses the strict lowering instead of redoing it."""
    spec = ToolSpec(name="deep", input_schema=_doubling(6))
    first = openai.tools([spec], strict=True)
    second = openai.tools([spec], strict=True, api="responses")
    assert first.tools[0]["function"]["parameters"] is second.tools[0]["parameters"]
    assert first.report.changes == second.report.changes


def test_remembered_refusals_raise_each_time() -> None:
    """A schema strict mode refuses is refused on every declaration, not only the first."""
    spec = ToolSpec(name="free", input_schema={"type": "object", "properties": {"x": {}}})
    for _ in range(2):
        with pytest.raises(UnsupportedSchema):
            openai.tools([spec], strict=True)


@pytest.mark.parametrize(
    ("schema", "takes_null"),
    [
        pytest.param({"type": "string"}, False, id="string"),
        pytest.param({"type": ["string", "null"]}, True, id="nullable"),
        pytest.param({"anyOf": [{"type": "integer"}, {"type": "null"}]}, True, id="optional"),
        pytest.param({"enum": ["a", None]}, True, id="enum-with-null"),
        pytest.param({"enum": ["a"]}, False, id="enum"),
        pytest.param({"minLength": 3}, True, id="string-keyword-only"),
        pytest.param({"oneOf": [{"type": "null"}, {"enum": [None]}]}, False, id="oneof-both"),
        pytest.param({"$ref": "#/$defs/N"}, True, id="ref"),
        pytest.param({"not": {"type": "null"}}, False, id="not"),
        pytest.param({"allOf": [{"type": "string"}]}, False, id="allof"),
    ],
)
def test_null_check_agrees_with_a_validator(schema: dict[str, Any], takes_null: bool) -> None:
    """Reading whether a schema takes null from its keywords agrees with jsonschema-rs, and
    defers to it (``None``) where the keywords alone cannot tell."""
    root = {**schema, "$defs": {"N": {"type": "null"}}}
    assert jsonschema_rs.validator_for(root).is_valid(None) is takes_null
    assert accepts_null(schema, root) in (takes_null, None)
