"""The base of registries that wrap another: everything passes through unless overridden."""

from __future__ import annotations

from collections.abc import Callable

from invokit.registry._base import Listener, Registry
from invokit.tools import Tool


class WrapperRegistry(Registry):
    """Delegates to ``inner``; subclasses override what they change."""

    def __init__(self, inner: Registry) -> None:
        self.inner = inner
        self._names: tuple[str, ...] | None = None
        inner.subscribe(self._invalidate)

    def _invalidate(self) -> None:
        self._names = None

    def names(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = self._compute_names()
        return self._names

    def _compute_names(self) -> tuple[str, ...]:
        return self.inner.names()

    def get(self, name: str) -> Tool | None:
        return self.inner.get(name)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self.inner.subscribe(listener)

    def describe(self) -> str:
        return f"{type(self).__name__}({self.inner.describe()})"
