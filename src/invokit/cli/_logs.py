"""Records that libraries log (OpenTelemetry, the MCP SDK, uvicorn, httpx), shown inert.

A library's log message may quote what a client or a remote server sent: a malformed baggage
entry, a bad header, an invalid message. The command line installs :class:`InertHandler` on
the root logger (and as logging's last resort), so every record reaches the terminal through
:func:`invokit._inert.printable`: one line per record, escape sequences and newlines shown as
escapes. A traceback keeps its own lines, each of them inert.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from invokit._inert import printable

FORMAT = "%(levelname)s %(name)s: %(message)s"

_STRUCTURE = frozenset(
    {
        "Traceback (most recent call last):\n",
        "\nThe above exception was the direct cause of the following exception:\n\n",
        "\nDuring handling of the above exception, another exception occurred:\n\n",
    }
)
"""The lines a traceback is built of, between its frames and messages."""


class InertFormatter(logging.Formatter):
    """A formatter whose every line is inert: the message on one line, a traceback line by
    line. Given ``inner``, a handler's own formatter, that formatter still lays the message
    out (a library's formatter may fill fields of its own, as uvicorn's ``levelprefix``)
    and only its text is made inert."""

    def __init__(
        self,
        fmt: str | None = None,
        datefmt: str | None = None,
        *,
        inner: logging.Formatter | None = None,
    ) -> None:
        super().__init__(fmt, datefmt)
        self._inner = inner

    def format(self, record: logging.LogRecord) -> str:
        # As logging.Formatter.format, without its cache of the traceback's text
        # (``record.exc_text``): another handler may have rendered it raw.
        record.message = record.getMessage()
        timed = self if self._inner is None else self._inner
        if timed.usesTime():
            record.asctime = timed.formatTime(record, timed.datefmt)
        text = self.formatMessage(record)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        elif record.exc_text:
            text += "\n" + printable(record.exc_text, keep_newlines=True)
        if record.stack_info:
            text += "\n" + self.formatStack(record.stack_info)
        return text

    def formatMessage(self, record: logging.LogRecord) -> str:
        if self._inner is not None:
            return printable(self._inner.formatMessage(record))
        return printable(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        # Frames keep their lines (they quote source files); an exception's message, which
        # may quote a client, becomes one inert line.
        out: list[str] = []
        for chunk in traceback.TracebackException(*ei[:3]).format():
            if chunk.startswith("  File ") or chunk in _STRUCTURE:
                out.append(printable(chunk, keep_newlines=True))
            else:
                out.append(printable(chunk.rstrip("\n")) + "\n")
        return "".join(out).rstrip("\n")

    def formatStack(self, stack_info: str) -> str:
        return printable(super().formatStack(stack_info), keep_newlines=True)


class InertHandler(logging.Handler):
    """Writes records to the current ``sys.stderr`` (looked up at each record, as logging's
    last resort does), or to :attr:`write` when set, through :class:`InertFormatter`."""

    def __init__(self, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self.setFormatter(InertFormatter(FORMAT))
        self.write: Callable[[str], None] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if self.write is not None:
                self.write(text)
                return
            stream = sys.stderr
            stream.write(text + "\n")
            stream.flush()
        except Exception:  # logging's own convention: a failing handler reports, never raises
            self.handleError(record)


@contextlib.contextmanager
def logs_through(write: Callable[[str], None]) -> Iterator[None]:
    """While in the block, records reach ``write`` (one inert text each) instead of stderr:
    ``invokit serve`` prints them through its board, so an open question stays pinned under
    them. Nothing changes when :func:`install_inert_logging` was not called."""
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, InertHandler)]
    for handler in handlers:
        handler.write = write
    try:
        yield
    finally:
        for handler in handlers:
            handler.write = None


def install_inert_logging() -> None:
    """Make every record logged in this process reach the terminal inert: an
    :class:`InertHandler` on the root logger and as the last resort, and an
    :class:`InertFormatter` on every handler already writing to the terminal. Warnings are
    logged (``logging.captureWarnings``), and an uncaught exception's traceback is printed
    through the same formatter. Idempotent."""
    logging.captureWarnings(True)
    sys.excepthook = _inert_excepthook
    root = logging.getLogger()
    if not any(isinstance(handler, InertHandler) for handler in root.handlers):
        root.addHandler(InertHandler())
    logging.lastResort = InertHandler()
    terminals = (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)
    for logger in [root, *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", ()):
            # Only handlers that write to the terminal; a capture (a file, a test's buffer)
            # keeps its own format.
            if type(handler) is logging.StreamHandler and handler.stream in terminals:
                current = handler.formatter
                if isinstance(current, InertFormatter):
                    continue
                handler.setFormatter(
                    InertFormatter(FORMAT) if current is None else InertFormatter(inner=current)
                )


def _inert_excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    """Print an uncaught exception's traceback with its message inert (it may quote what a
    client or a server sent)."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)
        return
    sys.stderr.write(InertFormatter().formatException((kind, value, tb)) + "\n")
