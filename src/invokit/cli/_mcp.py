"""``invokit mcp trust | list``: pin the tools of imported MCP servers."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Trust and list the tools of imported MCP servers.", no_args_is_help=True
    )
    app.add_typer(group, name="mcp")
