"""What every provider's tools() shares: sources, ordering, fallbacks, and no SDK needed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

import invokit.providers
from invokit import ToolRegistry, ToolSpec
from invokit.providers import UnsupportedSchema, anthropic, gemini, openai
from invokit.tools import declare

MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["labels"],
}
TREE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/Node"}},
    "$defs": {
        "Node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        }
    },
}


def test_specs_tools_and_registries_declare_alike(registry: ToolRegistry) -> None:
    """A registry, its tools, or their specs in any order give byte-identical declarations."""
    from_registry = openai.tools(registry).tools
    tools = list(registry)
    specs = [t.spec for t in reversed(tools)]
    assert openai.tools(reversed(tools)).tools == from_registry
    assert openai.tools(specs).tools == from_registry


def test_strict_true_refuses_what_strict_mode_cannot_represent() -> None:
    """strict=True raises for a map-typed argument, naming the keyword and the tool."""
    labels = declare("labels.set", "Set labels.", MAP_SCHEMA)
    with pytest.raises(UnsupportedSchema) as caught:
        openai.tools([labels], strict=True)
    assert caught.value.keyword == "additionalProperties"
    assert caught.value.tool == "labels.set"


def test_strict_auto_falls_back_per_tool_and_reports_it(registry: ToolRegistry) -> None:
    """strict='auto' keeps strict where it can and declares the rest non-strict, reported."""
    labels = declare("labels.set", "Set labels.", MAP_SCHEMA)
    decl = openai.tools([*registry, labels], strict="auto", api="responses")
    by_name = {t["name"]: t for t in decl.tools}
    assert by_name["labels_set"]["strict"] is False
    assert by_name["labels_set"]["parameters"] == MAP_SCHEMA
    assert by_name["weather_current"]["strict"] is True
    (fallback,) = [c for c in decl.report if c.action == "fallback"]
    assert (fallback.tool, fallback.path, fallback.keyword) == (
        "labels.set",
        "/properties/labels/additionalProperties",
        "additionalProperties",
    )


def test_gemini_auto_sends_recursive_schemas_as_json_schema() -> None:
    """schema='auto' sends a recursive schema as parametersJsonSchema; openapi refuses it."""
    tree = declare("tree.save", "Save a tree.", TREE_SCHEMA)
    with pytest.raises(UnsupportedSchema):
        gemini.tools([tree])
    (declared,) = gemini.tools([tree], schema="auto").tools[0]["functionDeclarations"]
    assert declared["parametersJsonSchema"] == TREE_SCHEMA
    report = gemini.tools([tree], schema="auto").report
    assert [c.action for c in report] == ["fallback"]


def test_no_tools_declare_nothing() -> None:
    """An empty registry gives empty declarations for every provider."""
    empty = ToolRegistry([])
    assert openai.tools(empty).tools == []
    assert anthropic.tools(empty, cache=True).tools == []
    assert gemini.tools(empty).tools == []


def test_report_renders_one_line_per_change(registry: ToolRegistry) -> None:
    """The report reads as one line per change with its tool, path and effect."""
    text = openai.tools(registry, strict=True).report.render()
    assert "weather.current /properties/days required:" in text
    assert text.count("\n") == len(openai.tools(registry, strict=True).report) - 1


def test_public_names_are_sorted_and_exported() -> None:
    """Each public module's __all__ is sorted and every name in it exists."""
    for module in (invokit.providers, openai, anthropic, gemini):
        assert list(module.__all__) == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name)
    assert invokit.providers.LoweringReport.__module__ == "invokit.providers"


def test_spec_without_description_declares_none() -> None:
    """A tool without a description has no description key (never an empty string)."""
    spec = ToolSpec(name="bare", input_schema={"type": "object", "properties": {}})
    assert "description" not in openai.tools([spec]).tools[0]["function"]
    assert "description" not in anthropic.tools([spec]).tools[0]


def test_dict_forms_work_without_any_sdk() -> None:
    """With the SDKs unimportable, every provider still declares, parses and formats."""
    script = textwrap.dedent(
        """
        import sys
        for blocked in ("openai", "anthropic", "google", "google.genai"):
            sys.modules[blocked] = None
        from invokit import ToolCall, ToolResult, TextPart
        from invokit.exceptions import MissingExtra
        from invokit.providers import anthropic, gemini, openai
        from invokit.tools import declare
        echo = declare("text.echo", "Echo.", {"type": "object", "properties": {"t": {"type": "string"}}})
        o = openai.tools([echo], strict=True)
        call = {"id": "c1", "type": "function",
                "function": {"name": "text_echo", "arguments": '{"t": null}'}}
        (parsed,) = o.calls({"role": "assistant", "tool_calls": [call]})
        assert parsed.name == "text.echo" and parsed.arguments == {}, parsed
        result = ToolResult(call_id="c1", name="text.echo", content=(TextPart(text="hi"),))
        assert o.results([result])[0]["content"] == "hi"
        assert anthropic.tools([echo]).results([result])["content"][0]["tool_use_id"] == "c1"
        g = gemini.tools([echo])
        assert g.results([result])["parts"][0]["functionResponse"]["name"] == "text.echo"
        try:
            gemini.as_sdk(g.results([result]))
        except MissingExtra as error:
            assert error.extra == "gemini"
        else:
            raise AssertionError("as_sdk worked without google-genai")
        assert not any(m.split(".")[0] in ("openai", "anthropic") and sys.modules[m]
                       for m in sys.modules)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
