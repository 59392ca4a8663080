"""The HTTP fetch tool: http(s) only, an SSRF guard on every hop, bodies as readable text.

``http(allow_hosts=..., methods=...)`` returns a toolset with one tool, ``http.fetch``. See
``docs/builtin-http.md``. httpx is imported only when the toolset is built (the ``http`` extra).
"""

from invokit.builtin.http._addresses import AddressClass, InvalidHost, classify, parse_host
from invokit.builtin.http._guard import CheckedTarget, Resolver, UrlGuard, system_resolver
from invokit.builtin.http._html import HtmlText, html_to_text
from invokit.builtin.http._result import FetchResult
from invokit.builtin.http._tool import http

__all__ = [
    "AddressClass",
    "CheckedTarget",
    "FetchResult",
    "HtmlText",
    "InvalidHost",
    "Resolver",
    "UrlGuard",
    "classify",
    "html_to_text",
    "http",
    "parse_host",
    "system_resolver",
]
