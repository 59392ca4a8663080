"""Tests for ``@tool`` and FunctionTool (invokit.tools._function)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel, Field

from invokit import (
    FunctionTool,
    OutputLimit,
    Progress,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolResult,
    tool,
)
from invokit._calls import ImagePart, TextPart
from invokit.exceptions import InvalidArguments, InvalidToolDefinition
from invokit.permissions import FileRead, PermissionRequest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests here run on both backends: the lifecycle and threads must not assume asyncio."""
    return str(request.param)


class Weather(BaseModel):
    city: str
    celsius: float


@tool(read_only=True, tags=("weather",), category="info")
async def get_weather(
    city: Annotated[str, Field(description="City name, e.g. Madrid")],
    days: int = 1,
    ctx: ToolContext | None = None,
) -> Weather:
    """Get the current weather for a city.

    Args:
        days: How many days ahead.
    """
    return Weather(city=city, celsius=21.5 + days)


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b


def _ctx(**kwargs: Any) -> ToolContext:
    return ToolContext(call_id="c1", tool_name="t", **kwargs)


# -- definition ---------------------------------------------------------------------------


def test_bare_decorator_uses_function_name_and_docstring() -> None:
    """``@tool`` without options names the tool after the function and describes it by its docstring."""
    assert isinstance(add, FunctionTool)
    assert isinstance(add, Tool)
    assert add.spec.name == "add"
    assert add.spec.description == "Add two integers."
    assert add.spec.input_schema["required"] == ["a"]
    assert add.spec.output_schema == {"type": "integer"}


def test_decorator_options_fill_the_spec() -> None:
    """Hints, tags, category and docstring descriptions all end up in the spec."""
    spec = get_weather.spec
    assert spec.description == "Get the current weather for a city."
    assert spec.annotations == ToolAnnotations(read_only=True)
    assert spec.tags == frozenset({"weather"})
    assert spec.category == "info"
    props = spec.input_schema["properties"]
    assert props["city"]["description"] == "City name, e.g. Madrid"
    assert props["days"]["description"] == "How many days ahead."
    assert "ctx" not in props
    assert spec.output_schema is not None
    assert spec.output_schema["properties"]["celsius"] == {"type": "number"}


def test_every_keyword_option_reaches_the_spec() -> None:
    """Name, description, all hints, limit, timeout, concurrency and metadata are honoured."""
    limit = OutputLimit(max_chars=500, mode="spill")

    @tool(
        name="fs.write",
        description="Write a file.",
        read_only=False,
        destructive=True,
        idempotent=False,
        open_world=False,
        needs_approval=True,
        output_limit=limit,
        timeout=5.0,
        concurrency="exclusive",
        metadata={"owner": "ops"},
    )
    def write(path: str, text: str) -> None:
        """Ignored because a description is given."""

    spec = write.spec
    assert spec.name == "fs.write"
    assert spec.description == "Write a file."
    assert spec.annotations == ToolAnnotations(
        read_only=False,
        destructive=True,
        idempotent=False,
        open_world=False,
        needs_approval=True,
    )
    assert (spec.output_limit, spec.timeout, spec.concurrency) == (limit, 5.0, "exclusive")
    assert spec.metadata == {"owner": "ops"}


def test_explicit_hints_override_an_annotations_object() -> None:
    """Keyword hints are laid over the ``annotations=`` object, not the other way round."""

    @tool(annotations=ToolAnnotations(read_only=True, idempotent=True), read_only=False)
    def touch(path: str) -> None:
        """Touch."""

    assert touch.spec.annotations == ToolAnnotations(read_only=False, idempotent=True)


@pytest.mark.parametrize(
    "name",
    [pytest.param("bad name", id="space"), pytest.param("9lives", id="digit-first")],
)
def test_invalid_names_fail_when_the_tool_is_defined(name: str) -> None:
    """An invalid tool name is rejected by the decorator itself, not later."""
    with pytest.raises(InvalidToolDefinition):

        @tool(name=name)
        def fn() -> None:
            """Fn."""


def test_non_callables_are_rejected() -> None:
    """Only callables can become tools."""
    with pytest.raises(InvalidToolDefinition):
        FunctionTool("not a function")  # type: ignore[arg-type]


def test_spec_is_built_lazily_on_first_access() -> None:
    """Defining a tool reads no type hints; a broken hint surfaces on first ``spec`` access."""

    @tool
    def broken(x: Undefined) -> None:  # type: ignore[name-defined]  # noqa: F821
        """Broken."""

    assert broken.name == "broken"
    with pytest.raises(InvalidToolDefinition, match="type hints"):
        broken.spec  # noqa: B018


