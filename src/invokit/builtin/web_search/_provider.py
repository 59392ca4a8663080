"""The small interface a search backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from invokit.builtin.web_search._results import SearchResult

__all__ = ["SearchProvider"]


@runtime_checkable
class SearchProvider(Protocol):
    """A web search backend: one query in, a list of results out.

    Implementations raise :class:`~invokit.exceptions.ToolFailed` with a message the model
    can read (and ``data["reason"]``) when the backend cannot answer.
    """

    @property
    def name(self) -> str:
        """A short name for results and logs (``"searxng"``)."""
        ...

    @property
    def endpoint(self) -> str:
        """The URL the provider calls; the tool declares network access to it."""
        ...

    async def search(self, query: str, *, max_results: int) -> Sequence[SearchResult]:
        """Search for ``query`` and return at most ``max_results`` hits, best first."""
        ...
