"""Tests for schemas built from typed functions (invokit.schema._signature)."""

from __future__ import annotations

import dataclasses
import enum
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from invokit import ToolContext
from invokit.exceptions import InvalidToolDefinition
from invokit.schema._signature import FunctionSignature, read_signature


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


class Options(BaseModel):
    depth: int = 1


class Tick:
    """A stand-in progress type."""


@dataclasses.dataclass
class Hit:
    path: str
    line: int


def _read(fn: Callable[..., Any]) -> FunctionSignature:
    return read_signature(fn, tool="demo", context_type=ToolContext)


def search(
    query: Annotated[str, Field(description="Words to find", min_length=1)],
    limit: int = 10,
    kind: Literal["file", "dir"] = "file",
    ctx: ToolContext | None = None,
) -> list[Hit]:
    """Search the tree.

    Args:
        query: Overridden by the Field description.
        limit: Most results to return.
    """
    return []


def test_input_schema_comes_from_hints_defaults_and_docstring() -> None:
    """Types, defaults, required names, Literal enums and descriptions make the input schema."""
    sig = _read(search)
    assert sig.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "Words to find"},
            "limit": {"type": "integer", "default": 10, "description": "Most results to return."},
            "kind": {"type": "string", "enum": ["file", "dir"], "default": "file"},
        },
        "required": ["query"],
    }
    assert sig.description == "Search the tree."
    Draft202012Validator.check_schema(sig.input_schema)


def test_annotated_field_description_wins_over_the_docstring() -> None:
    """An explicit Field(description=...) is kept even when the docstring describes the parameter."""
    assert _read(search).input_schema["properties"]["query"]["description"] == "Words to find"


def test_context_parameter_is_injected_not_described() -> None:
    """A parameter typed ToolContext (optional or not) is recorded and left out of the schema."""

    def plain(ctx: ToolContext, x: int) -> None:
        """Plain."""

    assert _read(search).context_param == "ctx"
    sig = _read(plain)
    assert sig.context_param == "ctx"
    assert list(sig.input_schema["properties"]) == ["x"]


def test_return_annotation_gives_the_output_schema() -> None:
    """The return type's JSON Schema (serialization mode) is the output schema, without titles."""
    assert _read(search).output_schema == {
        "type": "array",
        "items": {"$ref": "#/$defs/Hit"},
        "$defs": {
            "Hit": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
                "required": ["path", "line"],
            }
        },
    }


@pytest.mark.parametrize(
    "returns",
    [
        pytest.param(None, id="none"),
        pytest.param(Any, id="any"),
        pytest.param("missing", id="no-hint"),
    ],
)
def test_no_output_schema_without_a_meaningful_return_type(returns: Any) -> None:
    """None, Any or no return annotation give no output schema."""

    def fn(x: int) -> None:
        """Fn."""

    if returns == "missing":
        del fn.__annotations__["return"]
    else:
        fn.__annotations__["return"] = returns
    assert _read(fn).output_schema is None


def test_streaming_function_output_schema_is_the_item_type() -> None:
    """For an async generator, the output schema is that of what it yields."""

    async def stream(n: int) -> AsyncIterator[Hit]:
        """Stream."""
        yield Hit(path="a", line=n)

    schema = _read(stream).output_schema
    assert schema is not None
    assert schema["required"] == ["path", "line"]


def test_rich_types_get_a_converter_to_python_values() -> None:
    """Enums and models are validated JSON in the schema and real objects for the function."""

    def run(mode: Mode, options: Options | None = None, count: int = 1) -> None:
        """Run."""

    sig = _read(run)
    assert sig.input_schema["properties"]["mode"] == {"$ref": "#/$defs/Mode"}
    assert sig.convert is not None
    converted = sig.convert({"mode": "safe", "options": {"depth": 3}, "count": 2.0})
    assert converted == {"mode": Mode.SAFE, "options": Options(depth=3), "count": 2}
    assert type(converted["count"]) is int


def test_plain_json_types_are_passed_as_is() -> None:
    """Strings, lists and dicts of plain types need no conversion step."""

    def plain(a: str, b: list[str], c: dict[str, bool] | None = None) -> None:
        """Plain."""

    assert _read(plain).convert is None


def test_integer_parameters_receive_ints_for_integral_floats() -> None:
    """JSON Schema accepts 1.0 for an integer; the function still receives the int 1."""

    def count(n: int, label: str = "") -> None:
        """Count."""

    sig = _read(count)
    assert sig.convert is not None
    result = sig.convert({"n": 3.0, "label": "x"})
    assert result == {"n": 3, "label": "x"}
    assert type(result["n"]) is int


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("def fn(*args: int) -> None: ...", id="var-positional"),
        pytest.param("def fn(**kwargs: int) -> None: ...", id="var-keyword"),
        pytest.param("def fn(x: int, /) -> None: ...", id="positional-only"),
        pytest.param("def fn(x: 'Undefined') -> None: ...", id="unresolvable-hint"),
        pytest.param("def fn(x: socket.socket) -> None: ...", id="no-json-schema"),
        pytest.param("def fn(x: int) -> socket.socket: ...", id="return-without-schema"),
    ],
)
def test_unusable_signatures_are_definition_errors(source: str) -> None:
    """Parameters that cannot be passed by name or have no JSON Schema fail at definition time."""
    namespace: dict[str, Any] = {"socket": __import__("socket")}
    exec(source, namespace)
    with pytest.raises(InvalidToolDefinition) as caught:
        _read(namespace["fn"])
    assert caught.value.tool == "demo"


def test_schema_has_no_generated_titles() -> None:
    """pydantic's per-property titles are dropped; a property named title is kept."""

    def fn(title: str, nested: Options) -> None:
        """Fn."""

    schema = _read(fn).input_schema
    assert "title" not in schema
    assert "title" in schema["properties"]
    assert "title" not in schema["properties"]["title"]
    assert "title" not in schema["$defs"]["Options"]


def test_progress_yields_are_not_part_of_the_output_schema() -> None:
    """A streaming function's progress type is left out of its yield type's schema."""

    async def stream(n: int) -> AsyncIterator[Tick | Hit]:
        """Stream."""
        yield Hit(path="a", line=n)

    async def only_ticks(n: int) -> AsyncIterator[Tick]:
        """Only progress."""
        yield Tick()

    sig = read_signature(stream, tool="demo", context_type=ToolContext, progress_type=Tick)
    assert sig.output_schema is not None
    assert sig.output_schema["required"] == ["path", "line"]
    ticks = read_signature(only_ticks, tool="demo", context_type=ToolContext, progress_type=Tick)
    assert ticks.output_schema is None


def _every_kind(x: int, y: int = 1, *args: int, z: int, w: int = 2, **kw: int) -> None: ...
def _positional_only(p: int, /, q: int, r: int = 3) -> None: ...
def _keyword_only(*, k: int) -> None: ...
def _nothing() -> None: ...
async def _async_defaults(city: str, n: int = 3) -> None: ...


@pytest.mark.parametrize(
    "fn",
    [_every_kind, _positional_only, _keyword_only, _nothing, _async_defaults],
    ids=lambda fn: fn.__name__,
)
def test_parameters_read_from_the_code_object_match_inspect(fn: Any) -> None:
    """The fast reading of a plain function's parameters agrees with inspect.signature."""
    from invokit.schema._signature import _parameters

    ours = [(p.name, p.kind, p.default) for p in _parameters(fn)]
    theirs = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert ours == theirs