def test_defining_and_describing_tools_does_no_io(tmp_path: Path) -> None:
    """Defining a tool, building its spec and validating arguments open no file, socket or process."""
    script = tmp_path / "no_io.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from typing import Annotated
            from pydantic import BaseModel, Field
            import invokit
            from invokit import ToolRegistry, tool

            class Warm(BaseModel):
                a: int

            # warm-up: the first build through pydantic may import lazily (plain types never
            # reach pydantic, so the warm-up uses types that do)
            @tool
            def warm(a: Annotated[int, Field(ge=0)], w: Warm | None = None) -> Warm:
                return Warm(a=a)
            warm.spec
            warm.validate('{"a": 1}')

            events = []
            watching = False
            def hook(event, args):
                if watching and event.split(".")[0] in ("open", "socket", "subprocess", "os", "urllib"):
                    events.append(event)
            sys.addaudithook(hook)
            watching = True

            class Out(BaseModel):
                n: int

            @tool(read_only=True)
            async def demo(q: Annotated[str, Field(description="q")], n: int = 1) -> Out:
                '''Demo.

                Args:
                    n: count.
                '''
                return Out(n=n)

            raw = invokit.Tool.from_schema(
                lambda q: q, name="raw", description="Raw.",
                input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
            )
            registry = ToolRegistry([demo, raw])
            registry.specs()
            demo.validate('{"q": "x", "n": 2}')
            watching = False
            print(events)
            sys.exit(1 if events else 0)
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- invocation ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_tool_receives_arguments_and_context() -> None:
    """An async tool is awaited with its arguments and gets the ToolContext it asked for."""
    seen: list[ToolContext] = []

    @tool
    async def whoami(greeting: str, ctx: ToolContext) -> str:
        """Who am I."""
        seen.append(ctx)
        return f"{greeting} {ctx.call_id}"

    ctx = _ctx()
    assert await whoami.invoke({"greeting": "hi"}, ctx) == "hi c1"
    assert seen == [ctx]


@pytest.mark.anyio
async def test_model_return_values_come_back_as_returned() -> None:
    """invoke returns the tool's own value; JSON conversion is the executor's job."""
    result = await get_weather.invoke({"city": "Madrid"}, _ctx())
    assert result == Weather(city="Madrid", celsius=22.5)


@pytest.mark.anyio
async def test_sync_tools_run_in_a_worker_thread() -> None:
    """A sync tool runs off the event loop's thread, so the loop keeps serving other tasks."""
    loop_thread = threading.get_ident()
    started, released = threading.Event(), threading.Event()

    @tool
    def slow() -> list[Any]:
        """Block until a task on the event loop releases it."""
        started.set()
        return [threading.get_ident(), released.wait(60)]

    async def release() -> None:
        await anyio.to_thread.run_sync(started.wait, 60)
        released.set()  # runs only if the loop is free while the body blocks

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(release)
            worker, was_released = await slow.invoke({}, _ctx())
    assert worker != loop_thread
    # Had the body blocked the loop, the releasing task could not have run while it waited.
    assert was_released


@pytest.mark.anyio
async def test_integral_floats_reach_int_parameters_as_ints() -> None:
    """Arguments validated as ``1.0`` for an int parameter arrive as the int ``1``."""
    args = add.validate('{"a": 1.0, "b": 2.0}')
    result = await add.invoke(args, _ctx())
    assert result == 3
    assert type(result) is int


@pytest.mark.anyio
async def test_model_parameters_are_built_from_json() -> None:
    """A pydantic model parameter receives a model instance built from the JSON object."""

    @tool
    async def report(weather: Weather) -> str:
        """Report."""
        assert isinstance(weather, Weather)
        return f"{weather.city}: {weather.celsius}"

    args = report.validate({"weather": {"city": "Oslo", "celsius": -3}})
    assert await report.invoke(args, _ctx()) == "Oslo: -3.0"


