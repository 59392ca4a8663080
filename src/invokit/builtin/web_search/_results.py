"""What a search returns: a list of title / url / snippet, and the search it answers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["SearchResult", "SearchResults", "first_unique"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchResult:
    """One hit."""

    title: str
    """The page title (the URL when the engine gave none)."""
    url: str
    """Where the page is."""
    snippet: str = ""
    """The engine's excerpt of the page, as plain text."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchResults:
    """The answer to one ``web.search`` call."""

    query: str
    """The query that was searched."""
    provider: str
    """Which backend answered (``searxng``, ``brave``)."""
    results: list[SearchResult] = field(default_factory=list)
    """The hits, best first, without duplicate URLs."""


def first_unique(results: Iterable[SearchResult], limit: int) -> list[SearchResult]:
    """The first ``limit`` results, skipping any whose URL was already listed."""
    seen: set[str] = set()
    kept: list[SearchResult] = []
    for result in results:
        if result.url in seen:
            continue
        seen.add(result.url)
        kept.append(result)
        if len(kept) == limit:
            break
    return kept
