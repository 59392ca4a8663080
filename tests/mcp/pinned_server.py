"""An MCP server written with the SDK whose tool description comes from the environment.

``GREET_DESCRIPTION`` sets what ``greet`` says it does, so a test can change it between runs as a
rug-pulling server would; ``EXTRA_TOOL`` adds a tool ``shout``, as a server that grows would.
``PID_FILE`` (optional) receives the process id.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("pinned")


@server.tool(description=os.environ.get("GREET_DESCRIPTION", "Greet someone by name."))
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(description="Add two numbers.")
def plus(a: int, b: int) -> int:
    return a + b


if os.environ.get("EXTRA_TOOL"):

    @server.tool(description="Shout a word.")
    def shout(word: str) -> str:
        return word.upper()


if __name__ == "__main__":
    pid_file = os.environ.get("PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    server.run("stdio")
