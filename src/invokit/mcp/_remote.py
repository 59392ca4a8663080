"""One tool of a remote MCP server, as an invokit tool: local policy applies to it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from invokit._spec import ToolSpec
from invokit.permissions import McpInvoke, PermissionRequest
from invokit.tools import Tool, ToolContext

if TYPE_CHECKING:
    from invokit.mcp._client import MCPToolset


class RemoteTool(Tool):
    """Calls ``remote_name`` on the toolset's server; every call declares ``McpInvoke``.

    Hidden (``current_spec()`` is ``None``) while its server changed it since it was trusted.
    """

    def __init__(
        self, toolset: MCPToolset, spec: ToolSpec, remote_name: str, fingerprint: str
    ) -> None:
        self._toolset = toolset
        self._spec = spec
        self.remote_name = remote_name
        """The tool's name on its server."""
        self.fingerprint = fingerprint
        """The fingerprint of the tool as the server lists it now."""
        self._request = (McpInvoke(server=toolset.server, tool=remote_name),)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def current_spec(self) -> ToolSpec | None:
        return None if self._toolset.is_hidden(self.remote_name) else self._spec

    def permissions(self, args: Mapping[str, Any], ctx: ToolContext) -> Sequence[PermissionRequest]:
        return self._request

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return await self._toolset.call(self.remote_name, args, ctx)
