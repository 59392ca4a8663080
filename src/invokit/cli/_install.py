"""``invokit install CLIENT``: write (or print) an MCP client's configuration for this server.

Claude Desktop launches the server over stdio. Claude Code and Cursor connect over streamable
HTTP to the ``invokit serve`` a person runs in a terminal (where approvals are asked), with
the project's kept token (:mod:`invokit.cli._tokens`); ``--stdio`` makes them launch it
instead. The entry is merged into the client's JSON file: other servers and other keys are
kept, the old file is copied to ``FILE.bak`` first, and the new one replaces it atomically.
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from invokit._state import replace_file
from invokit.cli._options import AllowShellOption
from invokit.cli._output import USAGE, dumps, fail, stdout

DEFAULT_PORT = 8765


class Client(StrEnum):
    """The clients ``invokit install`` knows."""

    claude_desktop = "claude-desktop"
    claude_code = "claude-code"
    cursor = "cursor"


def default_config_file(client: Client) -> Path:
    """Where ``client`` reads its MCP servers from (user scope)."""
    home = Path.home()
    if client is Client.claude_desktop:
        if sys.platform == "darwin":
            return (
                home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
            )
        if sys.platform == "win32":
            appdata = os.environ.get("APPDATA") or str(home / "AppData" / "Roaming")
            return Path(appdata) / "Claude" / "claude_desktop_config.json"
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"
        return base / "Claude" / "claude_desktop_config.json"
    if client is Client.claude_code:
        return home / ".claude.json"
    return home / ".cursor" / "mcp.json"


def server_entry(
    client: Client,
    root: Path,
    *,
    allow_shell: tuple[str, ...] = (),
    stdio: bool = False,
    url: str | None = None,
) -> dict[str, Any]:
    """The ``mcpServers`` entry for ``client``: stdio (a command) or HTTP (``url``)."""
    from invokit.cli._banner import _invokit_command, stdio_args

    if stdio or client is Client.claude_desktop:
        return {"command": _invokit_command(), "args": stdio_args(root, allow_shell)}
    assert url is not None
    if client is Client.claude_code:
        return {"type": "http", "url": url}
    return {"url": url}


def merged(existing: str | None, name: str, entry: dict[str, Any], where: Path) -> dict[str, Any]:
    """``existing`` (a client's JSON config, or ``None``) with ``mcpServers[name] = entry``;
    everything else is kept as it was.

    Raises:
        ValueError: the file is not a JSON object, or its ``mcpServers`` is not one.
    """
    data: Any = {}
    if existing is not None and existing.strip():
        try:
            data = json.loads(existing)
        except ValueError as exc:
            raise ValueError(f"{where} is not valid JSON ({exc}); fix or move it first") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where} does not hold a JSON object; fix or move it first")
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValueError(f"{where}: mcpServers is not a JSON object; fix or move it first")
    servers[name] = entry
    return data


def write_config(path: Path, data: dict[str, Any]) -> Path | None:
    """Replace ``path`` with ``data`` atomically, after copying the old file to ``path.bak``
    (returned; ``None`` when there was no file). A symbolic link to an existing file is
    followed: its target is replaced, the link stays; a link to nothing is refused (a planted
    link must not choose where this command creates a file). The backup replaces whatever is
    at ``path.bak`` (a link there is replaced, never written through). The old file's
    permissions are kept (0600 for a new one)."""
    if path.is_symlink() and not path.exists():
        raise ValueError(
            f"{path} is a symbolic link to nothing ({os.readlink(path)}); remove it or name the "
            "file it should be with --config-file"
        )
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    backup: Path | None = None
    mode = 0o600
    if target.exists():
        backup = target.with_name(target.name + ".bak")
        mode = target.stat().st_mode & 0o777
        replace_file(backup, target.read_bytes(), mode)
    replace_file(target, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), mode)
    return backup


def register(app: typer.Typer) -> None:
    @app.command()
    def install(
        client: Annotated[
            Client,
            typer.Argument(help="claude-desktop, claude-code or cursor.", show_default=False),
        ],
        root: Annotated[
            Optional[Path],  # noqa: UP045
            typer.Option(
                "--root", "-r", help="The directory to serve (default: .).", file_okay=False
            ),
        ] = None,
        allow_shell: AllowShellOption = None,
        name: Annotated[
            str, typer.Option("--name", help="The server's name in the client.")
        ] = "invokit",
        stdio: Annotated[
            bool,
            typer.Option(
                "--stdio",
                help="Have Claude Code or Cursor launch the server (stdio) instead of "
                "connecting to `invokit serve` over HTTP. Claude Desktop always launches it.",
            ),
        ] = False,
        port: Annotated[
            int, typer.Option("--port", help="The port `invokit serve` listens on (HTTP).")
        ] = DEFAULT_PORT,
        config_file: Annotated[
            Optional[Path],  # noqa: UP045
            typer.Option(
                "--config-file",
                help="The client's JSON config to write (default: the client's own user file).",
                dir_okay=False,
            ),
        ] = None,
        print_only: Annotated[
            bool, typer.Option("--print", help="Print the configuration; write nothing.")
        ] = False,
    ) -> None:
        """Add this server to an MCP client's configuration (or print it with --print)."""
        served = (root if root is not None else Path(".")).resolve()
        if not served.is_dir():
            fail(f"the root {served} is not a directory", USAGE)
        if not 1 <= port <= 65535:
            fail("--port must be from 1 to 65535 (the port `invokit serve` listens on)", USAGE)
        shell = tuple(allow_shell or ())
        if stdio and client is Client.claude_desktop:
            stdio = False  # it always launches the server: nothing to choose
        url: str | None = None
        token_file: Path | None = None
        if not stdio and client is not Client.claude_desktop:
            from invokit.cli._tokens import project_token

            token, token_file = project_token(served)
            url = f"http://127.0.0.1:{port}/mcp?token={token}"
        entry = server_entry(client, served, allow_shell=shell, stdio=stdio, url=url)
        if print_only:
            stdout().print(dumps({"mcpServers": {name: entry}}), soft_wrap=True, markup=False)
            return
        path = (config_file or default_config_file(client)).expanduser()
        try:
            existing = path.read_text(encoding="utf-8") if path.exists() else None
            data = merged(existing, name, entry, path)
            backup = write_config(path, data)
        except (OSError, ValueError) as exc:
            fail(str(exc), USAGE)
        out = stdout()
        out.print(f"wrote the MCP server {name!r} to {path}", markup=False)
        if backup is not None:
            out.print(f"the previous file is kept as {backup}", markup=False)
        if url is not None:
            out.print(
                f"it connects to `invokit serve --http --root {served}` on port {port}, with the "
                f"token kept in {token_file}: start that server before the client",
                markup=False,
            )
            if path.resolve().is_relative_to(served.resolve()):
                out.print(
                    f"note: {path} lies inside the served root, so the tools can read the token "
                    "in it; keep the client's configuration outside the root if that matters",
                    markup=False,
                )
        else:
            out.print(f"the client launches `invokit serve --stdio --root {served}`", markup=False)
        out.print(f"restart {client.value} to load it", markup=False)
