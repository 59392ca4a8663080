"""The typer application: one module per command group registers its commands here."""

from __future__ import annotations

import typer

HELP = """invokit: serve guarded tools to MCP clients, and run tool calls from the terminal.

Start with `invokit serve` (HTTP on 127.0.0.1 in a terminal, stdio when a client launches it).
"""


def build_app() -> typer.Typer:
    """A fresh application with every command."""
    from invokit.cli import (
        _approvals,
        _audit,
        _call,
        _compose,
        _dev,
        _inbox,
        _install,
        _mcp,
        _policy,
        _serve,
        _tools,
        _trust,
    )

    app = typer.Typer(
        name="invokit",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    for module in (
        _serve,
        _dev,
        _call,
        _compose,
        _tools,
        _approvals,
        _inbox,
        _audit,
        _policy,
        _mcp,
        _trust,
        _install,
    ):
        module.register(app)
    return app
