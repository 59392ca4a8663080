"""Web search for agents: a small provider interface, SearXNG (no key) and Brave (keyed).

``web_search(provider)`` returns a toolset with one tool, ``web.search``. See
``docs/builtin-http.md``. httpx (the ``http`` extra) is imported when a search runs.
"""

from invokit.builtin.web_search._brave import BRAVE_ENDPOINT, BraveSearch
from invokit.builtin.web_search._provider import SearchProvider
from invokit.builtin.web_search._results import SearchResult, SearchResults
from invokit.builtin.web_search._searxng import SearxngSearch
from invokit.builtin.web_search._tool import web_search

__all__ = [
    "BRAVE_ENDPOINT",
    "BraveSearch",
    "SearchProvider",
    "SearchResult",
    "SearchResults",
    "SearxngSearch",
    "web_search",
]
