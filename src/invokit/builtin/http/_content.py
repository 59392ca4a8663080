"""What a response body is (HTML, text, binary) and how it becomes the text a model reads."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Literal

from invokit.builtin.http._html import html_to_text

__all__ = ["Body", "ContentKind", "content_kind", "render_body"]

ContentKind = Literal["html", "text", "binary", "unknown"]

_TEXT_APPLICATION = frozenset(
    {
        "application/json", "application/xml", "application/javascript",
        "application/x-javascript", "application/ecmascript", "application/x-ndjson",
        "application/x-www-form-urlencoded", "application/yaml", "application/x-yaml",
        "application/toml", "application/graphql", "application/sql",
    }
)  # fmt: skip
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)


@dataclass(frozen=True, kw_only=True, slots=True)
class Body:
    """A response body rendered for a model."""

    text: str
    """The readable text, the raw markup, or base64 for binary content read raw."""
    encoding: Literal["text", "base64"]
    """How ``text`` holds the body."""
    title: str | None = None
    """The page title, for HTML rendered as text."""
    truncated: bool = False
    """Whether the text rendered from HTML was cut at ``max_chars``."""


def content_kind(content_type: str) -> ContentKind:
    """Classify a ``Content-Type`` value (parameters ignored)."""
    mime = content_type.split(";", 1)[0].strip().lower()
    if not mime:
        return "unknown"
    if mime in ("text/html", "application/xhtml+xml"):
        return "html"
    if mime.startswith("text/") or mime in _TEXT_APPLICATION:
        return "text"
    if mime.endswith(("+json", "+xml", "+yaml")):
        return "text"
    return "binary"


def render_body(
    data: bytes,
    *,
    kind: ContentKind,
    charset: str | None,
    raw: bool,
    url: str,
    max_chars: int | None = None,
) -> Body | None:
    """Turn ``data`` into a :class:`Body`; ``None`` when it is binary and ``raw`` is off.

    A body without a content type is text if it decodes as UTF-8 and has no NUL bytes. The
    text of HTML stops at about ``max_chars``. The work is linear in ``data`` but not free
    (a megabyte of markup takes a while): call it off the event loop.
    """
    if kind == "unknown":
        kind = "text" if _looks_like_text(data) else "binary"
    if kind == "binary":
        if not raw:
            return None
        return Body(text=base64.b64encode(data).decode("ascii"), encoding="base64")
    text = data.decode(_charset(data, charset, html=kind == "html"), errors="replace")
    if kind == "html" and not raw:
        page = html_to_text(text, base_url=url, max_chars=max_chars)
        return Body(text=page.text, encoding="text", title=page.title, truncated=page.truncated)
    return Body(text=text, encoding="text")


def _charset(data: bytes, declared: str | None, *, html: bool) -> str:
    candidates = [declared]
    if html and (found := _META_CHARSET.search(data[:4096])):
        candidates.append(found.group(1).decode("ascii"))
    for name in candidates:
        if name and _known_codec(name):
            return name
    return "utf-8"


def _known_codec(name: str) -> bool:
    try:
        b"".decode(name)
    except LookupError:
        return False
    return True


def _looks_like_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A body cut at the byte cap may end inside a character; only that is forgiven.
        return exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True
