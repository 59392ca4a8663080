"""The MCP clients ``invokit install`` configures: where each keeps its servers, and the
entry each expects.

| client | file | servers under | HTTP entry | stdio entry |
| --- | --- | --- | --- | --- |
| Claude Desktop | its ``claude_desktop_config.json`` | ``mcpServers`` | (launches only) | command, args |
| Claude Code | ``~/.claude.json`` | ``mcpServers`` | type ``http``, url | command, args |
| Cursor | ``~/.cursor/mcp.json`` | ``mcpServers`` | url | command, args |
| VS Code | ``ROOT/.vscode/mcp.json``, or the user profile's ``mcp.json`` | ``servers`` | type ``http``, url | type ``stdio``, command, args |
| Codex CLI | ``$CODEX_HOME/config.toml`` (``~/.codex``) | ``[mcp_servers.NAME]`` | (launches only) | command, args |
| Gemini CLI | ``~/.gemini/settings.json`` | ``mcpServers`` | httpUrl | command, args |
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any


class Client(StrEnum):
    """The clients ``invokit install`` knows."""

    claude_desktop = "claude-desktop"
    claude_code = "claude-code"
    cursor = "cursor"
    vscode = "vscode"
    codex = "codex"
    gemini = "gemini"


LAUNCH_ONLY = frozenset({Client.claude_desktop, Client.codex})
"""Clients configured to launch the server (stdio) only."""


def container(client: Client) -> str:
    """The key the client keeps its servers under."""
    if client is Client.vscode:
        return "servers"
    if client is Client.codex:
        return "mcp_servers"
    return "mcpServers"


def is_toml(client: Client) -> bool:
    return client is Client.codex


def _app_config_dir() -> Path:
    """Where desktop applications keep their user configuration on this platform."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or str(home / "AppData" / "Roaming"))
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"


def default_config_file(client: Client, root: Path, *, user: bool = False) -> Path:
    """Where ``client`` reads its MCP servers from: the user's file, or for VS Code the
    project's ``.vscode/mcp.json`` in ``root`` (``user``: the user profile's ``mcp.json``)."""
    home = Path.home()
    if client is Client.claude_desktop:
        return _app_config_dir() / "Claude" / "claude_desktop_config.json"
    if client is Client.claude_code:
        return home / ".claude.json"
    if client is Client.vscode:
        if user:
            return _app_config_dir() / "Code" / "User" / "mcp.json"
        return root / ".vscode" / "mcp.json"
    if client is Client.codex:
        codex_home = os.environ.get("CODEX_HOME")
        base = Path(codex_home) if codex_home and os.path.isabs(codex_home) else home / ".codex"
        return base / "config.toml"
    if client is Client.gemini:
        return home / ".gemini" / "settings.json"
    return home / ".cursor" / "mcp.json"


def server_entry(
    client: Client,
    root: Path,
    *,
    allow_shell: tuple[str, ...] = (),
    stdio: bool = False,
    url: str | None = None,
) -> dict[str, Any]:
    """The entry for ``client``: stdio (a command) or HTTP (``url``)."""
    from invokit.cli._banner import _invokit_command, stdio_args

    if stdio or client in LAUNCH_ONLY:
        launch: dict[str, Any] = {
            "command": _invokit_command(),
            "args": stdio_args(root, allow_shell),
        }
        return {"type": "stdio", **launch} if client is Client.vscode else launch
    assert url is not None
    if client in (Client.claude_code, Client.vscode):
        return {"type": "http", "url": url}
    if client is Client.gemini:
        return {"httpUrl": url}
    return {"url": url}
