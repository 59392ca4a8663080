"""One page of ``tools/list``, validated a batch of tools at a time with the event loop served
between batches.

The SDK's ``ClientSession.list_tools`` validates the whole page in one go on the event loop:
against the negotiated revision's wire schema (validated, then dumped), then into
``ListToolsResult``. That is native code holding the interpreter lock, linear in the listing: a
server listing 6,000 tools stalled every other task of the host for 130 ms (a worker thread
would not help, the lock is held throughout). :func:`list_tools_page` sends the same request
and runs the same checks, on batches of :data:`BATCH` tools with a checkpoint between them; the
page is then handed to the session exactly as ``list_tools`` would (its per-tool state: output
schemas, ``x-mcp-header`` maps). A session without the internals this needs (another SDK
version) is listed by ``list_tools``.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import anyio.lowlevel
import mcp_types as types
from mcp.client import session as sdk
from mcp.client.session import ClientSession
from mcp_types import methods

BATCH = 200
"""Tools validated between two checkpoints (a few ms of work)."""

_METHOD = "tools/list"
_NEEDED = ("_dispatcher", "_stamp", "_session_read_timeout_seconds", "_absorb_tool_listing")


def _supported(session: ClientSession) -> bool:
    return all(hasattr(session, name) for name in _NEEDED) and all(
        hasattr(sdk, name) for name in ("_clamp_inbound_ttl", "_later_revision_fields")
    )


async def list_tools_page(
    session: ClientSession, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    """What ``session.list_tools(params=params)`` returns, without one long stall."""
    if not _supported(session):
        return await session.list_tools(params=params)
    request = types.ListToolsRequest(params=params)
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: Any = {}
    session._stamp(data, opts)
    opts.setdefault("headers", {})
    timeout = session._session_read_timeout_seconds
    if timeout is not None:
        opts["timeout"] = timeout
    raw: dict[str, Any] = await session._dispatcher.send_raw_request(
        _METHOD, data.get("params"), opts
    )
    sdk._clamp_inbound_ttl(raw)
    version = getattr(session, "_negotiated_version", None) or "2025-11-25"
    foreign = sdk._later_revision_fields(_METHOD, version)
    listed = raw.get("tools")
    if isinstance(listed, list) and len(listed) > BATCH:
        shell = {key: value for key, value in raw.items() if key != "tools"}
        parts = [{**shell, "tools": listed[at : at + BATCH]} for at in range(0, len(listed), BATCH)]
    else:
        parts = [raw]  # small, or not a list (which the validation reports)
    tools: list[types.Tool] = []
    for number, part in enumerate(parts):
        if number:
            await anyio.lowlevel.checkpoint()
        with suppress(KeyError):  # a revision without this surface: the SDK skips it too
            methods.validate_server_result(_METHOD, version, part)
        kept = {key: value for key, value in part.items() if key not in foreign}
        page = types.ListToolsResult.model_validate(kept, by_name=False)
        tools.extend(page.tools)
    result = page.model_copy(update={"tools": tools})
    complete = (params is None or params.cursor is None) and result.next_cursor is None
    absorbed: types.ListToolsResult = session._absorb_tool_listing(result, complete=complete)
    return absorbed
