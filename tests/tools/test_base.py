"""Tests for the Tool contract: current_spec, lifecycle and raw-schema tools (invokit.tools._base)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from invokit import Tool, ToolContext, ToolRegistry, ToolSpec
from invokit.exceptions import InvalidArguments, InvalidToolDefinition

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests here run on both backends: the lifecycle and threads must not assume asyncio."""
    return str(request.param)


class Counter(Tool):
    """A hand-written tool that counts its lifecycle calls."""

    def __init__(self, *, setup_delay: float = 0.0, fail_teardown: bool = False) -> None:
        self.setups = 0
        self.teardowns = 0
        self.setup_delay = setup_delay
        self.fail_teardown = fail_teardown
        self.hidden = False
        self.description = "Count."

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name="counter", description="Count.")

    def current_spec(self) -> ToolSpec | None:
        if self.hidden:
            return None
        return self.spec.with_description(self.description)

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return self.setups

    async def setup(self) -> None:
        await anyio.sleep(self.setup_delay)
        self.setups += 1

    async def teardown(self) -> None:
        self.teardowns += 1
        if self.fail_teardown:
            raise OSError("socket already closed")


def test_tool_is_abstract() -> None:
    """A Tool without spec and invoke cannot be instantiated."""
    with pytest.raises(TypeError):
        Tool()  # type: ignore[abstract]


def test_defaults_declare_no_permissions_and_current_spec_is_spec() -> None:
    """By default a tool declares no side effects and its current spec is its spec."""

    class Plain(Tool):
        @property
        def spec(self) -> ToolSpec:
            return ToolSpec(name="plain")

        async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
            return None

    plain = Plain()
    assert plain.current_spec() == plain.spec
    assert plain.permissions({}, ToolContext()) == ()
    assert plain.name == "plain"
    assert repr(plain) == "<Plain 'plain'>"


def test_current_spec_can_change_or_hide_the_tool() -> None:
    """A registry lists the current spec, and leaves the tool out while it returns None."""
    counter = Counter()
    registry = ToolRegistry([counter])
    counter.description = "Count, now with more detail."
    assert [s.description for s in registry.specs()] == ["Count, now with more detail."]
    counter.hidden = True
    assert registry.specs() == []


def test_validator_follows_the_current_spec() -> None:
    """When the current spec's schema changes, validation uses the new schema."""

    class Evolving(Tool):
        def __init__(self) -> None:
            self.schema: dict[str, Any] = {"type": "object", "properties": {}}

        @property
        def spec(self) -> ToolSpec:
            return ToolSpec(name="evolving", input_schema=self.schema)

        async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
            return args

    evolving = Evolving()
    assert evolving.validate('{"n": "x"}') == {"n": "x"}
    evolving.schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    with pytest.raises(InvalidArguments):
        evolving.validate('{"n": "x"}')


@pytest.mark.anyio
async def test_setup_runs_once_however_many_callers_race() -> None:
    """Concurrent first users share one setup run; later calls do not repeat it."""
    counter = Counter(setup_delay=0.05)
    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(counter.ensure_setup)
    await counter.ensure_setup()
    assert counter.setups == 1


@pytest.mark.anyio
async def test_failed_setup_is_retried_by_the_next_caller() -> None:
    """A setup that raises leaves the tool not ready, so the next use tries again."""

    class Flaky(Counter):
        async def setup(self) -> None:
            self.setups += 1
            if self.setups == 1:
                raise ConnectionError("database not up yet")

    flaky = Flaky()
    with pytest.raises(ConnectionError):
        await flaky.ensure_setup()
    await flaky.ensure_setup()
    assert flaky.setups == 2


@pytest.mark.anyio
async def test_close_runs_teardown_only_after_setup() -> None:
    """Closing a tool that was never set up does nothing; after setup it tears down once."""
    counter = Counter()
    await counter.close()
    assert counter.teardowns == 0
    await counter.ensure_setup()
    await counter.close()
    await counter.close()
    assert counter.teardowns == 1


@pytest.mark.anyio
async def test_setup_runs_again_after_close() -> None:
    """A closed tool is set up afresh on its next use."""
    counter = Counter()
    await counter.ensure_setup()
    await counter.close()
    await counter.ensure_setup()
    assert counter.setups == 2


@pytest.mark.anyio
async def test_teardown_failure_is_a_warning_not_an_error() -> None:
    """A teardown that raises is reported as a RuntimeWarning naming the tool; close succeeds."""
    counter = Counter(fail_teardown=True)
    await counter.ensure_setup()
    with pytest.warns(RuntimeWarning, match="counter.*socket already closed"):
        await counter.close()
    assert counter.teardowns == 1


# -- Tool.from_schema ---------------------------------------------------------------------


def test_from_schema_uses_the_schema_as_given() -> None:
    """A raw-schema tool's spec carries exactly the given name, description and schemas."""
    out = {"type": "object", "properties": {"summary": {"type": "string"}}}
    forecast = Tool.from_schema(
        lambda city, days=1: {"summary": f"{city}:{days}"},
        name="weather.forecast",
        description="Forecast.",
        input_schema=SCHEMA,
        output_schema=out,
        read_only=True,
        tags=["weather"],
    )
    spec = forecast.spec
    assert (spec.name, spec.description) == ("weather.forecast", "Forecast.")
    assert spec.input_schema == SCHEMA
    assert spec.output_schema == out
    assert spec.annotations.read_only is True
    assert spec.tags == frozenset({"weather"})


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "object", "properties": {"x": {"type": "text"}}}, id="bad-type"),
        pytest.param({"type": "string"}, id="not-an-object"),
        pytest.param(
            {"type": "object", "properties": {"x": {"$ref": "https://example.test/s"}}},
            id="remote-ref",
        ),
    ],
)
def test_from_schema_rejects_invalid_schemas_at_definition(schema: dict[str, Any]) -> None:
    """An invalid raw schema raises when the tool is defined, before any call."""
    with pytest.raises(InvalidToolDefinition):
        Tool.from_schema(lambda **kw: kw, name="bad", description="Bad.", input_schema=schema)


def test_from_schema_compiles_once() -> None:
    """The raw schema is compiled when defined and that validator serves every call."""
    forecast = Tool.from_schema(lambda city: city, name="f", description="F.", input_schema=SCHEMA)
    compiled = forecast.validator
    assert forecast.validate('{"city": "Oslo"}') == {"city": "Oslo"}
    with pytest.raises(InvalidArguments):
        forecast.validate('{"city": "Oslo", "days": 0}')
    assert forecast.validator is compiled


@pytest.mark.anyio
async def test_from_schema_passes_arguments_and_context() -> None:
    """The function gets validated arguments as keywords and a context parameter if it has one."""

    async def forecast(city: str, ctx: ToolContext, days: int = 1) -> str:
        return f"{ctx.call_id}:{city}:{days}"

    raw = Tool.from_schema(forecast, name="f", description="F.", input_schema=SCHEMA)
    args = raw.validate({"city": "Oslo", "days": 3})
    assert await raw.invoke(args, ToolContext(call_id="c7")) == "c7:Oslo:3"
    assert "ctx" not in raw.spec.input_schema["properties"]


@pytest.mark.anyio
async def test_from_schema_sync_function_runs() -> None:
    """A sync function works with a raw schema too."""
    raw = Tool.from_schema(
        lambda city, days=1: f"{city}+{days}", name="f", description="F.", input_schema=SCHEMA
    )
    assert await raw.invoke({"city": "Rome"}, ToolContext()) == "Rome+1"
