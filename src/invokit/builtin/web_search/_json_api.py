"""One GET or POST to a search API that answers JSON, with every failure a clear tool error."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Mapping
from typing import Any

import httpx

from invokit.builtin.http import html_to_text
from invokit.builtin.web_search._results import SearchResult
from invokit.exceptions import ToolFailed

__all__ = ["fetch_json", "make_result"]

_BODY_SHOWN = 200


async def fetch_json(
    provider: str,
    method: str,
    url: str,
    *,
    params: Mapping[str, str] | None = None,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
    time_limit: float,
    hints: Mapping[int, str] | None = None,
) -> Any:
    """Call the API and return its decoded JSON body.

    Args:
        provider: the provider's name, for messages.
        hints: extra advice by HTTP status (``403`` on SearXNG: enable the JSON format).

    Raises:
        ToolFailed: network failure, timeout, a non-2xx status or a body that is not JSON;
            ``data["reason"]`` is ``network``, ``timeout``, ``http_status``, ``bad_response``
            or ``bad_request`` (a request httpx cannot make, such as an over-long URL).
    """
    try:
        async with httpx.AsyncClient(timeout=time_limit, verify=_ssl_context()) as client:
            response = await client.request(
                method, url, params=params, json=json_body, headers=headers
            )
    except httpx.TimeoutException:
        raise _failed(provider, url, "timeout", f"did not answer within {time_limit:g} s") from None
    except httpx.HTTPError as exc:
        raise _failed(provider, url, "network", f"cannot be reached ({exc})") from None
    except httpx.InvalidURL as exc:  # not an HTTPError: the request could not even be made
        raise _failed(provider, url, "bad_request", f"cannot be asked this ({exc})") from None
    if not response.is_success:
        hint = (hints or {}).get(response.status_code, "")
        raise _failed(
            provider,
            url,
            "http_status",
            f"answered HTTP {response.status_code}"
            f"{': ' + hint if hint else ''} {_excerpt(response.text)}".rstrip(),
            status=response.status_code,
        )
    try:
        return json.loads(response.content)
    except ValueError:
        raise _failed(
            provider, url, "bad_response", f"answered with invalid JSON {_excerpt(response.text)}"
        ) from None


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # A client builds its own context by default, loading the CA bundle: tens of milliseconds
    # of CPU on the event loop per search. Once per process; a context holds no per-call state.
    return httpx.create_ssl_context()


def make_result(title: Any, url: Any, snippet: Any) -> SearchResult | None:
    """A result from an engine's fields, or ``None`` when it has no usable URL.

    Titles and snippets often carry markup (``<strong>`` around matches) and entities; they
    are reduced to plain text.
    """
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    return SearchResult(
        title=_plain(title) or url,
        url=url,
        snippet=_plain(snippet),
    )


def _plain(value: Any) -> str:
    if not isinstance(value, str) or not value:
        return ""
    return " ".join(html_to_text(value).text.split())


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    return f"({text[:_BODY_SHOWN]}{'…' if len(text) > _BODY_SHOWN else ''})"


def _failed(
    provider: str, url: str, reason: str, message: str, *, status: int | None = None
) -> ToolFailed:
    data: dict[str, Any] = {"provider": provider, "url": url, "reason": reason}
    if status is not None:
        data["status"] = status
    return ToolFailed(f"search provider {provider} {message}", data=data)
