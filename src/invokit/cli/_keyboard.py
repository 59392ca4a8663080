"""Reading a person's answers at the terminal without blocking the event loop.

A daemon thread does the blocking read; every line (or key) keeps the time it was finished,
so input typed before a question appeared (or within its guard) never answers it, and the rest
of a line typed for a question that went away can be read off and thrown away
(:meth:`LineReader.discard_line`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from rich.console import Console


class LineReader:
    """Reads lines from a blocking ``readline`` in a daemon thread, one read at a time.

    Every line keeps the time it was finished. A reader asked for a line typed after a given
    moment throws older lines away: a line typed ahead, or typed for a question that was
    withdrawn (its call cancelled), never answers the next question. A daemon thread never
    keeps the process alive.
    """

    def __init__(self, readline: Callable[[], str] | None = None) -> None:
        self._readline = readline or (lambda: sys.stdin.readline())
        self._pending: tuple[anyio.Event, list[tuple[str, float]]] | None = None

    async def read(self, not_before: float | None = None) -> str | None:
        """The next line finished at or after ``not_before`` (``time.monotonic()``), without its
        newline; ``None`` at end of input."""
        while True:
            if self._pending is None:
                done = anyio.Event()
                box: list[tuple[str, float]] = []
                token = anyio.lowlevel.current_token()

                def work(
                    box: list[tuple[str, float]] = box,
                    done: anyio.Event = done,
                    token: anyio.lowlevel.EventLoopToken = token,
                ) -> None:
                    try:
                        line = self._readline()
                    except Exception:  # a closed or broken terminal is the end of input
                        line = ""
                    box.append((line, time.monotonic()))
                    # The event loop may have ended while we read: then nobody waits.
                    with contextlib.suppress(Exception):
                        anyio.from_thread.run_sync(done.set, token=token)

                self._pending = (done, box)
                threading.Thread(target=work, name="invokit-terminal", daemon=True).start()
            done, box = self._pending
            await done.wait()
            self._pending = None
            line, finished = box[0]
            if line == "":
                return None
            if not_before is None or finished >= not_before:
                return line.rstrip("\r\n")
            # Typed before the question was on screen: not an answer to it.

    async def discard_line(self) -> bool:
        """Read and throw away the rest of a line being typed (up to its Enter); ``False`` at
        end of input. A reason whose question went away ends here, never in an answer."""
        return await LineReader.read(self) is not None


class KeyReader(LineReader):
    """Single keys from a terminal: ``y`` answers at once, no Enter needed.

    The terminal is put in cbreak mode (keys arrive one by one, not echoed; Ctrl-C still
    interrupts) from the first read until :meth:`restore`, which also runs at exit. Enter,
    spaces and other blanks are not answers and are skipped. :meth:`read_line` reads a
    typed line (a denial's reason), echoing it.

    Args:
        fd: the terminal's file descriptor (default: stdin).
    """

    single_key = True

    def __init__(self, fd: int | None = None) -> None:
        self._fd = sys.stdin.fileno() if fd is None else fd
        self._saved: list[Any] | None = None
        super().__init__(self._key)

    def _key(self) -> str:
        """One character (its UTF-8 bytes read one at a time); ``""`` at end of input."""
        import codecs
        import os

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            data = os.read(self._fd, 1)
            if not data:
                return ""
            char = decoder.decode(data)
            if char:
                return char

    def _cbreak(self) -> None:
        if self._saved is not None:
            return
        import atexit
        import termios
        import tty

        self._saved = termios.tcgetattr(self._fd)
        tty.setcbreak(self._fd, termios.TCSANOW)
        atexit.register(self.restore)

    def restore(self) -> None:
        """Give the terminal back as it was (line mode, echo)."""
        if self._saved is None:
            return
        import termios

        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
        self._saved = None

    async def read(self, not_before: float | None = None) -> str | None:
        """The next key pressed at or after ``not_before`` that is not a blank."""
        self._cbreak()
        while True:
            key = await super().read(not_before)
            if key is None or key.strip():
                return key

    async def discard_line(self) -> bool:
        """Read keys up to Enter and throw them away (not echoed); ``False`` at end of input."""
        self._cbreak()
        while True:
            key = await LineReader.read(self)
            if key is None:
                return False
            if key == "":  # Enter
                return True

    async def read_line(self, console: Console, typed: list[str] | None = None) -> str | None:
        """A line typed now (no typeahead dropped), echoed as it is typed; Enter ends it.
        ``typed`` holds the characters so far as they are typed (a prompt drawn again under a
        log line shows them)."""
        self._cbreak()
        typed = [] if typed is None else typed
        while True:
            key = await LineReader.read(self)
            if key is None:
                return None
            if key == "":  # Enter (the reader strips line ends)
                console.file.write("\n")
                console.file.flush()
                return "".join(typed)
            if key in "\x7f\x08":
                if typed:
                    typed.pop()
                    console.file.write("\b \b")
            elif key.isprintable():
                typed.append(key)
                console.file.write(key)
            console.file.flush()


def drop_typeahead() -> None:
    """Throw away what was typed at the terminal before the question appeared."""
    try:
        import termios

        if sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass  # not a terminal (tests, pipes): the time check in LineReader still applies
