"""How commands speak: stable JSON for scripts, rich text for people, and exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from invokit.cli._config import ConfigError
from invokit.exceptions import ApprovalError

OK = 0
TOOL_ERROR = 1
"""The call ran and failed, or was refused (denied, unknown tool, invalid arguments)."""
USAGE = 2
"""A bad command line or configuration."""
PENDING = 3
"""The call waits for a person's approval."""
INTERRUPTED = 130


OFF_TERMINAL_WIDTH = 1000
"""The width of output that goes to a pipe or a file: lines are never squeezed to 80 columns
for a reader that is a program (tables size their columns to their content)."""


def stdout() -> Console:
    """The console for results (stdout); off a terminal, as wide as the content."""
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = OFF_TERMINAL_WIDTH
    return console


def stderr() -> Console:
    """The console for progress, logs and errors (stderr)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def dumps(data: Any) -> str:
    """Stable JSON: sorted keys, two-space indent, UTF-8 kept."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, default=str)


def print_json(data: Any) -> None:
    """Write ``data`` as stable JSON on stdout (never through rich: no markup, no wrapping)."""
    sys.stdout.write(dumps(data) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = USAGE, *, as_json: bool = False, **data: Any) -> NoReturn:
    """Report an error (as ``{"error": ...}`` on stdout when ``as_json``) and exit with ``code``."""
    if as_json:
        print_json({"error": {"message": message, **data}})
    else:
        from invokit._inert import printable

        # Messages may quote a server or a model: shown inert (no markup, no escapes).
        stderr().print(Text.assemble(("error: ", "bold red"), printable(message)))
    raise typer.Exit(code)


@contextmanager
def reported(*, as_json: bool = False) -> Iterator[None]:
    """Turn configuration and approval errors into a clear message and an exit code."""
    try:
        yield
    except ConfigError as exc:
        fail(str(exc), USAGE, as_json=as_json, source=exc.source, line=exc.line)
    except ApprovalError as exc:
        fail(str(exc), TOOL_ERROR, as_json=as_json, approval_id=exc.approval_id)
