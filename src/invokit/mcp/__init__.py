"""MCP both ways: serve a registry as an MCP server, and use an MCP server's tools.

Needs the ``mcp`` extra (``pip install "invokit[mcp]"``)::

    from invokit.mcp import serve
    await serve(registry, executor, transport="http")   # http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from invokit.exceptions import MissingExtra

    raise MissingExtra("invokit.mcp", "mcp") from exc

from invokit.mcp._client import ChangedTool, MCPToolset
from invokit.mcp._convert import to_call_tool_result, to_mcp_tool
from invokit.mcp._errors import MCPConnectionError
from invokit.mcp._oauth_config import OAuthConfig
from invokit.mcp._pins import Pin, PinStorage, PinStore, remote_fingerprint
from invokit.mcp._remote import RemoteTool
from invokit.mcp._sanitize import printable
from invokit.mcp._serve import serve
from invokit.mcp._server import ToolServer, build_server
from invokit.mcp._signin import MCPOAuth
from invokit.mcp._token_store import OAuthTokenStore

__all__ = [
    "ChangedTool",
    "MCPConnectionError",
    "MCPOAuth",
    "MCPToolset",
    "OAuthConfig",
    "OAuthTokenStore",
    "Pin",
    "PinStorage",
    "PinStore",
    "RemoteTool",
    "ToolServer",
    "build_server",
    "printable",
    "remote_fingerprint",
    "serve",
    "to_call_tool_result",
    "to_mcp_tool",
]
