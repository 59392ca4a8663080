"""The ``web.search`` tool over a provider, against a local SearXNG-format server."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from invokit import Completed, Executor, Tool, ToolCall, ToolContext
from invokit.builtin.web_search import (
    BraveSearch,
    SearchResult,
    SearchResults,
    SearxngSearch,
    web_search,
)
from invokit.builtin.web_search._tool import MAX_QUERY_CHARS
from invokit.exceptions import (
    InvalidArguments,
    InvalidToolDefinition,
    MissingExtra,
    RetryWithFeedback,
    ToolFailed,
)
from invokit.permissions import NetworkAccess, Policy
from tests.builtin.http.server import RecordingServer, Reply
from tests.builtin.web_search.conftest import payload

pytestmark = pytest.mark.anyio


def search_tool(backend: RecordingServer, max_results: int = 5) -> Tool:
    backend.route(
        "/search", Reply(body=payload("searxng.json"), headers={"Content-Type": "application/json"})
    )
    toolset = web_search(SearxngSearch(base_url=backend.url("")), max_results=max_results)
    tool = toolset.get("web.search")
    assert tool is not None
    return tool


async def test_search_returns_title_url_snippet(backend: RecordingServer) -> None:
    """A call returns the query, the provider and the default number of results."""
    tool = search_tool(backend, max_results=2)
    result = await tool.invoke(tool.validate('{"query": " python asyncio "}'), ToolContext())
    assert isinstance(result, SearchResults)
    assert (result.query, result.provider) == ("python asyncio", "searxng")
    assert [r.url for r in result.results] == [
        "https://docs.python.org/3/library/asyncio.html",
        "https://realpython.com/async-io-python/",
    ]
    assert backend.received[0].query["q"] == ["python asyncio"]


async def test_max_results_is_honoured_and_bounded(backend: RecordingServer) -> None:
    """The model may ask for 1 to 20 results; outside that the arguments are invalid."""
    tool = search_tool(backend)
    result = await tool.invoke(tool.validate({"query": "q", "max_results": 1}), ToolContext())
    assert len(result.results) == 1
    for bad in (0, 21):
        with pytest.raises(InvalidArguments):
            tool.validate({"query": "q", "max_results": bad})


async def test_blank_query_asks_for_a_retry(backend: RecordingServer) -> None:
    """A query of only spaces is sent back to the model and never searched."""
    tool = search_tool(backend)
    with pytest.raises(RetryWithFeedback):
        await tool.invoke(tool.validate({"query": "   "}), ToolContext())
    assert backend.received == []


async def test_an_over_long_query_is_invalid_and_never_searched(backend: RecordingServer) -> None:
    """A query over MAX_QUERY_CHARS (the schema's maxLength) is refused as invalid arguments
    (was execution_failed: httpx's InvalidURL); at the bound it is searched."""
    tool = search_tool(backend)
    executor = Executor([tool], policy=Policy.allow_all())
    long = "(" * 300_000
    outcome = await executor.execute(ToolCall(id="1", name="web.search", arguments={"query": long}))
    assert outcome.result.error is not None and outcome.result.error.kind == "invalid_arguments"
    assert tool.spec.input_schema["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    assert outcome.result.structured is not None
    assert [i["path"] for i in outcome.result.structured["issues"]] == ["/query"]
    assert backend.received == []
    fits = await executor.execute(
        ToolCall(id="2", name="web.search", arguments={"query": "a" * MAX_QUERY_CHARS})
    )
    assert fits.result.error is None, fits.result.text


async def test_a_request_httpx_cannot_make_is_a_tool_error() -> None:
    """A URL httpx refuses to build (over-long, from a provider's own settings) is a
    ToolFailed with reason bad_request, not a crash of the tool."""
    provider = SearxngSearch(base_url="http://127.0.0.2:9/" + "a" * 70_000)
    tool = web_search(provider).get("web.search")
    assert tool is not None
    with pytest.raises(ToolFailed) as caught:
        await tool.invoke({"query": "q"}, ToolContext())
    assert caught.value.data["reason"] == "bad_request"


async def test_provider_errors_surface_as_tool_errors(backend: RecordingServer) -> None:
    """An HTTP 500 from the backend reaches the caller as a ToolFailed with its reason."""
    backend.route("/search", Reply(status=500, body=b"boom"))
    tool = web_search(SearxngSearch(base_url=backend.url(""))).get("web.search")
    assert tool is not None
    with pytest.raises(ToolFailed) as caught:
        await tool.invoke({"query": "q"}, ToolContext())
    assert caught.value.data["status"] == 500


@dataclass(frozen=True, kw_only=True, slots=True)
class Repeating:
    """A third-party provider that ignores max_results and repeats itself."""

    name: str = "repeating"
    endpoint: str = "https://search.invalid/api"

    async def search(self, query: str, *, max_results: int) -> Sequence[SearchResult]:
        hit = SearchResult(title="t", url="https://a.example/")
        return [hit, hit, SearchResult(title="u", url="https://b.example/")] * 5


async def test_any_provider_is_deduplicated_and_cut() -> None:
    """The tool removes duplicate URLs and keeps the count even if a provider does not."""
    tool = web_search(Repeating(), max_results=5).get("web.search")
    assert tool is not None
    result = await tool.invoke({"query": "q"}, ToolContext())
    assert [r.url for r in result.results] == ["https://a.example/", "https://b.example/"]


def test_spec_and_permissions() -> None:
    """The tool is read-only, open-world, and declares access to the provider's endpoint."""
    tool = web_search(BraveSearch(api_key="k")).get("web.search")
    assert tool is not None
    hints = tool.spec.annotations
    assert (hints.read_only, hints.open_world, hints.idempotent) == (True, True, True)
    assert tool.spec.metadata["provider"] == "brave"
    assert list(tool.permissions({"query": "q"}, ToolContext())) == [
        NetworkAccess(url="https://api.search.brave.com/res/v1/web/search", method="GET")
    ]
    assert set(tool.spec.input_schema["properties"]) == {"query", "max_results"}


@pytest.mark.parametrize(
    ("provider", "max_results"),
    [
        pytest.param(object(), 5, id="not-a-provider"),
        pytest.param(Repeating(), 0, id="zero-results"),
        pytest.param(Repeating(), 21, id="too-many"),
    ],
)
def test_bad_definitions_fail_early(provider: object, max_results: int) -> None:
    """A non-provider or an out-of-range default fails when the toolset is built."""
    with pytest.raises(InvalidToolDefinition):
        web_search(provider, max_results=max_results)  # type: ignore[arg-type]


def test_missing_httpx_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without httpx, building the toolset names the extra to install."""
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingExtra) as caught:
        web_search(Repeating())
    assert caught.value.extra == "http"


def test_all_is_sorted_and_importable() -> None:
    """The package's ``__all__`` is sorted and every name exists."""
    package = importlib.import_module("invokit.builtin.web_search")

    assert list(package.__all__) == sorted(package.__all__)
    assert all(hasattr(package, name) for name in package.__all__)


async def test_search_runs_through_the_executor(backend: RecordingServer) -> None:
    """Through the Executor a search completes with the results as structured output."""
    tool = search_tool(backend, max_results=1)
    executor = Executor([tool], policy=Policy.allow_all())
    outcome = await executor.execute(
        ToolCall(id="c1", name="web.search", arguments='{"query": "asyncio"}')
    )
    assert isinstance(outcome, Completed)
    assert not outcome.result.is_error
    assert outcome.result.structured["results"][0]["url"] == (
        "https://docs.python.org/3/library/asyncio.html"
    )
