"""What the MCP client raises when a server cannot be reached.

``invokit.exceptions`` holds the core tree; this extra's one error lives beside its only user::

    InvokitError
    └── MCPConnectionError     a server did not start, did not answer in time, or went away
"""

from __future__ import annotations

from invokit.exceptions import InvokitError


class MCPConnectionError(InvokitError):
    """An MCP server could not be started, reached or initialized in time.

    Attributes:
        server: the toolset's server name.
        detail: what went wrong, in words.
    """

    def __init__(self, server: str, detail: str) -> None:
        self.server = server
        self.detail = detail
        super().__init__(f"MCP server {server!r}: {detail}")
