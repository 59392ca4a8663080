"""What every MCP client expects, with the SDK's own client over stdio and streamable HTTP, in
both protocol generations: ``tools/list`` in pages, ``tool_result_read`` listed when outputs
spill, output limits on ``structuredContent``, and approvals asked mid-call (elicitation) or
through ``input_required`` results (the stateless protocol)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from invokit import (
    Executor,
    OutputLimit,
    Policy,
    TextPart,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolResult,
    tool,
)
from invokit.approvals import ApprovalDecision, ApprovalRequest
from invokit.execution import Limits
from invokit.mcp import build_server
from invokit.mcp._elicit import pending_message
from mcp import Client
from tests.mcp.support import app_params, error_meta, http_app, text_of

pytestmark = pytest.mark.anyio

APP_ENV = {"PAGE_SIZE": "3", "SPILL_CHARS": "400"}
APP_TOOLS = sorted(
    [
        "add",
        "broken",
        "bulky",
        "countdown",
        "note",
        "sleepy",
        "tool_result_read",
        "weather.get",
        "wipe",
        "work",
    ]
)
MODES = [pytest.param("legacy", id="elicitation"), pytest.param("2026-07-28", id="stateless")]


class Person:
    """The elicitation callback: answers as told, and counts the questions."""

    def __init__(self) -> None:
        self.action = "accept"
        self.content: dict[str, Any] | None = {"approve": True}
        self.asked = 0

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked += 1
        action: Any = self.action
        return types.ElicitResult(action=action, content=self.content)


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-protocol")


@pytest.fixture(scope="module")
def http_url(app_dir: Path) -> Iterator[str]:
    """The app over streamable HTTP, shared by the module's HTTP tests."""
    with http_app(app_dir, **APP_ENV) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def client(
    transport: str, app_dir: Path, http_url: str, mode: str, person: Person | None
) -> AsyncIterator[Client]:
    server: Any = app_params(app_dir, **APP_ENV) if transport == "stdio" else http_url
    async with Client(server, mode=mode, elicitation_callback=person, cache=None) as session:
        yield session


def notes(app_dir: Path) -> list[str]:
    path = app_dir / "notes.txt"
    return path.read_text().splitlines() if path.exists() else []


async def walk(session: Client) -> tuple[list[str], int]:
    """Every tool name over all pages, and how many pages there were."""
    names: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await session.list_tools(cursor=cursor)
        pages += 1
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return names, pages


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_walking_every_page_gets_every_tool_once_in_order(
    transport: str, app_dir: Path, http_url: str, mode: str
) -> None:
    """With a page size of 3, tools/list answers in pages linked by nextCursor; walking
    them gives every tool once, in name order, tool_result_read included (outputs spill)."""
    async with client(transport, app_dir, http_url, mode, None) as session:
        names, pages = await walk(session)
    assert names == APP_TOOLS
    assert pages == 4


@pytest.mark.parametrize("mode", MODES)
async def test_a_spilled_output_names_a_listed_tool_that_reads_the_rest(
    transport: str, app_dir: Path, http_url: str, mode: str
) -> None:
    """A structured value over the limit is spilled like text, never sent whole; the note
    names tool_result_read, which the client lists and can call for the rest, a page within
    the limit at a time."""
    async with client(transport, app_dir, http_url, mode, None) as session:
        result = await session.call_tool("bulky", {"rows": 200})
        text = text_of(result)
        assert result.is_error is False
        assert result.structured_content is None
        assert "row 00199" not in text
        assert "tool_result_read(handle=" in text
        handle = text.split("handle='", 1)[1].split("'", 1)[0]
        pages: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await session.call_tool(
                "tool_result_read", {"handle": handle, "offset": offset, "length": 100_000}
            )
            assert page.is_error is False
            answer = json.loads(text_of(page))
            pages.append(answer["text"])
            offset = answer["next_offset"]
    assert "row 00199" in "".join(pages)


