"""The client connection a request came in on: whether the client is still there to hear.

The HTTP transport makes a :class:`Caller` for each request it dispatches and sets it in the
context the request's handler inherits (the SDK hands the sender's context to the handler);
when the request's connection closes before its answer went out (the client was killed, the
network dropped, the client gave up), the transport calls :meth:`Caller.go`. The server's
handler subscribes to that: a call waiting for a person then withdraws its question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class Caller:
    """One request's connection; :meth:`go` says it closed before the answer went out."""

    def __init__(self) -> None:
        self.gone = False
        self._callbacks: dict[int, Callable[[], None]] = {}

    def on_gone(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the caller goes (at once if it went); returns the
        function that unsubscribes it."""
        if self.gone:
            callback()
            return lambda: None
        key = id(callback)
        self._callbacks[key] = callback
        return lambda: self._callbacks.pop(key, None) and None

    def go(self) -> None:
        """The connection closed before the answer went out."""
        if self.gone:
            return
        self.gone = True
        callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            callback()


_current: ContextVar[Caller | None] = ContextVar("invokit_mcp_caller", default=None)


def current_caller() -> Caller | None:
    """The connection of the request handled in this context, when the transport says."""
    return _current.get()


@contextmanager
def calling(caller: Caller) -> Iterator[None]:
    """``caller`` as the current one while a request is handed to the server."""
    token = _current.set(caller)
    try:
        yield
    finally:
        _current.reset(token)
