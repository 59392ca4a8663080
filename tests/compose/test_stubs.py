"""Stubs: each tool as a typed Python function, named for the script."""

from __future__ import annotations

from typing import Any

import pytest

from invokit import ToolSpec
from invokit.compose import function_name, render_stubs
from invokit.compose._stubs import script_functions, type_of


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        pytest.param("fs.read", "fs_read", id="dot"),
        pytest.param("web-search", "web_search", id="dash"),
        pytest.param("import", "import_", id="keyword"),
        pytest.param("print", "print_", id="builtin"),
        pytest.param("3d", "_3d", id="digit"),
    ],
)
def test_function_names(tool: str, name: str) -> None:
    """Tool names become identifiers the script can call."""
    assert function_name(tool) == name


@pytest.mark.parametrize(
    ("schema", "annotation"),
    [
        pytest.param({"type": "string"}, "str", id="str"),
        pytest.param({"type": "array", "items": {"type": "integer"}}, "list[int]", id="list"),
        pytest.param({"enum": ["a", "b"]}, 'Literal["a", "b"]', id="enum"),
        pytest.param(
            {"anyOf": [{"type": "number"}, {"type": "null"}]}, "float | None", id="optional"
        ),
        pytest.param({"type": "object"}, "dict[str, Any]", id="object"),
        pytest.param({"$ref": "#/x"}, "Any", id="ref"),
    ],
)
def test_types(schema: dict[str, Any], annotation: str) -> None:
    """JSON Schema types map to Python annotations."""
    assert type_of(schema) == annotation


def test_stubs_are_sorted_and_required_parameters_come_first() -> None:
    """Stubs are sorted by tool name; required parameters precede those with defaults."""
    specs = [
        ToolSpec(
            name="b.tool",
            description="Second.\nMore.",
            input_schema={
                "type": "object",
                "properties": {"opt": {"type": "integer", "default": 3}, "req": {"type": "string"}},
                "required": ["req"],
            },
        ),
        ToolSpec(name="a", description="First."),
    ]
    assert render_stubs(specs) == (
        'def a() -> Any:\n    """First."""\n\n'
        'def b_tool(req: str, opt: int = 3) -> Any:\n    """Second."""\n'
    )
    assert script_functions(specs)["b_tool"].params == ("req", "opt")


def test_two_tools_with_one_script_name_are_refused() -> None:
    """fs.read and fs_read cannot both be fs_read()."""
    with pytest.raises(ValueError, match="fs_read"):
        script_functions([ToolSpec(name="fs.read"), ToolSpec(name="fs_read")])
