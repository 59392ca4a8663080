"""End to end: the SDK client against the invokit MCP server running as a stdio subprocess."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.mcp.support import Asker, error_meta, stdio_session, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the app keeps its approvals database and marker files."""
    return tmp_path_factory.mktemp("mcp-stdio")


@pytest.fixture(scope="module")
def asker() -> Asker:
    """The client's elicitation answers, set by each test."""
    return Asker()


@pytest.fixture(scope="module")
async def session(app_dir: Path, asker: Asker) -> AsyncIterator[ClientSession]:
    """One SDK client session with the app over stdio, shared by the module."""
    async with stdio_session(app_dir, elicitation=asker) as session:
        yield session


def notes(app_dir: Path) -> list[str]:
    path = app_dir / "notes.txt"
    return path.read_text().splitlines() if path.exists() else []


async def test_lists_tools_sorted_with_hints_and_output_schemas(session: ClientSession) -> None:
    """tools/list gives every tool in name order, hints mapped, output schemas as objects."""
    listed = (await session.list_tools()).tools
    names = [t.name for t in listed]
    assert names == sorted(names)
    assert "weather.get" in names
    by_name = {t.name: t for t in listed}
    assert by_name["add"].annotations is not None
    assert by_name["add"].annotations.read_only_hint is True
    assert by_name["wipe"].annotations is not None
    assert by_name["wipe"].annotations.destructive_hint is True
    assert by_name["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    weather = by_name["weather.get"].output_schema
    assert weather is not None
    assert weather["type"] == "object"
    assert set(weather["properties"]) == {"city", "celsius"}
    assert by_name["add"].input_schema["properties"]["a"]["description"] == "The first number."
    assert by_name["weather.get"].meta == {"invokit/tags": ["demo"], "invokit/category": "info"}


async def test_call_returns_text_and_structured_content(session: ClientSession) -> None:
    """A call returns the value as text and as structuredContent matching the output schema."""
    added = await session.call_tool("add", {"a": 2, "b": 40})
    weather = await session.call_tool("weather.get", {"city": "Madrid"})
    assert added.is_error is False
    assert text_of(added) == "42"
    assert added.structured_content == {"result": 42}
    assert weather.structured_content == {"city": "Madrid", "celsius": 21.5}


async def test_progress_notifications_reach_the_client(session: ClientSession) -> None:
    """Progress from a streaming tool and from ctx.report_progress arrives as MCP progress."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    streamed = await session.call_tool("countdown", {"n": 3}, progress_callback=on_progress)
    streamed_seen = list(seen)
    seen.clear()
    worked = await session.call_tool("work", {"steps": 2}, progress_callback=on_progress)
    assert text_of(streamed) == "lift-off"
    assert streamed_seen[:3] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert [p for p, _, _ in streamed_seen] == sorted(p for p, _, _ in streamed_seen)
    assert text_of(worked) == "did 2 steps"
    assert seen == [(1, 2, "working 1"), (2, 2, "working 2")]


async def test_cancellation_cancels_the_running_call(session: ClientSession, app_dir: Path) -> None:
    """A client that gives up on a call sends a cancellation; the tool body is cancelled."""
    marker = app_dir / "sleepy"
    with anyio.move_on_after(1.5) as scope:
        await session.call_tool("sleepy", {"seconds": 30})
    assert scope.cancelled_caught
    with anyio.fail_after(10):
        # The tool runs in another process: poll the file it writes.
        while marker.read_text() != "cancelled":  # noqa: ASYNC110
            await anyio.sleep(0.05)
    again = await session.call_tool("add", {"a": 1, "b": 1})
    assert text_of(again) == "2"


async def test_denied_call_is_an_error_result(session: ClientSession) -> None:
    """A call the policy denies is an isError result of kind denied; the body never runs."""
    result = await session.call_tool("wipe", {})
    assert result.is_error is True
    assert error_meta(result)["kind"] == "denied"
    assert result.structured_content is None


async def test_unknown_tool_is_an_error_result_naming_the_tools(session: ClientSession) -> None:
    """Calling a tool that does not exist returns an error result listing the real ones."""
    result = await session.call_tool("ad", {"a": 1})
    assert result.is_error is True
    assert error_meta(result)["kind"] == "not_found"
    assert "'add'" in text_of(result)


async def test_malformed_arguments_are_an_error_result_per_field(session: ClientSession) -> None:
    """Arguments that break the input schema return an error result naming each bad field."""
    result = await session.call_tool("add", {"a": "two"})
    assert result.is_error is True
    info = error_meta(result)
    assert info["kind"] == "invalid_arguments"
    paths = {issue["path"] for issue in info["data"]["issues"]}
    assert "/a" in paths


async def test_tool_failure_is_an_error_without_structured_content(session: ClientSession) -> None:
    """A tool that raises ToolFailed yields isError with its message; no structuredContent."""
    result = await session.call_tool("broken", {})
    assert result.is_error is True
    assert text_of(result) == "the disk is on fire"
    assert result.structured_content is None
    assert error_meta(result) == {"kind": "execution_failed", "data": {"disk": 1}}


async def test_approval_through_elicitation_runs_the_call(
    session: ClientSession, asker: Asker, app_dir: Path
) -> None:
    """A client with elicitation is asked (tool, arguments, reason shown); approving runs it."""
    asker.answer("accept", {"approve": True})
    result = await session.call_tool("note", {"text": "buy milk"})
    assert result.is_error is False
    assert text_of(result) == "noted: buy milk"
    assert "buy milk" in notes(app_dir)
    (question,) = asker.questions
    assert "'note'" in question
    assert '"text": "buy milk"' in question
    assert "not marked read-only" in question


async def test_declined_elicitation_denies_and_nothing_runs(
    session: ClientSession, asker: Asker, app_dir: Path
) -> None:
    """Declining in the client denies the call: an approval_denied error, the body never runs."""
    asker.answer("decline")
    result = await session.call_tool("note", {"text": "declined"})
    assert result.is_error is True
    assert error_meta(result)["kind"] == "approval_denied"
    assert "declined" not in notes(app_dir)


async def test_approve_false_in_the_form_is_a_denial(
    session: ClientSession, asker: Asker, app_dir: Path
) -> None:
    """Submitting the form with approve unticked denies, with the person's reason."""
    asker.answer("accept", {"approve": False, "reason": "not today"})
    result = await session.call_tool("note", {"text": "unticked"})
    assert error_meta(result)["kind"] == "approval_denied"
    assert "not today" in text_of(result)
    assert "unticked" not in notes(app_dir)


async def test_dismissed_elicitation_leaves_the_approval_pending(
    session: ClientSession, asker: Asker, app_dir: Path
) -> None:
    """Dismissing the prompt never approves: the answer names the pending approval id."""
    asker.answer("cancel")
    result = await session.call_tool("note", {"text": "dismissed"})
    assert result.is_error is True
    info = error_meta(result)
    assert info["kind"] == "approval_required"
    assert info["data"]["approval_id"] in text_of(result)
    assert "dismissed" not in notes(app_dir)


async def test_elicitation_message_has_no_raw_escape_sequences(
    session: ClientSession, asker: Asker
) -> None:
    """Terminal escapes and control characters in arguments never reach the question raw."""
    asker.answer("cancel")
    await session.call_tool("note", {"text": "ok\x1b[2J\x1b]0;pwned\x07\r\u202eevil\x9b31m"})
    (question,) = asker.questions
    assert not any(ch in question for ch in "\x1b\x07\r\u202e\x9b")
    # JSON shows them inert, so the person sees that something odd was in the arguments.
    assert "\\u001b[2J" in question
