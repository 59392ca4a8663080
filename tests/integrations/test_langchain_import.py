"""LangChain tools and toolkits imported into an invokit registry, guarded by invokit's policy."""

from __future__ import annotations

from typing import Annotated

import pytest
from langchain_core.tools import (
    BaseTool,
    BaseToolkit,
    InjectedToolArg,
    StructuredTool,
    ToolException,
)
from langchain_core.tools import tool as lc_tool

from invokit import Completed, Executor, Failed, Interrupted, ToolCall
from invokit.integrations.langchain import from_langchain
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

calls: list[str] = []


@lc_tool
def search(query: str, limit: int = 3) -> str:
    """Search the notes."""
    calls.append(f"search {query} {limit}")
    return f"{limit} results for {query}"


@lc_tool
async def send_email(to: str, body: str) -> str:
    """Send an email."""
    calls.append(f"email {to}")
    return "sent"


@lc_tool
def transfer(amount: int, account: Annotated[str, InjectedToolArg] = "mine") -> str:
    """Move money out of the account the application injects."""
    calls.append(f"transfer {amount} from {account}")
    return f"moved {amount} from {account}"


def broken(path: str) -> str:
    """Always fails."""
    raise ToolException(f"cannot open {path}")


class Mailbox(BaseToolkit):
    """A toolkit of the two mail tools."""

    def get_tools(self) -> list[BaseTool]:
        return [search, send_email]


@pytest.fixture(autouse=True)
def fresh_calls() -> None:
    calls.clear()


def completed(outcome: object) -> Completed | Failed:
    assert isinstance(outcome, Completed | Failed)
    return outcome


async def test_an_imported_tool_runs_with_validated_arguments() -> None:
    """An allowed LangChain tool runs through the executor with the schema the model saw."""
    registry = from_langchain([search])
    schema = registry["search"].spec.input_schema
    assert schema["required"] == ["query"]
    executor = Executor(registry, policy=Policy(allow=["search"]))
    result = completed(
        await executor.execute(ToolCall(id="c1", name="search", arguments={"query": "milk"}))
    ).result
    assert not result.is_error
    assert result.text == "3 results for milk"
    assert calls == ["search milk 3"]


async def test_an_imported_tool_is_denied_by_an_invokit_rule() -> None:
    """A deny rule refuses an imported LangChain tool; its body never runs."""
    executor = Executor(
        from_langchain(Mailbox()),
        policy=Policy(deny=["send_email(to=*@evil.example)"], allow=["send_email"]),
    )
    denied = completed(
        await executor.execute(
            ToolCall(id="c1", name="send_email", arguments={"to": "x@evil.example", "body": "hi"})
        )
    ).result
    assert denied.is_error
    assert denied.error is not None
    assert denied.error.kind == "denied"
    assert calls == []
    allowed = completed(
        await executor.execute(
            ToolCall(id="c2", name="send_email", arguments={"to": "ana@example.com", "body": "hi"})
        )
    ).result
    assert allowed.text == "sent"
    assert calls == ["email ana@example.com"]


async def test_an_imported_tool_asks_by_default() -> None:
    """Foreign tools are not read-only to invokit: with no rule, a call asks for approval."""
    executor = Executor(from_langchain(Mailbox()))
    outcome = await executor.execute(ToolCall(id="c1", name="search", arguments={"query": "q"}))
    assert isinstance(outcome, Interrupted)
    assert calls == []


async def test_invalid_arguments_never_reach_the_langchain_tool() -> None:
    """invokit validates against the imported schema before the tool runs."""
    executor = Executor(from_langchain([search]), policy=Policy(allow=["search"]))
    result = completed(
        await executor.execute(ToolCall(id="c1", name="search", arguments={"limit": "x"}))
    ).result
    assert result.error is not None
    assert result.error.kind == "invalid_arguments"
    assert calls == []


async def test_a_tool_exception_is_an_error_result() -> None:
    """A ToolException raised by a LangChain tool becomes an error result with its message."""
    tool = StructuredTool.from_function(broken)
    executor = Executor(from_langchain([tool]), policy=Policy(allow=["broken"]))
    result = completed(
        await executor.execute(ToolCall(id="c1", name="broken", arguments={"path": "a.txt"}))
    ).result
    assert result.is_error
    assert "cannot open a.txt" in result.text


async def test_the_model_cannot_set_an_injected_argument() -> None:
    """An injected argument is left out of the schema the model sees; a model that sends it
    anyway (prompt-injected: another account) does not reach the tool with it."""
    registry = from_langchain([transfer])
    assert "account" not in registry["transfer"].spec.input_schema["properties"]
    executor = Executor(registry, policy=Policy(allow=["transfer"]))
    call = ToolCall(id="c1", name="transfer", arguments={"amount": 5, "account": "victim"})
    completed(await executor.execute(call))
    assert calls == ["transfer 5 from mine"]
