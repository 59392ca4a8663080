"""The ``invokit`` command: ``serve``, ``call``, ``tools``, ``approvals``, ``audit``, ``policy``,
``mcp``, ``trust``, ``untrust`` and ``install``.

Needs the ``cli`` extra (typer and rich); nothing here is imported by ``import invokit``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``invokit`` command with ``argv`` (default: ``sys.argv[1:]``)."""
    try:
        from invokit.cli._app import build_app
    except ImportError as exc:
        if exc.name not in ("typer", "rich", "click"):
            raise
        sys.stderr.write(
            f'invokit: the command line needs {exc.name}: pip install "invokit[cli]"\n'
        )
        raise SystemExit(2) from None
    from invokit.cli._logs import install_inert_logging

    # Before any library logs: what they log may quote a client or a server.
    install_inert_logging()
    build_app()(args=list(argv) if argv is not None else None, prog_name="invokit")
