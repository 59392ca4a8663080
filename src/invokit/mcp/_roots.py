"""The client's roots (MCP ``roots/list``), asked once per connection."""

from __future__ import annotations

import logging
import urllib.parse
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import ServerMessageMetadata

__all__ = ["ROOTS_STATE", "client_roots"]

logger = logging.getLogger("invokit.mcp")

ROOTS_STATE = "invokit.client_roots"
"""Where a connection's ``state`` keeps its client's roots until they change."""


async def client_roots(ctx: Any, state: dict[str, Any]) -> tuple[str, ...] | None:
    """The local directories the client shares, from ``state`` or asked now (10 seconds at
    most); ``None`` when it fails to answer (asked again next time)."""
    cached = state.get(ROOTS_STATE)
    if cached is not None:
        return tuple(cached)
    try:
        with anyio.fail_after(10):
            listed = await ctx.session.send_request(
                types.ListRootsRequest(),
                types.ListRootsResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
    except Exception as exc:  # a client that fails to answer narrows nothing this time
        logger.warning("cannot list the client's roots: %r", exc)
        return None
    found = tuple(p for p in (_local_path(str(root.uri)) for root in listed.roots) if p)
    state[ROOTS_STATE] = found
    return found


def _local_path(uri: str) -> str | None:
    """The local path of a ``file://`` root; ``None`` for any other kind."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return urllib.parse.unquote(parsed.path) or None
