"""Brave Search: the web search API with a subscription key (a free plan exists)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from invokit.builtin.web_search._results import SearchResult, first_unique
from invokit.exceptions import ToolFailed

__all__ = ["BRAVE_ENDPOINT", "BraveSearch"]

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
_MAX_COUNT = 20  # the API's limit per request
_KEY_REJECTED = "the API key was rejected; check BRAVE_SEARCH_API_KEY or api_key"


@dataclass(frozen=True, kw_only=True, slots=True)
class BraveSearch:
    """Searches with Brave's web search API (``X-Subscription-Token`` header)."""

    api_key: str | None = field(default=None, repr=False)
    """The subscription key; when ``None`` it is read from ``key_env`` at each search."""
    key_env: str = "BRAVE_SEARCH_API_KEY"
    """The environment variable holding the key when ``api_key`` is not given."""
    endpoint: str = BRAVE_ENDPOINT
    """The API URL (another one only for a gateway or a test server)."""
    country: str | None = None
    """Two-letter country code to bias results to (``us``, ``de``)."""
    search_lang: str | None = None
    """Language of the results (``en``)."""
    safesearch: Literal["off", "moderate", "strict"] | None = None
    """Adult content filter; ``None`` for the API default (moderate)."""
    timeout: float = 10.0
    """Seconds to wait for the API."""

    @property
    def name(self) -> str:
        return "brave"

    async def search(self, query: str, *, max_results: int) -> Sequence[SearchResult]:
        """Search the web; at most 20 results per call (the API's limit)."""
        from invokit.builtin.web_search._json_api import fetch_json, make_result  # needs httpx

        key = self.api_key or os.environ.get(self.key_env)
        if not key:
            raise ToolFailed(
                f"search provider brave has no API key: pass BraveSearch(api_key=...) or set "
                f"{self.key_env}",
                data={"provider": self.name, "url": self.endpoint, "reason": "missing_key"},
            )
        params = {"q": query, "count": str(min(max_results, _MAX_COUNT))}
        if self.country:
            params["country"] = self.country
        if self.search_lang:
            params["search_lang"] = self.search_lang
        if self.safesearch:
            params["safesearch"] = self.safesearch
        data = await fetch_json(
            self.name,
            "GET",
            self.endpoint,
            params=params,
            headers={"Accept": "application/json", "X-Subscription-Token": key},
            time_limit=self.timeout,
            hints={401: _KEY_REJECTED, 403: _KEY_REJECTED, 429: "rate limit reached"},
        )
        items = _web_results(data, self.endpoint)
        found = (make_result(i.get("title"), i.get("url"), i.get("description")) for i in items)
        return first_unique((result for result in found if result is not None), max_results)


def _web_results(data: Any, url: str) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        raise ToolFailed(
            "search provider brave answered JSON that is not an object",
            data={"provider": "brave", "url": url, "reason": "bad_response"},
        )
    web = data.get("web")
    # A query with no web hits has no "web" section at all: that is zero results.
    results = web.get("results", []) if isinstance(web, dict) else []
    if not isinstance(results, list):
        raise ToolFailed(
            "search provider brave answered with a malformed 'web.results'",
            data={"provider": "brave", "url": url, "reason": "bad_response"},
        )
    return [item for item in results if isinstance(item, dict)]
