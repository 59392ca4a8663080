"""Another task on the event loop that counts the turns the loop gives it: how tests see that
work left the loop serving other tasks, as a count of events, never a time."""

from __future__ import annotations

from collections.abc import Callable

import anyio.lowlevel


class Beside:
    """A task that yields at every turn (no timer) and counts the turns the loop gives it, and
    those on which ``watch()`` held, until :meth:`stop`. Start it with ``group.start_soon(
    beside.run)``; read :attr:`turns` at any moment."""

    def __init__(self, watch: Callable[[], bool] = lambda: False) -> None:
        self.turns = 0
        self.watched = 0
        self._watch = watch
        self._stopped = False

    def stop(self) -> None:
        """End the task at its next turn."""
        self._stopped = True

    async def run(self) -> None:
        while not self._stopped:
            self.turns += 1
            self.watched += self._watch()
            await anyio.lowlevel.checkpoint()
