"""What the MCP client raises when a server cannot be reached (defined in ``invokit.exceptions``)."""

from invokit.exceptions import MCPConnectionError

__all__ = ["MCPConnectionError"]