@pytest.mark.parametrize("mode", MODES)
async def test_a_person_approving_in_the_client_runs_the_call_once(
    transport: str, app_dir: Path, http_url: str, mode: str
) -> None:
    """The client asks the person (mid-call, or from an input_required result and a retry);
    "approve" runs the call once."""
    person = Person()
    text = f"approved-{transport}-{mode}"
    async with client(transport, app_dir, http_url, mode, person) as session:
        version = session.protocol_version
        result = await session.call_tool("note", {"text": text})
    assert (version == "2026-07-28") == (mode == "2026-07-28")
    assert result.is_error is False, text_of(result)
    assert text_of(result) == f"noted: {text}"
    assert person.asked == 1
    assert notes(app_dir).count(text) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_a_person_declining_in_the_client_denies_the_call(
    transport: str, app_dir: Path, http_url: str, mode: str
) -> None:
    """Declining is a denial the model reads, with the person's reason; nothing runs."""
    person = Person()
    person.action, person.content = "decline", {"approve": False, "reason": "not today"}
    text = f"declined-{transport}-{mode}"
    async with client(transport, app_dir, http_url, mode, person) as session:
        result = await session.call_tool("note", {"text": text})
    assert result.is_error is True
    assert "not today" in text_of(result)
    assert person.asked == 1
    assert text not in notes(app_dir)


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_ask_gets_the_approval_required_result(
    transport: str, app_dir: Path, http_url: str, mode: str
) -> None:
    """A client without elicitation gets approval_required with the approval id, and a
    message saying how to approve it; nothing runs."""
    text = f"unasked-{transport}-{mode}"
    async with client(transport, app_dir, http_url, mode, None) as session:
        result = await session.call_tool("note", {"text": text})
    info = error_meta(result)
    assert result.is_error is True
    assert info["kind"] == "approval_required"
    assert info["data"]["approval_id"] in text_of(result)
    assert "invokit approvals approve" not in text_of(result)  # the app's store is elsewhere
    assert text not in notes(app_dir)


# -- in this process ----------------------------------------------------------------------


def _tools(count: int) -> list[Any]:
    made = []
    for i in range(count):

        def body() -> str:
            return "ok"

        made.append(tool(name=f"t{i:02d}", read_only=True, description="A tool.")(body))
    return made


async def test_pages_stay_whole_when_the_list_changes_between_them() -> None:
    """A tool added while a client walks the pages does not make it see another tool twice:
    a cursor names the last tool it saw, not a position."""
    registry = ToolRegistry(_tools(7))
    server = build_server(registry, Executor(registry), page_size=3)
    async with Client(server, mode="legacy", cache=None) as session:
        first = await session.list_tools()
        registry.add(tool(name="a_first", read_only=True)(lambda: "x"))
        rest: list[str] = []
        cursor = first.next_cursor
        while cursor is not None:
            page = await session.list_tools(cursor=cursor)
            rest += [t.name for t in page.tools]
            cursor = page.next_cursor
    seen = [t.name for t in first.tools] + rest
    assert seen == [f"t{i:02d}" for i in range(7)]


async def test_an_unknown_cursor_is_a_protocol_error() -> None:
    """A cursor the server did not send is refused with invalid params, not ignored."""
    registry = ToolRegistry(_tools(2))
    server = build_server(registry, Executor(registry), page_size=1)
    async with Client(server, mode="legacy", cache=None) as session:
        with pytest.raises(MCPError) as caught:
            await session.list_tools(cursor="bm90IG1pbmU=")
    assert caught.value.code == types.INVALID_PARAMS


def test_a_page_size_below_one_is_refused() -> None:
    """page_size must be at least 1."""
    registry = ToolRegistry(_tools(1))
    with pytest.raises(ValueError, match="page_size"):
        build_server(registry, Executor(registry), page_size=0)


@tool(read_only=True)
def report(rows: int) -> Report:
    """A report whose structured value grows with ``rows``."""
    return Report(rows=[f"row {i:05d}" for i in range(rows)])


@dataclass(frozen=True, kw_only=True, slots=True)
class Report:
    rows: list[str]


@tool(read_only=True)
def summary(rows: int) -> Any:
    """A one-line text with a structured value that grows with ``rows``."""
    return ToolResult(
        call_id="",
        name="summary",
        content=(TextPart(text=f"{rows} rows"),),
        structured={"rows": [f"row {i:05d}" for i in range(rows)]},
    )


@pytest.mark.parametrize("mode", ["head_tail", "clip", "spill"])
async def test_a_structured_value_over_the_limit_is_never_sent_whole(mode: Any) -> None:
    """Under every mode, a structured value larger than the output limit is cut like text:
    no structuredContent, a text within the limit, and (spilling) the rest readable."""
    registry = ToolRegistry([summary])
    limits = Limits(output=OutputLimit(max_chars=300, mode=mode))
    executor = Executor(registry, limits=limits)
    async with Client(build_server(registry, executor), mode="legacy", cache=None) as session:
        small = await session.call_tool("summary", {"rows": 2})
        big = await session.call_tool("summary", {"rows": 500})
    assert small.structured_content == {"rows": ["row 00000", "row 00001"]}
    assert big.structured_content is None
    assert len(text_of(big)) <= 300
    assert "row 00499" not in text_of(big) or mode == "head_tail"
    if mode == "spill":
        assert "tool_result_read(handle=" in text_of(big)


