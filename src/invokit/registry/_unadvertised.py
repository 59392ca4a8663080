"""Tools that stay callable but are not listed to the model."""

from __future__ import annotations

from collections.abc import Iterable

from invokit.registry._base import Registry
from invokit.registry._wrapper import WrapperRegistry


class UnadvertisedRegistry(WrapperRegistry):
    """Leaves ``hidden`` out of ``names()`` and ``specs()``; ``get`` still finds them."""

    def __init__(self, inner: Registry, hidden: Iterable[str]) -> None:
        super().__init__(inner)
        self.hidden = frozenset(hidden)

    def _compute_names(self) -> tuple[str, ...]:
        return tuple(name for name in self.inner.names() if name not in self.hidden)
