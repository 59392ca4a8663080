"""``web_search(provider)``: the toolset holding one ``web.search`` tool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field

from invokit.builtin.web_search._provider import SearchProvider
from invokit.builtin.web_search._results import SearchResults, first_unique
from invokit.exceptions import InvalidToolDefinition, MissingExtra, RetryWithFeedback
from invokit.permissions import NetworkAccess, PermissionRequest
from invokit.registry import ToolRegistry
from invokit.tools import tool

__all__ = ["web_search"]

_MAX_RESULTS_LIMIT = 20

MAX_QUERY_CHARS = 2_000
"""The longest query: search engines cut or refuse longer ones, and a URL has its limits."""

QueryArg = Annotated[
    str,
    Field(description="What to search the web for.", min_length=1, max_length=MAX_QUERY_CHARS),
]
MaxResultsArg = Annotated[
    int | None,
    Field(
        description=f"How many results to return (1-{_MAX_RESULTS_LIMIT}); "
        "leave out for the default.",
        ge=1,
        le=_MAX_RESULTS_LIMIT,
    ),
]


def web_search(
    provider: SearchProvider,
    *,
    max_results: int = 5,
    timeout: float = 30.0,
    name: str = "web.search",
) -> ToolRegistry:
    """A toolset with one tool that searches the web through ``provider``.

    Args:
        provider: the backend: :class:`SearxngSearch` (no key) or :class:`BraveSearch`.
        max_results: results returned when the model does not ask for a number.
        timeout: the executor's deadline for one search.
        name: the tool's name.

    Raises:
        InvalidToolDefinition: ``provider`` is not a search provider, or a bad limit.
        MissingExtra: httpx is not installed (``pip install "invokit[http]"``).
    """
    try:
        import httpx  # noqa: F401 - only to fail early and clearly
    except ImportError:
        raise MissingExtra(name, "http") from None
    if not isinstance(provider, SearchProvider):
        raise InvalidToolDefinition("provider must implement SearchProvider", provider, tool=name)
    if not 1 <= max_results <= _MAX_RESULTS_LIMIT:
        raise InvalidToolDefinition(
            f"max_results must be between 1 and {_MAX_RESULTS_LIMIT}", max_results, tool=name
        )
    default_count = max_results

    def permissions(args: Mapping[str, Any]) -> Iterable[PermissionRequest]:
        return [NetworkAccess(url=provider.endpoint, method="GET")]

    @tool(
        name=name,
        description=(
            "Search the web and return a list of results, each with a title, a URL and a "
            f"snippet (default {default_count} results). Fetch a result's URL to read the page."
        ),
        read_only=True,
        idempotent=True,
        open_world=True,
        tags=("web", "network"),
        category="network",
        timeout=timeout,
        permissions=permissions,
        metadata={"provider": provider.name, "endpoint": provider.endpoint},
    )
    async def search(query: QueryArg, max_results: MaxResultsArg = None) -> SearchResults:
        text = query.strip()
        if not text:
            raise RetryWithFeedback("the query is empty; say what to search for")
        count = max_results or default_count
        found = await provider.search(text, max_results=count)
        return SearchResults(query=text, provider=provider.name, results=first_unique(found, count))

    return ToolRegistry([search])