@pytest.mark.anyio
async def test_streaming_tool_reports_progress_and_returns_the_last_yield() -> None:
    """An async generator is a streaming tool: Progress yields are reported, the last value is the result."""
    reports: list[Progress] = []

    @tool
    async def count(n: int) -> AsyncIterator[Progress | dict[str, int]]:
        """Count to n."""
        for i in range(n):
            yield Progress(progress=i + 1, total=n, message=f"step {i + 1}")
        yield {"counted": n}

    async def on_progress(progress: Progress) -> None:
        reports.append(progress)

    assert count.spec.annotations.streaming is True
    assert count.spec.output_schema == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    result = await count.invoke({"n": 2}, _ctx(on_progress=on_progress))
    assert result == {"counted": 2}
    assert [r.progress for r in reports if r.data is None] == [1, 2]
    assert reports[0].message == "step 1"
    assert reports[-1].data == {"counted": 2}


@pytest.mark.anyio
async def test_streaming_tool_is_closed_when_the_caller_stops() -> None:
    """A streaming tool's generator is closed (its finally runs) even if reporting fails."""
    closed: list[bool] = []

    @tool
    async def stream() -> AsyncIterator[int]:
        """Stream."""
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    async def refuse(progress: Progress) -> None:
        raise RuntimeError("listener gone")

    with pytest.raises(RuntimeError, match="listener gone"):
        await stream.invoke({}, _ctx(on_progress=refuse))
    assert closed == [True]


def test_decorated_function_stays_directly_callable() -> None:
    """Calling the tool object calls the function itself, for tests and reuse."""
    assert add(1, b=5) == 6
    assert getattr(add, "__name__", None) == "add"
    assert add.__doc__ == "Add two integers."


# -- validation and permissions -----------------------------------------------------------


def test_validate_applies_the_generated_schema() -> None:
    """``validate`` refuses arguments that break the schema built from the hints."""
    with pytest.raises(InvalidArguments) as caught:
        get_weather.validate('{"days": "two", "extra": 1}')
    paths = {issue.path for issue in caught.value.issues}
    assert paths == {"", "/days"}


def test_strict_tools_refuse_integral_floats() -> None:
    """``strict=True`` refuses ``1.0`` for an int parameter; the default accepts it."""

    @tool(strict=True)
    def strict_add(a: int) -> int:
        """Strict."""
        return a

    assert add.validate('{"a": 1.0}') == {"a": 1.0}
    with pytest.raises(InvalidArguments):
        strict_add.validate('{"a": 1.0}')
    assert strict_add.validate('{"a": 1}') == {"a": 1}


def test_validator_is_compiled_once_per_spec() -> None:
    """Repeated validation reuses one compiled validator."""
    first = add.validator
    add.validate('{"a": 1}')
    assert add.validator is first


def test_permissions_come_from_the_declared_function() -> None:
    """``permissions=`` turns the arguments into permission requests before anything runs."""

    def needs(args: Mapping[str, Any]) -> list[PermissionRequest]:
        return [FileRead(path=args["path"])]

    @tool(read_only=True, permissions=needs)
    def cat(path: str) -> str:
        """Cat."""
        raise AssertionError("never runs in this test")

    assert cat.permissions({"path": "a.txt"}, _ctx()) == (FileRead(path="a.txt"),)
    assert add.permissions({"a": 1}, _ctx()) == ()


def test_a_lone_string_tag_is_one_tag() -> None:
    """``@tool(tags="fs")`` gives the single tag fs."""

    @tool(tags="fs")
    def ls() -> None:
        """List."""

    assert ls.spec.tags == frozenset({"fs"})


def _results_as_is() -> list[Any]:
    async def whole(x: int) -> ToolResult:
        """A whole result."""
        return ToolResult(call_id="", name="whole", content=(TextPart(text=str(x)),))

    async def parts(x: int) -> list[TextPart | ImagePart]:
        """Content parts."""
        return [TextPart(text=str(x))]

    async def either(x: int) -> ToolResult | dict[str, int]:
        """A result or data."""
        return {"x": x}

    async def streamed(x: int) -> AsyncIterator[ToolResult]:
        """A streamed result."""
        yield ToolResult(call_id="", name="streamed", content=(TextPart(text=str(x)),))

    return [whole, parts, either, streamed]


@pytest.mark.parametrize("fn", _results_as_is(), ids=lambda fn: fn.__name__)
def test_a_function_returning_a_result_or_parts_has_no_output_schema(fn: Any) -> None:
    """A function that returns a ToolResult or content parts (what the executor takes as the
    result itself) has no output schema: not the fields of ToolResult, which no client sees."""
    assert tool(fn).spec.output_schema is None


def test_data_beside_results_keeps_its_output_schema() -> None:
    """A function returning plain data still gets the schema of that data."""

    async def data(x: int) -> dict[str, int]:
        """Data."""
        return {"x": x}

    assert tool(data).spec.output_schema == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