async def test_a_declared_output_over_the_limit_is_an_error_naming_where_the_rest_went() -> None:
    """A tool with an output schema whose result was spilled cannot meet its schema: the
    error says so, and carries the cut text with the tool_result_read call."""
    registry = ToolRegistry([report])
    limits = Limits(output=OutputLimit(max_chars=300, mode="spill"))
    server = build_server(registry, Executor(registry, limits=limits))
    async with Client(server, mode="legacy", cache=None) as session:
        listed = [t.name for t in (await session.list_tools()).tools]
        result = await session.call_tool("report", {"rows": 500})
    assert listed == ["report", "tool_result_read"]
    assert result.is_error is True
    assert error_meta(result)["kind"] == "output_too_large"
    assert "tool_result_read(handle=" in text_of(result)


async def test_tool_result_read_is_not_listed_when_nothing_spills() -> None:
    """Without spilling there is nothing to read back, and no reader is listed."""
    registry = ToolRegistry([summary])
    server = build_server(registry, Executor(registry))
    async with Client(server, mode="legacy", cache=None) as session:
        listed = [t.name for t in (await session.list_tools()).tools]
    assert listed == ["summary"]


@tool(read_only=True)
async def shrinking(ctx: ToolContext) -> str:
    """Reports 5 with no total, then 6 of a total of 3, then 8 of 10."""
    await ctx.report_progress(5)
    await ctx.report_progress(6, 3)
    await ctx.report_progress(8, 10)
    return "done"


async def test_progress_never_passes_its_total_even_when_the_tool_shrinks_it() -> None:
    """A total below what was already sent is raised to it rather than sent smaller; every
    notification grows and none exceeds its total, heartbeats included."""
    registry = ToolRegistry([shrinking])
    seen: list[tuple[float, float | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    server = build_server(registry, Executor(registry))
    async with Client(server, mode="legacy", cache=None) as session:
        result = await session.call_tool("shrinking", {}, progress_callback=progress)
    assert text_of(result) == "done"
    assert seen == [(5, None), (8, 10)]
    assert all(total is None or value <= total for value, total in seen)
    values = [value for value, _ in seen]
    assert values == sorted(set(values))


@pytest.mark.parametrize("mode", MODES)
async def test_a_stale_approval_state_is_not_an_approval(mode: str) -> None:
    """A retry carrying state for an approval decided meanwhile (here: denied elsewhere)
    does not run the call; the stateless client is told the approval is no longer usable."""
    registry = ToolRegistry([write_note])
    executor = Executor(registry, policy=Policy(ask=["write_note"]))
    person = Person()

    async def deny_first(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        for request in await executor.approvals.list_pending():
            await executor.approvals.resolve(
                request.id, ApprovalDecision.deny("someone else said no", by="test")
            )
        return await person(context, params)

    server = build_server(registry, executor)
    async with Client(server, mode=mode, elicitation_callback=deny_first, cache=None) as session:
        result = await session.call_tool("write_note", {"text": "x"})
    assert result.is_error is True
    assert WRITTEN == []


WRITTEN: list[str] = []


@tool(read_only=False)
def write_note(text: str) -> str:
    """Remember a note (asks)."""
    WRITTEN.append(text)
    return "ok"


def test_the_stateless_pending_message_does_not_speak_of_sessions() -> None:
    """Without a session to bind to, the message asks for a plain retry."""
    call = ToolCall(id="c1", name="write_note", arguments={"text": "x"})
    request = ApprovalRequest.create(call=call, spec=write_note.spec, arguments={"text": "x"})
    assert "session" in pending_message(request, "cli")
    assert "session" not in pending_message(request, "cli", stateless=True)


@pytest.mark.anyio
async def test_the_pending_message_for_a_shared_state_names_it(postgres_url: str) -> None:
    """With a PostgreSQL store the message gives the `invokit approvals approve ID --state`
    that opens it (password masked), and a client that names itself is told a retry from
    the same client works (not "the same connection")."""
    from invokit.mcp._elicit import approval_reach, state_argument
    from invokit.postgres import PostgresApprovalStore

    store = PostgresApprovalStore(postgres_url.replace("postgresql://", "postgresql://u:pw@"))
    try:
        call = ToolCall(id="c1", name="write_note", arguments={"text": "x"}, session_id="cid_ab")
        request = ApprovalRequest.create(call=call, spec=write_note.spec, arguments={"text": "x"})
        text = pending_message(request, approval_reach(store), state=state_argument(store))
    finally:
        await store.close()
    assert f"invokit approvals approve {request.id} --state " in text
    assert ":pw@" not in text
    assert "as this same client" in text
    assert "connection" not in text
