"""A subclass of ``str`` (a spec's ``ToolName``, a ``str`` enum member) is the text it holds."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from invokit import ToolCall, ToolName, ToolRegistry, tool
from invokit.execution import Completed, Executor, Interrupted

pytestmark = pytest.mark.anyio


class Names(str, enum.Enum):  # noqa: UP042 - str() of this member is "Names.ECHO", not its text
    """Tool names as a ``str`` enum, the way a host may keep them."""

    ECHO = "echo"
    WRITE = "write"


class StrNames(enum.StrEnum):
    """Tool names as a ``StrEnum``."""

    ECHO = "echo"


class Text(str):
    """A plain subclass of ``str`` with an ``__eq__`` that must never decide a lookup."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


@tool(read_only=True)
async def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool(needs_approval=True)
async def write(text: str) -> str:
    """Pretend to write the text."""
    return "wrote " + text


def _names() -> list[Any]:
    return [
        pytest.param(lambda: echo.spec.name, id="spec-name"),
        pytest.param(lambda: ToolName("echo"), id="ToolName"),
        pytest.param(lambda: Names.ECHO, id="str-enum"),
        pytest.param(lambda: StrNames.ECHO, id="StrEnum"),
        pytest.param(lambda: Text("echo"), id="str-subclass"),
    ]


@pytest.mark.parametrize("make", _names())
async def test_a_call_named_by_any_str_subclass_runs(make: Any) -> None:
    """execute, check, execute_many and stream all find the tool by a str subclass's text."""
    executor = Executor(ToolRegistry([echo]))
    name = make()
    call = ToolCall(id=Text("c1"), name=name, arguments='{"text": "hi"}', session_id=Text("s"))
    assert type(call.name) is str and call.name == "echo"
    assert type(call.id) is str and type(call.session_id) is str
    outcome = await executor.execute(call)
    assert isinstance(outcome, Completed), outcome
    assert outcome.result.text == "hi"
    assert type(outcome.result.name) is str and type(outcome.result.call_id) is str
    assert (await executor.check(call)).action == "allow"
    [many] = await executor.execute_many([call])
    assert isinstance(many, Completed), many
    streamed = [item async for item in executor.stream(call)]
    assert isinstance(streamed[-1], Completed), streamed


async def test_mapping_arguments_with_str_enum_keys_and_values_run() -> None:
    """Arguments given as a mapping may use str enum keys and values; a str enum result is text."""

    class Key(str, enum.Enum):  # noqa: UP042 - the older str enum form
        TEXT = "text"

    executor = Executor(ToolRegistry([echo]))
    outcome = await executor.execute(
        ToolCall(id="c1", name=Names.ECHO, arguments={Key.TEXT: Names.WRITE})
    )
    assert isinstance(outcome, Completed), outcome
    assert outcome.result.text == "write"
    assert outcome.result.structured == "write"


async def test_an_approval_asked_for_a_str_enum_call_resumes_by_a_str_subclass_id() -> None:
    """A call named by a str enum asks for its approval, and resumes by the id given as a
    str subclass."""
    executor = Executor(ToolRegistry([write]))
    outcome = await executor.execute(ToolCall(id="c1", name=Names.WRITE, arguments='{"text": "x"}'))
    assert isinstance(outcome, Interrupted), outcome
    resumed = await executor.resume(Text(outcome.interrupt.id), approve=True)
    assert isinstance(resumed, Completed), resumed
    assert resumed.result.text == "wrote x"
