"""BraveSearch against a local server that answers in Brave's web search format."""

from __future__ import annotations

from typing import Any

import pytest

from invokit.builtin.web_search import BRAVE_ENDPOINT, BraveSearch, SearchResult
from invokit.exceptions import ToolFailed
from tests.builtin.http.server import RecordingServer, Reply
from tests.builtin.web_search.conftest import payload

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}


def brave(backend: RecordingServer, **options: Any) -> BraveSearch:
    return BraveSearch(endpoint=backend.url("/res/v1/web/search"), **options)


async def test_results_are_parsed_with_markup_removed(backend: RecordingServer) -> None:
    """web.results become title/url/snippet with <strong> and entities turned to text."""
    backend.route("/res/v1/web/search", Reply(body=payload("brave.json"), headers=JSON))
    results = await brave(backend, api_key="k").search("python asyncio", max_results=5)
    assert results == [
        SearchResult(
            title="asyncio — Asynchronous I/O — Python 3.13.1 documentation",
            url="https://docs.python.org/3/library/asyncio.html",
            snippet="asyncio is a library to write concurrent code using the async/await syntax. "
            "asyncio is used as a foundation for multiple Python asynchronous frameworks & more.",
        ),
        SearchResult(
            title="Python's asyncio: A Hands-On Walkthrough – Real Python",
            url="https://realpython.com/async-io-python/",
            snippet="This tutorial will give you a firm grasp of Python’s approach to async IO.",
        ),
    ]


async def test_the_request_carries_key_count_and_options(backend: RecordingServer) -> None:
    """The key goes in X-Subscription-Token; count is capped at the API's 20."""
    backend.route("/res/v1/web/search", Reply(body=payload("brave.json"), headers=JSON))
    provider = brave(backend, api_key="secret", country="de", search_lang="en", safesearch="strict")
    await provider.search("q1", max_results=50)
    sent = backend.received[0]
    assert sent.headers["x-subscription-token"] == "secret"
    assert sent.headers["accept"] == "application/json"
    assert sent.query == {
        "q": ["q1"],
        "count": ["20"],
        "country": ["de"],
        "search_lang": ["en"],
        "safesearch": ["strict"],
    }


async def test_key_comes_from_the_environment(
    backend: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without api_key, the key is read from BRAVE_SEARCH_API_KEY at search time."""
    backend.route("/res/v1/web/search", Reply(body=payload("brave.json"), headers=JSON))
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", "from-env")
    await brave(backend).search("q", max_results=1)
    assert backend.received[0].headers["x-subscription-token"] == "from-env"


async def test_missing_key_fails_before_any_request(
    backend: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key anywhere is a clear error and nothing is sent."""
    monkeypatch.delenv("BRAVE_SEARCH_API_KEY", raising=False)
    with pytest.raises(ToolFailed) as caught:
        await brave(backend).search("q", max_results=1)
    assert caught.value.data["reason"] == "missing_key"
    assert "BRAVE_SEARCH_API_KEY" in caught.value.message
    assert backend.received == []


async def test_rejected_key_is_explained(backend: RecordingServer) -> None:
    """A 401 from the API says the key was rejected."""
    body = (
        b'{"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}}'
    )
    backend.route("/res/v1/web/search", Reply(status=401, body=body, headers=JSON))
    with pytest.raises(ToolFailed) as caught:
        await brave(backend, api_key="bad").search("q", max_results=1)
    assert caught.value.data["status"] == 401
    assert "rejected" in caught.value.message


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(Reply(status=500, body=b"oops"), "http_status", id="500"),
        pytest.param(Reply(body=b"{not json", headers=JSON), "bad_response", id="bad-json"),
        pytest.param(Reply(body=b'"text"', headers=JSON), "bad_response", id="not-object"),
        pytest.param(
            Reply(body=b'{"web": {"results": {}}}', headers=JSON), "bad_response", id="bad-list"
        ),
    ],
)
async def test_backend_failures_are_clear_tool_errors(
    backend: RecordingServer, reply: Reply, reason: str
) -> None:
    """Server errors and malformed bodies fail with a reason."""
    backend.route("/res/v1/web/search", reply)
    with pytest.raises(ToolFailed) as caught:
        await brave(backend, api_key="k").search("q", max_results=1)
    assert caught.value.data["reason"] == reason


async def test_no_web_section_means_no_results(backend: RecordingServer) -> None:
    """A response without a web section (nothing found) is an empty list."""
    backend.route(
        "/res/v1/web/search", Reply(body=b'{"type": "search", "query": {}}', headers=JSON)
    )
    assert await brave(backend, api_key="k").search("zzzz", max_results=3) == []


def test_the_key_never_shows_in_repr() -> None:
    """The API key is left out of the provider's repr."""
    assert "hunter2" not in repr(BraveSearch(api_key="hunter2"))
    assert BraveSearch().endpoint == BRAVE_ENDPOINT
