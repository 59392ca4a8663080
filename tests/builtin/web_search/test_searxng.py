"""SearxngSearch against a local server that answers in SearXNG's JSON format."""

from __future__ import annotations

import pytest

from invokit.builtin.web_search import SearchResult, SearxngSearch
from invokit.exceptions import ToolFailed
from tests.builtin.http.server import RecordingServer, Reply
from tests.builtin.web_search.conftest import payload

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}


async def test_results_are_parsed_deduplicated_and_cut(backend: RecordingServer) -> None:
    """Hits become title/url/snippet; duplicates and non-web URLs are dropped; the list is cut."""
    backend.route("/search", Reply(body=payload("searxng.json"), headers=JSON))
    provider = SearxngSearch(base_url=backend.url("/"))
    results = await provider.search("python asyncio", max_results=10)
    assert results == [
        SearchResult(
            title="asyncio — Asynchronous I/O — Python 3.13 documentation",
            url="https://docs.python.org/3/library/asyncio.html",
            snippet="asyncio is a library to write concurrent code using the async/await syntax.",
        ),
        SearchResult(
            title="Python's asyncio: A Hands-On Walkthrough – Real Python",
            url="https://realpython.com/async-io-python/",
            snippet="Explore how Python asyncio works and when to use it. "
            "Follow hands-on examples & build efficient programs.",
        ),
        SearchResult(
            title="https://superfastpython.com/asyncio-tutorial/",
            url="https://superfastpython.com/asyncio-tutorial/",
            snippet="Python Asyncio: The Complete Guide",
        ),
    ]
    assert len(await provider.search("python asyncio", max_results=1)) == 1


async def test_the_request_uses_the_json_api(backend: RecordingServer) -> None:
    """The query goes to /search with format=json and the configured options."""
    backend.route("/search", Reply(body=payload("searxng.json"), headers=JSON))
    provider = SearxngSearch(
        base_url=backend.url(""),
        categories=("general", "science"),
        engines=("wikipedia",),
        language="en",
        safesearch=2,
    )
    await provider.search("héllo world", max_results=3)
    sent = backend.received[0]
    assert (sent.method, sent.path) == ("GET", "/search")
    assert sent.query == {
        "q": ["héllo world"],
        "format": ["json"],
        "pageno": ["1"],
        "categories": ["general,science"],
        "engines": ["wikipedia"],
        "language": ["en"],
        "safesearch": ["2"],
    }


async def test_json_format_disabled_is_explained(backend: RecordingServer) -> None:
    """SearXNG's 403 for a disabled JSON format becomes an error saying how to enable it."""
    backend.route("/search", Reply(status=403, body=b"Forbidden"))
    with pytest.raises(ToolFailed) as caught:
        await SearxngSearch(base_url=backend.url()).search("x", max_results=3)
    assert caught.value.data["reason"] == "http_status"
    assert caught.value.data["status"] == 403
    assert "search.formats" in caught.value.message


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(Reply(status=500, body=b"Internal Server Error"), "http_status", id="500"),
        pytest.param(Reply(body=b"<html>not json</html>", headers=JSON), "bad_response", id="html"),
        pytest.param(Reply(body=b'{"query": "x"}', headers=JSON), "bad_response", id="no-results"),
        pytest.param(Reply(body=b"[1, 2]", headers=JSON), "bad_response", id="not-object"),
    ],
)
async def test_backend_failures_are_clear_tool_errors(
    backend: RecordingServer, reply: Reply, reason: str
) -> None:
    """Server errors and bodies that are not SearXNG JSON fail with a reason."""
    backend.route("/search", reply)
    with pytest.raises(ToolFailed) as caught:
        await SearxngSearch(base_url=backend.url()).search("x", max_results=3)
    assert caught.value.data["reason"] == reason
    assert caught.value.data["provider"] == "searxng"


async def test_unreachable_and_slow_instances_fail(backend: RecordingServer) -> None:
    """A closed port is a network error; a slow answer is a timeout."""
    with pytest.raises(ToolFailed) as caught:
        await SearxngSearch(base_url="http://127.0.0.1:9").search("x", max_results=3)
    assert caught.value.data["reason"] == "network"
    backend.route("/search", Reply(body=b"{}", headers=JSON, delay=2.0))
    with pytest.raises(ToolFailed) as caught:
        await SearxngSearch(base_url=backend.url(), timeout=0.2).search("x", max_results=3)
    assert caught.value.data["reason"] == "timeout"


def test_endpoint_is_the_search_path() -> None:
    """The endpoint the tool declares is the instance's /search URL."""
    assert (
        SearxngSearch(base_url="http://localhost:8888/").endpoint == "http://localhost:8888/search"
    )
