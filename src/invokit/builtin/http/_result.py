"""The value ``http.fetch`` returns: what came back, after redirects, as text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FetchResult"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchResult:
    """What a fetch returns to the model."""

    status: int
    """The final response's HTTP status."""
    url: str
    """The final URL, after redirects."""
    content_type: str
    """The final response's ``Content-Type`` (empty when absent)."""
    text: str
    """The body: readable text for HTML, the text itself, or base64 when ``encoding`` says so."""
    truncated: bool
    """The body was cut at the byte limit (or its text, rendered from HTML, at as many
    characters)."""
    redirects: list[str] = field(default_factory=list)
    """Every URL redirected from, in order."""
    title: str | None = None
    """The page title for HTML rendered as text."""
    encoding: Literal["text", "base64"] = "text"
    """How ``text`` holds the body."""
