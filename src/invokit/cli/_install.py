"""``invokit install CLIENT``: write (or print) an MCP client's configuration for this server.

Claude Desktop and Codex CLI launch the server over stdio. Claude Code, Cursor, VS Code and
Gemini CLI connect over streamable HTTP to the ``invokit serve`` a person runs in a terminal
(where approvals are asked), with the project's kept token (:mod:`invokit.cli._tokens`);
``--stdio`` makes them launch it instead (:mod:`invokit.cli._clients`). The entry is merged
into the client's file (JSON, or TOML for Codex): other servers, keys and comments are kept,
the old file is copied to ``FILE.bak`` first, and the new one replaces it atomically. A file
that cannot be read safely is refused in one line (:mod:`invokit.cli._clientfile`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from invokit.cli._clientfile import (
    ClientFileError,
    decode,
    dump_json,
    load_json,
    merged_toml,
    read_bytes,
    table_of,
    write_file,
)
from invokit.cli._clients import (
    LAUNCH_ONLY,
    Client,
    container,
    default_config_file,
    is_toml,
    server_entry,
)
from invokit.cli._options import AllowShellOption
from invokit.cli._output import USAGE, dumps, fail, stdout

DEFAULT_PORT = 8765


def _updated(
    path: Path, client: Client, name: str, entry: dict[str, Any]
) -> tuple[bytes, bytes | None]:
    """The new content of ``path`` with ``entry`` under ``name``, and the bytes it had
    (``None``: no file). Every refusal is a :class:`ClientFileError` naming the file."""
    previous = read_bytes(path)
    text = decode(path, previous) if previous is not None else ""
    if is_toml(client):
        return merged_toml(path, text, container(client), name, entry), previous
    data = load_json(path, text)
    table_of(path, data, [container(client)])[name] = entry
    return dump_json(data), previous


def register(app: typer.Typer) -> None:
    @app.command()
    def install(
        client: Annotated[
            Client,
            typer.Argument(
                help="claude-desktop, claude-code, cursor, vscode, codex or gemini.",
                show_default=False,
            ),
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
                help="Have the client launch the server (stdio) instead of connecting to "
                "`invokit serve` over HTTP. Claude Desktop and Codex always launch it.",
            ),
        ] = False,
        user: Annotated[
            bool,
            typer.Option(
                "--user",
                help="VS Code: write the user profile's mcp.json instead of the project's "
                ".vscode/mcp.json.",
            ),
        ] = False,
        port: Annotated[
            int, typer.Option("--port", help="The port `invokit serve` listens on (HTTP).")
        ] = DEFAULT_PORT,
        config_file: Annotated[
            Optional[Path],  # noqa: UP045
            typer.Option(
                "--config-file",
                help="The client's config file to write (default: the client's own file).",
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
        if client in LAUNCH_ONLY:
            stdio = True  # it always launches the server: nothing to choose
        url: str | None = None
        token_file: Path | None = None
        if not stdio:
            from invokit.cli._tokens import project_token

            token, token_file = project_token(served)
            url = f"http://127.0.0.1:{port}/mcp?token={token}"
        entry = server_entry(client, served, allow_shell=shell, stdio=stdio, url=url)
        if print_only:
            if is_toml(client):
                shown = merged_toml(Path("-"), "", container(client), name, entry).decode()
            else:
                shown = dumps({container(client): {name: entry}})
            stdout().print(shown.rstrip("\n"), soft_wrap=True, markup=False)
            return
        path = (config_file or default_config_file(client, served, user=user)).expanduser()
        try:
            content, previous = _updated(path, client, name, entry)
            backup = write_file(path, content, previous)
        except ClientFileError as exc:
            fail(str(exc), USAGE)
        except OSError as exc:
            fail(f"{path}: cannot be written ({exc.strerror or exc})", USAGE)
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
