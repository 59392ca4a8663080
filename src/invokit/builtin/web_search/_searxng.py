"""SearXNG: a self-hosted (or public) metasearch instance, through its JSON API. No key."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from invokit.builtin.web_search._results import SearchResult, first_unique
from invokit.exceptions import ToolFailed

__all__ = ["SearxngSearch"]

_JSON_DISABLED = (
    "the instance does not serve JSON; add 'json' to search.formats in its settings.yml"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class SearxngSearch:
    """Searches a SearXNG instance: ``GET {base_url}/search?q=...&format=json``."""

    base_url: str
    """The instance's root URL, such as ``http://localhost:8888``."""
    categories: tuple[str, ...] = ()
    """SearXNG categories to search (``general``, ``news``, ``science``); empty for its default."""
    engines: tuple[str, ...] = ()
    """Engines to ask (``duckduckgo``, ``wikipedia``); empty for the instance's default."""
    language: str | None = None
    """A language code (``en``, ``de-CH``) or ``None`` for the instance's default."""
    safesearch: Literal[0, 1, 2] | None = None
    """0 off, 1 moderate, 2 strict; ``None`` for the instance's default."""
    timeout: float = 10.0
    """Seconds to wait for the instance."""

    @property
    def name(self) -> str:
        return "searxng"

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/search"

    async def search(self, query: str, *, max_results: int) -> Sequence[SearchResult]:
        """Search the instance; SearXNG has no result count, so its first page is cut."""
        from invokit.builtin.web_search._json_api import fetch_json, make_result  # needs httpx

        params = {"q": query, "format": "json", "pageno": "1"}
        if self.categories:
            params["categories"] = ",".join(self.categories)
        if self.engines:
            params["engines"] = ",".join(self.engines)
        if self.language:
            params["language"] = self.language
        if self.safesearch is not None:
            params["safesearch"] = str(self.safesearch)
        data = await fetch_json(
            self.name,
            "GET",
            self.endpoint,
            params=params,
            headers={"Accept": "application/json"},
            time_limit=self.timeout,
            hints={403: _JSON_DISABLED},
        )
        items = _results(data, self.endpoint)
        found = (make_result(i.get("title"), i.get("url"), i.get("content")) for i in items)
        return first_unique((result for result in found if result is not None), max_results)


def _results(data: Any, url: str) -> list[dict[str, Any]]:
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise ToolFailed(
            "search provider searxng answered JSON without a 'results' list",
            data={"provider": "searxng", "url": url, "reason": "bad_response"},
        )
    return [item for item in results if isinstance(item, dict)]
